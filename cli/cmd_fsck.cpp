// `scion fsck`: verify every object's digest and every reference in the store, and with
// a valid spec each up-to-date model's parameter names. Notes checkpoints that cannot be
// resumed. Reports and never repairs; exit 1 when it finds damage.
#include <iostream>
#include <set>

#include "cli/cmd_lineage_support.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "lineage/fsck.h"
#include "runtime/parameter_table.h"
#include "workbench/checkpoints.h"

namespace scion::cli {

namespace {

nlohmann::json findings_json(const std::vector<lineage::FsckFinding>& findings) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : findings) out.push_back({{"subject", f.subject}, {"message", f.message}});
  return out;
}

std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < 5; ++i) out += (i ? ", " : "") + names[i];
  return names.size() > 5 ? out + " and " + std::to_string(names.size() - 5) + " more" : out;
}

// Each model whose stored parameters are of its spec recipe holds exactly the parameters
// the spec defines for it (runtime::parameter_table): no fewer, no others.
Status check_parameter_names(lineage::LineageStore& store, const spec::Workspace& ws,
                             lineage::FsckReport& report) {
  for (const spec::Model& model : ws.models) {
    auto stored = store.find_model(model.name);
    if (!stored.is_ok()) return stored.status();
    if (!stored->has_value() || (*stored)->recipe_hash != model.recipe_hash) continue;
    auto present = store.parameters(model.name);
    if (!present.is_ok()) return present.status();
    auto unbacked = store.missing_objects(model.name);  // reported already; still recorded
    if (!unbacked.is_ok()) return unbacked.status();
    std::set<std::string> names;
    for (const auto& p : *present) names.insert(p.name);
    for (const auto& p : *unbacked) names.insert(p.name);
    std::vector<std::string> missing, extra;
    std::set<std::string> expected;
    for (const runtime::ParameterSpec& p : runtime::parameter_table(ws, model)) {
      expected.insert(p.name);
      if (!names.count(p.name)) missing.push_back(p.name);
    }
    for (const std::string& name : names)
      if (!expected.count(name)) extra.push_back(name);
    const std::string subject = "model '" + model.name + "'";
    const std::string fix = "; retrain it (`scion run --force " + model.name + "`)";
    if (!missing.empty())
      report.problems.push_back({subject, "lacks " + std::to_string(missing.size()) +
                                              " parameter(s) its spec defines: " + listed(missing) +
                                              fix});
    if (!extra.empty())
      report.problems.push_back(
          {subject, "has " + std::to_string(extra.size()) +
                        " parameter(s) its spec does not define: " + listed(extra) + fix});
  }
  return Status::ok();
}

// What the store alone cannot check: parameters against the spec, and checkpoints.
Status check_against_spec(const GlobalOptions& global, lineage::LineageStore& store,
                          lineage::FsckReport& report) {
  std::string why_no_spec;
  const auto workspace = load_workspace_if_valid(global, why_no_spec);
  if (workspace) {
    SCION_RETURN_IF_ERROR(check_parameter_names(store, *workspace, report));
  } else {
    report.notes.push_back({"spec", why_no_spec + "; parameter names not checked against it"});
  }
  auto checkpoints = workbench::list_checkpoints(store, workspace ? &*workspace : nullptr);
  if (!checkpoints.is_ok()) return checkpoints.status();
  for (const workbench::CheckpointFile& c : *checkpoints)
    if (!c.stale.empty())
      report.notes.push_back({"checkpoint " + c.path.string(),
                              "cannot be resumed: " + c.stale + "; 'scion gc' removes it"});
  return Status::ok();
}

int run_fsck(const GlobalOptions& global) {
  auto store = open_store_read_only(global);
  if (!store.is_ok()) return fail(store.status());
  auto report = lineage::check_store(**store);
  if (!report.is_ok()) return fail(report.status());
  if (report->complete)
    if (Status s = check_against_spec(global, **store, *report); !s.is_ok()) return fail(s);
  if (global.json) {
    print_json({{"store", (*store)->dir().string()},
                {"ok", report->ok()},
                {"objects_checked", report->objects_checked},
                {"bytes_checked", report->bytes_checked},
                {"parameters_checked", report->parameters_checked},
                {"problems", findings_json(report->problems)},
                {"notes", findings_json(report->notes)}});
  } else {
    const bool tty = stdout_is_tty();
    for (const auto& p : report->problems) {
      std::cout << paint("damaged", Color::kRed, tty) << "  " << p.subject << ": " << p.message
                << '\n';
    }
    if (global.verbosity >= 0) {
      for (const auto& n : report->notes) {
        std::cout << paint("note", Color::kCyan, tty) << "     " << n.subject << ": " << n.message
                  << '\n';
      }
    }
    std::cout << "checked " << report->objects_checked << " objects ("
              << human_bytes(report->bytes_checked) << ") and " << report->parameters_checked
              << " parameter references in " << (*store)->dir().string() << ": "
              << (report->ok() ? paint("ok", Color::kGreen, tty)
                               : paint(std::to_string(report->problems.size()) + " problem(s)",
                                       Color::kRed, tty))
              << '\n';
  }
  return report->ok() ? kExitOk : kExitFailures;
}

}  // namespace

void add_fsck_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  CLI::App* cmd =
      app.add_subcommand("fsck", "Verify every stored tensor's digest and every reference");
  cmd->footer(
      "Reports damage and never repairs it. Exit 0: the store is sound; 1: problems found.\n"
      "Example: scion fsck --store examples/sentiment/.scion");
  cmd->callback([&global, &action] { action = [&global] { return run_fsck(global); }; });
}

}  // namespace scion::cli
