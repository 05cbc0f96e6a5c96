// Spelling suggestions for misspelt keys and values ("did you mean 'prefix'?").
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace scion::spec {

// Optimal-string-alignment distance: edits are insert, delete, substitute and swap of two
// adjacent characters, so "haed" is one edit from "head".
std::size_t edit_distance(std::string_view a, std::string_view b);

// The closest candidate within a distance that grows with the word's length, or "".
std::string closest_match(std::string_view word, std::span<const std::string_view> candidates);

// " — did you mean 'x'?" or "" when nothing is close.
std::string did_you_mean(std::string_view word, std::span<const std::string_view> candidates);

}  // namespace scion::spec
