#include "workbench/checkpoints.h"

#include <ctime>

#include "lineage/object_store.h"
#include "lineage/utc_time.h"
#include "workbench/checkpoint_file.h"

namespace scion::workbench {
namespace {

// Whether the checkpoint was written after the stored version of its recipe was made: a
// later run of the same recipe (`run --force`) wrote it, and `--resume` continues that run.
// A second of slack: stored times have milliseconds, file times may be rounded.
Result<bool> written_after_version(lineage::LineageStore& store, const CheckpointFile& checkpoint) {
  auto version = store.find_version(checkpoint.model, checkpoint.recipe_hash);
  if (!version.is_ok()) return version.status();
  if (!version->has_value()) return false;
  const auto made = lineage::parse_utc((*version)->created_at);
  auto age = store.env().seconds_since_modified(checkpoint.path);
  if (!made || !age.is_ok()) return false;
  return std::time(nullptr) - *age > *made + 1;
}

// Why `checkpoint` (its metadata read) can no longer be resumed, or "".
Result<std::string> stale_reason(lineage::LineageStore& store, const spec::Workspace* workspace,
                                 const CheckpointFile& checkpoint) {
  auto stored = store.find_model(checkpoint.model);
  if (!stored.is_ok()) return stored.status();
  if (stored->has_value() && (*stored)->recipe_hash == checkpoint.recipe_hash) {
    auto forced = written_after_version(store, checkpoint);
    if (!forced.is_ok()) return forced.status();
    if (!*forced)
      return "'" + checkpoint.model + "' finished training this recipe: its parameters are stored";
  }
  if (workspace == nullptr) return std::string();
  const spec::Model* model = workspace->find_model(checkpoint.model);
  if (model == nullptr) return "'" + checkpoint.model + "' is no longer in the spec";
  if (model->recipe_hash != checkpoint.recipe_hash)
    return "the recipe of '" + checkpoint.model + "' changed since (checkpoint of recipe " +
           checkpoint.recipe_hash.substr(0, 12) + ", now " + model->recipe_hash.substr(0, 12) + ")";
  return std::string();
}

bool older_than(lineage::Env& env, const std::filesystem::path& path, std::int64_t seconds) {
  auto age = env.seconds_since_modified(path);
  return age.is_ok() && *age >= seconds;
}

}  // namespace

Result<std::vector<CheckpointFile>> list_checkpoints(lineage::LineageStore& store,
                                                     const spec::Workspace* workspace,
                                                     std::int64_t temp_age_seconds) {
  auto files = list_checkpoint_files(store.env(), store.dir());
  if (!files.is_ok()) return files.status();
  std::vector<CheckpointFile> out;
  for (const std::filesystem::path& path : *files) {
    CheckpointFile checkpoint{.path = path};
    if (lineage::is_temporary_object_file(path)) {
      if (!older_than(store.env(), path, temp_age_seconds))
        continue;  // a checkpoint being written now
      checkpoint.stale = "a temporary file of an interrupted checkpoint write";
      out.push_back(std::move(checkpoint));
      continue;
    }
    CheckpointLabel label = read_checkpoint_label(store.env(), path);
    if (!label.unreadable.empty()) {
      checkpoint.stale = std::move(label.unreadable);
      out.push_back(std::move(checkpoint));
      continue;
    }
    checkpoint.model = std::move(label.model);
    checkpoint.recipe_hash = std::move(label.recipe_hash);
    auto reason = stale_reason(store, workspace, checkpoint);
    if (!reason.is_ok()) return reason.status();
    checkpoint.stale = std::move(*reason);
    out.push_back(std::move(checkpoint));
  }
  return out;
}

Result<std::vector<CheckpointFile>> remove_stale_checkpoints(lineage::LineageStore& store,
                                                             const spec::Workspace* workspace,
                                                             bool dry_run) {
  auto checkpoints = list_checkpoints(store, workspace);
  if (!checkpoints.is_ok()) return checkpoints.status();
  std::vector<CheckpointFile> stale;
  for (CheckpointFile& checkpoint : *checkpoints) {
    if (checkpoint.stale.empty()) continue;
    if (!dry_run) SCION_RETURN_IF_ERROR(store.env().remove_file(checkpoint.path));
    stale.push_back(std::move(checkpoint));
  }
  return stale;
}

}  // namespace scion::workbench
