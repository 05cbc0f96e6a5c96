#include "workbench/blame.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "assertions/judge.h"
#include "lineage/spec_records.h"
#include "workbench/model_lookup.h"
#include "workbench/model_version.h"
#include "workbench/stored_family.h"

namespace scion::workbench {
namespace {

Result<ChainLink> describe_link(const spec::Workspace& ws, lineage::LineageStore& store,
                                const spec::Model& model) {
  ChainLink link;
  link.model = model.name;
  link.method = lineage::method_label(lineage::model_record_for(ws, model).adaptation);
  auto runs = store.runs(model.name, 0);
  if (!runs) return runs.status();
  for (const lineage::RunRecord& r : *runs)
    if ((r.kind == lineage::RunKind::kTrain || r.kind == lineage::RunKind::kAdapt ||
         r.kind == lineage::RunKind::kImport) &&
        r.status == lineage::RunStatus::kFinished && r.recipe_hash == model.recipe_hash) {
      link.run = r.id;
      link.dataset_digest = r.dataset_digest.value_or("");
      break;
    }
  return link;
}

bool has_case(const CompiledTest& test, std::int64_t number) {
  return std::any_of(test.cases.cases.begin(), test.cases.cases.end(),
                     [&](const assertions::TestCase& c) { return case_number(c.id) == number; });
}

// The tests among `tests` that have case `number`; an error (exit 2) when none has it.
// Case numbers run over every generated input, those a perturbation could not change
// (not cases) included.
Result<std::vector<const CompiledTest*>> tests_with_case(
    const std::vector<const CompiledTest*>& tests, std::int64_t number) {
  std::vector<const CompiledTest*> kept;
  std::vector<std::string> ranges, skipped;
  for (const CompiledTest* t : tests) {
    const std::size_t generated = t->cases.cases.size() + t->cases.not_applicable;
    if (has_case(*t, number)) {
      kept.push_back(t);
    } else if (number < static_cast<std::int64_t>(generated)) {
      skipped.push_back(t->test.name);
    }
    ranges.push_back(generated == 0 ? fmt::format("test {} has no cases", t->test.name)
                                    : fmt::format("test {} has {} cases (0–{})", t->test.name,
                                                  generated, generated - 1));
  }
  if (!kept.empty()) return kept;
  if (!skipped.empty())
    return invalid_argument(
        fmt::format("case {} of test {} is not run: its perturbation leaves the input unchanged; "
                    "pick another case",
                    number, fmt::join(skipped, ", ")));
  return invalid_argument(
      fmt::format("case {} is out of range: {}", number, fmt::join(ranges, "; ")));
}

// Why `test` does not apply to `model`, with the models it applies to.
std::string not_applied(const spec::Workspace& ws, const assertions::BehaviouralTest& test,
                        const std::string& model) {
  std::vector<std::string> covered;
  for (const spec::Model& m : ws.models)
    if (applies(ws, test, m.name)) covered.push_back(m.name);
  const std::string which =
      covered.empty() ? "no model" : fmt::format("{}", fmt::join(covered, ", "));
  const std::string named = test.origin.empty() ? "test '" + test.name + "'" : test.origin;
  return fmt::format(
      "{} does not apply to '{}' (it applies to: {}); blame one of those models "
      "with --test {}, or leave out --test to blame the tests of '{}'",
      named, model, which, test.name, model);
}

// The tests to blame: the one named, or every test that applies to `model`.
Result<std::vector<const CompiledTest*>> select_tests(const spec::Workspace& ws,
                                                      const BehaviourSuite& suite,
                                                      const spec::Model& model,
                                                      const BlameRequest& request) {
  const ModelKind kind = model_kind(ws, model);
  std::vector<const CompiledTest*> tests;
  for (const CompiledTest& t : suite.tests)
    if (request.test.empty() ? applies(ws, t.test, model.name) : t.test.name == request.test)
      tests.push_back(&t);
  if (!request.test.empty() && tests.empty())
    return not_found("no test '" + request.test + "' under tests: in " + ws.spec_path.string());
  if (!request.test.empty() && kind_of(tests.front()->test) != kind)
    return invalid_argument(fmt::format(
        "test '{}' asks a {}, and '{}' is a {}; blame a model the test applies to", request.test,
        kind_name(kind_of(tests.front()->test)), model.name, kind_name(kind)));
  if (!request.test.empty() && !applies(ws, tests.front()->test, model.name))
    return invalid_argument(not_applied(ws, tests.front()->test, model.name));
  if (request.case_number) return tests_with_case(tests, *request.case_number);
  return tests;
}

}  // namespace

std::vector<const spec::Model*> blame_chain(const spec::Workspace& ws, const spec::Model& model) {
  std::vector<const spec::Model*> chain;
  for (const spec::Model* m : ws.ancestry(model)) {
    if (model_kind(ws, *m) != model_kind(ws, model)) break;
    chain.push_back(m);
  }
  return chain;
}

std::size_t failure_origin(const std::vector<bool>& fails) {
  return fails.back() ? fails.size() - 1 : fails.size() - 2;
}

Result<TestBlame> blame_test(const CompiledTest& test, const std::vector<std::string>& chain,
                             const FamilyOutputs& outputs, std::optional<std::int64_t> only_case) {
  assertions::BehaviouralTest plain = test.test;
  plain.regression_parent = false;
  TestBlame blamed{.test = test.test.name};
  for (const assertions::TestCase& c : test.cases.cases) {
    if (only_case && case_number(c.id) != *only_case) continue;
    ++blamed.cases;
    // Verdicts from the model (0) up the chain, until an ancestor passes.
    std::vector<bool> fails;
    std::string reason;
    for (std::size_t k = 0; k < chain.size(); ++k) {
      assertions::CaseOutputs o{.original = &outputs.at(chain[k], c.input)};
      if (c.perturbed) o.perturbed = &outputs.at(chain[k], *c.perturbed);
      auto verdict = assertions::judge_case(plain, c, o);
      if (!verdict) {
        if (k == 0) return verdict.status();
        break;
      }
      if (k == 0) reason = verdict->reason;
      fails.push_back(verdict->outcome == assertions::Outcome::kFail);
      if (!fails.back()) break;
    }
    if (!fails.front()) continue;
    const std::size_t origin = failure_origin(fails);
    blamed.failing.push_back({c.id, c.input, c.perturbed, reason, origin});
    ++blamed.by_origin[origin];
  }
  return blamed;
}

Result<BlameReport> blame(const spec::Workspace& spec_ws, lineage::LineageStore& store,
                          runtime::Backend& backend, const BlameRequest& request) {
  auto ref = parse_model_ref(request.model);
  if (!ref) return ref.status();
  // MODEL@...: the chain of that version, in the spec as it was for it.
  spec::Workspace versioned;
  const spec::Workspace* in = &spec_ws;
  if (!ref->version.empty()) {
    if (auto in_spec = find_spec_model(spec_ws, ref->model); !in_spec) return in_spec.status();
    auto version = resolve_version(store, *ref);
    if (!version) return version.status();
    auto at = workspace_at(spec_ws, store, *version);
    if (!at) return at.status();
    versioned = std::move(*at);
    in = &versioned;
  }
  const spec::Workspace& ws = *in;
  auto found = find_spec_model(ws, ref->model);
  if (!found) return found.status();
  const spec::Model& model = **found;
  auto suite = compile_suite(ws);
  if (!suite) return suite.status();
  auto tests = select_tests(ws, *suite, model, request);
  if (!tests) return tests.status();

  BlameReport report{.model = model.name, .kind = model_kind(ws, model)};
  std::vector<std::string> names;
  const std::vector<const spec::Model*> chain = blame_chain(ws, model);
  if (!chain.back()->is_base()) report.headless_ancestor = chain.back()->from;
  for (const spec::Model* m : chain) {
    names.push_back(m->name);
    auto link = describe_link(ws, store, *m);
    if (!link) return link.status();
    report.chain.push_back(std::move(*link));
  }

  StoredFamily family(ws, store, backend);
  if (Status s = family.load(names); !s.is_ok()) return s;
  EvaluationPlan plan;
  for (const CompiledTest* t : *tests)
    for (const assertions::TestCase& c : t->cases.cases)
      if (!request.case_number || case_number(c.id) == *request.case_number)
        plan.add_case(t->test, c);
  auto outputs = evaluate_models(family, backend, names, plan, request.chunk_size);
  if (!outputs) return outputs.status();
  for (const CompiledTest* t : *tests) {
    auto blamed = blame_test(*t, names, *outputs, request.case_number);
    if (!blamed) return blamed.status();
    report.tests.push_back(std::move(*blamed));
  }
  return report;
}

}  // namespace scion::workbench
