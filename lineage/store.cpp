// Opening a store and writing to it. Queries are in store_queries.cpp.
#include "lineage/store.h"

#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <ctime>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "lineage/digest.h"
#include "lineage/schema.h"

namespace scion::lineage {

namespace fs = std::filesystem;

namespace {

// WAL needs shared memory between processes, which network file systems do not give.
bool on_local_disk(const fs::path& dir) {
  struct statfs info;
  if (statfs(dir.c_str(), &info) != 0) return false;
  switch (static_cast<unsigned long>(info.f_type)) {
    case 0x6969UL:      // NFS
    case 0x517BUL:      // SMB
    case 0xFE534D42UL:  // SMB2
    case 0xFF534D42UL:  // CIFS
    case 0x65735546UL:  // FUSE (sshfs and friends)
    case 0x00C36400UL:  // Ceph
    case 0x01021997UL:  // 9P
      return false;
    default:
      return true;
  }
}

std::string host_name() {
  char buffer[256] = {};
  if (gethostname(buffer, sizeof buffer - 1) != 0) return "unknown";
  return buffer;
}

// The name of the program a process runs, from its /proc/<pid>/exe link ("" when it
// cannot be read: another user's process, or no /proc).
std::string program_name(const fs::path& exe_link) {
  std::error_code ec;
  std::string name = fs::read_symlink(exe_link, ec).filename().string();
  if (ec) return "";
  const std::string deleted = " (deleted)";  // the binary was replaced while it ran
  if (name.ends_with(deleted)) name.resize(name.size() - deleted.size());
  return name;
}

// Whether process `pid` of this host may still be running a run: it exists and, where
// /proc tells, runs the same program as this process (a pid reused by another program
// does not count). Errs towards "alive": a live run must never be marked abandoned.
bool process_may_run_scion(std::int64_t pid) {
  if (pid <= 0 || pid > std::numeric_limits<pid_t>::max()) return false;
  if (pid == ::getpid()) return true;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
  const std::string theirs = program_name("/proc/" + std::to_string(pid) + "/exe");
  const std::string ours = program_name("/proc/self/exe");
  return theirs.empty() || ours.empty() || theirs == ours;
}

// A database without a schema (missing, emptied, or never created) beside object files
// has lost the record of them: a new schema would make every object look unreferenced,
// and `scion gc` would delete them all. No command creates one there.
Status check_objects_are_recorded(Env& env, const fs::path& dir, const fs::path& db_path) {
  auto listing = ObjectStore(env, dir / "objects").list();
  if (!listing.is_ok()) return listing.status();
  if (listing->digests.empty()) return Status::ok();
  return corruption("the database '" + db_path.string() + "' is missing or empty but " +
                    std::to_string(listing->digests.size()) + " objects exist in '" +
                    (dir / "objects").string() +
                    "'; restore lineage.db from a backup (scion creates no new database over "
                    "existing objects, which would then all look unreferenced)");
}

// Whether `db` has no schema yet: user_version 0 and no tables.
Result<bool> has_no_schema(SqliteDb& db) {
  auto version = db.query_int("PRAGMA user_version");
  if (!version.is_ok()) return version.status();
  auto tables = db.query_int("SELECT count(*) FROM sqlite_schema");
  if (!tables.is_ok()) return tables.status();
  return *version == 0 && *tables == 0;
}

// Creates `db_path` with the current schema, atomically: it is built under a temporary name
// and linked into place only complete, so a process killed while creating a store leaves no
// lineage.db (at worst a temporary file), never one without a schema. Of two processes
// creating one at once, one links its database and the other finds it there and uses it.
Status create_database(Env& env, const fs::path& dir, const fs::path& db_path,
                       const StoreOptions& options) {
  const fs::path temp = dir / ("lineage.db.creating-" + std::to_string(::getpid()));
  ::unlink(temp.c_str());  // left by a killed creation of an earlier process with this pid
  {
    auto db = SqliteDb::open(temp, /*create=*/true, options.busy_timeout_ms);
    if (!db.is_ok()) return db.status();
    Status built = (*db)->exec("PRAGMA journal_mode = DELETE");
    if (built.is_ok()) built = (*db)->exec("PRAGMA synchronous = FULL");
    if (built.is_ok()) built = migrate(**db);
    if (!built.is_ok()) {
      db->reset();
      ::unlink(temp.c_str());
      return built;
    }
  }
  const bool linked = ::link(temp.c_str(), db_path.c_str()) == 0;
  const int link_error = errno;
  ::unlink(temp.c_str());
  if (!linked && link_error != EEXIST)
    return io_error("cannot create the store's database '" + db_path.string() +
                    "': " + std::strerror(link_error));
  return env.sync_dir(dir);
}

Result<std::unique_ptr<SqliteDb>> open_for_writing(Env& env, const fs::path& dir,
                                                   const fs::path& db_path,
                                                   const StoreOptions& options) {
  auto db = SqliteDb::open(db_path, options.create, options.busy_timeout_ms);
  if (!db.is_ok()) return db.status();
  auto empty = has_no_schema(**db);
  if (!empty.is_ok()) return empty.status();
  if (*empty) SCION_RETURN_IF_ERROR(check_objects_are_recorded(env, dir, db_path));
  const char* journal =
      on_local_disk(dir) ? "PRAGMA journal_mode = WAL" : "PRAGMA journal_mode = DELETE";
  SCION_RETURN_IF_ERROR((*db)->exec(journal));
  // FULL: a commit is durable when it returns, also in WAL mode.
  SCION_RETURN_IF_ERROR((*db)->exec("PRAGMA synchronous = FULL"));
  SCION_RETURN_IF_ERROR(migrate(**db));
  return db;
}

// A reader never writes: not the schema of a database that has none (a store whose
// creation never finished, or an emptied lineage.db), and no migration of an older one.
Result<std::unique_ptr<SqliteDb>> open_for_reading(Env& env, const fs::path& dir,
                                                   const fs::path& db_path,
                                                   const StoreOptions& options) {
  auto db = SqliteDb::open_read_only(db_path, options.busy_timeout_ms);
  if (!db.is_ok()) return db.status();
  auto current = schema_is_current(**db);
  if (!current.is_ok()) return current.status();
  if (*current) return db;
  auto empty = has_no_schema(**db);
  if (!empty.is_ok()) return empty.status();
  if (*empty) {
    SCION_RETURN_IF_ERROR(check_objects_are_recorded(env, dir, db_path));
    // Its first write failed (e.g. on a full disk): the message must say so, not "old".
    return Status(StatusCode::kIoError,
                  "the store '" + db_path.string() + "' was never fully created (it has no " +
                      "schema); run a command that writes the store, e.g. `scion run` or " +
                      "`scion import`, once the cause (a full disk?) is fixed");
  }
  auto version = (*db)->query_int("PRAGMA user_version");
  return Status(StatusCode::kVersionMismatch,
                "the store '" + db_path.string() + "' has schema version " +
                    (version.is_ok() ? std::to_string(*version) : "?") + ", not this scion's " +
                    std::to_string(kSchemaVersion) +
                    ": an older scion wrote it, or its creation or upgrade stopped part way (a " +
                    "full disk?). Reading commands never change a store; upgrade it once with " +
                    "a command that writes it (`scion gc --dry-run` upgrades it and removes " +
                    "nothing), then read it again");
}

Result<std::int64_t> checked_byte_count(const ParameterWrite& p) {
  if (p.dtype != DType::kF32 && p.dtype != DType::kF16 && p.dtype != DType::kBF16)
    return invalid_argument("parameter '" + p.name + "' has dtype " +
                            std::string(dtype_name(p.dtype)) +
                            "; the store holds F32, F16 and BF16 parameters (convert it first)");
  std::int64_t numel = 1;
  for (std::int64_t dim : p.shape) {
    if (dim < 0 || __builtin_mul_overflow(numel, dim, &numel)) {
      return invalid_argument("parameter '" + p.name + "' has an invalid shape");
    }
  }
  std::int64_t bytes = 0;
  if (__builtin_mul_overflow(numel, static_cast<std::int64_t>(dtype_size(p.dtype)), &bytes)) {
    return invalid_argument("parameter '" + p.name + "' is too large");
  }
  return bytes;
}

}  // namespace

std::string utc_now() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const std::time_t seconds = system_clock::to_time_t(now);
  const auto millis = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[96];  // room for any int fields, so the compiler can prove no truncation
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(millis));
  return text;
}

LineageStore::LineageStore(Env& env, fs::path dir, std::unique_ptr<SqliteDb> db,
                           const StoreOptions& options)
    : env_(env), dir_(dir), db_(std::move(db)), objects_(env, dir / "objects"), options_(options) {}

Result<std::unique_ptr<LineageStore>> LineageStore::open(const fs::path& dir,
                                                         const StoreOptions& options) {
  Env& env = options.env != nullptr ? *options.env : default_env();
  const fs::path db_path = dir / "lineage.db";
  if (!env.file_exists(db_path)) {
    SCION_RETURN_IF_ERROR(check_objects_are_recorded(env, dir, db_path));
    if (!options.create || options.read_only) {
      return not_found("no scion store at '" + dir.string() +
                       "' (no lineage.db); run 'scion import' or 'scion run' to create one, "
                       "or point --store at an existing store");
    }
    SCION_RETURN_IF_ERROR(env.create_dirs(dir / "objects"));
    SCION_RETURN_IF_ERROR(create_database(env, dir, db_path, options));
  }
  auto db = options.read_only ? open_for_reading(env, dir, db_path, options)
                              : open_for_writing(env, dir, db_path, options);
  if (!db.is_ok()) return db.status();
  std::unique_ptr<LineageStore> store(new LineageStore(env, dir, std::move(*db), options));
  if (!options.read_only) SCION_RETURN_IF_ERROR(store->mark_abandoned_runs());
  return store;
}

// Runs still marked running whose process on this host is gone: killed (kill -9, the
// machine's OOM killer) before it could say how the run ended.
Status LineageStore::mark_abandoned_runs() {
  const std::string host = host_name();
  auto running = db_->prepare(
      "SELECT r.id, m.name, r.pid FROM runs r JOIN models m ON m.id = r.model_id "
      "WHERE r.status = 'running' AND r.host = ? AND r.pid IS NOT NULL");
  if (!running.is_ok()) return running.status();
  running->bind(1, std::string_view(host));
  std::vector<RunRecord> gone;
  for (;;) {
    auto row = running->step();
    if (!row.is_ok()) return row.status();
    if (!*row) break;
    if (process_may_run_scion(running->column_int(2))) continue;
    RunRecord run;
    run.id = running->column_int(0);
    run.model = running->column_text(1);
    run.pid = running->column_int(2);
    run.host = host;
    run.status = RunStatus::kAbandoned;
    run.message = "abandoned: its process (pid " + std::to_string(*run.pid) + " on " + host +
                  ") ended without recording how the run ended (killed?); noticed by a later "
                  "command";
    gone.push_back(std::move(run));
  }
  auto mark = db_->prepare(
      "UPDATE runs SET status = 'abandoned', finished_at = ?, message = ? "
      "WHERE id = ? AND status = 'running'");
  if (!mark.is_ok()) return mark.status();
  for (RunRecord& run : gone) {
    mark->reset();
    SCION_RETURN_IF_ERROR(mark->bind(1, std::string_view(utc_now()))
                              .bind(2, std::string_view(run.message))
                              .bind(3, run.id)
                              .run());
    if (sqlite3_changes(db_->handle()) == 1) abandoned_on_open_.push_back(std::move(run));
  }
  return Status::ok();
}

Result<std::int64_t> LineageStore::model_id(const std::string& name) {
  auto stmt = db_->prepare("SELECT id FROM models WHERE name = ?");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, std::string_view(name));
  auto row = stmt->step();
  if (!row.is_ok()) return row.status();
  if (!*row) {
    return not_found("model '" + name + "' is not in the store '" + dir_.string() +
                     "'; train or import it first (scion run / scion import)");
  }
  return stmt->column_int(0);
}

// REQUIRES: a transaction is open. Inserts or updates the model's row, but not its
// recipe hash: that belongs to the stored parameters and changes only in commit_model.
Result<std::int64_t> LineageStore::upsert_model(const ModelRecord& model) {
  std::optional<std::int64_t> parent;
  if (!model.parent.empty()) {
    auto id = model_id(model.parent);
    if (!id.is_ok()) {
      return not_found("cannot record model '" + model.name + "': its parent '" + model.parent +
                       "' is not in the store; train or import '" + model.parent + "' first");
    }
    parent = *id;
  }
  auto stmt = db_->prepare(
      "INSERT INTO models (name, parent_id, adaptation, architecture, created_at, updated_at) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?5) "
      "ON CONFLICT (name) DO UPDATE SET parent_id = ?2, adaptation = ?3, architecture = ?4, "
      "updated_at = ?5");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, std::string_view(model.name));
  if (parent) {
    stmt->bind(2, *parent);
  } else {
    stmt->bind_null(2);
  }
  stmt->bind(3, std::string_view(model.adaptation.dump()))
      .bind(4, std::string_view(model.architecture.dump()))
      .bind(5, std::string_view(utc_now()));
  SCION_RETURN_IF_ERROR(stmt->run());
  return model_id(model.name);
}

Status LineageStore::record_dataset(const DatasetRecord& dataset) {
  if (!is_digest(dataset.digest)) {
    return invalid_argument("dataset '" + dataset.path + "' has no valid SHA-256 digest");
  }
  auto stmt = db_->prepare(
      "INSERT INTO datasets (digest, path, rows, format) VALUES (?, ?, ?, ?) "
      "ON CONFLICT (digest) DO UPDATE SET path = excluded.path, rows = excluded.rows, "
      "format = excluded.format");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, std::string_view(dataset.digest))
      .bind(2, std::string_view(dataset.path))
      .bind(3, dataset.rows)
      .bind(4, std::string_view(dataset.format));
  return stmt->run();
}

Result<std::int64_t> LineageStore::start_run(const ModelRecord& model, const RunStart& run) {
  auto tx = Transaction::begin(*db_);
  if (!tx.is_ok()) return tx.status();
  auto id = upsert_model(model);
  if (!id.is_ok()) return id.status();
  auto stmt = db_->prepare(
      "INSERT INTO runs (model_id, kind, status, recipe_hash, dataset_digest, started_at, seed, "
      "host, scion_version, hyperparameters, pid) VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, "
      "?)");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, *id)
      .bind(2, run_kind_name(run.kind))
      .bind(3, std::string_view(run.recipe_hash))
      .bind_optional(4, run.dataset_digest)
      .bind(5, std::string_view(run.started_at.empty() ? utc_now() : run.started_at))
      .bind(6, static_cast<std::int64_t>(run.seed))
      .bind(7, std::string_view(host_name()))
      .bind(8, SCION_VERSION)
      .bind(9, std::string_view(run.hyperparameters.dump()))
      .bind(10, static_cast<std::int64_t>(::getpid()));
  Status inserted = stmt->run();
  if (!inserted.is_ok() && run.dataset_digest) {
    return not_found("run of '" + model.name + "' refers to dataset " + *run.dataset_digest +
                     ", which is not recorded; call record_dataset first (" + inserted.message() +
                     ")");
  }
  SCION_RETURN_IF_ERROR(inserted);
  const std::int64_t run_id = db_->last_insert_rowid();
  SCION_RETURN_IF_ERROR((*tx)->commit());
  return run_id;
}

Status LineageStore::append_metrics(std::int64_t run_id, std::span<const StepMetrics> metrics) {
  if (metrics.empty()) return Status::ok();
  auto tx = Transaction::begin(*db_);
  if (!tx.is_ok()) return tx.status();
  auto stmt = db_->prepare(
      "INSERT INTO run_metrics (run_id, step, loss, lr, validation, recorded_at) "
      "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, step) DO UPDATE SET loss = excluded.loss, "
      "lr = excluded.lr, validation = excluded.validation, recorded_at = excluded.recorded_at");
  if (!stmt.is_ok()) return stmt.status();
  for (const StepMetrics& step : metrics) {
    nlohmann::json validation = nlohmann::json::object();
    for (const auto& [name, value] : step.validation) validation[name] = value;
    const std::string validation_text = validation.dump();
    stmt->reset();
    stmt->bind(1, run_id).bind(2, step.step);
    if (step.loss) {
      stmt->bind(3, *step.loss);
    } else {
      stmt->bind_null(3);
    }
    if (step.lr) {
      stmt->bind(4, *step.lr);
    } else {
      stmt->bind_null(4);
    }
    stmt->bind(5, std::string_view(validation_text));
    if (step.recorded_at.empty()) {
      stmt->bind_null(6);
    } else {
      stmt->bind(6, std::string_view(step.recorded_at));
    }
    Status status = stmt->run();
    if (!status.is_ok() && status.code() == StatusCode::kInternal) {
      return not_found("cannot append metrics: run " + std::to_string(run_id) +
                       " is not in the store");
    }
    SCION_RETURN_IF_ERROR(status);
  }
  return (*tx)->commit();
}

Status LineageStore::finish_run(std::int64_t run_id, RunStatus status, const std::string& message,
                                std::optional<std::int64_t> cases) {
  auto stmt = db_->prepare(
      "UPDATE runs SET status = ?, finished_at = ?, message = ?, cases = ? WHERE id = ?");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, run_status_name(status))
      .bind(2, std::string_view(utc_now()))
      .bind(3, std::string_view(message))
      .bind_optional(4, cases)
      .bind(5, run_id);
  SCION_RETURN_IF_ERROR(stmt->run());
  if (sqlite3_changes(db_->handle()) != 1) {
    return not_found("run " + std::to_string(run_id) + " is not in the store");
  }
  return Status::ok();
}

Status LineageStore::record_kept(std::int64_t run_id, const nlohmann::json& kept,
                                 const std::string& message) {
  auto stmt = db_->prepare(
      "UPDATE runs SET hyperparameters = json_set(hyperparameters, '$.kept', json(?)), "
      "message = ? WHERE id = ?");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, std::string_view(kept.dump())).bind(2, std::string_view(message)).bind(3, run_id);
  SCION_RETURN_IF_ERROR(stmt->run());
  if (sqlite3_changes(db_->handle()) != 1)
    return not_found("run " + std::to_string(run_id) + " is not in the store");
  return Status::ok();
}

// REQUIRES: a transaction is open. Adds the object's row; for a file object, makes sure
// the file is (still) there under the write lock, so a concurrent `scion gc` cannot have
// removed it between writing and referencing.
Status LineageStore::insert_object(const std::string& digest, std::span<const std::byte> bytes) {
  const bool is_inline = bytes.size() < options_.inline_limit;
  if (!is_inline) SCION_RETURN_IF_ERROR(objects_.put(digest, bytes));
  auto stmt = db_->prepare(
      "INSERT INTO objects (digest, size, inline_bytes) VALUES (?, ?, ?) "
      "ON CONFLICT (digest) DO NOTHING");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, std::string_view(digest)).bind(2, static_cast<std::int64_t>(bytes.size()));
  if (is_inline) {
    stmt->bind_blob(3, bytes);
  } else {
    stmt->bind_null(3);
  }
  return stmt->run();
}

namespace {

// A model's stored version of one recipe: its id, the run that made it, its parameters.
struct RecipeVersion {
  std::int64_t id = 0;
  std::optional<std::int64_t> run;
  std::map<std::string, std::string> digests;  // parameter name -> digest
};

Result<std::optional<RecipeVersion>> recipe_version(SqliteDb& db, std::int64_t model_id,
                                                     const std::string& recipe_hash) {
  auto version = db.prepare("SELECT id, run_id FROM versions WHERE model_id = ? AND recipe_hash = ?");
  if (!version.is_ok()) return version.status();
  auto row = version->bind(1, model_id).bind(2, std::string_view(recipe_hash)).step();
  if (!row.is_ok()) return row.status();
  if (!*row) return std::optional<RecipeVersion>();
  RecipeVersion out{.id = version->column_int(0)};
  if (!version->column_is_null(1)) out.run = version->column_int(1);
  auto parameters = db.prepare("SELECT name, digest FROM version_parameters WHERE version_id = ?");
  if (!parameters.is_ok()) return parameters.status();
  parameters->bind(1, out.id);
  SCION_RETURN_IF_ERROR(parameters->for_each_row(
      [&](const Statement& p) { out.digests[p.column_text(0)] = p.column_text(1); }));
  return std::optional<RecipeVersion>(std::move(out));
}

// ok when `written` (name -> digest) is `stored`'s parameter set exactly; else why a stored
// version is not rewritten, naming the tensors that differ and how to keep both.
Status check_reproduces(const std::string& model, const RecipeVersion& stored,
                        const std::map<std::string, std::string>& written) {
  if (written == stored.digests) return Status::ok();
  std::vector<std::string> differ;
  for (const auto& [name, digest] : written) {
    auto it = stored.digests.find(name);
    if (it == stored.digests.end() || it->second != digest) differ.push_back(name);
  }
  for (const auto& [name, digest] : stored.digests)
    if (!written.count(name)) differ.push_back(name);
  std::string names;
  for (std::size_t i = 0; i < differ.size() && i < 3; ++i)
    names += (i ? ", '" : "'") + differ[i] + "'";
  if (differ.size() > 3) names += ", ...";
  return Status(
      StatusCode::kAlreadyExists,
      "'" + model + "' already has a stored version of this recipe" +
          (stored.run ? " (made by run " + std::to_string(*stored.run) + ")" : "") +
          " with other parameters: " + std::to_string(differ.size()) + " of " +
          std::to_string(std::max(written.size(), stored.digests.size())) + " tensors differ (" +
          names + "). A stored version is never rewritten (its predictions, tests and "
          "descendants refer to it); nothing was stored. To keep these parameters, give them a "
          "recipe of their own: change a hyperparameter or the seed of a trained model, or "
          "declare `import: FILE` for an imported one, so that its recipe names the checkpoint");
}

}  // namespace

Status LineageStore::commit_model(std::int64_t run_id, const ModelRecord& model,
                                  const std::vector<ParameterWrite>& parameters) {
  // 1. Validate and write the large objects, outside the transaction: other processes
  //    can keep using the store meanwhile, and a crash here leaves only unreferenced files.
  std::vector<std::string> digests;
  std::map<std::string, std::string> written;
  for (const ParameterWrite& p : parameters) {
    auto expected = checked_byte_count(p);
    if (!expected.is_ok()) return expected.status();
    if (*expected != static_cast<std::int64_t>(p.bytes.size())) {
      return invalid_argument("parameter '" + p.name + "' of model '" + model.name + "' has " +
                              std::to_string(p.bytes.size()) + " bytes; its shape and dtype need " +
                              std::to_string(*expected));
    }
    digests.push_back(is_digest(p.digest) ? p.digest : sha256_hex(p.bytes));
    if (!written.emplace(p.name, digests.back()).second) {
      return invalid_argument("parameter '" + p.name + "' appears twice for model '" + model.name +
                              "'");
    }
    if (p.bytes.size() >= options_.inline_limit)
      SCION_RETURN_IF_ERROR(objects_.put(digests.back(), p.bytes));
  }

  // 2. One transaction refers to them.
  auto tx = Transaction::begin(*db_);
  if (!tx.is_ok()) return tx.status();
  auto id = upsert_model(model);
  if (!id.is_ok()) return id.status();
  auto stored = recipe_version(*db_, *id, model.recipe_hash);
  if (!stored.is_ok()) return stored.status();
  std::int64_t version = 0;
  if (stored->has_value()) {
    SCION_RETURN_IF_ERROR(check_reproduces(model.name, **stored, written));
    // Reproduced: the version stays as it is; object files a damaged store lost come back.
    for (std::size_t i = 0; i < parameters.size(); ++i)
      SCION_RETURN_IF_ERROR(insert_object(digests[i], parameters[i].bytes));
    version = (*stored)->id;
  } else {
    auto inserted = insert_version(*id, run_id, model);
    if (!inserted.is_ok()) return inserted.status();
    version = *inserted;
    SCION_RETURN_IF_ERROR(insert_version_parameters(version, model.name, parameters, digests));
  }
  auto current = db_->prepare("UPDATE models SET recipe_hash = ?, version_id = ? WHERE id = ?");
  if (!current.is_ok()) return current.status();
  SCION_RETURN_IF_ERROR(
      current->bind(1, std::string_view(model.recipe_hash)).bind(2, version).bind(3, *id).run());
  auto run = db_->prepare(
      "UPDATE runs SET status = 'finished', finished_at = ?, recipe_hash = ? "
      "WHERE id = ? AND model_id = ?");
  if (!run.is_ok()) return run.status();
  SCION_RETURN_IF_ERROR(run->bind(1, std::string_view(utc_now()))
                            .bind(2, std::string_view(model.recipe_hash))
                            .bind(3, run_id)
                            .bind(4, *id)
                            .run());
  if (sqlite3_changes(db_->handle()) != 1) {
    return not_found("run " + std::to_string(run_id) + " of model '" + model.name +
                     "' is not in the store; start it with start_run first");
  }
  return (*tx)->commit();
}

// REQUIRES: a transaction is open.
Status LineageStore::insert_version_parameters(std::int64_t version_id, const std::string& model,
                                               const std::vector<ParameterWrite>& parameters,
                                               const std::vector<std::string>& digests) {
  auto insert = db_->prepare(
      "INSERT INTO version_parameters (version_id, name, digest, dtype, shape, trainable, "
      "introduced_by) VALUES (?, ?, ?, ?, ?, ?, ?)");
  if (!insert.is_ok()) return insert.status();
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const ParameterWrite& p = parameters[i];
    SCION_RETURN_IF_ERROR(insert_object(digests[i], p.bytes));
    insert->reset();
    insert->bind(1, version_id)
        .bind(2, std::string_view(p.name))
        .bind(3, std::string_view(digests[i]))
        .bind(4, dtype_name(p.dtype))
        .bind(5, std::string_view(nlohmann::json(p.shape).dump()))
        .bind(6, static_cast<std::int64_t>(p.trainable))
        .bind(7, std::string_view(p.introduced_by.empty() ? model : p.introduced_by));
    SCION_RETURN_IF_ERROR(insert->run());
  }
  return Status::ok();
}

// REQUIRES: a transaction is open, and the model has no version of `model.recipe_hash`.
// The version of `model.recipe_hash` made by `run_id`, from the parent's current version.
Result<std::int64_t> LineageStore::insert_version(std::int64_t model_id, std::int64_t run_id,
                                                  const ModelRecord& model) {
  auto stmt = db_->prepare(
      "INSERT INTO versions (model_id, recipe_hash, parent_version_id, run_id, data_digests, "
      "adaptation, architecture, created_at) VALUES (?1, ?2, (SELECT p.version_id FROM models c "
      "JOIN models p ON p.id = c.parent_id WHERE c.id = ?1), ?3, ?4, ?5, ?6, ?7)");
  if (!stmt.is_ok()) return stmt.status();
  SCION_RETURN_IF_ERROR(stmt->bind(1, model_id)
                            .bind(2, std::string_view(model.recipe_hash))
                            .bind(3, run_id)
                            .bind(4, std::string_view(nlohmann::json(model.data_digests).dump()))
                            .bind(5, std::string_view(model.adaptation.dump()))
                            .bind(6, std::string_view(model.architecture.dump()))
                            .bind(7, std::string_view(utc_now()))
                            .run());
  return db_->last_insert_rowid();
}

Result<std::int64_t> LineageStore::restore_version(const ModelRecord& model) {
  auto tx = Transaction::begin(*db_);
  if (!tx.is_ok()) return tx.status();
  auto id = model_id(model.name);
  if (!id.is_ok()) return id.status();
  auto version = db_->prepare(
      "SELECT id, run_id, adaptation, architecture FROM versions "
      "WHERE model_id = ? AND recipe_hash = ?");
  if (!version.is_ok()) return version.status();
  version->bind(1, *id).bind(2, std::string_view(model.recipe_hash));
  auto row = version->step();
  if (!row.is_ok()) return row.status();
  if (!*row)
    return not_found("the store holds no version of '" + model.name + "' for recipe " +
                     model.recipe_hash.substr(0, 12) + "; train it with `scion run`");
  const std::int64_t version_id = version->column_int(0);
  nlohmann::json restored = nlohmann::json::object();
  if (!version->column_is_null(1)) restored["restored_run"] = version->column_int(1);
  const std::string adaptation = version->column_text(2), architecture = version->column_text(3);
  const std::string now = utc_now();
  auto run = db_->prepare(
      "INSERT INTO runs (model_id, kind, status, recipe_hash, started_at, finished_at, seed, "
      "host, scion_version, hyperparameters, pid) VALUES (?, 'restore', 'finished', ?, ?, ?, 0, "
      "?, ?, ?, ?)");
  if (!run.is_ok()) return run.status();
  SCION_RETURN_IF_ERROR(run->bind(1, *id)
                            .bind(2, std::string_view(model.recipe_hash))
                            .bind(3, std::string_view(now))
                            .bind(4, std::string_view(now))
                            .bind(5, std::string_view(host_name()))
                            .bind(6, SCION_VERSION)
                            .bind(7, std::string_view(restored.dump()))
                            .bind(8, static_cast<std::int64_t>(::getpid()))
                            .run());
  const std::int64_t run_id = db_->last_insert_rowid();
  auto move = db_->prepare(
      "UPDATE models SET recipe_hash = ?, version_id = ?, adaptation = ?, architecture = ?, "
      "updated_at = ? WHERE id = ?");
  if (!move.is_ok()) return move.status();
  SCION_RETURN_IF_ERROR(move->bind(1, std::string_view(model.recipe_hash))
                            .bind(2, version_id)
                            .bind(3, std::string_view(adaptation))
                            .bind(4, std::string_view(architecture))
                            .bind(5, std::string_view(now))
                            .bind(6, *id)
                            .run());
  SCION_RETURN_IF_ERROR((*tx)->commit());
  return run_id;
}

Status LineageStore::record_test_results(const std::vector<TestCaseResult>& results) {
  auto tx = Transaction::begin(*db_);
  if (!tx.is_ok()) return tx.status();
  auto stmt = db_->prepare(
      "INSERT INTO test_results (model_id, model_version, run_id, test, case_index, input, "
      "expected, output, passed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!stmt.is_ok()) return stmt.status();
  std::map<std::string, std::int64_t> ids;
  for (const TestCaseResult& r : results) {
    if (!ids.count(r.model)) {
      auto id = model_id(r.model);
      if (!id.is_ok()) return id.status();
      ids[r.model] = *id;
    }
    stmt->reset();
    stmt->bind(1, ids[r.model]).bind(2, std::string_view(r.model_version));
    if (r.run_id) {
      stmt->bind(3, *r.run_id);
    } else {
      stmt->bind_null(3);
    }
    stmt->bind(4, std::string_view(r.test))
        .bind(5, r.case_index)
        .bind(6, std::string_view(r.input))
        .bind(7, std::string_view(r.expected))
        .bind(8, std::string_view(r.output))
        .bind(9, static_cast<std::int64_t>(r.passed));
    SCION_RETURN_IF_ERROR(stmt->run());
  }
  return (*tx)->commit();
}

Status LineageStore::record_assertion_violations(
    const std::vector<AssertionViolation>& violations) {
  auto tx = Transaction::begin(*db_);
  if (!tx.is_ok()) return tx.status();
  auto stmt = db_->prepare(
      "INSERT INTO assertion_violations (model_id, model_version, run_id, assertion, input, "
      "detail) VALUES (?, ?, ?, ?, ?, ?)");
  if (!stmt.is_ok()) return stmt.status();
  for (const AssertionViolation& v : violations) {
    auto id = model_id(v.model);
    if (!id.is_ok()) return id.status();
    stmt->reset();
    stmt->bind(1, *id).bind(2, std::string_view(v.model_version));
    if (v.run_id) {
      stmt->bind(3, *v.run_id);
    } else {
      stmt->bind_null(3);
    }
    stmt->bind(4, std::string_view(v.assertion))
        .bind(5, std::string_view(v.input))
        .bind(6, std::string_view(v.detail.dump()));
    SCION_RETURN_IF_ERROR(stmt->run());
  }
  return (*tx)->commit();
}

Status LineageStore::record_eval_results(const std::vector<EvalResult>& results) {
  auto tx = Transaction::begin(*db_);
  if (!tx.is_ok()) return tx.status();
  auto stmt = db_->prepare(
      "INSERT INTO eval_results (model_id, model_version, dataset, dataset_digest, rows, kind, "
      "metrics, evaluated_at, scion_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!stmt.is_ok()) return stmt.status();
  const std::string now = utc_now();
  for (const EvalResult& r : results) {
    auto id = model_id(r.model);
    if (!id.is_ok()) return id.status();
    stmt->reset();
    stmt->bind(1, *id)
        .bind(2, std::string_view(r.model_version))
        .bind(3, std::string_view(r.dataset))
        .bind(4, std::string_view(r.dataset_digest))
        .bind(5, r.rows)
        .bind(6, std::string_view(r.kind))
        .bind(7, std::string_view(r.metrics.dump()))
        .bind(8, std::string_view(now))
        .bind(9, SCION_VERSION);
    SCION_RETURN_IF_ERROR(stmt->run());
  }
  return (*tx)->commit();
}

}  // namespace scion::lineage
