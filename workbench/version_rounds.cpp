#include "workbench/version_rounds.h"

#include <algorithm>

#include "workbench/model_lookup.h"
#include "workbench/model_version.h"

namespace scion::workbench {

Result<std::vector<VersionRound>> version_rounds(const spec::Workspace& ws,
                                                 lineage::LineageStore& store,
                                                 const std::vector<std::string>& named) {
  std::vector<VersionRound> rounds(1);
  rounds.front().workspace = ws;
  std::map<std::pair<std::string, std::string>, std::size_t> round_of;  // (model, recipe)
  for (const std::string& text : named) {
    auto ref = parse_model_ref(text);
    if (!ref) return ref.status();
    auto in_spec = find_spec_model(ws, ref->model);
    if (!in_spec) return in_spec.status();
    std::size_t index = 0;
    if (!ref->version.empty()) {
      auto version = resolve_version(store, *ref);
      if (!version) return version.status();
      if (version->recipe_hash != (*in_spec)->recipe_hash) {
        auto [it, added] =
            round_of.try_emplace({version->model, version->recipe_hash}, rounds.size());
        if (added) {
          auto at = workspace_at(ws, store, *version);
          if (!at) return at.status();
          rounds.push_back({.workspace = std::move(*at)});
        }
        index = it->second;
      }
    }
    VersionRound& round = rounds[index];
    if (std::find(round.models.begin(), round.models.end(), ref->model) != round.models.end())
      continue;
    round.models.push_back(ref->model);
    round.labels[ref->model] = text;
  }
  if (rounds.front().models.empty()) rounds.erase(rounds.begin());
  return rounds;
}

}  // namespace scion::workbench
