// SHA-256 digests of tensor bytes, the identity of every object in the store.
// Digests are 64 lowercase hex characters. Functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace scion::lineage {

// Lowercase hex SHA-256 of `bytes` (OpenSSL EVP).
std::string sha256_hex(std::span<const std::byte> bytes);

// True when `text` has the form of a digest (64 lowercase hex characters).
bool is_digest(std::string_view text);

}  // namespace scion::lineage
