#include "workbench/rank_hosts.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <map>

namespace scion::workbench {

Result<std::vector<std::string>> rank_hosts(runtime::Communicator& comm) {
  char buffer[256] = {};
  const std::string mine = gethostname(buffer, sizeof buffer - 1) == 0 ? buffer : "unknown";
  return comm.all_gather(mine);
}

Result<Parallelism> parallelism_on_hosts(Parallelism requested,
                                         const std::vector<std::string>& hosts) {
  std::map<std::string, std::vector<int>> ranks_on;  // host -> its ranks
  for (std::size_t r = 0; r < hosts.size(); ++r) ranks_on[hosts[r]].push_back(static_cast<int>(r));
  if (ranks_on.size() <= 1) return requested;
  if (requested != Parallelism::kTask) return Parallelism::kData;
  std::vector<std::string> where;
  for (const auto& [host, ranks] : ranks_on)
    where.push_back(
        fmt::format("rank{} {} on {}", ranks.size() == 1 ? "" : "s", fmt::join(ranks, ","), host));
  return Status(
      StatusCode::kInvalidArgument,
      fmt::format("--parallel task makes every rank write the store, but this job's ranks "
                  "are on {} machines ({}): SQLite's locks are not safe over a network file "
                  "system; run the ranks on one machine, or use --parallel data (rank 0 "
                  "alone writes)",
                  ranks_on.size(), fmt::join(where, "; ")));
}

}  // namespace scion::workbench
