#include "spec/parameter_checks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fnmatch.h>

#include <map>

#include "runtime/parameter_table.h"

namespace scion::spec {
namespace {

using runtime::ParameterSpec;

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

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

// The shared parameters of one model, keyed by name with the model's name replaced by
// the placeholder, so that the same module in two models has the same key.
std::map<std::string, std::vector<std::int64_t>> shared_parameters(
    const Share& share, const Model& m, const std::vector<ParameterSpec>& table) {
  std::map<std::string, std::vector<std::int64_t>> found;
  for (const std::string& module : share.modules) {
    const std::string glob = replace_all(module, kShareModelPlaceholder, m.name);
    for (const ParameterSpec& p : table)
      if (matches(glob, p.name))
        found[replace_all(p.name, "." + m.name + ".",
                          std::string(".") + kShareModelPlaceholder + ".")] = p.shape;
  }
  return found;
}

void check_share(const Workspace& ws, const Share& share, std::vector<Diagnostic>& out) {
  const std::string path = "share." + share.name + ".modules";
  const Model* first = nullptr;
  std::map<std::string, std::vector<std::int64_t>> first_params;
  for (const std::string& name : share.models) {
    const Model& m = *ws.find_model(name);
    const auto params = shared_parameters(share, m, runtime::parameter_table(ws, m));
    if (params.empty()) {
      out.push_back({share.location, path,
                     fmt::format("share '{}': modules [{}] match no parameter of '{}' at {}",
                                 share.name, fmt::join(share.modules, ", "), name, path)});
      continue;
    }
    if (first == nullptr) {
      first = &m;
      first_params = params;
      continue;
    }
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

}  // namespace scion::spec
