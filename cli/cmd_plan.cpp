// `scion plan`: the family as a tree, with each model's methods, inheritance, parameter
// counts, training-memory estimate, and which models can be co-batched over one frozen
// trunk, and the training groups `scion adapt/run` will form under a memory budget.
// Reads the spec only; nothing is trained or stored. The memory estimate and the grouping
// are training_groups.h's, shared with training.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <set>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "runtime/parameter_table.h"
#include "runtime/shared_modules.h"
#include "workbench/checked_workspace.h"
#include "workbench/training_groups.h"

namespace scion::cli {
namespace {

using runtime::ParameterSpec;
using spec::Model;
using spec::Workspace;

struct ModelPlan {
  const Model* model = nullptr;
  std::vector<std::string> methods;
  std::int64_t total = 0, trainable = 0;
  std::vector<std::pair<std::string, std::int64_t>> inherited;  // (introduced by, frozen count)
  std::optional<workbench::TrainingMemory>
      memory;  // absent for an imported base, which is not trained
  std::set<std::pair<std::string, std::string>> frozen;  // (name, introduced_by)
};

std::vector<std::string> methods_of(const Model& m) {
  if (m.is_base()) return {m.import_path.empty() ? "pretrain" : "import"};
  const spec::Adaptation& a = m.adaptation;
  std::vector<std::string> out;
  const std::pair<bool, const char*> all[] = {
      {a.lora.has_value(), "lora"},     {a.prefix.has_value(), "prefix"},
      {a.prompt.has_value(), "prompt"}, {a.bottleneck.has_value(), "bottleneck"},
      {a.bitfit.has_value(), "bitfit"}, {a.full.has_value(), "full"},
      {a.head.has_value(), "head"}};
  for (const auto& [on, name] : all)
    if (on) out.push_back(name);
  return out;
}

ModelPlan plan_model(const Workspace& ws, const Model& m) {
  ModelPlan p;
  p.model = &m;
  p.methods = methods_of(m);
  std::map<std::string, std::int64_t> frozen_by_origin;
  for (const ParameterSpec& param : runtime::parameter_table(ws, m)) {
    p.total += param.numel();
    if (param.trainable && m.training) {  // an imported base is read, never trained
      p.trainable += param.numel();
    } else {
      frozen_by_origin[param.introduced_by] += param.numel();
      p.frozen.insert({param.name, param.introduced_by});
    }
  }
  // Ancestors in order from the base down, so the list reads like the lineage.
  const auto chain = ws.ancestry(m);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it)
    if (frozen_by_origin.count((*it)->name))
      p.inherited.emplace_back((*it)->name, frozen_by_origin[(*it)->name]);
  if (m.training) p.memory = workbench::estimate_training_memory(ws, m, p.total, p.trainable);
  return p;
}

// fp32 weights of the whole family in memory: each model holding its own copy of every
// parameter it uses, and with sharing (each (introducing model, name) once, shared
// modules once, as ParameterStore holds them; equal digests may share more once values
// exist).
struct FamilyWeights {
  std::int64_t unshared_bytes = 0, shared_bytes = 0;
};

FamilyWeights family_weights(const Workspace& ws) {
  FamilyWeights w;
  const runtime::SharedModules shares(ws);
  std::set<runtime::ParameterKey> held;
  for (const Model& m : ws.models)
    for (const ParameterSpec& p : runtime::parameter_table(ws, m)) {
      const std::int64_t bytes = p.numel() * static_cast<std::int64_t>(sizeof(float));
      w.unshared_bytes += bytes;
      if (held.insert(shares.canonical({p.introduced_by, p.name})).second) w.shared_bytes += bytes;
    }
  return w;
}

std::string bytes_text(std::int64_t bytes);

// The shares whose models are in `group`.
std::vector<std::string> shares_within(const Workspace& ws,
                                       const std::vector<const Model*>& group) {
  std::vector<std::string> names;
  for (const spec::Share& share : ws.shares)
    if (std::any_of(group.begin(), group.end(), [&](const Model* m) {
          return std::find(share.models.begin(), share.models.end(), m->name) != share.models.end();
        }))
      names.push_back(share.name);
  return names;
}

void print_family_weights(const FamilyWeights& w) {
  std::cout << "\nweights in memory (fp32): " << bytes_text(w.shared_bytes)
            << " shared (each tensor once), " << bytes_text(w.unshared_bytes)
            << " if every model held its own copy";
  if (w.shared_bytes > 0)
    std::cout << fmt::format(" ({:.1f}x less)", static_cast<double>(w.unshared_bytes) /
                                                    static_cast<double>(w.shared_bytes));
  std::cout << '\n';
}

// Descendants with the same frozen inherited parameters (same names, same origin) can
// run one forward pass through them for all their rows.
std::vector<std::vector<const ModelPlan*>> cobatch_groups(const std::vector<ModelPlan>& plans) {
  std::map<std::set<std::pair<std::string, std::string>>, std::vector<const ModelPlan*>> groups;
  std::vector<const std::set<std::pair<std::string, std::string>>*> order;
  for (const ModelPlan& p : plans) {
    if (p.model->is_base() || !p.model->training) continue;
    auto [it, added] = groups.try_emplace(p.frozen);
    if (added) order.push_back(&it->first);
    it->second.push_back(&p);
  }
  std::vector<std::vector<const ModelPlan*>> out;
  for (const auto* key : order) out.push_back(groups.at(*key));
  return out;
}

std::string with_commas(std::int64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string bytes_text(std::int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) value /= 1024, ++unit;
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, units[unit]);
}

std::string join(const std::vector<std::string>& words, const char* separator) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : separator) + w;
  return out;
}

// The objective's word in the spec.
const char* objective_name(spec::Objective objective) {
  switch (objective) {
    case spec::Objective::kMaskedLm:
      return "mlm";
    case spec::Objective::kCausalLm:
      return "clm";
    case spec::Objective::kClassification:
      return "classification";
  }
  return "mlm";
}

// The objective the model trains with, or null for an imported base.
nlohmann::json objective_json(const Model& m) {
  return m.training ? nlohmann::json(objective_name(m.training->objective)) : nlohmann::json();
}

std::vector<std::string> detail_lines(const ModelPlan& p) {
  const Model& m = *p.model;
  std::vector<std::string> lines;
  if (m.is_base()) {
    const spec::Architecture& a = *m.architecture;
    lines.push_back(fmt::format("{} L={} width={} heads={} ffn={} max_length={} vocab={}",
                                a.kind == spec::ArchitectureKind::kEncoder ? "encoder" : "decoder",
                                a.layers, a.width, a.heads, a.ffn_width, a.max_length,
                                a.vocab_size));
  } else {
    std::vector<std::string> from;
    for (const auto& [origin, count] : p.inherited)
      from.push_back(fmt::format("{} from {}", with_commas(count), origin));
    lines.push_back(fmt::format("parent {}; inherits frozen: {}", m.from,
                                from.empty() ? "nothing" : join(from, ", ")));
  }
  if (!m.training) {
    lines.push_back(fmt::format("imported: {} parameters from {}; trains none",
                                with_commas(p.total), m.import_path));
    return lines;
  }
  lines.push_back(fmt::format(
      "trains {} of {} parameters ({:.2f}%)", with_commas(p.trainable), with_commas(p.total),
      p.total ? 100.0 * static_cast<double>(p.trainable) / static_cast<double>(p.total) : 0.0));
  if (m.training)
    lines.push_back(fmt::format("trains with objective {} on '{}'",
                                objective_name(m.training->objective), m.training->dataset));
  if (p.memory) {
    const workbench::TrainingMemory& mem = *p.memory;
    lines.push_back(fmt::format(
        "training memory ~{}: parameters {}, gradients {}, optimizer {}, activations {}",
        bytes_text(mem.total()), bytes_text(mem.parameters), bytes_text(mem.gradients),
        bytes_text(mem.optimizer_state), bytes_text(mem.activations)));
  }
  return lines;
}

void print_tree(const std::vector<ModelPlan>& plans, const ModelPlan& p, const std::string& prefix,
                bool root, bool last) {
  std::vector<const ModelPlan*> children;
  for (const ModelPlan& c : plans)
    if (c.model->from == p.model->name) children.push_back(&c);
  const bool tty = stdout_is_tty();
  std::cout << prefix
            << (root   ? ""
                : last ? "└── "
                       : "├── ")
            << paint(p.model->name, Color::kBold, tty) << "  "
            << paint(join(p.methods, " + "), Color::kCyan, tty) << '\n';
  const std::string below = prefix + (root ? "" : last ? "    " : "│   ");
  for (const std::string& line : detail_lines(p))
    std::cout << below << (children.empty() ? "    " : "│   ") << paint(line, Color::kDim, tty)
              << '\n';
  for (std::size_t i = 0; i < children.size(); ++i)
    print_tree(plans, *children[i], below, false, i + 1 == children.size());
}

nlohmann::json plan_json(const Workspace& ws, const std::vector<ModelPlan>& plans,
                         const std::vector<std::vector<const ModelPlan*>>& groups,
                         const std::vector<std::vector<const Model*>>& training,
                         std::int64_t budget_bytes) {
  nlohmann::json models = nlohmann::json::array();
  for (const ModelPlan& p : plans) {
    const Model& m = *p.model;
    nlohmann::json inherits = nlohmann::json::array();
    for (const auto& [origin, count] : p.inherited)
      inherits.push_back({{"from", origin}, {"parameters", count}});
    nlohmann::json memory = nullptr;
    if (p.memory)
      memory = {{"parameters", p.memory->parameters},
                {"gradients", p.memory->gradients},
                {"optimizer_state", p.memory->optimizer_state},
                {"activations", p.memory->activations},
                {"total", p.memory->total()}};
    models.push_back({{"model", m.name},
                      {"parent", m.is_base() ? nlohmann::json() : nlohmann::json(m.from)},
                      {"base", ws.ancestry(m).back()->name},
                      {"methods", p.methods},
                      {"recipe_hash", m.recipe_hash},
                      {"objective", objective_json(m)},
                      {"parameters", {{"total", p.total}, {"trainable", p.trainable}}},
                      {"inherits", inherits},
                      {"memory_bytes", memory}});
  }
  nlohmann::json cobatch = nlohmann::json::array();
  for (const auto& group : groups) {
    nlohmann::json names = nlohmann::json::array();
    for (const ModelPlan* p : group) names.push_back(p->model->name);
    std::int64_t frozen = 0;
    for (const auto& [origin, count] : group.front()->inherited) frozen += count;
    cobatch.push_back({{"models", names}, {"frozen_parameters", frozen}});
  }
  nlohmann::json training_json = nlohmann::json::array();
  for (const auto& group : training) {
    nlohmann::json names = nlohmann::json::array();
    for (const Model* m : group) names.push_back(m->name);
    training_json.push_back({{"models", names},
                             {"memory_bytes", workbench::group_memory_bytes(ws, group)},
                             {"shares", shares_within(ws, group)}});
  }
  const FamilyWeights weights = family_weights(ws);
  return {
      {"spec", ws.spec_path.string()},
      {"models", models},
      {"weights_bytes", {{"shared", weights.shared_bytes}, {"unshared", weights.unshared_bytes}}},
      {"cobatch_groups", cobatch},
      {"memory_budget_bytes", budget_bytes},
      {"training_groups", training_json}};
}

void print_groups(const std::vector<std::vector<const ModelPlan*>>& groups) {
  std::cout << "\nco-batching (descendants with the same frozen inherited parameters):\n";
  bool any = false;
  for (const auto& group : groups) {
    if (group.size() < 2) continue;
    any = true;
    std::vector<std::string> names;
    for (const ModelPlan* p : group) names.push_back(p->model->name);
    std::int64_t frozen = 0;
    for (const auto& [origin, count] : group.front()->inherited) frozen += count;
    std::cout << "  " << join(names, ", ") << "  share " << with_commas(frozen)
              << " frozen parameters\n";
  }
  for (const auto& group : groups)
    if (group.size() == 1)
      std::cout << "  " << group.front()->model->name
                << "  alone (no other descendant freezes the same parameters)\n";
  if (!any && groups.empty()) std::cout << "  no descendants to train\n";
}

void print_training_groups(const Workspace& ws,
                           const std::vector<std::vector<const Model*>>& training,
                           std::int64_t budget_bytes) {
  // Models that share modules are one unit: say why they are in one group.
  auto unit_note = [&](const std::vector<const Model*>& group) {
    std::vector<std::string> names;
    for (const std::string& name : shares_within(ws, group)) names.push_back("'" + name + "'");
    return names.empty() ? std::string() : "  (share " + join(names, ", ") + ": trained together)";
  };
  std::cout << "\ntraining groups (`scion run` on an empty store, memory budget "
            << (budget_bytes > 0 ? bytes_text(budget_bytes) : std::string("unlimited")) << "):\n";
  for (const auto& group : training) {
    std::vector<std::string> names;
    for (const Model* m : group) names.push_back(m->name);
    const std::int64_t bytes = workbench::group_memory_bytes(ws, group);
    std::cout << "  " << join(names, ", ") << "  ~" << bytes_text(bytes)
              << (budget_bytes > 0 && bytes > budget_bytes ? "  (over budget alone)" : "")
              << unit_note(group) << '\n';
  }
  if (training.empty()) std::cout << "  nothing to train\n";
}

int run_plan(const GlobalOptions& global, std::int64_t memory_budget_mib) {
  workbench::CheckedWorkspace result = workbench::load_checked(global.spec_file);
  print_diagnostics(result);
  if (!result.workspace) {
    std::cerr << "the spec has errors; fix them and plan again\n";
    return kExitUsage;
  }
  const Workspace& ws = *result.workspace;
  std::vector<ModelPlan> plans;
  for (const Model& m : ws.models) plans.push_back(plan_model(ws, m));
  const auto groups = cobatch_groups(plans);
  const std::int64_t budget =
      memory_budget_mib > 0 ? memory_budget_mib << 20 : workbench::default_memory_budget_bytes();
  const auto training = workbench::planned_training_groups(ws, budget);
  if (global.json) {
    print_json(plan_json(ws, plans, groups, training, budget));
    return kExitOk;
  }
  for (const ModelPlan& p : plans)
    if (p.model->is_base()) print_tree(plans, p, "", true, true);
  print_family_weights(family_weights(ws));
  print_groups(groups);
  print_training_groups(ws, training, budget);
  return kExitOk;
}

}  // namespace

void add_plan_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  CLI::App* cmd = app.add_subcommand(
      "plan", "Show the family tree: methods, inheritance, parameters, memory, co-batching");
  static std::int64_t memory_budget_mib = 0;
  cmd->add_option("--memory-budget", memory_budget_mib,
                  "MiB a co-batched training group may use (default: half of RAM)")
      ->check(CLI::PositiveNumber);
  cmd->footer(
      "Memory is an fp32 estimate per training step; docs/cli.md explains each term.\n"
      "Exit codes: 0 ok, 2 the spec has errors.\n"
      "Examples:   scion -C examples/sentiment plan\n"
      "            scion plan --json | jq '.models[] | {name, parameters}'");
  cmd->callback(
      [&global, &action] { action = [&global] { return run_plan(global, memory_budget_mib); }; });
}

}  // namespace scion::cli
