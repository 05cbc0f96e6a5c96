// `scion schema`: the JSON Schema of scion.yaml (spec/json_schema.h), for editors and
// validators. The document is JSON already, with or without --json.
#include <iostream>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "spec/json_schema.h"

namespace scion::cli {

void add_schema_command(CLI::App& app, const GlobalOptions&, CommandAction& action) {
  CLI::App* cmd = app.add_subcommand("schema", "Print the JSON Schema of scion.yaml");
  cmd->footer(
      "Built from the loader's own key tables, so it names exactly the keys `validate`\n"
      "accepts. Editors with the YAML language server read it through a modeline:\n"
      "  # yaml-language-server: $schema=scion.schema.json\n"
      "Example: scion schema > scion.schema.json");
  cmd->callback([&action] {
    action = [] {
      std::cout << spec::workspace_json_schema().dump(2) << "\n";
      return kExitOk;
    };
  });
}

}  // namespace scion::cli
