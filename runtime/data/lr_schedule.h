// Learning-rate schedules: the learning rate of one optimizer step as a pure function.
//
// `step` counts optimizer steps from 0 (the first update uses step 0); `total_steps` is
// the number of updates the run will make. Warm-up (warmup_steps > 0) rises linearly,
// lr = base_lr * (step + 1) / warmup_steps for step < warmup_steps, so the first update
// is not wasted at zero and step warmup_steps - 1 reaches base_lr. After warm-up:
//   constant: base_lr;
//   linear:   base_lr * (total_steps - step) / (total_steps - warmup_steps);
//   cosine:   base_lr * 0.5 * (1 + cos(pi * (step - warmup_steps) / (total_steps - warmup_steps)));
// both decays start at base_lr at step = warmup_steps and reach 0 at step = total_steps
// (the last update, total_steps - 1, still moves the parameters). Steps at or past
// total_steps give 0 for the decays. Thread-safe.
#pragma once

#include <cstdint>

#include "spec/workspace.h"

namespace scion::data {

// REQUIRES: step >= 0; total_steps > warmup_steps >= 0 for the decays, warmup_steps >= 0.
float learning_rate(std::int64_t step, std::int64_t total_steps, const spec::ScheduleSpec& schedule,
                    float base_lr);

}  // namespace scion::data
