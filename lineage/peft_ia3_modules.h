// Which linear layers a PEFT 0.10 IA3 adapter_config.json scales, read as PEFT reads it, so
// that `scion import --peft` can compare an adapter saved with module-name lists (PEFT's
// usual form) with the declaration as well as one with the regular expressions
// `scion export --format peft` writes.
//
// PEFT matches each module of the task model (its name, such as
// "bert.encoder.layer.0.attention.self.key"): target_modules as a string is a regular
// expression full-matched against the name, as a list names that the module's name is or
// ends with after a dot; feedforward_modules as a string likewise, as a list names the
// module's name ends with (a plain string end: "output.dense" also takes
// "attention.output.dense"). A targeted module that is also feed-forward has its input
// scaled, any other targeted module its output. Only the base's linear layers are
// compared (a module outside them shows up as an extra tensor in the weights).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "spec/workspace.h"

namespace scion::lineage {

// Each linear as "<layer>.<target>" ("0.k", "1.ffn_out"), spec::kLinearTargets names.
struct Ia3Modules {
  std::set<std::string> scaled_output;
  std::set<std::string> scaled_input;
  bool operator==(const Ia3Modules&) const = default;
};

// What `model`'s declaration scales. REQUIRES: model.adaptation.find<spec::Ia3Spec>(), an imported
// HF base.
Ia3Modules declared_ia3_modules(const spec::Workspace& workspace, const spec::Model& model);

// What the config's two values select on `model`'s base; nullopt (with `why`) for a value
// PEFT would not take: not a string or a list of strings, or an invalid expression.
std::optional<Ia3Modules> peft_ia3_modules(const spec::Workspace& workspace,
                                           const spec::Model& model,
                                           const nlohmann::json& target_modules,
                                           const nlohmann::json& feedforward_modules,
                                           std::string& why);

// "{0.k, 0.v}" for messages.
std::string ia3_modules_text(const std::set<std::string>& modules);

}  // namespace scion::lineage
