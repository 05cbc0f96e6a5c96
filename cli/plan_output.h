// How `scion plan` shows a workbench::Plan (workbench/plan.h): the family tree with each
// model's methods, inheritance, parameters, memory and what the plan does with it, the
// weights in memory, the co-batching sets, the training groups in order, and with
// --ranks the groups' assignment to MPI ranks. Text on stdout, or one JSON document
// (docs/json.md). Printing only; every figure comes from the plan.
#pragma once

#include <nlohmann/json.hpp>

#include "workbench/plan.h"
#include "workbench/rank_assignment.h"

namespace scion::cli {

void print_plan_text(const workbench::Plan& plan, const std::vector<workbench::RankWork>* ranks);
nlohmann::json plan_json(const workbench::Plan& plan,
                         const std::vector<workbench::RankWork>* ranks);

}  // namespace scion::cli
