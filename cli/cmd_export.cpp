// `scion export MODEL -o FILE.safetensors [--own-only]`: a model's parameters as a
// safetensors checkpoint, with its lineage in the file's __metadata__.
// `scion export MODEL --format peft -o DIR`: a LoRA descendant of an imported Hugging
// Face base as a PEFT adapter folder (lineage/peft_adapter.h).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/cmd_lineage_support.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "cli/output_path.h"
#include "lineage/peft_adapter.h"
#include "lineage/safetensors.h"
#include "workbench/hf_export.h"
#include "workbench/model_lookup.h"

namespace scion::cli {

namespace {

struct ExportOptions {
  std::string model;
  std::string output;
  bool own_only = false;
  bool force = false;  // replace an existing file
  std::string format = "safetensors";  // or "peft", "huggingface"
};

// __metadata__: safetensors allows only string values, so the lineage is a JSON string.
Result<std::map<std::string, std::string>> lineage_metadata(lineage::LineageStore& store,
                                                            const std::string& model,
                                                            bool own_only) {
  auto models = store.models();
  if (!models.is_ok()) return models.status();
  std::map<std::string, const lineage::StoredModel*> by_name;
  for (const auto& m : *models) by_name[m.name] = &m;
  nlohmann::json chain = nlohmann::json::array();
  for (const lineage::StoredModel* m = by_name.at(model); m != nullptr;
       m = m->parent.empty() ? nullptr : by_name.at(m->parent)) {
    chain.push_back(
        {{"name", m->name},
         {"recipe_hash", m->recipe_hash ? nlohmann::json(*m->recipe_hash) : nlohmann::json()},
         {"adaptation", m->adaptation}});
  }
  const lineage::StoredModel& self = *by_name.at(model);
  return std::map<std::string, std::string>{{"format", "pt"},
                                            {"scion.model", model},
                                            {"scion.parent", self.parent},
                                            {"scion.recipe_hash", self.recipe_hash.value_or("")},
                                            {"scion.architecture", self.architecture.dump()},
                                            {"scion.lineage", chain.dump()},
                                            {"scion.own_only", own_only ? "true" : "false"},
                                            {"scion.version", SCION_VERSION}};
}

int run_export_peft(const GlobalOptions& global, const ExportOptions& opts) {
  const std::filesystem::path dir = opts.output;
  if (std::filesystem::exists(dir) && !std::filesystem::is_directory(dir))
    return fail(invalid_argument("-o " + opts.output +
                                 ": is a file; --format peft writes a folder (adapter_config.json "
                                 "and adapter_model.safetensors)"));
  // An existing folder: its adapter is replaced only with --force. A new one: its parent
  // must exist and lie outside the store (write_peft_adapter creates it).
  auto checked = std::filesystem::exists(dir)
                     ? checked_output_path(dir / "adapter_model.safetensors",
                                           global.store_path(), opts.force, "-o")
                     : checked_output_path(dir, global.store_path(), false, "-o");
  if (!checked.is_ok()) return fail(checked.status());
  auto workspace = load_workspace_or_report(global);
  if (!workspace.is_ok()) return fail(workspace.status());
  auto model = workbench::find_spec_model(*workspace, opts.model, "");
  if (!model.is_ok()) return fail(model.status());
  auto store = open_store_read_only(global);
  if (!store.is_ok()) return fail(store.status());
  if (auto stored = workbench::find_stored_model(**store, opts.model); !stored.is_ok())
    return fail(stored.status());
  auto params = (*store)->load_parameters(opts.model);
  if (!params.is_ok()) return fail(params.status());
  auto files = lineage::peft_adapter_files(*workspace, **model, *params);
  if (!files.is_ok()) return fail(files.status());
  Status written = lineage::write_peft_adapter((*store)->env(), dir, *files);
  if (!written.is_ok()) return fail(written);
  if (global.json) {
    print_json({{"model", opts.model},
                {"folder", opts.output},
                {"format", "peft"},
                {"tensors", files->tensors.size()},
                {"base", files->config["base_model_name_or_path"]}});
  } else {
    std::cout << "exported '" << opts.model << "' as a PEFT LoRA adapter ("
              << files->tensors.size() << " tensors) to " << opts.output << "/\n";
  }
  return kExitOk;
}

// An existing folder is replaced only with --force; a new one's parent must exist and lie
// outside the store (the writer creates it).
Status check_output_folder(const GlobalOptions& global, const ExportOptions& opts,
                           const std::string& first_file, const std::string& writes) {
  const std::filesystem::path dir = opts.output;
  if (std::filesystem::exists(dir) && !std::filesystem::is_directory(dir))
    return invalid_argument("-o " + opts.output + ": is a file; --format " + opts.format +
                            " writes a folder (" + writes + ")");
  auto checked = std::filesystem::exists(dir)
                     ? checked_output_path(dir / first_file, global.store_path(), opts.force, "-o")
                     : checked_output_path(dir, global.store_path(), false, "-o");
  return checked.is_ok() ? Status::ok() : checked.status();
}

int run_export_huggingface(const GlobalOptions& global, const ExportOptions& opts) {
  if (Status s = check_output_folder(global, opts, "model.safetensors",
                                     "config.json, model.safetensors and the tokenizer's files");
      !s.is_ok())
    return fail(s);
  auto workspace = load_workspace_or_report(global);
  if (!workspace.is_ok()) return fail(workspace.status());
  auto model = workbench::find_spec_model(*workspace, opts.model, "");
  if (!model.is_ok()) return fail(model.status());
  auto store = open_store_read_only(global);
  if (!store.is_ok()) return fail(store.status());
  auto stored = workbench::find_stored_model(**store, opts.model);
  if (!stored.is_ok()) return fail(stored.status());
  if (stored->recipe_hash != (*model)->recipe_hash)
    return fail(invalid_argument("model '" + opts.model +
                                 "' is out of date: the store holds parameters of another "
                                 "recipe; run `scion run " + opts.model + "` first"));
  auto params = (*store)->load_parameters(opts.model);
  if (!params.is_ok()) return fail(params.status());
  auto folder = workbench::hf_model_folder(*workspace, **model, *params);
  if (!folder.is_ok()) return fail(folder.status());
  Status written = workbench::write_hf_model_folder((*store)->env(), opts.output, *folder);
  if (!written.is_ok()) return fail(written);
  if (global.json) {
    print_json({{"model", opts.model},
                {"folder", opts.output},
                {"format", "huggingface"},
                {"tensors", folder->tensors.size()},
                {"architecture", folder->config["architectures"][0]}});
  } else {
    std::cout << "exported '" << opts.model << "' as a Hugging Face "
              << folder->config["architectures"][0].get<std::string>() << " ("
              << folder->tensors.size() << " tensors, adapters merged) to " << opts.output
              << "/\n";
  }
  return kExitOk;
}

// `-o -`: the checkpoint is written to a temporary file first (safetensors needs its
// header's offsets before the data), then copied to stdout and removed.
Status copy_to_stdout(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::cout << in.rdbuf();
  std::cout.flush();
  std::error_code ignored;
  std::filesystem::remove(file, ignored);
  if (!in || !std::cout) return io_error("writing the checkpoint to stdout failed (closed pipe?)");
  return Status::ok();
}

int run_export(const GlobalOptions& global, const ExportOptions& opts) {
  if (opts.format == "peft") return run_export_peft(global, opts);
  if (opts.format == "huggingface") return run_export_huggingface(global, opts);
  const bool to_stdout = opts.output == "-";
  if (to_stdout && global.json)
    return fail(invalid_argument("-o - and --json both write to stdout; give -o a file"));
  auto output = to_stdout ? Result<std::filesystem::path>(std::filesystem::temp_directory_path() /
                                                          ("scion-export-" + std::to_string(getpid()) + ".safetensors"))
                          : checked_output_path(opts.output, global.store_path(), opts.force, "-o");
  if (!output.is_ok()) return fail(output.status());
  // Export only reads the store: it works on a store the user may not write.
  auto store = open_store_read_only(global);
  if (!store.is_ok()) return fail(store.status());
  if (auto model = workbench::find_stored_model(**store, opts.model); !model.is_ok())
    return fail(model.status());
  auto params = (*store)->load_parameters(opts.model);
  if (!params.is_ok()) return fail(params.status());
  auto metadata = lineage_metadata(**store, opts.model, opts.own_only);
  if (!metadata.is_ok()) return fail(metadata.status());
  std::vector<lineage::SafetensorsTensor> tensors;
  std::int64_t bytes = 0;
  for (const auto& [name, p] : *params) {
    if (opts.own_only && p.introduced_by != opts.model) continue;
    tensors.push_back({name, p.dtype, p.shape, p.bytes});
    bytes += static_cast<std::int64_t>(p.bytes.size());
  }
  if (tensors.empty()) {
    return fail(not_found("model '" + opts.model +
                          "' has no parameters of its own to export; "
                          "drop --own-only to export all of them"));
  }
  Status written = lineage::write_safetensors((*store)->env(), *output, tensors, *metadata);
  if (written.is_ok() && to_stdout) written = copy_to_stdout(*output);
  if (!written.is_ok()) return fail(written);
  if (to_stdout) return kExitOk;
  if (global.json) {
    print_json({{"model", opts.model},
                {"file", opts.output},
                {"tensors", tensors.size()},
                {"bytes", bytes},
                {"own_only", opts.own_only}});
  } else {
    std::cout << "exported " << tensors.size() << " tensors (" << human_bytes(bytes) << ") of '"
              << opts.model << "' to " << opts.output << '\n';
  }
  return kExitOk;
}

}  // namespace

void add_export_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  auto opts = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand("export", "Write a model's parameters to a safetensors file");
  cmd->add_option("MODEL", opts->model, "The model to export")->required();
  cmd->add_option("-o,--output", opts->output,
                  "The safetensors file to write (- for stdout; a folder with --format peft "
                  "or huggingface)")
      ->required()
      ->option_text("FILE");
  cmd->add_option("--format", opts->format,
                  "safetensors (default): scion's names; peft: a PEFT LoRA adapter folder; "
                  "huggingface: a full transformers model folder, adapters merged")
      ->check(CLI::IsMember({"safetensors", "peft", "huggingface"}));
  cmd->add_flag("--own-only", opts->own_only,
                "Only the parameters this model introduced (its adapters)");
  cmd->add_flag("--force", opts->force, "Replace FILE when it exists");
  cmd->footer(
      "The lineage (ancestry, recipe hashes, methods) goes into __metadata__.\n"
      "FILE may not be inside the store, nor a device or folder; an existing file is\n"
      "replaced only with --force.\n"
      "With --format peft, a LoRA (+ head) descendant of an imported Hugging Face\n"
      "folder is written as adapter_config.json + adapter_model.safetensors, which\n"
      "PeftModel.from_pretrained loads (docs/hugging-face.md).\n"
      "With --format huggingface, a classifier of an imported Hugging Face folder is\n"
      "written as config.json + model.safetensors (LoRA merged) + tokenizer files,\n"
      "which AutoModelForSequenceClassification.from_pretrained loads.\n"
      "Example: scion export sst2 -o sst2-adapter.safetensors --own-only\n"
      "         scion export minilm-lora --format peft -o minilm-lora-peft\n"
      "         scion export lora-products --format huggingface -o lora-products-hf");
  cmd->callback(
      [&global, &action, opts] { action = [&global, opts] { return run_export(global, *opts); }; });
}

}  // namespace scion::cli
