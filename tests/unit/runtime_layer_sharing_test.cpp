// The trie of layer applications (FamilyBatch::share_identical): sharing identical layer
// applications changes no output, and computes what the trie says it saves.
#include <catch2/catch.hpp>
#include <cmath>

#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/model/layer_trie.h"
#include "runtime/model/text_positions.h"
#include "runtime/model/transformer.h"
#include "runtime_family.h"
#include "spec/text_positions.h"

using namespace scion;

namespace {

constexpr int kB = 3, kT = 6;

// base + two head-only probes + a LoRA on the top block only + a LoRA on every block +
// prefix tuning + prompt tuning + a grandchild adding a top-block LoRA to a probe.
test::Family sharing_family(spec::NormPlacement norm = spec::NormPlacement::kPre) {
  spec::Architecture arch = test::tiny_architecture(spec::ArchitectureKind::kEncoder, norm);
  arch.layers = 3;
  test::Family f(arch);
  for (const char* name : {"probe-a", "probe-b"}) {
    spec::Adaptation head;
    head.head = test::two_labels(spec::Pooling::kMean);
    f.add(name, "base", head);
  }
  spec::Adaptation top_lora;
  top_lora.set(spec::LoraSpec{
      .rank = 2, .alpha = 4.0f, .dropout = 0.0f, .targets = {"q", "v"}, .layers = {2}});
  top_lora.head = test::two_labels();
  f.add("top-lora", "base", top_lora);
  spec::Adaptation all_lora = top_lora;
  spec::LoraSpec every_layer = *top_lora.find<spec::LoraSpec>();
  every_layer.layers = {};
  all_lora.set(every_layer);
  f.add("all-lora", "base", all_lora);
  spec::Adaptation prefix;
  prefix.prefix = spec::PrefixSpec{.virtual_tokens = 2, .layers = {}, .reparam_hidden = 0};
  prefix.head = test::two_labels();
  f.add("prefix", "base", prefix);
  spec::Adaptation prompt;
  prompt.prompt = spec::PromptSpec{.virtual_tokens = 2, .init = spec::PromptInit::kRandom, .init_text = {}};
  prompt.head = test::two_labels();
  f.add("prompt", "base", prompt);
  spec::Adaptation grandchild;
  grandchild.set(
      spec::LoraSpec{.rank = 1, .alpha = 1.0f, .dropout = 0.0f, .targets = {"v"}, .layers = {2}});
  f.add("probe-a-top", "probe-a", grandchild);
  f.materialise();
  f.randomise(11);
  return f;
}

const std::vector<std::string> kModels = {"probe-a", "probe-b", "top-lora", "all-lora",
                                          "prefix", "prompt", "probe-a-top"};

std::vector<runtime::ModelWeights> resolve_all(const test::Family& f,
                                               const std::vector<std::string>& names) {
  std::vector<runtime::ModelWeights> weights;
  for (const std::string& name : names) {
    auto w = runtime::resolve_model(f.workspace(), f.model(name), spec::Objective::kClassification,
                                    f.params(name), nullptr);
    REQUIRE(w.is_ok());
    weights.push_back(std::move(w).value());
  }
  return weights;
}

runtime::FamilyBatch batch_of(const std::vector<runtime::ModelWeights>& weights,
                              const test::TinyBatch& data, bool share) {
  runtime::FamilyBatch batch{.share_identical = share};
  for (const auto& w : weights)
    batch.segments.push_back({.model = &w, .batch = kB, .length = kT, .tokens = data.tokens.data(),
                              .lengths = data.lengths.data()});
  return batch;
}

}  // namespace

TEST_CASE("sharing identical layer applications changes no output") {
  const auto norm = GENERATE(spec::NormPlacement::kPre, spec::NormPlacement::kPost);
  test::Family f = sharing_family(norm);
  const auto weights = resolve_all(f, kModels);
  const test::TinyBatch data(kB, kT, f.workspace().architecture_of(f.model("base")).vocab_size, 2, 5);

  runtime::SegmentedTransformer net(f.backend());
  auto shared = net.forward(batch_of(weights, data, true));
  REQUIRE(shared.is_ok());
  const std::vector<runtime::SegmentResult> shared_results = *shared;  // copy: views of the arena
  std::vector<std::vector<float>> shared_logits;
  for (const auto& r : shared_results)
    shared_logits.emplace_back(r.logits.f32(), r.logits.f32() + r.logits.numel());

  for (std::size_t m = 0; m < weights.size(); ++m) {
    runtime::SegmentedTransformer alone_net(f.backend());
    runtime::FamilyBatch alone{.segments = {batch_of(weights, data, false).segments[m]}};
    auto out = alone_net.forward(alone);
    REQUIRE(out.is_ok());
    const float* logits = (*out)[0].logits.f32();
    REQUIRE((*out)[0].logits.numel() == static_cast<std::int64_t>(shared_logits[m].size()));
    for (std::size_t i = 0; i < shared_logits[m].size(); ++i) {
      INFO(kModels[m] << " logit " << i);
      CHECK(shared_logits[m][i] == Approx(logits[i]).margin(1e-5));
    }
  }
  // The probes differ only in their heads, so they must not give identical logits.
  CHECK(shared_logits[0] != shared_logits[1]);
}

TEST_CASE("the trie computes each shared layer application once") {
  test::Family f = sharing_family();
  const auto weights = resolve_all(f, kModels);
  const test::TinyBatch data(kB, kT, f.workspace().architecture_of(f.model("base")).vocab_size, 2, 5);
  auto flops = [&](const std::vector<std::size_t>& members, bool share) {
    runtime::FamilyBatch batch{.share_identical = share};
    for (std::size_t m : members)
      batch.segments.push_back({.model = &weights[m], .batch = kB, .length = kT,
                                .tokens = data.tokens.data(), .lengths = data.lengths.data()});
    return runtime::forward_flops(batch);
  };
  const spec::Architecture& a = f.workspace().architecture_of(f.model("base"));
  const double C = a.width, F = a.ffn_width, S = kT, rows = kB * kT;
  const double block = 2 * rows * (4 * C * C + 2 * C * F) + 4 * kB * S * S * C;
  const double head = 2 * kB * C * 2;

  // Two probes: the whole trunk once, two heads.
  CHECK(flops({0, 1}, true) == Approx(a.layers * block + 2 * head));
  CHECK(flops({0, 1}, false) == Approx(2 * (a.layers * block + head)));
  // A probe and a top-block LoRA share every block but the top one.
  const double lora_top = 2 * rows * 2 * (C + C) * 2;  // rank 2 on q and v
  CHECK(flops({0, 2}, true) == Approx((a.layers + 1) * block + lora_top + 2 * head));
  // The grandchild of probe-a branches from its parent at the top block too.
  CHECK(flops({0, 6}, true) == Approx((a.layers + 1) * block + 2 * rows * 1 * (C + C) + 2 * head));
  // LoRA on every block and prefix tuning branch at block 0; prompt tuning at the embeddings.
  for (std::size_t m : {3, 4, 5})
    CHECK(flops({0, m}, true) == Approx(flops({0}, false) + flops({m}, false)));
  // The whole family: less than each alone, more than one trunk.
  std::vector<std::size_t> all(kModels.size());
  for (std::size_t m = 0; m < all.size(); ++m) all[m] = m;
  double alone = 0;
  for (std::size_t m : all) alone += flops({m}, false);
  CHECK(flops(all, false) == Approx(alone));
  CHECK(flops(all, true) < alone);
  CHECK(flops(all, true) > a.layers * block);
}

namespace {

// A probe, a prefix and the prefix's head-only descendant on a tiny BERT, imported from
// Hugging Face (hf_model_type set) or native.
test::Family prefix_family(bool imported) {
  spec::Architecture arch =
      test::tiny_architecture(spec::ArchitectureKind::kEncoder, spec::NormPlacement::kPost);
  if (imported) arch.hf_model_type = "bert";
  test::Family f(arch);
  spec::Adaptation head;
  head.head = test::two_labels();
  f.add("probe", "base", head);
  spec::Adaptation prefix = head;
  prefix.prefix = spec::PrefixSpec{.virtual_tokens = 2, .layers = {}, .reparam_hidden = 0};
  f.add("prefix", "base", prefix);
  f.add("prefix-probe", "prefix", head);
  f.materialise();
  f.randomise(5);
  return f;
}

std::vector<float> logits_alone(test::Family& f, const runtime::ModelWeights& w,
                                const test::TinyBatch& data) {
  runtime::SegmentedTransformer net(f.backend());
  runtime::FamilyBatch alone;
  alone.segments.push_back({.model = &w,
                            .batch = kB,
                            .length = kT,
                            .tokens = data.tokens.data(),
                            .lengths = data.lengths.data()});
  auto out = net.forward(alone);
  REQUIRE(out.is_ok());
  return std::vector<float>((*out)[0].logits.f32(),
                            (*out)[0].logits.f32() + (*out)[0].logits.numel());
}

}  // namespace

// On an imported BERT (learned positions) a prefix moves the text's positions after its
// virtual tokens, as transformers does behind PEFT (spec/text_positions.h): such a
// model's embeddings differ from a head-only sibling's, and sharing must not mix them up,
// while its own head-only descendant (shifted alike) still shares them.
TEST_CASE("a prefix that shifts positions keeps its embeddings from unshifted siblings") {
  test::Family f = prefix_family(true);
  const std::vector<std::string> names = {"probe", "prefix", "prefix-probe"};
  const auto weights = resolve_all(f, names);
  CHECK(runtime::position_shift(weights[0]) == 0);
  CHECK(runtime::position_shift(weights[1]) == 2);
  CHECK(runtime::position_shift(weights[2]) == 2);  // its parent's prefix runs in it
  CHECK(spec::prefix_position_shift(f.workspace(), f.model("prefix-probe")) == 2);
  const test::TinyBatch data(kB, kT, weights[0].arch.vocab_size, 2, 5);

  runtime::SegmentedTransformer net(f.backend());
  auto shared = net.forward(batch_of(weights, data, true));
  REQUIRE(shared.is_ok());
  const std::vector<runtime::SegmentResult> shared_results = *shared;  // copy: views of the arena
  for (std::size_t m = 0; m < names.size(); ++m) {
    const std::vector<float> alone = logits_alone(f, weights[m], data);
    const runtime::Tensor& logits = shared_results[m].logits;
    REQUIRE(logits.numel() == static_cast<std::int64_t>(alone.size()));
    for (std::size_t i = 0; i < alone.size(); ++i) {
      INFO(names[m] << " logit " << i);
      CHECK(logits.f32()[i] == Approx(alone[i]).margin(1e-5));
    }
  }
  // Three models, two embeddings: the prefix's descendant shares its parent's; the probe,
  // with the same tokens but unshifted positions, has its own.
  std::vector<int> final_unit;
  const auto stages = runtime::detail::build_stages(batch_of(weights, data, true), final_unit);
  REQUIRE(stages.front().size() == 2);
  CHECK(stages.front()[0].segment == 0);
  CHECK(stages.front()[1].segment == 1);

  // The shift is real: the native twin (same values, text at positions 0, 1, ...) differs
  // in the prefix model and agrees in the probe.
  test::Family native = prefix_family(false);
  const auto twins = resolve_all(native, names);
  CHECK(runtime::position_shift(twins[1]) == 0);
  auto largest_difference = [&](std::size_t m) {
    const std::vector<float> a = logits_alone(f, weights[m], data);
    const std::vector<float> b = logits_alone(native, twins[m], data);
    double largest = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
      largest = std::max(largest, static_cast<double>(std::fabs(a[i] - b[i])));
    return largest;
  };
  CHECK(largest_difference(0) == 0.0);
  CHECK(largest_difference(1) > 1e-3);
}

TEST_CASE("native models keep the text at position 0 beside a prefix") {
  test::Family f = sharing_family();
  CHECK(runtime::position_shift(resolve_all(f, {"prefix"})[0]) == 0);
}

TEST_CASE("sharing is refused where backward would need every segment's rows") {
  test::Family f = sharing_family();
  const auto weights = resolve_all(f, {"probe-a", "probe-b"});
  test::TinyBatch data(kB, kT, f.workspace().architecture_of(f.model("base")).vocab_size, 2, 5);
  runtime::FamilyBatch batch = batch_of(weights, data, true);
  batch.segments[0].targets = data.labels.data();
  runtime::SegmentedTransformer net(f.backend());
  CHECK(!net.forward(batch).is_ok());
  batch.segments[0].targets = nullptr;
  batch.training = true;
  CHECK(!net.forward(batch).is_ok());
}

TEST_CASE("stored values with one digest share one buffer") {
  test::Family f(test::tiny_architecture());
  for (const char* name : {"probe-a", "probe-b", "probe-c"}) {
    spec::Adaptation head;
    head.head = test::two_labels();
    f.add(name, "base", head);
  }
  f.materialise();
  const spec::Workspace& ws = f.workspace();
  runtime::ParameterStore pool(f.backend());
  std::map<std::string, std::string> base_digests;
  for (const runtime::ParameterSpec& p : runtime::parameter_table(ws, f.model("base")))
    base_digests[p.name] = "trunk:" + p.name;
  const auto base = pool.add_stored_model(ws, f.model("base"), base_digests).value();
  const std::int64_t trunk_bytes = pool.bytes_held();
  CHECK(pool.is_new(*base.find("tok_emb.weight")));

  // probe-a and probe-b stored identical heads; probe-c a different one.
  auto head_digests = [&](const std::string& model, const std::string& digest) {
    std::map<std::string, std::string> d;
    for (const runtime::ParameterSpec& p : runtime::parameter_table(ws, f.model(model)))
      if (p.introduced_by == model) d[p.name] = digest + ":" + p.name.substr(p.name.rfind('.'));
    return d;
  };
  const auto a = pool.add_stored_model(ws, f.model("probe-a"), head_digests("probe-a", "h1")).value();
  const std::int64_t head_bytes = pool.bytes_held() - trunk_bytes;
  CHECK(head_bytes > 0);
  const auto b = pool.add_stored_model(ws, f.model("probe-b"), head_digests("probe-b", "h1")).value();
  CHECK(pool.bytes_held() == trunk_bytes + head_bytes);  // nothing new for the same digests
  const auto c = pool.add_stored_model(ws, f.model("probe-c"), head_digests("probe-c", "h2")).value();
  CHECK(pool.bytes_held() == trunk_bytes + 2 * head_bytes);
  CHECK(pool.is_new(*c.find("head.probe-c.weight")));

  CHECK(a.find("head.probe-a.weight")->data == b.find("head.probe-b.weight")->data);
  CHECK(a.find("head.probe-a.weight")->data != c.find("head.probe-c.weight")->data);
  CHECK(a.find("tok_emb.weight")->data == c.find("tok_emb.weight")->data);  // the trunk, once
}
