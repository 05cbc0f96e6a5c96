// How long this process has run: seconds since the kernel started it (before the dynamic
// loader, static constructors and main), for "time to the first step" figures
// (docs/benchmarks.md: process start to the end of step 1). Linux: /proc/self/stat's start
// time (clock ticks since boot) against CLOCK_BOOTTIME; nullopt where /proc does not say.
// Resolution: one clock tick (10 ms). Thread-safe.
#pragma once

#include <optional>

namespace scion::runtime {

std::optional<double> seconds_since_process_start();

}  // namespace scion::runtime
