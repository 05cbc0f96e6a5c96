#include "runtime/memory_info.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace scion::runtime {

std::optional<std::int64_t> available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (!line.starts_with("MemAvailable:")) continue;
    std::istringstream fields(line.substr(13));
    std::int64_t kib = 0;
    if (fields >> kib) return kib * 1024;  // the kernel writes "kB" meaning KiB
  }
  return std::nullopt;
}

namespace {

// A "Key:   123 kB" line of /proc/self/status, in bytes.
std::optional<std::int64_t> status_field(const char* key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (!line.starts_with(key)) continue;
    std::istringstream fields(line.substr(std::string(key).size()));
    std::int64_t kib = 0;
    if (fields >> kib) return kib * 1024;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::int64_t> resident_bytes() { return status_field("VmRSS:"); }
std::optional<std::int64_t> peak_resident_bytes() { return status_field("VmHWM:"); }

bool reset_peak_resident() {
  std::ofstream clear_refs("/proc/self/clear_refs");
  clear_refs << "5";
  clear_refs.flush();
  return static_cast<bool>(clear_refs);
}

std::string memory_size(std::int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

}  // namespace scion::runtime
