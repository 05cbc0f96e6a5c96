// The individual perturbation rules behind Perturbation::apply (perturbation.h), as free
// functions over text. Each returns std::nullopt when it cannot change the text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "assertions/perturbation.h"

namespace scion::assertions {

// perturb_surface.cpp
std::optional<std::string> perturb_typos(std::string_view text, int count,
                                         const std::vector<TypoOp>& ops, std::uint64_t seed);
std::optional<std::string> perturb_punctuation(std::string_view text, std::string_view mode,
                                               std::string_view mark);
std::optional<std::string> perturb_case(std::string_view text, std::string_view mode);

// perturb_grammar.cpp
std::optional<std::string> perturb_contractions(std::string_view text, std::string_view mode);
std::optional<std::string> perturb_negation(std::string_view text, std::string_view mode);

// perturb_swaps.cpp
std::optional<std::string> perturb_swap(std::string_view text,
                                        const std::vector<std::vector<std::string>>& lists,
                                        std::uint64_t seed);
std::optional<std::string> perturb_numbers(std::string_view text,
                                           const std::vector<std::vector<std::string>>& word_lists,
                                           std::uint64_t seed);
std::optional<std::string> perturb_substitute(
    std::string_view text, const std::vector<std::pair<std::string, std::string>>& pairs,
    bool both_directions);

}  // namespace scion::assertions
