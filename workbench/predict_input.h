// The texts `scion predict` classifies: each --text, then the texts of --file, read as
// one text per line or as JSONL records with a text field. `--file -` reads standard
// input. Every text keeps where it came from ("--text 2", "reviews.jsonl:3", "stdin:4"),
// so a warning or an error can name it. Sentence pairs: each --text takes its --pair (as
// many of each), and JSONL records their --pair-field; lines cannot hold pairs.
//
// Format: --format lines | jsonl, or by default jsonl for a file named *.jsonl and lines
// for anything else (standard input included). Lines: blank lines are skipped. JSONL:
// each non-blank line is one JSON object whose field `text_field` (default "text") holds
// the text as a string. Errors (kInvalidArgument or kNotFound, exit 2) say where:
// an empty text (a --text of only whitespace, a record whose text is empty), a line that
// is not a JSON object, a record without the field (its fields are listed), an unreadable
// file, --text-field given for line input, and input past the bounds below (a file with no
// line ends, such as /dev/zero, or an endless stream).
#pragma once

#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace scion::workbench {

enum class PredictFormat { kAuto, kLines, kJsonl };

// The longest line, and the most bytes, read from --file (a file or standard input).
inline constexpr std::size_t kMaxPredictLineBytes = std::size_t{1} << 20;
inline constexpr std::size_t kMaxPredictInputBytes = std::size_t{1} << 30;

struct PredictInputOptions {
  std::vector<std::string> texts;  // --text, in order
  std::string file;                // --file: a path, "-" for standard input, empty: none
  PredictFormat format = PredictFormat::kAuto;
  std::string text_field;  // --text-field; empty: "text"
  std::vector<std::string> pairs;  // --pair, one per --text, in order
  std::string pair_field;          // --pair-field: the JSONL field of the second text
};

struct PredictText {
  std::string text;
  std::string origin;  // "--text 2", "reviews.jsonl:3", "stdin:4"
  std::optional<std::string> pair;  // a sentence pair's second text
};

// The texts to classify, --text values first. `standard_input` is read for `--file -`.
Result<std::vector<PredictText>> read_predict_texts(const PredictInputOptions& options,
                                                    std::istream& standard_input);

}  // namespace scion::workbench
