// `scion import FILE.safetensors|FOLDER --as MODEL`: a pretrained base's parameters into
// the store, checked tensor by tensor against the parameter table the spec implies. A
// Hugging Face model folder's tensors are renamed by lineage/hf_tensor_names.h first;
// floating-point parameters of any width are stored as F32, the dtype the runtime runs.
#include <iostream>
#include <map>

#include "cli/cmd_lineage_support.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "lineage/hf_checkpoint.h"
#include "lineage/safetensors.h"
#include "lineage/spec_records.h"
#include "runtime/parameter_table.h"
#include "workbench/model_lookup.h"
#include "workbench/peft_import.h"

namespace scion::cli {

namespace {

struct ImportOptions {
  std::string file;
  std::string model;
  bool allow_non_finite = false;
  bool peft = false;  // FILE is a PEFT adapter folder for a LoRA descendant
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

// Parameters that are not floating point cannot be converted for the runtime.
std::vector<std::string> non_float_tensors(const lineage::SafetensorsContents& contents) {
  std::vector<std::string> problems;
  for (const auto& t : contents.tensors)
    if (!lineage::is_convertible_to_float32(t.dtype))
      problems.push_back("tensor '" + t.name + "' has dtype " +
                         std::string(lineage::dtype_name(t.dtype)) +
                         "; parameters must be F64, F32, F16 or BF16");
  return problems;
}

// The checkpoint's tensors under scion's names: a safetensors file as it is, or a Hugging
// Face folder mapped by its architecture's name table (notes for what it skips on purpose).
struct LoadedCheckpoint {
  lineage::MappedSafetensors file;
  lineage::HfCheckpoint folder;
  bool is_folder = false;
  const lineage::SafetensorsContents& contents() const {
    return is_folder ? folder.contents : file.contents;
  }
};

Result<LoadedCheckpoint> load_checkpoint(const std::string& path, const spec::Model& model) {
  LoadedCheckpoint out;
  if (!std::filesystem::is_directory(path)) {
    auto read = lineage::read_safetensors(lineage::default_env(), path);
    if (!read.is_ok()) return read.status();
    out.file = std::move(read).value();
    return out;
  }
  const std::string& type = model.architecture->hf_model_type;
  if (type.empty())
    return spec_error("'" + path + "' is a folder, but model '" + model.name + "' (" +
                      model.location.file + ":" + std::to_string(model.location.line) +
                      ") does not import a Hugging Face folder; write import: " + path +
                      " in the spec so its config.json gives the architecture");
  auto read = lineage::read_hf_checkpoint(lineage::default_env(), path, type);
  if (!read.is_ok()) return read.status();
  out.folder = std::move(read).value();
  out.is_folder = true;
  return out;
}

// `--peft DIR`: a PEFT LoRA adapter as the parameters of a declared LoRA descendant.
int run_import_peft(const GlobalOptions& global, const ImportOptions& opts) {
  auto workspace = load_workspace_or_report(global);
  if (!workspace.is_ok()) return fail(workspace.status());
  auto found = workbench::find_spec_model(
      *workspace, opts.model, "; declare it as a LoRA descendant of the base first");
  if (!found.is_ok()) return fail(found.status());
  const spec::Model* model = *found;
  auto store = open_store(global, /*create=*/false);
  if (!store.is_ok()) return fail(store.status());
  std::vector<std::string> problems;
  auto adapter = workbench::read_peft_import(*workspace, *model, **store, opts.file, problems);
  if (!adapter.is_ok()) {
    for (const auto& p : problems) std::cerr << "  " << opts.file << ": " << p << '\n';
    return fail(adapter.status());
  }
  const lineage::ModelRecord record = lineage::model_record_for(*workspace, *model);
  lineage::RunStart start;
  start.kind = lineage::RunKind::kImport;
  start.recipe_hash = model->recipe_hash;
  start.hyperparameters = {{"peft", std::filesystem::absolute(opts.file).string()},
                           {"adapter_digest", (*adapter)->adapter_digest},
                           {"config_digest", (*adapter)->config_digest}};
  auto run = (*store)->start_run(record, start);
  if (!run.is_ok()) return fail(run.status());
  Status committed = (*store)->commit_model(*run, record, (*adapter)->writes);
  if (!committed.is_ok()) {
    (void)(*store)->finish_run(*run, lineage::RunStatus::kFailed, committed.message());
    return fail(committed);
  }
  if (global.json) {
    print_json({{"model", opts.model},
                {"file", opts.file},
                {"run", *run},
                {"tensors", (*adapter)->own_tensors},
                {"bytes", (*adapter)->own_bytes}});
  } else {
    std::cout << "imported the PEFT adapter " << opts.file << " (" << (*adapter)->own_tensors
              << " tensors, sha256 " << (*adapter)->adapter_digest.substr(0, 16) << ") as '"
              << opts.model << "', a descendant of '" << model->from << "' (run #" << *run
              << ")\n";
  }
  return kExitOk;
}

int run_import(const GlobalOptions& global, const ImportOptions& opts) {
  if (opts.peft) return run_import_peft(global, opts);
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
  auto checkpoint = load_checkpoint(opts.file, *model);
  if (!checkpoint.is_ok()) return fail(checkpoint.status());
  const lineage::SafetensorsContents& contents = checkpoint->contents();
  if (!global.json)
    for (const auto& note : checkpoint->folder.notes) std::cerr << "note: " << note << '\n';
  const auto table = runtime::parameter_table(*workspace, *model);
  auto problems = checkpoint->folder.problems;
  for (auto& p : mismatches(table, contents)) problems.push_back(std::move(p));
  for (auto& p : non_float_tensors(contents)) problems.push_back(std::move(p));
  if (!problems.empty()) {
    for (const auto& p : problems) std::cerr << "  " << opts.file << ": " << p << '\n';
    return fail(spec_error(
        "'" + opts.file + "' does not fit model '" + opts.model + "' as declared at " +
        model->location.file + ":" + std::to_string(model->location.line) + " (" +
        std::to_string(problems.size()) +
        " problem(s) above); fix the architecture in the spec or convert the checkpoint"));
  }

  if (const auto bad = non_finite_tensors(contents); !bad.empty()) {
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
  for (const auto& t : contents.tensors) by_name[t.name] = &t;
  std::vector<lineage::ParameterWrite> writes;
  std::vector<std::vector<float>> converted;  // F32 copies of the other float dtypes
  converted.reserve(table.size());
  std::int64_t bytes = 0;
  for (const auto& p : table) {
    const auto& t = *by_name.at(p.name);
    std::span<const std::byte> values = t.bytes;
    if (t.dtype != lineage::DType::kF32) {
      converted.push_back(lineage::to_float32(t.dtype, t.bytes));
      values = std::as_bytes(std::span<const float>(converted.back()));
    }
    writes.push_back(
        {p.name, lineage::DType::kF32, t.shape, values, p.trainable, p.introduced_by, {}});
    bytes += static_cast<std::int64_t>(values.size());
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
  cmd->add_option("FILE", opts->file,
                  "The safetensors checkpoint, or a Hugging Face model folder")
      ->required()
      ->check(CLI::ExistingPath);
  cmd->add_option("--as", opts->model, "The base model in the spec it provides")
      ->required()
      ->option_text("MODEL");
  cmd->add_flag("--peft", opts->peft,
                "FILE is a PEFT LoRA adapter folder; MODEL the LoRA descendant it provides");
  cmd->add_flag("--allow-nonfinite", opts->allow_non_finite,
                "Import tensors holding NaN or infinite values (refused otherwise)");
  cmd->footer(
      "Tensor names and shapes must match the model's parameter table exactly\n"
      "(see runtime/parameter_table.h); every mismatch is listed. A Hugging Face\n"
      "folder's names are mapped first (docs/hugging-face.md).\n"
      "With --peft, FILE is a PEFT adapter folder (adapter_config.json +\n"
      "adapter_model.safetensors) for a LoRA (+ head) descendant declared in the spec;\n"
      "its rank, alpha, targets, base and tensors must fit the declaration.\n"
      "Example: scion import bert-tiny.safetensors --as trunk\n"
      "         scion import models/all-MiniLM-L6-v2 --as minilm\n"
      "         scion import --peft sst2-lora-peft --as sst2-lora");
  cmd->callback(
      [&global, &action, opts] { action = [&global, opts] { return run_import(global, *opts); }; });
}

}  // namespace scion::cli
