// ObjectStore: the objects/ directory of a store, holding large tensors as files named
// by the SHA-256 of their bytes: objects/ab/cdef... (first two hex digits as a folder).
//
// An object file appears under its final name only complete and fsynced (written to a
// temporary name, renamed, directory fsynced), so a crash leaves at most a temporary
// file or an unreferenced object, never a partial one. Which objects a model uses is
// recorded in lineage.db; this class only knows files. Thread-compatible; the Env must
// outlive it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lineage/env.h"

namespace scion::lineage {

class ObjectStore {
 public:
  ObjectStore(Env& env, std::filesystem::path dir) : env_(env), dir_(std::move(dir)) {}

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path path_for(const std::string& digest) const;
  bool contains(const std::string& digest) const;

  // Stores `bytes` under `digest` unless an object of that name already exists.
  // REQUIRES: digest == sha256_hex(bytes)
  Status put(const std::string& digest, std::span<const std::byte> bytes);
  // The object's bytes, memory-mapped; not verified (see verify()).
  Result<std::unique_ptr<MappedRegion>> map(const std::string& digest) const;
  Status remove(const std::string& digest);

  struct Listing {
    std::vector<std::string> digests;                // well-named object files
    std::vector<std::filesystem::path> temporaries;  // left by interrupted writes
    std::vector<std::filesystem::path> strays;       // anything else
  };
  Result<Listing> list() const;

 private:
  Env& env_;
  std::filesystem::path dir_;
};

// True when `path` is a temporary file left by write_file_atomically.
bool is_temporary_object_file(const std::filesystem::path& path);

}  // namespace scion::lineage
