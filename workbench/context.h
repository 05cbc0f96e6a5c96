// Context: what a command works with besides its spec, asked for in one way by every
// command: the ranks it runs on, the lineage store as this rank opened it, and the
// backends it computes on. cli/ builds ContextOptions from its global options, calls
// Context::open, and hands the context (or its parts) to the workbench function that does
// the command's work.
//
// Ranks: this process alone, or (ContextOptions::ranks) mpirun's ranks through the world
// communicator, agreeing on the command's spec first when asked. Store: opened as StoreAccess says;
// under mpirun rank 0 opens it first (creating or migrating it) and the other ranks then open it as
// `other_ranks` says (workbench/rank_store.h), every rank getting the lowest failing rank's error.
// A store opened for writing marks the runs of processes that are gone as abandoned:
// abandoned_runs() lists them, for the command to say so. Backends: one per precision,
// made on first use on the options' device (runtime/compute_device.h), or by
// ContextOptions::make_backend (tests put a backend there that checks the seam), owned by
// the context, and timed into ContextOptions::profile when one is given. Not thread-safe.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "lineage/store.h"
#include "runtime/backend.h"
#include "runtime/comm/communicator.h"
#include "runtime/op_profile.h"
#include "runtime/tensor.h"
#include "spec/workspace.h"

namespace scion::workbench {

enum class StoreAccess {
  kNone,           // the command uses no store
  kRead,           // read-only: a store this user may not write stays readable; must exist
  kReadIfPresent,  // read-only, or no store when there is none yet (kNotFound is no error)
  kWrite,          // for writing; must exist (its error says to run `scion run` first)
  kCreate,         // for writing, created when missing
};

// The store at `dir` as `access` says. Errors: kNotFound when there is none (kRead,
// kReadIfPresent, kWrite), the store's own (another schema, a database of another
// application, permissions).
// REQUIRES: access != kNone.
Result<std::unique_ptr<lineage::LineageStore>> open_store(const std::filesystem::path& dir,
                                                          StoreAccess access);

using BackendMaker = std::function<std::unique_ptr<runtime::Backend>(runtime::Precision)>;

struct ContextOptions {
  std::filesystem::path store_dir;
  StoreAccess store = StoreAccess::kRead;        // this process's; under mpirun rank 0's
  StoreAccess other_ranks = StoreAccess::kRead;  // under mpirun, the other ranks'
  bool ranks = false;  // run on mpirun's ranks (the world communicator); else alone
  // When set, the ranks agree that they hold this spec and its data before the store is
  // opened (workbench/rank_agreement.h): every rank ends with the same spec error
  // otherwise, the store untouched. Borrowed; only read by open().
  const spec::Workspace* agree_on = nullptr;
  runtime::Device device = runtime::Device::kCpu;  // `--device`, resolved
  BackendMaker make_backend;  // empty: runtime::make_backend(device, precision)
  // `--profile`: every backend made is wrapped to time its operations into it
  // (runtime/profiling_backend.h), and training times its store writes and set-up there
  // too. Borrowed; null: not profiled.
  runtime::OpProfile* profile = nullptr;
};

class Context {
 public:
  // The ranks, their agreement on options.agree_on, then the store (when options.store
  // is not kNone).
  static Result<std::unique_ptr<Context>> open(const ContextOptions& options);
  // A context over ranks and a store the caller holds (tests, and commands that opened
  // them already): borrowed, and must outlive the context. `store` may be null.
  Context(runtime::Communicator& comm, lineage::LineageStore* store, ContextOptions options);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  runtime::Communicator& comm() { return *comm_; }
  bool has_store() const { return store_ != nullptr; }
  // REQUIRES: has_store().
  lineage::LineageStore& store() { return *store_; }
  lineage::LineageStore* store_or_null() { return store_; }
  // Opens the store (again) on every rank: this rank `access` as rank 0 or `other_ranks`
  // as one of the others. For a command that learns how it needs the store only once
  // the ranks are known (training: workbench/training.h, prepare_training).
  Status open_store(StoreAccess access, StoreAccess other_ranks);
  // The runs opening the store marked abandoned (their process is gone).
  std::vector<lineage::RunRecord> abandoned_runs() const;

  // The backend of `precision`, made on first use. Errors: the device's (kUnavailable).
  Result<runtime::Backend*> backend(runtime::Precision precision = runtime::Precision::kF32);
  // Where the command's time goes (ContextOptions::profile); null: not profiled.
  runtime::OpProfile* profile() const { return options_.profile; }
  // Profiles the command from now on (a profile's clock starts when it is made, so a
  // command makes it when the work it times begins). REQUIRES: no backend made yet.
  void set_profile(runtime::OpProfile* profile) { options_.profile = profile; }
  // The first failure of any backend made so far (runtime::check_backend), naming
  // `command`: called before results are kept or printed.
  Status check_backends(const std::string& command) const;

 private:
  explicit Context(ContextOptions options);

  ContextOptions options_;
  runtime::SingleProcessCommunicator alone_;
  runtime::Communicator* comm_ = &alone_;
  std::unique_ptr<lineage::LineageStore> owned_store_;
  lineage::LineageStore* store_ = nullptr;
  std::map<runtime::Precision, std::unique_ptr<runtime::Backend>> backends_;
};

}  // namespace scion::workbench
