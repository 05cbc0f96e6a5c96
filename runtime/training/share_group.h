// ShareGroup: the shared modules of one training unit (models joined by `share`
// declarations), trained with the gradients of every member at once.
//
// The group owns one gradient buffer per shared parameter; each member job binds it under
// its own parameter names (gradients_for), so a co-batched backward pass accumulates every
// member's loss gradient into it (Σ_members mean loss, as in multi-task training). The
// group's own Optimizer then updates each shared parameter once per step, with the unit
// owner's optimizer settings and schedule (SharedModules: the unit's first model in spec
// order) over the longest member's step count. Member jobs leave their shared parameters
// out of their own optimizers.
//
// A step of the group follows every trainer step in which some member was active; a
// member that finishes (its steps, or early stopping) stops contributing gradients, and
// the shared modules go on with the rest. FamilyTrainer reports the members finished
// only once all of them are, so that every member is stored with the final shared values.
// Borrows the backend, the workspace and the parameter views. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/arena.h"
#include "runtime/model/optimizer.h"
#include "runtime/model/parameter_binding.h"
#include "runtime/model/shared_modules.h"
#include "spec/workspace.h"

namespace scion::runtime {

class TrainingJob;

class ShareGroup {
 public:
  // `unit`: the members, owner first (Workspace::training_unit order); `params` binds each
  // member's parameters by model name (ParameterStore views, shared ones one buffer).
  // REQUIRES: the unit shares at least one parameter; every member trains.
  // Errors: kOutOfMemory when the group's gradients or optimizer state cannot be allocated.
  static Result<std::unique_ptr<ShareGroup>> create(std::vector<const spec::Model*> unit,
                                                    const SharedModules& shares,
                                                    const std::map<std::string, ParameterBinding>& params,
                                                    Backend& backend);

  const std::vector<const spec::Model*>& unit() const { return unit_; }
  // The group's gradient views under `model`'s names: bind them in its GradientSet.
  const ParameterBinding& gradients_for(const std::string& model) const { return by_member_.at(model); }

  // Each member job attaches itself when it is created.
  void attach(TrainingJob* job) { members_.push_back(job); }
  const std::vector<TrainingJob*>& members() const { return members_; }
  bool finished() const;  // every member has finished

  void zero_grad() { grads_.zero(); }
  // The shared parameters' gradients, as one flat fp32 tensor of backend memory (summed
  // over data-parallel ranks).
  Tensor gradient_values() const { return grads_.flat_f32(); }
  // Averages over the micro-batches (the members' common grad_accumulation), clips and
  // updates at the owner's scheduled learning rate. Returns that learning rate.
  float apply_step();
  std::int64_t steps_done() const { return optimizer_->steps_taken(); }
  // The first shared parameter holding a NaN or an infinity; nullopt when all are finite.
  std::optional<std::string> first_non_finite_parameter() const {
    return optimizer_->first_non_finite_parameter();
  }
  std::int64_t total_steps() const;  // the longest member's

  // Shared parameters ("param.<canonical name>") and optimizer state ("opt.<name>"), for
  // checkpoints of the unit; restore() continues after `steps` group steps.
  std::vector<std::pair<std::string, Tensor>> checkpoint_tensors() const;
  Status restore(std::int64_t steps, const std::map<std::string, std::span<const std::byte>>& values);

 private:
  ShareGroup(Backend& backend, std::vector<const spec::Model*> unit)
      : backend_(backend), unit_(std::move(unit)) {}
  const spec::Model& owner() const { return *unit_.front(); }

  Backend& backend_;
  std::vector<const spec::Model*> unit_;
  Arena grads_;  // one view per shared parameter, under its canonical name
  std::map<std::string, ParameterBinding> by_member_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<TrainingJob*> members_;
};

}  // namespace scion::runtime
