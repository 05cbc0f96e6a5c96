// SharedModules: which parameters `share` declarations make one set of parameters.
//
// A share names models and parameter-name globs, `$model` standing for each model's own
// name. A parameter one member's globs match is the same parameter as the one of the same
// name (its member's name in place of `$model`) in every other member: one buffer in
// memory, one value in the store, trained with the gradients of every member. Its
// canonical key is that of the first model in spec order that holds it, whose seed
// initialises it; runtime/training/share_group.h says how it trains. Only a model's own
// new parameters (adapters, prefixes, prompts, heads) can be shared; the loader's checks
// (workbench/parameter_checks.h) reject the rest.
//
// Built once from a validated Workspace; an immutable value, safe to read from any thread.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/model/parameter_table.h"
#include "spec/workspace.h"

namespace scion::runtime {

// (model that introduced the value, parameter name): how ParameterStore keys storage.
using ParameterKey = std::pair<std::string, std::string>;

// The parameters of `model` that `share`'s globs match, keyed by name with the model's
// name replaced by the placeholder (the same key in every member), each with its entry of
// `table` (the model's parameter table).
std::map<std::string, const ParameterSpec*> shared_parameters(
    const spec::Share& share, const spec::Model& model, const std::vector<ParameterSpec>& table);

class SharedModules {
 public:
  SharedModules() = default;  // no shares
  explicit SharedModules(const spec::Workspace& workspace);

  // The key whose storage holds `key`: the owner's parameter when shared, `key` itself
  // otherwise.
  ParameterKey canonical(const ParameterKey& key) const;
  bool is_shared(const ParameterKey& key) const { return canonical_.count(key) > 0; }
  // The shared parameters `model` holds, by its own names, each with its canonical key.
  std::vector<std::pair<std::string, ParameterKey>> shared_by(const std::string& model) const;

 private:
  std::map<ParameterKey, ParameterKey> canonical_;  // only shared keys
};

}  // namespace scion::runtime
