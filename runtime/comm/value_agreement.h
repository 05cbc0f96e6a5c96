// agree_on_values: the ranks of a job check, before any work, that they hold the same
// values of what must be shared (scion's version, the spec's digest, the data's digests,
// the plan: workbench/rank_agreement.h lists them). A rank that read another spec or data
// file would otherwise train on mixed hyperparameters and, where its tensors are sized
// otherwise, pass buffers of other sizes to the collectives.
//
// General on purpose: any start-up agreement (a device count, a transport's settings)
// is a list of named values. Thread-compatible, like the communicator.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/comm/communicator.h"

namespace scion::runtime {

struct AgreedValue {
  std::string what;   // "dataset 'reviews'", in messages
  std::string value;  // compared byte for byte; shown shortened
};

// Every rank passes its values (each `what` once); all receive ok when every rank's are
// rank 0's, else the same kSpecError on every rank naming each value that differs and what
// each rank holds ("dataset 'reviews': rank 0 has 3fa9c1..., rank 1 has 77c2d0..."; a value
// a rank lacks shows as "none"). One all_gather; a single process agrees with itself.
Status agree_on_values(Communicator& comm, const std::vector<AgreedValue>& values);

}  // namespace scion::runtime
