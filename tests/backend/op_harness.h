// The backend op harness: every operation of the Backend interface (runtime/backend.h)
// run on a candidate backend and on the CPU reference with the same inputs, compared
// output by output. ggml's tests/test-backend-ops.cpp is the model.
//
// A case uploads its inputs with the backend's copy_to_device, runs one operation (or a
// forward and the backward that needs the forward's saved values), and reads its outputs
// back with copy_to_host: it never touches backend memory on the host, so it runs
// unchanged on a device backend. Outputs an operation assigns start as a fill value
// (kUnwritten, not zero), so an element it skips shows; outputs it accumulates into start
// from random values, so a backend that assigns instead shows. Cases use the aliasing the
// model code relies on (dropout in place, tanh_backward with dinp == dout).
//
// Each output says how it is judged (OutputCheck); the tolerances are in backend_ops.cpp.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/backend.h"

namespace scion::test {

// How an output is compared with the reference.
enum class OutputCheck {
  kFp32,     // fp32 arithmetic in every precision (norms, softmax, losses, updates, bias sums)
  kProduct,  // a matmul product: computed in the backend's precision (bf16 operands)
  // A product with bf16 operands in every precision (a frozen weight held in bf16): the
  // reference does the same arithmetic, so fp32 tolerance; summed differently per thread.
  kBf16Product,
  // An output of attention's products: computed in the backend's attention_precision()
  // (bf16 on a bf16 CPU backend, fp32 where a backend keeps attention fp32).
  kAttentionProduct,
  kExact,  // integers and masks: equal in every precision and on every backend
};

struct OpOutput {
  std::string name;
  OutputCheck check = OutputCheck::kFp32;
  std::vector<float> values;
};

// The fill value of outputs an operation must assign (never a value it could compute).
inline constexpr float kUnwritten = 777.0f;

// Uniform values in [-scale, scale), the same for a seed on every platform.
std::vector<float> random_values(std::size_t n, std::uint64_t seed, float scale = 1.0f);
// Integers in [0, bound).
std::vector<std::int32_t> random_ints(std::size_t n, std::uint64_t seed, std::int32_t bound);

// One case's backend memory and outputs; frees the memory when destroyed.
class OpRun {
 public:
  explicit OpRun(runtime::Backend& backend) : backend_(backend) {}
  ~OpRun();
  OpRun(const OpRun&) = delete;
  OpRun& operator=(const OpRun&) = delete;

  runtime::Backend& backend() { return backend_; }
  // Backend memory holding `values` (copy_to_device).
  float* upload(const std::vector<float>& values);
  std::int32_t* upload(const std::vector<std::int32_t>& values);
  std::uint16_t* upload(const std::vector<std::uint16_t>& values);  // bf16 bits
  // Backend memory of n floats, each `fill`.
  float* buffer(std::size_t n, float fill = kUnwritten);
  // Reads n floats of backend memory (copy_to_host) as output `name`.
  void keep(const std::string& name, const float* data, std::size_t n,
            OutputCheck check = OutputCheck::kFp32);
  void keep_value(const std::string& name, double value, OutputCheck check = OutputCheck::kFp32);
  // Host values as output `name` (what copy_to_host wrote).
  void keep_host(const std::string& name, std::vector<float> values, OutputCheck check);

  const std::vector<OpOutput>& outputs() const { return outputs_; }

 private:
  void* allocate(std::size_t bytes);

  runtime::Backend& backend_;
  std::vector<void*> buffers_;
  std::vector<OpOutput> outputs_;
};

struct OpCase {
  std::string op;     // the Backend method under test ("matmul_backward")
  std::string shape;  // sizes and variant ("N=512 C=384 OC=768 accumulate")
  std::function<void(OpRun&)> run;
};

// Every case, several shapes per operation: small and ragged ones, and ones above the
// CPU kernels' parallel thresholds (runtime/cpu/parallel.h: 2^15 elements; gemm.cpp:
// 2^18 multiply-adds) so the threaded paths run.
std::vector<OpCase> all_op_cases();

}  // namespace scion::test
