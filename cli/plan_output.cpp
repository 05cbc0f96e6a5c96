#include "cli/plan_output.h"

#include <fmt/format.h>

#include <iostream>

#include "cli/output.h"

namespace scion::cli {
namespace {

using workbench::ModelState;
using workbench::Plan;
using workbench::PlannedGroup;
using workbench::PlannedModel;
using workbench::RankWork;

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

std::string flops_text(double flops) {
  const char* units[] = {"", "k", "M", "G", "T", "P", "E"};
  int unit = 0;
  while (flops >= 1000 && unit < 6) flops /= 1000, ++unit;
  return fmt::format("{:.1f} {}FLOP", flops, units[unit]);
}

std::string join(const std::vector<std::string>& words, const char* separator) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : separator) + w;
  return out;
}

// What the plan does with the model, in one line.
std::string state_line(const PlannedModel& p) {
  std::string line = fmt::format("{}: {}", workbench::model_state_name(p.state), p.reason);
  if (p.state == ModelState::kNotSelected) line = "not selected";
  if (p.state == ModelState::kRestores)
    line += " (0 steps: no training)";
  else if (p.steps > 0)
    line += fmt::format("; {} steps, ~{}", with_commas(p.steps), flops_text(p.flops));
  return line;
}

std::vector<std::string> detail_lines(const PlannedModel& p) {
  std::vector<std::string> lines;
  if (p.architecture) {
    const spec::Architecture& a = *p.architecture;
    lines.push_back(fmt::format("{} L={} width={} heads={} ffn={} max_length={} vocab={}",
                                a.kind == spec::ArchitectureKind::kEncoder ? "encoder" : "decoder",
                                a.layers, a.width, a.heads, a.ffn_width, a.max_length,
                                a.vocab_size));
  } else {
    std::vector<std::string> from;
    for (const auto& [origin, count] : p.inherited)
      from.push_back(fmt::format("{} from {}", with_commas(count), origin));
    lines.push_back(fmt::format("parent {}; inherits frozen: {}", p.parent,
                                from.empty() ? "nothing" : join(from, ", ")));
  }
  if (p.objective.empty()) {
    lines.push_back(fmt::format("imported: {} parameters from {}; trains none",
                                with_commas(p.total_parameters), p.import_path));
    lines.push_back(state_line(p));
    return lines;
  }
  lines.push_back(fmt::format("trains {} of {} parameters ({:.2f}%)",
                              with_commas(p.trainable_parameters),
                              with_commas(p.total_parameters),
                              p.total_parameters ? 100.0 *
                                                       static_cast<double>(p.trainable_parameters) /
                                                       static_cast<double>(p.total_parameters)
                                                 : 0.0));
  lines.push_back(fmt::format("trains with objective {} on '{}'", p.objective, p.dataset));
  if (p.memory) {
    const workbench::TrainingMemory& mem = *p.memory;
    lines.push_back(fmt::format(
        "training memory ~{}: parameters {}, gradients {}, optimizer {}, activations {}",
        bytes_text(mem.total()), bytes_text(mem.parameters), bytes_text(mem.gradients),
        bytes_text(mem.optimizer_state), bytes_text(mem.activations)));
  }
  lines.push_back(state_line(p));
  return lines;
}

void print_tree(const Plan& plan, const PlannedModel& p, const std::string& prefix, bool root,
                bool last) {
  std::vector<const PlannedModel*> children;
  for (const PlannedModel& c : plan.models)
    if (c.parent == p.name) children.push_back(&c);
  const bool tty = stdout_is_tty();
  std::cout << prefix
            << (root   ? ""
                : last ? "└── "
                       : "├── ")
            << paint(p.name, Color::kBold, tty) << "  "
            << paint(join(p.methods, " + "), Color::kCyan, tty) << '\n';
  const std::string below = prefix + (root ? "" : last ? "    " : "│   ");
  for (const std::string& line : detail_lines(p))
    std::cout << below << (children.empty() ? "    " : "│   ") << paint(line, Color::kDim, tty)
              << '\n';
  for (std::size_t i = 0; i < children.size(); ++i)
    print_tree(plan, *children[i], below, false, i + 1 == children.size());
}

void print_family_weights(const workbench::FamilyWeights& w) {
  std::cout << "\nweights in memory (fp32): " << bytes_text(w.shared_bytes)
            << " shared (each tensor once), " << bytes_text(w.unshared_bytes)
            << " if every model held its own copy";
  if (w.shared_bytes > 0)
    std::cout << fmt::format(" ({:.1f}x less)", static_cast<double>(w.unshared_bytes) /
                                                    static_cast<double>(w.shared_bytes));
  std::cout << '\n';
}

void print_cobatch(const Plan& plan) {
  std::cout << "\nco-batching (descendants with the same frozen inherited parameters):\n";
  for (const workbench::CobatchSet& set : plan.cobatch)
    if (set.models.size() > 1)
      std::cout << "  " << join(set.models, ", ") << "  share "
                << with_commas(set.frozen_parameters) << " frozen parameters\n";
  for (const workbench::CobatchSet& set : plan.cobatch)
    if (set.models.size() == 1)
      std::cout << "  " << set.models.front()
                << "  alone (no other descendant freezes the same parameters)\n";
  if (plan.cobatch.empty()) std::cout << "  no descendants to train\n";
}

// "3 run, 2 up to date, 1 blocked" over the models with a state.
std::string state_counts(const Plan& plan) {
  std::vector<std::string> parts;
  for (ModelState state : {ModelState::kImports, ModelState::kRestores, ModelState::kRuns,
                           ModelState::kUpToDate, ModelState::kBlocked}) {
    const auto n = std::count_if(plan.models.begin(), plan.models.end(),
                                 [&](const PlannedModel& m) { return m.state == state; });
    if (n > 0) parts.push_back(fmt::format("{} {}", n, workbench::model_state_name(state)));
  }
  return join(parts, ", ");
}

// The steps before the training groups: imports, then restores, parents first.
void print_preparation(const Plan& plan) {
  for (ModelState state : {ModelState::kImports, ModelState::kRestores}) {
    std::vector<std::string> lines;
    for (const PlannedModel& m : plan.models)
      if (m.state == state) lines.push_back(m.name + " (" + m.reason + ")");
    if (lines.empty()) continue;
    std::cout << "\n"
              << (state == ModelState::kImports ? "imports" : "restores")
              << " (before any group trains; "
              << (state == ModelState::kImports ? "the checkpoint's digest is checked"
                                                : "a stored version made current: no training")
              << "):\n";
    for (const std::string& line : lines) std::cout << "  " << line << '\n';
  }
}

void print_groups(const Plan& plan) {
  print_preparation(plan);
  std::cout << "\ntraining groups (`scion run` "
            << (plan.store_exists ? "against the store " + plan.store_path
                                  : std::string("with no store yet"))
            << ": " << state_counts(plan) << "; memory budget "
            << (plan.budget_bytes > 0 ? bytes_text(plan.budget_bytes) : std::string("unlimited"))
            << "):\n";
  for (const PlannedGroup& g : plan.groups) {
    std::vector<std::string> shares;
    for (const std::string& name : g.shares) shares.push_back("'" + name + "'");
    std::cout << "  " << join(g.models, ", ") << "  ~" << bytes_text(g.memory_bytes)
              << (plan.budget_bytes > 0 && g.memory_bytes > plan.budget_bytes
                      ? "  (over budget alone)"
                      : "")
              << (g.over_available ? "  (over the memory available)" : "")
              << (shares.empty() ? ""
                                 : "  (share " + join(shares, ", ") + ": trained together)")
              << fmt::format("  wave {}, ~{}", g.wave, flops_text(g.flops)) << '\n';
  }
  if (plan.groups.empty()) std::cout << "  nothing to train\n";
  for (const PlannedModel& m : plan.models)
    if (m.state == ModelState::kBlocked)
      std::cout << "  blocked: " << m.name << " (" << m.blocker.message() << ")\n";
}

void print_ranks(const std::vector<RankWork>& ranks) {
  std::cout << "\ntask parallelism over " << ranks.size()
            << " ranks (each trunk's groups on one rank, largest estimated FLOPs first;\n"
               "what `mpirun -np N scion run --parallel task` runs; --parallel auto runs a wave\n"
               "so when it has groups on at least N trunks, else data parallel):\n";
  for (const RankWork& r : ranks) {
    if (r.trunks.empty()) {
      std::cout << fmt::format("  rank {}  idle\n", r.rank);
      continue;
    }
    std::cout << fmt::format("  rank {}  {}  ~{}, {} group{}, largest ~{}\n", r.rank,
                             join(r.trunks, ", "), flops_text(r.flops), r.groups.size(),
                             r.groups.size() == 1 ? "" : "s", bytes_text(r.memory_bytes));
  }
}

nlohmann::json model_json(const PlannedModel& p) {
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
  return {{"model", p.name},
          {"parent", p.parent.empty() ? nlohmann::json() : nlohmann::json(p.parent)},
          {"base", p.trunk},
          {"methods", p.methods},
          {"recipe_hash", p.recipe_hash},
          {"objective", p.objective.empty() ? nlohmann::json() : nlohmann::json(p.objective)},
          {"parameters", {{"total", p.total_parameters}, {"trainable", p.trainable_parameters}}},
          {"inherits", inherits},
          {"memory_bytes", memory},
          {"state", workbench::model_state_name(p.state)},
          {"reason", p.state == ModelState::kBlocked ? p.blocker.message() : p.reason},
          {"restores_run", p.restores_run ? nlohmann::json(*p.restores_run) : nlohmann::json()},
          {"steps", p.steps},
          {"flops", p.flops}};
}

}  // namespace

void print_plan_text(const Plan& plan, const std::vector<RankWork>* ranks) {
  for (const PlannedModel& p : plan.models)
    if (p.parent.empty()) print_tree(plan, p, "", true, true);
  print_family_weights(plan.weights);
  print_cobatch(plan);
  print_groups(plan);
  if (ranks) print_ranks(*ranks);
}

nlohmann::json plan_json(const Plan& plan, const std::vector<RankWork>* ranks) {
  nlohmann::json models = nlohmann::json::array();
  for (const PlannedModel& p : plan.models) models.push_back(model_json(p));
  nlohmann::json cobatch = nlohmann::json::array();
  for (const workbench::CobatchSet& set : plan.cobatch)
    cobatch.push_back({{"models", set.models}, {"frozen_parameters", set.frozen_parameters}});
  nlohmann::json groups = nlohmann::json::array();
  for (const PlannedGroup& g : plan.groups)
    groups.push_back({{"models", g.models},
                      {"memory_bytes", g.memory_bytes},
                      {"shares", g.shares},
                      {"wave", g.wave},
                      {"trunk", g.trunk},
                      {"precision", spec::precision_name(g.precision)},
                      {"flops", g.flops},
                      {"over_available_memory", g.over_available},
                      {"over_memory_budget", g.over_budget}});
  nlohmann::json document = {
      {"spec", plan.spec_path},
      {"store", {{"path", plan.store_exists ? nlohmann::json(plan.store_path) : nlohmann::json()},
                 {"exists", plan.store_exists}}},
      {"models", models},
      {"weights_bytes",
       {{"shared", plan.weights.shared_bytes}, {"unshared", plan.weights.unshared_bytes}}},
      {"cobatch_groups", cobatch},
      {"memory_budget_bytes", plan.budget_bytes},
      {"available_memory_bytes",
       plan.available_bytes ? nlohmann::json(*plan.available_bytes) : nlohmann::json()},
      {"training_groups", groups}};
  if (ranks) {
    nlohmann::json assigned = nlohmann::json::array();
    for (const RankWork& r : *ranks)
      assigned.push_back({{"rank", r.rank},
                          {"trunks", r.trunks},
                          {"training_groups", r.groups},
                          {"flops", r.flops},
                          {"memory_bytes", r.memory_bytes}});
    document["ranks"] = assigned;
  }
  return document;
}

}  // namespace scion::cli
