// Evaluation sharded over the ranks of an mpirun job: `scion test`, `scion eval` and the
// tests of `scion run` started by `mpirun -np N` (docs/distributed.md).
//
// Every rank makes the same EvaluationPlan, evaluates its contiguous share of it
// (EvaluationPlan::shard: the deduplicated texts and queries, co-batched within the
// share) and sends its outputs to rank 0, which merges them into what one process's pass
// gives and alone judges, records and prints. Outputs travel as CBOR, floats bit for bit.
// With one rank it is evaluate_models() itself.
#pragma once

#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/comm/communicator.h"
#include "workbench/behaviour_suite.h"
#include "workbench/stored_family.h"

namespace scion::workbench {

// Evaluates this rank's share of `plan` and gathers every share on rank 0. Every rank
// must call it, once `ready` says whether it could (a rank whose setup failed passes
// its error and evaluates nothing, so that no rank waits for it).
// Returns: on rank 0 the outputs of the whole plan, on the others empty outputs; or, on
// every rank, the error of the lowest failing rank (Communicator::agree).
// REQUIRES (when `ready` is ok): every model is loaded in `family`.
Result<FamilyOutputs> evaluate_models_sharded(const StoredFamily& family,
                                              runtime::Backend& backend,
                                              const std::vector<std::string>& models,
                                              const EvaluationPlan& plan, int chunk_size,
                                              runtime::Communicator& comm, const Status& ready);

// The wire form of FamilyOutputs, and back.
std::string encode_outputs(const FamilyOutputs& outputs);
// Errors: kCorruption for bytes encode_outputs did not write.
Result<FamilyOutputs> decode_outputs(const std::string& bytes);

}  // namespace scion::workbench
