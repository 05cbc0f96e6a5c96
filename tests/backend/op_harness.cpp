// OpRun and the harness's input values (op_harness.h).
#include "op_harness.h"

#include <cstdio>
#include <cstdlib>

#include "base/seeded_rng.h"

namespace scion::test {

std::vector<float> random_values(std::size_t n, std::uint64_t seed, float scale) {
  std::vector<float> values(n);
  const std::uint64_t base = base::mix64(seed);
  for (std::size_t i = 0; i < n; ++i) {
    const double unit = static_cast<double>(base::mix64(base + i) >> 11) * 0x1.0p-53;  // [0, 1)
    values[i] = static_cast<float>((2.0 * unit - 1.0) * scale);
  }
  return values;
}

std::vector<std::int32_t> random_ints(std::size_t n, std::uint64_t seed, std::int32_t bound) {
  std::vector<std::int32_t> values(n);
  const std::uint64_t base = base::mix64(seed);
  for (std::size_t i = 0; i < n; ++i)
    values[i] = static_cast<std::int32_t>(base::mix64(base + i) % static_cast<std::uint64_t>(bound));
  return values;
}

OpRun::~OpRun() {
  for (void* data : buffers_) backend_.deallocate(data);
}

void* OpRun::allocate(std::size_t bytes) {
  void* data = backend_.allocate(bytes == 0 ? 4 : bytes);
  if (data == nullptr) {
    std::fprintf(stderr, "backend_ops: %s could not allocate %zu bytes\n", backend_.name().c_str(),
                 bytes);
    std::exit(1);
  }
  buffers_.push_back(data);
  return data;
}

float* OpRun::upload(const std::vector<float>& values) {
  auto* data = static_cast<float*>(allocate(values.size() * sizeof(float)));
  backend_.copy_to_device(data, values.data(), values.size() * sizeof(float));
  return data;
}

std::int32_t* OpRun::upload(const std::vector<std::int32_t>& values) {
  auto* data = static_cast<std::int32_t*>(allocate(values.size() * sizeof(std::int32_t)));
  backend_.copy_to_device(data, values.data(), values.size() * sizeof(std::int32_t));
  return data;
}

std::uint16_t* OpRun::upload(const std::vector<std::uint16_t>& values) {
  auto* data = static_cast<std::uint16_t*>(allocate(values.size() * sizeof(std::uint16_t)));
  backend_.copy_to_device(data, values.data(), values.size() * sizeof(std::uint16_t));
  return data;
}

float* OpRun::buffer(std::size_t n, float fill) { return upload(std::vector<float>(n, fill)); }

void OpRun::keep(const std::string& name, const float* data, std::size_t n, OutputCheck check) {
  OpOutput output{name, check, std::vector<float>(n)};
  backend_.copy_to_host(output.values.data(), data, n * sizeof(float));
  outputs_.push_back(std::move(output));
}

void OpRun::keep_value(const std::string& name, double value, OutputCheck check) {
  outputs_.push_back({name, check, {static_cast<float>(value)}});
}

void OpRun::keep_host(const std::string& name, std::vector<float> values, OutputCheck check) {
  outputs_.push_back({name, check, std::move(values)});
}

}  // namespace scion::test
