// Elapsed time and an estimate of the time left for the in-place progress line of a
// training job on a terminal ("0:12 elapsed, ETA 0:30"). The rate is measured from the
// first step the clock saw for the job, so a resumed run estimates from its own steps.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace scion::cli {

class ProgressClock {
 public:
  using Clock = std::chrono::steady_clock;

  // The annotation for `job` (any stable address) at `step` of `total`.
  std::string annotate(const void* job, std::int64_t step, std::int64_t total,
                       Clock::time_point now = Clock::now());

 private:
  struct Start {
    std::int64_t step;
    Clock::time_point at;
  };
  std::map<const void*, Start> starts_;
};

// 75 s -> "1:15", 3725 s -> "1:02:05".
std::string clock_time(double seconds);

}  // namespace scion::cli
