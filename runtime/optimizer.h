// Optimizers over one job's trainable tensors: AdamW (decoupled weight decay), SGD with
// momentum, and global-norm gradient clipping.
//
// An Optimizer works on a list of TrainableTensor (parameter view, gradient view) and owns
// its state (AdamW moments, SGD velocity) in one Arena laid out from that list. Each job
// of a co-batched group has its own Optimizer over its own tensors, learning rate and
// step count, so jobs never touch each other's parameters. Parameters not in the list
// (frozen ones) are never written. Not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "runtime/arena.h"
#include "runtime/backend.h"
#include "runtime/parameter_binding.h"
#include "runtime/parameter_table.h"
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
  // schedule; weight decay applies to every tensor in the list.
  Optimizer(Backend& backend, const spec::OptimizerSpec& spec,
            std::vector<TrainableTensor> tensors);

  // Clips (when spec.grad_clip > 0) and applies one update with learning rate `lr`.
  // Returns the gradient norm before clipping (0 when clipping is off).
  float step(float lr);
  int steps_taken() const { return step_; }
  // The moments (AdamW: m.<name>, v.<name>) or velocities (SGD: velocity.<name>), for
  // checkpoints; restore_steps() sets the step count a restored state belongs to.
  const Arena& state() const { return state_; }
  void restore_steps(int steps_taken) { step_ = steps_taken; }
  const std::vector<TrainableTensor>& tensors() const { return tensors_; }

 private:
  Backend& backend_;
  spec::OptimizerSpec spec_;
  std::vector<TrainableTensor> tensors_;
  Arena state_;  // AdamW: m.<name>, v.<name>; SGD: velocity.<name>
  int step_ = 0;
};

}  // namespace scion::runtime
