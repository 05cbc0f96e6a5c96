// Reading column values of the store's rows, for the files that implement LineageStore's
// queries (store_queries.cpp, store_versions.cpp). Damaged values read as empty: the
// schema only guarantees valid JSON, and `scion fsck` names what is wrong.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lineage/sqlite_db.h"

namespace scion::lineage {

// A JSON column's value; an object when the text is not JSON.
nlohmann::json json_column(const std::string& text);
// A shape column ([2, 3]); empty when it is not a list of integers.
std::vector<std::int64_t> shape_column(const std::string& text);
std::optional<std::string> optional_text(const Statement& stmt, int column);

}  // namespace scion::lineage
