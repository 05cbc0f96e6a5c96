// The rule for the names a spec gives to models, datasets, shares, tests, assertions and
// lexicons, and to the models named on the command line.
//
// Names end up in messages, JSON, JUnit reports and the store, and a name must never be
// able to name a file: a safe name is 1 to 128 ASCII letters, digits, '.', '_' or '-',
// starting with a letter or a digit, without "..". (The store never builds a path from a
// name anyway; this rule keeps names printable and unambiguous everywhere they appear.)
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace scion::spec {

inline constexpr std::size_t kMaxNameLength = 128;

// The rule in words, for messages and docs.
inline constexpr std::string_view kNameRule =
    "names are 1 to 128 ASCII letters, digits, '.', '_' or '-', start with a letter or a "
    "digit, and contain no '..'";

// Why `name` breaks the rule ("contains '/'", "is 10000 characters long"), or "" when it
// is a safe name.
std::string name_problem(std::string_view name);

// A safe name close to `name` to suggest instead: other characters become '-', runs of
// separators collapse to one, leading and trailing separators go, and it is cut to the
// maximum length. "" when nothing of `name` is left.
std::string safe_name_like(std::string_view name);

}  // namespace scion::spec
