#include "workbench/test_keys.h"

#include <algorithm>

#include "spec/file_digest.h"

namespace scion::workbench {
namespace {

using nlohmann::json;

const spec::TestSpec* test_spec(const spec::Workspace& ws, const std::string& name) {
  for (const spec::TestSpec& t : ws.tests)
    if (t.name == name) return &t;
  return nullptr;
}

const spec::AssertionSpec* assertion_spec(const spec::Workspace& ws, const std::string& name) {
  for (const spec::AssertionSpec& a : ws.assertions)
    if (a.name == name) return &a;
  return nullptr;
}

// name -> SHA-256 of its words, one per line, for every lexicon the test's templates draw
// from (the spec's, a file's, or a built-in one).
json lexicon_digests(const assertions::BehaviouralTest& test) {
  json out = json::object();
  for (const assertions::TextTemplate& t : test.templates)
    for (const assertions::TextTemplate::Slot& slot : t.slots()) {
      std::string words;
      for (const std::string& w : slot.values) words += w + "\n";
      out[slot.lexicon] = spec::sha256_hex(words);
    }
  return out;
}

}  // namespace

lineage::TestOutcomeKey test_outcome_key(const spec::Workspace& ws, const CompiledTest& test,
                                         const std::string& model, const std::string& model_version,
                                         const std::string& parent_version) {
  const spec::TestSpec* spec = test_spec(ws, test.test.name);
  json cases = json::array();
  for (const assertions::TestCase& c : test.cases.cases)
    cases.push_back({c.id, c.input, c.perturbed.value_or(""), c.prefer, c.over});
  const json definition = {{"type", spec ? json(spec->type) : json()},
                           {"body", spec ? spec->body : json()},
                           {"cases", cases},
                           {"not_applicable", test.cases.not_applicable},
                           {"parent_version", parent_version}};
  return {.kind = "test",
          .name = test.test.name,
          .model = model,
          .model_version = model_version,
          .definition_digest = spec::sha256_hex(definition.dump()),
          .lexicon_digests = lexicon_digests(test.test),
          .semantics_version = kTestSemanticsVersion};
}

lineage::TestOutcomeKey assertion_outcome_key(const spec::Workspace& ws,
                                              const assertions::ModelAssertion& assertion,
                                              const std::vector<std::string>& watched,
                                              const std::string& model,
                                              const std::string& model_version,
                                              const std::string& parent_version) {
  const spec::AssertionSpec* spec = assertion_spec(ws, assertion.name());
  const json definition = {{"kind", spec ? json(spec->kind) : json()},
                           {"body", spec ? spec->body : json()},
                           {"watched", watched},
                           {"parent_version", parent_version}};
  return {.kind = "assertion",
          .name = assertion.name(),
          .model = model,
          .model_version = model_version,
          .definition_digest = spec::sha256_hex(definition.dump()),
          .lexicon_digests = json::object(),
          .semantics_version = kTestSemanticsVersion};
}

}  // namespace scion::workbench
