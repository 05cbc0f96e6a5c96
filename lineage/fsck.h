// Checking a store (`scion fsck`) and removing what nothing refers to (`scion gc`).
//
// check_store() reads everything and changes nothing: the schema against the one this
// scion creates, SQLite's integrity and foreign-key checks, that every trained model has
// parameters and parent links end at a base, every object's size and SHA-256 digest,
// every parameter's reference and byte count, each version's frozen inherited parameters
// against the parent version it was made from. Problems are damage; notes are harmless leftovers (unreferenced object files
// from an interrupted write, runs still marked running) that gc or a new run clears.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lineage/store.h"

namespace scion::lineage {

struct FsckFinding {
  std::string subject;  // what: "object 3fa9…", "model 'sst2' parameter 'head.weight'"
  std::string message;  // what is wrong, and what to do
};

struct FsckReport {
  std::vector<FsckFinding> problems;  // the store is damaged
  std::vector<FsckFinding> notes;     // harmless; `scion gc` cleans them
  std::int64_t objects_checked = 0;
  std::int64_t bytes_checked = 0;
  std::int64_t parameters_checked = 0;
  bool complete = true;  // false: tables are missing or changed, so most checks were skipped
  bool ok() const { return problems.empty(); }
};

// REQUIRES: no transaction open on the store.
Result<FsckReport> check_store(LineageStore& store);

struct GcReport {
  struct RemovedVersion {
    std::string model, recipe_hash;
    std::optional<std::int64_t> run;  // the run that made it
  };
  std::vector<RemovedVersion> removed_versions;  // those the policy did not keep
  std::vector<std::string> removed_objects;      // digests no parameter referred to
  std::vector<std::string> removed_files;        // paths under objects/ with no object row
  std::int64_t bytes_freed = 0;
  // Object files without a row that no run of the store wrote (see collect_garbage).
  std::vector<std::string> kept_orphans;
  std::int64_t orphan_bytes = 0;
  bool dry_run = false;
};

// Which versions of models gc keeps (docs/store.md, "fsck and gc"). Without
// keep_spec_versions every version is kept. With N, gc keeps each model's current
// version, the versions of every tagged spec version, of the N most recently seen spec
// versions and of the spec on disk (`spec_members`: `scion run` restores those), and the
// parent versions those were made from; it removes the other versions and the untagged
// spec versions older than the N newest.
struct GcPolicy {
  std::optional<std::int64_t> keep_spec_versions;
  std::map<std::string, std::string> spec_members;  // model -> recipe hash
  // Also remove object files no run of the store wrote (see collect_garbage).
  bool force_orphans = false;
};

// Removes the versions `policy` does not keep, then objects no version's parameter refers
// to, temporary files older than `temp_age_seconds` (younger ones may belong to a write in
// progress), and object files without a row that a run of the store wrote (their time lies
// within the run's span: a write it never committed). An object file no run explains is an
// orphan: lineage.db has lost its record of it (an older backup restored, rows deleted by
// hand), and it is kept and listed unless `policy.force_orphans`, so gc never deletes more
// than what the store can name. Crash-safe: one transaction removes the rows and commits
// before any file goes, so killed at any point the store holds at worst unrecorded files
// (fsck notes them; the next gc removes them), never a row whose file is gone. The files
// go under the write lock of a second transaction, which keeps any digest a writer
// recorded again in between.
Result<GcReport> collect_garbage(LineageStore& store, bool dry_run, const GcPolicy& policy = {},
                                 std::int64_t temp_age_seconds = 3600);

}  // namespace scion::lineage
