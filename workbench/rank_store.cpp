#include "workbench/rank_store.h"

namespace scion::workbench {

Result<std::unique_ptr<lineage::LineageStore>> open_store_on_ranks(runtime::Communicator& comm,
                                                                   const StoreOpener& for_writing,
                                                                   const StoreOpener& for_the_others) {
  Result<std::unique_ptr<lineage::LineageStore>> store =
      Status(StatusCode::kInternal, "store not opened");
  auto status_of = [&] { return store ? Status::ok() : store.status(); };
  if (comm.rank() == 0) store = for_writing();
  SCION_RETURN_IF_ERROR(comm.agree(comm.rank() == 0 ? status_of() : Status::ok()));
  if (comm.rank() != 0) store = for_the_others();
  SCION_RETURN_IF_ERROR(comm.agree(status_of()));
  return store;
}

}  // namespace scion::workbench
