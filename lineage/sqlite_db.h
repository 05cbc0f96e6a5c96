// A thin RAII layer over the SQLite C API for the lineage store: a connection, prepared
// statements with typed binds and columns, and transactions that roll back unless
// committed. Errors become Status values with the store's path in the message.
// A SqliteDb and its statements belong to one thread at a time.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace scion::lineage {

class SqliteDb;

// A prepared statement. bind_* use 1-based indices, column_* 0-based, as SQLite does.
class Statement {
 public:
  Statement(SqliteDb& db, sqlite3_stmt* stmt) : db_(&db), stmt_(stmt) {}
  Statement(Statement&& other) noexcept
      : db_(other.db_), stmt_(other.stmt_), bind_rc_(other.bind_rc_) {
    other.stmt_ = nullptr;
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind_blob(int index, std::span<const std::byte> value);
  Statement& bind_null(int index);
  Statement& bind_optional(int index, const std::optional<std::string>& value);
  Statement& bind_optional(int index, const std::optional<std::int64_t>& value);

  // Steps once: true with a row available, false when done.
  Result<bool> step();
  // Steps to completion, for statements that return no rows.
  Status run();
  // Steps through every row, calling `visit(*this)` on each; stops at the first error.
  template <typename Visit>
  Status for_each_row(Visit&& visit) {
    for (;;) {
      auto row = step();
      if (!row.is_ok()) return row.status();
      if (!*row) return Status::ok();
      visit(*this);
    }
  }
  void reset();

  bool column_is_null(int column) const;
  std::int64_t column_int(int column) const;
  double column_double(int column) const;
  std::string column_text(int column) const;
  std::span<const std::byte> column_blob(int column) const;  // valid until the next step

 private:
  Statement& note_bind(int rc);
  SqliteDb* db_;
  sqlite3_stmt* stmt_;
  int bind_rc_ = SQLITE_OK;  // the first failed bind, reported by step()
};

class SqliteDb {
 public:
  // Opens (creating when `create`) the database at `path` with foreign keys on and
  // `busy_timeout_ms` of waiting for locks held by other processes.
  static Result<std::unique_ptr<SqliteDb>> open(const std::filesystem::path& path, bool create,
                                                int busy_timeout_ms);
  // Opens `path` read-only, for readers of a store they may not write (another user's, a
  // CI artifact). Reading a WAL database needs its -shm file, which such a reader cannot
  // create: then the file is opened as immutable (no locks, the WAL not read), which is
  // right for a store nobody is writing.
  static Result<std::unique_ptr<SqliteDb>> open_read_only(const std::filesystem::path& path,
                                                          int busy_timeout_ms);
  ~SqliteDb();

  Result<Statement> prepare(std::string_view sql);
  // Runs one or more statements that return no rows.
  Status exec(std::string_view sql);
  // A single integer from a query such as "PRAGMA user_version".
  Result<std::int64_t> query_int(std::string_view sql);
  std::int64_t last_insert_rowid() const;

  // The Status for the SQLite result code `rc` from an operation described by `what`.
  Status error(int rc, std::string_view what) const;
  const std::filesystem::path& path() const { return path_; }
  int busy_timeout_ms() const { return busy_timeout_ms_; }
  sqlite3* handle() { return db_; }

 private:
  static Result<std::unique_ptr<SqliteDb>> open_with(const std::filesystem::path& path,
                                                     const std::string& name, int flags,
                                                     int busy_timeout_ms);
  SqliteDb(sqlite3* db, std::filesystem::path path, int busy_timeout_ms)
      : db_(db), path_(std::move(path)), busy_timeout_ms_(busy_timeout_ms) {}
  sqlite3* db_;
  std::filesystem::path path_;
  int busy_timeout_ms_;
};

// BEGIN IMMEDIATE on construction (take the write lock now, waiting up to the busy
// timeout); ROLLBACK on destruction unless commit() succeeded.
class Transaction {
 public:
  static Result<std::unique_ptr<Transaction>> begin(SqliteDb& db);
  ~Transaction();
  Status commit();

 private:
  explicit Transaction(SqliteDb& db) : db_(db) {}
  SqliteDb& db_;
  bool done_ = false;
};

}  // namespace scion::lineage
