#include "runtime/data/dataset_reader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <system_error>

#include "base/regular_file.h"
#include "runtime/data/format_readers.h"
#include "spec/file_digest.h"
#include "spec/spelling.h"

namespace scion::data {

Result<std::int32_t> LabelMap::index(std::string_view name, std::string_view where) const {
  for (std::size_t i = 0; i < dataset_.labels.size(); ++i)
    if (dataset_.labels[i] == name) return static_cast<std::int32_t>(i);
  const std::vector<std::string_view> labels(dataset_.labels.begin(), dataset_.labels.end());
  return spec_error(fmt::format(
      "{}: unknown label '{}'{}; expected one of: {} (datasets.{}.labels)", where, name,
      spec::did_you_mean(name, labels), fmt::join(dataset_.labels, ", "), dataset_.name));
}

void ProblemList::add(Status problem, std::string_view row) {
  const std::string& message = problem.message();
  std::string said;
  if (!row.empty() && message.starts_with(row)) said = message.substr(row.size());
  if (!said.empty())
    for (Problem& earlier : problems_)
      if (earlier.said == said) {
        ++earlier.repeats;
        return;
      }
  problems_.push_back({std::move(problem), std::move(said)});
}

std::vector<Status> ProblemList::take() {
  std::vector<Status> taken;
  for (Problem& p : problems_) {
    if (p.repeats == 0) {
      taken.push_back(std::move(p.status));
      continue;
    }
    taken.emplace_back(p.status.code(),
                       fmt::format("{} (the same in {} more row{})", p.status.message(), p.repeats,
                                   p.repeats == 1 ? "" : "s"));
  }
  problems_.clear();
  return taken;
}

Result<std::string> read_file_bytes(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return not_found(fmt::format("{}: no such file; check the dataset's path", path.string()));
  if (std::filesystem::is_directory(path, ec))
    return io_error(fmt::format("{}: is a directory, not a data file", path.string()));
  // Only a regular file is read: a fifo or device there would block every command.
  auto read = read_regular_file(path, FollowLinks::kYes);
  if (!read) return read.status();
  std::string contents = std::move(read).value();
  if (contents.empty())
    return spec_error(
        fmt::format("{}: the file is empty; a dataset needs at least one example", path.string()));
  return contents;
}

namespace {

// The examples of `dataset`, with its problems in `problems`. The bytes parsed are the
// bytes whose digest the spec's loader recorded (the recipe and the store name the data by
// it), checked in the same pass that reads them: a file edited since is refused, never
// trained on under the old digest.
ExampleSet parse_dataset(const spec::Dataset& dataset, ProblemList& problems) {
  const std::string file = dataset.path.string();
  auto contents = read_file_bytes(dataset.path);
  if (!contents) {
    problems.add(contents.status());
    return {};
  }
  if (!dataset.digest.empty()) {
    if (const std::string now = spec::sha256_hex(*contents); now != dataset.digest) {
      problems.add(io_error(fmt::format(
          "{}: the file changed since the spec was read (SHA-256 {} then, {} now); nothing was "
          "stored from it: run the command again to use the file as it is now",
          file, dataset.digest.substr(0, 12), now.substr(0, 12))));
      return {};
    }
  }
  switch (dataset.format) {
    case spec::DatasetFormat::kJsonl:
      return parse_jsonl(*contents, file, dataset, problems);
    case spec::DatasetFormat::kCsv:
      return parse_delimited(*contents, ',', file, dataset, problems);
    case spec::DatasetFormat::kTsv:
      return parse_delimited(*contents, '\t', file, dataset, problems);
    case spec::DatasetFormat::kText:
      return parse_text_lines(*contents, file, problems);
  }
  problems.add(internal_error(fmt::format("{}: unhandled dataset format", file)));
  return {};
}

}  // namespace

Result<ExampleSet> read_dataset(const spec::Dataset& dataset) {
  ProblemList problems(1);
  ExampleSet set = parse_dataset(dataset, problems);
  if (!problems.empty()) return problems.first();
  return set;
}

std::vector<Status> dataset_problems(const spec::Dataset& dataset, std::size_t limit) {
  ProblemList problems(limit);
  parse_dataset(dataset, problems);
  return problems.take();
}

Result<std::string> read_corpus(const std::filesystem::path& path) { return read_file_bytes(path); }

}  // namespace scion::data
