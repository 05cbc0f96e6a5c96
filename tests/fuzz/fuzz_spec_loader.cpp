// libFuzzer target: any bytes given to the spec loader (and, when they load, to the
// parameter checks) must give a workspace or diagnostics, never a crash, a hang or
// unbounded memory. See docs/fuzzing.md for how to build and run it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>

#include "runtime/adapters/registry.h"
#include "runtime/model/parameter_table.h"
#include "spec/loader.h"
#include "workbench/parameter_checks.h"

namespace {

// A directory with small data files, so that specs naming them reach the deeper checks;
// removed when the program exits (the default suite replays the seeds on every run).
std::filesystem::path made_dir;

std::filesystem::path fixture_dir() {
  static const std::filesystem::path dir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "scion-fuzz-XXXXXX").string();
    std::filesystem::path made = mkdtemp(pattern.data());
    made_dir = made;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(made_dir, ec);
    });
    std::ofstream(made / "reviews.jsonl") << "{\"text\": \"good\", \"label\": \"positive\"}\n";
    std::ofstream(made / "corpus.txt") << "some text\n";
    std::ofstream(made / "products.jsonl") << "{\"text\": \"bad\", \"label\": \"negative\"}\n";
    return made;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  scion::runtime::register_adaptation_methods();  // the loader reads their blocks too
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  scion::spec::LoadResult result =
      scion::spec::load_workspace_from_string(text, "fuzz.yaml", fixture_dir());
  scion::workbench::check_parameters(result);
  // The loader's contract: a workspace exactly when there are no errors.
  if (result.workspace.has_value() == !result.errors.empty()) std::abort();
  for (const scion::spec::Diagnostic& d : result.errors) {
    if (d.message.empty()) std::abort();
    // `validate --json` prints these: they must be valid UTF-8 (dump throws otherwise).
    (void)nlohmann::json({d.to_string(), d.key_path}).dump();
  }
  if (!result.workspace) return 0;
  // What `plan` and the runtime do with a valid workspace must hold up too.
  const scion::spec::Workspace& ws = *result.workspace;
  for (const scion::spec::Model& m : ws.models) {
    (void)scion::runtime::parameter_table(ws, m);
    (void)nlohmann::json(m.name).dump();
  }
  for (const scion::spec::TestSpec& t : ws.tests) (void)t.body.dump();
  for (const scion::spec::AssertionSpec& a : ws.assertions) (void)a.body.dump();
  return 0;
}
