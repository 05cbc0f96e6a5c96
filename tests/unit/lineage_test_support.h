// Helpers shared by the lineage unit tests: temporary store directories, tensors of
// deterministic bytes, and an Env that injects file-system faults.
#pragma once

#include <csignal>

#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "lineage/env.h"
#include "lineage/records.h"

namespace scion::lineage::testing {

// A fresh directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("scion-lineage-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::vector<std::byte> random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> bytes(n);
  for (auto& b : bytes) b = static_cast<std::byte>(rng() & 0xff);
  return bytes;
}

// A parameter of `floats` F32 values over `bytes`, which the caller keeps alive.
inline ParameterWrite f32_parameter(const std::string& name, const std::vector<std::byte>& bytes,
                                    const std::string& introduced_by, bool trainable = true) {
  ParameterWrite p;
  p.name = name;
  p.dtype = DType::kF32;
  p.shape = {static_cast<std::int64_t>(bytes.size() / 4)};
  p.bytes = bytes;
  p.trainable = trainable;
  p.introduced_by = introduced_by;
  return p;
}

inline ModelRecord model_record(const std::string& name, const std::string& parent = "",
                                const std::string& recipe = "") {
  ModelRecord m;
  m.name = name;
  m.parent = parent;
  m.recipe_hash = recipe.empty() ? std::string(64, 'a') : recipe;
  return m;
}

// Forwards to the POSIX Env, failing on request: appends once `bytes_until_disk_full`
// bytes have been written (ENOSPC), or every publish (a crash between write and rename
// looks the same to the store: the object never gets its name), or the process kills
// itself (SIGKILL, as `kill -9`) instead of removing a file once `removes_until_kill`
// files have been removed.
class FaultInjectionEnv final : public Env {
 public:
  std::int64_t bytes_until_disk_full = -1;  // < 0: never
  bool fail_renames = false;
  int removes_until_kill = -1;  // < 0: never

  Result<std::unique_ptr<WritableFile>> new_temporary_file(
      const std::filesystem::path& target) override {
    auto file = default_env().new_temporary_file(target);
    if (!file.is_ok()) return file.status();
    return std::unique_ptr<WritableFile>(std::make_unique<FaultyFile>(*this, std::move(*file)));
  }
  Status sync_dir(const std::filesystem::path& dir) override { return default_env().sync_dir(dir); }
  Status remove_file(const std::filesystem::path& path) override {
    if (removes_until_kill == 0) ::raise(SIGKILL);
    if (removes_until_kill > 0) --removes_until_kill;
    return default_env().remove_file(path);
  }
  Status create_dirs(const std::filesystem::path& dir) override {
    return default_env().create_dirs(dir);
  }
  bool file_exists(const std::filesystem::path& path) override {
    return default_env().file_exists(path);
  }
  Result<std::int64_t> seconds_since_modified(const std::filesystem::path& path) override {
    return default_env().seconds_since_modified(path);
  }
  Result<std::unique_ptr<MappedRegion>> map_file(const std::filesystem::path& path) override {
    return default_env().map_file(path);
  }
  Result<std::vector<std::filesystem::path>> list_files(const std::filesystem::path& dir) override {
    return default_env().list_files(dir);
  }

 private:
  class FaultyFile final : public WritableFile {
   public:
    FaultyFile(FaultInjectionEnv& env, std::unique_ptr<WritableFile> inner)
        : env_(env), inner_(std::move(inner)) {}
    Status append(std::span<const std::byte> data) override {
      if (env_.bytes_until_disk_full >= 0) {
        if (static_cast<std::int64_t>(data.size()) > env_.bytes_until_disk_full) {
          // Write what fits, as a real full disk does, then fail.
          Status partial =
              inner_->append(data.first(static_cast<std::size_t>(env_.bytes_until_disk_full)));
          env_.bytes_until_disk_full = 0;
          if (!partial.is_ok()) return partial;
          return io_error("injected: No space left on device");
        }
        env_.bytes_until_disk_full -= static_cast<std::int64_t>(data.size());
      }
      return inner_->append(data);
    }
    Status sync() override { return inner_->sync(); }
    Status publish(const std::filesystem::path& path) override {
      if (env_.fail_renames)
        return io_error("injected crash before naming '" + path.string() + "'");
      return inner_->publish(path);
    }

   private:
    FaultInjectionEnv& env_;
    std::unique_ptr<WritableFile> inner_;
  };
};

// Turns a store of the current schema back into schema version 3 (one parameter set per
// model, no versions), keeping its models, parameters and runs, so that a test can open it
// and watch the migration. The models and parameters tables are created under their own
// names with version 1's exact text, as a store that ran the migrations has them.
// REQUIRES: foreign keys off on `db`.
inline constexpr const char* kDowngradeToVersion3 = R"sql(
CREATE TEMP TABLE models_copy AS SELECT id, name, parent_id, recipe_hash, adaptation,
  architecture, created_at, updated_at FROM models;
CREATE TEMP TABLE parameters_copy AS SELECT model_id, name, digest, dtype, shape, trainable,
  introduced_by FROM parameters;
DROP VIEW parameters;
DROP TABLE tags; DROP TABLE spec_version_members; DROP TABLE spec_versions;
DROP TABLE test_outcomes; DROP TABLE version_parameters; DROP TABLE versions;
DROP TABLE models;
CREATE TABLE models (
  id           INTEGER PRIMARY KEY,
  name         TEXT NOT NULL UNIQUE,
  parent_id    INTEGER REFERENCES models(id),
  recipe_hash  TEXT,               -- recipe of the stored parameters; NULL: none stored yet
  adaptation   TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(adaptation)),
  architecture TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(architecture)),
  created_at   TEXT NOT NULL,
  updated_at   TEXT NOT NULL
) STRICT;
CREATE INDEX models_parent ON models(parent_id);
INSERT INTO models SELECT * FROM models_copy;
CREATE TABLE parameters (
  model_id      INTEGER NOT NULL REFERENCES models(id) ON DELETE CASCADE,
  name          TEXT NOT NULL,
  digest        TEXT NOT NULL REFERENCES objects(digest),
  dtype         TEXT NOT NULL CHECK (dtype IN ('F32', 'F16', 'BF16')),
  shape         TEXT NOT NULL CHECK (json_valid(shape)),
  trainable     INTEGER NOT NULL CHECK (trainable IN (0, 1)),
  introduced_by TEXT NOT NULL,
  PRIMARY KEY (model_id, name)
) STRICT, WITHOUT ROWID;
CREATE INDEX parameters_digest ON parameters(digest);
INSERT INTO parameters SELECT * FROM parameters_copy;
DROP TABLE models_copy; DROP TABLE parameters_copy;
ALTER TABLE runs DROP COLUMN cases;
ALTER TABLE run_metrics DROP COLUMN recorded_at;
PRAGMA user_version = 3;
)sql";

}  // namespace scion::lineage::testing
