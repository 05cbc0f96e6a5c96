// `scion tag [NAME] [--delete NAME]`: names the spec version the spec describes now (every
// model at its current recipe, all stored), so that `scion gc --keep N` keeps its versions
// however many spec versions come after; lists the spec versions and their tags.
#include <fmt/format.h>

#include <iostream>

#include "cli/cmd_lineage_support.h"
#include "cli/command_context.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "workbench/spec_version.h"

namespace scion::cli {
namespace {

struct TagOptions {
  std::string tag;
  std::string delete_tag;
};

int list_spec_versions(const GlobalOptions& global, lineage::LineageStore& store) {
  auto versions = store.spec_versions();
  if (!versions.is_ok()) return fail(versions.status());
  nlohmann::json tags = nlohmann::json::array(), out = nlohmann::json::array();
  for (const lineage::SpecVersion& v : *versions) {
    for (const std::string& t : v.tags) tags.push_back({{"tag", t}, {"spec_version", v.digest}});
    out.push_back({{"spec_version", v.digest},
                   {"spec", v.spec_path},
                   {"first_seen", v.first_seen},
                   {"last_seen", v.last_seen},
                   {"tags", v.tags},
                   {"members", v.members}});
  }
  if (global.json) {
    print_json({{"tags", tags}, {"spec_versions", out}});
    return kExitOk;
  }
  const bool tty = stdout_is_tty();
  std::cout << "spec versions, most recently seen first (`scion gc --keep N` keeps the N first "
               "and every tagged one):\n";
  for (std::size_t i = 0; i < versions->size(); ++i) {
    const lineage::SpecVersion& v = (*versions)[i];
    std::cout << fmt::format("  {:>3}. {}  seen {}  {} model(s)", i + 1, v.digest.substr(0, 12),
                             v.last_seen, v.members.size());
    for (const std::string& t : v.tags) std::cout << "  " << paint("tag " + t, Color::kCyan, tty);
    std::cout << '\n';
  }
  if (versions->empty()) std::cout << "  none yet (scion run records the spec version it ran)\n";
  return kExitOk;
}

int run_tag(const GlobalOptions& global, const TagOptions& opts) {
  auto context = open_store_context(global, workbench::StoreAccess::kWrite);
  if (!context.is_ok()) return fail(context.status());
  lineage::LineageStore& store = (*context)->store();
  if (!opts.delete_tag.empty()) {
    if (Status deleted = store.delete_tag(opts.delete_tag); !deleted.is_ok()) return fail(deleted);
    if (!global.json && global.verbosity >= 0)
      std::cout << "deleted tag '" << opts.delete_tag << "'\n";
  }
  if (!opts.tag.empty()) {
    auto workspace = load_workspace_or_report(global);
    if (!workspace.is_ok()) return kExitUsage;
    if (Status tagged = workbench::tag_spec_version(*workspace, store, opts.tag); !tagged.is_ok())
      return fail(tagged);
    if (!global.json && global.verbosity >= 0)
      std::cout << "tagged the spec version of " << workspace->spec_path.string() << " '"
                << opts.tag << "'\n";
  }
  return list_spec_versions(global, store);
}

}  // namespace

void add_tag_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  auto opts = std::make_shared<TagOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tag", "Name the spec version the spec describes now, so that gc keeps its models");
  cmd->add_option("NAME", opts->tag, "The tag (a name as models have; replaces one of that name)");
  cmd->add_option("--delete", opts->delete_tag, "Remove this tag")->option_text("NAME");
  cmd->footer(
      "A spec version is every model of the spec at its recipe. run, train, adapt and\n"
      "import record the one they ran; `scion gc --keep N` keeps the versions of models\n"
      "that the N most recently seen spec versions and every tagged one name.\n"
      "Without NAME: lists the spec versions and their tags.\n"
      "Example: scion tag release-1");
  cmd->callback(
      [&global, &action, opts] { action = [&global, opts] { return run_tag(global, *opts); }; });
}

}  // namespace scion::cli
