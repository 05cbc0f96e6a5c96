// The one name of each closed value of scion.yaml, read from spec/keys.h's tables.
//
// The loader parses these words, `scion schema` lists them, and everything that prints a
// value or writes it into a record (plans, lineage records, reports, errors) names it
// through `word`, so a value has the same name everywhere. `words_by_index` serves the
// canonical recipe, which stores an enum as its declaration index (recipe hashes depend
// on it) and turns it back into words for people (spec/spec_json.h).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "spec/keys.h"

namespace scion::spec {

namespace vocabulary_detail {
template <class E, std::size_t N>
constexpr std::string_view word_in(const Choice<E> (&table)[N], E value) {
  for (const Choice<E>& choice : table)
    if (choice.value == value) return choice.word;
  return "?";  // unreachable: every enumerator has a word (tests/unit/spec_vocabulary_test)
}

// The words of `table` ordered by their enumerator's value: words[i] names E(i).
template <class E, std::size_t N>
std::vector<std::string_view> by_index(const Choice<E> (&table)[N]) {
  std::vector<std::string_view> words;
  for (std::size_t i = 0; i < N; ++i) words.push_back(word_in(table, static_cast<E>(i)));
  return words;
}
}  // namespace vocabulary_detail

constexpr std::string_view word(ArchitectureKind v) {
  return vocabulary_detail::word_in(keys::kArchitectureKinds, v);
}
constexpr std::string_view word(NormPlacement v) {
  return vocabulary_detail::word_in(keys::kNorms, v);
}
constexpr std::string_view word(TokenizerKind v) {
  return vocabulary_detail::word_in(keys::kTokenizers, v);
}
constexpr std::string_view word(PromptInit v) {
  return vocabulary_detail::word_in(keys::kPromptInits, v);
}
constexpr std::string_view word(Pooling v) {
  return vocabulary_detail::word_in(keys::kPoolings, v);
}
constexpr std::string_view word(HeadTask v) { return vocabulary_detail::word_in(keys::kTasks, v); }
constexpr std::string_view word(Objective v) {
  return vocabulary_detail::word_in(keys::kObjectives, v);
}
constexpr std::string_view word(OptimizerKind v) {
  return vocabulary_detail::word_in(keys::kOptimizers, v);
}
constexpr std::string_view word(ScheduleKind v) {
  return vocabulary_detail::word_in(keys::kSchedules, v);
}
constexpr std::string_view word(Precision v) {
  return vocabulary_detail::word_in(keys::kPrecisions, v);
}
constexpr std::string_view word(DatasetFormat v) {
  return vocabulary_detail::word_in(keys::kDatasetFormats, v);
}
constexpr std::string_view word(LabelType v) {
  return vocabulary_detail::word_in(keys::kLabelTypes, v);
}

}  // namespace scion::spec
