#include "workbench/predict_input.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/json_number_range.h"
#include "base/json_value.h"
#include "base/regular_file.h"

namespace scion::workbench {
namespace {

constexpr const char* kDefaultTextField = "text";

bool is_blank(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](unsigned char c) { return std::isspace(c) != 0; });
}

bool from_stdin(const PredictInputOptions& options) { return options.file == "-"; }

PredictFormat resolved_format(const PredictInputOptions& options) {
  if (options.format != PredictFormat::kAuto) return options.format;
  const bool jsonl =
      !from_stdin(options) && std::filesystem::path(options.file).extension() == ".jsonl";
  return jsonl ? PredictFormat::kJsonl : PredictFormat::kLines;
}

// The whole contents of `in`, read in chunks with bounds: a line longer than
// kMaxPredictLineBytes (a file with no line ends, such as /dev/zero) or more than
// kMaxPredictInputBytes in all is an error naming where, instead of reading until memory
// runs out.
Result<std::string> read_bounded(std::istream& in, const std::string& source) {
  std::string bytes;
  std::size_t line_start = 0, line = 1;
  char chunk[64 * 1024];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    const std::size_t scanned = bytes.size();
    bytes.append(chunk, static_cast<std::size_t>(in.gcount()));
    for (std::size_t i = scanned; i < bytes.size(); ++i)
      if (bytes[i] == '\n') {
        line_start = i + 1;
        ++line;
      }
    if (bytes.size() - line_start > kMaxPredictLineBytes)
      return invalid_argument(fmt::format(
          "{}:{}: the line is longer than {} MiB; predict reads one text per line (a model "
          "reads at most max_length tokens of it anyway): split or shorten the input",
          source, line, kMaxPredictLineBytes >> 20));
    if (bytes.size() > kMaxPredictInputBytes)
      return invalid_argument(
          fmt::format("{}: more than {} MiB of input; split it and predict "
                      "each part",
                      source, kMaxPredictInputBytes >> 20));
  }
  if (in.bad()) return invalid_argument(source + ": cannot be read to its end");
  return bytes;
}

// The whole contents of --file.
Result<std::string> read_all(const PredictInputOptions& options, std::istream& standard_input) {
  if (from_stdin(options)) return read_bounded(standard_input, "stdin");
  std::error_code ec;
  if (!std::filesystem::exists(options.file, ec))
    return not_found("cannot read " + options.file +
                     ": no such file; check the path (--file - reads standard input)");
  if (std::filesystem::is_directory(options.file, ec))
    return invalid_argument(options.file + " is a directory; --file takes a file of texts");
  // A fifo or device would block the read; --file - reads a pipe.
  if (Status regular = check_regular_file(options.file, FollowLinks::kYes); !regular)
    return invalid_argument("--file " + options.file + ": " + regular.message() +
                            " (--file - reads standard input)");
  std::ifstream in(options.file, std::ios::binary);
  if (!in) return not_found("cannot read " + options.file + ": check its permissions");
  return read_bounded(in, options.file);
}

// The lines of `contents`, without "\n" or "\r\n".
std::vector<std::string> split_lines(const std::string& contents) {
  std::vector<std::string> lines;
  std::istringstream in(contents);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  return lines;
}

// "a, b, c": the keys of a JSON object.
std::string field_names(const nlohmann::json& object) {
  std::vector<std::string> names;
  for (const auto& [key, value] : object.items()) names.push_back(key);
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

// The text of one JSONL record at `where` ("file:line").
Result<std::string> record_text(const std::string& line, const std::string& where,
                                const std::string& field) {
  nlohmann::json record;
  try {
    record = nlohmann::json::parse(line);
  } catch (const nlohmann::json::parse_error& e) {
    return invalid_argument(
        fmt::format("{}:{}: the line is not valid JSON; each line must be one JSON object "
                    "like {{\"{}\": \"...\"}}",
                    where, e.byte, field));
  } catch (const nlohmann::json::out_of_range&) {
    const auto number = find_out_of_range_number(line);
    return invalid_argument(number ? describe_out_of_range_number(where, *number)
                                   : where + ": the line holds a number out of range");
  }
  if (!record.is_object())
    return invalid_argument(
        fmt::format("{}: expected a JSON object, found {}", where, a_json_type(record)));
  auto text = record.find(field);
  if (text == record.end())
    return invalid_argument(
        fmt::format("{}: no field '{}' (the record has: {}); name the text field with "
                    "--text-field",
                    where, field, field_names(record)));
  if (!text->is_string())
    return invalid_argument(
        fmt::format("{}: field '{}' is {}, expected a string", where, field, a_json_type(*text)));
  return text->get<std::string>();
}

Status check_not_empty(const PredictText& input) {
  if (!is_blank(input.text)) return Status::ok();
  return invalid_argument(input.origin +
                          ": the text is empty; give each input at least one word to classify");
}

}  // namespace

Result<std::vector<PredictText>> read_predict_texts(const PredictInputOptions& options,
                                                    std::istream& standard_input) {
  std::vector<PredictText> inputs;
  if (!options.pairs.empty() && options.pairs.size() != options.texts.size())
    return invalid_argument(
        fmt::format("{} --pair for {} --text: give each text of a sentence pair its --pair",
                    options.pairs.size(), options.texts.size()));
  for (std::size_t i = 0; i < options.texts.size(); ++i) {
    inputs.push_back({options.texts[i], fmt::format("--text {}", i + 1)});
    if (!options.pairs.empty()) inputs.back().pair = options.pairs[i];
    SCION_RETURN_IF_ERROR(check_not_empty(inputs.back()));
  }
  if (options.file.empty()) {
    if (!options.pair_field.empty())
      return invalid_argument(
          "--pair-field names the second text of JSONL records; give --file FILE.jsonl with it");
    if (!options.text_field.empty())
      return invalid_argument(
          "--text-field names the text of JSONL records; give --file FILE.jsonl with it");
    return inputs;
  }
  const PredictFormat format = resolved_format(options);
  if (format == PredictFormat::kLines &&
      (!options.text_field.empty() || !options.pair_field.empty()))
    return invalid_argument(
        std::string(options.text_field.empty() ? "--pair-field" : "--text-field") +
        " names a field of JSONL records, and " +
        (from_stdin(options) ? std::string("standard input") : options.file) +
        " is read as one text per line; add --format jsonl");
  if (!options.pairs.empty() && format == PredictFormat::kJsonl && options.pair_field.empty())
    return invalid_argument("--pair gives --text its second text; records of " + options.file +
                            " name theirs with --pair-field");
  auto contents = read_all(options, standard_input);
  if (!contents) return contents.status();
  const std::string source = from_stdin(options) ? "stdin" : options.file;
  const std::string field = options.text_field.empty() ? kDefaultTextField : options.text_field;
  const std::vector<std::string> lines = split_lines(*contents);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (is_blank(lines[i])) continue;  // blank lines separate, in both formats
    const std::string where = fmt::format("{}:{}", source, i + 1);
    if (format == PredictFormat::kLines) {
      inputs.push_back({lines[i], where});
      continue;
    }
    auto text = record_text(lines[i], where, field);
    if (!text) return text.status();
    inputs.push_back({std::move(*text), where});
    if (!options.pair_field.empty()) {
      auto pair = record_text(lines[i], where, options.pair_field);
      if (!pair) return pair.status();
      inputs.back().pair = std::move(*pair);
    }
    SCION_RETURN_IF_ERROR(check_not_empty(inputs.back()));
  }
  return inputs;
}

}  // namespace scion::workbench
