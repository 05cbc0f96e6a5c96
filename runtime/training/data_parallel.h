// Data parallelism of FamilyTrainer over a Communicator's ranks.
//
// Every rank runs the same jobs with the same data streams, so every rank draws the same
// micro-batch of each job; rank r of n then trains only rows [B·r/n, B·(r+1)/n) of it
// (shard_rows). Each rank's segment scales its loss by the denominator of the whole
// micro-batch rather than of its slice (Segment::loss_denominator), so the sum of the
// ranks' gradients is the gradient of the whole batch's mean loss: all_reduce_step sums
// them, and the losses, over the ranks, after which every rank holds the same gradients
// and takes the same update. Single-process training with the same batch gives the same
// parameters, within float rounding (the sum adds the ranks' partial sums in another
// order). A rank whose slice of a job is empty (fewer rows than ranks) adds zeros.
// Dropout: a slice keeps the index of its first row (Batch::first_row, then
// Segment::first_row), and its masks are drawn at the positions those rows have in the
// whole batch, so the ranks together draw exactly the masks one process draws.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/comm/communicator.h"
#include "runtime/comm/nccl_reducer.h"
#include "runtime/data/batcher.h"
#include "runtime/training/share_group.h"
#include "runtime/training/training_job.h"

namespace scion::runtime {

// Rows [B·rank/size, B·(rank+1)/size) of `batch`, padded to the same length T.
// REQUIRES: 0 <= rank < size.
data::Batch shard_rows(const data::Batch& batch, int rank, int size);

// What the whole of `batch`'s mean loss divides by for `model` (Segment::loss_denominator):
// its targets other than the ignore index (labels, tags or LM targets), weighted by
// class weights when the model's head has them, or its values (regression, multi-label).
double loss_denominator(const data::Batch& batch, const ModelWeights& model);

// Sums over the ranks, in place: `loss_sums` (one per job), every job's own gradients and
// every ShareGroup's. The losses are host values, summed by the communicator. The
// gradients are `backend`'s memory: with a `device` reducer (NCCL between GPUs,
// runtime/comm/nccl_reducer.h) they are summed on the devices in one call; without one,
// each run is copied to the host, summed by the communicator and copied back. Either way
// it is a plain sum: the mean over the batch comes from each segment's loss denominator
// (above), not from a division after the sum. Errors: the communicator's or the
// reducer's (a rank gone).
Status all_reduce_step(Communicator& comm, Backend& backend, DeviceReducer* device,
                       const std::vector<TrainingJob*>& jobs, const std::vector<ShareGroup*>& shares,
                       std::vector<double>& loss_sums);

}  // namespace scion::runtime
