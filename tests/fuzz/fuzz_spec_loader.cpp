// libFuzzer target: any bytes given to the spec loader (and, when they load, to the
// parameter checks) must give a workspace or diagnostics, never a crash, a hang or
// unbounded memory. See docs/fuzzing.md for how to build and run it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "spec/loader.h"
#include "spec/parameter_checks.h"

namespace {

// A directory with small data files, so that specs naming them reach the deeper checks.
std::filesystem::path fixture_dir() {
  static const std::filesystem::path dir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "scion-fuzz-XXXXXX").string();
    std::filesystem::path made = mkdtemp(pattern.data());
    std::ofstream(made / "reviews.jsonl") << "{\"text\": \"good\", \"label\": \"positive\"}\n";
    std::ofstream(made / "corpus.txt") << "some text\n";
    std::ofstream(made / "products.jsonl") << "{\"text\": \"bad\", \"label\": \"negative\"}\n";
    return made;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  scion::spec::LoadResult result =
      scion::spec::load_workspace_from_string(text, "fuzz.yaml", fixture_dir());
  scion::spec::check_parameters(result);
  // The loader's contract: a workspace exactly when there are no errors.
  if (result.workspace.has_value() == !result.errors.empty()) std::abort();
  for (const scion::spec::Diagnostic& d : result.errors)
    if (d.to_string().empty() || d.message.empty()) std::abort();
  return 0;
}
