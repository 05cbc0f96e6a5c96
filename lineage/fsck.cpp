#include "lineage/fsck.h"

#include <sys/stat.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <optional>
#include <set>

#include "lineage/digest.h"
#include "lineage/schema.h"
#include "lineage/utc_time.h"

namespace scion::lineage {

namespace {

std::string short_digest(const std::string& digest) { return digest.substr(0, 12); }

Status check_sqlite(SqliteDb& db, FsckReport& report) {
  auto integrity = db.prepare("PRAGMA integrity_check");
  if (!integrity.is_ok()) return integrity.status();
  for (;;) {
    auto row = integrity->step();
    if (!row.is_ok()) return row.status();
    if (!*row) break;
    if (integrity->column_text(0) != "ok") {
      report.problems.push_back(
          {"lineage.db", "SQLite integrity check: " + integrity->column_text(0) +
                             "; restore lineage.db from a backup"});
    }
  }
  auto foreign = db.prepare("PRAGMA foreign_key_check");
  if (!foreign.is_ok()) return foreign.status();
  for (;;) {
    auto row = foreign->step();
    if (!row.is_ok()) return row.status();
    if (!*row) break;
    report.problems.push_back(
        {"table " + foreign->column_text(0) + " row " + foreign->column_text(1),
         "refers to a missing row of table " + foreign->column_text(2)});
  }
  return Status::ok();
}

Status check_objects(LineageStore& store, FsckReport& report, std::set<std::string>& file_rows) {
  auto stmt = store.db().prepare(
      "SELECT digest, size, inline_bytes IS NOT NULL, inline_bytes FROM objects");
  if (!stmt.is_ok()) return stmt.status();
  for (;;) {
    auto row = stmt->step();
    if (!row.is_ok()) return row.status();
    if (!*row) break;
    const std::string digest = stmt->column_text(0);
    const std::int64_t size = stmt->column_int(1);
    const std::string subject = "object " + short_digest(digest);
    ++report.objects_checked;
    std::span<const std::byte> bytes;
    std::unique_ptr<MappedRegion> region;
    if (stmt->column_int(2) != 0) {
      bytes = stmt->column_blob(3);
    } else {
      file_rows.insert(digest);
      auto mapped = store.objects().map(digest);
      if (!mapped.is_ok()) {
        report.problems.push_back(
            {subject, "its file " + store.objects().path_for(digest).string() +
                          " is missing or unreadable (" + mapped.status().message() +
                          "); the models using it must be retrained or re-imported"});
        continue;
      }
      region = std::move(*mapped);
      bytes = region->bytes();
    }
    report.bytes_checked += static_cast<std::int64_t>(bytes.size());
    const std::string where =
        region ? " (" + store.objects().path_for(digest).string() + ")" : " (inline)";
    if (static_cast<std::int64_t>(bytes.size()) != size) {
      report.problems.push_back({subject, "has " + std::to_string(bytes.size()) +
                                              " bytes, recorded " + std::to_string(size) + where});
    } else if (sha256_hex(bytes) != digest) {
      report.problems.push_back(
          {subject, "content does not match its SHA-256 digest" + where +
                        "; the models using it must be retrained or re-imported"});
    }
  }
  return Status::ok();
}

Status check_parameters(LineageStore& store, FsckReport& report) {
  // Every version's parameters, the current ones and the older ones a revert restores.
  auto stmt = store.db().prepare(
      "SELECT m.name, p.name, p.digest, p.dtype, p.shape, o.size, v.recipe_hash, "
      "coalesce(m.version_id = v.id, 0) FROM version_parameters p "
      "JOIN versions v ON v.id = p.version_id JOIN models m ON m.id = v.model_id "
      "LEFT JOIN objects o ON o.digest = p.digest");
  if (!stmt.is_ok()) return stmt.status();
  for (;;) {
    auto row = stmt->step();
    if (!row.is_ok()) return row.status();
    if (!*row) break;
    ++report.parameters_checked;
    // Built with append, not `"@" + ...`: GCC 12 at -O3 reports a false -Wrestrict on the latter.
    std::string version;
    if (stmt->column_int(7) == 0) version.append("@").append(short_digest(stmt->column_text(6)));
    const std::string subject =
        "model '" + stmt->column_text(0) + version + "' parameter '" + stmt->column_text(1) + "'";
    if (stmt->column_is_null(5)) {
      report.problems.push_back({subject, "refers to object " + short_digest(stmt->column_text(2)) +
                                              ", which the store does not have"});
      continue;
    }
    nlohmann::json shape = nlohmann::json::parse(stmt->column_text(4), nullptr, false);
    std::uint64_t numel = 1;
    bool valid = shape.is_array();
    for (const nlohmann::json& dim : shape) {
      valid = valid && dim.is_number_unsigned() &&
              !__builtin_mul_overflow(numel, dim.get<std::uint64_t>(), &numel);
    }
    auto dtype = parse_dtype(stmt->column_text(3));
    if (!valid || !dtype) {
      report.problems.push_back({subject, "has an invalid shape or dtype record"});
    } else if (numel * dtype_size(*dtype) != static_cast<std::uint64_t>(stmt->column_int(5))) {
      report.problems.push_back({subject, "shape " + shape.dump() + " " + stmt->column_text(3) +
                                              " does not fit its object of " +
                                              std::to_string(stmt->column_int(5)) + " bytes"});
    }
  }
  return Status::ok();
}

// When the store's runs ran: an object file no row records was written by one of them
// when its time lies in a run's span (a write the run never committed: interrupted,
// failed, killed). A file no run explains is an orphan: lineage.db has lost its record
// of it (a backup restored over newer work), and only --force-orphans removes it.
class RunSpans {
 public:
  static Result<RunSpans> read(LineageStore& store) {
    auto stmt = store.db().prepare("SELECT started_at, finished_at FROM runs");
    if (!stmt.is_ok()) return stmt.status();
    RunSpans spans;
    const std::time_t now = std::time(nullptr);
    SCION_RETURN_IF_ERROR(stmt->for_each_row([&](const Statement& row) {
      const auto start = parse_utc(row.column_text(0));
      const auto end =
          row.column_is_null(1) ? std::optional<std::time_t>(now) : parse_utc(row.column_text(1));
      if (start && end) spans.spans_.emplace_back(*start, std::max(*start, *end));
    }));
    return spans;
  }

  // Whether a file last written at `mtime` was written during a run (a second of slack
  // each side: stored times have milliseconds, file times may be rounded).
  bool explain(std::time_t mtime) const {
    return std::any_of(spans_.begin(), spans_.end(), [&](const auto& span) {
      return mtime >= span.first - 1 && mtime <= span.second + 1;
    });
  }

 private:
  std::vector<std::pair<std::time_t, std::time_t>> spans_;
};

bool explained_by_a_run(const RunSpans& runs, const std::filesystem::path& file) {
  struct stat st;
  return ::stat(file.c_str(), &st) == 0 && runs.explain(st.st_mtime);
}

Status check_files(LineageStore& store, FsckReport& report,
                   const std::set<std::string>& file_rows) {
  auto listing = store.objects().list();
  if (!listing.is_ok()) return listing.status();
  auto runs = RunSpans::read(store);
  if (!runs.is_ok()) return runs.status();
  for (const std::string& digest : listing->digests) {
    if (file_rows.count(digest)) continue;
    const std::filesystem::path file = store.objects().path_for(digest);
    if (explained_by_a_run(*runs, file))
      report.notes.push_back({"object file " + file.string(),
                              "is not recorded in lineage.db (left by an interrupted write); "
                              "'scion gc' removes it"});
    else
      report.notes.push_back({"object file " + file.string(),
                              "is not recorded in lineage.db and no run in the store wrote it "
                              "(lineage.db restored from an older backup?); 'scion gc' keeps "
                              "it, 'scion gc --force-orphans' removes it"});
  }
  for (const auto& temp : listing->temporaries) {
    report.notes.push_back({"file " + temp.string(),
                            "is a temporary file of an interrupted write; "
                            "'scion gc' removes it once it is an hour old"});
  }
  for (const auto& stray : listing->strays) {
    report.problems.push_back({"file " + stray.string(),
                               "does not belong in objects/ (not named by a "
                               "digest); move it out of the store"});
  }
  return Status::ok();
}

// Tables, indexes and their definitions as `type name` -> SQL, scion's own only.
Result<std::map<std::string, std::string>> schema_objects(SqliteDb& db) {
  auto stmt = db.prepare(
      "SELECT type, name, coalesce(sql, '') FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'");
  if (!stmt.is_ok()) return stmt.status();
  std::map<std::string, std::string> out;
  SCION_RETURN_IF_ERROR(stmt->for_each_row([&](const Statement& row) {
    out[row.column_text(0) + " " + row.column_text(1)] = row.column_text(2);
  }));
  return out;
}

// The schema against the one migrate() creates today, built fresh in memory. Returns
// whether every table is there as expected (the other checks query them).
Result<bool> check_schema(SqliteDb& db, FsckReport& report) {
  auto reference = SqliteDb::open(":memory:", /*create=*/true, 0);
  if (!reference.is_ok()) return reference.status();
  SCION_RETURN_IF_ERROR(migrate(**reference));
  auto expected = schema_objects(**reference);
  if (!expected.is_ok()) return expected.status();
  auto actual = schema_objects(db);
  if (!actual.is_ok()) return actual.status();
  bool tables_usable = true;
  for (const auto& [object, sql] : *expected) {
    auto it = actual->find(object);
    if (it == actual->end()) {
      tables_usable = tables_usable && !object.starts_with("table ");
      report.problems.push_back({"lineage.db " + object,
                                 "is missing from the schema; restore lineage.db from a backup"});
    } else if (it->second != sql) {
      tables_usable = tables_usable && !object.starts_with("table ");
      report.problems.push_back({"lineage.db " + object,
                                 "differs from the schema this scion expects (" + it->second +
                                     "); restore lineage.db from a backup"});
    }
  }
  for (const auto& [object, sql] : *actual) {
    if (!expected->count(object))
      report.notes.push_back({"lineage.db " + object, "is not part of scion's schema"});
  }
  return tables_usable;
}

// Every model with a recipe hash (its parameters are stored) has parameters, and parent
// links end at a base.
Status check_models(SqliteDb& db, FsckReport& report) {
  auto stmt = db.prepare(
      "SELECT m.id, m.name, m.parent_id, m.recipe_hash IS NOT NULL, "
      "EXISTS (SELECT 1 FROM parameters p WHERE p.model_id = m.id) FROM models m");
  if (!stmt.is_ok()) return stmt.status();
  struct Link {
    std::string name;
    std::optional<std::int64_t> parent;
  };
  std::map<std::int64_t, Link> models;
  SCION_RETURN_IF_ERROR(stmt->for_each_row([&](const Statement& row) {
    Link& link = models[row.column_int(0)];
    link.name = row.column_text(1);
    if (!row.column_is_null(2)) link.parent = row.column_int(2);
    if (row.column_int(3) != 0 && row.column_int(4) == 0)
      report.problems.push_back({"model '" + link.name + "'",
                                 "is recorded as trained but has no parameters; retrain it "
                                 "(`scion run --force " + link.name + "`) or import it again"});
  }));
  // The current version's recipe is the model's: both change in one transaction.
  auto versions = db.prepare(
      "SELECT m.name FROM models m LEFT JOIN versions v ON v.id = m.version_id "
      "WHERE (m.version_id IS NOT NULL OR m.recipe_hash IS NOT NULL) "
      "AND (m.recipe_hash IS NOT v.recipe_hash OR v.model_id IS NOT m.id)");
  if (!versions.is_ok()) return versions.status();
  SCION_RETURN_IF_ERROR(versions->for_each_row([&](const Statement& row) {
    report.problems.push_back({"model '" + row.column_text(0) + "'",
                               "its recipe hash is not that of its current version; retrain it "
                               "(`scion run --force " +
                                   row.column_text(0) + "`)"});
  }));
  for (const auto& [id, model] : models) {
    std::set<std::int64_t> seen{id};
    std::string chain = model.name;
    for (auto parent = model.parent; parent && models.count(*parent);
         parent = models.at(*parent).parent) {
      chain += " -> " + models.at(*parent).name;
      if (!seen.insert(*parent).second) {
        report.problems.push_back({"model '" + model.name + "'",
                                   "its parent links form a cycle (" + chain +
                                       "); restore lineage.db from a backup"});
        break;
      }
    }
  }
  return Status::ok();
}

// A descendant's version holds its frozen inherited parameters as the parent version it
// was made from holds them: a difference means that version was rewritten after its
// descendant was made (older scions replaced a recipe's version in place).
Status check_inheritance(LineageStore& store, FsckReport& report) {
  auto stmt = store.db().prepare(
      "SELECT m.name, v.recipe_hash, p.name, pm.name, pv.recipe_hash FROM versions v "
      "JOIN models m ON m.id = v.model_id "
      "JOIN versions pv ON pv.id = v.parent_version_id JOIN models pm ON pm.id = pv.model_id "
      "JOIN version_parameters p ON p.version_id = v.id AND p.trainable = 0 "
      "JOIN version_parameters q ON q.version_id = pv.id AND q.name = p.name "
      "WHERE p.digest != q.digest ORDER BY m.name, v.id, p.name");
  if (!stmt.is_ok()) return stmt.status();
  return stmt->for_each_row([&](const Statement& row) {
    const std::string model = row.column_text(0);
    report.problems.push_back(
        {"model '" + model + "'@" + short_digest(row.column_text(1)) + " parameter '" +
             row.column_text(2) + "'",
         "differs from the parent version it was made from ('" + row.column_text(3) + "'@" +
             short_digest(row.column_text(4)) + "), where it is inherited frozen: that version "
             "was rewritten after this one was made; retrain it (`scion run --force " + model +
             "`)"});
  });
}

Status check_runs(LineageStore& store, FsckReport& report) {
  auto stmt = store.db().prepare(
      "SELECT r.id, m.name FROM runs r JOIN models m ON m.id = r.model_id WHERE r.status = "
      "'running'");
  if (!stmt.is_ok()) return stmt.status();
  SCION_RETURN_IF_ERROR(stmt->for_each_row([&](const Statement& row) {
    report.notes.push_back(
        {"run " + std::to_string(row.column_int(0)) + " of '" + row.column_text(1) + "'",
         "is still marked running: in progress now, or stopped by a crash"});
  }));
  return Status::ok();
}

}  // namespace

Result<FsckReport> check_store(LineageStore& store) {
  FsckReport report;
  // One read transaction: a consistent snapshot even while another process writes.
  SCION_RETURN_IF_ERROR(store.db().exec("BEGIN"));
  std::set<std::string> file_rows;
  auto tables_usable = check_schema(store.db(), report);
  Status status = tables_usable.is_ok() ? Status::ok() : tables_usable.status();
  if (status.is_ok() && !*tables_usable) {
    (void)store.db().exec("COMMIT");
    report.complete = false;
    report.notes.push_back({"lineage.db", "the other checks need the tables as scion creates them; skipped"});
    return report;
  }
  if (status.is_ok()) status = check_sqlite(store.db(), report);
  if (status.is_ok()) status = check_models(store.db(), report);
  if (status.is_ok()) status = check_objects(store, report, file_rows);
  if (status.is_ok()) status = check_parameters(store, report);
  if (status.is_ok()) status = check_inheritance(store, report);
  if (status.is_ok()) status = check_runs(store, report);
  if (status.is_ok()) status = check_files(store, report, file_rows);
  (void)store.db().exec("COMMIT");
  if (!status.is_ok()) return status;
  return report;
}

namespace {

// The versions `--keep N` keeps: every model's current one, every member of a tagged spec
// version or of the N most recently seen ones, those the spec on disk names (?2: a JSON
// object model -> recipe hash), and the parent versions they were made from.
constexpr const char* kKeptVersions = R"sql(
  WITH RECURSIVE kept(id) AS (
    SELECT version_id FROM models WHERE version_id IS NOT NULL
    UNION SELECT v.id FROM versions v JOIN models m ON m.id = v.model_id
          JOIN json_each(?2) j ON j.key = m.name AND j.value = v.recipe_hash
    UNION SELECT s.version_id FROM spec_version_members s
          WHERE s.spec_version_id IN (SELECT spec_version_id FROM tags)
             OR s.spec_version_id IN (SELECT id FROM spec_versions
                                      ORDER BY last_seen DESC, id DESC LIMIT ?1)
    UNION SELECT v.parent_version_id FROM versions v JOIN kept k ON v.id = k.id
          WHERE v.parent_version_id IS NOT NULL)
)sql";

// REQUIRES: a transaction is open. Deletes the versions the policy does not keep (their
// parameters go with them) and the untagged spec versions older than the N newest.
Status remove_versions(LineageStore& store, std::int64_t keep,
                       const std::map<std::string, std::string>& spec_members,
                       GcReport& report) {
  auto doomed = store.db().prepare(
      std::string(kKeptVersions) +
      "SELECT v.id, m.name, v.recipe_hash, v.run_id FROM versions v JOIN models m ON m.id = "
      "v.model_id WHERE v.id NOT IN (SELECT id FROM kept) ORDER BY m.name, v.created_at");
  if (!doomed.is_ok()) return doomed.status();
  const std::string members = nlohmann::json(spec_members).dump();
  doomed->bind(1, keep).bind(2, std::string_view(members));
  std::vector<std::int64_t> ids;
  SCION_RETURN_IF_ERROR(doomed->for_each_row([&](const Statement& row) {
    ids.push_back(row.column_int(0));
    GcReport::RemovedVersion removed{.model = row.column_text(1),
                                     .recipe_hash = row.column_text(2)};
    if (!row.column_is_null(3)) removed.run = row.column_int(3);
    report.removed_versions.push_back(std::move(removed));
  }));
  auto remove = store.db().prepare("DELETE FROM versions WHERE id = ?");
  if (!remove.is_ok()) return remove.status();
  for (std::int64_t id : ids) {
    remove->reset();
    SCION_RETURN_IF_ERROR(remove->bind(1, id).run());
  }
  auto forget = store.db().prepare(
      "DELETE FROM spec_versions WHERE id NOT IN (SELECT spec_version_id FROM tags) AND id NOT IN "
      "(SELECT id FROM spec_versions ORDER BY last_seen DESC, id DESC LIMIT ?)");
  if (!forget.is_ok()) return forget.status();
  return forget->bind(1, keep).run();
}

}  // namespace

namespace {

// REQUIRES: a transaction is open. Lists the objects no version's parameter refers to (their
// rows are deleted with the transaction; `file_objects` gets those stored as files).
Status list_unreferenced_objects(LineageStore& store, GcReport& report,
                                 std::vector<std::string>& file_objects) {
  auto unreferenced = store.db().prepare(
      "SELECT digest, size, inline_bytes IS NULL FROM objects o "
      "WHERE NOT EXISTS (SELECT 1 FROM version_parameters p WHERE p.digest = o.digest)");
  if (!unreferenced.is_ok()) return unreferenced.status();
  return unreferenced->for_each_row([&](const Statement& row) {
    report.removed_objects.push_back(row.column_text(0));
    report.bytes_freed += row.column_int(1);
    if (row.column_int(2) != 0) file_objects.push_back(row.column_text(0));
  });
}

// Files under objects/ that gc removes although no object row records them.
struct UnrecordedFiles {
  std::vector<std::string> digests;                // well-named object files
  std::vector<std::filesystem::path> temporaries;  // left by interrupted writes
};

// REQUIRES: a transaction is open. The files under objects/ that no object row records and
// that gc removes: those a run of the store wrote and never committed (or, with
// force_orphans, any), and temporaries older than `temp_age_seconds`; the others are
// listed as kept orphans.
Status list_unrecorded_files(LineageStore& store, const GcPolicy& policy,
                             std::int64_t temp_age_seconds, GcReport& report,
                             UnrecordedFiles& files) {
  auto recorded = store.db().prepare("SELECT digest FROM objects WHERE inline_bytes IS NULL");
  if (!recorded.is_ok()) return recorded.status();
  std::set<std::string> rows;
  SCION_RETURN_IF_ERROR(
      recorded->for_each_row([&](const Statement& row) { rows.insert(row.column_text(0)); }));
  auto listing = store.objects().list();
  if (!listing.is_ok()) return listing.status();
  auto runs = RunSpans::read(store);
  if (!runs.is_ok()) return runs.status();
  for (const std::string& digest : listing->digests) {
    if (rows.count(digest)) continue;
    const std::filesystem::path file = store.objects().path_for(digest);
    if (policy.force_orphans || explained_by_a_run(*runs, file)) {
      files.digests.push_back(digest);
      report.removed_files.push_back(file.string());
    } else {
      struct stat st;
      if (::stat(file.c_str(), &st) == 0) report.orphan_bytes += st.st_size;
      report.kept_orphans.push_back(file.string());
    }
  }
  const std::time_t now = std::time(nullptr);
  for (const auto& temp : listing->temporaries) {
    struct stat st;
    if (::stat(temp.c_str(), &st) == 0 && now - st.st_mtime >= temp_age_seconds) {
      files.temporaries.push_back(temp);
      report.removed_files.push_back(temp.string());
    }
  }
  for (const auto& file : report.removed_files) {
    struct stat st;
    if (::stat(file.c_str(), &st) == 0) report.bytes_freed += st.st_size;
  }
  return Status::ok();
}

// REQUIRES: a transaction is open.
Status delete_object_rows(LineageStore& store, const std::vector<std::string>& digests) {
  auto remove = store.db().prepare("DELETE FROM objects WHERE digest = ?");
  if (!remove.is_ok()) return remove.status();
  for (const std::string& digest : digests) {
    remove->reset();
    SCION_RETURN_IF_ERROR(remove->bind(1, std::string_view(digest)).run());
  }
  return Status::ok();
}

// Removes the files of objects whose rows an earlier, committed transaction deleted, and
// the unrecorded files, under a write transaction of its own: a writer that recorded one
// of these digests again since (its row is back) keeps its file, and no writer can record
// one while this runs (a writer puts its files again under the write lock).
Status remove_unrecorded_files(LineageStore& store, const std::vector<std::string>& file_objects,
                               const UnrecordedFiles& files) {
  auto tx = Transaction::begin(store.db());
  if (!tx.is_ok()) return tx.status();
  auto recorded = store.db().prepare("SELECT 1 FROM objects WHERE digest = ?");
  if (!recorded.is_ok()) return recorded.status();
  auto remove_unless_recorded = [&](const std::string& digest) -> Status {
    recorded->reset();
    auto again = recorded->bind(1, std::string_view(digest)).step();
    if (!again.is_ok()) return again.status();
    if (*again || !store.objects().contains(digest)) return Status::ok();
    return store.objects().remove(digest);
  };
  for (const std::string& digest : file_objects) SCION_RETURN_IF_ERROR(remove_unless_recorded(digest));
  for (const std::string& digest : files.digests) SCION_RETURN_IF_ERROR(remove_unless_recorded(digest));
  for (const auto& temp : files.temporaries) SCION_RETURN_IF_ERROR(store.env().remove_file(temp));
  return (*tx)->commit();
}

}  // namespace

Result<GcReport> collect_garbage(LineageStore& store, bool dry_run, const GcPolicy& policy,
                                 std::int64_t temp_age_seconds) {
  GcReport report;
  report.dry_run = dry_run;
  std::vector<std::string> file_objects;
  UnrecordedFiles files;
  {
    auto tx = Transaction::begin(store.db());
    if (!tx.is_ok()) return tx.status();
    // A dry run deletes the versions too, inside the transaction it never commits, so that
    // the objects only they referred to are listed.
    if (policy.keep_spec_versions)
      SCION_RETURN_IF_ERROR(remove_versions(store, *policy.keep_spec_versions,
                                            policy.spec_members, report));
    SCION_RETURN_IF_ERROR(list_unreferenced_objects(store, report, file_objects));
    SCION_RETURN_IF_ERROR(
        list_unrecorded_files(store, policy, temp_age_seconds, report, files));
    if (dry_run) return report;
    SCION_RETURN_IF_ERROR(delete_object_rows(store, report.removed_objects));
    // Rows go first, files after: killed in between, the store holds unrecorded files
    // (harmless, the next gc removes them), never a row whose file is gone.
    SCION_RETURN_IF_ERROR((*tx)->commit());
  }
  SCION_RETURN_IF_ERROR(remove_unrecorded_files(store, file_objects, files));
  return report;
}

}  // namespace scion::lineage
