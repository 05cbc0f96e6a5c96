// libFuzzer target: any bytes as a dataset file, parsed as JSONL (labelled, and with
// regression targets), CSV (labelled, and with regression targets) and TSV (unlabelled) by
// the readers behind `scion validate` and training (runtime/data/format_readers.h), must
// give examples and problems, never an exception or a crash; every example's label is one
// of the spec's, and every regression target is finite and within the range the reader
// promises (LabelReader::kLargestTarget). Numbers beyond a 64-bit float (1e400) are a
// problem like any other. Seeds: the example families' data files, the fixtures
// (tests/fuzz/make_json_corpora.py) and tests/fuzz/seeds/dataset/; docs/fuzzing.md.
#include <cstddef>
#include <cstdint>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "runtime/data/format_readers.h"

namespace {

scion::spec::Dataset dataset(scion::spec::DatasetFormat format, bool labelled) {
  scion::spec::Dataset d;
  d.name = "reviews";
  d.format = format;
  d.text_field = "text";
  d.label_field = "label";
  if (labelled) d.labels = {"negative", "positive", "1"};
  return d;
}

scion::spec::Dataset regression(scion::spec::DatasetFormat format) {
  scion::spec::Dataset d = dataset(format, false);
  d.label_type = scion::spec::LabelType::kNumber;
  return d;
}

// Regression targets: finite and within the reader's range, and the problems spec errors.
void check_targets(const scion::data::ExampleSet& set, scion::data::ProblemList& problems) {
  for (const scion::data::Example& e : set.examples)
    for (float v : e.values)
      if (!std::isfinite(v) || std::abs(v) > scion::data::LabelReader::kLargestTarget)
        std::abort();
  for (const scion::Status& s : problems.take())
    if (s.code() != scion::StatusCode::kSpecError || s.message().empty()) std::abort();
}

void check(const scion::data::ExampleSet& set, scion::data::ProblemList& problems,
           const scion::spec::Dataset& d) {
  for (const scion::data::Example& e : set.examples)
    if (set.labelled ? e.label < 0 || e.label >= static_cast<int>(d.labels.size())
                     : e.label != scion::data::kNoLabel)
      std::abort();
  for (const scion::Status& s : problems.take())
    if (s.code() != scion::StatusCode::kSpecError || s.message().empty()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (text.empty()) return 0;  // read_file_bytes refuses an empty file before parsing
  static const auto jsonl = dataset(scion::spec::DatasetFormat::kJsonl, true);
  static const auto csv = dataset(scion::spec::DatasetFormat::kCsv, true);
  static const auto tsv = dataset(scion::spec::DatasetFormat::kTsv, false);
  static const auto jsonl_numbers = regression(scion::spec::DatasetFormat::kJsonl);
  static const auto csv_numbers = regression(scion::spec::DatasetFormat::kCsv);
  {
    scion::data::ProblemList problems(20);
    check(scion::data::parse_jsonl(text, "data.jsonl", jsonl, problems), problems, jsonl);
  }
  {
    scion::data::ProblemList problems(20);
    check(scion::data::parse_delimited(text, ',', "data.csv", csv, problems), problems, csv);
  }
  {
    scion::data::ProblemList problems(20);
    check(scion::data::parse_delimited(text, '\t', "data.tsv", tsv, problems), problems, tsv);
  }
  {
    scion::data::ProblemList problems(20);
    check_targets(scion::data::parse_jsonl(text, "data.jsonl", jsonl_numbers, problems), problems);
  }
  {
    scion::data::ProblemList problems(20);
    check_targets(scion::data::parse_delimited(text, ',', "data.csv", csv_numbers, problems),
                  problems);
  }
  return 0;
}
