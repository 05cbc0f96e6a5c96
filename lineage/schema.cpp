#include "lineage/schema.h"

#include <iterator>
#include <string>

namespace scion::lineage {
namespace {

// Migration i (1-based) brings the schema from version i-1 to i. Append only: a
// released migration never changes, because stores in the field already ran it.
constexpr const char* kMigrations[] = {
    // 1: the initial schema.
    R"sql(
CREATE TABLE objects (
  digest       TEXT PRIMARY KEY CHECK (length(digest) = 64),
  size         INTEGER NOT NULL CHECK (size >= 0),
  inline_bytes BLOB                -- NULL: stored as the file objects/<digest[0:2]>/<digest[2:]>
) STRICT, WITHOUT ROWID;

CREATE TABLE models (
  id           INTEGER PRIMARY KEY,
  name         TEXT NOT NULL UNIQUE,
  parent_id    INTEGER REFERENCES models(id),
  recipe_hash  TEXT,               -- recipe of the stored parameters; NULL: none stored yet
  adaptation   TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(adaptation)),
  architecture TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(architecture)),
  created_at   TEXT NOT NULL,
  updated_at   TEXT NOT NULL
) STRICT;
CREATE INDEX models_parent ON models(parent_id);

CREATE TABLE parameters (
  model_id      INTEGER NOT NULL REFERENCES models(id) ON DELETE CASCADE,
  name          TEXT NOT NULL,
  digest        TEXT NOT NULL REFERENCES objects(digest),
  dtype         TEXT NOT NULL CHECK (dtype IN ('F32', 'F16', 'BF16')),
  shape         TEXT NOT NULL CHECK (json_valid(shape)),
  trainable     INTEGER NOT NULL CHECK (trainable IN (0, 1)),
  introduced_by TEXT NOT NULL,
  PRIMARY KEY (model_id, name)
) STRICT, WITHOUT ROWID;
CREATE INDEX parameters_digest ON parameters(digest);

CREATE TABLE datasets (
  digest TEXT PRIMARY KEY CHECK (length(digest) = 64),
  path   TEXT NOT NULL,
  rows   INTEGER NOT NULL,
  format TEXT NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE runs (
  id              INTEGER PRIMARY KEY,
  model_id        INTEGER NOT NULL REFERENCES models(id),
  kind            TEXT NOT NULL CHECK (kind IN ('train', 'adapt', 'test', 'import')),
  status          TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed', 'interrupted')),
  recipe_hash     TEXT NOT NULL,
  dataset_digest  TEXT REFERENCES datasets(digest),
  started_at      TEXT NOT NULL,
  finished_at     TEXT,
  seed            INTEGER NOT NULL,
  host            TEXT NOT NULL,
  scion_version   TEXT NOT NULL,
  hyperparameters TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(hyperparameters)),
  message         TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX runs_model_started ON runs(model_id, started_at DESC, id DESC);
CREATE INDEX runs_started ON runs(started_at DESC, id DESC);

CREATE TABLE run_metrics (
  run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step       INTEGER NOT NULL,
  loss       REAL,
  lr         REAL,
  validation TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(validation)),
  PRIMARY KEY (run_id, step)
) STRICT, WITHOUT ROWID;

CREATE TABLE test_results (
  id            INTEGER PRIMARY KEY,
  model_id      INTEGER NOT NULL REFERENCES models(id) ON DELETE CASCADE,
  model_version TEXT NOT NULL,     -- recipe hash of the parameters that were tested
  run_id        INTEGER REFERENCES runs(id),
  test          TEXT NOT NULL,
  case_index    INTEGER NOT NULL,
  input         TEXT NOT NULL,
  expected      TEXT NOT NULL,
  output        TEXT NOT NULL,
  passed        INTEGER NOT NULL CHECK (passed IN (0, 1))
) STRICT;
CREATE INDEX test_results_model ON test_results(model_id, model_version, test, case_index);
CREATE INDEX test_results_run ON test_results(run_id);

CREATE TABLE assertion_violations (
  id            INTEGER PRIMARY KEY,
  model_id      INTEGER NOT NULL REFERENCES models(id) ON DELETE CASCADE,
  model_version TEXT NOT NULL,
  run_id        INTEGER REFERENCES runs(id),
  assertion     TEXT NOT NULL,
  input         TEXT NOT NULL,
  detail        TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(detail))
) STRICT;
CREATE INDEX assertion_violations_model ON assertion_violations(model_id, model_version, assertion);
CREATE INDEX assertion_violations_run ON assertion_violations(run_id);
)sql",
    // 2: runs end as 'diverged' (non-finite loss or parameters) or 'abandoned' (its
    // process is gone while the run says running), and record the pid that runs them.
    // SQLite cannot widen a CHECK in place: the table is rebuilt (foreign keys are off
    // while migrations run; see migrate()).
    R"sql(
CREATE TABLE runs_v2 (
  id              INTEGER PRIMARY KEY,
  model_id        INTEGER NOT NULL REFERENCES models(id),
  kind            TEXT NOT NULL CHECK (kind IN ('train', 'adapt', 'test', 'import')),
  status          TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed', 'interrupted',
                                                  'diverged', 'abandoned')),
  recipe_hash     TEXT NOT NULL,
  dataset_digest  TEXT REFERENCES datasets(digest),
  started_at      TEXT NOT NULL,
  finished_at     TEXT,
  seed            INTEGER NOT NULL,
  host            TEXT NOT NULL,
  scion_version   TEXT NOT NULL,
  hyperparameters TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(hyperparameters)),
  message         TEXT NOT NULL DEFAULT '',
  pid             INTEGER           -- process that runs it on `host`; NULL before version 2
) STRICT;
INSERT INTO runs_v2 (id, model_id, kind, status, recipe_hash, dataset_digest, started_at,
                     finished_at, seed, host, scion_version, hyperparameters, message)
  SELECT id, model_id, kind, status, recipe_hash, dataset_digest, started_at, finished_at, seed,
         host, scion_version, hyperparameters, message FROM runs;
DROP TABLE runs;
ALTER TABLE runs_v2 RENAME TO runs;
CREATE INDEX runs_model_started ON runs(model_id, started_at DESC, id DESC);
CREATE INDEX runs_started ON runs(started_at DESC, id DESC);
)sql",
    // 3: `scion eval`'s results: a model version's metrics on one dataset (by content).
    R"sql(
CREATE TABLE eval_results (
  id             INTEGER PRIMARY KEY,
  model_id       INTEGER NOT NULL REFERENCES models(id) ON DELETE CASCADE,
  model_version  TEXT NOT NULL,    -- recipe hash of the evaluated parameters
  dataset        TEXT NOT NULL,    -- the spec's dataset name, or the file as given
  dataset_digest TEXT NOT NULL CHECK (length(dataset_digest) = 64),
  rows           INTEGER NOT NULL CHECK (rows >= 0),
  kind           TEXT NOT NULL CHECK (kind IN ('classifier', 'language model')),
  metrics        TEXT NOT NULL CHECK (json_valid(metrics)),
  evaluated_at   TEXT NOT NULL,
  scion_version  TEXT NOT NULL
) STRICT;
CREATE INDEX eval_results_model ON eval_results(model_id, model_version, evaluated_at DESC);
)sql",
};

constexpr int kMigrationCount = static_cast<int>(std::size(kMigrations));
static_assert(kMigrationCount == kSchemaVersion, "one migration per schema version");

// The schema version of `db`, after checking that it is a scion store (or an empty
// database) of a version this scion understands.
Result<std::int64_t> checked_version(SqliteDb& db, const std::string& where) {
  auto app_id = db.query_int("PRAGMA application_id");
  if (!app_id.is_ok()) return app_id.status();
  auto version = db.query_int("PRAGMA user_version");
  if (!version.is_ok()) return version.status();
  auto tables = db.query_int("SELECT count(*) FROM sqlite_schema");
  if (!tables.is_ok()) return tables.status();

  if (*app_id != kApplicationId && !(*app_id == 0 && *tables == 0)) {
    return corruption(where + " is an SQLite database but not a scion store (application_id " +
                      std::to_string(*app_id) + "); point --store at a scion store directory");
  }
  if (*version > kSchemaVersion) {
    return Status(StatusCode::kVersionMismatch,
                  "the store " + where + " has schema version " + std::to_string(*version) +
                      ", written by a newer scion; this scion (" SCION_VERSION
                      ") understands up to version " +
                      std::to_string(kSchemaVersion) + ". Upgrade scion to use this store");
  }
  return *version;
}

Status run_migrations(SqliteDb& db, const std::string& where) {
  for (;;) {
    auto tx = Transaction::begin(db);  // re-read the version under the write lock
    if (!tx.is_ok()) return tx.status();
    auto version = checked_version(db, where);
    if (!version.is_ok()) return version.status();
    if (*version == kSchemaVersion) return Status::ok();

    SCION_RETURN_IF_ERROR(db.exec(kMigrations[*version]));
    auto broken_references = db.query_int("SELECT count(*) FROM pragma_foreign_key_check");
    if (!broken_references.is_ok()) return broken_references.status();
    if (*broken_references != 0)
      return corruption(where + ": migration to schema version " + std::to_string(*version + 1) +
                        " left " + std::to_string(*broken_references) +
                        " broken references; the store is unchanged. Run `scion fsck`");
    SCION_RETURN_IF_ERROR(db.exec("PRAGMA application_id = " + std::to_string(kApplicationId)));
    SCION_RETURN_IF_ERROR(db.exec("PRAGMA user_version = " + std::to_string(*version + 1)));
    SCION_RETURN_IF_ERROR((*tx)->commit());
  }
}

}  // namespace

Status migrate(SqliteDb& db) {
  const std::string where = std::string("'").append(db.path().string()).append("'");
  // The common case, an up-to-date store, needs no write lock.
  auto current = db.query_int("PRAGMA user_version");
  if (!current.is_ok()) return current.status();
  auto current_app = db.query_int("PRAGMA application_id");
  if (!current_app.is_ok()) return current_app.status();
  if (*current == kSchemaVersion && *current_app == kApplicationId) return Status::ok();
  // A migration may rebuild a table that others reference, which needs foreign keys off
  // (they cannot change inside a transaction); each migration checks them before commit.
  SCION_RETURN_IF_ERROR(db.exec("PRAGMA foreign_keys = OFF"));
  Status migrated = run_migrations(db, where);
  Status restored = db.exec("PRAGMA foreign_keys = ON");
  return migrated.is_ok() ? restored : migrated;
}

Result<bool> schema_is_current(SqliteDb& db) {
  auto version = checked_version(db, std::string("'").append(db.path().string()).append("'"));
  if (!version.is_ok()) return version.status();
  return *version == kSchemaVersion;
}

}  // namespace scion::lineage
