// When a kernel's loop is worth waking the OpenMP team.
//
// scion's idle workers poll briefly, then sleep on a futex (cli/main.cpp says why), and
// waking a sleeping one costs tens of microseconds. Below kParallelMinElements the
// calling thread finishes sooner alone (a 64-wide example model's layer norms, GELUs and
// residuals are a few thousand floats each). Loops split their work the same way at any
// thread count, so running one serially never changes a result.
#pragma once

#include <omp.h>

#include <cstdint>

namespace scion::runtime::cpu {

inline constexpr std::int64_t kParallelMinElements = std::int64_t{1} << 15;

// Whether a loop touching `elements` floats should run on the whole team.
inline bool worth_parallel(std::int64_t elements) { return elements >= kParallelMinElements; }

// Runs fn(begin, end) over [0, n) cut into one contiguous block per thread of the team,
// or over all of it on the calling thread when n is below kParallelMinElements. For
// element-wise kernels whose inner loop is a SCION_SIMD_CLONES function.
template <class Fn>
void for_each_block(std::int64_t n, Fn&& fn) {
  if (!worth_parallel(n)) {
    fn(std::int64_t{0}, n);
    return;
  }
#pragma omp parallel
  {
    const std::int64_t t = omp_get_thread_num(), threads = omp_get_num_threads();
    fn(n * t / threads, n * (t + 1) / threads);
  }
}

// The build targets baseline x86-64 (SSE2) so that one binary runs anywhere; the few
// element-wise loops that dominate a step after the BLAS products (GELU, softmax) get
// AVX2 and AVX-512 copies too, and the loader picks the best the CPU has (GCC function
// multiversioning). The copies compute the same formula; FMA contraction can change the
// last bits between CPUs, never between runs on one machine.
#if defined(__x86_64__) && defined(__GNUC__)
#define SCION_SIMD_CLONES [[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]]
#else
#define SCION_SIMD_CLONES
#endif

}  // namespace scion::runtime::cpu
