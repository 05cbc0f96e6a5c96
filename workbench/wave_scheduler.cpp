#include "workbench/wave_scheduler.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "workbench/rank_assignment.h"

namespace scion::workbench {

WaveScheduler::WaveScheduler(const Plan& plan, Parallelism parallel, int ranks, int rank)
    : plan_(plan),
      parallel_(parallel),
      ranks_(ranks),
      rank_(rank),
      mine_(plan.groups.size(), true) {
  for (const PlannedGroup& g : plan.groups) waves_ = std::max(waves_, g.wave + 1);
  if (ranks < 2) return;
  std::fill(mine_.begin(), mine_.end(), false);
  const std::vector<RankWork> assigned = assign_ranks(plan, ranks);
  for (std::size_t g : assigned[static_cast<std::size_t>(rank)].groups) mine_[g] = true;
}

bool WaveScheduler::task_parallel(std::size_t wave) const {
  if (ranks_ < 2 || parallel_ == Parallelism::kData) return false;
  if (parallel_ == Parallelism::kTask) return true;
  std::set<std::string> trunks;
  for (const PlannedGroup& g : plan_.groups)
    if (g.wave == wave) trunks.insert(g.trunk);
  return static_cast<int>(trunks.size()) >= ranks_;
}

std::vector<std::size_t> WaveScheduler::groups_of(std::size_t wave) const {
  const bool task = task_parallel(wave);
  std::vector<std::size_t> groups;
  for (std::size_t i = 0; i < plan_.groups.size(); ++i)
    if (plan_.groups[i].wave == wave && (!task || mine_[i])) groups.push_back(i);
  return groups;
}

OutcomeMark mark_of(const TrainingOutcome& outcome) {
  return {outcome.models.size(), outcome.groups.size(), outcome.diverged.size(),
          outcome.checkpointed.size()};
}

namespace {

// What this rank added to `outcome` since `since`.
nlohmann::json added_since(const OutcomeMark& since, const TrainingOutcome& outcome) {
  nlohmann::json mine = {{"models", nlohmann::json::array()},
                         {"groups", nlohmann::json::array()},
                         {"diverged", nlohmann::json::array()},
                         {"checkpointed", nlohmann::json::array()}};
  for (std::size_t i = since.models; i < outcome.models.size(); ++i)
    mine["models"].push_back(model_outcome_json(outcome.models[i]));
  for (std::size_t i = since.groups; i < outcome.groups.size(); ++i)
    mine["groups"].push_back(group_outcome_json(outcome.groups[i]));
  for (std::size_t i = since.diverged; i < outcome.diverged.size(); ++i)
    mine["diverged"].push_back(outcome.diverged[i]);
  for (std::size_t i = since.checkpointed; i < outcome.checkpointed.size(); ++i)
    mine["checkpointed"].push_back(nlohmann::json(outcome.checkpointed[i]));
  return mine;
}

// Appends one rank's additions to `outcome`.
Status append_from(const nlohmann::json& added, TrainingOutcome& outcome) {
  try {
    for (const nlohmann::json& m : added.at("models")) {
      auto model = model_outcome_from_json(m);
      if (!model) return model.status();
      outcome.models.push_back(std::move(*model));
    }
    for (const nlohmann::json& g : added.at("groups")) {
      auto group = group_outcome_from_json(g);
      if (!group) return group.status();
      outcome.groups.push_back(std::move(*group));
    }
    for (const nlohmann::json& d : added.at("diverged"))
      outcome.diverged.push_back(d.get<std::string>());
    for (const nlohmann::json& c : added.at("checkpointed"))
      outcome.checkpointed.push_back(c.get<std::pair<std::string, std::int64_t>>());
  } catch (const nlohmann::json::exception& e) {
    return corruption(std::string("a rank sent training outcomes of another form: ") + e.what());
  }
  return Status::ok();
}

}  // namespace

Status exchange_wave_outcomes(runtime::Communicator& comm, const OutcomeMark& since,
                              TrainingOutcome& outcome) {
  const std::vector<std::uint8_t> bytes = nlohmann::json::to_cbor(added_since(since, outcome));
  auto all = comm.all_gather(std::string(bytes.begin(), bytes.end()));
  if (!all) return all.status();
  outcome.models.erase(outcome.models.begin() + static_cast<std::ptrdiff_t>(since.models),
                       outcome.models.end());
  outcome.groups.resize(since.groups);
  outcome.diverged.resize(since.diverged);
  outcome.checkpointed.resize(since.checkpointed);
  for (const std::string& from : *all) {
    const nlohmann::json j = nlohmann::json::from_cbor(from, true, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object())
      return corruption(
          "a rank sent training outcomes that cannot be read; are all ranks "
          "the same scion?");
    SCION_RETURN_IF_ERROR(append_from(j, outcome));
  }
  return Status::ok();
}

}  // namespace scion::workbench
