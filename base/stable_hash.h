// A stable 64-bit hash of bytes (FNV-1a), the same on every platform and in every run,
// for deriving seeds from names. std::hash is not used: its values are
// implementation-defined and may differ between runs.
#pragma once

#include <cstdint>
#include <string_view>

namespace scion::base {

constexpr std::uint64_t stable_hash(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a offset basis
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;  // FNV-1a prime
  }
  return h;
}

}  // namespace scion::base
