// The CUDA Backend (runtime/backend.h) on the current device, made by the plugin's
// factory (plugin_abi.h). Every op runs on the legacy default stream in issue order;
// copy_to_host, squared_norm and cross_entropy_forward wait for the device, so their host
// values are final when they return.
#pragma once

#include <memory>
#include <string>

#include "runtime/backend.h"

namespace scion::runtime::cuda {

struct BackendFlags {
  // fp32 products may use TF32 tensor cores (about 1e-3 relative error; off unless asked).
  bool allow_tf32 = false;
  // Every linear-layer product on cublasGemmEx, the fallback for shapes cuBLASLt has no
  // algorithm for (lt_matmul.h), so that tests can compare it on every shape.
  bool products_on_cublas = false;
};

// A backend in `precision` on the current device, or null with *why set (no device,
// cuBLAS would not start, no memory for its scratch).
std::unique_ptr<Backend> make_backend(Precision precision, const BackendFlags& flags,
                                      std::string* why);

}  // namespace scion::runtime::cuda
