#include "cli/cmd_lineage_support.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>

#include "cli/exit_codes.h"
#include "cli/output.h"
#include "lineage/safetensors.h"
#include "lineage/spec_records.h"
#include "runtime/memory_info.h"

namespace scion::cli {

Result<std::unique_ptr<lineage::LineageStore>> open_store(const GlobalOptions& global,
                                                          bool create) {
  lineage::StoreOptions options;
  options.create = create;
  auto store = lineage::LineageStore::open(global.store_path(), options);
  if (store.is_ok() && global.verbosity >= 0) {
    for (const lineage::RunRecord& run : (*store)->abandoned_on_open())
      print_note("run " + std::to_string(run.id) + " of '" + run.model + "' is now marked " +
                 "abandoned: its process (pid " + std::to_string(run.pid.value_or(0)) +
                 ") is gone without having recorded how the run ended");
  }
  return store;
}

Result<std::unique_ptr<lineage::LineageStore>> open_store_read_only(const GlobalOptions& global) {
  lineage::StoreOptions options;
  options.create = false;
  options.read_only = true;
  return lineage::LineageStore::open(global.store_path(), options);
}

int fail(const Status& status) {
  print_error(status);
  return exit_code_for(status);
}

std::string human_bytes(std::int64_t bytes) { return runtime::memory_size(bytes); }

std::string human_duration(double seconds) {
  char text[32];
  if (seconds < 60) {
    std::snprintf(text, sizeof text, "%.1f s", seconds);
  } else if (seconds < 3600) {
    const int s = static_cast<int>(seconds);
    std::snprintf(text, sizeof text, "%dm%02ds", s / 60, s % 60);
  } else {
    const int m = static_cast<int>(seconds / 60);
    std::snprintf(text, sizeof text, "%dh%02dm", m / 60, m % 60);
  }
  return text;
}

nlohmann::json run_to_json(const lineage::RunRecord& r) {
  nlohmann::json out = {{"run", r.id},
                        {"model", r.model},
                        {"kind", lineage::run_kind_name(r.kind)},
                        {"status", lineage::run_status_name(r.status)},
                        {"recipe_hash", r.recipe_hash},
                        {"started_at", r.started_at},
                        {"duration_s", r.duration_s},
                        {"seed", r.seed},
                        {"host", r.host},
                        {"scion_version", r.scion_version},
                        {"hyperparameters", r.hyperparameters},
                        {"steps", r.steps},
                        {"message", r.message}};
  out["finished_at"] = r.finished_at ? nlohmann::json(*r.finished_at) : nlohmann::json();
  out["dataset_digest"] = r.dataset_digest ? nlohmann::json(*r.dataset_digest) : nlohmann::json();
  out["final_loss"] = r.final_loss ? nlohmann::json(*r.final_loss) : nlohmann::json();
  out["pid"] = r.pid ? nlohmann::json(*r.pid) : nlohmann::json();
  return out;
}

nlohmann::json stored_model_to_json(const lineage::StoredModel& m) {
  nlohmann::json out = {{"model", m.name},
                        {"adaptation", m.adaptation},
                        {"architecture", m.architecture},
                        {"created_at", m.created_at},
                        {"updated_at", m.updated_at},
                        {"parameters", m.parameter_count},
                        {"own_parameters", m.own_count},
                        {"shared_with_parent", m.shared_with_parent}};
  out["parent"] = m.parent.empty() ? nlohmann::json() : nlohmann::json(m.parent);
  out["recipe_hash"] = m.recipe_hash ? nlohmann::json(*m.recipe_hash) : nlohmann::json();
  return out;
}

namespace {

// Whether <store>/checkpoints holds a checkpoint of `model` for `recipe_hash`: its metadata
// names them (the file name is the trainer's business).
bool has_checkpoint(lineage::LineageStore& store, const std::string& model,
                    const std::string& recipe_hash) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(store.dir() / "checkpoints", ec)) {
    auto file = lineage::read_safetensors(store.env(), entry.path());
    if (!file.is_ok()) continue;  // not a checkpoint; fsck reports strays
    const auto& meta = file->contents.metadata;
    const auto named = meta.find("model"), recipe = meta.find("recipe_hash");
    if (named != meta.end() && named->second == model && recipe != meta.end() &&
        recipe->second == recipe_hash)
      return true;
  }
  return false;
}

bool is_training(lineage::RunKind kind) {
  return kind == lineage::RunKind::kTrain || kind == lineage::RunKind::kAdapt;
}

// "interrupted at step N, resumable" for a model whose newest training run was
// interrupted; `otherwise` when it was not.
std::string interrupted_or(const ModelHistory& history, const std::string& otherwise) {
  if (!history.interrupted_at) return otherwise;
  return "interrupted at step " + std::to_string(*history.interrupted_at) +
         (history.resumable ? ", resumable" : "");
}

}  // namespace

Result<ModelHistory> model_history(lineage::LineageStore& store, const lineage::StoredModel& model,
                                   const std::string& recipe_hash) {
  auto runs = store.runs(model.name, 0);
  if (!runs.is_ok()) return runs.status();
  ModelHistory history;
  for (const lineage::RunRecord& run : *runs) {  // newest first
    if (model.recipe_hash && run.status == lineage::RunStatus::kFinished &&
        run.recipe_hash == *model.recipe_hash &&
        (is_training(run.kind) || run.kind == lineage::RunKind::kImport)) {
      history.imported = run.kind == lineage::RunKind::kImport;
      break;
    }
  }
  for (const lineage::RunRecord& run : *runs) {
    if (!is_training(run.kind) && run.kind != lineage::RunKind::kImport) continue;
    if (run.status == lineage::RunStatus::kInterrupted &&
        (recipe_hash.empty() || run.recipe_hash == recipe_hash)) {
      history.interrupted_at = run.steps;
      history.resumable = has_checkpoint(store, model.name, run.recipe_hash);
    }
    break;  // only the newest training run tells
  }
  return history;
}

std::vector<FamilyNode> family(const std::vector<lineage::StoredModel>& stored,
                               const spec::Workspace* workspace,
                               const std::map<std::string, ModelHistory>& histories) {
  std::map<std::string, FamilyNode> nodes;
  for (const lineage::StoredModel& m : stored) {
    FamilyNode& node = nodes[m.name];
    node.name = m.name;
    node.parent = m.parent;
    node.method = lineage::method_label(m.adaptation);
    node.stored = m;
    if (auto it = histories.find(m.name); it != histories.end()) node.history = it->second;
    const std::string made = node.history.imported ? "imported" : "trained";
    node.status = !m.recipe_hash ? interrupted_or(node.history, "not trained")
                  : workspace    ? "not in spec"
                                 : made;
  }
  if (workspace != nullptr) {
    for (const spec::Model& m : workspace->models) {
      FamilyNode& node = nodes[m.name];
      node.name = m.name;
      node.parent = m.from;
      node.method = lineage::method_label(lineage::adaptation_json(m.adaptation));
      if (!node.stored || !node.stored->recipe_hash) {
        node.status = interrupted_or(node.history, "not trained");
      } else if (*node.stored->recipe_hash == m.recipe_hash) {
        node.status = node.history.imported ? "imported" : "trained";
      } else {
        node.status = interrupted_or(node.history, "out of date");
      }
    }
  }
  std::vector<FamilyNode> ordered;
  std::function<void(const std::string&)> visit = [&](const std::string& parent) {
    for (auto& [name, node] : nodes) {
      if (node.parent == parent) {
        ordered.push_back(node);
        visit(name);
      }
    }
  };
  visit("");
  return ordered;
}

}  // namespace scion::cli
