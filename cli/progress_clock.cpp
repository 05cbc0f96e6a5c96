#include "cli/progress_clock.h"

#include <fmt/format.h>

#include <cmath>

namespace scion::cli {

std::string clock_time(double seconds) {
  const auto total = static_cast<std::int64_t>(std::llround(std::max(0.0, seconds)));
  if (total >= 3600)
    return fmt::format("{}:{:02}:{:02}", total / 3600, total / 60 % 60, total % 60);
  return fmt::format("{}:{:02}", total / 60, total % 60);
}

std::string ProgressClock::annotate(const void* job, std::int64_t step, std::int64_t total,
                                    Clock::time_point now) {
  // The first step seen starts the clock: the time before it (loading, the first batch)
  // says nothing about the rate.
  auto [it, first] = starts_.try_emplace(job, Start{step, now});
  const double elapsed = std::chrono::duration<double>(now - it->second.at).count();
  std::string text = clock_time(elapsed) + " elapsed";
  const std::int64_t done = step - it->second.step;
  if (!first && done > 0 && total > step)
    text += ", ETA " +
            clock_time(elapsed / static_cast<double>(done) * static_cast<double>(total - step));
  return text;
}

}  // namespace scion::cli
