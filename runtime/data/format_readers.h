// Per-format parsers behind read_dataset (runtime/data/dataset_reader.h). Each takes the
// file's bytes already read and checked to be non-empty; `file` is the name used in
// messages. Internal to runtime/data/.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/data/dataset_reader.h"

namespace scion::data {

// Maps label names to their index in spec::Dataset::labels.
class LabelMap {
 public:
  explicit LabelMap(const spec::Dataset& dataset) : dataset_(dataset) {}
  bool labelled() const { return !dataset_.labels.empty(); }
  // `where` is "file:line" for the message.
  Result<std::int32_t> index(std::string_view name, std::string_view where) const;

 private:
  const spec::Dataset& dataset_;
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

Result<ExampleSet> parse_jsonl(std::string_view contents, const std::string& file,
                               const spec::Dataset& dataset);
// CSV (delimiter ',') and TSV ('\t'), both with RFC 4180 quoting and a header row.
Result<ExampleSet> parse_delimited(std::string_view contents, char delimiter,
                                   const std::string& file, const spec::Dataset& dataset);
Result<ExampleSet> parse_text_lines(std::string_view contents, const std::string& file);

}  // namespace scion::data
