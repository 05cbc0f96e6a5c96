// Where a JSON text holds a number that a 64-bit float cannot hold (1e400, -1e400).
//
// nlohmann::json refuses such a number with out_of_range 406 ("number overflow parsing
// '1e400'"), which names neither the field nor the place, so a data row with one ended
// as an "internal error". scion refuses the row like any other data error (exit 2), and
// this finds what to say: the field's key path, the number as written and its column.
// Stateless and thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace scion {

struct OutOfRangeNumber {
  std::string key_path;  // "extra", "meta.scores[2]"; empty for a bare number
  std::string literal;   // as written: "1e400"
  std::size_t column = 0;  // 1-based offset in the text where parsing stopped
};

// The first number in `text` beyond a 64-bit float, or nullopt when there is none (or
// the text fails to parse for another reason first).
std::optional<OutOfRangeNumber> find_out_of_range_number(std::string_view text);

// "<where>:<column>: field 'extra' holds 1e400, beyond the range of a 64-bit float
// (about ±1.8e308); write the number within that range, or as a string".
std::string describe_out_of_range_number(std::string_view where, const OutOfRangeNumber& number);

}  // namespace scion
