#include "workbench/parameter_checks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fnmatch.h>

#include <map>

#include "runtime/model/parameter_binding.h"
#include "runtime/model/parameter_table.h"
#include "runtime/model/shared_modules.h"

namespace scion::workbench {

using runtime::ParameterSpec;
using spec::Diagnostic;
using spec::LoadResult;
using spec::Model;
using spec::Share;
using spec::Workspace;

namespace {

bool matches(const std::string& glob, const std::string& name) {
  return fnmatch(glob.c_str(), name.c_str(), 0) == 0;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  return fmt::format("({})", fmt::join(shape, ", "));
}

Diagnostic at_model(const Model& m, const std::string& path, std::string message) {
  return {m.location, path, std::move(message)};
}

void check_globs(const Model& m, const std::vector<ParameterSpec>& table,
                 std::vector<Diagnostic>& out) {
  for (const auto& [key, globs] :
       {std::pair{"freeze", &m.freeze}, std::pair{"unfreeze", &m.unfreeze}}) {
    for (std::size_t i = 0; i < globs->size(); ++i) {
      const std::string& glob = (*globs)[i];
      bool any = false;
      for (const ParameterSpec& p : table) any = any || matches(glob, p.name);
      if (!any) {
        const std::string path = fmt::format("models.{}.{}[{}]", m.name, key, i);
        out.push_back(at_model(m, path,
                               fmt::format("{} glob '{}' matches no parameter of '{}' at {} "
                                           "(names look like blk.0.attn_q.weight; `scion plan "
                                           "--json` lists them)",
                                           key, glob, m.name, path)));
      }
    }
  }
}

// The shapes of one model's shared parameters, by placeholder key.
std::map<std::string, std::vector<std::int64_t>> shared_shapes(
    const Share& share, const Model& m, const std::vector<ParameterSpec>& table) {
  std::map<std::string, std::vector<std::int64_t>> shapes;
  for (const auto& [key, p] : runtime::shared_parameters(share, m, table)) shapes[key] = p->shape;
  return shapes;
}

// What a member must be for its modules to be trained by all members at once: a model
// that trains, on the same frozen trunk as the others, sharing only what it introduces.
void check_share_member(const Workspace& ws, const Share& share, const Model& m, const Model& first,
                        const std::vector<ParameterSpec>& table, std::vector<Diagnostic>& out) {
  const std::string path = "share." + share.name + ".models";
  auto error = [&](std::string message) {
    out.push_back({share.location, path, std::move(message)});
  };
  if (m.is_base()) {
    error(
        fmt::format("share '{}': '{}' is a base, which trains its whole trunk at {}; share "
                    "modules between descendants",
                    share.name, m.name, path));
    return;
  }
  if (!m.training) {
    error(
        fmt::format("share '{}': '{}' has no `train` recipe; models that share modules train them "
                    "together, so every one of them needs one at {}",
                    share.name, m.name, path));
    return;
  }
  for (const auto& [key, p] : runtime::shared_parameters(share, m, table))
    if (p->introduced_by != m.name || !runtime::is_new_parameter(p->name, m)) {
      const std::string modules = "share." + share.name + ".modules";
      out.push_back(
          {share.location, modules,
           fmt::format("share '{}': '{}' of '{}' is {} parameter at {}; only a model's own "
                       "adapters, prefixes, prompts and heads can be shared",
                       share.name, p->name, m.name,
                       p->introduced_by == m.name ? "a retrained inherited" : "an inherited",
                       modules)});
      break;
    }
  for (const ParameterSpec& p : table)
    if (p.trainable && p.introduced_by == m.name && !runtime::is_new_parameter(p.name, m)) {
      error(
          fmt::format("share '{}': '{}' retrains '{}' of its trunk, so it cannot train co-batched "
                      "with the others at {}; share only between models whose trunk stays frozen",
                      share.name, m.name, p.name, path));
      break;
    }
  if (&m == &first || !first.training) return;
  if (ws.ancestry(m).back() != ws.ancestry(first).back())
    error(
        fmt::format("share '{}': '{}' descends from '{}' but '{}' from '{}' at {}; models that "
                    "share modules train over one frozen trunk, so they must have one base",
                    share.name, m.name, ws.ancestry(m).back()->name, first.name,
                    ws.ancestry(first).back()->name, path));
  if (m.training->grad_accumulation != first.training->grad_accumulation)
    error(
        fmt::format("share '{}': '{}' accumulates {} micro-batches a step but '{}' {} at {}; "
                    "models that share modules take their steps together, so give them the "
                    "same train.grad_accumulation",
                    share.name, m.name, m.training->grad_accumulation, first.name,
                    first.training->grad_accumulation, path));
}

void check_share(const Workspace& ws, const Share& share, std::vector<Diagnostic>& out) {
  const std::string path = "share." + share.name + ".modules";
  const Model* first = nullptr;
  std::map<std::string, std::vector<std::int64_t>> first_params;
  for (const std::string& name : share.models) {
    const Model& m = *ws.find_model(name);
    const std::vector<ParameterSpec> table = runtime::parameter_table(ws, m);
    const auto params = shared_shapes(share, m, table);
    if (params.empty()) {
      out.push_back({share.location, path,
                     fmt::format("share '{}': modules [{}] match no parameter of '{}' at {}",
                                 share.name, fmt::join(share.modules, ", "), name, path)});
      continue;
    }
    if (first == nullptr) {
      first = &m;
      first_params = params;
    }
    check_share_member(ws, share, m, *first, table, out);
    if (first == &m) continue;
    for (const auto& [key, shape] : first_params) {
      const auto other = params.find(key);
      if (other == params.end()) {
        out.push_back({share.location, path,
                       fmt::format("share '{}': '{}' has '{}' but '{}' has no such parameter at {}",
                                   share.name, first->name, key, name, path)});
      } else if (other->second != shape) {
        out.push_back({share.location, path,
                       fmt::format("share '{}': '{}' has shape {} in '{}' but {} in '{}' at {}; "
                                   "shared modules must have the same shape",
                                   share.name, key, shape_text(shape), first->name,
                                   shape_text(other->second), name, path)});
      }
    }
    for (const auto& [key, shape] : params)
      if (!first_params.count(key))
        out.push_back({share.location, path,
                       fmt::format("share '{}': '{}' has '{}' but '{}' has no such parameter at {}",
                                   share.name, name, key, first->name, path)});
  }
}

}  // namespace

std::vector<Diagnostic> parameter_diagnostics(const Workspace& ws) {
  std::vector<Diagnostic> out;
  for (const Model& m : ws.models)
    if (!m.freeze.empty() || !m.unfreeze.empty())
      check_globs(m, runtime::parameter_table(ws, m), out);
  for (const Share& share : ws.shares) check_share(ws, share, out);
  return out;
}

void check_parameters(LoadResult& result) {
  if (!result.workspace) return;
  std::vector<Diagnostic> found = parameter_diagnostics(*result.workspace);
  if (found.empty()) return;
  result.errors.insert(result.errors.end(), found.begin(), found.end());
  result.workspace.reset();
}

}  // namespace scion::workbench
