#include "workbench/checked_workspace.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <optional>
#include <set>
#include <tuple>

#include "runtime/data/dataset_reader.h"
#include "runtime/text/tokenizer.h"
#include "spec/loader.h"
#include "workbench/behaviour_suite.h"
#include "workbench/parameter_checks.h"

namespace scion::workbench {
namespace {

// Data problems reported per dataset: enough to see a pattern, not a flood.
constexpr std::size_t kProblemsPerDataset = 20;

// Reads "<line>" or "<line>:<col>" followed by ": " from the front of `text`.
bool take_position(std::string_view& text, int& line, int& column) {
  const auto number = [&text](int& out) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    if (ec != std::errc() || end == text.data()) return false;
    text.remove_prefix(static_cast<std::size_t>(end - text.data()));
    return true;
  };
  if (!number(line)) return false;
  if (text.starts_with(":") && !text.starts_with(": ")) {
    text.remove_prefix(1);
    if (!number(column)) return false;
  }
  if (!text.starts_with(": ")) return false;
  text.remove_prefix(2);
  return true;
}

// A message from the readers and compilers below the CLI, which begin with where the
// problem is ("<file>:<line>[:<col>]: what", or "<file>: what"), as a Diagnostic at that
// place, with `file` shown as `shown`. Messages that name another place keep it in the text.
spec::Diagnostic located(const std::string& message, const std::string& file,
                         const std::string& shown, const std::string& key_path) {
  std::string_view rest = message;
  int line = 0, column = 0;
  if (rest.starts_with(file + ":")) {
    rest.remove_prefix(file.size() + 1);
    if (rest.starts_with(" ")) {
      rest.remove_prefix(1);
    } else if (!take_position(rest, line, column)) {
      rest = message, line = column = 0;
    }
  }
  return spec::Diagnostic::at(shown, line, column, std::string(rest), key_path);
}

// The data file of `dataset` as the user would name it: relative to where the spec was
// named from.
std::string shown_path(const spec::Workspace& ws, const std::string& spec_file,
                       const spec::Dataset& dataset) {
  const std::filesystem::path relative = dataset.path.lexically_relative(ws.root_dir);
  if (relative.empty()) return dataset.path.string();
  return (std::filesystem::path(spec_file).parent_path() / relative).lexically_normal().string();
}

void check_data(const spec::Workspace& ws, const std::string& spec_file,
                std::vector<spec::Diagnostic>& out) {
  for (const spec::Dataset& dataset : ws.datasets) {
    const std::string shown = shown_path(ws, spec_file, dataset);
    const std::vector<Status> problems = data::dataset_problems(dataset, kProblemsPerDataset);
    for (const Status& problem : problems)
      out.push_back(
          located(problem.message(), dataset.path.string(), shown, "datasets." + dataset.name));
    if (problems.size() == kProblemsPerDataset)
      out.push_back(spec::Diagnostic::at(
          shown, 0, 0,
          fmt::format("stopped after {} problems in dataset '{}'; fix these and validate again",
                      kProblemsPerDataset, dataset.name),
          "datasets." + dataset.name));
  }
}

// A regression head's outputs against its data's targets per row (the reader has checked
// that every row holds as many as the first), for each model trained on numbers.
void check_target_widths(const spec::Workspace& ws, const std::string& spec_file,
                         std::vector<spec::Diagnostic>& out) {
  for (const spec::Model& m : ws.models) {
    const spec::HeadSpec* head = ws.head_of(m);
    if (!m.training || !head || head->task != spec::HeadTask::kRegression) continue;
    for (const std::string& name : {m.training->dataset, m.training->validation}) {
      const spec::Dataset* data = ws.find_dataset(name);
      if (!data || data->label_type != spec::LabelType::kNumber) continue;
      auto examples = data::read_dataset(*data);
      if (!examples || examples->examples.empty()) continue;  // check_data reports it
      const std::size_t width = examples->examples.front().values.size();
      if (width == head->labels.size()) continue;
      out.push_back(spec::Diagnostic::at(
          spec_file, m.location.line, m.location.column,
          fmt::format("'{}' has a regression head of {} output{} ([{}]), but the rows of "
                      "dataset '{}' hold {} target value{}; give the head one label per target",
                      m.name, head->labels.size(), head->labels.size() == 1 ? "" : "s",
                      fmt::join(head->labels, ", "), data->name, width, width == 1 ? "" : "s"),
          "models." + m.name + ".adapt.head.labels"));
    }
  }
}

// keep_best names a metric its validation data cannot define: val_auc needs rows of both
// classes, val_pearson and val_spearman targets that vary. Training then keeps the last
// step (and says so in its output and record); validate says it before anything trains.
// Only a named validation dataset can be known now (a validation_split is drawn later).
std::optional<std::string> undefined_keep_best(const spec::Model& m, const spec::Dataset& dev) {
  const std::string& metric = m.training->keep_best;
  const bool needs_classes = metric == "val_auc";
  if (!needs_classes && metric != "val_pearson" && metric != "val_spearman") return std::nullopt;
  auto examples = data::read_dataset(dev);
  if (!examples || examples->examples.empty()) return std::nullopt;  // check_data reports it
  std::set<std::int32_t> labels;
  std::set<std::vector<float>> targets;
  for (const data::Example& e : examples->examples) {
    labels.insert(e.label);
    targets.insert(e.values);
  }
  if ((needs_classes ? labels.size() : targets.size()) >= 2) return std::nullopt;
  return fmt::format(
      "keep_best: {} is undefined on validation data '{}' (every row holds the same {}), so "
      "training will store the last step's parameters; validate on rows with {}, or choose "
      "another metric",
      metric, dev.name, needs_classes ? "label" : "target",
      needs_classes ? "both classes" : "varying targets");
}

void check_keep_best(const spec::Workspace& ws, const std::string& spec_file,
                     std::vector<spec::Diagnostic>& out) {
  for (const spec::Model& m : ws.models) {
    if (!m.training || m.training->keep_best.empty()) continue;
    const spec::Dataset* dev = ws.find_dataset(m.training->validation);
    if (!dev) continue;
    if (const std::optional<std::string> why = undefined_keep_best(m, *dev))
      out.push_back(spec::Diagnostic::at(spec_file, m.location.line, m.location.column, *why,
                                         "models." + m.name + ".train.keep_best"));
  }
}

void check_suite(const spec::Workspace& ws, const std::string& spec_file,
                 std::vector<spec::Diagnostic>& out) {
  for (const Status& problem : suite_problems(ws)) {
    spec::Diagnostic d = located(problem.message(), spec_file, spec_file, "");
    // Most go on with the key path: "tests.x.expect.label: ...", "tests.x.template, column 4: ...".
    const std::string& text = d.message;
    if (text.starts_with("tests.") || text.starts_with("assertions."))
      d.key_path = text.substr(0, text.find_first_of(":, "));
    out.push_back(std::move(d));
  }
}

// Every base's tokenizer file (WordPiece or BPE), loaded whole as training and prediction
// load it (runtime/text/tokenizer.h), so a broken tokenizer.json is a spec error now, not
// at `scion run`; and its ids must fit the architecture's embedding (vocab_size). Each file
// is read once.
void check_tokenizers(const spec::Workspace& ws, std::vector<spec::Diagnostic>& out) {
  std::set<std::string> read;
  for (const spec::Model& m : ws.models) {
    if (!m.architecture || m.architecture->tokenizer.kind == spec::TokenizerKind::kByte) continue;
    const spec::TokenizerSpec& tokenizer = m.architecture->tokenizer;
    const std::string key =
        "models." + m.name + (m.import_path.empty() ? ".architecture.tokenizer" : ".import");
    if (!read.insert((ws.root_dir / tokenizer.vocab_file).string()).second) continue;
    auto made = text::make_tokenizer(tokenizer, ws.root_dir);
    if (!made) {
      out.push_back({m.location, key,
                     fmt::format("model '{}': its tokenizer cannot be used: {}", m.name,
                                 made.status().message())});
      continue;
    }
    if ((*made)->vocab_size() > m.architecture->vocab_size)
      out.push_back({m.location, key,
                     fmt::format("model '{}': its tokenizer ({}) has {} ids, more than the {} "
                                 "rows of the embedding (vocab_size); a text could produce an id "
                                 "the model has no row for",
                                 m.name, tokenizer.vocab_file, (*made)->vocab_size(),
                                 m.architecture->vocab_size)});
  }
}

// The spec named "-": standard input, read once, so that a command that loads the spec twice
// (`scion run` trains, then tests) reads the same text.
const std::string& spec_from_stdin() {
  static const std::string text{std::istreambuf_iterator<char>(std::cin),
                                std::istreambuf_iterator<char>()};
  return text;
}

spec::LoadResult load_spec(const std::string& spec_file) {
  if (spec_file != kStdinSpec) return spec::load_workspace(spec_file);
  return spec::load_workspace_from_string(spec_from_stdin(), kStdinSpecName,
                                          std::filesystem::current_path());
}

bool by_file_position(const spec::Diagnostic& a, const spec::Diagnostic& b) {
  return std::tie(a.location.line, a.location.column) <
         std::tie(b.location.line, b.location.column);
}

}  // namespace

CheckedWorkspace load_checked(const std::string& named_spec) {
  spec::LoadResult loaded = load_spec(named_spec);
  const std::string spec_file = named_spec == kStdinSpec ? kStdinSpecName : named_spec;
  CheckedWorkspace checked;
  checked.errors = std::move(loaded.errors);
  checked.warnings = std::move(loaded.warnings);
  const spec::Workspace* ws = loaded.workspace ? &*loaded.workspace
                              : loaded.partial ? &*loaded.partial
                                               : nullptr;
  if (ws == nullptr) return checked;
  if (loaded.workspace) {
    const auto found = parameter_diagnostics(*loaded.workspace);
    checked.errors.insert(checked.errors.end(), found.begin(), found.end());
    check_tokenizers(*loaded.workspace, checked.errors);
  }
  check_suite(*ws, spec_file, checked.errors);
  std::stable_sort(checked.errors.begin(), checked.errors.end(), by_file_position);
  check_data(*ws, spec_file, checked.errors);
  if (checked.errors.empty()) check_target_widths(*ws, spec_file, checked.errors);
  if (checked.errors.empty()) check_keep_best(*ws, spec_file, checked.warnings);
  if (checked.errors.empty()) checked.workspace = std::move(loaded.workspace);
  return checked;
}

}  // namespace scion::workbench
