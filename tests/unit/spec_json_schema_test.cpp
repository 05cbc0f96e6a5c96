// The JSON Schema of scion.yaml comes from the loader's tables (spec/keys.h).
#include <catch2/catch.hpp>

#include "spec/json_schema.h"
#include "spec/keys.h"

namespace scion::spec {
namespace {

TEST_CASE("every key the loader knows has a type in the schema") {
  CHECK(keys_without_schema_type() == std::vector<std::string>{});
}

TEST_CASE("the schema closes each mapping with exactly the loader's keys") {
  const nlohmann::json schema = workspace_json_schema();
  CHECK(schema["additionalProperties"] == false);
  const nlohmann::json& model = schema["properties"]["models"]["additionalProperties"];
  CHECK(model["additionalProperties"] == false);
  CHECK(model["properties"].size() == std::size(keys::kModel));
  for (std::string_view key : keys::kModel) CHECK(model["properties"].contains(std::string(key)));
  const nlohmann::json& train = model["properties"]["train"];
  CHECK(train["properties"].size() == std::size(keys::kTrain));
  const nlohmann::json& lora = model["properties"]["adapt"]["properties"]["lora"];
  CHECK(lora["properties"]["rank"] == nlohmann::json{{"type", "integer"}});
}

TEST_CASE("closed values list the loader's words") {
  const nlohmann::json schema = workspace_json_schema();
  const nlohmann::json& optimizer = schema["properties"]["models"]["additionalProperties"]
                                          ["properties"]["train"]["properties"]["optimizer"];
  CHECK(optimizer["properties"]["type"]["enum"] == nlohmann::json({"adamw", "sgd"}));
  CHECK(schema["properties"]["tests"]["additionalProperties"]["properties"]["type"]["enum"] ==
        nlohmann::json({"mft", "inv", "dir"}));
}

}  // namespace
}  // namespace scion::spec
