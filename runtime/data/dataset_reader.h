// Dataset readers: load the examples of a spec::Dataset (JSONL, CSV, TSV or plain text)
// into memory as (text, label) pairs.
//
// Field names come from the spec (text_field, label_field). A dataset is labelled when its
// spec lists labels; each label is then mapped by name to its position in that list (a
// numeric or boolean JSON label is matched by its text, so 1 matches the label "1"). A
// prompt/completion dataset (spec::Dataset::has_completions) reads prompt_field into each
// example's text and completion_field into its completion instead, both strings.
// Unlabelled datasets ignore label_field. Plain text has one example per non-blank line
// and no labels; read_corpus() reads it whole for language-model pretraining (see
// runtime/data/tokenized_dataset.h for cutting it into windows).
//
// Every error is a Status, never an exception: kNotFound (missing file), kIoError
// (unreadable), kSpecError for bad data with file:line (and :column for CSV/TSV syntax and
// JSON syntax) and what to change. The functions are pure; thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"
#include "spec/workspace.h"

namespace scion::data {

inline constexpr std::int32_t kNoLabel = -1;

struct Example {
  std::string text;               // the prompt, in a prompt/completion dataset
  std::int32_t label = kNoLabel;  // index into spec::Dataset::labels; kNoLabel if unlabelled
  int line = 0;                   // 1-based line where the example starts in its file
  std::string completion;         // prompt/completion datasets only
};

struct ExampleSet {
  std::vector<Example> examples;
  bool labelled = false;
  bool completions = false;  // a prompt/completion dataset
  // The row count recorded in the lineage store.
  std::int64_t rows() const { return static_cast<std::int64_t>(examples.size()); }
};

// REQUIRES: dataset.path is absolute or relative to the working directory.
Result<ExampleSet> read_dataset(const spec::Dataset& dataset);

// Every problem read_dataset would stop at, not only the first, in file order: the file
// unreadable or empty, a missing field or column, a label not in the spec's list, a row
// that does not parse. At most `limit` (the rest of the file is not read); empty when
// read_dataset succeeds. `scion validate` reports them all at once.
std::vector<Status> dataset_problems(const spec::Dataset& dataset, std::size_t limit);

// The whole text of a plain-text corpus. Errors as read_dataset (empty file included).
Result<std::string> read_corpus(const std::filesystem::path& path);

}  // namespace scion::data
