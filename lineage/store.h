// LineageStore: one scion store directory (lineage.db + objects/), the record of every
// model, its parameters, runs, metrics and test results. Format: docs/store.md.
//
// Crash safety: tensor bytes are written first (content-addressed, each object complete
// before it gets its name), then ONE SQLite transaction records everything that refers
// to them. A crash or Ctrl-C at any point leaves either the old or the new state; at
// worst some unreferenced object files, which `scion gc` removes.
//
// Concurrency: several processes may open the same store. Writers wait up to
// StoreOptions::busy_timeout_ms for each other and then fail with StatusCode::kBusy.
// A LineageStore object is used by one thread at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lineage/env.h"
#include "lineage/object_store.h"
#include "lineage/records.h"
#include "lineage/sqlite_db.h"

namespace scion::lineage {

struct StoreOptions {
  Env* env = nullptr;                    // nullptr: default_env()
  bool create = true;                    // create the directory and database when missing
  int busy_timeout_ms = 10000;           // how long to wait for another process's write lock
  std::size_t inline_limit = 64 * 1024;  // tensors smaller than this live in lineage.db
  bool verify_on_load = true;            // check each tensor's digest when loading parameters
  // Open lineage.db read-only (readers: a store they may not write stays readable). No
  // writes, so runs whose process is gone stay as they are; an older schema is migrated
  // first, which needs write access once.
  bool read_only = false;
};

class LineageStore {
 public:
  // Opens the store in `dir`, creating or migrating it as needed. Refuses a store
  // written by a newer scion (kVersionMismatch) and a database of another application.
  // A writer (not read_only) marks runs of this host whose process is gone (killed, so it
  // never said how the run ended) as abandoned; abandoned_on_open() lists them.
  static Result<std::unique_ptr<LineageStore>> open(const std::filesystem::path& dir,
                                                    const StoreOptions& options = {});

  const std::filesystem::path& dir() const { return dir_; }
  SqliteDb& db() { return *db_; }
  ObjectStore& objects() { return objects_; }
  Env& env() { return env_; }
  const std::vector<RunRecord>& abandoned_on_open() const { return abandoned_on_open_; }

  // ---- Writing -------------------------------------------------------------------------

  Status record_dataset(const DatasetRecord& dataset);

  // Records a run with status running and returns its id. Creates the model's row
  // (without parameters) when the store does not know it yet; a descendant's parent
  // must already be in the store.
  Result<std::int64_t> start_run(const ModelRecord& model, const RunStart& run);
  // Records steps' metrics of one run (a step recorded again replaces its row). Several
  // steps go in ONE transaction, so one commit (and fsync) covers them all: training
  // buffers its steps and appends them together (workbench's and cli's training session).
  Status append_metrics(std::int64_t run_id, std::span<const StepMetrics> metrics);
  Status append_metrics(std::int64_t run_id, const StepMetrics& metrics) {
    return append_metrics(run_id, std::span(&metrics, 1));
  }
  // Ends a run as finished, failed or interrupted, with an optional message (the error)
  // and, for a test run, the number of cases it judged.
  Status finish_run(std::int64_t run_id, RunStatus status, const std::string& message = "",
                    std::optional<std::int64_t> cases = std::nullopt);
  // Records which validation's parameters a keep_best training run stores: `kept` under
  // the run's hyperparameters ("kept": {step, metric, value, last_step, last_value}) and
  // `message` in words. Called before commit_model, which then marks the run finished.
  Status record_kept(std::int64_t run_id, const nlohmann::json& kept, const std::string& message);

  // Stores `parameters` as the model's complete parameter set for `model.recipe_hash`, its
  // version of that recipe, makes that version current and marks `run_id` finished:
  // objects first, then one transaction (model row, version, its parameters, run status).
  // The version records the parent's current version as the one it was made from. A
  // version is never rewritten: where the recipe has one already, `parameters` must
  // reproduce it bit for bit (then it becomes current again and only missing object files
  // are written back), else kAlreadyExists names the tensors that differ and nothing
  // changes.
  Status commit_model(std::int64_t run_id, const ModelRecord& model,
                      const std::vector<ParameterWrite>& parameters);

  // Makes the stored version of `model.name` for `model.recipe_hash` current again, and
  // records that as a finished run of kind restore: one transaction, no tensor copied.
  // Returns the run's id. Errors: kNotFound when the store holds no such version.
  Result<std::int64_t> restore_version(const ModelRecord& model);

  // Records that the spec at `spec_path` names the models of `members` (model -> recipe
  // hash) and when: the spec version whose digest (of the members, sorted) they make is
  // seen now, with every member the store holds a version of. Returns its id.
  Result<std::int64_t> record_spec_version(const std::string& spec_path,
                                           const std::map<std::string, std::string>& members);
  // Names the spec version of `members` `tag` (recording it first; replacing an earlier
  // tag of that name). A tag's spec version is kept by `scion gc` whatever --keep says.
  Status tag_spec_version(const std::string& tag, const std::string& spec_path,
                          const std::map<std::string, std::string>& members);
  // Removes a tag; kNotFound when there is none of that name.
  Status delete_tag(const std::string& tag);

  Status record_test_results(const std::vector<TestCaseResult>& results);
  // Records what each test and assertion judged under its key (TestOutcome::run set).
  Status record_test_outcomes(const std::vector<TestOutcome>& outcomes);
  Status record_assertion_violations(const std::vector<AssertionViolation>& violations);
  // Records each result in ONE transaction, stamped with the time and this scion's version.
  Status record_eval_results(const std::vector<EvalResult>& results);

  // ---- Reading -------------------------------------------------------------------------

  // name -> tensor for every stored parameter of `model`'s current version (or of its
  // version for `recipe_hash`); large tensors are mmapped.
  Result<LoadedParameters> load_parameters(const std::string& model);
  Result<LoadedParameters> load_parameters(const std::string& model,
                                           const std::string& recipe_hash);

  Result<std::vector<StoredModel>> models();  // parents before children, then by name
  Result<std::optional<StoredModel>> find_model(const std::string& name);
  Result<std::vector<StoredParameter>> parameters(const std::string& model);
  // The parameters of `model`'s version for `recipe_hash`.
  Result<std::vector<StoredParameter>> parameters(const std::string& model,
                                                  const std::string& recipe_hash);
  // Every stored version of `model`, newest first (kNotFound: no such model).
  Result<std::vector<StoredVersion>> versions(const std::string& model);
  // `model`'s version for `recipe_hash`; nullopt when the store holds none.
  Result<std::optional<StoredVersion>> find_version(const std::string& model,
                                                    const std::string& recipe_hash);
  // `model` as it was at its version for `recipe_hash`: that version's parent, recipe,
  // adaptation, architecture and tensor counts. REQUIRES: find_version() finds it.
  Result<StoredModel> model_at(const std::string& model, const std::string& recipe_hash);
  // The newest outcome recorded under `key` (whatever its run), if any.
  Result<std::optional<TestOutcome>> find_test_outcome(const TestOutcomeKey& key);
  // Every test outcome recorded by test run `run`.
  Result<std::vector<TestOutcome>> test_outcomes(std::int64_t run);
  // Spec versions, most recently seen first, with their tags and members.
  Result<std::vector<SpecVersion>> spec_versions();
  // The parameters of `model` (its current version, or its version for `recipe_hash`)
  // whose object is gone: no objects row, or no object file.
  Result<std::vector<StoredParameter>> missing_objects(const std::string& model);
  Result<std::vector<StoredParameter>> missing_objects(const std::string& model,
                                                       const std::string& recipe_hash);
  // Other models holding identical tensors (by digest): model name -> tensor count.
  Result<std::map<std::string, std::int64_t>> sharing(const std::string& model);
  // Newest first; `model` empty: every model. limit <= 0: no limit.
  Result<std::vector<RunRecord>> runs(const std::string& model, std::int64_t limit);
  Result<std::vector<StepMetrics>> run_metrics(std::int64_t run_id);
  Result<std::vector<DatasetRecord>> datasets_of(const std::string& model);
  Result<std::vector<TestCaseResult>> test_results(const std::string& model,
                                                   const std::string& model_version);
  Result<std::vector<AssertionViolation>> assertion_violations(const std::string& model,
                                                               const std::string& model_version);
  // Newest first; `model_version` empty: every version.
  Result<std::vector<EvalResult>> eval_results(const std::string& model,
                                               const std::string& model_version);

 private:
  LineageStore(Env& env, std::filesystem::path dir, std::unique_ptr<SqliteDb> db,
               const StoreOptions& options);
  Result<std::int64_t> model_id(const std::string& name);
  Result<std::int64_t> upsert_model(const ModelRecord& model);
  Result<std::int64_t> insert_version(std::int64_t model_id, std::int64_t run_id,
                                      const ModelRecord& model);
  Status insert_version_parameters(std::int64_t version_id, const std::string& model,
                                   const std::vector<ParameterWrite>& parameters,
                                   const std::vector<std::string>& digests);
  Result<LoadedParameters> load_rows(const std::string& model, Statement& rows);
  Result<std::int64_t> upsert_spec_version(const std::string& spec_path,
                                           const std::map<std::string, std::string>& members);
  Status insert_object(const std::string& digest, std::span<const std::byte> bytes);
  Result<LoadedParameter> load_object(const std::string& name, const std::string& digest);
  Status mark_abandoned_runs();

  Env& env_;
  std::filesystem::path dir_;
  std::unique_ptr<SqliteDb> db_;
  ObjectStore objects_;
  StoreOptions options_;
  std::vector<RunRecord> abandoned_on_open_;
};

// Current UTC time as ISO 8601 with milliseconds: 2026-11-22T03:04:05.678Z.
std::string utc_now();

}  // namespace scion::lineage
