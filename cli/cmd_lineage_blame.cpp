// `scion lineage blame MODEL [--test NAME] [--case N]`: for each case a model fails, the
// ancestor in which that failure first appears. The query is workbench::blame
// (workbench/blame.h); this file words and prints its answer.
//
// The text report is a summary: per test, how many failures each model of the chain
// brought, and a few example cases of each; --all lists every failing case (--json always
// does).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <limits>
#include <optional>

#include "cli/cmd_lineage_support.h"
#include "cli/command_context.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "workbench/blame.h"
#include "workbench/model_lookup.h"
#include "workbench/model_version.h"

namespace scion::cli {
namespace {

// Example cases the summary shows for each model of the chain that brought failures.
constexpr std::size_t kExamplesPerOrigin = 3;

struct BlameOptions {
  workbench::BlameRequest request;
  bool all = false;  // list every failing case, not a summary
};

std::string link_label(const workbench::ChainLink& link) {
  std::string label = link.model + " (" + link.method;
  if (link.run) label += fmt::format(", run {}", *link.run);
  if (!link.dataset_digest.empty()) label += ", data " + link.dataset_digest.substr(0, 12);
  return label + ")";
}

// How blame words where a chain's failures come from.
struct OriginWords {
  std::string top;       // failures at the top of the chain: "inherited from base", "its own"
  std::string top_case;  // the same for one case
  bool own = false;      // the top of the chain is the blamed model itself
};

OriginWords origin_words(const workbench::BlameReport& report) {
  const std::string& top = report.chain.back().model;
  const std::string& other_kind = report.headless_ancestor;
  const std::string why_top =
      other_kind.empty()
          ? ""
          : fmt::format("the first {} ({} is {})", workbench::kind_name(report.kind), other_kind,
                        report.kind == workbench::ModelKind::kClassifier
                            ? "a language model with no classifier head"
                            : "a classifier");
  if (report.chain.size() == 1)
    return {
        fmt::format("are its own ({})", other_kind.empty() ? top + " is a base: it has no ancestor"
                                                           : top + " is " + why_top),
        "its own", true};
  return {other_kind.empty() ? "inherited from " + top
                             : fmt::format("inherited from {}, {}", top, why_top),
          "inherited from " + top, false};
}

// One failing case: its id, input, where it comes from and why it fails.
void print_case(const workbench::BlamedCase& b, const workbench::BlameReport& report,
                const OriginWords& words, bool tty) {
  const bool top = b.origin == report.chain.size() - 1;
  std::cout << "  " << b.case_id << "  \"" << terminal_text(b.input) << "\""
            << (b.perturbed ? " -> \"" + terminal_text(*b.perturbed) + "\"" : "") << "  "
            << paint(top ? words.top_case : "introduced by " + report.chain[b.origin].model,
                     top ? Color::kDim : Color::kYellow, tty)
            << "  (" << terminal_text(b.reason) << ")\n";
}

// Every failing case with --all; else the first few of each origin and how many more.
void print_cases(const workbench::TestBlame& blamed, const workbench::BlameReport& report,
                 const OriginWords& words, bool all, bool tty) {
  std::map<std::size_t, std::size_t> shown;
  std::size_t more = 0;
  for (const workbench::BlamedCase& b : blamed.failing) {
    if (!all && shown[b.origin] >= kExamplesPerOrigin) {
      ++more;
      continue;
    }
    ++shown[b.origin];
    print_case(b, report, words, tty);
  }
  if (more > 0)
    std::cout << "  "
              << paint(fmt::format("... and {} more (--all lists every case)", more), Color::kDim,
                       tty)
              << "\n";
}

std::string summary(const workbench::TestBlame& blamed, const workbench::BlameReport& report,
                    const OriginWords& words) {
  if (blamed.failing.empty())
    return fmt::format("{} passes every case of {} ({} cases)", report.model, blamed.test,
                       blamed.cases);
  std::vector<std::string> parts;
  for (auto it = blamed.by_origin.rbegin(); it != blamed.by_origin.rend(); ++it) {
    const bool top = it->first == report.chain.size() - 1;
    parts.push_back(
        top ? fmt::format("{} {}", it->second, words.top)
            : fmt::format("{} introduced by {}", it->second, link_label(report.chain[it->first])));
  }
  return fmt::format("{} of {} cases of {} fail on {}: {}", blamed.failing.size(), blamed.cases,
                     blamed.test, report.model, fmt::join(parts, "; "));
}

nlohmann::json report_json(const workbench::BlameReport& report, const OriginWords& words) {
  nlohmann::json tests = nlohmann::json::array();
  for (const workbench::TestBlame& t : report.tests) {
    nlohmann::json failing = nlohmann::json::array();
    for (const workbench::BlamedCase& b : t.failing)
      failing.push_back({{"case", b.case_id},
                         {"input", b.input},
                         {"perturbed", b.perturbed.value_or("")},
                         {"reason", b.reason},
                         {"origin", report.chain[b.origin].model},
                         {"kind", b.origin != report.chain.size() - 1 ? "introduced"
                                  : words.own                         ? "own"
                                                                      : "inherited"}});
    nlohmann::json origins = nlohmann::json::object();
    for (const auto& [k, n] : t.by_origin) origins[report.chain[k].model] = n;
    tests.push_back({{"test", t.test},
                     {"cases", t.cases},
                     {"failures", t.failing.size()},
                     {"origins", origins},
                     {"summary", summary(t, report, words)},
                     {"failing", failing}});
  }
  nlohmann::json chain = nlohmann::json::array();
  for (const workbench::ChainLink& l : report.chain)
    chain.push_back({{"model", l.model},
                     {"method", l.method},
                     {"run", l.run ? nlohmann::json(*l.run) : nlohmann::json()},
                     {"dataset_digest", l.dataset_digest}});
  return {{"model", report.model},
          {"chain", chain},
          {"headless_ancestor", report.headless_ancestor.empty()
                                    ? nlohmann::json()
                                    : nlohmann::json(report.headless_ancestor)},
          {"tests", tests}};
}

void print_report(const workbench::BlameReport& report, bool all) {
  const OriginWords words = origin_words(report);
  const bool tty = stdout_is_tty();
  std::vector<std::string> names;
  for (const workbench::ChainLink& l : report.chain) names.push_back(l.model);
  std::cout << "blame " << paint(report.model, Color::kBold, tty)
            << " up its ancestry: " << fmt::format("{}", fmt::join(names, " <- ")) << "\n";
  for (const workbench::TestBlame& t : report.tests) {
    std::cout << "\n"
              << paint(t.test, Color::kBold, tty) << ": " << summary(t, report, words) << "\n";
    print_cases(t, report, words, all, tty);
  }
}

int blame(const GlobalOptions& global, const BlameOptions& options) {
  auto ws = load_workspace_or_report(global);
  if (!ws) return kExitUsage;
  if (auto ref = workbench::parse_model_ref(options.request.model); !ref)
    return fail(ref.status());
  else if (auto found = workbench::find_spec_model(*ws, ref->model); !found)
    return fail(found.status());
  auto context = workbench::Context::open(context_options(global, workbench::StoreAccess::kRead));
  if (!context) return fail(context.status());
  auto backend = (*context)->backend();
  if (!backend) return fail(backend.status());
  auto report = workbench::blame(*ws, (*context)->store(), **backend, options.request);
  if (!report) return fail(report.status());
  if (Status s = (*context)->check_backends("scion lineage blame"); !s.is_ok()) return fail(s);
  if (global.json)
    print_json(report_json(*report, origin_words(*report)));
  else
    print_report(*report, options.all);
  return kExitOk;
}

}  // namespace

void add_lineage_blame_subcommand(CLI::App& lineage, const GlobalOptions& global,
                                  CommandAction& action) {
  auto options = std::make_shared<BlameOptions>();
  auto case_number = std::make_shared<std::int64_t>(-1);
  CLI::App* cmd = lineage.add_subcommand(
      "blame", "For each failing test case of MODEL, the ancestor where the failure first appears");
  cmd->add_option("MODEL", options->request.model,
                  "The model (MODEL@N or MODEL@<hash>: that version)")
      ->required();
  cmd->add_option("--test", options->request.test,
                  "Only this test (default: every test of the model)");
  cmd->add_option("--case", *case_number, "Only case N of the test(s)")
      ->check(whole_number(0, std::numeric_limits<std::int32_t>::max()));
  cmd->add_flag(
      "--all", options->all,
      fmt::format("List every failing case (default: {} examples per origin)", kExamplesPerOrigin));
  cmd->add_option("--chunk-size", options->request.chunk_size,
                  "Texts or (input, continuation) pairs per co-batched pass (default 64)")
      ->check(whole_number(1, 65536));
  cmd->footer(
      "Inherited: the first model of MODEL's kind (classifier or language model) up the\n"
      "ancestry fails it too. Own: MODEL is that first model (a base has no ancestor).\n"
      "Introduced by X: X's parent passes it, X and its descendants down to MODEL fail it.\n"
      "Exit codes: 0 blamed, 2 an unknown model or test, a test that does not apply to MODEL,\n"
      "a case out of range.\n"
      "Example: scion lineage blame product-lora --test typo-invariance");
  cmd->callback([&global, &action, options, case_number] {
    if (*case_number >= 0) options->request.case_number = *case_number;
    action = [&global, options] { return blame(global, *options); };
  });
}

}  // namespace scion::cli
