// The records the lineage store keeps, as plain values: models, parameters, datasets,
// runs and their metrics, test-case results and assertion violations. docs/store.md
// maps each to its table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lineage/dtype.h"

namespace scion::lineage {

// A model as the runtime describes it when it records a run or its parameters.
struct ModelRecord {
  std::string name;
  std::string parent;       // empty for a base
  std::string recipe_hash;  // the spec's recipe hash for the parameters being written
  nlohmann::json adaptation = nlohmann::json::object();    // method(s) and their parameters
  nlohmann::json architecture = nlohmann::json::object();  // the base's architecture
  std::vector<std::string> data_digests;  // SHA-256 of each training data file it read
};

// One parameter tensor to store. `bytes` is borrowed for the duration of the call.
struct ParameterWrite {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<std::int64_t> shape;
  std::span<const std::byte> bytes;
  bool trainable = false;
  std::string introduced_by;
  // SHA-256 of `bytes` when the caller already knows it (a frozen tensor from
  // load_parameters, which verified it): saves rehashing a trunk for every descendant.
  // Empty: the store computes it. A wrong digest is damage that `scion fsck` reports.
  std::string digest;
};

// One parameter tensor read back. `bytes` stays valid while `keepalive` (an mmap of the
// object file, or a copy of an inline object) is held; copies of this struct share it.
struct LoadedParameter {
  DType dtype = DType::kF32;
  std::vector<std::int64_t> shape;
  std::span<const std::byte> bytes;
  std::shared_ptr<const void> keepalive;
  std::string digest;
  bool trainable = false;
  std::string introduced_by;
};
using LoadedParameters = std::map<std::string, LoadedParameter>;

struct DatasetRecord {
  std::string digest;  // SHA-256 of the file's bytes
  std::string path;
  std::int64_t rows = 0;
  std::string format;  // jsonl | csv | tsv | text
};

// kRestore: a stored version made current again (its recipe came back), no training.
enum class RunKind { kTrain, kAdapt, kTest, kImport, kRestore };
// kDiverged: training stopped on a non-finite loss or parameter; kAbandoned: the run's
// process ended without saying how (killed), noticed by a later writer.
enum class RunStatus { kRunning, kFinished, kFailed, kInterrupted, kDiverged, kAbandoned };
const char* run_kind_name(RunKind kind);
const char* run_status_name(RunStatus status);
std::optional<RunKind> parse_run_kind(std::string_view name);
std::optional<RunStatus> parse_run_status(std::string_view name);

struct RunStart {
  RunKind kind = RunKind::kTrain;
  std::string recipe_hash;
  std::optional<std::string> dataset_digest;  // must be recorded with record_dataset first
  std::uint64_t seed = 0;
  nlohmann::json hyperparameters = nlohmann::json::object();
  std::string started_at;  // ISO 8601 UTC; empty: now (a test run passes when it began)
};

struct StepMetrics {
  std::int64_t step = 0;
  std::optional<double> loss;
  std::optional<double> lr;
  std::map<std::string, double> validation;  // e.g. val_loss, val_accuracy
  std::string recorded_at;                   // ISO 8601 UTC when the step ended; empty: not known
};

struct TestCaseResult {
  std::string model;
  std::string model_version;  // recipe hash of the tested parameters
  std::optional<std::int64_t> run_id;
  std::string test;
  std::int64_t case_index = 0;
  std::string input;
  std::string expected;
  std::string output;
  bool passed = false;
};

struct AssertionViolation {
  std::string model;
  std::string model_version;
  std::optional<std::int64_t> run_id;
  std::string assertion;
  std::string input;
  nlohmann::json detail = nlohmann::json::object();
};

// One model version's metrics on one dataset (`scion eval`). `metrics` is the document
// docs/json.md describes under `scion eval` (accuracy, macro_f1, per_class, confusion for a
// classifier; perplexity, tokens for a language model).
struct EvalResult {
  std::string model;
  std::string model_version;  // recipe hash of the evaluated parameters
  std::string dataset;        // the spec's dataset name, or the file as given
  std::string dataset_digest;
  std::int64_t rows = 0;
  std::string kind;  // "classifier" | "language model"
  nlohmann::json metrics = nlohmann::json::object();
  std::string evaluated_at;  // ISO 8601 UTC; set by the store when recorded
  std::string scion_version;
};

// ---- What the queries return ---------------------------------------------------------------

struct StoredModel {
  std::string name;
  std::string parent;                      // empty for a base
  std::optional<std::string> recipe_hash;  // nullopt: no parameters stored yet
  nlohmann::json adaptation;
  nlohmann::json architecture;
  std::string created_at, updated_at;   // ISO 8601 UTC
  std::int64_t parameter_count = 0;     // tensors
  std::int64_t own_count = 0;           // tensors introduced by this model
  std::int64_t shared_with_parent = 0;  // tensors identical (name and digest) to the parent's
};

struct StoredParameter {
  std::string name;
  std::string digest;
  DType dtype = DType::kF32;
  std::vector<std::int64_t> shape;
  bool trainable = false;
  std::string introduced_by;
  std::int64_t size = 0;  // bytes
};

struct RunRecord {
  std::int64_t id = 0;
  std::string model;
  RunKind kind = RunKind::kTrain;
  RunStatus status = RunStatus::kRunning;
  std::string recipe_hash;
  std::optional<std::string> dataset_digest;
  std::string started_at;
  std::optional<std::string> finished_at;
  double duration_s = 0;  // to finished_at, or to now while running
  std::int64_t seed = 0;
  std::string host;
  std::optional<std::int64_t> pid;  // the process that ran it on `host`; nullopt before schema 2
  std::string scion_version;
  nlohmann::json hyperparameters;
  std::string message;
  std::int64_t steps = 0;             // the last step recorded: the training step the run
                                      // reached (a resumed run counts from its start)
  std::optional<double> final_loss;   // loss at the last recorded step
  std::optional<std::int64_t> cases;  // a test run: the cases it judged
};

// One version of a model: its parameters for one recipe hash, kept after the model moves
// on, so that a recipe that comes back is restored instead of trained.
struct StoredVersion {
  std::int64_t id = 0;
  std::string model;
  std::string recipe_hash;
  std::string parent;                             // the parent model; empty for a base
  std::optional<std::string> parent_recipe_hash;  // the parent's version it was made from
  std::optional<std::int64_t> run;                // the train, adapt or import run that made it
  std::vector<std::string> data_digests;          // its training data, by content
  nlohmann::json adaptation, architecture;
  std::string created_at;
  bool current = false;              // the model's current version
  std::int64_t parameter_count = 0;  // tensors
};

// What a test or assertion judged on one model version, keyed for reuse: the same key
// means the same result, so `scion test` reads it instead of running it again.
struct TestOutcomeKey {
  std::string kind;  // "test" | "assertion"
  std::string name;
  std::string model;
  std::string model_version;
  std::string definition_digest;
  nlohmann::json lexicon_digests = nlohmann::json::object();  // lexicon name -> digest
  std::int64_t semantics_version = 0;
};
struct TestOutcome {
  TestOutcomeKey key;
  std::int64_t run = 0;                // the test run that judged it
  std::int64_t cases = 0, failed = 0;  // an assertion: inputs watched, violations
  std::int64_t inherited = 0;          // passing cases whose failure the parent shares
};

// A spec version: the models a spec named, each at the recipe it asked for, as recorded by
// the commands that store models. `scion gc --keep N` keeps the versions of the N most
// recently seen; a tag keeps its spec version's for good.
struct SpecVersion {
  std::int64_t id = 0;
  std::string digest;
  std::string spec_path;
  std::string first_seen, last_seen;
  std::vector<std::string> tags;
  std::map<std::string, std::string> members;  // model -> recipe hash, where stored
};

}  // namespace scion::lineage
