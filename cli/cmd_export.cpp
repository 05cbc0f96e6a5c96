// `scion export MODEL -o FILE.safetensors [--own-only]`: a model's parameters as a
// safetensors checkpoint, with its lineage in the file's __metadata__
// (workbench/checkpoint_export.h). `--format peft -o DIR`: a descendant of an imported
// Hugging Face base as a PEFT adapter folder, with a merged base folder in DIR/base for a
// descendant of a descendant (workbench/peft_export.h). `--format
// huggingface -o DIR`: a whole transformers model folder (workbench/hf_export.h). This
// file parses the options, checks where the output goes, and prints.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <iostream>

#include "cli/cmd_lineage_support.h"
#include "cli/command_context.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "cli/output_path.h"
#include "workbench/checkpoint_export.h"
#include "workbench/export_source.h"
#include "workbench/hf_export.h"
#include "workbench/model_lookup.h"
#include "workbench/model_version.h"
#include "workbench/peft_export.h"
#include "workbench/staged_folder.h"

namespace scion::cli {

namespace {

struct ExportOptions {
  std::string model;
  std::string output;
  bool own_only = false;
  bool force = false;                  // replace an existing file
  std::string format = "safetensors";  // or "peft", "huggingface"
};

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

// The store, opened read-only, and what it exports (workbench/export_source.h).
struct StoredExport {
  std::unique_ptr<workbench::Context> context;  // holds the store
  workbench::ExportSource source;
};

Result<StoredExport> load_for_export(const GlobalOptions& global, const std::string& named) {
  // A malformed MODEL@... or a model the spec lacks is said before the store is opened.
  auto ref = workbench::parse_model_ref(named);
  if (!ref.is_ok()) return ref.status();
  auto workspace = load_workspace_or_report(global);
  if (!workspace.is_ok()) return workspace.status();
  if (auto model = workbench::find_spec_model(*workspace, ref->model, ""); !model.is_ok())
    return model.status();
  auto context = open_store_context(global, workbench::StoreAccess::kRead);
  if (!context.is_ok()) return context.status();
  auto source = workbench::export_source(std::move(*workspace), (*context)->store(), named);
  if (!source.is_ok()) return source.status();
  return StoredExport{std::move(*context), std::move(*source)};
}

int run_export_peft(const GlobalOptions& global, const ExportOptions& opts) {
  if (Status s = check_output_folder(global, opts, "adapter_model.safetensors",
                                     "adapter_config.json and adapter_model.safetensors");
      !s.is_ok())
    return fail(s);
  auto loaded = load_for_export(global, opts.model);
  if (!loaded.is_ok()) return fail(loaded.status());
  auto exported = workbench::peft_export(loaded->source.workspace, *loaded->source.model,
                                         loaded->source.params, opts.output);
  if (!exported.is_ok()) return fail(exported.status());
  Status written = workbench::write_folder_atomically(opts.output, [&](const auto& staging) {
    return workbench::write_peft_export(loaded->context->store().env(), staging, *exported);
  });
  if (!written.is_ok()) return fail(written);
  const nlohmann::json& config = exported->adapter.config;
  const std::string peft_type = config["peft_type"].get<std::string>();
  if (global.json) {
    print_json({{"model", opts.model},
                {"folder", opts.output},
                {"format", "peft"},
                {"peft_type", peft_type},
                {"task_type", config["task_type"]},
                {"tensors", exported->adapter.tensors.size()},
                {"base", config["base_model_name_or_path"]},
                {"merged", exported->merged_ancestors}});
  } else {
    std::cout << "exported '" << opts.model << "' as a PEFT " << peft_type << " adapter ("
              << exported->adapter.tensors.size() << " tensors) to " << opts.output << "/\n";
    if (exported->merged_base)
      std::cout << "over " << config["base_model_name_or_path"].get<std::string>()
                << "/, a transformers model with the adapters of "
                << fmt::format("{}", fmt::join(exported->merged_ancestors, ", ")) << " merged\n";
  }
  return kExitOk;
}

int run_export_huggingface(const GlobalOptions& global, const ExportOptions& opts) {
  if (Status s = check_output_folder(global, opts, "model.safetensors",
                                     "config.json, model.safetensors and the tokenizer's files");
      !s.is_ok())
    return fail(s);
  auto loaded = load_for_export(global, opts.model);
  if (!loaded.is_ok()) return fail(loaded.status());
  auto folder = workbench::hf_model_folder(loaded->source.workspace, *loaded->source.model,
                                           loaded->source.params);
  if (!folder.is_ok()) return fail(folder.status());
  Status written = workbench::write_folder_atomically(opts.output, [&](const auto& staging) {
    return workbench::write_hf_model_folder(loaded->context->store().env(), staging, *folder);
  });
  if (!written.is_ok()) return fail(written);
  const std::string architecture = folder->config["architectures"][0].get<std::string>();
  if (global.json) {
    print_json({{"model", opts.model},
                {"folder", opts.output},
                {"format", "huggingface"},
                {"tensors", folder->tensors.size()},
                {"architecture", architecture}});
  } else {
    std::cout << "exported '" << opts.model << "' as a Hugging Face " << architecture << " ("
              << folder->tensors.size() << " tensors, adapters merged) to " << opts.output << "/\n";
  }
  return kExitOk;
}

int run_export(const GlobalOptions& global, const ExportOptions& opts) {
  if (opts.format == "peft") return run_export_peft(global, opts);
  if (opts.format == "huggingface") return run_export_huggingface(global, opts);
  const bool to_stdout = opts.output == "-";
  if (to_stdout && global.json)
    return fail(invalid_argument("-o - and --json both write to stdout; give -o a file"));
  std::filesystem::path output;  // none for -o -, which streams
  if (!to_stdout) {
    auto checked = checked_output_path(opts.output, global.store_path(), opts.force, "-o");
    if (!checked.is_ok()) return fail(checked.status());
    output = *checked;
  }
  // Export only reads the store: it works on a store the user may not write.
  auto context = open_store_context(global, workbench::StoreAccess::kRead);
  if (!context.is_ok()) return fail(context.status());
  lineage::LineageStore& store = (*context)->store();
  auto version = workbench::resolve_version(store, opts.model);
  if (!version.is_ok()) return fail(version.status());
  if (to_stdout) {
    auto streamed = workbench::stream_checkpoint(store, *version, opts.own_only, std::cout);
    return streamed.is_ok() ? kExitOk : fail(streamed.status());
  }
  auto exported = workbench::export_checkpoint(store, *version, opts.own_only, output);
  if (!exported.is_ok()) return fail(exported.status());
  if (global.json) {
    print_json({{"model", opts.model},
                {"file", opts.output},
                {"tensors", exported->tensors},
                {"bytes", exported->bytes},
                {"own_only", opts.own_only}});
  } else {
    std::cout << "exported " << exported->tensors << " tensors (" << human_bytes(exported->bytes)
              << ") of '" << opts.model << "' to " << opts.output << '\n';
  }
  return kExitOk;
}

}  // namespace

void add_export_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  auto opts = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand("export", "Write a model's parameters to a safetensors file");
  cmd->add_option("MODEL", opts->model,
                  "The model to export (MODEL@N or MODEL@<hash prefix>: that stored version)")
      ->required();
  cmd->add_option("-o,--output", opts->output,
                  "The safetensors file to write (- for stdout; a folder with --format peft "
                  "or huggingface)")
      ->required()
      ->option_text("FILE");
  cmd->add_option("--format", opts->format,
                  "safetensors (default): scion's names; peft: a PEFT adapter folder; "
                  "huggingface: a full transformers model folder, adapters merged")
      ->check(CLI::IsMember({"safetensors", "peft", "huggingface"}));
  cmd->add_flag("--own-only", opts->own_only,
                "Only the parameters this model introduced (its adapters)");
  cmd->add_flag("--force", opts->force, "Replace FILE when it exists");
  cmd->footer(
      "The lineage (ancestry, recipe hashes, methods) goes into __metadata__.\n"
      "FILE may not be inside the store, nor a device or folder; an existing file is\n"
      "replaced only with --force.\n"
      "With --format peft, a LoRA, prompt or prefix descendant of an imported Hugging\n"
      "Face folder (a classifier, or a causal LM on GPT-2 or Llama) is written as\n"
      "adapter_config.json + adapter_model.safetensors, which PeftModel.from_pretrained\n"
      "loads (docs/hugging-face.md). A descendant of a descendant also gets DIR/base, a\n"
      "transformers model with its ancestors' LoRAs merged, which the adapter names as\n"
      "its base_model_name_or_path.\n"
      "With --format huggingface, a classifier (BERT, RoBERTa) or causal LM (GPT-2,\n"
      "Llama) of an imported Hugging Face folder is written as config.json +\n"
      "model.safetensors (LoRA merged) + tokenizer files, which transformers loads.\n"
      "Example: scion export sst2 -o sst2-adapter.safetensors --own-only\n"
      "         scion export minilm-lora --format peft -o minilm-lora-peft\n"
      "         scion export lora-products --format huggingface -o lora-products-hf");
  cmd->callback(
      [&global, &action, opts] { action = [&global, opts] { return run_export(global, *opts); }; });
}

}  // namespace scion::cli
