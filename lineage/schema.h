// The store's schema and its migrations (documented in docs/store.md).
//
// lineage.db identifies itself with PRAGMA application_id = kApplicationId and records
// its schema version in PRAGMA user_version. migrate() brings a database from any older
// version to kSchemaVersion, one migration per transaction, and refuses a database
// written by a newer scion or by another application.
#pragma once

#include <cstdint>

#include "lineage/sqlite_db.h"

namespace scion::lineage {

// 'S','C','I','N' as a big-endian 32-bit integer: how `file` and sqlite3 recognise the store.
inline constexpr std::int32_t kApplicationId = 0x5343494e;
inline constexpr int kSchemaVersion = 4;

// REQUIRES: no transaction open on `db`.
Status migrate(SqliteDb& db);

// Whether `db` already has the current schema, read without writing (for read-only
// connections): false when migrate() would change it; an error for a database of a newer
// scion or of another application.
Result<bool> schema_is_current(SqliteDb& db);

}  // namespace scion::lineage
