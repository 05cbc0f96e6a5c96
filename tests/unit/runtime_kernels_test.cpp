// Finite-difference gradient checks and properties of every CPU kernel in runtime/cpu/.
#include <catch2/catch.hpp>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/cpu/attention.h"
#include "runtime/cpu/cross_entropy.h"
#include "runtime/cpu/dropout.h"
#include "runtime/cpu/embedding.h"
#include "runtime/cpu/gelu.h"
#include "runtime/cpu/layernorm.h"
#include "runtime/cpu/matmul.h"
#include "runtime/cpu/parallel.h"
#include "runtime/cpu/pooling.h"
#include "runtime/tensor.h"
#include "runtime_gradcheck.h"

using namespace scion::runtime;
using namespace scion::runtime::cpu;
using scion::test::check_gradient;
using scion::test::random_vector;
using scion::test::weighted_sum;

TEST_CASE("layernorm gradients match finite differences") {
  const int N = 6, C = 10;
  auto x = random_vector(N * C, 1);
  auto w = random_vector(C, 2);
  auto b = random_vector(C, 3);
  const auto r = random_vector(N * C, 4);
  std::vector<float> out(N * C), mean(N), rstd(N);
  auto loss = [&] {
    layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
    return weighted_sum(out.data(), r);
  };
  loss();
  std::vector<float> dx(N * C, 7.0f), dw(C, 0.0f), db(C, 0.0f);
  layernorm_backward(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), mean.data(),
                     rstd.data(), N, C, GradMode::kAssign);
  check_gradient("dinp", loss, x.data(), x.size(), dx.data());
  check_gradient("dweight", loss, w.data(), w.size(), dw.data());
  check_gradient("dbias", loss, b.data(), b.size(), db.data());

  SECTION("accumulate mode adds to the existing gradient; parameter grads accumulate") {
    std::vector<float> dx2(N * C, 1.0f), dw2(dw);
    layernorm_backward(dx2.data(), dw2.data(), nullptr, r.data(), x.data(), w.data(),
                       mean.data(), rstd.data(), N, C, GradMode::kAccumulate);
    for (int i = 0; i < N * C; ++i) CHECK(dx2[i] == Approx(dx[i] + 1.0f).margin(1e-6));
    for (int c = 0; c < C; ++c) CHECK(dw2[c] == Approx(2 * dw[c]).margin(1e-6));
  }
}

TEST_CASE("matmul gradients match finite differences") {
  const int N = 5, C = 7, OC = 4;
  auto x = random_vector(N * C, 11);
  auto w = random_vector(OC * C, 12);
  auto b = random_vector(OC, 13);
  const auto r = random_vector(N * OC, 14);
  std::vector<float> out(N * OC);
  const float scale = 0.5f;
  SECTION("with bias") {
    auto loss = [&] {
      matmul_forward(out.data(), x.data(), w.data(), b.data(), N, C, OC);
      return weighted_sum(out.data(), r);
    };
    std::vector<float> dx(N * C), dw(OC * C, 0.0f), db(OC, 0.0f);
    matmul_backward(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), 1.0f, N, C, OC,
                    GradMode::kAssign);
    check_gradient("dinp", loss, x.data(), x.size(), dx.data());
    check_gradient("dweight", loss, w.data(), w.size(), dw.data());
    check_gradient("dbias", loss, b.data(), b.size(), db.data());
  }
  SECTION("scaled accumulate (the LoRA up-projection)") {
    const auto base = random_vector(N * OC, 15);
    auto loss = [&] {
      out = base;
      matmul_forward_accumulate(out.data(), x.data(), w.data(), scale, N, C, OC);
      return weighted_sum(out.data(), r);
    };
    std::vector<float> dx(N * C), dw(OC * C, 0.0f);
    matmul_backward(dx.data(), dw.data(), nullptr, r.data(), x.data(), w.data(), scale, N, C, OC,
                    GradMode::kAssign);
    check_gradient("dinp", loss, x.data(), x.size(), dx.data());
    check_gradient("dweight", loss, w.data(), w.size(), dw.data());
  }
}

TEST_CASE("gelu gradient matches finite differences") {
  const int N = 50;
  auto x = random_vector(N, 21, 2.0f);
  const auto r = random_vector(N, 22);
  std::vector<float> out(N), dx(N);
  auto loss = [&] {
    gelu_forward(out.data(), x.data(), N);
    return weighted_sum(out.data(), r);
  };
  gelu_backward(dx.data(), x.data(), r.data(), N);
  check_gradient("dinp", loss, x.data(), x.size(), dx.data());
  float zero = 0.0f, y = 1.0f;
  gelu_forward(&y, &zero, 1);
  CHECK(y == 0.0f);
}

TEST_CASE("gelu over a team of threads matches one thread and the tanh formula") {
  // Above kParallelMinElements, so the blocks run on the OpenMP team.
  const std::int64_t N = 4 * kParallelMinElements + 3;
  const auto x = random_vector(static_cast<std::size_t>(N), 23, 4.0f);
  const auto dout = random_vector(static_cast<std::size_t>(N), 24);
  auto run = [&](int threads) {
    omp_set_num_threads(threads);
    std::vector<float> out(N), dx(N);
    gelu_forward(out.data(), x.data(), N);
    gelu_backward(dx.data(), x.data(), dout.data(), N);
    return std::pair{out, dx};
  };
  const int before = omp_get_max_threads();
  const auto one = run(1), two = run(2);
  omp_set_num_threads(before);
  CHECK(one.first == two.first);
  CHECK(one.second == two.second);
  // fast_tanh against std::tanh: within 1e-5 absolute per element.
  double worst = 0;
  for (std::int64_t i = 0; i < N; ++i) {
    const double v = x[i];
    const double exact = 0.5 * v * (1.0 + std::tanh(0.7978845608 * (v + 0.044715 * v * v * v)));
    worst = std::max(worst, std::abs(exact - one.first[i]));
  }
  CHECK(worst < 1e-5);
}

TEST_CASE("exact (erf) gelu and tanh: values and gradients match finite differences") {
  const int N = 50;
  auto x = random_vector(N, 23, 2.0f);
  const auto r = random_vector(N, 24);
  std::vector<float> out(N), dx(N);
  auto gelu_loss = [&] {
    gelu_erf_forward(out.data(), x.data(), N);
    return weighted_sum(out.data(), r);
  };
  gelu_erf_backward(dx.data(), x.data(), r.data(), N);
  check_gradient("gelu_erf dinp", gelu_loss, x.data(), x.size(), dx.data());
  auto tanh_loss = [&] {
    tanh_forward(out.data(), x.data(), N);
    return weighted_sum(out.data(), r);
  };
  tanh_forward(out.data(), x.data(), N);
  tanh_backward(dx.data(), out.data(), r.data(), N);
  check_gradient("tanh dinp", tanh_loss, x.data(), x.size(), dx.data());
  // x·Φ(x) at 1 and -2 (PyTorch's F.gelu), where the tanh form is off by ~1e-4.
  const float inputs[2] = {1.0f, -2.0f};
  float y[2];
  gelu_erf_forward(y, inputs, 2);
  CHECK(y[0] == Approx(0.8413447460685429).epsilon(1e-6));
  CHECK(y[1] == Approx(-0.04550026389635842).epsilon(1e-5));
}

TEST_CASE("layernorm uses the given epsilon") {
  // A row of equal values has variance 0, so the output is bias + 0 and rstd is 1/sqrt(eps).
  const float x[4] = {2.0f, 2.0f, 2.0f, 2.0f}, w[4] = {1, 1, 1, 1}, b[4] = {0, 0, 0, 0};
  float out[4], mean, rstd;
  layernorm_forward(out, &mean, &rstd, x, w, b, 1, 4, 1e-12f);
  CHECK(rstd == Approx(1e6).epsilon(1e-6));
  layernorm_forward(out, &mean, &rstd, x, w, b, 1, 4);
  CHECK(rstd == Approx(1.0 / std::sqrt(1e-5)).epsilon(1e-6));
}

TEST_CASE("embedding gradients (tokens, positions, prompt) match finite differences") {
  const int B = 2, T = 3, P = 2, C = 4, V = 5;
  const std::vector<std::int32_t> tokens = {1, 4, 1, 0, 2, 2};
  auto wte = random_vector(V * C, 31);
  auto wpe = random_vector((P + T) * C, 32);
  auto prompt = random_vector(P * C, 33);
  const auto r = random_vector(B * (P + T) * C, 34);
  std::vector<float> out(B * (P + T) * C);
  auto loss = [&] {
    embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), prompt.data(), B, T, P, C);
    return weighted_sum(out.data(), r);
  };
  std::vector<float> dwte(V * C, 0.0f), dwpe((P + T) * C, 0.0f), dprompt(P * C, 9.0f);
  embedding_backward(dwte.data(), dwpe.data(), dprompt.data(), r.data(), tokens.data(), B, T, P, C);
  check_gradient("dwte", loss, wte.data(), wte.size(), dwte.data());
  check_gradient("dwpe", loss, wpe.data(), wpe.size(), dwpe.data());
  check_gradient("dprompt", loss, prompt.data(), prompt.size(), dprompt.data());
}

namespace {
void attention_case(bool causal, int P, bool padded, int window = 0) {
  const int B = 2, T = 4, C = 8, NH = 2;
  auto q = random_vector(B * T * C, 41);
  auto k = random_vector(B * T * C, 42);
  auto v = random_vector(B * T * C, 43);
  auto pk = random_vector(std::max(P, 1) * C, 44);
  auto pv = random_vector(std::max(P, 1) * C, 45);
  const std::vector<std::int32_t> lengths = {4, 2};
  const std::int32_t* len = padded ? lengths.data() : nullptr;
  const auto r = random_vector(B * T * C, 46);
  std::vector<float> out(B * T * C), probs(B * NH * T * (P + T));
  const float* pkp = P ? pk.data() : nullptr;
  const float* pvp = P ? pv.data() : nullptr;
  // The reference's products: fp32 on OpenBLAS (the bf16 ones are the harness's to check).
  const HeadProducts products(Precision::kF32, MatmulLibrary::kOpenBlas);
  auto loss = [&] {
    attention_forward(out.data(), probs.data(), q.data(), k.data(), v.data(), pkp, pvp, len, B, T,
                      P, C, NH, causal, window, products);
    return weighted_sum(out.data(), r);
  };
  loss();
  std::vector<float> dq(B * T * C), dk(B * T * C), dv(B * T * C), dpk(std::max(P, 1) * C),
      dpv(std::max(P, 1) * C);
  attention_backward(dq.data(), dk.data(), dv.data(), P ? dpk.data() : nullptr,
                     P ? dpv.data() : nullptr, r.data(), probs.data(), q.data(), k.data(), v.data(),
                     pkp, pvp, B, T, P, C, NH, products);
  check_gradient("dq", loss, q.data(), q.size(), dq.data());
  check_gradient("dk", loss, k.data(), k.size(), dk.data());
  check_gradient("dv", loss, v.data(), v.size(), dv.data());
  if (P) {
    check_gradient("dprefix_k", loss, pk.data(), P * C, dpk.data());
    check_gradient("dprefix_v", loss, pv.data(), P * C, dpv.data());
  }
  // Masked keys get exactly zero probability, visible ones more than zero; key s (prefix
  // keys first) is outside a sliding window when the query's position P + t is more than
  // `window` after it.
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t)
        for (int s = 0; s < P + T; ++s) {
          const int j = s - P;  // the key's row, negative for prefix keys
          const bool hidden =
              (len && j >= len[b]) || (causal && j > t) || (window > 0 && P + t - s > window);
          const float p = probs[((b * NH + h) * T + t) * (P + T) + s];
          if (hidden) CHECK(p == 0.0f);
          if (!hidden && (!len || t < len[b])) CHECK(p > 0.0f);
        }
}
}  // namespace

TEST_CASE("attention gradients match finite differences") {
  SECTION("bidirectional with padding") { attention_case(false, 0, true); }
  SECTION("causal") { attention_case(true, 0, false); }
  SECTION("bidirectional with prefix keys/values and padding") { attention_case(false, 3, true); }
  SECTION("causal with prefix") { attention_case(true, 2, false); }
  SECTION("causal with prefix, padding and a sliding window of 2") {
    attention_case(true, 2, true, 2);
  }
  SECTION("causal with a sliding window of 1") { attention_case(true, 0, false, 1); }
}

TEST_CASE("cross-entropy gradient matches finite differences and honours ignore_index") {
  const int N = 4, V = 6;
  auto logits = random_vector(N * V, 51, 2.0f);
  const std::vector<std::int32_t> targets = {2, kIgnoreIndex, 0, 5};
  std::vector<float> losses(N), probs(N * V), dlogits(N * V);
  auto loss = [&] {
    cross_entropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V);
    double sum = 0;
    for (float l : losses) sum += l;
    return sum / 3.0;
  };
  loss();
  CHECK(losses[1] == 0.0f);
  CHECK(cross_entropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V) == 3);
  cross_entropy_backward(dlogits.data(), probs.data(), targets.data(), 1.0f / 3.0f, N, V);
  check_gradient("dlogits", loss, logits.data(), logits.size(), dlogits.data());
  for (int i = 0; i < V; ++i) CHECK(dlogits[V + i] == 0.0f);
  // Loss is -log softmax: check one value against a direct computation.
  double denom = 0;
  for (int i = 0; i < V; ++i) denom += std::exp(static_cast<double>(logits[i]));
  CHECK(losses[0] == Approx(std::log(denom) - logits[2]).epsilon(1e-5));
}

TEST_CASE("pooling gradients match finite differences for cls, mean and last") {
  const int B = 2, S = 5, offset = 1, C = 3;
  const std::vector<std::int32_t> lengths = {4, 2};
  for (PoolMode mode : {PoolMode::kCls, PoolMode::kMean, PoolMode::kLast}) {
    auto x = random_vector(B * S * C, 61);
    const auto r = random_vector(B * C, 62);
    std::vector<float> out(B * C), dx(B * S * C, 5.0f);
    auto loss = [&] {
      pool_forward(out.data(), x.data(), lengths.data(), B, S, offset, C, mode);
      return weighted_sum(out.data(), r);
    };
    pool_backward(dx.data(), r.data(), lengths.data(), B, S, offset, C, mode);
    check_gradient("dinp", loss, x.data(), x.size(), dx.data());
  }
}

TEST_CASE("dropout is seeded, keeps about 1-p, and its backward applies the same mask") {
  const int N = 20000;
  std::vector<float> x(N, 1.0f), out(N), mask(N), out2(N), mask2(N);
  dropout_forward(out.data(), mask.data(), x.data(), N, 0.25f, 7, 3);
  dropout_forward(out2.data(), mask2.data(), x.data(), N, 0.25f, 7, 3);
  CHECK(out == out2);
  int kept = 0;
  for (float m : mask) kept += m > 0;
  CHECK(kept == Approx(0.75 * N).epsilon(0.03));
  for (float o : out) CHECK((o == 0.0f || o == Approx(1.0f / 0.75f)));
  dropout_forward(out2.data(), mask2.data(), x.data(), N, 0.25f, 8, 3);
  CHECK(out != out2);
  std::vector<float> dout = random_vector(N, 71), dx(N);
  dropout_backward(dx.data(), dout.data(), mask.data(), N);
  for (int i = 0; i < N; ++i) CHECK(dx[i] == dout[i] * mask[i]);
  // The loss Σ r·dropout(x) is linear in x; the gradient check holds for a fixed seed.
  auto xs = random_vector(64, 72);
  const auto r = random_vector(64, 73);
  std::vector<float> o(64), m(64), d(64);
  auto loss = [&] {
    dropout_forward(o.data(), m.data(), xs.data(), 64, 0.5f, 9, 1);
    return weighted_sum(o.data(), r);
  };
  loss();
  dropout_backward(d.data(), r.data(), m.data(), 64);
  check_gradient("dinp", loss, xs.data(), xs.size(), d.data());
}

TEST_CASE("dropout of a slice, placed by its first element, draws the whole call's masks") {
  // Data parallelism: a rank holding elements [first, first + n) of a batch draws the
  // masks one process draws there, so ranks and one process train alike with dropout.
  const int N = 3000, first = 1234, n = 700;
  std::vector<float> x = random_vector(N, 74), whole(N), whole_mask(N);
  dropout_forward(whole.data(), whole_mask.data(), x.data(), N, 0.3f, 11, 5);
  std::vector<float> part(n), part_mask(n);
  dropout_forward(part.data(), part_mask.data(), x.data() + first, n, 0.3f, 11, 5, first);
  for (int i = 0; i < n; ++i) {
    CHECK(part_mask[i] == whole_mask[first + i]);
    CHECK(part[i] == whole[first + i]);
  }
  // Without the offset the slice would draw the first n masks instead: other masks.
  dropout_forward(part.data(), part_mask.data(), x.data() + first, n, 0.3f, 11, 5);
  int differing = 0;
  for (int i = 0; i < n; ++i) differing += part_mask[i] != whole_mask[first + i];
  CHECK(differing > n / 10);
}

TEST_CASE("bf16 and fp16 conversions round to nearest and round-trip representable values") {
  for (float v : {0.0f, 1.0f, -2.5f, 0.15625f, 65504.0f, 6.103515625e-05f, 5.960464477539063e-08f}) {
    CHECK(fp16_to_float(float_to_fp16(v)) == v);
    CHECK(bf16_to_float(float_to_bf16(v)) == Approx(v).epsilon(1e-2));
  }
  CHECK(std::isinf(fp16_to_float(float_to_fp16(1e6f))));
  CHECK(bf16_to_float(float_to_bf16(1.0f + 1.0f / 512)) == 1.0f);  // ties to even
  CHECK(fp16_to_float(float_to_fp16(1.0f + 1.0f / 4096)) == 1.0f);
  std::vector<float> src = {1.5f, -3.25f, 1000.0f};
  std::vector<std::uint16_t> half(3);
  std::vector<float> back(3);
  Tensor a{src.data(), {3}, DType::kF32}, h{half.data(), {3}, DType::kF16}, f{back.data(), {3}, DType::kF32};
  convert(a, h);
  convert(h, f);
  CHECK(back == src);
  Tensor m{src.data(), {3, 1}, DType::kF32};
  CHECK(m.rows(1, 3).f32()[0] == -3.25f);
  CHECK(m.rows(1, 3).shape[0] == 2);
}
