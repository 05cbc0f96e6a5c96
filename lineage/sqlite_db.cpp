#include "lineage/sqlite_db.h"

#include <cctype>
#include <cstdio>

#include "lineage/env.h"

namespace scion::lineage {

namespace {

// `path` percent-encoded for a file: URI ('?', '#' and '%' would end or escape it).
std::string uri_path(const std::filesystem::path& path) {
  std::string out;
  for (unsigned char c : path.string()) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '_' || c == '-' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", c);
      out += escaped;
    }
  }
  return out;
}

}  // namespace

Statement::~Statement() {
  if (stmt_ != nullptr) sqlite3_finalize(stmt_);
}

Statement& Statement::note_bind(int rc) {
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Statement& Statement::bind(int index, std::int64_t value) {
  return note_bind(sqlite3_bind_int64(stmt_, index, value));
}
Statement& Statement::bind(int index, double value) {
  return note_bind(sqlite3_bind_double(stmt_, index, value));
}
Statement& Statement::bind(int index, std::string_view value) {
  return note_bind(
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
}
Statement& Statement::bind_blob(int index, std::span<const std::byte> value) {
  // A zero-length blob must still be a blob, not NULL: pass a non-null pointer.
  static const std::byte kEmpty{};
  const void* data = value.empty() ? &kEmpty : value.data();
  return note_bind(sqlite3_bind_blob64(stmt_, index, data, value.size(), SQLITE_TRANSIENT));
}
Statement& Statement::bind_null(int index) { return note_bind(sqlite3_bind_null(stmt_, index)); }
Statement& Statement::bind_optional(int index, const std::optional<std::string>& value) {
  return value ? bind(index, std::string_view(*value)) : bind_null(index);
}

Statement& Statement::bind_optional(int index, const std::optional<std::int64_t>& value) {
  return value ? bind(index, *value) : bind_null(index);
}

Result<bool> Statement::step() {
  if (bind_rc_ != SQLITE_OK) return db_->error(bind_rc_, "binding a query parameter");
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_->error(rc, sqlite3_sql(stmt_));
}

Status Statement::run() {
  for (;;) {
    auto row = step();
    if (!row.is_ok()) return row.status();
    if (!*row) return Status::ok();
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_rc_ = SQLITE_OK;
}

bool Statement::column_is_null(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}
std::int64_t Statement::column_int(int column) const { return sqlite3_column_int64(stmt_, column); }
double Statement::column_double(int column) const { return sqlite3_column_double(stmt_, column); }
std::string Statement::column_text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)));
}
std::span<const std::byte> Statement::column_blob(int column) const {
  const void* data = sqlite3_column_blob(stmt_, column);
  auto size = static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column));
  return {static_cast<const std::byte*>(data), size};
}

Result<std::unique_ptr<SqliteDb>> SqliteDb::open_with(const std::filesystem::path& path,
                                                      const std::string& name, int flags,
                                                      int busy_timeout_ms) {
  sqlite3* handle = nullptr;
  int rc = sqlite3_open_v2(name.c_str(), &handle, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  std::unique_ptr<SqliteDb> db(new SqliteDb(handle, path, busy_timeout_ms));
  if (rc != SQLITE_OK) return db->error(rc, "opening the store database");
  sqlite3_extended_result_codes(handle, 1);
  sqlite3_busy_timeout(handle, busy_timeout_ms);
  SCION_RETURN_IF_ERROR(db->exec("PRAGMA foreign_keys = ON"));
  return db;
}

Result<std::unique_ptr<SqliteDb>> SqliteDb::open(const std::filesystem::path& path, bool create,
                                                 int busy_timeout_ms) {
  return open_with(path, path.string(),
                   SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0), busy_timeout_ms);
}

Result<std::unique_ptr<SqliteDb>> SqliteDb::open_read_only(const std::filesystem::path& path,
                                                           int busy_timeout_ms) {
  auto db = open_with(path, path.string(), SQLITE_OPEN_READONLY, busy_timeout_ms);
  if (!db.is_ok()) return db.status();
  // The first read shows whether the WAL index can be opened.
  const int rc = sqlite3_exec((*db)->handle(), "SELECT count(*) FROM sqlite_schema", nullptr,
                              nullptr, nullptr);
  const int primary = rc & 0xff;
  if (primary != SQLITE_READONLY && primary != SQLITE_CANTOPEN) {
    if (rc != SQLITE_OK) return (*db)->error(rc, "reading the store database");
    return db;
  }
  return open_with(path, "file:" + uri_path(std::filesystem::absolute(path)) + "?immutable=1",
                   SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, busy_timeout_ms);
}

SqliteDb::~SqliteDb() { sqlite3_close_v2(db_); }

Result<Statement> SqliteDb::prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) return error(rc, sql);
  return Statement(*this, stmt);
}

Status SqliteDb::exec(std::string_view sql) {
  std::string text(sql);
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return error(rc, sql);
  return Status::ok();
}

Result<std::int64_t> SqliteDb::query_int(std::string_view sql) {
  auto stmt = prepare(sql);
  if (!stmt.is_ok()) return stmt.status();
  auto row = stmt->step();
  if (!row.is_ok()) return row.status();
  if (!*row) return internal_error("query returned no row: " + std::string(sql));
  return stmt->column_int(0);
}

std::int64_t SqliteDb::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

Status SqliteDb::error(int rc, std::string_view what) const {
  const int primary = rc & 0xff;
  const std::string where = "store database '" + path_.string() + "'";
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
    return Status(StatusCode::kBusy, "store busy: another scion process held " + where +
                                         " for more than " + std::to_string(busy_timeout_ms_) +
                                         " ms; wait for it to finish (or stop it) and retry");
  }
  const char* detail = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) {
    return corruption(where + " is damaged or not a scion store (" + detail +
                      "); run 'scion fsck' and restore it from a backup");
  }
  if (primary == SQLITE_FULL || primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN ||
      primary == SQLITE_READONLY || primary == SQLITE_PERM) {
    return io_error(where + ": " + detail + " (check free space and permissions" +
                    file_size_limit_note() + ")");
  }
  if (primary == SQLITE_CONSTRAINT) {
    return internal_error(where + " rejected a write (" + detail + ") while " + std::string(what));
  }
  return internal_error(where + ": " + detail + " while " + std::string(what));
}

Result<std::unique_ptr<Transaction>> Transaction::begin(SqliteDb& db) {
  SCION_RETURN_IF_ERROR(db.exec("BEGIN IMMEDIATE"));
  return std::unique_ptr<Transaction>(new Transaction(db));
}

Transaction::~Transaction() {
  if (!done_) (void)db_.exec("ROLLBACK");
}

Status Transaction::commit() {
  SCION_RETURN_IF_ERROR(db_.exec("COMMIT"));
  done_ = true;
  return Status::ok();
}

}  // namespace scion::lineage
