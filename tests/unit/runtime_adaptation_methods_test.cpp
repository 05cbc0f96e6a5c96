// The adaptation methods' registry (runtime/model/adaptation_method.h): keys are unique, a
// parameter is claimed by the method that added it alone and for the model that introduced
// it, whatever the models are called (after another method's name marker, or after another
// method), new parameters start as their method's rule says, and a linear refuses a second
// adaptation at one site; the bottleneck adapter binds at its block sites instead.
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "runtime/adapters/bottleneck/bottleneck_spec.h"
#include "runtime/adapters/ia3/ia3_spec.h"
#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/model/adaptation_method.h"
#include "runtime/model/parameter_table.h"
#include "runtime_family.h"

using namespace scion;
using namespace scion::runtime;
using scion::test::Family;

namespace {

// Every method and adapter kind over one base, each model named after another one's marker.
void add_crossed_names(Family& f) {
  spec::Adaptation ia3 = test::ia3_adaptation({"k", "v"}, {"ffn_out"});
  ia3.head = test::two_labels();
  f.add("lora", "base", ia3);
  spec::Adaptation dora;
  dora.set(spec::LoraSpec{.rank = 2, .alpha = 4, .targets = {"q", "ffn_in"}, .use_dora = true});
  f.add("ia3", "lora", dora);
  spec::Adaptation prefix;
  prefix.prefix = spec::PrefixSpec{.virtual_tokens = 2};
  prefix.set(spec::BottleneckSpec{.reduction = 4});
  f.add("out", "ia3", prefix);
  spec::Adaptation prompt = test::ia3_adaptation({"o"}, {"q"});
  prompt.prompt = spec::PromptSpec{.virtual_tokens = 2};
  f.add("in", "base", prompt);
  f.materialise();
}

}  // namespace

TEST_CASE("registered adaptation methods have distinct keys, lora, ia3 and bottleneck among them") {
  std::set<std::string> keys;
  for (const AdaptationMethod* method : adaptation_methods()) {
    CHECK(!method->key().empty());
    CHECK(keys.insert(std::string(method->key())).second);
  }
  CHECK(keys.count("ia3") == 1);
  CHECK(keys.count("lora") == 1);
  CHECK(keys.count("bottleneck") == 1);
}

TEST_CASE("a method's parameters are its own, for their model, and start as it says") {
  Family f(test::tiny_architecture());
  add_crossed_names(f);
  const spec::Workspace& ws = f.workspace();
  const spec::Architecture& arch = *f.model("base").architecture;
  int claimed = 0;
  for (const spec::Model& model : ws.models) {
    // What each method adds for each model of the ancestry, by name.
    std::map<std::string, const AdaptationMethod*> added;
    for (const spec::Model* m : ws.ancestry(model))
      for (const AdaptationMethod* method : adaptation_methods())
        for (int l = 0; l < arch.layers; ++l) {
          std::vector<ParameterSpec> own;
          method->add_parameters(*m, arch, l, own);
          for (const ParameterSpec& p : own) added[p.name] = method;
        }
    for (const ParameterSpec& p : parameter_table(ws, model)) {
      INFO(model.name << ": " << p.name);
      int claims = 0;
      for (const AdaptationMethod* method : adaptation_methods())
        claims += method->parameter_model(p.name).has_value();
      CHECK(claims <= 1);
      const auto it = added.find(p.name);
      const AdaptationMethod* method = method_of_parameter(p.name);
      CHECK(method == (it == added.end() ? nullptr : it->second));
      if (!method) continue;
      ++claimed;
      CHECK(method->parameter_model(p.name) == p.introduced_by);
      if (p.introduced_by != model.name) continue;
      const Tensor& value = *f.params(model.name).find(p.name);
      if (method->key() == "lora") {  // A Kaiming-uniform, B zeros, DoRA's m the row norms
        const InitRule rule = method->init_rule(p.name);
        CHECK(rule == (p.name.ends_with(".a")   ? InitRule::kKaimingUniform
                       : p.name.ends_with(".m") ? InitRule::kWeightRowNorms
                                                : InitRule::kZeros));
        if (rule == InitRule::kZeros)
          for (std::int64_t i = 0; i < value.numel(); ++i) CHECK(value.f32()[i] == 0.0f);
        continue;
      }
      if (method->key() == "bottleneck") {  // down's weight as a trunk weight, the rest zeros
        const InitRule rule = method->init_rule(p.name);
        CHECK(rule == (p.name.ends_with(".down.weight") ? InitRule::kNormal : InitRule::kZeros));
        if (rule == InitRule::kZeros)
          for (std::int64_t i = 0; i < value.numel(); ++i) CHECK(value.f32()[i] == 0.0f);
        continue;
      }
      REQUIRE(method->init_rule(p.name) == InitRule::kOnes);  // (IA)³'s vectors
      for (std::int64_t i = 0; i < value.numel(); ++i) CHECK(value.f32()[i] == 1.0f);
    }
  }
  // (IA)³ of "lora": 2 layers × 3 linears, inherited by "ia3" and "out"; of "in": 2 × 2.
  // DoRA of "ia3": 2 layers × 2 linears × (A, B, m), inherited by "out". The bottleneck
  // adapter of "out": 2 layers × 1 site × (down, up) × (weight, bias).
  CHECK(claimed == 3 * 6 + 4 + 2 * 12 + 8);
}

TEST_CASE("a model's head starts as any head does, whatever method its name reads as") {
  // Before LoRA was a registered method, every name holding ".lora." took LoRA's rules, so
  // the head of a model named "lora" started at zeros.
  Family f(test::tiny_architecture());
  add_crossed_names(f);
  const Tensor& head = *f.params("lora").find("head.lora.weight");
  int nonzero = 0;
  for (std::int64_t i = 0; i < head.numel(); ++i) nonzero += head.f32()[i] != 0.0f;
  CHECK(nonzero == head.numel());
}

TEST_CASE("a linear refuses two adaptations at one site") {
  // The spec's rule across models keeps a second (IA)³ off a linear an ancestor's scales;
  // a workspace built past it is refused when its weights are resolved.
  Family f(test::tiny_architecture());
  spec::Adaptation parent = test::ia3_adaptation({"k"}, {});
  parent.head = test::two_labels();
  f.add("parent", "base", parent);
  f.add("child", "parent", test::ia3_adaptation({"k"}, {}));
  f.materialise();
  auto w = resolve_model(f.workspace(), f.model("child"), spec::Objective::kClassification,
                         f.params("child"), nullptr);
  REQUIRE_FALSE(w.is_ok());
  CHECK(w.status().message().find("blk.0.attn_k carries two adaptations on its output") !=
        std::string::npos);
  // At different sites they stand together.
  f.add("input", "parent", test::ia3_adaptation({}, {"k"}));
  f.materialise();
  CHECK(resolve_model(f.workspace(), f.model("input"), spec::Objective::kClassification,
                      f.params("input"), nullptr)
            .is_ok());
}

TEST_CASE("a bottleneck adapter binds at its block sites, ancestors first, on no linear") {
  Family f(test::tiny_architecture());
  spec::Adaptation parent;
  parent.set(spec::BottleneckSpec{.reduction = 4, .placement = spec::BottleneckPlacement::kBoth});
  parent.head = test::two_labels();
  f.add("parent", "base", parent);
  spec::Adaptation child;
  child.set(spec::BottleneckSpec{.reduction = 2,
                                 .placement = spec::BottleneckPlacement::kAfterAttention,
                                 .layers = {1}});
  f.add("child", "parent", child);
  f.materialise();
  const ModelWeights w = f.weights("child");
  auto p = resolve_model(f.workspace(), f.model("parent"), spec::Objective::kClassification,
                         f.params("parent"), nullptr);
  REQUIRE(p.is_ok());
  const auto attention = static_cast<int>(BlockSite::kAfterAttention);
  const auto ffn = static_cast<int>(BlockSite::kAfterFfn);
  for (int l = 0; l < 2; ++l) {
    INFO("block " << l);
    const BlockWeights& b = w.blocks[l];
    for (const auto& adaptations : b.adaptations) CHECK(adaptations.empty());
    REQUIRE(b.block_adaptations[attention].size() == (l == 1 ? 2u : 1u));
    REQUIRE(b.block_adaptations[ffn].size() == 1u);
    // The parent's first, frozen, and the same as in the parent's own weights.
    const auto& parents = b.block_adaptations[attention][0];
    CHECK(parents->site() == BlockSite::kAfterAttention);
    CHECK_FALSE(parents->trained());
    CHECK(parents->same_as(*p->blocks[l].block_adaptations[attention][0]));
    CHECK_FALSE(parents->same_as(*p->blocks[l].block_adaptations[ffn][0]));
    if (l == 1) {
      const auto& own = b.block_adaptations[attention][1];
      CHECK(own->trained());
      CHECK_FALSE(own->same_as(*parents));
      // Hidden width 8 / 2: its pre- and post-GELU rows kept, their gradients as scratch.
      const BlockShape shape{.rows = 3, .width = 8, .backward = true};
      CHECK(own->activation_sizes(shape) == std::vector<std::int64_t>{12, 12});
      CHECK(own->scratch_sizes(shape) == std::vector<std::int64_t>{12, 12});
      CHECK(own->scratch_sizes({.rows = 3, .width = 8, .backward = false}).empty());
      CHECK(own->forward_flops(3, 8) == 4.0 * 3 * 8 * 4);
    }
  }
}
