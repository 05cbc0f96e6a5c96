// `scion lineage blame MODEL [--test NAME] [--case N]`: for each case a model fails, the
// ancestor in which that failure first appears.
//
// The model's tests (or the one named) run on the model and on every ancestor up the
// chain in one co-batched pass (all of them share one trunk): classifiers on the cases'
// texts, language models on the cases' (input, continuation) pairs. Each test is judged
// plainly on every model of the chain (`regression: parent` is not applied: blame asks
// about raw failures). A failing case is *introduced* by the model just below the
// nearest ancestor that passes it; when every ancestor fails it too, it is *inherited*
// from the top of the chain.
//
// The chain stops at the first ancestor of another kind: a base pretrained with masked LM
// cannot be asked a classification question, nor a classifier a language-model one.
// Failures present at the top of the chain are then "inherited from <top>, the first
// <kind> (<ancestor> is not)" — they come from its adaptation on the trunk, or from the
// trunk itself; blame cannot tell those apart. When MODEL is itself the top of its chain
// (a base, or the first model of its kind), its failures are its own.
//
// The text report is a summary: per test, how many failures each model of the chain
// brought, and a few example cases of each; --all lists every failing case (--json always
// does).
#include <fmt/format.h>

#include <iostream>
#include <optional>

#include "cli/cmd_lineage_support.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "lineage/spec_records.h"
#include "workbench/behaviour_suite.h"
#include "workbench/model_lookup.h"

namespace scion::cli {
namespace {

// Example cases the summary shows for each model of the chain that brought failures.
constexpr std::size_t kExamplesPerOrigin = 3;

struct BlameOptions {
  std::string model;
  std::string test;                         // empty: every test that covers the model
  std::optional<std::int64_t> case_number;  // only this case
  bool all = false;                         // list every failing case, not a summary
  int chunk_size = 64;
};

// Where a model of the chain came from, for the report.
struct ChainLink {
  std::string model;
  std::string method;
  std::optional<std::int64_t> run;
  std::string dataset_digest;
};

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

std::string link_label(const ChainLink& link) {
  std::string label = link.model + " (" + link.method;
  if (link.run) label += fmt::format(", run {}", *link.run);
  if (!link.dataset_digest.empty()) label += ", data " + link.dataset_digest.substr(0, 12);
  return label + ")";
}

struct BlamedCase {
  const assertions::TestCase* test_case;
  std::string reason;  // why the model fails it
  std::size_t origin;  // index in the chain of the model that introduced it; the
                       // chain's last index: inherited from the top of the chain
};

bool has_case(const workbench::CompiledTest& test, std::int64_t number) {
  return std::any_of(
      test.cases.cases.begin(), test.cases.cases.end(),
      [&](const assertions::TestCase& c) { return workbench::case_number(c.id) == number; });
}

// The tests among `tests` that have case `number`; an error (exit 2) when none has it.
// Case numbers run over every generated input, those a perturbation could not change
// (not cases) included.
Result<std::vector<const workbench::CompiledTest*>> tests_with_case(
    const std::vector<const workbench::CompiledTest*>& tests, std::int64_t number) {
  std::vector<const workbench::CompiledTest*> kept;
  std::vector<std::string> ranges, skipped;
  for (const workbench::CompiledTest* t : tests) {
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

// How blame words where a chain's failures come from.
struct OriginWords {
  std::string top;       // failures at the top of the chain: "inherited from base", "its own"
  std::string top_case;  // the same for one case
  bool own = false;      // the top of the chain is the blamed model itself
};

OriginWords origin_words(const spec::Workspace& ws, const std::vector<const spec::Model*>& chain,
                         workbench::ModelKind kind) {
  const spec::Model& top = *chain.back();
  const spec::Model* other_kind = top.is_base() ? nullptr : ws.find_model(top.from);
  const std::string why_top =
      other_kind
          ? fmt::format("the first {} ({} is {})", workbench::kind_name(kind), other_kind->name,
                        kind == workbench::ModelKind::kClassifier
                            ? "a language model with no classifier head"
                            : "a classifier")
          : "";
  if (chain.size() == 1)
    return {
        fmt::format("are its own ({})", other_kind ? top.name + " is " + why_top
                                                   : top.name + " is a base: it has no ancestor"),
        "its own", true};
  return {other_kind ? fmt::format("inherited from {}, {}", top.name, why_top)
                     : "inherited from " + top.name,
          "inherited from " + top.name, false};
}

// One failing case: its id, input, where it comes from and why it fails.
void print_case(const BlamedCase& b, const std::vector<std::string>& names,
                const OriginWords& words, bool tty) {
  const bool top = b.origin == names.size() - 1;
  std::cout << "  " << b.test_case->id << "  \"" << b.test_case->input << "\""
            << (b.test_case->perturbed ? " -> \"" + *b.test_case->perturbed + "\"" : "") << "  "
            << paint(top ? words.top_case : "introduced by " + names[b.origin],
                     top ? Color::kDim : Color::kYellow, tty)
            << "  (" << b.reason << ")\n";
}

// Every failing case with --all; else the first few of each origin and how many more.
void print_cases(const std::vector<BlamedCase>& blamed, const std::vector<std::string>& names,
                 const OriginWords& words, bool all, bool tty) {
  std::map<std::size_t, std::size_t> shown, hidden;
  for (const BlamedCase& b : blamed) {
    if (!all && shown[b.origin] >= kExamplesPerOrigin) {
      ++hidden[b.origin];
      continue;
    }
    ++shown[b.origin];
    print_case(b, names, words, tty);
  }
  std::size_t more = 0;
  for (const auto& [origin, n] : hidden) more += n;
  if (more > 0)
    std::cout << "  "
              << paint(fmt::format("... and {} more (--all lists every case)", more), Color::kDim,
                       tty)
              << "\n";
}

int blame(const GlobalOptions& global, const BlameOptions& options) {
  auto ws = load_workspace_or_report(global);
  if (!ws) return kExitUsage;
  auto found = workbench::find_spec_model(*ws, options.model);
  if (!found) return fail(found.status());
  const spec::Model* model = *found;
  const workbench::ModelKind kind = workbench::model_kind(*ws, *model);
  auto store = open_store_read_only(global);
  if (!store) return fail(store.status());
  auto suite = workbench::compile_suite(*ws);
  if (!suite) return fail(suite.status());

  std::vector<const workbench::CompiledTest*> tests;
  for (const workbench::CompiledTest& t : suite->tests)
    if (options.test.empty() ? workbench::applies(*ws, t.test, model->name)
                             : t.test.name == options.test)
      tests.push_back(&t);
  if (!options.test.empty() && tests.empty())
    return fail(
        not_found("no test '" + options.test + "' under tests: in " + ws->spec_path.string()));
  if (!options.test.empty() && workbench::kind_of(tests.front()->test) != kind)
    return fail(invalid_argument(
        fmt::format("test '{}' asks a {}, and '{}' is a {}; blame a model the test applies to",
                    options.test, workbench::kind_name(workbench::kind_of(tests.front()->test)),
                    model->name, workbench::kind_name(kind))));
  if (options.case_number) {
    auto with_case = tests_with_case(tests, *options.case_number);
    if (!with_case) return fail(with_case.status());
    tests = std::move(*with_case);
  }

  // The chain: the model and its ancestors while they are of its kind.
  std::vector<const spec::Model*> chain;
  for (const spec::Model* m : ws->ancestry(*model)) {
    if (workbench::model_kind(*ws, *m) != kind) break;
    chain.push_back(m);
  }
  const spec::Model* other_kind =
      chain.back()->is_base() ? nullptr : ws->find_model(chain.back()->from);
  const OriginWords words = origin_words(*ws, chain, kind);
  std::vector<std::string> names;
  std::vector<ChainLink> links;
  for (const spec::Model* m : chain) {
    names.push_back(m->name);
    auto link = describe_link(*ws, **store, *m);
    if (!link) return fail(link.status());
    links.push_back(std::move(*link));
  }

  auto backend = runtime::make_cpu_backend();
  workbench::StoredFamily family(*ws, **store, *backend);
  if (Status s = family.load(names); !s.is_ok()) return fail(s);
  workbench::EvaluationPlan plan;
  for (const workbench::CompiledTest* t : tests)
    for (const assertions::TestCase& c : t->cases.cases) {
      if (!options.case_number || workbench::case_number(c.id) == *options.case_number)
        plan.add_case(t->test, c);
    }
  auto outputs = workbench::evaluate_models(family, *backend, names, plan, options.chunk_size);
  if (!outputs) return fail(outputs.status());

  nlohmann::json json_tests = nlohmann::json::array();
  const bool tty = stdout_is_tty();
  if (!global.json)
    std::cout << "blame " << paint(model->name, Color::kBold, tty)
              << " up its ancestry: " << fmt::format("{}", fmt::join(names, " <- ")) << "\n";
  for (const workbench::CompiledTest* t : tests) {
    assertions::BehaviouralTest plain = t->test;
    plain.regression_parent = false;
    std::vector<BlamedCase> blamed;
    std::size_t cases = 0;
    for (const assertions::TestCase& c : t->cases.cases) {
      if (options.case_number && workbench::case_number(c.id) != *options.case_number) continue;
      ++cases;
      // Verdicts from the model (0) up the chain; an ancestor whose labels do not fit the
      // test ends the chain for this case.
      std::vector<bool> fails;
      std::string reason;
      for (std::size_t k = 0; k < chain.size(); ++k) {
        assertions::CaseOutputs o{.original = &outputs->at(names[k], c.input)};
        if (c.perturbed) o.perturbed = &outputs->at(names[k], *c.perturbed);
        auto verdict = assertions::judge_case(plain, c, o);
        if (!verdict) {
          if (k == 0) return fail(verdict.status());
          break;
        }
        if (k == 0) reason = verdict->reason;
        fails.push_back(verdict->outcome == assertions::Outcome::kFail);
        if (!fails.back()) break;
      }
      if (!fails.front()) continue;
      const bool passes_above = !fails.back();
      const std::size_t origin = passes_above ? fails.size() - 2 : fails.size() - 1;
      blamed.push_back({&c, reason, origin});
    }

    std::map<std::size_t, std::size_t> by_origin;
    for (const BlamedCase& b : blamed) by_origin[b.origin]++;
    std::vector<std::string> parts;
    for (auto it = by_origin.rbegin(); it != by_origin.rend(); ++it) {
      const bool top = it->first == chain.size() - 1;
      parts.push_back(
          top ? fmt::format("{} {}", it->second, words.top)
              : fmt::format("{} introduced by {}", it->second, link_label(links[it->first])));
    }
    const std::string summary =
        blamed.empty()
            ? fmt::format("{} passes every case of {} ({} cases)", model->name, t->test.name, cases)
            : fmt::format("{} of {} cases of {} fail on {}: {}", blamed.size(), cases, t->test.name,
                          model->name, fmt::join(parts, "; "));
    if (global.json) {
      nlohmann::json failing = nlohmann::json::array();
      for (const BlamedCase& b : blamed)
        failing.push_back({{"case", b.test_case->id},
                           {"input", b.test_case->input},
                           {"perturbed", b.test_case->perturbed.value_or("")},
                           {"reason", b.reason},
                           {"origin", names[b.origin]},
                           {"kind", b.origin != chain.size() - 1 ? "introduced"
                                    : words.own                  ? "own"
                                                                 : "inherited"}});
      nlohmann::json origins = nlohmann::json::object();
      for (const auto& [k, n] : by_origin) origins[names[k]] = n;
      json_tests.push_back({{"test", t->test.name},
                            {"cases", cases},
                            {"failures", blamed.size()},
                            {"origins", origins},
                            {"summary", summary},
                            {"failing", failing}});
      continue;
    }
    std::cout << "\n" << paint(t->test.name, Color::kBold, tty) << ": " << summary << "\n";
    print_cases(blamed, names, words, options.all, tty);
  }
  if (global.json) {
    nlohmann::json chain_json = nlohmann::json::array();
    for (const ChainLink& l : links)
      chain_json.push_back({{"model", l.model},
                            {"method", l.method},
                            {"run", l.run ? nlohmann::json(*l.run) : nlohmann::json()},
                            {"dataset_digest", l.dataset_digest}});
    print_json(
        {{"model", model->name},
         {"chain", chain_json},
         {"headless_ancestor", other_kind ? nlohmann::json(other_kind->name) : nlohmann::json()},
         {"tests", json_tests}});
  }
  return kExitOk;
}

}  // namespace

void add_lineage_blame_subcommand(CLI::App& lineage, const GlobalOptions& global,
                                  CommandAction& action) {
  auto options = std::make_shared<BlameOptions>();
  auto case_number = std::make_shared<std::int64_t>(-1);
  CLI::App* cmd = lineage.add_subcommand(
      "blame", "For each failing test case of MODEL, the ancestor where the failure first appears");
  cmd->add_option("MODEL", options->model, "The model")->required();
  cmd->add_option("--test", options->test, "Only this test (default: every test of the model)");
  cmd->add_option("--case", *case_number, "Only case N of the test(s)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag(
      "--all", options->all,
      fmt::format("List every failing case (default: {} examples per origin)", kExamplesPerOrigin));
  cmd->add_option("--chunk-size", options->chunk_size,
                  "Texts or (input, continuation) pairs per co-batched pass (default 64)")
      ->check(CLI::Range(1, 65536));
  cmd->footer(
      "Inherited: the first model of MODEL's kind (classifier or language model) up the\n"
      "ancestry fails it too. Own: MODEL is that first model (a base has no ancestor).\n"
      "Introduced by X: X's parent passes it, X and its descendants down to MODEL fail it.\n"
      "Exit codes: 0 blamed, 2 an unknown model or test, a case out of range.\n"
      "Example: scion lineage blame product-lora --test typo-invariance");
  cmd->callback([&global, &action, options, case_number] {
    if (*case_number >= 0) options->case_number = *case_number;
    action = [&global, options] { return blame(global, *options); };
  });
}

}  // namespace scion::cli
