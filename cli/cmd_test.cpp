// `scion test [MODEL...]`: runs the spec's behavioural tests and model assertions on the
// trained family (workbench::run_tests, workbench/test_run.h), then reports a family
// matrix (tests × models, failure rates and their change since each model's previous test
// run), failing examples, and the most severe violations, and writes the JUnit and
// violation files asked for.
#include "cli/cmd_test.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <set>
#include <span>

#include "assertions/junit_writer.h"
#include "assertions/statistics.h"
#include "cli/cmd_lineage_support.h"
#include "cli/command_context.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "cli/output_path.h"
#include "lineage/env.h"
#include "lineage/spec_records.h"
#include "runtime/comm/communicator.h"
#include "workbench/behaviour_suite.h"
#include "workbench/model_lookup.h"
#include "workbench/stored_family.h"
#include "workbench/test_run.h"

namespace scion::cli {
namespace {

using workbench::JudgedTest;
using workbench::Violation;

// One invocation: its checked output paths, the run, and its report.
class TestSession {
 public:
  TestSession(const GlobalOptions& global, const TestOptions& options, spec::Workspace ws,
              std::unique_ptr<workbench::Context> context)
      : global_(global),
        options_(options),
        ws_(std::move(ws)),
        context_(std::move(context)),
        comm_(context_->comm()) {}

  int run();

 private:
  Status check_arguments();
  void report();
  void print_json_report(std::size_t top) const;
  void print_family_matrix(bool tty) const;
  void print_test_results(bool tty) const;
  void print_violations(bool tty, std::size_t top) const;
  void print_verdict(bool tty) const;
  assertions::JUnitReport junit_report() const;
  Status write_files();

  const GlobalOptions& global_;
  const TestOptions& options_;
  spec::Workspace ws_;
  std::unique_ptr<workbench::Context> context_;  // the ranks, the store, the backend
  // Under mpirun every rank evaluates a share of the cases; rank 0 alone judges, records
  // and prints (docs/distributed.md).
  runtime::Communicator& comm_;
  workbench::BehaviourSuite suite_;
  workbench::TestRun run_;
  std::filesystem::path junit_file_, violations_file_;  // checked; empty when not asked for
  bool junit_to_stdout_ = false;                        // --junit -
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::string started_at_ = lineage::utc_now();
};

// Before any work: a misspelt model or a report that cannot be written should not cost a
// test run first.
Status TestSession::check_arguments() {
  for (const std::string& name : options_.models)
    if (auto model = workbench::find_spec_model(ws_, name); !model) return model.status();
  const std::filesystem::path store = global_.store_path();
  if (options_.junit_path == "-") {
    if (global_.json)
      return invalid_argument("--junit - and --json both write to stdout; give --junit a file");
    junit_to_stdout_ = true;
  } else if (!options_.junit_path.empty()) {
    auto junit = checked_output_path(options_.junit_path, store, options_.force, "--junit");
    if (!junit) return junit.status();
    junit_file_ = *junit;
  }
  if (!options_.violations_path.empty()) {
    auto violations =
        checked_output_path(options_.violations_path, store, options_.force, "--export-violations");
    if (!violations) return violations.status();
    violations_file_ = *violations;
  }
  return Status::ok();
}

nlohmann::json violation_json(const Violation& v) {
  return {{"model", v.record.model},
          {"assertion", v.record.assertion},
          {"input", v.record.input},
          {"severity", v.severity},
          {"detail", v.record.detail},
          {"run", v.record.run_id ? nlohmann::json(*v.record.run_id) : nlohmann::json()}};
}

// The label a classifier gave, or the log-likelihoods a language model gave.
std::string describe_violation(const nlohmann::json& detail) {
  if (!detail.contains("log_likelihoods")) return detail.value("label", std::string());
  std::vector<std::string> scores;
  for (const auto& [name, value] : detail["log_likelihoods"].items())
    scores.push_back(fmt::format("lm.{} {:.3f}", name, value.get<double>()));
  return fmt::format("{}", fmt::join(scores, ", "));
}

// The Wilson score 95% interval of failures / cases as [low, high] ([0, 1] for no cases).
nlohmann::json wilson_json(std::size_t failures, std::size_t cases) {
  const assertions::Interval interval = assertions::wilson_interval(failures, cases);
  return nlohmann::json::array({interval.low, interval.high});
}

std::string rate_cell(const JudgedTest& j) {
  std::string cell = fmt::format("{:.0f}%", 100 * j.result.failure_rate);
  if (j.result.cases == 0) cell = "no cases";
  if (j.previous_rate) {
    const double delta = 100 * (j.result.failure_rate - *j.previous_rate);
    cell += std::abs(delta) < 0.05 ? " (=)" : fmt::format(" ({:+.0f})", delta);
  }
  if (workbench::exceeded(j.result)) cell += " FAIL";
  return cell;
}

void TestSession::report() {
  const std::size_t top = 10;  // assertion violations shown, the most severe first
  if (global_.json) return print_json_report(top);
  const bool tty = stdout_is_tty();
  print_family_matrix(tty);
  print_test_results(tty);
  print_violations(tty, top);
  print_verdict(tty);
}

// --json: every judged test with its examples, and the `top` most severe violations.
void TestSession::print_json_report(std::size_t top) const {
  nlohmann::json tests = nlohmann::json::array(), violations = nlohmann::json::array();
  for (const JudgedTest& j : run_.judged) {
    const auto& r = j.result;
    nlohmann::json examples = nlohmann::json::array();
    for (const auto& e : r.examples)
      examples.push_back({{"case", e.case_id},
                          {"input", e.input},
                          {"perturbed", e.perturbed},
                          {"reason", e.reason}});
    nlohmann::json t = {{"test", r.test},
                        {"model", r.model},
                        {"type", r.type},
                        {"capability", r.capability},
                        {"cases", r.cases},
                        {"failures", r.failures},
                        {"inherited", r.inherited},
                        {"not_applicable", r.not_applicable},
                        {"failure_rate", r.failure_rate},
                        {"failure_rate_wilson_95", wilson_json(r.failures, r.cases)},
                        {"max_failure_rate", r.max_failure_rate},
                        {"passed", r.passed},
                        {"exceeded", workbench::exceeded(r)},
                        {"examples", examples},
                        {"previous_failure_rate",
                         j.previous_rate ? nlohmann::json(*j.previous_rate) : nlohmann::json()},
                        {"run", j.run > 0 ? nlohmann::json(j.run) : nlohmann::json()},
                        {"reused", j.reused}};
    if (!j.note.empty()) t["note"] = j.note;
    if (!j.scores.is_null()) t["scores"] = j.scores;
    tests.push_back(t);
  }
  for (std::size_t i = 0; i < run_.violations.size() && i < top; ++i)
    violations.push_back(violation_json(run_.violations[i]));
  print_json({{"models", run_.models},
              {"runs", run_.run_ids},
              {"tests", tests},
              {"violations", {{"total", run_.violations.size()}, {"top", violations}}}});
}

void TestSession::print_family_matrix(bool tty) const {
  // The family matrix: tests as rows, models as columns.
  std::size_t name_width = 4;
  for (const workbench::CompiledTest& t : suite_.tests)
    name_width = std::max(name_width, t.test.name.size());
  std::map<std::pair<std::string, std::string>, const JudgedTest*> cell;
  for (const JudgedTest& j : run_.judged) cell[{j.result.test, j.result.model}] = &j;
  std::vector<std::size_t> widths;
  for (const std::string& m : run_.models) {
    std::size_t w = m.size();
    for (const workbench::CompiledTest& t : suite_.tests)
      if (auto it = cell.find({t.test.name, m}); it != cell.end())
        w = std::max(w, rate_cell(*it->second).size());
    widths.push_back(w);
  }
  std::cout << paint("family matrix", Color::kBold, tty)
            << ": failure rate per test and model (change since the model's previous test run, "
               "in points)\n";
  std::cout << fmt::format("{:<{}}", "test", name_width);
  for (std::size_t i = 0; i < run_.models.size(); ++i)
    std::cout << fmt::format("  {:<{}}", run_.models[i], widths[i]);
  std::cout << "\n";
  for (const workbench::CompiledTest& t : suite_.tests) {
    std::cout << fmt::format("{:<{}}", t.test.name, name_width);
    for (std::size_t i = 0; i < run_.models.size(); ++i) {
      auto it = cell.find({t.test.name, run_.models[i]});
      const std::string text = it == cell.end() ? "-" : rate_cell(*it->second);
      const Color color = it == cell.end()                          ? Color::kDim
                          : workbench::exceeded(it->second->result) ? Color::kRed
                                                                    : Color::kGreen;
      std::cout << "  " << paint(fmt::format("{:<{}}", text, widths[i]), color, tty);
    }
    std::cout << "\n";
  }
  std::cout << "\n";
}

// Each judged test on each model: counts, verdict, note and failing examples.
void TestSession::print_test_results(bool tty) const {
  for (const JudgedTest& j : run_.judged) {
    const auto& r = j.result;
    // The interval says how far the rate measured on this many cases could be from the
    // model's true one: 0 failures of 20 cases still allow 16%.
    const assertions::Interval interval = assertions::wilson_interval(r.failures, r.cases);
    std::cout << fmt::format(
        "{} on {} [{} {}]: {} cases, {} failures ({:.1f}%, 95% interval {:.1f}-{:.1f}%, allowed "
        "{:.1f}%)",
        paint(r.test, Color::kBold, tty), r.model, r.type, r.capability, r.cases, r.failures,
        100 * r.failure_rate, 100 * interval.low, 100 * interval.high, 100 * r.max_failure_rate);
    if (r.inherited) std::cout << fmt::format(", {} inherited from the parent", r.inherited);
    if (r.not_applicable) std::cout << fmt::format(", {} inputs not applicable", r.not_applicable);
    std::cout << "  "
              << (workbench::exceeded(r) ? paint("FAIL", Color::kRed, tty)
                                         : paint("ok", Color::kGreen, tty))
              << "\n";
    if (!j.note.empty()) std::cout << "    note: " << j.note << "\n";
    for (const auto& e : r.examples)
      std::cout << "    " << e.case_id << ": \"" << terminal_text(e.input) << "\""
                << (e.perturbed.empty() ? "" : " -> \"" + terminal_text(e.perturbed) + "\"") << ": "
                << terminal_text(e.reason) << "\n";
  }
}

void TestSession::print_violations(bool tty, std::size_t top) const {
  if (!suite_.assertions.empty()) {
    std::cout << "\n"
              << paint("assertion violations", Color::kBold, tty) << ": " << run_.violations.size();
    if (!run_.violations.empty())
      std::cout << fmt::format(" (the {} most severe)", std::min(top, run_.violations.size()));
    std::cout << "\n";
    for (std::size_t i = 0; i < run_.violations.size() && i < top; ++i) {
      const Violation& v = run_.violations[i];
      std::cout << fmt::format("  {:.3f}  {:<16} {:<16} \"{}\" -> {}\n", v.severity, v.record.model,
                               v.record.assertion, terminal_text(v.record.input),
                               terminal_text(describe_violation(v.record.detail)));
    }
  }
}

// Results read from the store, and how many test results exceed their limit.
void TestSession::print_verdict(bool tty) const {
  std::size_t failing = 0;
  for (const JudgedTest& j : run_.judged) failing += workbench::exceeded(j.result) ? 1 : 0;
  if (run_.reused > 0)
    std::cout << "\n"
              << paint(fmt::format("{} of {} results read from the store (same model version, "
                                   "test, lexicons); --rerun judges them again",
                                   run_.reused, run_.judged.size()),
                       Color::kDim, tty)
              << "\n";
  std::cout << "\n"
            << (failing ? paint(fmt::format("{} of {} test results exceed their max_failure_rate",
                                            failing, run_.judged.size()),
                                Color::kRed, tty)
                        : paint(fmt::format("all {} test results within their max_failure_rate",
                                            run_.judged.size()),
                                Color::kGreen, tty))
            << "\n";
}

// The JUnit report: every judged test, and every assertion checked with its violations
// (run_.violations is sorted most severe first, so the examples are the worst).
assertions::JUnitReport TestSession::junit_report() const {
  assertions::JUnitReport junit;
  for (const JudgedTest& j : run_.judged) junit.tests.push_back(j.result);
  junit.assertions = run_.assertions_checked;
  for (assertions::AssertionOutcome& a : junit.assertions)
    for (const Violation& v : run_.violations)
      if (v.record.assertion == a.assertion && v.record.model == a.model) {
        a.worst_severity = std::max(a.worst_severity, v.severity);
        if (a.violations++ < 3)
          a.examples.push_back(fmt::format("\"{}\": {} (severity {:.3f})", v.record.input,
                                           describe_violation(v.record.detail), v.severity));
      }
  junit.timestamp = started_at_.substr(0, 19);  // xs:dateTime without fraction or zone
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) junit.hostname = host;
  junit.time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  return junit;
}

Status TestSession::write_files() {
  if (junit_to_stdout_) std::cout << assertions::junit_xml(junit_report());
  if (!junit_file_.empty())
    SCION_RETURN_IF_ERROR(assertions::write_junit_file(junit_file_, junit_report()));
  if (!violations_file_.empty()) {
    std::string lines;
    for (const Violation& v : run_.violations) lines += violation_json(v).dump() + "\n";
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(lines.data()),
                                           lines.size());
    if (Status written = lineage::write_file_atomically(lineage::default_env(), violations_file_,
                                                        std::span(&bytes, 1));
        !written)
      return io_error("cannot write " + options_.violations_path + ": " + written.message() +
                      "; check the path and disk space");
  }
  return Status::ok();
}

int TestSession::run() {
  if (Status s = check_arguments(); !s.is_ok()) return fail(s);
  auto suite = workbench::compile_suite(ws_);
  if (!suite) return fail(suite.status());
  suite_ = std::move(*suite);
  if (suite_.tests.empty() && suite_.assertions.empty()) {
    if (comm_.rank() != 0) return kExitOk;
    if (global_.json) {
      print_json({{"models", nlohmann::json::array()}, {"tests", nlohmann::json::array()}});
    } else {
      print_note("no tests: or assertions: in " + ws_.spec_path.string() + "; nothing to test");
    }
    return kExitOk;
  }
  auto backend = context_->backend();
  if (!backend) return fail(backend.status());
  auto run = workbench::run_tests(ws_, context_->store(), **backend, suite_,
                                  {.models = options_.models,
                                   .chunk_size = options_.chunk_size,
                                   .examples = options_.examples,
                                   .only_tested = options_.only_tested,
                                   .record = options_.record,
                                   .rerun = options_.rerun,
                                   .comm = &comm_});
  if (!run) return fail(run.status());
  if (Status s = context_->check_backends("scion test"); !s.is_ok()) return fail(s);
  if (comm_.rank() != 0) return kExitOk;  // its share is with rank 0, which reports
  run_ = std::move(*run);
  for (const std::string& note : run_.notes) print_note(note);
  if (run_.models.empty()) return kExitOk;  // `scion run` of models no test applies to
  if (Status s = write_files(); !s.is_ok()) return fail(s);
  if (!junit_to_stdout_) report();  // stdout holds the XML alone
  for (const JudgedTest& j : run_.judged)
    if (workbench::exceeded(j.result)) return kExitFailures;
  return kExitOk;
}

}  // namespace

int run_behavioural_tests(const GlobalOptions& global, const TestOptions& options) {
  auto ws = load_workspace_or_report(global);
  if (!ws) return kExitUsage;
  auto context = open_command_context(
      global, *ws, options.record ? workbench::StoreAccess::kWrite : workbench::StoreAccess::kRead);
  // A missing store's message says to run `scion run`.
  if (!context) return fail(context.status());
  TestSession session(global, options, std::move(*ws), std::move(*context));
  return session.run();
}

void add_test_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  static TestOptions options;
  CLI::App* cmd = app.add_subcommand(
      "test", "Run behavioural tests and model assertions on trained models, co-batched");
  cmd->add_option("models", options.models,
                  "Models to test (default: every model some test or assertion applies to)");
  cmd->add_option(
         "--junit", options.junit_path,
         "Also write a JUnit XML report to FILE (-: to stdout, instead of the text report)")
      ->option_text("FILE");
  cmd->add_option("--export-violations", options.violations_path,
                  "Write assertion violations to FILE as JSON lines, most severe first")
      ->option_text("FILE");
  cmd->add_flag("--force", options.force,
                "Replace the --junit and --export-violations files when they exist");
  cmd->add_option("--chunk-size", options.chunk_size,
                  "Texts or (input, continuation) pairs per co-batched pass (default 64)")
      ->check(whole_number(1, 65536));
  cmd->add_flag("--no-record{false}", options.record,
                "Store nothing: the store is only read (it may be another user's, read-only)");
  cmd->add_flag("--rerun", options.rerun,
                "Judge every test again, also those whose result the store holds for the same "
                "model version, test definition and lexicons");
  cmd->add_option("--examples", options.examples,
                  "Failing examples shown per test and model (default 3)")
      ->check(whole_number(0, 1000));
  cmd->add_option("--compare", options.compare,
                  "Compare the stored results of two model versions instead of testing: the "
                  "cases whose outcome differs (A, B: MODEL, MODEL@N or MODEL@<hash prefix>)")
      ->expected(2)
      ->option_text("A B");
  cmd->footer(
      "Exit status 1 when a test exceeds its max_failure_rate. A result the store holds\n"
      "for the same model version, test definition, lexicons and test semantics is read\n"
      "back, not judged again (--rerun judges everything); a run judging nothing new\n"
      "records no test run.\n"
      "--compare A B runs nothing: each side is a model version (MODEL: the current one;\n"
      "MODEL@N: the version run N made, restored or tested, or test run N itself;\n"
      "MODEL@<hash prefix>) and its newest stored result of each test; it lists the cases\n"
      "that pass on one side and fail on the other, and exits 0.\n"
      "Examples: scion -C examples/sentiment test --junit report.xml\n"
      "          scion test --compare review-lora review-prefix");
  cmd->callback([&global, &action] {
    action = [&global] {
      if (!options.compare.empty()) {
        // Reads two stored runs: rank 0 alone, under mpirun.
        auto world = runtime::world_communicator();
        if (world && (*world)->rank() != 0) return kExitOk;
        return run_test_comparison(global, options);
      }
      return run_behavioural_tests(global, options);
    };
  });
}

}  // namespace scion::cli
