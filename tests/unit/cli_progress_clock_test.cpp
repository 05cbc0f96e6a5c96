// The progress line's elapsed time and ETA.
#include <catch2/catch.hpp>

#include "cli/progress_clock.h"

using scion::cli::clock_time;
using scion::cli::ProgressClock;

TEST_CASE("clock times are m:ss, or h:mm:ss from an hour", "[cli][progress]") {
  CHECK(clock_time(0) == "0:00");
  CHECK(clock_time(75) == "1:15");
  CHECK(clock_time(3725) == "1:02:05");
  CHECK(clock_time(-3) == "0:00");
}

TEST_CASE("the ETA comes from the rate since the first step seen", "[cli][progress]") {
  ProgressClock clock;
  const auto t0 = ProgressClock::Clock::time_point{};
  int job = 0, other = 0;
  CHECK(clock.annotate(&job, 100, 400, t0) == "0:00 elapsed");  // a resumed run's first step
  // 50 steps in 10 s: 250 steps left take 50 s.
  CHECK(clock.annotate(&job, 150, 400, t0 + std::chrono::seconds(10)) == "0:10 elapsed, ETA 0:50");
  CHECK(clock.annotate(&job, 400, 400, t0 + std::chrono::seconds(60)) == "1:00 elapsed");
  CHECK(clock.annotate(&other, 1, 10, t0 + std::chrono::seconds(60)) == "0:00 elapsed");
}
