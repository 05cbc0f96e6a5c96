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
    // 4: every version of a model is kept. A version is a model's parameters for one recipe
    // hash; the model row points at its current version, and `parameters` becomes a view
    // of the current versions' parameters, so moving the pointer restores an older version
    // without copying a tensor. Runs may restore a version ('restore') and test runs count
    // their cases; test_outcomes keys each test's result for reuse; spec_versions and tags
    // name what `scion gc --keep` keeps.
    R"sql(
CREATE TABLE runs_v4 (
  id              INTEGER PRIMARY KEY,
  model_id        INTEGER NOT NULL REFERENCES models(id),
  kind            TEXT NOT NULL CHECK (kind IN ('train', 'adapt', 'test', 'import', 'restore')),
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
  pid             INTEGER,
  cases           INTEGER           -- a test run: the cases it judged; NULL for other kinds
) STRICT;
INSERT INTO runs_v4 (id, model_id, kind, status, recipe_hash, dataset_digest, started_at,
                     finished_at, seed, host, scion_version, hyperparameters, message, pid, cases)
  SELECT r.id, r.model_id, r.kind, r.status, r.recipe_hash, r.dataset_digest, r.started_at,
         r.finished_at, r.seed, r.host, r.scion_version, r.hyperparameters, r.message, r.pid,
         CASE WHEN r.kind = 'test'
              THEN (SELECT count(*) FROM test_results t WHERE t.run_id = r.id) END
  FROM runs r;
DROP TABLE runs;
ALTER TABLE runs_v4 RENAME TO runs;
CREATE INDEX runs_model_started ON runs(model_id, started_at DESC, id DESC);
CREATE INDEX runs_started ON runs(started_at DESC, id DESC);

CREATE TABLE versions (
  id                INTEGER PRIMARY KEY,
  model_id          INTEGER NOT NULL REFERENCES models(id) ON DELETE CASCADE,
  recipe_hash       TEXT NOT NULL,
  parent_version_id INTEGER REFERENCES versions(id) ON DELETE SET NULL,
  run_id            INTEGER REFERENCES runs(id),  -- the train, adapt or import run that made it
  data_digests      TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(data_digests)),
  adaptation        TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(adaptation)),
  architecture      TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(architecture)),
  created_at        TEXT NOT NULL,
  UNIQUE (model_id, recipe_hash)
) STRICT;
CREATE INDEX versions_parent ON versions(parent_version_id);

CREATE TABLE version_parameters (
  version_id    INTEGER NOT NULL REFERENCES versions(id) ON DELETE CASCADE,
  name          TEXT NOT NULL,
  digest        TEXT NOT NULL REFERENCES objects(digest),
  dtype         TEXT NOT NULL CHECK (dtype IN ('F32', 'F16', 'BF16')),
  shape         TEXT NOT NULL CHECK (json_valid(shape)),
  trainable     INTEGER NOT NULL CHECK (trainable IN (0, 1)),
  introduced_by TEXT NOT NULL,
  PRIMARY KEY (version_id, name)
) STRICT, WITHOUT ROWID;
CREATE INDEX version_parameters_digest ON version_parameters(digest);

ALTER TABLE models ADD COLUMN version_id INTEGER REFERENCES versions(id);

-- Each model's stored parameters become its first version, made by the newest finished
-- run of that recipe; older parameters were replaced before this version and are gone.
INSERT INTO versions (model_id, recipe_hash, run_id, adaptation, architecture, created_at)
  SELECT m.id, m.recipe_hash,
         (SELECT r.id FROM runs r
          WHERE r.model_id = m.id AND r.status = 'finished' AND r.recipe_hash = m.recipe_hash
            AND r.kind IN ('train', 'adapt', 'import')
          ORDER BY r.started_at DESC, r.id DESC LIMIT 1),
         m.adaptation, m.architecture, m.updated_at
  FROM models m WHERE m.recipe_hash IS NOT NULL;
UPDATE versions SET data_digests = coalesce(
  (SELECT json_array(r.dataset_digest) FROM runs r
   WHERE r.id = versions.run_id AND r.dataset_digest IS NOT NULL), '[]');
UPDATE models SET version_id =
  (SELECT v.id FROM versions v WHERE v.model_id = models.id AND v.recipe_hash = models.recipe_hash);
-- The parent's version it was made from, where the parent still holds it.
UPDATE versions SET parent_version_id =
  (SELECT pv.id FROM models c JOIN versions pv ON pv.model_id = c.parent_id
   JOIN runs r ON r.id = versions.run_id
   WHERE c.id = versions.model_id
     AND pv.recipe_hash = json_extract(r.hyperparameters, '$.parent_recipe'));
INSERT INTO version_parameters (version_id, name, digest, dtype, shape, trainable, introduced_by)
  SELECT m.version_id, p.name, p.digest, p.dtype, p.shape, p.trainable, p.introduced_by
  FROM parameters p JOIN models m ON m.id = p.model_id WHERE m.version_id IS NOT NULL;
DROP TABLE parameters;
CREATE VIEW parameters AS
  SELECT m.id AS model_id, vp.name, vp.digest, vp.dtype, vp.shape, vp.trainable, vp.introduced_by
  FROM models m JOIN version_parameters vp ON vp.version_id = m.version_id;

-- When each step was recorded, for per-step timestamps (MLflow); NULL before version 4.
ALTER TABLE run_metrics ADD COLUMN recorded_at TEXT;

CREATE TABLE test_outcomes (
  run_id            INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  kind              TEXT NOT NULL CHECK (kind IN ('test', 'assertion')),
  name              TEXT NOT NULL,  -- the test's or assertion's name in the spec
  model_id          INTEGER NOT NULL REFERENCES models(id) ON DELETE CASCADE,
  model_version     TEXT NOT NULL,
  definition_digest TEXT NOT NULL,
  lexicon_digests   TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(lexicon_digests)),
  semantics_version INTEGER NOT NULL,
  cases             INTEGER NOT NULL CHECK (cases >= 0),
  failed            INTEGER NOT NULL CHECK (failed >= 0),
  inherited         INTEGER NOT NULL DEFAULT 0 CHECK (inherited >= 0),  -- regression: parent
  PRIMARY KEY (run_id, kind, name)
) STRICT, WITHOUT ROWID;
CREATE INDEX test_outcomes_key ON test_outcomes(model_id, model_version, kind, name);

CREATE TABLE spec_versions (
  id         INTEGER PRIMARY KEY,
  digest     TEXT NOT NULL UNIQUE,  -- SHA-256 of the spec's models and their recipe hashes
  spec_path  TEXT NOT NULL,
  first_seen TEXT NOT NULL,
  last_seen  TEXT NOT NULL
) STRICT;
CREATE INDEX spec_versions_seen ON spec_versions(last_seen DESC, id DESC);

CREATE TABLE spec_version_members (
  spec_version_id INTEGER NOT NULL REFERENCES spec_versions(id) ON DELETE CASCADE,
  version_id      INTEGER NOT NULL REFERENCES versions(id) ON DELETE CASCADE,
  PRIMARY KEY (spec_version_id, version_id)
) STRICT, WITHOUT ROWID;

CREATE TABLE tags (
  name            TEXT PRIMARY KEY,
  spec_version_id INTEGER NOT NULL REFERENCES spec_versions(id),
  created_at      TEXT NOT NULL
) STRICT, WITHOUT ROWID;
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
