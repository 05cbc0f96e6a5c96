// Tests and assertions written in YAML go through the spec loader and compile here: body
// keys arrive with their YAML types, and errors carry the YAML line and key path.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "assertions/behavioural_test.h"
#include "assertions/model_assertion.h"
#include "spec/loader.h"

using namespace scion;
using namespace scion::assertions;

namespace {

constexpr const char* kSpec =
    "datasets:\n"
    "  corpus: {path: corpus.txt}\n"
    "models:\n"
    "  base:\n"
    "    architecture: {layers: 1, width: 8, heads: 2, max_length: 16}\n"
    "    train: {data: corpus, steps: 1}\n"
    "lexicons:\n"
    "  dish: [soup, pasta, omelette]\n"
    "tests:\n"
    "  negated_dishes:\n"
    "    type: dir\n"
    "    capability: Negation\n"
    "    max_failure_rate: 0.1\n"
    "    templates: [\"The {dish} is {pos_adj}.\", \"{a:dish} was {intensifier} {pos_adj}.\"]\n"
    "    max_cases: 40\n"
    "    seed: 5\n"
    "    perturb: {kind: negation}\n"
    "    direction: {label: positive, change: decrease, tolerance: 0.05}\n"
    "  typo_in_template:\n"
    "    type: mft\n"
    "    capability: Vocabulary\n"
    "    template: \"The {dsh} is fine.\"\n"
    "    expect: {label: positive}\n"
    "assertions:\n"
    "  unsure:\n"
    "    kind: expression\n"
    "    expression: \"(confidence < 0.6) * (1 - margin\"\n";

}  // namespace

TEST_CASE("spec tests and assertions compile from loaded YAML", "[assertions][spec]") {
  const auto dir_path = std::filesystem::temp_directory_path() / "scion-assertions-spec-test";
  std::filesystem::create_directories(dir_path);
  std::ofstream(dir_path / "corpus.txt") << "some text\n";
  const auto loaded = spec::load_workspace_from_string(kSpec, "scion.yaml", dir_path);
  std::filesystem::remove_all(dir_path);
  for (const auto& e : loaded.errors) UNSCOPED_INFO(e.to_string());
  REQUIRE(loaded.workspace.has_value());
  const spec::Workspace& ws = *loaded.workspace;
  auto lexicons = LexiconSet::for_workspace(ws);
  REQUIRE(lexicons.is_ok());
  REQUIRE(ws.tests.size() == 2);

  auto dir = compile_test(ws.tests[0], *lexicons, ws.root_dir);
  INFO((dir.is_ok() ? std::string() : dir.status().message()));
  REQUIRE(dir.is_ok());
  CHECK(dir->type == TestType::kDir);
  CHECK(dir->max_cases == 40);
  CHECK(dir->seed == 5);
  CHECK(dir->max_failure_rate == Approx(0.1));
  REQUIRE(dir->direction.has_value());
  CHECK(dir->direction->tolerance == Approx(0.05));
  auto cases = generate_cases(*dir);
  REQUIRE(cases.is_ok());
  CHECK(cases->cases.size() == 40);
  for (const TestCase& c : cases->cases) CHECK_THAT(*c.perturbed, Catch::Contains(" not "));

  auto typo = compile_test(ws.tests[1], *lexicons, ws.root_dir);
  REQUIRE_FALSE(typo.is_ok());
  // Errors name the position of the key at fault, not only of the test.
  CHECK_THAT(typo.status().message(),
             Catch::StartsWith("scion.yaml:22:5: tests.typo_in_template.template, column 5: "
                               "unknown lexicon 'dsh'"));

  REQUIRE(ws.assertions.size() == 1);
  auto unsure = ModelAssertion::compile(ws.assertions[0], *lexicons);
  REQUIRE_FALSE(unsure.is_ok());
  CHECK_THAT(unsure.status().message(),
             Catch::StartsWith("scion.yaml:27:5: assertions.unsure.expression: the expression "
                               "does not parse at column"));
}
