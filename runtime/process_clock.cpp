#include "runtime/process_clock.h"

#include <unistd.h>

#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

namespace scion::runtime {

std::optional<double> seconds_since_process_start() {
  std::ifstream stat("/proc/self/stat");
  std::string line;
  if (!std::getline(stat, line)) return std::nullopt;
  // The command name (field 2) is in parentheses and may hold spaces: count from after it.
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(close + 2));
  std::string field;
  // Fields 3 (state) to 21 are skipped; field 22 is the start time in clock ticks.
  for (int i = 3; i < 22 && fields >> field;) ++i;
  unsigned long long start_ticks = 0;
  if (!(fields >> start_ticks)) return std::nullopt;
  const long ticks_per_second = sysconf(_SC_CLK_TCK);
  timespec now{};
  if (ticks_per_second <= 0 || clock_gettime(CLOCK_BOOTTIME, &now) != 0) return std::nullopt;
  const double since_boot =
      static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
  return since_boot - static_cast<double>(start_ticks) / static_cast<double>(ticks_per_second);
}

}  // namespace scion::runtime
