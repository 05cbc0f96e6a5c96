// Optimizers over one job's trainable tensors: AdamW (decoupled weight decay), SGD with
// momentum, and global-norm gradient clipping.
//
// An Optimizer works on a list of TrainableTensor (parameter view, gradient view) and owns
// its state (AdamW moments, SGD velocity) in one Arena laid out from that list. Each job
// of a co-batched group has its own Optimizer over its own tensors, learning rate and
// step count, so jobs never touch each other's parameters. Parameters not in the list
// (frozen ones) are never written. Not thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "runtime/arena.h"
#include "runtime/backend.h"
#include "runtime/parameter_binding.h"
#include "runtime/parameter_table.h"
#include "base/status.h"
#include "spec/workspace.h"

namespace scion::runtime {

struct TrainableTensor {
  std::string name;
  Tensor param;
  Tensor grad;
};

// The trainable entries of `table`, with views from `params` and `grads`.
// REQUIRES: both bindings hold every trainable name (e.g. ParameterStore + GradientSet).
std::vector<TrainableTensor> trainable_tensors(const std::vector<ParameterSpec>& table,
                                               const ParameterBinding& params,
                                               const ParameterBinding& grads);

// sqrt(Σ grad²) over every tensor.
float global_grad_norm(Backend& backend, const std::vector<TrainableTensor>& tensors);

// Scales every gradient by max_norm / norm when the global norm exceeds max_norm
// (as torch.nn.utils.clip_grad_norm_). Returns the norm before clipping.
float clip_grad_norm(Backend& backend, const std::vector<TrainableTensor>& tensors,
                     float max_norm);

class Optimizer {
 public:
  // spec.kind picks AdamW or SGD; spec.lr is a default for step() callers that have no
  // schedule; weight decay applies to every tensor in the list. `owner` names whose
  // tensors they are in an out-of-memory error ("'review-lora'"). Errors: kOutOfMemory.
  static Result<std::unique_ptr<Optimizer>> create(Backend& backend, const spec::OptimizerSpec& spec,
                                                   std::vector<TrainableTensor> tensors,
                                                   const std::string& owner);

  // Divides every gradient by `micro_batches` (a step's gradient is the mean over its
  // micro-batches), clips (when spec.grad_clip > 0) and applies one update with learning
  // rate `lr`. Returns the gradient norm before clipping (0 when clipping is off).
  float step(float lr, int micro_batches = 1);
  int steps_taken() const { return step_; }
  // The first parameter holding a NaN or an infinity; nullopt when all are finite.
  std::optional<std::string> first_non_finite_parameter() const;
  const std::vector<TrainableTensor>& tensors() const { return tensors_; }

  // What a checkpoint must hold to continue exactly: each parameter ("param.<name>") and
  // the optimizer state ("opt.m.<name>", "opt.v.<name>" for AdamW; "opt.velocity.<name>"
  // for SGD).
  std::vector<std::pair<std::string, Tensor>> checkpoint_tensors() const;
  // Copies checkpoint_tensors() back from `values` and continues after `steps` steps.
  // Errors: kCorruption, naming `owner` ("'review-lora'"), for a missing tensor or a size
  // that does not match.
  Status restore(int steps, const std::map<std::string, std::span<const std::byte>>& values,
                 const std::string& owner);

 private:
  Optimizer(Backend& backend, const spec::OptimizerSpec& spec, std::vector<TrainableTensor> tensors,
            Arena state)
      : backend_(backend), spec_(spec), tensors_(std::move(tensors)), state_(std::move(state)) {}

  Backend& backend_;
  spec::OptimizerSpec spec_;
  std::vector<TrainableTensor> tensors_;
  Arena state_;  // AdamW: m.<name>, v.<name>; SGD: velocity.<name>
  int step_ = 0;
};

}  // namespace scion::runtime
