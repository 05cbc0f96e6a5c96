// Per-format parsers behind read_dataset and dataset_problems (runtime/data/dataset_reader.h).
// Each takes the file's bytes already read and checked to be non-empty; `file` is the name
// used in messages. A parser reports each problem to a ProblemList and goes on with the
// next row, until the list is full. Internal to runtime/data/.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/data/dataset_reader.h"

namespace scion::data {

// Maps label names to their index in spec::Dataset::labels.
class LabelMap {
 public:
  explicit LabelMap(const spec::Dataset& dataset) : dataset_(dataset) {}
  bool labelled() const { return dataset_.labelled(); }
  // `where` is "file:line" for the message.
  Result<std::int32_t> index(std::string_view name, std::string_view where) const;

 private:
  const spec::Dataset& dataset_;
};

// Reads one row's label into an Example, as its dataset's label_type says: from a JSON
// value (JSONL) or from a cell's text (CSV/TSV). Number rows must all hold as many values
// as the first row read. Tags are read by the JSONL reader itself (they need the words).
// `field` names the label field in messages; `where` is "file:line".
class LabelReader {
 public:
  // The largest regression target taken, in magnitude: the squared-error loss squares it
  // in float32 (largest 3.4e38), and 1e18 squared is 1e36, which leaves room to sum a
  // few hundred of them. A target of 1e30 would make the loss infinite at once.
  static constexpr double kLargestTarget = 1e18;

  explicit LabelReader(const spec::Dataset& dataset) : dataset_(dataset), names_(dataset) {}
  bool labelled() const { return names_.labelled(); }
  const LabelMap& names() const { return names_; }
  Status read(const nlohmann::json& value, std::string_view where, Example& example);
  Status read(std::string_view cell, std::string_view where, Example& example);

 private:
  Status add_values(const std::vector<double>& targets, std::string_view where,
                    Example& example);
  Status add_names(const std::vector<std::string>& names, std::string_view where, Example& example);

  const spec::Dataset& dataset_;
  LabelMap names_;
  std::size_t width_ = 0;  // number: values per row, from the first row; 0 before it
};

// The problems found while parsing, up to `limit`: read_dataset stops at the first,
// dataset_problems collects more.
// A problem of a row ("file:line: ..."), added with its `row` ("file:line"), that says
// what an earlier row's said is counted with that one instead of listed again: a wrong
// field name is one problem with "(the same in N more rows)", not one line per row.
class ProblemList {
 public:
  explicit ProblemList(std::size_t limit) : limit_(limit) {}
  void add(Status problem, std::string_view row = {});
  bool full() const { return problems_.size() >= limit_; }
  bool empty() const { return problems_.empty(); }
  std::vector<Status> take();
  const Status& first() const { return problems_.front().status; }

 private:
  struct Problem {
    Status status;
    std::string said;  // the message after its row; empty: not a row's problem
    std::size_t repeats = 0;
  };
  std::size_t limit_;
  std::vector<Problem> problems_;
};

// The bytes of `path`. Errors: kNotFound, kIoError, and kSpecError for an empty file.
Result<std::string> read_file_bytes(const std::filesystem::path& path);

// The lines of `contents` without their "\n" or "\r\n", each with its 1-based number.
struct Line {
  std::string_view text;
  int number = 0;
};
std::vector<Line> split_lines(std::string_view contents);
bool is_blank(std::string_view line);

// The examples of the rows without problems.
ExampleSet parse_jsonl(std::string_view contents, const std::string& file,
                       const spec::Dataset& dataset, ProblemList& problems);
// CSV (delimiter ',') and TSV ('\t'), both with RFC 4180 quoting and a header row.
ExampleSet parse_delimited(std::string_view contents, char delimiter, const std::string& file,
                           const spec::Dataset& dataset, ProblemList& problems);
ExampleSet parse_text_lines(std::string_view contents, const std::string& file,
                            ProblemList& problems);

}  // namespace scion::data
