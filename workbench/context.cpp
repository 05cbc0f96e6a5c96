#include "workbench/context.h"

#include "runtime/compute_device.h"
#include "runtime/profiling_backend.h"
#include "workbench/rank_agreement.h"
#include "workbench/rank_store.h"

namespace scion::workbench {

Result<std::unique_ptr<lineage::LineageStore>> open_store(const std::filesystem::path& dir,
                                                          StoreAccess access) {
  lineage::StoreOptions options;
  options.create = access == StoreAccess::kCreate;
  options.read_only = access == StoreAccess::kRead || access == StoreAccess::kReadIfPresent;
  return lineage::LineageStore::open(dir, options);
}

Context::Context(ContextOptions options) : options_(std::move(options)) {}

Context::Context(runtime::Communicator& comm, lineage::LineageStore* store, ContextOptions options)
    : options_(std::move(options)), comm_(&comm), store_(store) {}

Context::~Context() = default;

Result<std::unique_ptr<Context>> Context::open(const ContextOptions& options) {
  std::unique_ptr<Context> context(new Context(options));
  if (options.ranks) {
    auto world = runtime::world_communicator();
    if (!world) return world.status();
    context->comm_ = *world;
  }
  if (options.agree_on)
    SCION_RETURN_IF_ERROR(agree_on_workspace(*context->comm_, *options.agree_on));
  if (options.store != StoreAccess::kNone)
    SCION_RETURN_IF_ERROR(context->open_store(options.store, options.other_ranks));
  return context;
}

Status Context::open_store(StoreAccess access, StoreAccess other_ranks) {
  const auto opener = [&](StoreAccess how) {
    return [this, how]() -> Result<std::unique_ptr<lineage::LineageStore>> {
      auto store = workbench::open_store(options_.store_dir, how);
      // No store yet is no error for a command that can do without one.
      if (!store && how == StoreAccess::kReadIfPresent &&
          store.status().code() == StatusCode::kNotFound)
        return std::unique_ptr<lineage::LineageStore>();
      return store;
    };
  };
  auto store = open_store_on_ranks(*comm_, opener(access), opener(other_ranks));
  if (!store) return store.status();
  owned_store_ = std::move(*store);
  store_ = owned_store_.get();
  return Status::ok();
}

std::vector<lineage::RunRecord> Context::abandoned_runs() const {
  return store_ ? store_->abandoned_on_open() : std::vector<lineage::RunRecord>();
}

Result<runtime::Backend*> Context::backend(runtime::Precision precision) {
  std::unique_ptr<runtime::Backend>& backend = backends_[precision];
  if (!backend) {
    if (options_.make_backend) {
      backend = options_.make_backend(precision);
    } else {
      auto made = runtime::make_backend(options_.device, precision);
      if (!made) return made.status();
      backend = std::move(*made);
    }
    if (options_.profile)
      backend = runtime::make_profiling_backend(std::move(backend), *options_.profile);
  }
  return backend.get();
}

Status Context::check_backends(const std::string& command) const {
  for (const auto& [precision, backend] : backends_)
    if (backend) SCION_RETURN_IF_ERROR(runtime::check_backend(*backend, command));
  return Status::ok();
}

}  // namespace scion::workbench
