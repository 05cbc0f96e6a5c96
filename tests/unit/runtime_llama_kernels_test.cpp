// The CPU kernels of the Llama family (RMSNorm, RoPE, SwiGLU, grouped key/value heads):
// finite-difference gradient checks, the formulas against a direct double-precision
// evaluation, and the threaded paths against one thread.
#include <catch2/catch.hpp>
#include <omp.h>

#include <cmath>
#include <vector>

#include "runtime/cpu/grouped_kv.h"
#include "runtime/cpu/parallel.h"
#include "runtime/cpu/rmsnorm.h"
#include "runtime/cpu/rope.h"
#include "runtime/cpu/swiglu.h"
#include "runtime_gradcheck.h"

using namespace scion::runtime;
using namespace scion::runtime::cpu;
using scion::test::check_gradient;
using scion::test::random_vector;
using scion::test::weighted_sum;

namespace {

// Runs fn with `threads` OpenMP threads, restoring the previous setting.
template <class Fn>
auto with_threads(int threads, Fn&& fn) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  auto result = fn();
  omp_set_num_threads(before);
  return result;
}

}  // namespace

TEST_CASE("rmsnorm: values, and gradients match finite differences") {
  const int N = 6, C = 10;
  const float eps = 1e-6f;
  auto x = random_vector(N * C, 1);
  auto w = random_vector(C, 2);
  const auto r = random_vector(N * C, 4);
  std::vector<float> out(N * C), rstd(N);
  auto loss = [&] {
    rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), N, C, eps);
    return weighted_sum(out.data(), r);
  };
  loss();
  for (int n = 0; n < N; ++n) {
    double ms = 0;
    for (int c = 0; c < C; ++c) ms += double(x[n * C + c]) * x[n * C + c];
    const double s = 1.0 / std::sqrt(ms / C + eps);
    for (int c = 0; c < C; ++c)
      CHECK(out[n * C + c] == Approx(x[n * C + c] * s * w[c]).epsilon(1e-5).margin(1e-6));
  }
  std::vector<float> dx(N * C, 7.0f), dw(C, 0.0f);
  rmsnorm_backward(dx.data(), dw.data(), r.data(), x.data(), w.data(), rstd.data(), N, C,
                   GradMode::kAssign);
  check_gradient("dinp", loss, x.data(), x.size(), dx.data());
  check_gradient("dweight", loss, w.data(), w.size(), dw.data());

  SECTION("accumulate mode adds to the existing gradient; dweight accumulates, may be null") {
    std::vector<float> dx2(N * C, 1.0f), dw2(dw);
    rmsnorm_backward(dx2.data(), dw2.data(), r.data(), x.data(), w.data(), rstd.data(), N, C,
                     GradMode::kAccumulate);
    for (int i = 0; i < N * C; ++i) CHECK(dx2[i] == Approx(dx[i] + 1.0f).margin(1e-6));
    for (int c = 0; c < C; ++c) CHECK(dw2[c] == Approx(2 * dw[c]).margin(1e-6));
    std::vector<float> dx3(N * C);
    rmsnorm_backward(dx3.data(), nullptr, r.data(), x.data(), w.data(), rstd.data(), N, C,
                     GradMode::kAssign);
    CHECK(dx3 == dx);
  }
}

TEST_CASE("rope: rotate_half pairs by position, and the gradient matches finite differences") {
  const int B = 2, T = 5, NH = 3, D = 8, pos0 = 2;
  const float theta = 10000.0f, scale = 2.0f;
  const int C = NH * D;
  auto x = random_vector(B * T * C, 31);
  const auto r = random_vector(B * T * C, 32);
  std::vector<float> out(B * T * C);
  rope_forward(out.data(), x.data(), B, T, NH, D, pos0, theta, scale);
  // Against the definition, in double.
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < NH; ++h)
        for (int i = 0; i < D / 2; ++i) {
          const std::size_t base = (std::size_t(b) * T + t) * C + std::size_t(h) * D;
          const double angle = (pos0 + t) / double(scale) * std::pow(double(theta), -2.0 * i / D);
          const double x1 = x[base + i], x2 = x[base + i + D / 2];
          CHECK(out[base + i] == Approx(x1 * std::cos(angle) - x2 * std::sin(angle)).margin(1e-5));
          CHECK(out[base + i + D / 2] ==
                Approx(x2 * std::cos(angle) + x1 * std::sin(angle)).margin(1e-5));
        }
  // Position 0 is the identity.
  std::vector<float> at_zero(C);
  rope_forward(at_zero.data(), x.data(), 1, 1, NH, D, 0, theta, 1.0f);
  for (int c = 0; c < C; ++c) CHECK(at_zero[c] == x[c]);

  auto loss = [&] {
    rope_forward(out.data(), x.data(), B, T, NH, D, pos0, theta, scale);
    return weighted_sum(out.data(), r);
  };
  std::vector<float> dx(B * T * C, 5.0f);
  rope_backward(dx.data(), r.data(), B, T, NH, D, pos0, theta, scale);
  check_gradient("dinp", loss, x.data(), x.size(), dx.data());

  SECTION("in place: forward then backward is the identity") {
    std::vector<float> y(x);
    rope_forward(y.data(), y.data(), B, T, NH, D, pos0, theta, scale);
    rope_backward(y.data(), y.data(), B, T, NH, D, pos0, theta, scale);
    for (std::size_t i = 0; i < y.size(); ++i) CHECK(y[i] == Approx(x[i]).margin(1e-5));
  }
}

TEST_CASE("swiglu: silu(gate) * up, and gradients match finite differences") {
  const int N = 40;
  auto gate = random_vector(N, 41, 2.0f);
  auto up = random_vector(N, 42);
  const auto r = random_vector(N, 43);
  std::vector<float> out(N);
  auto loss = [&] {
    swiglu_forward(out.data(), gate.data(), up.data(), N);
    return weighted_sum(out.data(), r);
  };
  loss();
  for (int i = 0; i < N; ++i) {
    const double g = gate[i];
    CHECK(out[i] == Approx(g / (1.0 + std::exp(-g)) * up[i]).epsilon(1e-5).margin(1e-6));
  }
  std::vector<float> dgate(N, 3.0f), dup(N, 3.0f);
  swiglu_backward(dgate.data(), dup.data(), r.data(), gate.data(), up.data(), N);
  check_gradient("dgate", loss, gate.data(), gate.size(), dgate.data());
  check_gradient("dup", loss, up.data(), up.size(), dup.data());
}

TEST_CASE("repeat_kv: each key/value head serves its group, and the gradient sums the group") {
  const int N = 4, NKV = 2, groups = 3, D = 5;
  auto x = random_vector(N * NKV * D, 51);
  const auto r = random_vector(N * NKV * groups * D, 52);
  std::vector<float> out(N * NKV * groups * D);
  auto loss = [&] {
    repeat_kv_forward(out.data(), x.data(), N, NKV, groups, D);
    return weighted_sum(out.data(), r);
  };
  loss();
  for (int n = 0; n < N; ++n)
    for (int h = 0; h < NKV * groups; ++h)
      for (int d = 0; d < D; ++d)
        CHECK(out[(n * NKV * groups + h) * D + d] == x[(n * NKV + h / groups) * D + d]);
  std::vector<float> dx(N * NKV * D, 9.0f);
  repeat_kv_backward(dx.data(), r.data(), N, NKV, groups, D);
  check_gradient("dinp", loss, x.data(), x.size(), dx.data());
}

TEST_CASE("llama kernels over a team of threads match one thread") {
  // Above kParallelMinElements, so the loops run on the OpenMP team.
  const int NH = 4, D = 16, C = NH * D, NKV = 2;
  const std::int64_t N = 4 * kParallelMinElements / C + 3;
  const auto x = random_vector(static_cast<std::size_t>(N * C), 61);
  const auto w = random_vector(C, 62);
  const auto dy = random_vector(static_cast<std::size_t>(N * C), 63);
  const auto kv = random_vector(static_cast<std::size_t>(N * NKV * D), 64);
  auto run = [&](int threads) {
    return with_threads(threads, [&] {
      std::vector<std::vector<float>> outs;
      std::vector<float> y(N * C), rstd(N), dx(N * C), dw(C, 0.0f);
      rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5f);
      rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), N, C,
                       GradMode::kAssign);
      outs.insert(outs.end(), {y, dx, dw});
      std::vector<float> rot(N * C), drot(N * C);
      rope_forward(rot.data(), x.data(), static_cast<int>(N / 3), 3, NH, D, 1, 500000.0f, 1.0f);
      rope_backward(drot.data(), dy.data(), static_cast<int>(N / 3), 3, NH, D, 1, 500000.0f, 1.0f);
      outs.insert(outs.end(), {rot, drot});
      std::vector<float> act(N * C), dg(N * C), du(N * C);
      swiglu_forward(act.data(), x.data(), dy.data(), N * C);
      swiglu_backward(dg.data(), du.data(), dy.data(), x.data(), dy.data(), N * C);
      outs.insert(outs.end(), {act, dg, du});
      std::vector<float> rep(N * C), dkv(N * NKV * D);
      repeat_kv_forward(rep.data(), kv.data(), N, NKV, NH / NKV, D);
      repeat_kv_backward(dkv.data(), dy.data(), N, NKV, NH / NKV, D);
      outs.insert(outs.end(), {rep, dkv});
      return outs;
    });
  };
  const auto one = run(1), two = run(2);
  REQUIRE(one.size() == two.size());
  for (std::size_t i = 0; i < one.size(); ++i) {
    INFO("output " << i);
    CHECK(one[i] == two[i]);
  }
}
