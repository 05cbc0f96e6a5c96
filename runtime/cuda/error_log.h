// The first CUDA, cuBLAS or launch failure of a CUDA backend, kept as text.
//
// Backend operations return nothing (runtime/backend.h), and kernels fail asynchronously:
// a bad launch shows at once (cudaGetLastError), a fault inside a kernel only at the next
// synchronising call (a copy to the host, squared_norm, cross_entropy_forward). Each
// operation reports what it saw here; the first failure is kept and Backend::error()
// returns it, so callers (the training and evaluation loops) can stop with a clear error
// instead of carrying on with garbage. Later failures are usually consequences of the
// first (CUDA errors are sticky) and are not kept. Not thread-safe, like the backend.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

namespace scion::runtime::cuda {

class ErrorLog {
 public:
  // Records `err` (when it is a failure) as the failure of `what`.
  void check(cudaError_t err, const char* what) {
    if (err != cudaSuccess && first_.empty())
      first_ = std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
  }
  void check(cublasStatus_t status, const char* what) {
    if (status != CUBLAS_STATUS_SUCCESS && first_.empty())
      first_ = std::string(what) + ": cuBLAS " + cublasGetStatusName(status) + " (" +
               cublasGetStatusString(status) + ")";
  }
  void fail(const std::string& message) {
    if (first_.empty()) first_ = message;
  }
  // After a launch: a launch error (bad configuration, no kernel image for this device).
  void launched(const char* what) { check(cudaGetLastError(), what); }

  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

}  // namespace scion::runtime::cuda
