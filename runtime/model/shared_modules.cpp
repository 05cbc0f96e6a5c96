#include "runtime/model/shared_modules.h"

#include <fnmatch.h>

#include <functional>

namespace scion::runtime {
namespace {

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

}  // namespace

std::map<std::string, const ParameterSpec*> shared_parameters(const spec::Share& share,
                                                              const spec::Model& model,
                                                              const std::vector<ParameterSpec>& table) {
  std::map<std::string, const ParameterSpec*> found;
  for (const std::string& module : share.modules) {
    const std::string glob = replace_all(module, spec::kShareModelPlaceholder, model.name);
    for (const ParameterSpec& p : table)
      if (fnmatch(glob.c_str(), p.name.c_str(), 0) == 0)
        found[replace_all(p.name, "." + model.name + ".",
                          std::string(".") + spec::kShareModelPlaceholder + ".")] = &p;
  }
  return found;
}

SharedModules::SharedModules(const spec::Workspace& ws) {
  // Union-find over parameter keys: two shares may chain (a with b, b with c), and the
  // representative of each set is its key whose model comes first in spec order.
  std::map<std::string, std::size_t> order;
  for (std::size_t i = 0; i < ws.models.size(); ++i) order[ws.models[i].name] = i;
  std::map<ParameterKey, ParameterKey> parent;
  std::function<ParameterKey(const ParameterKey&)> root = [&](const ParameterKey& k) {
    auto it = parent.find(k);
    if (it == parent.end() || it->second == k) return k;
    return it->second = root(it->second);
  };
  auto join = [&](const ParameterKey& a, const ParameterKey& b) {
    const ParameterKey ra = root(a), rb = root(b);
    if (ra == rb) return;
    const bool a_first = std::pair(order.at(ra.first), ra.second) < std::pair(order.at(rb.first), rb.second);
    parent[a_first ? rb : ra] = a_first ? ra : rb;
  };
  for (const spec::Share& share : ws.shares) {
    std::map<std::string, ParameterKey> first_member;  // placeholder name -> key
    for (const std::string& name : share.models) {
      const spec::Model* model = ws.find_model(name);
      const std::vector<ParameterSpec> table = parameter_table(ws, *model);
      for (const auto& [key, p] : shared_parameters(share, *model, table)) {
        const ParameterKey mine{p->introduced_by, p->name};
        parent.emplace(mine, mine);
        auto [it, first] = first_member.emplace(key, mine);
        if (!first) join(it->second, mine);
      }
    }
  }
  for (const auto& [key, unused] : parent) canonical_[key] = root(key);
}

ParameterKey SharedModules::canonical(const ParameterKey& key) const {
  auto it = canonical_.find(key);
  return it == canonical_.end() ? key : it->second;
}

std::vector<std::pair<std::string, ParameterKey>> SharedModules::shared_by(const std::string& model) const {
  std::vector<std::pair<std::string, ParameterKey>> out;
  for (const auto& [key, owner] : canonical_)
    if (key.first == model) out.emplace_back(key.second, owner);
  return out;
}

}  // namespace scion::runtime
