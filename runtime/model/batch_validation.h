// validate_batch: what SegmentedTransformer::forward() accepts (transformer.h lists the
// errors). Checked before any plan or pass runs, so the passes may assume a sound batch.
#pragma once

#include "base/status.h"
#include "runtime/model/family_batch.h"

namespace scion::runtime::detail {

// kInvalidArgument naming the model and the value at fault, or ok.
Status validate_batch(const FamilyBatch& batch);

}  // namespace scion::runtime::detail
