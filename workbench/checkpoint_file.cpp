#include "workbench/checkpoint_file.h"

#include <fmt/format.h>

#include <charconv>

namespace scion::workbench {
namespace {

// A step count from a checkpoint's metadata; damaged text is an error naming the file.
Result<std::int64_t> checkpoint_step(const std::filesystem::path& path, const std::string& key,
                                     const std::string& text) {
  std::int64_t value = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0)
    return corruption(
        fmt::format("checkpoint {} is damaged: its metadata '{}' is '{}', not a step "
                    "count; delete it, or train without --resume",
                    path.string(), key, text));
  return value;
}

}  // namespace

std::filesystem::path checkpoints_dir(const std::filesystem::path& store_dir) {
  return store_dir / "checkpoints";
}

std::filesystem::path checkpoint_path(const std::filesystem::path& store_dir,
                                      const std::string& recipe_hash) {
  return checkpoints_dir(store_dir) / (recipe_hash + ".safetensors");
}

bool has_checkpoint(lineage::Env& env, const std::filesystem::path& store_dir,
                    const std::string& recipe_hash) {
  return env.file_exists(checkpoint_path(store_dir, recipe_hash));
}

Status write_checkpoint(lineage::Env& env, const std::filesystem::path& store_dir,
                        const CheckpointWrite& checkpoint) {
  std::map<std::string, std::string> metadata = {{"model", checkpoint.model},
                                                 {"recipe_hash", checkpoint.recipe_hash},
                                                 {"step", std::to_string(checkpoint.steps)}};
  if (checkpoint.share_steps) metadata["share_step"] = std::to_string(*checkpoint.share_steps);
  SCION_RETURN_IF_ERROR(env.create_dirs(checkpoints_dir(store_dir)));
  return lineage::write_safetensors(env, checkpoint_path(store_dir, checkpoint.recipe_hash),
                                    checkpoint.tensors, metadata);
}

Result<Checkpoint> read_checkpoint(lineage::Env& env, const std::filesystem::path& path) {
  auto file = lineage::read_safetensors(env, path);
  if (!file) return file.status();
  Checkpoint checkpoint{.file = std::move(*file)};
  const auto& meta = checkpoint.file.contents.metadata;
  const auto step = meta.find("step");
  if (step == meta.end())
    return corruption(path.string() +
                      " is not a scion checkpoint (no step in its metadata); "
                      "delete it, or train without --resume");
  if (auto model = meta.find("model"); model != meta.end()) checkpoint.model = model->second;
  if (auto recipe = meta.find("recipe_hash"); recipe != meta.end())
    checkpoint.recipe_hash = recipe->second;
  auto steps = checkpoint_step(path, "step", step->second);
  if (!steps) return steps.status();
  checkpoint.steps = *steps;
  if (auto share_step = meta.find("share_step"); share_step != meta.end()) {
    auto share_steps = checkpoint_step(path, "share_step", share_step->second);
    if (!share_steps) return share_steps.status();
    checkpoint.share_steps = *share_steps;
  }
  for (const lineage::SafetensorsTensor& t : checkpoint.file.contents.tensors)
    checkpoint.values[t.name] = t.bytes;
  return checkpoint;
}

CheckpointLabel read_checkpoint_label(lineage::Env& env, const std::filesystem::path& path) {
  auto file = lineage::read_safetensors(env, path);
  if (!file) return {.unreadable = "unreadable (" + file.status().message() + ")"};
  const auto& meta = file->contents.metadata;
  if (!meta.count("model") || !meta.count("recipe_hash"))
    return {.unreadable = "not a scion checkpoint (its metadata names no model and recipe)"};
  return {.model = meta.at("model"), .recipe_hash = meta.at("recipe_hash")};
}

Result<std::vector<std::filesystem::path>> list_checkpoint_files(
    lineage::Env& env, const std::filesystem::path& store_dir) {
  return env.list_files(checkpoints_dir(store_dir));
}

void remove_checkpoint(lineage::Env& env, const std::filesystem::path& store_dir,
                       const std::string& recipe_hash) {
  const std::filesystem::path path = checkpoint_path(store_dir, recipe_hash);
  if (env.file_exists(path)) env.remove_file(path).ignore_error();
}

}  // namespace scion::workbench
