// `scion import FILE.safetensors --as MODEL`: a pretrained base's parameters into the
// store, checked tensor by tensor against the parameter table the spec implies.
#include <iostream>
#include <map>

#include "cli/cmd_lineage_support.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "lineage/safetensors.h"
#include "lineage/spec_records.h"
#include "runtime/parameter_table.h"
#include "workbench/model_lookup.h"

namespace scion::cli {

namespace {

struct ImportOptions {
  std::string file;
  std::string model;
  bool allow_non_finite = false;
};

std::string shape_text(const std::vector<std::int64_t>& shape) {
  return nlohmann::json(shape).dump();
}

// Every mismatch between the checkpoint and the table, so one run shows them all.
std::vector<std::string> mismatches(const std::vector<runtime::ParameterSpec>& table,
                                    const lineage::SafetensorsContents& contents) {
  std::map<std::string, const lineage::SafetensorsTensor*> in_file;
  for (const auto& t : contents.tensors) in_file[t.name] = &t;
  std::vector<std::string> problems;
  for (const auto& p : table) {
    auto it = in_file.find(p.name);
    if (it == in_file.end()) {
      problems.push_back("missing tensor '" + p.name + "' " + shape_text(p.shape));
      continue;
    }
    if (it->second->shape != p.shape) {
      problems.push_back("tensor '" + p.name + "' has shape " + shape_text(it->second->shape) +
                         ", the spec's architecture needs " + shape_text(p.shape));
    }
    in_file.erase(it);
  }
  for (const auto& [name, t] : in_file) {
    problems.push_back("extra tensor '" + name + "' " + shape_text(t->shape) +
                       " is not a parameter of the model");
  }
  return problems;
}

// Every tensor holding NaN or infinite values, with how many: a checkpoint that diverged
// would make every model trained from it diverge, and every prediction NaN.
std::vector<std::string> non_finite_tensors(const lineage::SafetensorsContents& contents) {
  std::vector<std::string> problems;
  for (const auto& t : contents.tensors)
    if (const std::int64_t n = lineage::count_non_finite(t.dtype, t.bytes); n > 0)
      problems.push_back("tensor '" + t.name + "' has " + std::to_string(n) +
                         " NaN or infinite value" + (n == 1 ? "" : "s"));
  return problems;
}

int run_import(const GlobalOptions& global, const ImportOptions& opts) {
  auto workspace = load_workspace_or_report(global);
  if (!workspace.is_ok()) return fail(workspace.status());
  auto found = workbench::find_spec_model(
      *workspace, opts.model, "; declare it as a base model (with an architecture) first");
  if (!found.is_ok()) return fail(found.status());
  const spec::Model* model = *found;
  if (!model->is_base()) {
    return fail(invalid_argument("model '" + opts.model + "' (" + model->location.file + ":" +
                                 std::to_string(model->location.line) + ") is a descendant of '" +
                                 model->from + "'; only base models can be imported"));
  }
  auto checkpoint = lineage::read_safetensors(lineage::default_env(), opts.file);
  if (!checkpoint.is_ok()) return fail(checkpoint.status());
  const auto table = runtime::parameter_table(*workspace, *model);
  const auto problems = mismatches(table, checkpoint->contents);
  if (!problems.empty()) {
    for (const auto& p : problems) std::cerr << "  " << opts.file << ": " << p << '\n';
    return fail(spec_error(
        "'" + opts.file + "' does not fit model '" + opts.model + "' as declared at " +
        model->location.file + ":" + std::to_string(model->location.line) + " (" +
        std::to_string(problems.size()) +
        " problem(s) above); fix the architecture in the spec or convert the checkpoint"));
  }

  if (const auto bad = non_finite_tensors(checkpoint->contents); !bad.empty()) {
    if (!opts.allow_non_finite) {
      for (const auto& p : bad) std::cerr << "  " << opts.file << ": " << p << '\n';
      return fail(corruption("'" + opts.file + "' holds values that are not finite in " +
                             std::to_string(bad.size()) +
                             " tensor(s) (listed above); nothing was "
                             "imported. Pass --allow-nonfinite to import it anyway"));
    }
    for (const auto& p : bad)
      print_warning(opts.file + ": " + p + " (imported: --allow-nonfinite)");
  }

  std::map<std::string, const lineage::SafetensorsTensor*> by_name;
  for (const auto& t : checkpoint->contents.tensors) by_name[t.name] = &t;
  std::vector<lineage::ParameterWrite> writes;
  std::int64_t bytes = 0;
  for (const auto& p : table) {
    const auto& t = *by_name.at(p.name);
    writes.push_back({p.name, t.dtype, t.shape, t.bytes, p.trainable, p.introduced_by, {}});
    bytes += static_cast<std::int64_t>(t.bytes.size());
  }

  auto store = open_store(global, /*create=*/true);
  if (!store.is_ok()) return fail(store.status());
  const lineage::ModelRecord record = lineage::model_record_for(*workspace, *model);
  lineage::RunStart start;
  start.kind = lineage::RunKind::kImport;
  start.recipe_hash = model->recipe_hash;
  start.hyperparameters = {{"file", std::filesystem::absolute(opts.file).string()}};
  auto run = (*store)->start_run(record, start);
  if (!run.is_ok()) return fail(run.status());
  Status committed = (*store)->commit_model(*run, record, writes);
  if (!committed.is_ok()) {
    (void)(*store)->finish_run(*run, lineage::RunStatus::kFailed, committed.message());
    return fail(committed);
  }
  if (global.json) {
    print_json({{"model", opts.model},
                {"file", opts.file},
                {"run", *run},
                {"tensors", writes.size()},
                {"bytes", bytes}});
  } else {
    std::cout << "imported " << writes.size() << " tensors (" << human_bytes(bytes) << ") from "
              << opts.file << " as '" << opts.model << "' (run #" << *run << ")\n";
  }
  return kExitOk;
}

}  // namespace

void add_import_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  auto opts = std::make_shared<ImportOptions>();
  CLI::App* cmd =
      app.add_subcommand("import", "Import a pretrained base model from a safetensors file");
  cmd->add_option("FILE", opts->file, "The safetensors checkpoint")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--as", opts->model, "The base model in the spec it provides")
      ->required()
      ->option_text("MODEL");
  cmd->add_flag("--allow-nonfinite", opts->allow_non_finite,
                "Import tensors holding NaN or infinite values (refused otherwise)");
  cmd->footer(
      "Tensor names and shapes must match the model's parameter table exactly\n"
      "(see runtime/parameter_table.h); every mismatch is listed.\n"
      "Example: scion import bert-tiny.safetensors --as trunk");
  cmd->callback(
      [&global, &action, opts] { action = [&global, opts] { return run_import(global, *opts); }; });
}

}  // namespace scion::cli
