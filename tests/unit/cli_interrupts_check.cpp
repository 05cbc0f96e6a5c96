// Ctrl-C during an fp32 product must not corrupt the heap (cli/interrupts.h): with
// SIGINT routed to the watcher thread, a stream of SIGINTs sent to the process while the
// main thread and OpenMP's workers run oneDNN's JIT GEMM leaves every product exact and
// malloc's heap intact, and the flag set. Run with `--unrouted` to see the failure the
// routing prevents: glibc aborts on a corrupted heap within a few hundred products
// (oneDNN 2.6 on a CPU with AVX2 or AVX-512; elsewhere the JIT kernel may not be used).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "cli/interrupts.h"
#include "runtime/cpu/onednn_gemm.h"

namespace {

// The products scion's fp32 probes and linear layers run: (512, 768) x (768, 768).
constexpr int kM = 512, kN = 768, kK = 768;

float reference_entry(const std::vector<float>& a, const std::vector<float>& b, int m, int n) {
  double sum = 0;
  for (int k = 0; k < kK; ++k) sum += double(a[m * kK + k]) * double(b[k * kN + n]);
  return static_cast<float>(sum);
}

}  // namespace

int main(int argc, char** argv) {
  const bool routed = !(argc > 1 && std::strcmp(argv[1], "--unrouted") == 0);
  if (routed) scion::cli::route_interrupts();
  const std::atomic<bool>& interrupted = scion::cli::catch_interrupts();

  std::vector<float> a(kM * kK), b(kK * kN);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 97) / 97.0f - 0.5f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 89) / 89.0f - 0.5f;

  std::atomic<bool> done{false};
  std::atomic<long> sent{0};
  std::thread sender([&] {
    while (!done.load()) {
      kill(getpid(), SIGINT);  // process-directed, as Ctrl-C is
      sent.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  });
  int wrong = 0;
  for (int product = 0; product < 300; ++product) {
    std::vector<float> c(kM * kN, 0.0f);  // a fresh allocation each time: malloc checks the heap
    scion::runtime::cpu::gemm_onednn_f32(false, false, kM, kN, kK, 1.0f, a.data(), kK, b.data(),
                                         kN, 0.0f, c.data(), kN);
    for (int probe = 0; probe < 4; ++probe) {
      const int m = (product * 7 + probe * 131) % kM, n = (product * 13 + probe * 257) % kN;
      const float want = reference_entry(a, b, m, n);
      if (std::fabs(c[m * kN + n] - want) > 1e-3f * (1.0f + std::fabs(want))) ++wrong;
    }
  }
  done.store(true);
  sender.join();
  std::printf("%ld SIGINTs sent during 300 products; %d wrong entries; flag %s\n", sent.load(),
              wrong, interrupted.load() ? "set" : "not set");
  return wrong == 0 && interrupted.load() && sent.load() > 0 ? 0 : 1;
}
