// What `scion fsck` checks beyond the store itself (lineage/fsck.h): each up-to-date
// model's stored parameter names against its spec, and which checkpoints can no longer be
// resumed. Findings are added to a lineage::FsckReport; nothing is repaired.
#pragma once

#include <string>

#include "base/status.h"
#include "lineage/fsck.h"
#include "lineage/store.h"
#include "spec/workspace.h"

namespace scion::workbench {

// A problem for each model whose stored parameters are of its spec recipe but lack ones
// runtime::parameter_table defines for it, or hold others.
Status check_parameter_names(lineage::LineageStore& store, const spec::Workspace& ws,
                             lineage::FsckReport& report);

// check_parameter_names when there is a valid spec (`workspace` non-null), else a note
// with `why_no_spec`; and a note for each checkpoint that cannot be resumed.
Status check_against_spec(lineage::LineageStore& store, const spec::Workspace* workspace,
                          const std::string& why_no_spec, lineage::FsckReport& report);

}  // namespace scion::workbench
