#include "runtime/training/data_parallel.h"

#include <algorithm>

#include "runtime/backend.h"
#include "runtime/op_types.h"

namespace scion::runtime {
namespace {

template <typename T>
std::vector<T> rows_of(const std::vector<T>& values, std::int64_t per_row, std::int64_t begin, std::int64_t end) {
  if (values.empty()) return {};
  return std::vector<T>(values.begin() + begin * per_row, values.begin() + end * per_row);
}

}  // namespace

data::Batch shard_rows(const data::Batch& batch, int rank, int size) {
  const std::int64_t B = batch.batch_size, T = batch.length;
  const std::int64_t begin = B * rank / size, end = B * (rank + 1) / size;
  data::Batch shard;
  shard.batch_size = static_cast<int>(end - begin);
  shard.length = batch.length;
  shard.tokens = rows_of(batch.tokens, T, begin, end);
  shard.attention_mask = rows_of(batch.attention_mask, T, begin, end);
  shard.lengths = rows_of(batch.lengths, 1, begin, end);
  shard.labels = rows_of(batch.labels, 1, begin, end);
  shard.targets = rows_of(batch.targets, T, begin, end);
  shard.values = rows_of(batch.values, batch.value_width, begin, end);
  shard.value_width = batch.value_width;
  shard.token_types = rows_of(batch.token_types, T, begin, end);
  shard.rows = rows_of(batch.rows, 1, begin, end);
  shard.number = batch.number;
  shard.epoch = batch.epoch;
  shard.first_row = batch.first_row + static_cast<int>(begin);
  return shard;
}

double loss_denominator(const data::Batch& batch, const ModelWeights& model) {
  const bool head = model.objective == spec::Objective::kClassification;
  const spec::HeadTask task = head ? model.classifier.task : spec::HeadTask::kClassification;
  if (task == spec::HeadTask::kRegression || task == spec::HeadTask::kMultiLabel)
    return static_cast<double>(batch.values.size());
  const std::vector<std::int32_t>& targets =
      head && task == spec::HeadTask::kClassification ? batch.labels : batch.targets;
  const std::vector<float>& weights = model.classifier.host_class_weights;
  double total = 0;
  for (std::int32_t t : targets)
    if (t != kIgnoreIndex)
      total += head && !weights.empty() ? weights[static_cast<std::size_t>(t)] : 1.0;
  return total;
}

namespace {

// Sums an fp32 tensor of backend memory over the ranks: the communicator reduces host
// memory, so the values cross to the host and back.
Status all_reduce_backend_values(Communicator& comm, Backend& backend, const Tensor& values) {
  std::vector<float> host = copy_to_host(backend, values);
  SCION_RETURN_IF_ERROR(comm.all_reduce_sum(std::span<float>(host)));
  backend.copy_to_device(values.data, host.data(), values.bytes());
  return Status::ok();
}

// NCCL sums whatever counts each rank passes, unchecked: the ranks compare their runs'
// counts over the communicator first (one all_gather; every rank sees the same lists, so
// all reach the same verdict), and a difference is an error before any device memory is
// touched.
Status check_same_runs(Communicator& comm, const std::vector<DeviceRun>& runs) {
  std::string mine;
  for (const DeviceRun& run : runs) mine += std::to_string(run.count) + " ";
  auto all = comm.all_gather(mine);
  if (!all) return all.status();
  for (std::size_t r = 1; r < all->size(); ++r)
    if ((*all)[r] != (*all)[0])
      return Status(StatusCode::kInternal,
                    "the ranks are out of step: rank 0 sums gradient runs of [" + (*all)[0] +
                        "] elements and rank " + std::to_string(r) + " of [" + (*all)[r] +
                        "]; nothing was summed. Every rank must run the same scion on the same "
                        "spec, data and store");
  return Status::ok();
}

}  // namespace

Status all_reduce_step(Communicator& comm, Backend& backend, DeviceReducer* device,
                       const std::vector<TrainingJob*>& jobs, const std::vector<ShareGroup*>& shares,
                       std::vector<double>& loss_sums) {
  SCION_RETURN_IF_ERROR(comm.all_reduce_sum(std::span<double>(loss_sums)));
  if (device != nullptr) {
    std::vector<DeviceRun> runs;
    for (TrainingJob* job : jobs) {
      const Tensor& values = job->own_gradient_values();
      runs.push_back({values.f32(), values.numel()});
    }
    for (ShareGroup* share : shares) {
      const Tensor& values = share->gradient_values();
      runs.push_back({values.f32(), values.numel()});
    }
    SCION_RETURN_IF_ERROR(check_same_runs(comm, runs));
    return device->all_reduce_sum(runs);
  }
  for (TrainingJob* job : jobs)
    SCION_RETURN_IF_ERROR(all_reduce_backend_values(comm, backend, job->own_gradient_values()));
  for (ShareGroup* share : shares)
    SCION_RETURN_IF_ERROR(all_reduce_backend_values(comm, backend, share->gradient_values()));
  return Status::ok();
}

}  // namespace scion::runtime
