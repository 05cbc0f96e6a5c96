// TrainingObserver: what training says as it goes, to whoever shows it (cli/'s stderr
// observer prints progress lines or JSON events; tests record). Called on the training
// thread; under mpirun on every rank, which decides itself what to show.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/training/family_trainer.h"
#include "workbench/training_outcome.h"

namespace scion::workbench {

class TrainingObserver {
 public:
  virtual ~TrainingObserver() = default;
  virtual void note(const std::string& message) = 0;
  virtual void warning(const std::string& message) = 0;
  virtual void group_started(const std::vector<std::string>& models) = 0;
  virtual void resuming(const std::string& model, std::int64_t step) = 0;
  virtual void step(const runtime::StepReport& report, std::size_t group_size) = 0;
  // Once per step of a group of several jobs, when each running job has done the step.
  virtual void group_step(const GroupProgress&) {}
  // A model made current without training: imported from its declared checkpoint, or a
  // stored version of its recipe restored. `outcome` is its line of the summary.
  virtual void prepared(const ModelOutcome&) {}
};

}  // namespace scion::workbench
