// SHA-256 of a file's bytes (OpenSSL EVP), as lowercase hex. Data files and imported
// checkpoints are identified by it in recipe hashes and in the lineage store.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "base/status.h"

namespace scion::spec {

// REQUIRES: path names a regular file. Streams the file; memory use is constant.
Result<std::string> sha256_file(const std::filesystem::path& path);
std::string sha256_hex(std::string_view bytes);

}  // namespace scion::spec
