// A method registered as a unit (spec/adaptation_method.h) is read, checked, hashed,
// recorded and described by the loader, spec_json and `scion schema` without any of them
// naming it: a toy method, registered here and nowhere else, goes through each.
#include <catch2/catch.hpp>

#include "spec/json_schema.h"
#include "spec/recipe_hash.h"
#include "spec/spec_reader.h"
#include "spec/yaml_tree.h"
#include "spec_test_workspace.h"

using namespace scion::spec;
using scion::spec::testing::kPrefix;
using scion::spec::testing::TempWorkspace;

namespace {

struct ToySettings final : MethodSettings {
  static constexpr std::string_view kKey = "toy";
  int strength = 1;
  nlohmann::json json() const override { return {{"strength", strength}}; }
};

int family_checks = 0;  // how often check_family ran

class ToyBlock final : public MethodBlock {
 public:
  std::string_view key() const override { return ToySettings::kKey; }
  std::span<const std::string_view> keys() const override { return kKeys; }
  std::shared_ptr<const MethodSettings> read(SpecReader& reader, const YamlNode& node,
                                             const std::string& path,
                                             const Architecture*) const override {
    ToySettings s;
    reader.check_keys(node, path, kKeys);
    reader.read_int(find(node, "strength"), path + ".strength", s.strength, 1, 9,
                    "a strength from 1 to 9");
    return std::make_shared<const ToySettings>(s);
  }
  std::shared_ptr<const MethodSettings> from_json(const nlohmann::json& json) const override {
    if (!json.is_object() || !json.contains("strength")) return nullptr;
    ToySettings s;
    s.strength = json["strength"].get<int>();
    return std::make_shared<const ToySettings>(s);
  }
  nlohmann::json key_schemas() const override { return {{"strength", {{"type", "integer"}}}}; }
  std::string_view description() const override { return "a toy method of the registry test"; }
  void check_family(SpecReader&, const YamlNode&, const Model&, const Architecture*,
                    const std::vector<const Model*>&) const override {
    ++family_checks;
  }

 private:
  static constexpr std::string_view kKeys[] = {"strength"};
};

void register_toy() {
  static const bool once = [] {
    register_method_block(std::make_unique<ToyBlock>());
    return true;
  }();
  (void)once;
}

std::string with_toy(const std::string& adapt) {
  return std::string(kPrefix) +
         "  review:\n"
         "    from: base\n"
         "    adapt: " +
         adapt +
         "\n"
         "    train: {data: reviews, epochs: 1}\n";
}

std::vector<std::string> errors_of(const LoadResult& r) {
  std::vector<std::string> out;
  for (const Diagnostic& d : r.errors) out.push_back(d.to_string());
  return out;
}

}  // namespace

TEST_CASE("a registered method is read into Adaptation::methods and checked across the family") {
  register_toy();
  TempWorkspace ws;
  family_checks = 0;
  const LoadResult r = ws.load(with_toy("{toy: {strength: 3}, head: {}}"));
  REQUIRE(errors_of(r).empty());
  const Adaptation& ad = r.workspace->find_model("review")->adaptation;
  REQUIRE(ad.find<ToySettings>() != nullptr);
  CHECK(ad.find<ToySettings>()->strength == 3);
  CHECK(family_checks == 1);  // the one model with an adapt block
  // Its JSON is the recipe's and the record's, and reads back.
  const nlohmann::json adapt = adaptation_json(ad);
  CHECK(adapt["toy"] == nlohmann::json{{"strength", 3}});
  const std::optional<Adaptation> back = adaptation_from_recipe(adapt);
  REQUIRE(back);
  REQUIRE(back->find<ToySettings>() != nullptr);
  CHECK(back->find<ToySettings>()->strength == 3);
  // A damaged record is refused, not half read.
  nlohmann::json damaged = adapt;
  damaged["toy"] = "strong";
  CHECK_FALSE(adaptation_from_recipe(damaged));
}

TEST_CASE("a registered method's settings are in the recipe hash") {
  register_toy();
  TempWorkspace ws;
  const LoadResult three = ws.load(with_toy("{toy: {strength: 3}, head: {}}"));
  const LoadResult four = ws.load(with_toy("{toy: {strength: 4}, head: {}}"));
  REQUIRE(three.workspace);
  REQUIRE(four.workspace);
  CHECK(three.workspace->find_model("review")->recipe_hash !=
        four.workspace->find_model("review")->recipe_hash);
  CHECK(three.workspace->find_model("base")->recipe_hash ==
        four.workspace->find_model("base")->recipe_hash);
}

TEST_CASE("a registered method's errors carry key paths and spelling suggestions") {
  register_toy();
  TempWorkspace ws;
  CHECK(errors_of(ws.load(with_toy("{toy: {strength: 12}, head: {}}"))) ==
        std::vector<std::string>{
            "scion.yaml:12:29: error: expected a strength from 1 to 9, got '12' at "
            "models.review.adapt.toy.strength"});
  CHECK(errors_of(ws.load(with_toy("{toy: {strenght: 2}, head: {}}"))) ==
        std::vector<std::string>{
            "scion.yaml:12:19: error: unknown key 'strenght' at models.review.adapt.toy.strenght "
            "\u2014 did you mean 'strength'?"});
  CHECK(errors_of(ws.load(with_toy("{tyo: {strength: 2}, head: {}}"))) ==
        std::vector<std::string>{
            "scion.yaml:12:13: error: unknown adaptation method 'tyo' at models.review.adapt.tyo "
            "\u2014 did you mean 'toy'?"});
  // The list of methods a user is told about includes it.
  const auto empty = errors_of(ws.load(with_toy("{}")));
  REQUIRE(empty.size() == 1);
  CHECK(empty[0].find(", toy)") != std::string::npos);
}

TEST_CASE("scion schema types a registered method's keys") {
  register_toy();
  const nlohmann::json schema = workspace_json_schema();
  const nlohmann::json& toy = schema["properties"]["models"]["additionalProperties"]["properties"]
                                    ["adapt"]["properties"]["toy"];
  CHECK(toy["description"] == "a toy method of the registry test");
  CHECK(toy["properties"]["strength"] == nlohmann::json{{"type", "integer"}});
  CHECK(toy["additionalProperties"] == false);
  CHECK(keys_without_schema_type().empty());
}
