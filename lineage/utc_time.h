// Reading back the times the store records (utc_now() in lineage/store.h writes them).
#pragma once

#include <ctime>
#include <optional>
#include <string>

namespace scion::lineage {

// Seconds since the epoch of a time utc_now() wrote ("2026-11-22T03:04:05.678Z"); nullopt
// for any other text.
std::optional<std::time_t> parse_utc(const std::string& text);

}  // namespace scion::lineage
