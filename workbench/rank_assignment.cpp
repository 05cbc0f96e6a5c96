#include "workbench/rank_assignment.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace scion::workbench {

std::vector<std::vector<std::size_t>> assign_longest_first(const std::vector<double>& work,
                                                           int ranks) {
  std::vector<std::size_t> order(work.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  // Largest first; equal work in input order, so the assignment is reproducible.
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return work[a] > work[b]; });
  std::vector<std::vector<std::size_t>> assigned(static_cast<std::size_t>(ranks));
  std::vector<double> load(static_cast<std::size_t>(ranks), 0.0);
  for (std::size_t item : order) {
    // min_element returns the first of equal loads: ties go to the lowest rank.
    const auto least = static_cast<std::size_t>(
        std::min_element(load.begin(), load.end()) - load.begin());
    assigned[least].push_back(item);
    load[least] += work[item];
  }
  return assigned;
}

std::vector<RankWork> assign_ranks(const Plan& plan, int ranks) {
  std::vector<std::string> trunks;  // in plan order
  std::map<std::string, double> work;
  for (const PlannedGroup& g : plan.groups) {
    if (!work.count(g.trunk)) trunks.push_back(g.trunk);
    work[g.trunk] += g.flops;
  }
  std::vector<double> loads;
  for (const std::string& trunk : trunks) loads.push_back(work.at(trunk));
  const auto assigned = assign_longest_first(loads, ranks);
  std::vector<RankWork> out(static_cast<std::size_t>(ranks));
  for (int rank = 0; rank < ranks; ++rank) {
    RankWork& r = out[static_cast<std::size_t>(rank)];
    r.rank = rank;
    for (std::size_t trunk : assigned[static_cast<std::size_t>(rank)]) {
      r.trunks.push_back(trunks[trunk]);
      r.flops += loads[trunk];
    }
    for (std::size_t i = 0; i < plan.groups.size(); ++i) {
      const PlannedGroup& g = plan.groups[i];
      if (std::find(r.trunks.begin(), r.trunks.end(), g.trunk) == r.trunks.end()) continue;
      r.groups.push_back(i);
      r.memory_bytes = std::max(r.memory_bytes, g.memory_bytes);
    }
  }
  return out;
}

}  // namespace scion::workbench
