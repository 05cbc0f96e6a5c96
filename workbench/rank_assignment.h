// Task parallelism over MPI ranks, as `scion plan --ranks N` shows it.
//
// Groups of models on different trunks share nothing, so they could train on different
// ranks at once. A trunk's groups stay together on one rank: they depend on each other
// (a descendant waits for its parent's wave) and hold the one trunk. The trunks are
// assigned by longest processing time first (Graham's LPT rule: the largest estimated
// FLOPs first, each to the rank with the least work so far, ties to the lowest rank),
// whose longest rank is within 4/3 of the best possible. `scion run` under mpirun trains
// a task-parallel wave so (workbench/training.cpp, docs/distributed.md).
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "workbench/plan.h"

namespace scion::workbench {

// For each of `ranks` ranks, the indices of the `work` items it gets, largest first.
// REQUIRES: ranks >= 1; every work item >= 0.
std::vector<std::vector<std::size_t>> assign_longest_first(const std::vector<double>& work,
                                                           int ranks);

struct RankWork {
  int rank = 0;
  std::vector<std::string> trunks;  // largest first
  std::vector<std::size_t> groups;  // indices into Plan::groups, in plan order
  double flops = 0;
  std::int64_t memory_bytes = 0;  // its largest group's estimate
};

// The plan's groups on `ranks` ranks, one entry per rank (an idle rank has no trunks).
// REQUIRES: ranks >= 1.
std::vector<RankWork> assign_ranks(const Plan& plan, int ranks);

}  // namespace scion::workbench
