// Loading the workspace spec for the store commands (spec/loader.h).
#include <iostream>

#include "cli/cmd_lineage_support.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "spec/loader.h"

namespace scion::cli {

std::optional<spec::Workspace> load_workspace_if_valid(const GlobalOptions& global,
                                                       std::string& why) {
  const std::filesystem::path path = global.spec_file;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    why = "no spec file '" + path.string() + "'";
    return std::nullopt;
  }
  spec::LoadResult loaded = spec::load_workspace(path);
  if (!loaded.workspace) {
    why = "the spec '" + path.string() + "' has " + std::to_string(loaded.errors.size()) +
          " error(s); run 'scion validate'";
    return std::nullopt;
  }
  return std::move(loaded.workspace);
}

Result<spec::Workspace> load_workspace_or_report(const GlobalOptions& global) {
  spec::LoadResult loaded = spec::load_workspace(global.spec_file);
  if (loaded.workspace) return std::move(*loaded.workspace);
  for (const auto& diagnostic : loaded.errors) std::cerr << diagnostic.to_string() << '\n';
  return spec_error("the spec '" + global.spec_file + "' has " +
                    std::to_string(loaded.errors.size()) +
                    " error(s) (listed above); fix them and retry");
}

}  // namespace scion::cli
