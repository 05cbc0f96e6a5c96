// The adaptation methods' registry (runtime/model/adaptation_method.h): keys are unique, a
// parameter is claimed by the method that added it alone and for the model that introduced
// it, whatever the models are called (after another method's name marker, or after another
// method), new parameters start as their method's rule says, and a linear refuses a second
// adaptation at one site.
#include <catch2/catch.hpp>
#include <map>
#include <set>

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
  prefix.bottleneck = spec::BottleneckSpec{.reduction = 4};
  f.add("out", "ia3", prefix);
  spec::Adaptation prompt = test::ia3_adaptation({"o"}, {"q"});
  prompt.prompt = spec::PromptSpec{.virtual_tokens = 2};
  f.add("in", "base", prompt);
  f.materialise();
}

}  // namespace

TEST_CASE("registered adaptation methods have distinct keys, ia3 among them") {
  std::set<std::string> keys;
  for (const AdaptationMethod* method : adaptation_methods()) {
    CHECK(!method->key().empty());
    CHECK(keys.insert(std::string(method->key())).second);
  }
  CHECK(keys.count("ia3") == 1);
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
      REQUIRE(method->init_rule(p.name) == InitRule::kOnes);  // the one method so far
      for (std::int64_t i = 0; i < value.numel(); ++i) CHECK(value.f32()[i] == 1.0f);
    }
  }
  // "lora": 2 layers × 3 linears, inherited by "ia3" and "out"; "in": 2 × 2.
  CHECK(claimed == 3 * 6 + 4);
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
