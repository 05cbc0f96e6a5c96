#include <catch2/catch.hpp>
#include <cmath>
#include <numbers>

#include "runtime/data/lr_schedule.h"

using namespace scion;
using data::learning_rate;

namespace {
spec::ScheduleSpec schedule(spec::ScheduleKind kind, int warmup) { return {kind, warmup}; }
}  // namespace

TEST_CASE("warm-up rises linearly to the base rate", "[data][lr]") {
  for (auto kind :
       {spec::ScheduleKind::kConstant, spec::ScheduleKind::kLinear, spec::ScheduleKind::kCosine}) {
    const auto s = schedule(kind, 10);
    CHECK(learning_rate(0, 110, s, 2.0f) == Approx(0.2f));
    CHECK(learning_rate(4, 110, s, 2.0f) == Approx(1.0f));
    CHECK(learning_rate(9, 110, s, 2.0f) == Approx(2.0f));   // warm-up end
    CHECK(learning_rate(10, 110, s, 2.0f) == Approx(2.0f));  // decay start
  }
}

TEST_CASE("constant stays at the base rate", "[data][lr]") {
  const auto s = schedule(spec::ScheduleKind::kConstant, 0);
  CHECK(learning_rate(0, 100, s, 0.5f) == 0.5f);
  CHECK(learning_rate(99, 100, s, 0.5f) == 0.5f);
  CHECK(learning_rate(500, 100, s, 0.5f) == 0.5f);
}

TEST_CASE("linear decay reaches zero at total_steps", "[data][lr]") {
  const auto s = schedule(spec::ScheduleKind::kLinear, 10);
  CHECK(learning_rate(60, 110, s, 1.0f) == Approx(0.5f));    // middle of the decay
  CHECK(learning_rate(109, 110, s, 1.0f) == Approx(0.01f));  // last update
  CHECK(learning_rate(110, 110, s, 1.0f) == 0.0f);
  CHECK(learning_rate(0, 100, schedule(spec::ScheduleKind::kLinear, 0), 1.0f) == 1.0f);
}

TEST_CASE("cosine decay: half at the middle, zero at the end", "[data][lr]") {
  const auto s = schedule(spec::ScheduleKind::kCosine, 10);
  CHECK(learning_rate(60, 110, s, 1.0f) == Approx(0.5f));
  CHECK(learning_rate(35, 110, s, 1.0f) == Approx(0.5 * (1 + std::cos(std::numbers::pi / 4))));
  CHECK(learning_rate(109, 110, s, 1.0f) ==
        Approx(0.5 * (1 + std::cos(std::numbers::pi * 0.99))).margin(1e-7));
  CHECK(learning_rate(110, 110, s, 1.0f) == 0.0f);
  // Monotone non-increasing after warm-up.
  for (int step = 10; step < 110; ++step)
    CHECK(learning_rate(step + 1, 110, s, 1.0f) <= learning_rate(step, 110, s, 1.0f));
}
