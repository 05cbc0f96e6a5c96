// Dataset readers: load the examples of a spec::Dataset (JSONL, CSV, TSV or plain text)
// into memory as (text, label) pairs.
//
// Field names come from the spec (text_field, text_pair_field, label_field). A dataset is
// labelled when spec::Dataset::labelled() says so, and its label_type says what a label
// is: one name (single), a list of names (multi; in CSV/TSV names joined by '|', an empty
// cell for none), a number or a list of numbers of the same length in every row (number;
// '|'-joined in CSV/TSV), or one tag name per word (tags; JSONL only, the text field then
// a list of words). Names map to their position in the spec's labels (a numeric or
// boolean JSON label is matched by its text, so 1 matches the label "1"). A
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
  std::string text;               // for tags: the words joined by single spaces; the prompt,
                                  // in a prompt/completion dataset
  std::int32_t label = kNoLabel;  // single: index into spec::Dataset::labels; else kNoLabel
  int line = 0;                   // 1-based line where the example starts in its file
  std::string text_pair;          // the second text of a sentence pair; empty without one
  std::vector<std::int32_t> label_set;  // multi: the indices of its labels, ascending
  std::vector<float> values;            // number: its targets
  std::vector<std::string> words;       // tags: the words
  std::vector<std::int32_t> tags;       // tags: one label index per word
  std::string completion;         // prompt/completion datasets only
};

struct ExampleSet {
  std::vector<Example> examples;
  bool labelled = false;
  spec::LabelType label_type = spec::LabelType::kSingle;
  bool pairs = false;  // every example has a text_pair (the dataset names text_pair_field)
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
