// CSV and TSV with RFC 4180 quoting: a field may be enclosed in double quotes, and then
// holds delimiters, line breaks and doubled quotes ("" for "). Records end at "\n" or
// "\r\n". The first record is the header naming the columns. Blank lines are skipped.
// A quote inside an unquoted field, or text after a closing quote, is an error rather
// than a guess.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "runtime/data/format_readers.h"

namespace scion::data {
namespace {

struct Record {
  std::vector<std::string> fields;
  int line = 0;  // where the record starts
};

// Splits `contents` into records, tracking line and column for messages.
class RecordParser {
 public:
  RecordParser(std::string_view contents, char delimiter, const std::string& file)
      : in_(contents), delimiter_(delimiter), file_(file) {}

  Result<std::vector<Record>> parse() {
    std::vector<Record> records;
    while (pos_ < in_.size()) {
      if (at_line_end()) {  // a blank line
        skip_line_end();
        continue;
      }
      Record record;
      record.line = line_;
      for (;;) {
        auto field = parse_field();
        if (!field) return field.status();
        record.fields.push_back(std::move(field).value());
        if (pos_ < in_.size() && in_[pos_] == delimiter_) {
          advance();
          continue;
        }
        break;  // parse_field stops only at a delimiter, a line end or the end of input
      }
      skip_line_end();
      records.push_back(std::move(record));
    }
    return records;
  }

 private:
  bool at_line_end() const {
    if (in_[pos_] == '\n') return true;
    return in_[pos_] == '\r' && (pos_ + 1 == in_.size() || in_[pos_ + 1] == '\n');
  }
  void skip_line_end() {
    if (pos_ < in_.size() && in_[pos_] == '\r') ++pos_;
    if (pos_ < in_.size() && in_[pos_] == '\n') {
      ++pos_;
      ++line_;
      column_ = 1;
    }
  }
  void advance() {
    if (in_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++pos_;
  }
  bool at_field_end() const {
    return pos_ == in_.size() || in_[pos_] == delimiter_ || at_line_end();
  }

  Result<std::string> parse_field() {
    if (pos_ < in_.size() && in_[pos_] == '"') return parse_quoted_field();
    std::string field;
    while (!at_field_end()) {
      if (in_[pos_] == '"')
        return spec_error(
            fmt::format("{}:{}:{}: a quote inside an unquoted field; enclose the "
                        "field in quotes and double the quote (\"\")",
                        file_, line_, column_));
      field.push_back(in_[pos_]);
      advance();
    }
    return field;
  }

  Result<std::string> parse_quoted_field() {
    const int open_line = line_, open_column = column_;
    advance();  // the opening quote
    std::string field;
    for (;;) {
      if (pos_ == in_.size())
        return spec_error(
            fmt::format("{}:{}:{}: the quoted field opened here never closes; add "
                        "the closing quote",
                        file_, open_line, open_column));
      if (in_[pos_] == '"') {
        if (pos_ + 1 < in_.size() && in_[pos_ + 1] == '"') {
          field.push_back('"');
          advance();
          advance();
          continue;
        }
        advance();  // the closing quote
        break;
      }
      field.push_back(in_[pos_]);
      advance();
    }
    if (!at_field_end())
      return spec_error(
          fmt::format("{}:{}:{}: unexpected text after a closing quote; a quoted "
                      "field must end at a delimiter or the end of the line",
                      file_, line_, column_));
    return field;
  }

  std::string_view in_;
  char delimiter_;
  const std::string& file_;
  std::size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
};

Result<std::size_t> column_index(const Record& header, const std::string& name,
                                 const std::string& file, const spec::Dataset& dataset,
                                 const char* key) {
  auto it = std::find(header.fields.begin(), header.fields.end(), name);
  if (it == header.fields.end())
    return spec_error(
        fmt::format("{}:{}: the header has no column '{}' (columns: {}); set "
                    "datasets.{}.{} or rename the column",
                    file, header.line, name, fmt::join(header.fields, ", "), dataset.name, key));
  return static_cast<std::size_t>(it - header.fields.begin());
}

}  // namespace

ExampleSet parse_delimited(std::string_view contents, char delimiter, const std::string& file,
                           const spec::Dataset& dataset, ProblemList& problems) {
  ExampleSet set;
  LabelReader labels(dataset);
  set.labelled = labels.labelled();
  set.label_type = dataset.label_type;
  set.pairs = !dataset.text_pair_field.empty();
  set.completions = dataset.has_completions();
  // A syntax error leaves the rest of the file unreadable: it is the only problem.
  auto records = RecordParser(contents, delimiter, file).parse();
  if (!records) {
    problems.add(records.status());
    return set;
  }
  if (records->empty()) {
    problems.add(
        spec_error(fmt::format("{}: only blank lines; the first line must be a header", file)));
    return set;
  }
  const Record& header = records->front();
  if (records->size() == 1) {
    problems.add(spec_error(fmt::format("{}: the file has a header but no rows", file)));
    return set;
  }
  // A prompt/completion dataset reads its prompt where others read their text.
  auto text_column = set.completions
                         ? column_index(header, dataset.prompt_field, file, dataset, "prompt_field")
                         : column_index(header, dataset.text_field, file, dataset, "text_field");
  if (!text_column) problems.add(text_column.status());
  Result<std::size_t> pair_column = std::size_t{0};
  if (set.pairs) {
    pair_column = column_index(header, dataset.text_pair_field, file, dataset, "text_pair_field");
    if (!pair_column) problems.add(pair_column.status());
  }
  Result<std::size_t> label_column = std::size_t{0};
  if (labels.labelled()) {
    label_column = column_index(header, dataset.label_field, file, dataset, "label_field");
    if (!label_column) problems.add(label_column.status());
  }
  Result<std::size_t> completion_column = std::size_t{0};
  if (set.completions) {
    completion_column =
        column_index(header, dataset.completion_field, file, dataset, "completion_field");
    if (!completion_column) problems.add(completion_column.status());
  }
  if (!text_column || !pair_column || !label_column || !completion_column) return set;

  for (std::size_t r = 1; r < records->size() && !problems.full(); ++r) {
    const Record& row = (*records)[r];
    if (row.fields.size() != header.fields.size()) {
      problems.add(
          spec_error(fmt::format("{}:{}: the row has {} fields but the header has {}; quote "
                                 "fields that contain the delimiter",
                                 file, row.line, row.fields.size(), header.fields.size())));
      continue;
    }
    Example example{row.fields[*text_column], kNoLabel, row.line};
    if (set.pairs) example.text_pair = row.fields[*pair_column];
    if (set.completions) example.completion = row.fields[*completion_column];
    if (labels.labelled()) {
      Status read = labels.read(std::string_view(row.fields[*label_column]),
                                fmt::format("{}:{}", file, row.line), example);
      if (!read.is_ok()) {
        problems.add(std::move(read));
        continue;
      }
    }
    set.examples.push_back(std::move(example));
  }
  return set;
}

}  // namespace scion::data
