// The device a bench program runs on (--device cpu|cuda), the machine line that says which,
// and the wait that makes a GPU's time measurable.
//
// --device cuda makes the CUDA backend through the plugin (runtime/cuda_plugin.h) in the
// asked precision; a machine where it cannot be made is an error (exit 3, with the
// reason), never a silent run on the CPU. On a GPU the ops only queue work: a timer read
// after them would time the queueing, so the programs call wait_for_device before reading
// a clock.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "bench/machine.h"
#include "runtime/backend.h"
#include "runtime/cuda_plugin.h"

namespace scion::bench {

// The backend of `--device` (cpu or cuda) in `precision`; the CPU one with `threads` and
// `fp32_matmul` as backend_options() reads them. Exits 2 for an unknown device, 3 when
// the CUDA backend cannot be made here.
inline std::unique_ptr<runtime::Backend> make_backend(const std::string& device, int threads,
                                                      const std::string& precision,
                                                      const std::string& fp32_matmul) {
  const runtime::CpuBackendOptions cpu = backend_options(threads, precision, fp32_matmul);
  if (device == "cpu") return runtime::make_cpu_backend(cpu);
  if (device != "cuda") {
    std::fprintf(stderr, "error: --device takes cpu or cuda, not '%s'\n", device.c_str());
    std::exit(2);
  }
  auto made = runtime::make_cuda_backend(cpu.precision);
  if (!made) {
    std::fprintf(stderr, "error: --device cuda: %s\n", made.status().message().c_str());
    std::exit(3);
  }
  return std::move(*made);
}

// The machine line: the CPU's (print_machine), and with --device cuda the GPU it runs on.
inline void print_device(const char* workload, const std::string& device) {
  print_machine(workload);
  if (device != "cuda") return;
  const runtime::CudaBackendInfo& info = runtime::cuda_backend_info();
  const int index = runtime::cuda_device_for_this_process();
  std::printf("%s gpu: %s (%s)\n", workload,
              info.devices.empty() ? "none" : info.devices[static_cast<std::size_t>(index)].c_str(),
              info.libraries.c_str());
}

// Returns when every op queued on `backend` so far has finished: a read of 4 bytes of its
// memory (`any`, a tensor of at least 4 bytes it allocated) waits for them on a device,
// and costs a memcpy of 4 bytes on the CPU.
inline void wait_for_device(runtime::Backend& backend, const runtime::Tensor& any) {
  float value = 0.0f;
  backend.copy_to_host(&value, any.data, sizeof value);
}

}  // namespace scion::bench
