// How much memory the machine can give, for refusing work before it starts and for
// saying so when an allocation fails.
//
// available_memory_bytes() reads MemAvailable from /proc/meminfo: the kernel's estimate
// of what a new process can allocate without swapping (free memory plus reclaimable
// caches), which is what a training job competes for. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace scion::runtime {

// Bytes a new allocation can get without swapping; nullopt when the system does not say
// (no /proc/meminfo).
std::optional<std::int64_t> available_memory_bytes();

// This process's resident memory now (VmRSS), and its peak (VmHWM) since it started or
// since the last reset_peak_resident(); nullopt where /proc/self/status does not say.
std::optional<std::int64_t> resident_bytes();
std::optional<std::int64_t> peak_resident_bytes();
// Makes the peak the current resident size (writes 5 to /proc/self/clear_refs, Linux
// 4.0 and later), so a peak can be measured for one phase of the process. False when
// the kernel refuses; the peak then keeps counting from the start.
bool reset_peak_resident();

// "768.7 GiB", "12.0 MiB": bytes in the binary unit that keeps the number readable.
std::string memory_size(std::int64_t bytes);

}  // namespace scion::runtime
