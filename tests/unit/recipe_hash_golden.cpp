// The golden recipe hashes: every model of every example spec and of
// tests/fixtures/recipes/every-method.yaml hashed and compared with
// tests/fixtures/recipes/golden-hashes.json, so that no refactor of the spec, the
// adaptation methods or the canonical JSON changes a stored model's recipe hash (and so
// puts every existing store out of date) without saying so.
//
// Usage: recipe_hash_golden SOURCE_ROOT [--update]. --update rewrites the golden file
// (only for a change that means to move hashes, named in its commit message). Exit 0 when
// every hash matches, 1 naming each that differs, 2 on a spec that does not load.
// examples/minilm is left out: it imports a model fetched at run time.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "runtime/adapters/registry.h"
#include "spec/loader.h"

namespace {

namespace fs = std::filesystem;

constexpr const char* kSpecs[] = {"examples/sentiment/scion.yaml", "examples/generation/scion.yaml",
                                  "examples/methods/scion.yaml",
                                  "tests/fixtures/recipes/every-method.yaml"};
constexpr const char* kGolden = "tests/fixtures/recipes/golden-hashes.json";

// {spec path: {model: recipe hash}}, or a message when a spec does not load.
bool hash_every_spec(const fs::path& root, nlohmann::json& out) {
  for (const char* spec : kSpecs) {
    const scion::spec::LoadResult r = scion::spec::load_workspace(root / spec);
    if (!r.workspace) {
      for (const auto& d : r.errors) std::cerr << d.to_string() << "\n";
      std::cerr << spec << ": does not load\n";
      return false;
    }
    for (const scion::spec::Model& m : r.workspace->models) out[spec][m.name] = m.recipe_hash;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  scion::runtime::register_adaptation_methods();  // (IA)³'s block hashes its settings
  if (argc < 2) {
    std::cerr << "usage: recipe_hash_golden SOURCE_ROOT [--update]\n";
    return 2;
  }
  const fs::path root = argv[1];
  const bool update = argc > 2 && std::string(argv[2]) == "--update";
  nlohmann::json now = nlohmann::json::object();
  if (!hash_every_spec(root, now)) return 2;
  if (update) {
    std::ofstream(root / kGolden) << now.dump(2) << "\n";
    std::cout << "wrote " << kGolden << "\n";
    return 0;
  }
  std::ifstream in(root / kGolden);
  const nlohmann::json golden = nlohmann::json::parse(in, nullptr, false);
  if (golden.is_discarded()) {
    std::cerr << kGolden << ": not JSON\n";
    return 2;
  }
  int differences = 0;
  for (const auto& [spec, models] : now.items())
    for (const auto& [name, hash] : models.items()) {
      const auto want = golden.contains(spec) && golden[spec].contains(name)
                            ? golden[spec][name].get<std::string>()
                            : std::string("(none)");
      if (want == hash.get<std::string>()) continue;
      std::cerr << spec << ": model '" << name << "' hashes to " << hash.get<std::string>()
                << ", golden " << want << "\n";
      ++differences;
    }
  for (const auto& [spec, models] : golden.items())
    for (const auto& [name, hash] : models.items())
      if (!now.contains(spec) || !now[spec].contains(name)) {
        std::cerr << spec << ": golden model '" << name << "' is gone\n";
        ++differences;
      }
  if (differences == 0)
    std::cout << "every recipe hash matches " << kGolden << " (" << now.size() << " specs)\n";
  return differences == 0 ? 0 : 1;
}
