// load_workspace: parse with limits, read each section, resolve references between
// models, order parents before children, and set recipe hashes.
#include "spec/loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "spec/keys.h"
#include "spec/loader_parts.h"
#include "spec/recipe_hash.h"

namespace scion::spec {
namespace {

using detail::kMaxGenerations;
using detail::kMaxModels;
using detail::ModelEntry;

// Depth-first order with parents first; reports each cycle through `from` once.
// Returns indices into `entries`; models in or below a cycle are left out.
std::vector<std::size_t> order_parents_first(SpecReader& r, const std::vector<ModelEntry>& entries,
                                             const std::map<std::string, std::size_t>& index) {
  enum class Mark { kNone, kVisiting, kDone, kBroken };
  constexpr std::size_t kEnd = static_cast<std::size_t>(-1);
  std::vector<Mark> marks(entries.size(), Mark::kNone);
  std::vector<std::size_t> order;
  for (std::size_t start = 0; start < entries.size(); ++start) {
    std::vector<std::size_t> chain;  // start, its parent, ... (all unvisited before)
    std::size_t at = start;
    while (at != kEnd && marks[at] == Mark::kNone) {
      marks[at] = Mark::kVisiting;
      chain.push_back(at);
      const auto parent = index.find(entries[at].model.from);
      at = entries[at].model.is_base() || parent == index.end() ? kEnd : parent->second;
    }
    // Visiting marks only the current chain, so meeting one closes a cycle.
    const bool cycle = at != kEnd && marks[at] == Mark::kVisiting;
    const bool broken = cycle || (at != kEnd && marks[at] == Mark::kBroken);
    if (cycle) {
      std::size_t first = 0;
      while (chain[first] != at) ++first;
      std::string names;
      for (std::size_t i = first; i < chain.size(); ++i)
        names += entries[chain[i]].model.name + " -> ";
      names += entries[at].model.name;
      const ModelEntry& e = entries[at];
      r.error(*e.from_node, join_path(join_path("models", e.model.name), "from"),
              fmt::format("cycle through 'from': {}", names),
              "; a model cannot descend from itself");
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      marks[*it] = broken ? Mark::kBroken : Mark::kDone;
      if (!broken) order.push_back(*it);
    }
  }
  return order;
}

// Reports models more than kMaxGenerations below their base.
void check_generations(SpecReader& r, const std::vector<ModelEntry>& entries,
                       const std::map<std::string, std::size_t>& index,
                       const std::vector<std::size_t>& order) {
  std::vector<int> generation(entries.size(), 0);
  for (std::size_t i : order) {  // parents first, so the parent's generation is known
    const ModelEntry& e = entries[i];
    const auto parent = index.find(e.model.from);
    if (e.model.is_base() || parent == index.end()) continue;
    generation[i] = generation[parent->second] + 1;
    if (generation[i] == kMaxGenerations + 1)
      r.error(*e.from_node, join_path(join_path("models", e.model.name), "from"),
              fmt::format("'{}' is more than {} generations below its base", e.model.name,
                          kMaxGenerations),
              "; adapt from a nearer ancestor");
  }
}

// The loaded ancestors of entry i, parent first, and the family's base architecture.
std::vector<const Model*> ancestors_of(const std::vector<ModelEntry>& entries, std::size_t i,
                                       const std::map<std::string, std::size_t>& index,
                                       const Architecture** arch) {
  std::vector<const Model*> chain;
  const Model* m = &entries[i].model;
  *arch = nullptr;
  while (!m->is_base()) {
    const auto parent = index.find(m->from);
    if (parent == index.end() || chain.size() > entries.size()) return chain;
    m = &entries[parent->second].model;
    chain.push_back(m);
  }
  if (m->architecture) *arch = &*m->architecture;
  return chain;
}

// A share that joins a model with its own ancestor would make a parameter both inherited
// from and trained into the same model: a cycle through `from` and `share`.
bool check_share_with_ancestor(SpecReader& r, const YamlNode& section, const Workspace& ws) {
  bool found = false;
  for (const Share& s : ws.shares) {
    for (const std::string& name : s.models) {
      const Model* m = ws.find_model(name);
      if (m == nullptr) continue;
      for (const Model* ancestor : ws.ancestry(*m)) {
        if (ancestor == m) continue;
        if (std::find(s.models.begin(), s.models.end(), ancestor->name) == s.models.end()) continue;
        const YamlNode* node = find(section, s.name);
        r.error(node ? *node : section, join_path(join_path("share", s.name), "models"),
                fmt::format("cycle through 'from' and 'share': share '{}' joins '{}' with its "
                            "ancestor '{}'",
                            s.name, m->name, ancestor->name),
                "; a descendant already inherits its ancestors' modules, so share them only "
                "between models that do not descend from each other");
        found = true;
      }
    }
  }
  return found;
}

// Models joined by shares train as one unit, after the parents of all of them: a unit
// that waits, through `from`, for itself can never train. Reports one such cycle, e.g.
// p -> a, a ~ b, b -> c, c ~ p, at a share on it.
void check_training_unit_cycles(SpecReader& r, const YamlNode& section, const Workspace& ws) {
  std::map<std::string, std::string> unit_of;  // model -> its unit's first model
  for (const Model& m : ws.models) unit_of[m.name] = ws.training_unit(m).front()->name;
  // Edges between units: (parent unit, child unit) with a witness child.
  std::map<std::string, std::vector<const Model*>> children;
  for (const Model& m : ws.models)
    if (!m.is_base()) children[unit_of.at(m.from)].push_back(&m);
  enum class Mark { kNone, kVisiting, kDone };
  std::map<std::string, Mark> marks;
  std::vector<const Model*> path;  // the children through which the search went down
  std::function<bool(const std::string&)> visit = [&](const std::string& unit) {
    marks[unit] = Mark::kVisiting;
    for (const Model* child : children[unit]) {
      const std::string& next = unit_of.at(child->name);
      path.push_back(child);
      if (marks[next] == Mark::kVisiting) {
        // The cycle is the part of `path` from the first child that entered `next`.
        std::size_t first = 0;
        while (unit_of.at(path[first]->from) != next) ++first;
        std::string chain;
        const Share* share = nullptr;
        for (std::size_t i = first; i < path.size(); ++i) {
          const Model* c = path[i];
          const Model* partner = ws.find_model(path[i + 1 < path.size() ? i + 1 : first]->from);
          chain +=
              fmt::format("{}'{}' is adapted from '{}'", i == first ? "" : "; ", c->name, c->from);
          if (partner == c) continue;
          chain += fmt::format("; '{}' trains with '{}'", c->name, partner->name);
          for (const Share& s : ws.shares)
            if (std::find(s.models.begin(), s.models.end(), c->name) != s.models.end()) share = &s;
        }
        const YamlNode* node = share ? find(section, share->name) : nullptr;
        r.error(node ? *node : section,
                share ? join_path(join_path("share", share->name), "models") : "share",
                fmt::format("cycle through 'from' and 'share': {}", chain),
                "; models that share modules train together, after the parents of all of "
                "them, so none of them may descend from a model that trains with another");
        return true;
      }
      if (marks[next] == Mark::kNone && visit(next)) return true;
      path.pop_back();
    }
    marks[unit] = Mark::kDone;
    return false;
  };
  for (const Model& m : ws.models)
    if (marks[unit_of.at(m.name)] == Mark::kNone && visit(unit_of.at(m.name))) return;
}

// Reads the models section: heads first, then references, order and generations, then
// each model's body once its ancestors are loaded. Returns the indices into `entries` of
// the models that can be placed, parents first.
std::vector<std::size_t> load_models(SpecReader& r, const YamlNode& root,
                                     detail::FileResolver& files,
                                     const std::vector<Dataset>& datasets,
                                     std::vector<ModelEntry>& entries, detail::Names& names) {
  if (const YamlNode* n = r.require(root, "", "models", "the model family"))
    entries = detail::load_model_heads(r, *n, files);
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    index[entries[i].model.name] = i;
    names.models.push_back(entries[i].model.name);
  }
  for (const ModelEntry& e : entries)
    if (e.from_node && !e.model.from.empty())
      detail::check_reference(r, *e.from_node, join_path(join_path("models", e.model.name), "from"),
                              e.model.from, names.models, "model");
  std::vector<std::size_t> order = order_parents_first(r, entries, index);
  check_generations(r, entries, index, order);
  for (std::size_t i : order) {
    const Architecture* arch = nullptr;
    const auto ancestors = ancestors_of(entries, i, index, &arch);
    if (entries[i].shape_ok) detail::load_model_body(r, entries[i], arch, ancestors, datasets);
  }
  return order;
}

bool by_file_position(const Diagnostic& a, const Diagnostic& b) {
  return std::tie(a.location.line, a.location.column) <
         std::tie(b.location.line, b.location.column);
}

// Whether an error was reported at key path `path` or below it.
bool has_error_at(const std::vector<Diagnostic>& errors, const std::string& path) {
  return std::any_of(errors.begin(), errors.end(), [&](const Diagnostic& d) {
    return d.key_path == path || d.key_path.starts_with(path + ".") ||
           d.key_path.starts_with(path + "[");
  });
}

// The parts of `ws` without errors of their own, and no models (see LoadResult::partial).
Workspace partial_workspace(Workspace ws, const std::vector<Diagnostic>& errors) {
  const auto drop_broken = [&](auto& entries, const std::string& section) {
    std::erase_if(entries,
                  [&](const auto& e) { return has_error_at(errors, join_path(section, e.name)); });
  };
  drop_broken(ws.datasets, "datasets");
  drop_broken(ws.tests, "tests");
  drop_broken(ws.assertions, "assertions");
  std::erase_if(ws.lexicons, [&](const auto& entry) {
    return has_error_at(errors, join_path("lexicons", entry.first));
  });
  ws.models.clear();
  ws.shares.clear();
  return ws;
}

LoadResult load_tree(const YamlNode* root, SpecReader& r, const std::filesystem::path& spec_path,
                     const std::filesystem::path& base_dir) {
  LoadResult result;
  const std::string& file = r.file();
  if (root == nullptr || root->is_null()) {
    result.errors.push_back(
        Diagnostic::at(file, 1, 1,
                       "the spec is empty; expected a mapping with at least 'models' "
                       "(see docs/spec.md)"));
    return result;
  }
  if (!r.expect_map(*root, "",
                    "a mapping with the top-level keys datasets, models, share, "
                    "tests, assertions, lexicons")) {
    result.errors = r.take_errors();
    return result;
  }
  r.check_keys(*root, "", keys::kSections, "top-level key");
  Workspace ws;
  ws.spec_path = spec_path;
  ws.root_dir = base_dir;

  detail::FileResolver files{base_dir, {}};
  if (const YamlNode* n = find(*root, "datasets")) detail::load_datasets(r, *n, files, ws.datasets);
  detail::Names names;
  for (const Dataset& d : ws.datasets) names.datasets.push_back(d.name);

  std::vector<ModelEntry> entries;
  const std::vector<std::size_t> order = load_models(r, *root, files, ws.datasets, entries, names);

  if (const YamlNode* n = find(*root, "share")) detail::load_shares(r, *n, names, ws.shares);
  if (const YamlNode* n = find(*root, "tests")) detail::load_tests(r, *n, names, ws.tests);
  if (const YamlNode* n = find(*root, "assertions"))
    detail::load_assertions(r, *n, names, ws.assertions);
  if (const YamlNode* n = find(*root, "lexicons")) detail::load_lexicons(r, *n, ws.lexicons);

  if (!r.has_errors()) {
    for (std::size_t i : order) ws.models.push_back(std::move(entries[i].model));
    if (const YamlNode* share = find(*root, "share"))
      if (!check_share_with_ancestor(r, *share, ws)) check_training_unit_cycles(r, *share, ws);
  }
  result.errors = r.take_errors();
  result.warnings = r.take_warnings();
  std::stable_sort(result.errors.begin(), result.errors.end(), by_file_position);
  std::stable_sort(result.warnings.begin(), result.warnings.end(), by_file_position);
  if (!result.errors.empty()) {
    result.partial = partial_workspace(std::move(ws), result.errors);
    return result;
  }
  set_recipe_hashes(ws);
  result.workspace = std::move(ws);
  return result;
}

LoadResult load_text(std::string_view yaml, const std::string& display_name,
                     const std::filesystem::path& spec_path,
                     const std::filesystem::path& base_dir) {
  const YamlParse parsed = parse_yaml(yaml, display_name);
  if (parsed.error) {
    LoadResult result;
    result.errors.push_back(*parsed.error);
    return result;
  }
  SpecReader reader(display_name);
  return load_tree(parsed.root.get(), reader, spec_path, base_dir);
}

}  // namespace

LoadResult load_workspace_from_string(std::string_view yaml, const std::string& display_name,
                                      const std::filesystem::path& base_dir) {
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(base_dir, ec);
  return load_text(yaml, display_name, absolute / display_name, ec ? base_dir : absolute);
}

LoadResult load_workspace(const std::filesystem::path& spec_file) {
  LoadResult result;
  const std::string shown = spec_file.string();
  std::error_code ec;
  const auto status = std::filesystem::status(spec_file, ec);
  if (ec || !std::filesystem::exists(status)) {
    result.errors.push_back(Diagnostic::at(
        shown, 0, 0, "spec file not found; create it or point to it with -f FILE or -C DIR"));
    return result;
  }
  if (!std::filesystem::is_regular_file(status)) {
    result.errors.push_back(Diagnostic::at(shown, 0, 0, "the spec is not a regular file"));
    return result;
  }
  const YamlLimits limits;
  const auto size = std::filesystem::file_size(spec_file, ec);
  if (!ec && size > limits.max_bytes) {
    result.errors.push_back(
        Diagnostic::at(shown, 1, 1,
                       fmt::format("the spec is {} bytes, over the limit of {} bytes; a "
                                   "spec describes data, keep the data in files",
                                   size, limits.max_bytes)));
    return result;
  }
  std::ifstream in(spec_file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    result.errors.push_back(Diagnostic::at(shown, 0, 0, "cannot read the spec file"));
    return result;
  }
  const std::filesystem::path absolute = std::filesystem::absolute(spec_file, ec);
  return load_text(text.str(), shown, absolute, absolute.parent_path());
}

}  // namespace scion::spec
