// The machine line every bench program prints before its figures (docs/benchmarks.md asks for
// it): CPU model and ISA flags, the ISA oneDNN dispatches to and how bf16 runs, OpenBLAS's
// core name (`Prescott` means its generic kernels), and the library each class of fp32
// product runs on here (runtime/cpu/matmul_choice.h) with how that was decided.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/backend.h"
#include "runtime/cpu/matmul_choice.h"
#include "runtime/cpu/onednn_gemm.h"

namespace scion::bench {

inline std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
      return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

// The vector ISA flags of the CPU that matter to products: "avx2 fma avx512f avx512_bf16".
inline std::string cpu_isa_flags() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, found;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string flag; words >> flag;)
      for (const char* wanted : {"avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"})
        if (flag == wanted) found += (found.empty() ? "" : " ") + flag;
    break;
  }
  return found.empty() ? "none of avx2/avx512" : found;
}

// The OpenMP wait the scion command uses (cli/main.cpp, choose_openmp_wait_policy: a short
// spin, GOMP_SPINCOUNT=1000, unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set), so that a
// bench measures scion's kernels as the command runs them: libgomp reads it as it loads,
// so the program starts itself again once with it. Call first in main.
inline void use_scions_openmp_wait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (setenv("GOMP_SPINCOUNT", "1000", 1) != 0) return;
  execv("/proc/self/exe", argv);  // returns only when it fails: go on with the default
}

inline void print_machine(const char* workload) {
  const runtime::cpu::OnednnInfo info = runtime::cpu::onednn_info();
  const runtime::cpu::MatmulChoice& choice = runtime::cpu::fp32_matmul_choice();
  std::printf(
      "%s machine: cpu=\"%s\" cpu_isa=\"%s\" onednn=%s onednn_isa=%s bf16=%s openblas_core=%s\n",
      workload, cpu_model().c_str(), cpu_isa_flags().c_str(), info.version.c_str(),
      info.isa.c_str(),
      info.native_bf16   ? "native"
      : info.bf16_kernel ? "onednn-emulated"
                         : "fp32-emulated",
      choice.openblas_core.c_str());
  std::printf("%s fp32 products:", workload);
  for (int c = 0; c < runtime::cpu::kProductClasses; ++c) {
    const auto product_class = static_cast<runtime::cpu::ProductClass>(c);
    const runtime::cpu::ClassChoice& chosen = choice.classes[c];
    std::printf(" %s=%s", runtime::cpu::product_class_name(product_class),
                runtime::cpu::matmul_library_name(chosen.library));
    if (chosen.onednn_gflops > 0)
      std::printf("(onednn %.0f, openblas %.0f GFLOP/s 1 thread)", chosen.onednn_gflops,
                  chosen.openblas_gflops);
  }
  std::printf("; %s\n", choice.how.c_str());
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  std::printf("%s openmp: OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s\n", workload, policy ? policy : "",
              spin ? spin : "");
}

// The backend options of `--precision fp32|bf16` and `--fp32-matmul auto|openblas|onednn`
// (auto: the machine's choice per class, as the scion command uses); anything else prints
// the error and exits 2, as BenchOptions does.
inline runtime::CpuBackendOptions backend_options(int threads, const std::string& precision,
                                                  const std::string& fp32_matmul) {
  runtime::CpuBackendOptions options{.threads = threads};
  if (precision == "bf16")
    options.precision = runtime::Precision::kBF16;
  else if (precision != "fp32") {
    std::fprintf(stderr, "error: --precision takes fp32 or bf16, not '%s'\n", precision.c_str());
    std::exit(2);
  }
  if (fp32_matmul == "onednn")
    options.fp32_matmul = runtime::MatmulLibrary::kOnednn;
  else if (fp32_matmul == "openblas")
    options.fp32_matmul = runtime::MatmulLibrary::kOpenBlas;
  else if (fp32_matmul != "auto") {
    std::fprintf(stderr, "error: --fp32-matmul takes auto, openblas or onednn, not '%s'\n",
                 fp32_matmul.c_str());
    std::exit(2);
  }
  return options;
}

}  // namespace scion::bench
