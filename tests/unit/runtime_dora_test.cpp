// DoRA (runtime/adapters/lora/dora_layer.h): the layer's gradients against finite
// differences with its weight norm held constant (as PEFT detaches it), the magnitude's
// gradient through the whole transformer, its start at the weight's row norms (a fresh
// DoRA is its parent), and merged equal to unmerged.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "runtime/adapters/lora/dora_layer.h"
#include "runtime/adapters/lora/lora_fold.h"
#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/model/parameter_table.h"
#include "runtime/model/transformer.h"
#include "runtime_family.h"
#include "runtime_gradcheck.h"
#include "runtime_model_gradcheck.h"

using namespace scion;
using namespace scion::runtime;
using scion::test::Family;
using scion::test::TinyBatch;

namespace {

constexpr int kB = 3, kT = 5;

spec::Adaptation dora(std::vector<std::string> targets, float dropout = 0.0f) {
  spec::Adaptation ad;
  ad.set(spec::LoraSpec{.rank = 2,
                        .alpha = 4.0f,
                        .dropout = dropout,
                        .targets = std::move(targets),
                        .layers = {},
                        .use_dora = true});
  return ad;
}

std::vector<float> logits_of(SegmentedTransformer& net, const ModelWeights& w,
                             const TinyBatch& data) {
  auto out = net.forward({{data.segment(&w, kB, kT, 0)}, false});
  REQUIRE(out.is_ok());
  const Tensor& t = out->at(0).logits;
  return std::vector<float>(t.f32(), t.f32() + t.numel());
}

}  // namespace

TEST_CASE("DoRA layer: gradients of A, B, m and x match finite differences, norm held") {
  auto backend = make_cpu_backend(1);
  Backend& be = *backend;
  const int in = 6, out = 5, rank = 2;
  const std::int64_t rows = 4;
  auto W = test::random_vector(out * in, 1, 0.5f), A = test::random_vector(rank * in, 2, 0.5f);
  auto B = test::random_vector(out * rank, 3, 0.5f), m = test::random_vector(out, 4);
  auto x = test::random_vector(rows * in, 5), base = test::random_vector(rows * out, 6);
  const auto weights = test::random_vector(rows * out, 7);
  std::vector<float> dA(A.size()), dB(B.size()), dm(m.size()), dx(x.size());
  LoraWeights lw{A.data(), B.data(), dA.data(), dB.data(), rank,
                 1.5f,     0.0f,     0,         m.data(),  dm.data()};
  std::vector<float> norms(out), scratch(out * in), hidden(rows * rank), combined(rows * out);
  std::vector<float> y(rows * out), dcombined(rows * out), dhidden(rows * rank);
  dora_weight_norms(be, norms.data(), scratch.data(), W.data(), lw, in, out);
  // The norm is of W + s·B·A, row by row.
  for (int o = 0; o < out; ++o) {
    double sum = 0.0;
    for (int i = 0; i < in; ++i) {
      double v = W[o * in + i];
      for (int k = 0; k < rank; ++k) v += 1.5 * B[o * rank + k] * A[k * in + i];
      sum += v * v;
    }
    CHECK(norms[o] == Approx(std::sqrt(sum)).epsilon(1e-5));
  }
  // PEFT's y = W·x + (m/n − 1)·W·x + (m/n)·s·B·A·x with n held: `base` stands in for the
  // frozen product's output (its gradient path is the trunk's, not this layer's).
  auto forward = [&]() -> double {
    be.matmul_forward(hidden.data(), x.data(), A.data(), nullptr, rows, in, rank);
    std::copy(base.begin(), base.end(), y.begin());
    dora_forward(be, y.data(), combined.data(), x.data(), hidden.data(), W.data(), lw, norms.data(),
                 rows, in, out);
    return test::weighted_sum(y.data(), weights);
  };
  forward();
  // The value itself: base − W·x + m ⊙ (W + s·B·A)·x / n.
  for (std::int64_t r = 0; r < rows; ++r)
    for (int o = 0; o < out; ++o) {
      double wx = 0.0, vx = 0.0;
      for (int i = 0; i < in; ++i) {
        double v = W[o * in + i];
        for (int k = 0; k < rank; ++k) v += 1.5 * B[o * rank + k] * A[k * in + i];
        wx += W[o * in + i] * x[r * in + i];
        vx += v * x[r * in + i];
      }
      CHECK(y[r * out + o] == Approx(base[r * out + o] - wx + m[o] * vx / norms[o]).margin(1e-5));
    }
  dora_backward(be, dx.data(), GradMode::kAssign, dcombined.data(), dhidden.data(), weights.data(),
                x.data(), hidden.data(), combined.data(), norms.data(), W.data(), lw, rows, in,
                out);
  test::check_gradient("A", forward, A.data(), A.size(), dA.data());
  test::check_gradient("B", forward, B.data(), B.size(), dB.data());
  test::check_gradient("m", forward, m.data(), m.size(), dm.data());
  test::check_gradient("x", forward, x.data(), x.size(), dx.data());
}

TEST_CASE("DoRA in the transformer: the magnitude's gradient matches finite differences") {
  // A and B also change the norm, which the backward pass holds constant (PEFT's detach):
  // their gradients are checked at the layer above; m does not enter the norm.
  Family f(test::tiny_architecture());
  spec::Adaptation ad = dora({"q", "v", "ffn_out"}, 0.1f);
  ad.head = test::two_labels();
  f.add("dora", "base", ad);
  f.materialise();
  const int checked = test::check_parameter_gradients(
      f, "dora", [](const ParameterSpec& p) { return p.name.ends_with(".lora.dora.m"); },
      {.training = true});
  CHECK(checked == 2 * 3);
}

TEST_CASE("a fresh DoRA starts at the weight's row norms and reproduces its parent") {
  Family f(test::tiny_architecture());
  spec::Adaptation parent;
  parent.head = test::two_labels();
  f.add("parent", "base", parent);
  f.add("dora", "parent", dora({"q", "k", "v", "o", "ffn_in", "ffn_out"}));
  f.materialise(7);
  const Tensor& W = *f.params("dora").find("blk.1.ffn_in.weight");
  const Tensor& m = *f.params("dora").find("blk.1.ffn_in.lora.dora.m");
  REQUIRE(m.numel() == W.shape[0]);
  for (std::int64_t o = 0; o < W.shape[0]; ++o) {
    double sum = 0.0;
    for (std::int64_t i = 0; i < W.shape[1]; ++i)
      sum += static_cast<double>(W.f32()[o * W.shape[1] + i]) * W.f32()[o * W.shape[1] + i];
    CHECK(m.f32()[o] == Approx(std::sqrt(sum)).epsilon(1e-6));
  }
  const TinyBatch data(kB, kT, 16, 2, 3);
  SegmentedTransformer net(f.backend());
  ModelWeights wp = f.weights("parent"), wd = f.weights("dora");
  const auto reference = logits_of(net, wp, data), fresh = logits_of(net, wd, data);
  // m / n = 1 and B = 0: W·x − W·x + W·x, equal up to rounding.
  for (std::size_t i = 0; i < reference.size(); ++i)
    CHECK(fresh[i] == Approx(reference[i]).margin(1e-5));
}

TEST_CASE("merged DoRA equals unmerged, and a DoRA in bf16 is refused") {
  Family f(test::tiny_architecture());
  spec::Adaptation parent;
  parent.head = test::two_labels();
  f.add("parent", "base", parent);
  f.add("dora", "parent", dora({"q", "v", "ffn_in"}));
  f.materialise(3);
  f.randomise(17);
  const TinyBatch data(kB, kT, 16, 2, 3);
  SegmentedTransformer net(f.backend());
  const auto unmerged = logits_of(net, f.weights("dora"), data);
  Family::ParameterCopies copies = f.copy_parameters("parent");
  ParameterBinding& merged = copies.binding;
  REQUIRE(merge_adaptations(f.backend(), f.workspace(), f.model("dora"), f.params("dora"), merged)
              .is_ok());
  auto wm = resolve_model(f.workspace(), f.model("parent"), spec::Objective::kClassification,
                          merged, nullptr);
  REQUIRE(wm.is_ok());
  const auto folded = logits_of(net, *wm, data);
  for (std::size_t i = 0; i < unmerged.size(); ++i)
    CHECK(folded[i] == Approx(unmerged[i]).margin(1e-4));
  // The merge changed the weight: random magnitudes are not the row norms.
  CHECK(std::memcmp(merged.find("blk.0.attn_q.weight")->data,
                    f.params("parent").find("blk.0.attn_q.weight")->data,
                    merged.find("blk.0.attn_q.weight")->bytes()) != 0);

  // A trunk held in bf16 has no fp32 weight to take DoRA's norm of.
  ParameterStore bf16_pool(f.backend(), {}, DType::kBF16);
  ParameterBinding held = bf16_pool.add_model(f.workspace(), f.model("dora")).value();
  REQUIRE(held.find("blk.0.attn_q.weight")->dtype == DType::kBF16);
  GradientSet grads =
      GradientSet::create(parameter_table(f.workspace(), f.model("dora")), f.backend(), "dora")
          .value();
  const auto refused = resolve_model(f.workspace(), f.model("dora"),
                                     spec::Objective::kClassification, held, &grads.binding());
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().message().find("DoRA") != std::string::npos);
  CHECK(refused.status().message().find("bf16") != std::string::npos);
}
