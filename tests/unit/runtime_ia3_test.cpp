// (IA)³ (runtime/adapters/ia3/): the layer's gradients against finite differences, the
// vectors' gradients and the activations' through the whole transformer (a prompt below
// every site), a fresh (IA)³ is its parent, evaluation dedup and co-batching beside a
// LoRA give each model what it gives alone, and merged (ia3_fold.h) equals unmerged.
#include <catch2/catch.hpp>
#include <cstring>

#include "runtime/adapters/ia3/ia3_fold.h"
#include "runtime/adapters/ia3/ia3_layer.h"
#include "runtime/adapters/ia3/ia3_parameters.h"
#include "runtime/adapters/ia3/ia3_spec.h"
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

std::vector<float> logits_of(SegmentedTransformer& net, const std::vector<const ModelWeights*>& ws,
                             const TinyBatch& data, std::size_t which, bool share = false) {
  FamilyBatch batch{{}, false, share};
  for (const ModelWeights* w : ws) batch.segments.push_back(data.segment(w, kB, kT, 0));
  for (Segment& s : batch.segments) s.targets = nullptr;
  auto out = net.forward(batch);
  REQUIRE(out.is_ok());
  const Tensor& t = out->at(which).logits;
  return std::vector<float>(t.f32(), t.f32() + t.numel());
}

}  // namespace

TEST_CASE("(IA)³ layer: output and input scaling, their gradients against finite differences") {
  auto backend = make_cpu_backend(1);
  Backend& be = *backend;
  const int width = 5;
  const std::int64_t rows = 4;
  auto l = test::random_vector(width, 1), y0 = test::random_vector(rows * width, 2);
  const auto weights = test::random_vector(rows * width, 3);
  std::vector<float> dl(width), dy(rows * width), y(rows * width), saved(rows * width);
  const Ia3Weights w{l.data(), dl.data(), false};
  // Output: y = y0 ⊙ l, y0 kept.
  auto output = [&]() -> double {
    y = y0;
    ia3_output_forward(be, y.data(), saved.data(), w, rows, width);
    return test::weighted_sum(y.data(), weights);
  };
  output();
  CHECK(saved == y0);
  for (std::int64_t r = 0; r < rows; ++r)
    for (int c = 0; c < width; ++c) CHECK(y[r * width + c] == y0[r * width + c] * l[c]);
  ia3_output_backward(be, dy.data(), weights.data(), saved.data(), w, rows, width);
  test::check_gradient("output l", output, l.data(), l.size(), dl.data());
  test::check_gradient("output y0", output, y0.data(), y0.size(), dy.data());
  // Input: x ⊙ l.
  std::fill(dl.begin(), dl.end(), 0.0f);
  auto input = [&]() -> double {
    ia3_input_forward(be, y.data(), y0.data(), w, rows, width);
    return test::weighted_sum(y.data(), weights);
  };
  input();
  ia3_input_backward(be, dy.data(), weights.data(), y0.data(), w, rows, width);
  test::check_gradient("input l", input, l.data(), l.size(), dl.data());
  test::check_gradient("input x", input, y0.data(), y0.size(), dy.data());
}

TEST_CASE("(IA)³ in the transformer: vectors and the prompt below them match finite differences") {
  // Every site on both layers: outputs of k, v and o, inputs of q, ffn_in and ffn_out. The
  // prompt's gradient passes through every one of them on its way down.
  Family f(test::tiny_architecture());
  spec::Adaptation ad = test::ia3_adaptation({"k", "v", "o"}, {"q", "ffn_in", "ffn_out"});
  ad.prompt = spec::PromptSpec{.virtual_tokens = 2};
  ad.head = test::two_labels();
  f.add("ia3", "base", ad);
  f.materialise();
  int vectors = 0;
  test::check_parameter_gradients(f, "ia3",
                                  [&](const ParameterSpec& p) {
                                    if (p.introduced_by != "ia3" || p.name.starts_with("head."))
                                      return false;
                                    vectors += is_ia3_parameter(p.name);
                                    return true;
                                  },
                                  {.training = true});
  CHECK(vectors == 2 * 6);
}

TEST_CASE("(IA)³ on a Llama-shaped base: grouped k and v, the gate, no biases") {
  // RMSNorm, rotary positions, SwiGLU and one key/value head for two query heads: k and v
  // are (kv_width) wide, and the gate is a linear of its own, scaled here on its output.
  const spec::Architecture a = test::tiny_llama_architecture();
  Family f(a);
  spec::Adaptation ad = test::ia3_adaptation({"k", "v", "ffn_gate"}, {"q", "ffn_out"});
  ad.head = test::two_labels(spec::Pooling::kLast);
  f.add("ia3", "base", ad);
  f.materialise();
  CHECK(f.params("ia3").find("blk.0.attn_v.ia3.ia3.out")->shape ==
        std::vector<std::int64_t>{a.kv_width(), 1});
  // The smaller step of the Llama checks (runtime_adaptation_test.cpp, kLlamaStep).
  const int vectors = test::check_parameter_gradients(
      f, "ia3", [](const ParameterSpec& p) { return is_ia3_parameter(p.name); },
      {.training = true, .h = 3e-3f, .family_seed = 5, .data_seed = 8, .dropout_seed = 77});
  CHECK(vectors == 2 * 5);
}

TEST_CASE("a fresh (IA)³ is its parent; dedup and co-batching give each model its own") {
  Family f(test::tiny_architecture());
  spec::Adaptation parent;
  parent.head = test::two_labels();
  f.add("parent", "base", parent);
  f.add("ia3", "parent", test::ia3_adaptation({"k", "v"}, {"ffn_out"}));
  spec::Adaptation lora;
  lora.set(spec::LoraSpec{.rank = 2, .alpha = 4, .targets = {"k", "ffn_out"}});
  f.add("lora", "parent", lora);
  f.materialise(7);
  const Tensor& l = *f.params("ia3").find("blk.1.ffn_out.ia3.ia3.in");
  CHECK(l.shape == std::vector<std::int64_t>{1, 16});
  CHECK(f.params("ia3").find("blk.0.attn_k.ia3.ia3.out")->shape == std::vector<std::int64_t>{8, 1});
  for (std::int64_t i = 0; i < l.numel(); ++i) CHECK(l.f32()[i] == 1.0f);
  const TinyBatch data(kB, kT, 16, 2, 3);
  SegmentedTransformer net(f.backend());
  ModelWeights wp = f.weights("parent"), wi = f.weights("ia3"), wl = f.weights("lora");
  const auto reference = logits_of(net, {&wp}, data, 0);
  const auto fresh = logits_of(net, {&wi}, data, 0);
  for (std::size_t i = 0; i < reference.size(); ++i)
    CHECK(fresh[i] == Approx(reference[i]).margin(1e-6));

  f.randomise(21);
  const auto parent_alone = logits_of(net, {&wp}, data, 0);
  const auto ia3_alone = logits_of(net, {&wi}, data, 0);
  const auto lora_alone = logits_of(net, {&wl}, data, 0);
  CHECK(ia3_alone != parent_alone);
  for (const bool share : {false, true}) {
    INFO("share_identical " << share);
    const std::vector<const ModelWeights*> family = {&wp, &wi, &wl};
    const auto p = logits_of(net, family, data, 0, share),
               i = logits_of(net, family, data, 1, share),
               o = logits_of(net, family, data, 2, share);
    for (std::size_t k = 0; k < p.size(); ++k) {
      CHECK(p[k] == Approx(parent_alone[k]).margin(1e-5));
      CHECK(i[k] == Approx(ia3_alone[k]).margin(1e-5));
      CHECK(o[k] == Approx(lora_alone[k]).margin(1e-5));
    }
  }
}

TEST_CASE("merged (IA)³ equals unmerged") {
  Family f(test::tiny_architecture());
  spec::Adaptation parent;
  parent.head = test::two_labels();
  f.add("parent", "base", parent);
  f.add("ia3", "parent", test::ia3_adaptation({"q", "v", "o"}, {"ffn_in", "ffn_out"}));
  f.materialise(3);
  f.randomise(17);
  const TinyBatch data(kB, kT, 16, 2, 3);
  SegmentedTransformer net(f.backend());
  ModelWeights wi = f.weights("ia3");
  const auto unmerged = logits_of(net, {&wi}, data, 0);
  Family::ParameterCopies copies = f.copy_parameters("parent");
  ParameterBinding& merged = copies.binding;
  int folded = 0;
  for (const ParameterSpec& p : parameter_table(f.workspace(), f.model("ia3"))) {
    if (!is_ia3_parameter(p.name)) continue;
    const std::string stem = p.name.substr(0, p.name.find(kIa3Marker));
    const Tensor& w = *merged.find(stem + ".weight");
    const Tensor* bias = merged.find(stem + ".bias");
    fold_ia3(w.f32(), bias ? bias->f32() : nullptr, f.params("ia3").find(p.name)->f32(),
             p.name.ends_with(".in"), w.shape[0], w.shape[1]);
    ++folded;
  }
  CHECK(folded == 2 * 5);
  auto wm = resolve_model(f.workspace(), f.model("parent"), spec::Objective::kClassification,
                          merged, nullptr);
  REQUIRE(wm.is_ok());
  const auto merged_logits = logits_of(net, {&*wm}, data, 0);
  for (std::size_t i = 0; i < unmerged.size(); ++i)
    CHECK(merged_logits[i] == Approx(unmerged[i]).margin(1e-4));
}
