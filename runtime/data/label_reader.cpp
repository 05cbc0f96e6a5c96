// LabelReader (format_readers.h): one row's label by the dataset's label_type.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "base/json_value.h"
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

// The '|'-separated parts of a CSV/TSV cell; none for an empty cell.
std::vector<std::string> cell_parts(std::string_view cell) {
  std::vector<std::string> parts;
  if (cell.empty()) return parts;
  for (std::size_t start = 0;;) {
    const std::size_t bar = cell.find('|', start);
    parts.emplace_back(cell.substr(start, bar == std::string_view::npos ? bar : bar - start));
    if (bar == std::string_view::npos) return parts;
    start = bar + 1;
  }
}

std::optional<double> parse_number(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

Status LabelReader::add_values(const std::vector<double>& targets, std::string_view where,
                               Example& example) {
  if (targets.empty())
    return spec_error(fmt::format("{}: field '{}' holds no number; a regression target needs one",
                                  where, dataset_.label_field));
  std::vector<float> values;
  for (double v : targets) {
    if (!std::isfinite(v) || std::abs(v) > kLargestTarget)
      return spec_error(fmt::format(
          "{}: field '{}' holds {}, outside the targets float32 training can square (-{:g} to "
          "{:g}); rescale the targets (divide them by a constant) into that range",
          where, dataset_.label_field, v, kLargestTarget, kLargestTarget));
    values.push_back(static_cast<float>(v));
  }
  if (width_ == 0) width_ = values.size();
  if (values.size() != width_)
    return spec_error(fmt::format(
        "{}: field '{}' holds {} numbers, but the first row holds {}; every row needs as many "
        "targets",
        where, dataset_.label_field, values.size(), width_));
  example.values = std::move(values);
  return Status::ok();
}

Status LabelReader::add_names(const std::vector<std::string>& names, std::string_view where,
                              Example& example) {
  for (const std::string& name : names) {
    auto index = names_.index(name, where);
    if (!index) return index.status();
    example.label_set.push_back(*index);
  }
  std::sort(example.label_set.begin(), example.label_set.end());
  example.label_set.erase(std::unique(example.label_set.begin(), example.label_set.end()),
                          example.label_set.end());
  return Status::ok();
}

Status LabelReader::read(const nlohmann::json& value, std::string_view where, Example& example) {
  const std::string& field = dataset_.label_field;
  switch (dataset_.label_type) {
    case spec::LabelType::kSingle: {
      std::optional<std::string> name = label_text(value);
      if (!name)
        return spec_error(fmt::format(
            "{}: field '{}' is {}, expected a label name{}", where, field, a_json_type(value),
            value.is_array() ? " (a list of labels is label_type: multi)" : ""));
      auto index = names_.index(*name, where);
      if (!index) return index.status();
      example.label = *index;
      return Status::ok();
    }
    case spec::LabelType::kMulti: {
      if (!value.is_array())
        return spec_error(
            fmt::format("{}: field '{}' is {}, expected a list of label names (label_type: multi)",
                        where, field, a_json_type(value)));
      std::vector<std::string> names;
      for (const nlohmann::json& item : value) {
        std::optional<std::string> name = label_text(item);
        if (!name)
          return spec_error(fmt::format("{}: field '{}' holds {}, expected label names", where,
                                        field, a_json_type(item)));
        names.push_back(*name);
      }
      return add_names(names, where, example);
    }
    case spec::LabelType::kNumber: {
      std::vector<double> values;
      const auto add = [&](const nlohmann::json& item) {
        if (!item.is_number()) return false;
        values.push_back(item.get<double>());
        return true;
      };
      const bool numbers =
          value.is_array() ? std::all_of(value.begin(), value.end(), add) : add(value);
      if (!numbers)
        return spec_error(fmt::format(
            "{}: field '{}' is {}, expected a number or a list of numbers (label_type: number)",
            where, field, a_json_type(value)));
      return add_values(values, where, example);
    }
    case spec::LabelType::kTags:
      break;
  }
  return internal_error(fmt::format("{}: tags are read with their words", where));
}

Status LabelReader::read(std::string_view cell, std::string_view where, Example& example) {
  switch (dataset_.label_type) {
    case spec::LabelType::kSingle: {
      auto index = names_.index(cell, where);
      if (!index) return index.status();
      example.label = *index;
      return Status::ok();
    }
    case spec::LabelType::kMulti:
      return add_names(cell_parts(cell), where, example);
    case spec::LabelType::kNumber: {
      std::vector<double> values;
      for (const std::string& part : cell_parts(cell)) {
        const std::optional<double> v = parse_number(part);
        if (!v)
          return spec_error(fmt::format(
              "{}: column '{}' holds '{}', expected a number (or numbers joined by '|')", where,
              dataset_.label_field, cell));
        values.push_back(*v);
      }
      return add_values(values, where, example);
    }
    case spec::LabelType::kTags:
      break;
  }
  return spec_error(fmt::format("{}: label_type tags needs a JSONL dataset", where));
}

}  // namespace scion::data
