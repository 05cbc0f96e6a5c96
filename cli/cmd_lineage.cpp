// `scion lineage tree|show|log|diff|export|blame`: queries over the family recorded in the
// store, joined with the spec where there is one (the queries: workbench/lineage_views.h;
// here, options and printing). tree, log and export are here; show and diff in
// cmd_lineage_show.cpp, blame in cmd_lineage_blame.cpp.
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "cli/cmd_lineage_support.h"
#include "cli/command_context.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "report/graph_formats.h"
#include "workbench/lineage_views.h"
#include "workbench/model_lookup.h"

namespace scion::cli {

int run_lineage_show(const GlobalOptions& global, const std::string& model);
int run_lineage_diff(const GlobalOptions& global, const std::string& a, const std::string& b);
void add_lineage_blame_subcommand(CLI::App& lineage, const GlobalOptions& global,
                                  CommandAction& action);
void add_lineage_metrics_subcommand(CLI::App& lineage, const GlobalOptions& global,
                                    CommandAction& action);
void add_lineage_versions_subcommand(CLI::App& lineage, const GlobalOptions& global,
                                     CommandAction& action);

namespace {

using workbench::FamilyNode;

// The store and (when valid) the spec, with the family they describe together.
struct FamilyView {
  std::unique_ptr<workbench::Context> context;
  lineage::LineageStore* store = nullptr;  // the context's; null: no store yet
  std::optional<spec::Workspace> workspace;
  std::string why_no_spec;
  std::vector<FamilyNode> nodes;
};

Result<FamilyView> load_family(const GlobalOptions& global) {
  FamilyView view;
  view.workspace = load_workspace_if_valid(global, view.why_no_spec);
  // Without a store, the spec alone still gives a tree.
  auto context = open_store_context(global, view.workspace ? workbench::StoreAccess::kReadIfPresent
                                                           : workbench::StoreAccess::kRead);
  if (!context.is_ok()) return context.status();
  view.context = std::move(*context);
  view.store = view.context->store_or_null();
  auto nodes = workbench::family_of(view.store, view.workspace ? &*view.workspace : nullptr);
  if (!nodes.is_ok()) return nodes.status();
  view.nodes = std::move(*nodes);
  return view;
}

// The metric a tree line shows by default: the head's main one, told apart by the metrics
// each task records (spec/metric_names.h), so that a store without a spec answers alike:
// RMSE for regression, micro-F1 for multi-label, entity F1 for token classification,
// accuracy for classification, the loss for a language model.
std::string main_metric(const std::map<std::string, double>& validation) {
  const auto has = [&](const char* name) { return validation.count(name) > 0; };
  if (has("val_rmse")) return "val_rmse";
  if (has("val_subset_accuracy")) return "val_micro_f1";
  if (has("val_precision")) return "val_f1";
  if (has("val_accuracy")) return "val_accuracy";
  return "val_loss";
}

std::string validation_label(const std::map<std::string, double>& validation, bool all) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(3);
  const std::string main = main_metric(validation);
  for (const auto& [name, value] : validation)
    if (all || name == main) out << (out.tellp() > 0 ? "  " : "") << name << " " << value;
  return out.str();
}

std::string sharing_label(const FamilyNode& node) {
  if (!node.stored || node.stored->parameter_count == 0) return "";
  const auto& m = *node.stored;
  std::ostringstream out;
  out << m.parameter_count << " tensors";
  if (!m.parent.empty())
    out << ": " << m.shared_with_parent << " shared with " << m.parent << ", ";
  else
    out << ": ";
  out << m.own_count << " own";
  return out.str();
}

Color status_color(const FamilyNode& node) {
  using workbench::Standing;
  switch (node.standing) {
    case Standing::kTrained:
    case Standing::kImported:
      return Color::kGreen;
    case Standing::kOutOfDate:
      return Color::kYellow;
    case Standing::kNotTrained:
      return node.history.interrupted_at ? Color::kYellow : Color::kDim;
    case Standing::kNotInSpec:
      return Color::kNone;
  }
  return Color::kNone;
}

using ValidationByModel = std::map<std::string, std::map<std::string, double>>;

void print_subtree(const std::vector<FamilyNode>& nodes, const FamilyNode& node,
                   const ValidationByModel& validation, bool all_metrics, const std::string& prefix,
                   const std::string& connector, bool tty) {
  std::cout << prefix << connector << paint(node.name, Color::kBold, tty) << "  [" << node.method
            << "]  " << paint(node.status, status_color(node), tty);
  const std::string sharing = sharing_label(node);
  if (!sharing.empty()) std::cout << "  (" << sharing << ")";
  if (auto it = validation.find(node.name); it != validation.end() && !it->second.empty())
    std::cout << "  " << validation_label(it->second, all_metrics);
  std::cout << '\n';
  std::vector<const FamilyNode*> children;
  for (const FamilyNode& n : nodes) {
    if (n.parent == node.name) children.push_back(&n);
  }
  const std::string child_prefix = prefix + (connector.empty()     ? ""
                                             : connector == "└── " ? "    "
                                                                   : "│   ");
  for (std::size_t i = 0; i < children.size(); ++i) {
    print_subtree(nodes, *children[i], validation, all_metrics, child_prefix,
                  i + 1 == children.size() ? "└── " : "├── ", tty);
  }
}

nlohmann::json node_json(const FamilyNode& node) {
  nlohmann::json out = {{"model", node.name}, {"method", node.method}, {"status", node.status}};
  out["parent"] = node.parent.empty() ? nlohmann::json() : nlohmann::json(node.parent);
  if (node.stored) {
    out["parameters"] = node.stored->parameter_count;
    out["own_parameters"] = node.stored->own_count;
    out["shared_with_parent"] = node.stored->shared_with_parent;
    out["recipe_hash"] =
        node.stored->recipe_hash ? nlohmann::json(*node.stored->recipe_hash) : nlohmann::json();
  }
  if (node.history.interrupted_at) {
    out["interrupted_at_step"] = *node.history.interrupted_at;
    out["resumable"] = node.history.resumable;
  }
  return out;
}

int run_tree(const GlobalOptions& global, const std::string& root, bool all_metrics) {
  auto view = load_family(global);
  if (!view.is_ok()) return fail(view.status());
  auto nodes = workbench::subtree(view->nodes, root);
  if (!nodes.is_ok()) return fail(nodes.status());
  ValidationByModel validation;
  if (view->store)
    for (const FamilyNode& n : *nodes) {
      auto metrics = workbench::last_validation(*view->store, n);
      if (!metrics.is_ok()) return fail(metrics.status());
      validation[n.name] = std::move(*metrics);
    }
  if (global.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const FamilyNode& n : *nodes) {
      out.push_back(node_json(n));
      if (!validation[n.name].empty()) out.back()["validation"] = validation[n.name];
    }
    // "spec" is the spec file's path everywhere (docs/json.md); null: the store alone.
    print_json({{"models", out},
                {"spec", view->workspace ? nlohmann::json(view->workspace->spec_path.string())
                                         : nlohmann::json()}});
    return kExitOk;
  }
  if (!view->workspace && global.verbosity >= 0) {
    print_note(view->why_no_spec + "; showing the store only (no 'not trained' or 'out of date')");
  }
  const bool tty = stdout_is_tty();
  for (const FamilyNode& n : *nodes) {
    if (n.name == root || (root.empty() && n.parent.empty()))
      print_subtree(*nodes, n, validation, all_metrics, "", "", tty);
  }
  if (nodes->empty()) std::cout << "no models yet: the spec and the store are empty\n";
  return kExitOk;
}

// A recipe value for one line: long strings (hashes, paths) cut to 12 characters.
std::string short_value(const nlohmann::json& value) {
  if (value.is_null()) return "(none)";
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    return text.size() > 16 ? text.substr(0, 12) + "…" : text;
  }
  return value.dump();
}

// What a run's line says below it: the recipe fields a new version changed, the version a
// restore brought back, the cases a test run judged.
std::string run_detail(const lineage::RunRecord& r,
                       const std::vector<workbench::RecipeDifference>* changed) {
  if (r.kind == lineage::RunKind::kRestore) {
    const auto& from = r.hyperparameters;
    return from.contains("restored_run")
               ? "restored the version of run #" + from["restored_run"].dump() + ", no training"
               : "restored a stored version, no training";
  }
  if (r.kind == lineage::RunKind::kTest)
    return r.cases ? std::to_string(*r.cases) + " cases judged" : "";
  if (!changed || changed->empty()) return "";
  std::string out = "changed";
  for (const workbench::RecipeDifference& d : *changed)
    out += (out == "changed" ? " " : ", ") + d.field + " " + short_value(d.a) + " -> " +
           short_value(d.b);
  return out;
}

int run_log(const GlobalOptions& global, const std::string& model, std::int64_t limit) {
  auto context = open_store_context(global, workbench::StoreAccess::kRead);
  if (!context.is_ok()) return fail(context.status());
  lineage::LineageStore& store = (*context)->store();
  if (!model.empty())
    if (auto found = workbench::find_stored_model(store, model); !found.is_ok())
      return fail(found.status());
  // Every run, for what each version changed from the one before; then the newest `limit`.
  auto runs = store.runs(model, 0);
  if (!runs.is_ok()) return fail(runs.status());
  const auto changes = workbench::recipe_changes(*runs);
  if (limit > 0 && static_cast<std::int64_t>(runs->size()) > limit) runs->resize(limit);
  const auto changed_by = [&](const lineage::RunRecord& r) {
    auto it = changes.find(r.id);
    return it == changes.end() ? nullptr : &it->second;
  };
  if (global.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : *runs) {
      out.push_back(run_to_json(r));
      if (const auto* changed = changed_by(r)) {
        nlohmann::json fields = nlohmann::json::array();
        for (const workbench::RecipeDifference& d : *changed)
          fields.push_back({{"field", d.field}, {"from", d.a}, {"to", d.b}});
        out.back()["changed"] = fields;
      }
    }
    print_json({{"runs", out}});
    return kExitOk;
  }
  const bool tty = stdout_is_tty();
  std::cout << std::left << std::setw(7) << "RUN" << std::setw(20) << "MODEL" << std::setw(8)
            << "KIND" << std::setw(13) << "STATUS" << std::setw(14) << "RECIPE" << std::setw(26)
            << "STARTED" << std::setw(10) << "DURATION" << std::setw(8) << "STEPS"
            << "FINAL LOSS\n";
  for (const auto& r : *runs) {
    const std::string status = lineage::run_status_name(r.status);
    const Color color = r.status == lineage::RunStatus::kFinished  ? Color::kGreen
                        : r.status == lineage::RunStatus::kRunning ? Color::kCyan
                                                                   : Color::kRed;
    std::ostringstream loss;
    if (r.final_loss)
      loss << std::fixed << std::setprecision(4) << *r.final_loss;
    else
      loss << "-";
    std::cout << std::left << std::setw(7) << ("#" + std::to_string(r.id)) << std::setw(20)
              << r.model << std::setw(8) << lineage::run_kind_name(r.kind)
              << paint(status, color, tty)
              << std::string(13 - std::min<std::size_t>(12, status.size()), ' ') << std::setw(14)
              << r.recipe_hash.substr(0, 12) << std::setw(26) << r.started_at << std::setw(10)
              << human_duration(r.duration_s) << std::setw(8) << r.steps << loss.str() << '\n';
    if (const std::string detail = run_detail(r, changed_by(r)); !detail.empty())
      std::cout << "       " << paint(detail, Color::kDim, tty) << '\n';
  }
  if (runs->empty())
    std::cout << "no runs recorded" << (model.empty() ? "" : " for '" + model + "'") << '\n';
  return kExitOk;
}

// The family for the DOT and Mermaid writers: each node's name, parent, method and
// status, and the spec's shares.
std::vector<report::ReportModel> graph_models(const std::vector<FamilyNode>& nodes) {
  std::vector<report::ReportModel> models;
  for (const FamilyNode& n : nodes)
    models.push_back({.name = n.name, .parent = n.parent, .method = n.method, .status = n.status});
  return models;
}

std::vector<report::ReportShare> graph_shares(const std::optional<spec::Workspace>& ws) {
  std::vector<report::ReportShare> shares;
  if (ws)
    for (const spec::Share& s : ws->shares) shares.push_back({s.name, s.models, s.modules});
  return shares;
}

int run_export_graph(const GlobalOptions& global, const std::string& format) {
  if (global.json && format != "json")
    return fail(invalid_argument("--json asks for JSON and --format " + format + " for " + format +
                                 "; drop one (--format json is the JSON form)"));
  auto view = load_family(global);
  if (!view.is_ok()) return fail(view.status());
  const auto& nodes = view->nodes;
  if (format == "json") {
    nlohmann::json models = nlohmann::json::array(), edges = nlohmann::json::array();
    for (const FamilyNode& n : nodes) {
      models.push_back(node_json(n));
      if (!n.parent.empty()) edges.push_back({{"from", n.parent}, {"to", n.name}});
    }
    nlohmann::json shares = nlohmann::json::array();
    for (const report::ReportShare& s : graph_shares(view->workspace))
      shares.push_back({{"share", s.name}, {"models", s.models}, {"modules", s.modules}});
    print_json({{"models", models}, {"edges", edges}, {"shares", shares}});
  } else if (format == "dot") {
    std::cout << report::family_dot(graph_models(nodes), graph_shares(view->workspace));
  } else {
    std::cout << report::family_mermaid(graph_models(nodes), graph_shares(view->workspace));
  }
  return kExitOk;
}

}  // namespace

void add_lineage_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  CLI::App* cmd =
      app.add_subcommand("lineage", "Query the family tree, runs and sharing in the store");
  cmd->require_subcommand(1);
  cmd->footer("Example: scion lineage tree");

  auto tree_root = std::make_shared<std::string>();
  CLI::App* tree = cmd->add_subcommand(
      "tree", "Family tree: method, status and shared parameters of each model");
  tree->add_option("MODEL", *tree_root, "Show only this model and its descendants");
  auto tree_metrics = std::make_shared<std::string>("main");
  tree->add_option("--metrics", *tree_metrics,
                   "main (default): each model's main validation metric; all: every one")
      ->check(CLI::IsMember({"main", "all"}));
  tree->footer(
      "Status: trained | imported | not trained | out of date (spec recipe differs from the\n"
      "stored one) | interrupted at step N[, resumable] (`--resume` continues it).\n"
      "Metrics: the head's main one (accuracy, RMSE for regression, micro-F1 for multi-label,\n"
      "entity F1 for token classification, val_loss for a language model); --metrics all\n"
      "shows every one, as --json always does.\n"
      "Example: scion lineage tree sst2");
  tree->callback([&global, &action, tree_root, tree_metrics] {
    action = [&global, tree_root, tree_metrics] {
      return run_tree(global, *tree_root, *tree_metrics == "all");
    };
  });

  auto show_model = std::make_shared<std::string>();
  CLI::App* show = cmd->add_subcommand("show", "One model: ancestry, recipes, data, runs, sharing");
  show->add_option("MODEL", *show_model, "The model (MODEL@N or MODEL@<hash>: that version)")
      ->required();
  show->footer(
      "Example: scion lineage show sst2-negation --json\n"
      "         scion lineage show sst2-negation@12");
  show->callback([&global, &action, show_model] {
    action = [&global, show_model] { return run_lineage_show(global, *show_model); };
  });

  auto log_model = std::make_shared<std::string>();
  auto log_limit = std::make_shared<std::int64_t>(20);
  auto log_all = std::make_shared<bool>(false);
  CLI::App* log = cmd->add_subcommand(
      "log", "Runs, newest first: recipe hash, what each version changed, status, final loss");
  log->add_option("MODEL", *log_model, "Only this model's runs");
  log->add_option("-n,--limit", *log_limit, "At most N runs (default 20)")->option_text("N");
  log->add_flag("--all", *log_all, "Every run");
  log->footer("Example: scion lineage log sst2 -n 5");
  log->callback([&global, &action, log_model, log_limit, log_all] {
    action = [&global, log_model, log_limit, log_all] {
      return run_log(global, *log_model, *log_all ? 0 : *log_limit);
    };
  });

  auto diff_a = std::make_shared<std::string>(), diff_b = std::make_shared<std::string>();
  CLI::App* diff =
      cmd->add_subcommand("diff", "Parameters and recipe fields that differ between two models");
  diff->add_option("A", *diff_a, "First model (MODEL@N or MODEL@<hash>: that version)")->required();
  diff->add_option("B", *diff_b, "Second model (MODEL@N or MODEL@<hash>: that version)")
      ->required();
  diff->footer(
      "Example: scion lineage diff sst2 sst2-negation\n"
      "         scion lineage diff sst2-negation@12 sst2-negation");
  diff->callback([&global, &action, diff_a, diff_b] {
    action = [&global, diff_a, diff_b] { return run_lineage_diff(global, *diff_a, *diff_b); };
  });

  auto format = std::make_shared<std::string>("dot");
  CLI::App* exp =
      cmd->add_subcommand("export", "The family as a graph: Graphviz dot, Mermaid or JSON");
  exp->add_option("--format", *format, "dot | mermaid | json (default dot)")
      ->check(CLI::IsMember({"dot", "mermaid", "json"}));
  exp->footer("Example: scion lineage export --format dot | dot -Tsvg > family.svg");
  exp->callback([&global, &action, format] {
    action = [&global, format] { return run_export_graph(global, *format); };
  });

  add_lineage_versions_subcommand(*cmd, global, action);
  add_lineage_blame_subcommand(*cmd, global, action);
  add_lineage_metrics_subcommand(*cmd, global, action);
}

}  // namespace scion::cli
