// libFuzzer target: parse_safetensors() on arbitrary bytes must return a value or an
// error Status, never crash, hang or read outside the input. Every accepted tensor's
// bytes are read, so AddressSanitizer catches views that point outside the buffer.
#include <cstddef>
#include <cstdint>
#include <span>

#include "lineage/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::byte> file(reinterpret_cast<const std::byte*>(data), size);
  auto parsed = scion::lineage::parse_safetensors(file, "fuzz-input");
  if (!parsed.is_ok()) return 0;
  unsigned checksum = 0;
  for (const auto& tensor : parsed->tensors) {
    for (std::byte b : tensor.bytes) checksum += std::to_integer<unsigned>(b);
  }
  for (const auto& [key, value] : parsed->metadata)
    checksum += static_cast<unsigned>(key.size() + value.size());
  // Keep the reads: the optimiser may not drop a loop whose result is observed.
  volatile unsigned sink = checksum;
  (void)sink;
  return 0;
}
