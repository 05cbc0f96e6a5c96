// The CPU's limit for scion's products, measured in one run: oneDNN bf16 and fp32 matmul
// and OpenBLAS sgemm (both OpenBLAS's own threads and scion's split over its OpenMP team,
// runtime/cpu/gemm.h) on square products, median of --reps timings each, interleaved.
//
//   ./build/bench/limit_matmul [--size 2048] [--reps 3] [--threads 2]
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <vector>

#include "bench/bench_options.h"
#include "bench/machine.h"
#include "runtime/cpu/bf16_matmul.h"
#include "runtime/cpu/gemm.h"
#include "runtime/cpu/onednn_gemm.h"

extern "C" void openblas_set_num_threads(int num_threads);

using namespace scion::runtime;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_of(const std::function<void()>& fn) {
  const auto start = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  scion::bench::use_scions_openmp_wait(argv);
  int size = 2048, reps = 3, threads = 2;
  scion::bench::BenchOptions("usage: limit_matmul [--size N] [--reps N] [--threads N]")
      .number("size", size)
      .number("reps", reps)
      .number("threads", threads)
      .parse(argc, argv);
  if (size < 1 || reps < 1 || threads < 1) {
    std::fprintf(stderr, "error: --size, --reps and --threads must be at least 1\n");
    return 2;
  }
  omp_set_num_threads(threads);
  scion::bench::print_machine("limit");
  const std::int64_t n = size;
  const std::size_t count = static_cast<std::size_t>(n * n);
  std::vector<float> a(count), b(count), c(count);
  for (std::size_t i = 0; i < count; ++i) {
    a[i] = static_cast<float>(i % 97) / 97.0f - 0.5f;
    b[i] = static_cast<float>(i % 89) / 89.0f - 0.5f;
  }
  std::vector<std::uint16_t> a16(count), b16(count);
  cpu::round_to_bf16(a16.data(), a.data(), n * n);
  cpu::round_to_bf16(b16.data(), b.data(), n * n);

  struct Config {
    const char* name;
    std::function<void()> run;
    std::vector<double> seconds;
  };
  // Without a oneDNN bf16 kernel (below AVX-512), onednn_gemm widens bf16 operands to fp32:
  // the line then says so instead of naming a bf16 rate the machine does not have.
  const char* bf16_name =
      cpu::onednn_info().bf16_kernel ? "onednn_bf16" : "bf16_widened_to_onednn_fp32";
  std::vector<Config> configs = {
      {bf16_name, [&] {
         cpu::onednn_gemm(cpu::GemmInput::kBF16, false, true, n, n, n, 1.0f, a16.data(), n,
                          b16.data(), n, 0.0f, c.data(), n);
       }, {}},
      {"onednn_fp32", [&] {
         cpu::onednn_gemm(cpu::GemmInput::kF32, false, true, n, n, n, 1.0f, a.data(), n,
                          b.data(), n, 0.0f, c.data(), n);
       }, {}},
      {"openblas_sgemm_own_threads", [&] {
         openblas_set_num_threads(threads);
         cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, size, size, size, 1.0f, a.data(),
                     size, b.data(), size, 0.0f, c.data(), size);
         openblas_set_num_threads(1);
       }, {}},
      {"openblas_sgemm_scion_split", [&] {
         openblas_set_num_threads(1);
         cpu::gemm(false, true, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
       }, {}},
  };
  for (Config& config : configs) config.run();  // warm-up: JIT, page faults
  for (int rep = 0; rep < reps; ++rep)
    for (Config& config : configs) config.seconds.push_back(seconds_of(config.run));
  const double flops = 2.0 * n * n * n;
  double best_fp32 = 0;
  for (const Config& config : configs) {
    const double gflops = flops / median(config.seconds) / 1e9;
    if (&config != &configs[0]) best_fp32 = std::max(best_fp32, gflops);
    std::printf("limit %s size=%d threads=%d median_seconds=%.4f gflops=%.1f\n", config.name, size,
                threads, median(config.seconds), gflops);
  }
  const double bf16 = flops / median(configs[0].seconds) / 1e9;
  std::printf("limit ratio %s_vs_best_fp32=%.2f\n", bf16_name, bf16 / best_fp32);
  return 0;
}
