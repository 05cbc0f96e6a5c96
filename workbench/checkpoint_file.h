// The checkpoint file of an unfinished training job: where it lives, how it is written and
// read back, which files the store's checkpoint folder holds, and the one rule of whether
// a model has a checkpoint (used by the trainer, `scion plan`, the lineage views and,
// through workbench/checkpoints.h, `scion gc` and `scion fsck`).
//
// A checkpoint is <store>/checkpoints/<recipe hash>.safetensors: named by the recipe hash,
// never by the model's name, so that a name cannot name a file outside the store (the
// hash covers the name, so each model has its own file). Its safetensors __metadata__
// names the model, the recipe hash and the step (and, for a member of a share unit, its
// unit's step); the tensors are the job's (and its unit's, prefixed "share."). Every file
// operation goes through the store's lineage::Env, so a test's fault injection reaches
// checkpoints too; writes are atomic (write-temp-then-rename).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "lineage/env.h"
#include "lineage/safetensors.h"

namespace scion::workbench {

// <store_dir>/checkpoints.
std::filesystem::path checkpoints_dir(const std::filesystem::path& store_dir);
// The checkpoint of the recipe `recipe_hash`: <store_dir>/checkpoints/<recipe_hash>.safetensors.
std::filesystem::path checkpoint_path(const std::filesystem::path& store_dir,
                                      const std::string& recipe_hash);

// The one rule: a model has a checkpoint of its recipe `recipe_hash` when that recipe's
// checkpoint file exists. Whether it can be read is read_checkpoint's to say (a damaged
// checkpoint is an error to report, not a checkpoint to ignore).
bool has_checkpoint(lineage::Env& env, const std::filesystem::path& store_dir,
                    const std::string& recipe_hash);

// What a checkpoint holds besides its tensors' bytes.
struct CheckpointWrite {
  std::string model, recipe_hash;
  std::int64_t steps = 0;                           // the job's optimizer steps so far
  std::optional<std::int64_t> share_steps;          // a member of a share unit: its unit's steps
  std::vector<lineage::SafetensorsTensor> tensors;  // borrowed bytes, float32
};
// Writes the checkpoint of `checkpoint.recipe_hash` (creating the folder), atomically.
Status write_checkpoint(lineage::Env& env, const std::filesystem::path& store_dir,
                        const CheckpointWrite& checkpoint);

// A checkpoint read back.
struct Checkpoint {
  lineage::MappedSafetensors file;                           // owns the bytes `values` points into
  std::map<std::string, std::span<const std::byte>> values;  // by tensor name
  std::string model, recipe_hash;                            // from its metadata
  std::int64_t steps = 0;
  std::optional<std::int64_t> share_steps;
};
// Reads the checkpoint at `path`. Errors: the file cannot be read (kIoError, kCorruption),
// its metadata has no step, or a step count is not one (kCorruption, naming the file and
// saying what to do). Whether it is of the recipe wanted is the caller's to check.
Result<Checkpoint> read_checkpoint(lineage::Env& env, const std::filesystem::path& path);

// The model and recipe a checkpoint file's metadata names, or why it cannot say: what
// `scion gc` and `scion fsck` look at (workbench/checkpoints.h).
struct CheckpointLabel {
  std::string model, recipe_hash;  // empty when `unreadable` says why
  std::string unreadable;
};
CheckpointLabel read_checkpoint_label(lineage::Env& env, const std::filesystem::path& path);

// Every file in the checkpoint folder (temporary files of an interrupted write included);
// none when there is no folder.
Result<std::vector<std::filesystem::path>> list_checkpoint_files(
    lineage::Env& env, const std::filesystem::path& store_dir);

// Removes the checkpoint of `recipe_hash` if there is one; a leftover is harmless (the
// model it belonged to is up to date), so failing to remove it is not an error.
void remove_checkpoint(lineage::Env& env, const std::filesystem::path& store_dir,
                       const std::string& recipe_hash);

}  // namespace scion::workbench
