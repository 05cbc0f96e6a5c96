// The JSON Schema of scion.yaml: spec/keys.h's tables, each key given its JSON type.
#include "spec/json_schema.h"

#include <map>
#include <span>
#include <string_view>

#include "spec/adaptation_method.h"
#include "spec/keys.h"

namespace scion::spec {
namespace {

using Json = nlohmann::json;

// The types of the keys of one mapping; a key missing here is recorded by closed_map.
using KeyTypes = std::map<std::string_view, Json>;

struct SchemaBuilder {
  std::vector<std::string> untyped;

  // A mapping with exactly `keys`, typed from `types`.
  Json closed_map(std::string_view path, std::span<const std::string_view> keys,
                  const KeyTypes& types, std::string_view description) {
    Json properties = Json::object();
    for (std::string_view key : keys) {
      const auto type = types.find(key);
      if (type == types.end()) {
        untyped.push_back(std::string(path) + "." + std::string(key));
        properties[std::string(key)] = Json::object();
      } else {
        properties[std::string(key)] = type->second;
      }
    }
    return {{"type", "object"},
            {"description", description},
            {"properties", properties},
            {"additionalProperties", false}};
  }
};

Json type(const char* name) { return {{"type", name}}; }
Json list_of(Json item) { return {{"type", "array"}, {"items", std::move(item)}}; }
Json strings() { return list_of(type("string")); }
Json integers() { return list_of(type("integer")); }

Json words(std::span<const std::string_view> words) {
  Json list = Json::array();
  for (std::string_view w : words) list.push_back(std::string(w));
  return {{"enum", list}};
}

template <class E>
Json words(std::span<const Choice<E>> choices) {
  Json list = Json::array();
  for (const Choice<E>& c : choices) list.push_back(std::string(c.word));
  return {{"enum", list}};
}

// A mapping from names the user chooses to values of one shape.
Json named(Json value, std::string_view description) {
  return {{"type", "object"}, {"description", description}, {"additionalProperties", value}};
}

// `bitfit: true`, `bitfit: {}` or `bitfit:` (null) switch a method without settings on.
Json method_switch() {
  return {{"anyOf",
           {type("boolean"), type("null"), {{"type", "object"}, {"additionalProperties", false}}}}};
}

Json dataset_schema(SchemaBuilder& b) {
  return b.closed_map("datasets.*", keys::kDataset,
                      {{"path", type("string")},
                       {"format", words<DatasetFormat>(keys::kDatasetFormats)},
                       {"text_field", type("string")},
                       {"text_pair_field", type("string")},
                       {"label_field", type("string")},
                       {"labels", strings()},
                       {"label_type", words<LabelType>(keys::kLabelTypes)},
                       {"prompt_field", type("string")},
                       {"completion_field", type("string")}},
                      "a data file");
}

Json architecture_schema(SchemaBuilder& b) {
  return b.closed_map("models.*.architecture", keys::kArchitecture,
                      {{"type", words<ArchitectureKind>(keys::kArchitectureKinds)},
                       {"layers", type("integer")},
                       {"width", type("integer")},
                       {"heads", type("integer")},
                       {"ffn_width", type("integer")},
                       {"vocab_size", type("integer")},
                       {"tokenizer", words<TokenizerKind>(keys::kTokenizers)},
                       {"max_length", type("integer")},
                       {"norm", words<NormPlacement>(keys::kNorms)},
                       {"dropout", type("number")},
                       {"tie_embeddings", type("boolean")}},
                      "the transformer a base model is");
}

Json adaptation_schema(SchemaBuilder& b) {
  const std::string p = "models.*.adapt";
  const Json prefix = b.closed_map(p + ".prefix", keys::kPrefix,
                                   {{"virtual_tokens", type("integer")},
                                    {"layers", integers()},
                                    {"reparam_hidden", type("integer")}},
                                   "learned keys and values in every layer");
  const Json prompt = b.closed_map(p + ".prompt", keys::kPrompt,
                                   {{"virtual_tokens", type("integer")},
                                    {"init", words<PromptInit>(keys::kPromptInits)},
                                    {"text", type("string")}},
                                   "learned input embeddings");
  const Json head = b.closed_map(p + ".head", keys::kHead,
                                 {{"task", words<HeadTask>(keys::kTasks)},
                                  {"labels", strings()},
                                  {"pooling", words<Pooling>(keys::kPoolings)},
                                  {"threshold", type("number")}},
                                 "a task head: classification, regression, multi-label or "
                                 "token classification");
  KeyTypes methods = {{"prefix", prefix},
                      {"prompt", prompt},
                      {"head", head},
                      {"bitfit", method_switch()},
                      {"full", method_switch()}};
  // The registered methods (spec/adaptation_method.h) type their own keys.
  for (const MethodBlock* block : method_blocks()) {
    KeyTypes types;  // a key the block leaves untyped is reported by closed_map
    const Json schemas = block->key_schemas();
    for (std::string_view key : block->keys())
      if (const auto it = schemas.find(std::string(key)); it != schemas.end()) types[key] = *it;
    methods[block->key()] = b.closed_map(p + "." + std::string(block->key()), block->keys(), types,
                                         block->description());
  }
  return b.closed_map(p, keys::method_keys(), methods,
                      "how a descendant adapts its parent: one key per method");
}

Json training_schema(SchemaBuilder& b) {
  const std::string p = "models.*.train";
  const Json optimizer = b.closed_map(p + ".optimizer", keys::kOptimizer,
                                      {{"type", words<OptimizerKind>(keys::kOptimizers)},
                                       {"lr", type("number")},
                                       {"weight_decay", type("number")},
                                       {"betas", list_of(type("number"))},
                                       {"eps", type("number")},
                                       {"momentum", type("number")},
                                       {"grad_clip", type("number")}},
                                      "the optimizer");
  const Json schedule = b.closed_map(
      p + ".schedule", keys::kSchedule,
      {{"type", words<ScheduleKind>(keys::kSchedules)}, {"warmup_steps", type("integer")}},
      "the learning-rate schedule");
  const Json early_stopping =
      b.closed_map(p + ".early_stopping", keys::kEarlyStopping,
                   {{"metric", words(keys::kMetrics)}, {"patience", type("integer")}},
                   "stop when the validation metric stops improving");
  return b.closed_map(
      p, keys::kTrain,
      {{"data", type("string")},
       {"objective", words<Objective>(keys::kObjectives)},
       {"steps", type("integer")},
       {"epochs", type("integer")},
       {"batch_size", type("integer")},
       {"grad_accumulation", type("integer")},
       {"max_length", type("integer")},
       {"validation_split", type("number")},
       {"validation", type("string")},
       {"eval_every", type("integer")},
       {"mask_probability", type("number")},
       {"optimizer", optimizer},
       {"schedule", schedule},
       {"early_stopping", early_stopping},
       {"keep_best", words(keys::kMetrics)},
       {"class_weights", {{"anyOf", {{{"enum", {"balanced"}}}, list_of(type("number"))}}}},
       {"seed", type("integer")},
       {"precision", words<Precision>(keys::kPrecisions)},
       {"recompute", type("boolean")}},
      "the training recipe");
}

Json model_schema(SchemaBuilder& b) {
  return b.closed_map("models.*", keys::kModel,
                      {{"architecture", architecture_schema(b)},
                       {"import", type("string")},
                       {"from", type("string")},
                       {"adapt", adaptation_schema(b)},
                       {"freeze", strings()},
                       {"unfreeze", strings()},
                       {"train", training_schema(b)}},
                      "a base (architecture or import) or a descendant (from, adapt, train)");
}

// A test or assertion: the loader's keys, then a body that assertions/ checks.
Json open_map(std::span<const std::string_view> keys, const KeyTypes& types,
              std::vector<std::string>& untyped, std::string_view path, const char* required,
              std::string_view description) {
  SchemaBuilder b;
  Json schema = b.closed_map(path, keys, types, description);
  for (std::string& key : b.untyped) untyped.push_back(std::move(key));
  schema["additionalProperties"] = true;
  schema["required"] = Json::array({required});
  return schema;
}

Json build(std::vector<std::string>& untyped) {
  SchemaBuilder b;
  const Json test = open_map(keys::kTest,
                             {{"type", words(keys::kTestTypes)},
                              {"capability", type("string")},
                              {"models", strings()},
                              {"max_failure_rate", type("number")}},
                             b.untyped, "tests.*", "type",
                             "a behavioural test; see docs/spec.md for the keys of each type");
  const Json assertion = open_map(
      keys::kAssertion, {{"kind", words(keys::kAssertionKinds)}, {"models", strings()}}, b.untyped,
      "assertions.*", "kind", "a model assertion; see docs/spec.md for the keys of each kind");
  const Json share =
      b.closed_map("share.*", keys::kShare, {{"models", strings()}, {"modules", strings()}},
                   "models that share modules");
  Json schema = b.closed_map("", keys::kSections,
                             {{"datasets", named(dataset_schema(b), "data files by name")},
                              {"models", named(model_schema(b), "the family's models by name")},
                              {"share", named(share, "shared modules by name")},
                              {"tests", named(test, "behavioural tests by name")},
                              {"assertions", named(assertion, "model assertions by name")},
                              {"lexicons", named(strings(), "word lists by name")}},
                             "a scion workspace: a family of adapted models (docs/spec.md)");
  schema["$schema"] = "https://json-schema.org/draft/2020-12/schema";
  schema["$id"] = kSchemaId;
  schema["title"] = "scion.yaml";
  untyped = std::move(b.untyped);
  return schema;
}

}  // namespace

nlohmann::json workspace_json_schema() {
  std::vector<std::string> untyped;
  return build(untyped);
}

std::vector<std::string> keys_without_schema_type() {
  std::vector<std::string> untyped;
  build(untyped);
  return untyped;
}

}  // namespace scion::spec
