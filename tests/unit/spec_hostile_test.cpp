// Hostile input: every case ends in a clean diagnostic, quickly, without a crash.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "spec/yaml_tree.h"
#include "spec_test_workspace.h"

using namespace scion::spec;
using scion::spec::testing::TempWorkspace;

namespace {

// Loads `yaml` and returns its single error; fails if it took more than two seconds.
std::string refusal(const std::string& yaml) {
  TempWorkspace ws;
  const auto start = std::chrono::steady_clock::now();
  const LoadResult r = ws.load(yaml);
  const auto seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 2.0);
  CHECK_FALSE(r.workspace);
  REQUIRE(r.errors.size() >= 1);
  return r.errors[0].to_string();
}

std::string billion_laughs(int levels) {
  std::string yaml = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i < levels; ++i) {
    const std::string name = fmt::format("a{}", i), previous = fmt::format("*a{}", i - 1);
    yaml.append(name).append(": &").append(name).append(" [");
    for (int k = 0; k < 10; ++k) yaml.append(k ? ", " : "").append(previous);
    yaml.append("]\n");
  }
  return yaml;
}

}  // namespace

TEST_CASE("an alias explosion is refused by the node budget") {
  const std::string e = refusal(billion_laughs(9));
  CHECK(e.find("expands to more than 200000 YAML nodes") != std::string::npos);
}

TEST_CASE("a few aliases within the budget are fine and share their anchor") {
  const YamlParse p = parse_yaml(billion_laughs(3), "x.yaml");
  REQUIRE_FALSE(p.error);
  CHECK(p.root->expanded_size > 1000);
}

TEST_CASE("deep nesting is refused") {
  // The top-level mapping is level 1, so the 64th '[' (column 67) is one too many.
  CHECK(refusal("a: " + std::string(64, '[') + std::string(64, ']')) ==
        "scion.yaml:1:67: error: the spec nests deeper than 64 levels");
  CHECK(refusal("a: " + std::string(63, '[') + std::string(63, ']')) ==
        "scion.yaml:1:1: error: unknown top-level key 'a' at a (expected one of: datasets, "
        "models, share, tests, assertions, lexicons)");
  CHECK(refusal(std::string(100000, '[')).find("nests deeper than 64 levels") != std::string::npos);
  std::string block;
  for (int i = 0; i < 200; ++i) block += std::string(2 * i, ' ') + "k:\n";
  CHECK(refusal(block).find("nests deeper than 64 levels") != std::string::npos);
}

TEST_CASE("a very large spec is refused before parsing") {
  std::string huge = "x: \"";
  huge.append(17u << 20, 'a').append("\"\n");
  const std::string e = refusal(huge);
  INFO(e);
  CHECK(e.find("error: the spec is 17825798 bytes, over the limit of 16777216 bytes") !=
        std::string::npos);
}

TEST_CASE("binary garbage and invalid UTF-8 name the first bad byte") {
  CHECK(refusal(std::string("models:\n  a\0b: 1\n", 15)) ==
        "scion.yaml:2:4: error: control character 0x00: the spec looks like binary data; it "
        "must be UTF-8 text");
  CHECK(refusal("models:\n  caf\xC3(: 1\n") ==
        "scion.yaml:2:6: error: invalid UTF-8 (byte 0xC3); save the spec as UTF-8");
  CHECK(refusal("a: \xED\xA0\x80\n") ==  // a UTF-16 surrogate encoded as UTF-8
        "scion.yaml:1:4: error: invalid UTF-8 (byte 0xED); save the spec as UTF-8");
  CHECK(refusal("a: \xC0\xAF\n") ==  // an overlong '/'
        "scion.yaml:1:4: error: invalid UTF-8 (byte 0xC0); save the spec as UTF-8");
}

TEST_CASE("an empty spec, a comment-only spec and a bare scalar") {
  const std::string empty =
      "scion.yaml:1:1: error: the spec is empty; expected a mapping with "
      "at least 'models' (see docs/spec.md)";
  CHECK(refusal("") == empty);
  CHECK(refusal("# nothing here\n") == empty);
  CHECK(refusal("hello\n") ==
        "scion.yaml:1:1: error: expected a mapping with the top-level keys datasets, models, "
        "share, tests, assertions, lexicons, got 'hello'");
}

TEST_CASE("broken YAML syntax is reported with its position") {
  CHECK(refusal("models: {a: [1, 2}\n").starts_with("scion.yaml:1:"));
  CHECK(refusal("models: *nowhere\n").find("error: invalid YAML: ") != std::string::npos);
}

TEST_CASE("more than one document is refused") {
  CHECK(refusal("models: {}\n---\nmodels: {}\n") ==
        "scion.yaml:1:1: error: the spec holds more than one YAML document ('---'); put "
        "everything in one");
}

TEST_CASE("a UTF-8 byte order mark is accepted") {
  TempWorkspace ws;
  CHECK(ws.load("\xEF\xBB\xBFmodels: {}\n").workspace.has_value());
}

TEST_CASE("a data path naming a device or directory is refused without reading it") {
  TempWorkspace ws;
  const LoadResult r = ws.load("datasets:\n  d: {path: /dev/zero}\n  e: {path: .}\nmodels: {}\n");
  std::vector<std::string> path_errors;
  for (const Diagnostic& d : r.errors)
    if (d.key_path.ends_with(".path")) path_errors.push_back(d.message);
  CHECK(path_errors ==
        std::vector<std::string>{"'/dev/zero' is not a regular file at datasets.d.path",
                                 "'.' is not a regular file at datasets.e.path"});
}

TEST_CASE("a family of more than 1000 models is refused at the first model too many") {
  std::string yaml =
      "datasets: {c: {path: corpus.txt}}\nmodels:\n"
      "  m0: {architecture: {layers: 1, width: 8, heads: 2, max_length: 8}, "
      "train: {data: c, steps: 1}}\n";
  for (int i = 1; i <= 1000; ++i)
    yaml += fmt::format(
        "  m{}: {{from: m0, adapt: {{bitfit: true}}, train: {{data: c, steps: 1}}}}\n", i);
  CHECK(refusal(yaml) ==
        "scion.yaml:1003:3: error: more than 1000 models at models.m1000; split "
        "the family into several workspaces");
}

TEST_CASE("a lineage deeper than 64 generations is refused") {
  std::string yaml =
      "datasets: {c: {path: corpus.txt}}\nmodels:\n"
      "  m0: {architecture: {layers: 1, width: 8, heads: 2, max_length: 8}, "
      "train: {data: c, steps: 1}}\n";
  for (int i = 1; i <= 65; ++i)
    yaml += fmt::format(
        "  m{}: {{from: m{}, adapt: {{bitfit: true}}, train: {{data: c, steps: 1}}}}\n", i, i - 1);
  CHECK(refusal(yaml) ==
        "scion.yaml:68:15: error: 'm65' is more than 64 generations below its "
        "base at models.m65.from; adapt from a nearer ancestor");
}

TEST_CASE("long values quoted in messages are cut at a character boundary") {
  // Regression: cutting "aéé..." after 40 bytes split an 'é' and made `validate --json`
  // fail on invalid UTF-8.
  std::string value = "a";
  for (int i = 0; i < 30; ++i) value += "\xC3\xA9";
  TempWorkspace ws;
  const LoadResult r = ws.load("models:\n  b: {architecture: {layers: " + value + "}}\n");
  std::string e;
  for (const Diagnostic& d : r.errors)
    if (d.key_path == "models.b.architecture.layers") e = d.to_string();
  std::string expected_shown = "a";
  for (int i = 0; i < 19; ++i) expected_shown += "\xC3\xA9";
  CHECK(e.find("got '" + expected_shown + "...'") != std::string::npos);
  CHECK_NOTHROW(nlohmann::json(e).dump());
  CHECK(shorten("abc", 2) == "ab...");
  CHECK(shorten("\xC3\xA9\xC3\xA9", 3) == "\xC3\xA9...");
}
