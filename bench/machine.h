// The machine line every bench program prints with its figures: CPU model, the ISA
// oneDNN dispatches to, and whether bf16 is native (BENCHMARKS.md asks for both).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "runtime/backend.h"
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

inline void print_machine(const char* workload) {
  const runtime::cpu::OnednnInfo info = runtime::cpu::onednn_info();
  std::printf("%s machine: cpu=\"%s\" onednn=%s isa=%s bf16=%s\n", workload, cpu_model().c_str(),
              info.version.c_str(), info.isa.c_str(),
              info.native_bf16 ? "native" : info.bf16_kernel ? "onednn-emulated" : "fp32-emulated");
}

// The backend options of `--precision fp32|bf16` and `--fp32-matmul openblas|onednn`;
// anything else prints the error and exits 2, as BenchOptions does.
inline runtime::CpuBackendOptions backend_options(int threads, const std::string& precision,
                                                  const std::string& fp32_matmul) {
  runtime::CpuBackendOptions options{.threads = threads};
  if (precision == "bf16") options.precision = runtime::Precision::kBF16;
  else if (precision != "fp32") {
    std::fprintf(stderr, "error: --precision takes fp32 or bf16, not '%s'\n", precision.c_str());
    std::exit(2);
  }
  if (fp32_matmul == "onednn") options.fp32_matmul = runtime::MatmulLibrary::kOnednn;
  else if (fp32_matmul != "openblas") {
    std::fprintf(stderr, "error: --fp32-matmul takes openblas or onednn, not '%s'\n",
                 fp32_matmul.c_str());
    std::exit(2);
  }
  return options;
}

}  // namespace scion::bench
