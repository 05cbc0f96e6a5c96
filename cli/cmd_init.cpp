// `scion init [DIR]`: a new workspace to start from (workbench/scaffold.h).
#include <iostream>

#include "cli/cmd_lineage_support.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "cli/output_path.h"
#include "workbench/scaffold.h"

namespace scion::cli {
namespace {

int run_init(const GlobalOptions& global, const std::string& dir) {
  if (auto where = checked_output_folder(dir, global.store_path(), "DIR"); !where.is_ok())
    return fail(where.status());
  auto written = workbench::scaffold_workspace(dir);
  if (!written.is_ok()) return fail(written.status());
  if (global.json) {
    nlohmann::json files = nlohmann::json::array();
    for (const workbench::ScaffoldedFile& f : *written)
      files.push_back({{"path", f.path}, {"bytes", f.bytes}});
    print_json({{"dir", dir}, {"files", files}});
    return kExitOk;
  }
  for (const workbench::ScaffoldedFile& f : *written)
    std::cout << "created " << (std::filesystem::path(dir) / f.path).string() << "\n";
  const std::string cd = dir == "." ? "" : "cd " + dir + " && ";
  std::cout << "next: " << cd << "scion validate && scion run && scion test\n";
  return kExitOk;
}

}  // namespace

void add_init_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  auto dir = std::make_shared<std::string>(".");
  CLI::App* cmd =
      app.add_subcommand("init", "Start a workspace: a commented scion.yaml and a tiny dataset");
  cmd->add_option("DIR", *dir,
                  "The folder to write into (default: the current one; made when missing)");
  cmd->footer(
      "Writes DIR/scion.yaml (a trunk, two adapted models, a behavioural test and an\n"
      "assertion, each key explained), DIR/scion.schema.json (the schema its modeline names,\n"
      "for editors) and DIR/data/reviews.jsonl (60 labelled sentences).\n"
      "Never replaces a file: when any of them exists it writes nothing (exit 2).\n"
      "Example: scion init my-family && cd my-family && scion run && scion test");
  cmd->callback(
      [&global, &action, dir] { action = [&global, dir] { return run_init(global, *dir); }; });
}

}  // namespace scion::cli
