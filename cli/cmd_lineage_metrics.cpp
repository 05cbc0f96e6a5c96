// `scion lineage metrics MODEL [--run N] [--format table|csv|json]`: the per-step metrics
// of one training run (loss, learning rate, validation metrics), for plotting elsewhere.
// By default the run that made the model's stored parameters (workbench::metrics_run).
#include <fmt/format.h>

#include <iostream>
#include <limits>
#include <set>

#include "cli/cmd_lineage_support.h"
#include "cli/command_context.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "workbench/lineage_views.h"
#include "workbench/model_lookup.h"

namespace scion::cli {
namespace {

struct MetricsOptions {
  std::string model;
  std::int64_t run = 0;  // 0: the run that made the stored parameters
  std::string format = "table";
};

// 7 significant digits: the store keeps float32 values (lr 0.001, not 0.00100000005).
std::string cell(const std::optional<double>& value) {
  return value ? fmt::format("{:.7g}", *value) : std::string();
}

// A CSV field as RFC 4180 quotes it (metric names are the store's; quoting costs nothing).
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

int print_metrics(const lineage::RunRecord& run, const std::vector<lineage::StepMetrics>& steps,
                  const std::string& format) {
  std::set<std::string> names;
  for (const lineage::StepMetrics& s : steps)
    for (const auto& [name, value] : s.validation) names.insert(name);
  auto value_of = [](const lineage::StepMetrics& s,
                     const std::string& name) -> std::optional<double> {
    auto it = s.validation.find(name);
    return it == s.validation.end() ? std::nullopt : std::optional<double>(it->second);
  };
  if (format == "json") {
    nlohmann::json rows = nlohmann::json::array();
    for (const lineage::StepMetrics& s : steps)
      rows.push_back({{"step", s.step},
                      {"loss", s.loss ? nlohmann::json(*s.loss) : nlohmann::json()},
                      {"lr", s.lr ? nlohmann::json(*s.lr) : nlohmann::json()},
                      {"validation", s.validation}});
    print_json({{"model", run.model},
                {"run", run.id},
                {"kind", lineage::run_kind_name(run.kind)},
                {"status", lineage::run_status_name(run.status)},
                {"steps", rows}});
    return kExitOk;
  }
  const bool csv = format == "csv";
  std::vector<std::string> header = {"step", "loss", "lr"};
  header.insert(header.end(), names.begin(), names.end());
  auto print_row = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (csv)
        std::cout << (i ? "," : "") << csv_field(row[i]);
      else
        std::cout << (i == 0 ? fmt::format("{:>6}", row[i])
                             : fmt::format("  {:>12}", row[i].empty() ? "-" : row[i]));
    }
    std::cout << '\n';
  };
  print_row(header);
  for (const lineage::StepMetrics& s : steps) {
    std::vector<std::string> row = {fmt::format("{}", s.step), cell(s.loss), cell(s.lr)};
    for (const std::string& name : names) row.push_back(cell(value_of(s, name)));
    print_row(row);
  }
  return kExitOk;
}

int run_metrics(const GlobalOptions& global, MetricsOptions options) {
  if (global.json) {
    if (options.format != "table" && options.format != "json")
      return fail(invalid_argument("--json and --format " + options.format +
                                   " ask for two formats; drop one"));
    options.format = "json";
  }
  auto context = open_store_context(global, workbench::StoreAccess::kRead);
  if (!context.is_ok()) return fail(context.status());
  lineage::LineageStore& store = (*context)->store();
  auto model = workbench::find_stored_model(store, options.model);
  if (!model.is_ok()) return fail(model.status());
  auto run = workbench::metrics_run(store, *model, options.run);
  if (!run.is_ok()) return fail(run.status());
  auto steps = store.run_metrics(run->id);
  if (!steps.is_ok()) return fail(steps.status());
  if (steps->empty() && options.format == "table" && global.verbosity >= 0)
    print_note(fmt::format("run {} of '{}' recorded no steps", run->id, options.model));
  return print_metrics(*run, *steps, options.format);
}

}  // namespace

void add_lineage_metrics_subcommand(CLI::App& lineage, const GlobalOptions& global,
                                    CommandAction& action) {
  auto options = std::make_shared<MetricsOptions>();
  CLI::App* cmd = lineage.add_subcommand(
      "metrics", "Per-step loss, learning rate and validation metrics of a run");
  cmd->add_option("MODEL", options->model, "The model")->required();
  cmd->add_option("--run", options->run,
                  "This training run (default: the one that made the stored parameters)")
      ->check(whole_number(1, std::numeric_limits<std::int64_t>::max()))
      ->option_text("N");
  cmd->add_option("--format", options->format, "table | csv | json (default table)")
      ->check(CLI::IsMember({"table", "csv", "json"}));
  cmd->footer(
      "Empty CSV fields (- in the table, null in JSON): not recorded at that step.\n"
      "Example: scion lineage metrics review-lora --format csv > review-lora.csv");
  cmd->callback([&global, &action, options] {
    action = [&global, options] { return run_metrics(global, *options); };
  });
}

}  // namespace scion::cli
