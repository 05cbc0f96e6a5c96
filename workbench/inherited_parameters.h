// The values a model inherits from its parent, copied from the lineage store into the
// parameter views a training group allocated for it. What `model` adds itself (its
// adapters, a new head) is runtime::initialize_new_parameters' to draw.
#pragma once

#include <map>
#include <string>

#include "base/status.h"
#include "lineage/store.h"
#include "runtime/backend.h"
#include "runtime/model/parameter_binding.h"
#include "spec/workspace.h"

namespace scion::workbench {

// Copies the parent's stored value of every parameter `model` inherits into its view in
// `binding` (a view an earlier member of the group bound holds it already; a frozen trunk
// weight held in bf16 is converted on the way) and records each value's stored digest in
// `digests`. A base inherits nothing. Errors: a parameter missing from the store or of
// another shape or dtype (kCorruption, saying how to retrain the parent), store errors.
Status load_inherited(lineage::LineageStore& store, runtime::Backend& backend,
                      const spec::Workspace& ws, const spec::Model& model,
                      const runtime::ParameterStore& pool, const runtime::ParameterBinding& binding,
                      std::map<std::string, std::string>& digests);

}  // namespace scion::workbench
