// Perturbation: a seeded, rule-based rewrite of a test input, for INV and DIR tests and
// the perturbation_flip assertion.
//
// Kinds (docs/testing.md, "Perturbations"): typos, punctuation, contractions, negation,
// names, locations, numbers, swap (any lexicon), case, substitute. apply() returns the
// rewritten text, or std::nullopt when the rule does not apply to this input (no name to
// swap, nothing to negate, the text would not change), so tests skip such inputs instead
// of counting them. The output depends only on the text, the options and the seed.
// A compiled Perturbation is immutable; apply() is const and thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "assertions/lexicon.h"
#include "base/status.h"

namespace scion::assertions {

enum class PerturbationKind {
  kTypos,         // swap / drop / duplicate adjacent characters inside words
  kPunctuation,   // strip punctuation, or add a final mark
  kContractions,  // "is not" <-> "isn't"
  kNegation,      // "is" -> "is not", "can" -> "cannot", "do X" -> "do not X", and back
  kSwap,          // entries of lexicons replaced by other entries of the same lexicon
  kNumbers,       // numerals changed by up to 20% (and number words swapped)
  kCase,          // upper, lower or title case
  kSubstitute,    // user-given word or phrase pairs
};

enum class TypoOp { kSwap, kDrop, kDuplicate };

struct PerturbationOptions {
  PerturbationKind kind = PerturbationKind::kTypos;
  std::string name;  // the `kind:` as written ("names", "locations", ...)
  int count = 1;     // typos per input
  std::vector<TypoOp> typo_ops = {TypoOp::kSwap, TypoOp::kDrop, TypoOp::kDuplicate};
  std::string mode;        // punctuation: strip|add|any; contractions: expand|contract|any;
                           // negation: add|remove|any; case: upper|lower|title
  std::string mark = ".";  // punctuation add
  std::vector<std::string> lexicons;  // swap / numbers: lexicons whose entries are swapped
  std::vector<std::pair<std::string, std::string>> pairs;  // substitute: from -> to
  bool both_directions = false;                            // substitute: also to -> from
};

class Perturbation {
 public:
  // Reads a `perturb:` object ({kind: negation, mode: add}). Errors read
  // "<origin>: <path>.<key>: ..." (origin: file:line:col and owner; path: the object's key
  // path; `locations` as for BodyFields). Swap lexicons are resolved in `lexicons` now,
  // so an unknown lexicon is an error here rather than at run time.
  static Result<Perturbation> compile(const nlohmann::json& body, const LexiconSet& lexicons,
                                      std::string_view origin, std::string_view path = "perturb",
                                      const spec::BodyLocations* locations = nullptr);
  // Builds one from options directly (tests, programmatic use). Same checks as compile();
  // `where` prefixes errors.
  static Result<Perturbation> from_options(PerturbationOptions options, const LexiconSet& lexicons,
                                           std::string_view where);

  std::optional<std::string> apply(std::string_view text, std::uint64_t seed) const;

  const PerturbationOptions& options() const { return options_; }

 private:
  PerturbationOptions options_;
  std::vector<std::vector<std::string>> swap_lists_;  // resolved `lexicons`, in order
};

}  // namespace scion::assertions
