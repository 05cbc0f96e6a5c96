// JSONL: one JSON object per non-blank line.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "base/json_number_range.h"
#include "base/json_value.h"
#include "runtime/data/format_readers.h"
#include "spec/spelling.h"

namespace scion::data {
namespace {

// "the row has fields a, b — did you mean 'a'?": what a row offers instead of `missing`.
std::string fields_present(const nlohmann::json& object, std::string_view missing) {
  std::vector<std::string_view> names;
  for (const auto& [key, value] : object.items()) names.push_back(key);
  if (names.empty()) return "the row has no fields";
  return fmt::format("the row has the field{} {}{}", names.size() == 1 ? "" : "s",
                     fmt::join(names, ", "), spec::did_you_mean(missing, names));
}

// The string in `field` of `object` (`key` names the spec key that chose the field, for
// messages).
Result<std::string> text_of(const nlohmann::json& object, const std::string& field, const char* key,
                            const std::string& where, const spec::Dataset& dataset) {
  auto text = object.find(field);
  if (text == object.end() || text->is_null())
    return spec_error(fmt::format("{}: missing field '{}' (datasets.{}.{}); {}", where, field,
                                  dataset.name, key, fields_present(object, field)));
  if (!text->is_string())
    return spec_error(fmt::format("{}: field '{}' is {}, expected a string{}", where, field,
                                  a_json_type(*text),
                                  text->is_array() && std::string_view(key) == "text_field"
                                      ? " (a list of words is label_type: tags)"
                                      : ""));
  return text->get<std::string>();
}

// Token classification: the text field is a list of words, the label field a list of as
// many tag names.
Status read_tagged_words(const nlohmann::json& object, const std::string& where,
                         const spec::Dataset& dataset, const LabelReader& labels,
                         Example& example) {
  auto words = object.find(dataset.text_field);
  if (words == object.end() || !words->is_array() || words->empty())
    return spec_error(fmt::format(
        "{}: field '{}' is {}, expected a non-empty list of words (label_type: tags)", where,
        dataset.text_field, words == object.end() ? "missing" : a_json_type(*words)));
  for (const nlohmann::json& word : *words) {
    // A word is what a sentence split at whitespace gives: `scion predict` splits so.
    if (!word.is_string() || word.get<std::string>().empty() ||
        word.get<std::string>().find_first_of(" \t\n\r\f\v") != std::string::npos)
      return spec_error(fmt::format(
          "{}: field '{}' holds {}, expected words: non-empty strings without whitespace", where,
          dataset.text_field, word.dump()));
    example.words.push_back(word.get<std::string>());
  }
  auto tags = object.find(dataset.label_field);
  if (tags == object.end() || !tags->is_array())
    return spec_error(fmt::format(
        "{}: field '{}' is {}, expected a list of tag names, one per word (label_type: tags)",
        where, dataset.label_field, tags == object.end() ? "missing" : a_json_type(*tags)));
  if (tags->size() != example.words.size())
    return spec_error(fmt::format("{}: {} words but {} tags; give one tag per word", where,
                                  example.words.size(), tags->size()));
  for (const nlohmann::json& tag : *tags) {
    if (!tag.is_string())
      return spec_error(fmt::format("{}: field '{}' holds {}, expected tag names", where,
                                    dataset.label_field, tag.dump()));
    auto index = labels.names().index(tag.get<std::string>(), where);
    if (!index) return index.status();
    example.tags.push_back(*index);
  }
  for (const std::string& word : example.words)
    example.text += (example.text.empty() ? "" : " ") + word;
  return Status::ok();
}

// A prompt/completion record: the prompt as the example's text, and its completion.
Result<Example> with_completion(const nlohmann::json& object, const std::string& where,
                                const spec::Dataset& dataset, Example example) {
  auto prompt = text_of(object, dataset.prompt_field, "prompt_field", where, dataset);
  if (!prompt) return prompt.status();
  auto completion = text_of(object, dataset.completion_field, "completion_field", where, dataset);
  if (!completion) return completion.status();
  example.text = std::move(*prompt);
  example.completion = std::move(*completion);
  return example;
}

// A row with a number beyond a 64-bit float is refused like any other bad row (exit 2),
// whether or not the field is used: what the row means would otherwise depend on how a
// reader rounds it (docs/spec.md, datasets).
Status number_out_of_range(std::string_view line_text, const std::string& where) {
  if (const auto number = find_out_of_range_number(line_text))
    return spec_error(describe_out_of_range_number(where, *number));
  return spec_error(fmt::format("{}: the line holds a number out of range", where));
}

Result<Example> parse_object(std::string_view line_text, int line_number, const std::string& file,
                             const spec::Dataset& dataset, LabelReader& labels) {
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
  } catch (const nlohmann::json::out_of_range&) {
    return number_out_of_range(line_text, where);
  }
  if (!object.is_object())
    return spec_error(
        fmt::format("{}: expected a JSON object, found {}; each line must be one "
                    "JSON object",
                    where, a_json_type(object)));
  Example example;
  example.line = line_number;
  if (labels.labelled() && dataset.label_type == spec::LabelType::kTags) {
    SCION_RETURN_IF_ERROR(read_tagged_words(object, where, dataset, labels, example));
    return example;
  }
  if (dataset.has_completions()) return with_completion(object, where, dataset, example);
  auto text = text_of(object, dataset.text_field, "text_field", where, dataset);
  if (!text) return text.status();
  example.text = std::move(*text);
  if (!dataset.text_pair_field.empty()) {
    auto pair = text_of(object, dataset.text_pair_field, "text_pair_field", where, dataset);
    if (!pair) return pair.status();
    example.text_pair = std::move(*pair);
  }
  if (!labels.labelled()) return example;

  auto label = object.find(dataset.label_field);
  if (label == object.end() || label->is_null())
    return spec_error(fmt::format("{}: missing field '{}' (datasets.{}.label_field); {}", where,
                                  dataset.label_field, dataset.name,
                                  fields_present(object, dataset.label_field)));
  SCION_RETURN_IF_ERROR(labels.read(*label, where, example));
  return example;
}

}  // namespace

ExampleSet parse_jsonl(std::string_view contents, const std::string& file,
                       const spec::Dataset& dataset, ProblemList& problems) {
  LabelReader labels(dataset);
  ExampleSet set;
  set.labelled = labels.labelled();
  set.label_type = dataset.label_type;
  set.pairs = !dataset.text_pair_field.empty();
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
    problems.add(example.status(), fmt::format("{}:{}", file, line.number));
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
