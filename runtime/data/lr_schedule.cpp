#include "runtime/data/lr_schedule.h"

#include <cassert>
#include <cmath>
#include <numbers>

namespace scion::data {

float learning_rate(std::int64_t step, std::int64_t total_steps, const spec::ScheduleSpec& schedule,
                    float base_lr) {
  assert(step >= 0 && schedule.warmup_steps >= 0);
  const std::int64_t warmup = schedule.warmup_steps;
  if (step < warmup)
    return static_cast<float>(static_cast<double>(base_lr) * static_cast<double>(step + 1) /
                              static_cast<double>(warmup));
  if (schedule.kind == spec::ScheduleKind::kConstant) return base_lr;
  assert(total_steps > warmup);
  if (step >= total_steps) return 0.0f;
  // Fraction of the decay done, in [0, 1).
  const double progress =
      static_cast<double>(step - warmup) / static_cast<double>(total_steps - warmup);
  const double factor = schedule.kind == spec::ScheduleKind::kLinear
                            ? 1.0 - progress
                            : 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  return static_cast<float>(static_cast<double>(base_lr) * factor);
}

}  // namespace scion::data
