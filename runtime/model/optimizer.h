// Optimizers over one job's trainable tensors: AdamW (decoupled weight decay), SGD with
// momentum, and global-norm gradient clipping.
//
// An Optimizer works on a list of TrainableTensor (parameter view, gradient view) and owns
// its state (AdamW moments, SGD velocity) in one Arena laid out from that list. Each job
// of a co-batched group has its own Optimizer over its own tensors, learning rate and
// step count, so jobs never touch each other's parameters. Parameters not in the list
// (frozen ones) are never written. Not thread-safe.
//
// One host read per step. On a device every value read by the host waits for the device,
// so a step must not read per tensor. Each step the backend writes every gradient's and
// (after the update) every parameter's sum of squares into one buffer of backend memory
// (Backend::squared_norm_into), clips on the backend from those sums
// (Backend::clip_to_global_norm), and the host reads the buffer once, at the end of the
// step: the gradient norm step() returns and the finite check of
// first_non_finite_parameter() both come from that one read. On the CPU the arithmetic is
// the same as summing squared_norm() per tensor on the host and scaling there: the same
// bits.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "runtime/arena.h"
#include "runtime/backend.h"
#include "runtime/model/parameter_binding.h"
#include "runtime/model/parameter_table.h"
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

class Optimizer {
 public:
  // spec.kind picks AdamW or SGD; spec.lr is a default for step() callers that have no
  // schedule; weight decay applies to every tensor in the list. `owner` names whose
  // tensors they are in an out-of-memory error ("'review-tuned'"). Errors: kOutOfMemory.
  static Result<std::unique_ptr<Optimizer>> create(Backend& backend, const spec::OptimizerSpec& spec,
                                                   std::vector<TrainableTensor> tensors,
                                                   const std::string& owner);

  // Divides every gradient by `micro_batches` (a step's gradient is the mean over its
  // micro-batches), clips (when spec.grad_clip > 0: every gradient scaled by
  // grad_clip / (norm + 1e-6) when the global norm exceeds grad_clip, as
  // torch.nn.utils.clip_grad_norm_) and applies one update with learning rate `lr`. Reads
  // the host once (see above). Returns the gradient norm before clipping (0 when clipping
  // is off).
  float step(float lr, int micro_batches = 1);
  int steps_taken() const { return step_; }
  // The first parameter holding a NaN or an infinity; nullopt when all are finite. After
  // a step, from that step's read; otherwise (no step yet, or after restore) it reads once.
  std::optional<std::string> first_non_finite_parameter();
  const std::vector<TrainableTensor>& tensors() const { return tensors_; }

  // What a checkpoint must hold to continue exactly: each parameter ("param.<name>") and
  // the optimizer state ("opt.m.<name>", "opt.v.<name>" for AdamW; "opt.velocity.<name>"
  // for SGD).
  std::vector<std::pair<std::string, Tensor>> checkpoint_tensors() const;
  // Copies checkpoint_tensors() back from `values` and continues after `steps` steps.
  // Errors: kCorruption, naming `owner` ("'review-tuned'"), for a missing tensor or a size
  // that does not match.
  Status restore(int steps, const std::map<std::string, std::span<const std::byte>>& values,
                 const std::string& owner);

 private:
  Optimizer(Backend& backend, const spec::OptimizerSpec& spec, std::vector<TrainableTensor> tensors,
            Arena state, Arena norms)
      : backend_(backend),
        spec_(spec),
        tensors_(std::move(tensors)),
        state_(std::move(state)),
        norms_(std::move(norms)),
        host_norms_(2 * tensors_.size(), 0.0) {}

  // The sums of squares in backend memory: gradients' at [0, n), parameters' at [n, 2n).
  double* squared_norms() const { return static_cast<double*>(norms_.view("squared_norms").data); }
  // Writes every parameter's sum of squares after the gradients' and reads all 2n back.
  void read_norms();

  Backend& backend_;
  spec::OptimizerSpec spec_;
  std::vector<TrainableTensor> tensors_;
  Arena state_;  // AdamW: m.<name>, v.<name>; SGD: velocity.<name>
  Arena norms_;  // 2n doubles, held as one fp32 view of 4n floats (Arena has no fp64)
  std::vector<double> host_norms_;  // the last read of norms_
  bool parameters_read_ = false;    // host_norms_ holds the current parameters' sums
  int step_ = 0;
};

}  // namespace scion::runtime
