// JSONL: one JSON object per non-blank line.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "runtime/data/format_readers.h"

namespace scion::data {
namespace {

// The text of a label value: strings as they are, numbers and booleans as JSON prints
// them, so a label 1 matches the label name "1".
std::optional<std::string> label_text(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_integer() || value.is_boolean()) return value.dump();
  return std::nullopt;
}

// The string in `field` of `object` (`key` names the spec key that chose the field).
Result<std::string> string_field(const nlohmann::json& object, const std::string& field,
                                 const char* key, const std::string& where,
                                 const spec::Dataset& dataset) {
  auto value = object.find(field);
  if (value == object.end() || value->is_null())
    return spec_error(
        fmt::format("{}: missing field '{}' (datasets.{}.{})", where, field, dataset.name, key));
  if (!value->is_string())
    return spec_error(
        fmt::format("{}: field '{}' is a {}, expected a string", where, field, value->type_name()));
  return value->get<std::string>();
}

// A prompt/completion record: the prompt as the example's text, and its completion.
Result<Example> with_completion(const nlohmann::json& object, const std::string& where,
                                const spec::Dataset& dataset, Example example) {
  auto prompt = string_field(object, dataset.prompt_field, "prompt_field", where, dataset);
  if (!prompt) return prompt.status();
  auto completion =
      string_field(object, dataset.completion_field, "completion_field", where, dataset);
  if (!completion) return completion.status();
  example.text = std::move(*prompt);
  example.completion = std::move(*completion);
  return example;
}

Result<Example> parse_object(std::string_view line_text, int line_number, const std::string& file,
                             const spec::Dataset& dataset, const LabelMap& labels) {
  const std::string where = fmt::format("{}:{}", file, line_number);
  nlohmann::json object;
  try {
    object = nlohmann::json::parse(line_text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is the 1-based offset where parsing stopped: the column on this line.
    return spec_error(fmt::format(
        "{}:{}: the line is not valid JSON; each line must be one "
        "JSON object like {{\"{}\": \"...\"}}",
        where, e.byte, dataset.has_completions() ? dataset.prompt_field : dataset.text_field));
  }
  if (!object.is_object())
    return spec_error(
        fmt::format("{}: expected a JSON object, found a {}; each line must be one "
                    "JSON object",
                    where, object.type_name()));
  Example example;
  example.line = line_number;
  if (dataset.has_completions()) return with_completion(object, where, dataset, example);
  auto text = object.find(dataset.text_field);
  if (text == object.end() || text->is_null())
    return spec_error(fmt::format("{}: missing field '{}' (datasets.{}.text_field)", where,
                                  dataset.text_field, dataset.name));
  if (!text->is_string())
    return spec_error(fmt::format("{}: field '{}' is a {}, expected a string", where,
                                  dataset.text_field, text->type_name()));
  example.text = text->get<std::string>();
  if (!labels.labelled()) return example;

  auto label = object.find(dataset.label_field);
  if (label == object.end() || label->is_null())
    return spec_error(fmt::format("{}: missing field '{}' (datasets.{}.label_field)", where,
                                  dataset.label_field, dataset.name));
  std::optional<std::string> name = label_text(*label);
  if (!name)
    return spec_error(fmt::format("{}: field '{}' is a {}, expected a label name", where,
                                  dataset.label_field, label->type_name()));
  auto index = labels.index(*name, where);
  if (!index) return index.status();
  example.label = *index;
  return example;
}

}  // namespace

ExampleSet parse_jsonl(std::string_view contents, const std::string& file,
                       const spec::Dataset& dataset, ProblemList& problems) {
  const LabelMap labels(dataset);
  ExampleSet set;
  set.labelled = labels.labelled();
  set.completions = dataset.has_completions();
  bool any_row = false;
  for (const Line& line : split_lines(contents)) {
    if (is_blank(line.text)) continue;
    any_row = true;
    auto example = parse_object(line.text, line.number, file, dataset, labels);
    if (example) {
      set.examples.push_back(std::move(example).value());
      continue;
    }
    problems.add(example.status());
    if (problems.full()) return set;
  }
  if (!any_row)
    problems.add(
        spec_error(fmt::format("{}: only blank lines; a JSONL dataset needs one JSON object "
                               "per line",
                               file)));
  return set;
}

}  // namespace scion::data
