// The optimizer reads the host once per step (runtime/model/optimizer.h), and keeps the CPU's bits.
//
// On a GPU every value the host reads waits for the device; clipping and the finite check
// used to read one sum of squares per trainable tensor, twice per step. Here the stand-in
// for a device is HostFaultBackend (host_fault_backend.h): memory the host cannot touch,
// the CPU's kernels, and a count of the operations that hand a value to the host. The bits
// are checked against the step as it was computed before (one squared_norm per tensor on
// the host, clipping decided and scaled there), written out below with the CPU backend's
// own operations.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "host_fault_backend.h"
#include "runtime/model/optimizer.h"

using namespace scion;
using runtime::Backend;
using runtime::TrainableTensor;

namespace {

// Uneven sizes, so that tensors of one element and of many are both in the sums.
const std::vector<std::int64_t> kSizes = {1, 7, 300, 4096, 33};

std::vector<float> values(std::int64_t n, std::uint64_t seed, float scale) {
  std::vector<float> v(static_cast<std::size_t>(n));
  std::uint64_t state = seed;
  for (float& x : v) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    x = scale * (static_cast<float>(state >> 40) / static_cast<float>(1 << 24) - 0.5f);
  }
  return v;
}

// Parameters and gradients in one backend's memory, with the same start on any backend.
class Tensors {
 public:
  explicit Tensors(Backend& backend) : backend_(backend) {
    for (std::size_t i = 0; i < kSizes.size(); ++i) {
      const std::int64_t n = kSizes[i];
      Tensor param{backend.allocate(static_cast<std::size_t>(n) * 4), {n}};
      Tensor grad{backend.allocate(static_cast<std::size_t>(n) * 4), {n}};
      memory_.push_back(param.data);
      memory_.push_back(grad.data);
      backend.copy_to_device(param.data, values(n, 10 + i, 2.0f).data(), param.bytes());
      std::string name = "t";  // not "t" + to_string(i): GCC 12 warns falsely (-Wrestrict)
      name += std::to_string(i);
      list.push_back({name, param, grad});
    }
  }
  ~Tensors() {
    for (void* p : memory_) backend_.deallocate(p);
  }
  // This step's gradients (large enough that clipping at 1 scales them).
  void set_gradients(int step) {
    for (std::size_t i = 0; i < list.size(); ++i)
      backend_.copy_to_device(list[i].grad.data, values(kSizes[i], 100 * step + i, 3.0f).data(),
                              list[i].grad.bytes());
  }
  std::vector<float> parameters() {
    std::vector<float> all;
    for (const TrainableTensor& t : list) {
      const std::vector<float> v = runtime::copy_to_host(backend_, t.param);
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  }
  std::vector<TrainableTensor> list;

 private:
  using Tensor = runtime::Tensor;
  Backend& backend_;
  std::vector<void*> memory_;
};

spec::OptimizerSpec adamw(float grad_clip) {
  spec::OptimizerSpec spec;
  spec.lr = 1e-2f;
  spec.weight_decay = 0.01f;
  spec.grad_clip = grad_clip;
  return spec;
}

// The step as computed before the one-read change, on the CPU backend: micro-batch mean,
// the global norm summed on the host from one squared_norm per tensor, clipping decided
// and scaled on the host, then AdamW. Returns the norm.
float reference_step(Backend& cpu, std::vector<TrainableTensor>& tensors,
                     std::vector<std::vector<float>>& m, std::vector<std::vector<float>>& v,
                     const spec::OptimizerSpec& spec, float lr, int micro_batches, int step) {
  for (const TrainableTensor& t : tensors)
    cpu.scale_inplace(t.grad.f32(), 1.0f / static_cast<float>(micro_batches), t.grad.numel());
  double sum = 0.0;
  for (const TrainableTensor& t : tensors) sum += cpu.squared_norm(t.grad.f32(), t.grad.numel());
  const float norm = static_cast<float>(std::sqrt(sum));
  if (norm > spec.grad_clip)
    for (const TrainableTensor& t : tensors)
      cpu.scale_inplace(t.grad.f32(), spec.grad_clip / (norm + 1e-6f), t.grad.numel());
  for (std::size_t i = 0; i < tensors.size(); ++i)
    cpu.adamw_update(tensors[i].param.f32(), tensors[i].grad.f32(), m[i].data(), v[i].data(),
                     tensors[i].param.numel(), lr, spec.beta1, spec.beta2, spec.eps,
                     spec.weight_decay, step);
  return norm;
}

}  // namespace

TEST_CASE("an optimizer step reads the host once, clipping or not", "[optimizer]") {
  for (const float grad_clip : {1.0f, 0.0f}) {
    test::HostFaultBackend device(runtime::CpuBackendOptions{.threads = 1});
    Tensors tensors(device);
    auto optimizer =
        runtime::Optimizer::create(device, adamw(grad_clip), tensors.list, "a test").value();
    for (int step = 1; step <= 3; ++step) {
      tensors.set_gradients(step);
      const std::size_t before = device.host_reads();
      const float norm = optimizer->step(1e-2f, 2);
      CHECK_FALSE(optimizer->first_non_finite_parameter());
      INFO("grad_clip " << grad_clip << ", step " << step);
      CHECK(device.host_reads() - before == 1);
      CHECK((grad_clip > 0 ? norm > grad_clip : norm == 0.0f));  // the gradients are large
    }
  }
}

TEST_CASE("the optimizer's bits on the CPU are the per-tensor host computation's", "[optimizer]") {
  const spec::OptimizerSpec spec = adamw(1.0f);
  auto cpu = runtime::make_cpu_backend(runtime::CpuBackendOptions{.threads = 1});
  test::HostFaultBackend device(runtime::CpuBackendOptions{.threads = 1});
  Tensors reference(*cpu), on_cpu(*cpu), on_device(device);
  auto cpu_optimizer = runtime::Optimizer::create(*cpu, spec, on_cpu.list, "a test").value();
  auto device_optimizer =
      runtime::Optimizer::create(device, spec, on_device.list, "a test").value();
  std::vector<std::vector<float>> m, v;
  for (const std::int64_t n : kSizes) {
    m.emplace_back(static_cast<std::size_t>(n), 0.0f);
    v.emplace_back(static_cast<std::size_t>(n), 0.0f);
  }
  for (int step = 1; step <= 3; ++step) {
    for (Tensors* t : {&reference, &on_cpu, &on_device}) t->set_gradients(step);
    const float expected = reference_step(*cpu, reference.list, m, v, spec, 1e-2f, 2, step);
    CHECK(expected > spec.grad_clip);  // clipping is on the path being compared
    CHECK(cpu_optimizer->step(1e-2f, 2) == expected);
    CHECK(device_optimizer->step(1e-2f, 2) == expected);
    const std::vector<float> want = reference.parameters();
    const std::vector<float> got_cpu = on_cpu.parameters(), got_device = on_device.parameters();
    REQUIRE(got_cpu.size() == want.size());
    REQUIRE(got_device.size() == want.size());
    CHECK(std::memcmp(got_cpu.data(), want.data(), want.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(got_device.data(), want.data(), want.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("a parameter made non-finite by its update is named from the step's one read",
          "[optimizer]") {
  test::HostFaultBackend device(runtime::CpuBackendOptions{.threads = 1});
  Tensors tensors(device);
  auto optimizer = runtime::Optimizer::create(device, adamw(0.0f), tensors.list, "a test").value();
  tensors.set_gradients(1);
  const std::vector<float> infinite(static_cast<std::size_t>(kSizes[2]), INFINITY);
  device.copy_to_device(tensors.list[2].grad.data, infinite.data(), tensors.list[2].grad.bytes());
  const std::size_t before = device.host_reads();
  optimizer->step(1e-2f);
  CHECK(optimizer->first_non_finite_parameter() == std::optional<std::string>("t2"));
  CHECK(device.host_reads() - before == 1);
}
