// `scion lineage versions MODEL`: every stored version of a model, newest first: the run
// that made it (MODEL@N names it), its recipe hash, the parent version it was made from,
// its data, and which one is current. Restore runs that brought a version back are listed
// with it.
#include <fmt/format.h>

#include <iostream>

#include "cli/cmd_lineage_support.h"
#include "cli/command_context.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "workbench/model_lookup.h"

namespace scion::cli {
namespace {

// How a version is named on the command line: MODEL@RUN, or MODEL@<hash> without a run.
std::string version_label(const std::string& model, const std::string& recipe_hash,
                          std::optional<std::int64_t> run) {
  return model + "@" + (run ? std::to_string(*run) : recipe_hash.substr(0, 12));
}

int run_versions(const GlobalOptions& global, const std::string& model) {
  auto context = open_store_context(global, workbench::StoreAccess::kRead);
  if (!context.is_ok()) return fail(context.status());
  lineage::LineageStore& store = (*context)->store();
  if (auto found = workbench::find_stored_model(store, model); !found.is_ok())
    return fail(found.status());
  auto versions = store.versions(model);
  if (!versions.is_ok()) return fail(versions.status());
  auto runs = store.runs(model, 0);
  if (!runs.is_ok()) return fail(runs.status());
  nlohmann::json out = nlohmann::json::array();
  for (const lineage::StoredVersion& v : *versions) {
    nlohmann::json restored_by = nlohmann::json::array();
    for (const lineage::RunRecord& r : *runs)
      if (r.kind == lineage::RunKind::kRestore && r.recipe_hash == v.recipe_hash)
        restored_by.push_back(r.id);
    nlohmann::json parent;
    if (!v.parent.empty() && v.parent_recipe_hash) {
      auto made_from = store.find_version(v.parent, *v.parent_recipe_hash);
      if (!made_from.is_ok()) return fail(made_from.status());
      std::optional<std::int64_t> parent_run;
      if (made_from->has_value()) parent_run = (*made_from)->run;
      parent = {{"model", v.parent},
                {"recipe_hash", *v.parent_recipe_hash},
                {"version", version_label(v.parent, *v.parent_recipe_hash, parent_run)}};
    }
    out.push_back({{"version", version_label(model, v.recipe_hash, v.run)},
                   {"run", v.run ? nlohmann::json(*v.run) : nlohmann::json()},
                   {"recipe_hash", v.recipe_hash},
                   {"parent", parent},
                   {"data_digests", v.data_digests},
                   {"created_at", v.created_at},
                   {"current", v.current},
                   {"parameters", v.parameter_count},
                   {"restored_by", restored_by}});
  }
  if (global.json) {
    print_json({{"model", model}, {"versions", out}});
    return kExitOk;
  }
  const bool tty = stdout_is_tty();
  std::cout << "versions of " << paint(model, Color::kBold, tty)
            << ", newest first (name one as MODEL@N or MODEL@<hash prefix>):\n";
  for (const nlohmann::json& v : out) {
    std::string line = fmt::format("  {:<28} {}  {}", v["version"].get<std::string>(),
                                   v["recipe_hash"].get<std::string>().substr(0, 12),
                                   v["created_at"].get<std::string>());
    if (!v["parent"].is_null()) line += "  from " + v["parent"]["version"].get<std::string>();
    for (const nlohmann::json& d : v["data_digests"])
      line += "  data " + d.get<std::string>().substr(0, 12);
    std::cout << line
              << (v["current"].get<bool>() ? "  " + paint("current", Color::kGreen, tty) : "");
    if (!v["restored_by"].empty())
      std::cout << "  "
                << paint(fmt::format("restored by run {}", v["restored_by"].dump()), Color::kDim,
                         tty);
    std::cout << '\n';
  }
  if (out.empty()) std::cout << "  none stored yet (scion run)\n";
  return kExitOk;
}

}  // namespace

void add_lineage_versions_subcommand(CLI::App& lineage, const GlobalOptions& global,
                                     CommandAction& action) {
  auto model = std::make_shared<std::string>();
  CLI::App* cmd = lineage.add_subcommand(
      "versions", "Every stored version of a model: its run, recipe, parent version, data");
  cmd->add_option("MODEL", *model, "The model")->required();
  cmd->footer(
      "A version is a model's parameters for one recipe hash; a recipe that comes back is\n"
      "restored from its version instead of trained. MODEL@N (N: the run that made,\n"
      "restored or tested it) or MODEL@<hash prefix> names one in show, diff, blame,\n"
      "export, predict, eval, test --compare and report.\n"
      "Example: scion lineage versions review-lora");
  cmd->callback([&global, &action, model] {
    action = [&global, model] { return run_versions(global, *model); };
  });
}

}  // namespace scion::cli
