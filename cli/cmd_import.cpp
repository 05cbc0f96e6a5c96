// `scion import FILE.safetensors|FOLDER --as MODEL`: a pretrained base's parameters into
// the store (workbench/base_import.h checks and converts them); `--peft DIR`: a PEFT
// adapter as a declared LoRA descendant (workbench/peft_import.h). This file parses the
// options and prints.
#include <filesystem>
#include <iostream>

#include "cli/cmd_lineage_support.h"
#include "cli/command_context.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "workbench/base_import.h"
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

void print_problems(const std::string& file, const std::vector<std::string>& problems) {
  for (const auto& p : problems) std::cerr << "  " << file << ": " << p << '\n';
}

// Tensors holding NaN or infinite values are refused (exit 3, nothing stored) unless
// --allow-nonfinite, for every kind of import alike; allowed, each is a warning.
Status check_finite(const ImportOptions& opts, const std::vector<std::string>& non_finite) {
  if (non_finite.empty()) return Status::ok();
  if (!opts.allow_non_finite) {
    print_problems(opts.file, non_finite);
    return corruption("'" + opts.file + "' holds values that are not finite in " +
                      std::to_string(non_finite.size()) +
                      " tensor(s) (listed above); nothing was imported. Pass --allow-nonfinite "
                      "to import it anyway");
  }
  for (const auto& p : non_finite)
    print_warning(opts.file + ": " + p + " (imported: --allow-nonfinite)");
  return Status::ok();
}

// `--peft DIR`: a PEFT LoRA adapter as the parameters of a declared LoRA descendant.
int run_import_peft(const GlobalOptions& global, const ImportOptions& opts) {
  auto workspace = load_workspace_or_report(global);
  if (!workspace.is_ok()) return fail(workspace.status());
  auto found = workbench::find_spec_model(*workspace, opts.model,
                                          "; declare it as a LoRA descendant of the base first");
  if (!found.is_ok()) return fail(found.status());
  const spec::Model* model = *found;
  auto context = open_store_context(global, workbench::StoreAccess::kWrite);
  if (!context.is_ok()) return fail(context.status());
  lineage::LineageStore& store = (*context)->store();
  std::vector<std::string> problems;
  auto adapter = workbench::read_peft_import(*workspace, *model, store, opts.file, problems);
  if (!adapter.is_ok()) {
    print_problems(opts.file, problems);
    return fail(adapter.status());
  }
  if (Status finite = check_finite(opts, (*adapter)->non_finite); !finite.is_ok())
    return fail(finite);
  auto run = workbench::commit_import(store, *workspace, *model, (*adapter)->writes,
                                      {{"peft", std::filesystem::absolute(opts.file).string()},
                                       {"adapter_digest", (*adapter)->adapter_digest},
                                       {"config_digest", (*adapter)->config_digest}});
  if (!run.is_ok()) return fail(run.status());
  if (global.json) {
    print_json({{"model", opts.model},
                {"file", opts.file},
                {"run", *run},
                {"tensors", (*adapter)->own_tensors},
                {"bytes", (*adapter)->own_bytes}});
  } else {
    std::cout << "imported the PEFT adapter " << opts.file << " (" << (*adapter)->own_tensors
              << " tensors, sha256 " << (*adapter)->adapter_digest.substr(0, 16) << ") as '"
              << opts.model << "', a descendant of '" << model->from << "' (run #" << *run << ")\n";
  }
  return kExitOk;
}

int run_import(const GlobalOptions& global, const ImportOptions& opts) {
  // Checked here, not while parsing: a relative FILE is relative to -C's folder, which
  // main() enters after parsing.
  std::error_code ec;
  if (!std::filesystem::exists(opts.file, ec))
    return fail(invalid_argument("FILE " + opts.file + ": no such file or folder" +
                                 (global.workspace_dir.empty()
                                      ? std::string()
                                      : " in " + global.workspace_dir + " (given with -C)")));
  if (opts.peft) return run_import_peft(global, opts);
  auto workspace = load_workspace_or_report(global);
  if (!workspace.is_ok()) return fail(workspace.status());
  auto found = workbench::find_spec_model(
      *workspace, opts.model, "; declare it as a base model (with an architecture) first");
  if (!found.is_ok()) return fail(found.status());
  const spec::Model* model = *found;
  std::vector<std::string> problems, notes;
  auto checkpoint = workbench::read_base_import(*workspace, *model, opts.file, problems, notes);
  if (!global.json)
    for (const auto& note : notes) std::cerr << "note: " << note << '\n';
  if (!checkpoint.is_ok()) {
    print_problems(opts.file, problems);
    return fail(checkpoint.status());
  }
  if (Status finite = check_finite(opts, (*checkpoint)->non_finite); !finite.is_ok())
    return fail(finite);

  auto context = open_store_context(global, workbench::StoreAccess::kCreate);
  if (!context.is_ok()) return fail(context.status());
  lineage::LineageStore& store = (*context)->store();
  const auto& writes = (*checkpoint)->writes;
  auto run = workbench::commit_import(store, *workspace, *model, writes,
                                      {{"file", std::filesystem::absolute(opts.file).string()}});
  if (!run.is_ok()) return fail(run.status());
  const std::int64_t bytes = (*checkpoint)->bytes;
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
  cmd->add_option("FILE", opts->file, "The safetensors checkpoint, or a Hugging Face model folder")
      ->required();
  cmd->add_option("--as", opts->model, "The base model in the spec it provides")
      ->required()
      ->option_text("MODEL");
  cmd->add_flag("--peft", opts->peft,
                "FILE is a PEFT LoRA adapter folder; MODEL the LoRA descendant it provides");
  cmd->add_flag("--allow-nonfinite", opts->allow_non_finite,
                "Import tensors holding NaN or infinite values (refused otherwise)");
  cmd->footer(
      "Tensor names and shapes must match the model's parameter table exactly\n"
      "(see runtime/model/parameter_table.h); every mismatch is listed. A Hugging Face\n"
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
