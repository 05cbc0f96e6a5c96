// workbench/checkpoint_file.h: a checkpoint written and read back through the store's Env
// (so a full disk or a crash before the rename reaches it), the one "has a checkpoint"
// rule, listing, labels and removal.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <optional>

#include "lineage/store.h"
#include "lineage_test_support.h"
#include "workbench/checkpoint_file.h"

using namespace scion;

namespace {

const std::string kRecipe(64, 'c');

// A checkpoint of `kRecipe` with one tensor of three floats; `values` keeps the bytes.
// REQUIRES: `values` outlives the result, whose tensor borrows their bytes.
workbench::CheckpointWrite checkpoint_of(const std::vector<float>& values,
                                         std::optional<std::int64_t> share_steps = {}) {
  workbench::CheckpointWrite checkpoint{
      .model = "lora", .recipe_hash = kRecipe, .steps = 7, .share_steps = share_steps};
  checkpoint.tensors.push_back({"lora.q.a",
                                lineage::DType::kF32,
                                {static_cast<std::int64_t>(values.size())},
                                std::as_bytes(std::span<const float>(values))});
  return checkpoint;
}

}  // namespace

TEST_CASE("a checkpoint is written, found, read back and removed", "[workbench]") {
  lineage::testing::TempDir dir;
  lineage::testing::FaultInjectionEnv env;
  const std::vector<float> values = {1.5f, -2.0f, 0.25f};
  CHECK_FALSE(workbench::has_checkpoint(env, dir.path(), kRecipe));
  REQUIRE(workbench::list_checkpoint_files(env, dir.path()).value().empty());

  REQUIRE(workbench::write_checkpoint(env, dir.path(), checkpoint_of(values, 3)).is_ok());
  CHECK(workbench::has_checkpoint(env, dir.path(), kRecipe));
  CHECK_FALSE(workbench::has_checkpoint(env, dir.path(), std::string(64, 'd')));
  const auto files = workbench::list_checkpoint_files(env, dir.path());
  REQUIRE(files.is_ok());
  CHECK(*files ==
        std::vector<std::filesystem::path>{workbench::checkpoint_path(dir.path(), kRecipe)});

  auto read = workbench::read_checkpoint(env, workbench::checkpoint_path(dir.path(), kRecipe));
  REQUIRE(read.is_ok());
  CHECK(read->model == "lora");
  CHECK(read->recipe_hash == kRecipe);
  CHECK(read->steps == 7);
  CHECK(read->share_steps == std::optional<std::int64_t>(3));
  REQUIRE(read->values.count("lora.q.a") == 1);
  const std::span<const std::byte> bytes = read->values.at("lora.q.a");
  REQUIRE(bytes.size() == values.size() * sizeof(float));
  CHECK(std::memcmp(bytes.data(), values.data(), bytes.size()) == 0);

  const workbench::CheckpointLabel label =
      workbench::read_checkpoint_label(env, workbench::checkpoint_path(dir.path(), kRecipe));
  CHECK(label.unreadable.empty());
  CHECK(label.model == "lora");
  CHECK(label.recipe_hash == kRecipe);

  workbench::remove_checkpoint(env, dir.path(), kRecipe);
  CHECK_FALSE(workbench::has_checkpoint(env, dir.path(), kRecipe));
  workbench::remove_checkpoint(env, dir.path(), kRecipe);  // none left: no error either
}

TEST_CASE("a checkpoint write that fails leaves no checkpoint", "[workbench]") {
  lineage::testing::TempDir dir;
  const std::vector<float> values = {1, 2, 3};
  SECTION("the disk fills up") {
    lineage::testing::FaultInjectionEnv env;
    env.bytes_until_disk_full = 10;
    const Status written = workbench::write_checkpoint(env, dir.path(), checkpoint_of(values));
    CHECK(written.code() == StatusCode::kIoError);
    CHECK_FALSE(workbench::has_checkpoint(env, dir.path(), kRecipe));
  }
  SECTION("the process dies before the rename") {
    lineage::testing::FaultInjectionEnv env;
    env.fail_renames = true;
    CHECK_FALSE(workbench::write_checkpoint(env, dir.path(), checkpoint_of(values)).is_ok());
    CHECK_FALSE(workbench::has_checkpoint(env, dir.path(), kRecipe));
  }
  SECTION("an earlier checkpoint survives a failed overwrite whole") {
    lineage::testing::FaultInjectionEnv env;
    REQUIRE(workbench::write_checkpoint(env, dir.path(), checkpoint_of(values)).is_ok());
    env.fail_renames = true;
    const std::vector<float> later_values = {9, 9, 9};  // outlives `later`, which borrows it
    workbench::CheckpointWrite later = checkpoint_of(later_values);
    later.steps = 8;
    CHECK_FALSE(workbench::write_checkpoint(env, dir.path(), later).is_ok());
    auto read = workbench::read_checkpoint(env, workbench::checkpoint_path(dir.path(), kRecipe));
    REQUIRE(read.is_ok());
    CHECK(read->steps == 7);
  }
}

TEST_CASE("a damaged checkpoint is an error that says what to do", "[workbench]") {
  lineage::testing::TempDir dir;
  lineage::testing::FaultInjectionEnv env;
  const std::filesystem::path path = workbench::checkpoint_path(dir.path(), kRecipe);
  const std::vector<float> values = {1, 2, 3};
  const std::vector<lineage::SafetensorsTensor> tensors = {
      {"x", lineage::DType::kF32, {3}, std::as_bytes(std::span<const float>(values))}};
  REQUIRE(env.create_dirs(workbench::checkpoints_dir(dir.path())).is_ok());

  SECTION("a step that is not a count") {
    REQUIRE(lineage::write_safetensors(
                env, path, tensors, {{"model", "lora"}, {"recipe_hash", kRecipe}, {"step", "7x"}})
                .is_ok());
    auto read = workbench::read_checkpoint(env, path);
    CHECK(read.status().code() == StatusCode::kCorruption);
    CHECK_THAT(read.status().message(),
               Catch::Contains("'step' is '7x'") &&
                   Catch::Contains("delete it, or train without --resume"));
  }
  SECTION("no step at all") {
    REQUIRE(lineage::write_safetensors(env, path, tensors, {{"model", "lora"}}).is_ok());
    CHECK(workbench::read_checkpoint(env, path).status().code() == StatusCode::kCorruption);
    CHECK_THAT(workbench::read_checkpoint_label(env, path).unreadable,
               Catch::Contains("not a scion checkpoint"));
  }
  SECTION("not a safetensors file") {
    REQUIRE(env.create_dirs(path.parent_path()).is_ok());
    std::FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    std::fputs("garbage", f);
    std::fclose(f);
    CHECK_FALSE(workbench::read_checkpoint(env, path).is_ok());
    CHECK_THAT(workbench::read_checkpoint_label(env, path).unreadable,
               Catch::StartsWith("unreadable"));
    // The rule is the file's existence: a damaged checkpoint is reported, not ignored.
    CHECK(workbench::has_checkpoint(env, dir.path(), kRecipe));
  }
}
