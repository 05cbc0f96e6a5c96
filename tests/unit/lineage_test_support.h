// Helpers shared by the lineage unit tests: temporary store directories, tensors of
// deterministic bytes, and an Env that injects file-system faults.
#pragma once

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
// looks the same to the store: the object never gets its name).
class FaultInjectionEnv final : public Env {
 public:
  std::int64_t bytes_until_disk_full = -1;  // < 0: never
  bool fail_renames = false;

  Result<std::unique_ptr<WritableFile>> new_temporary_file(
      const std::filesystem::path& target) override {
    auto file = default_env().new_temporary_file(target);
    if (!file.is_ok()) return file.status();
    return std::unique_ptr<WritableFile>(std::make_unique<FaultyFile>(*this, std::move(*file)));
  }
  Status sync_dir(const std::filesystem::path& dir) override { return default_env().sync_dir(dir); }
  Status remove_file(const std::filesystem::path& path) override {
    return default_env().remove_file(path);
  }
  Status create_dirs(const std::filesystem::path& dir) override {
    return default_env().create_dirs(dir);
  }
  bool file_exists(const std::filesystem::path& path) override {
    return default_env().file_exists(path);
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

}  // namespace scion::lineage::testing
