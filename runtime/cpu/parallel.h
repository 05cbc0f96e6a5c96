// When a kernel's loop is worth waking the OpenMP team.
//
// scion's team waits passively between loops (cli/main.cpp says why): a worker sleeps on
// a futex, and waking it costs tens of microseconds. Below kParallelMinElements the
// calling thread finishes sooner alone (a 64-wide example model's layer norms, GELUs and
// residuals are a few thousand floats each). Loops split their work the same way at any
// thread count, so running one serially never changes a result.
#pragma once

#include <cstdint>

namespace scion::runtime::cpu {

inline constexpr std::int64_t kParallelMinElements = std::int64_t{1} << 15;

// Whether a loop touching `elements` floats should run on the whole team.
inline bool worth_parallel(std::int64_t elements) { return elements >= kParallelMinElements; }

}  // namespace scion::runtime::cpu
