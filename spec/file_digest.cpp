#include "spec/file_digest.h"

#include <openssl/evp.h>

#include <fstream>
#include <memory>
#include <vector>

#include "base/regular_file.h"

namespace scion::spec {
namespace {

using DigestContext = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

std::string to_hex(const unsigned char* bytes, unsigned length) {
  static const char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned i = 0; i < length; ++i) {
    hex += kDigits[bytes[i] >> 4];
    hex += kDigits[bytes[i] & 15];
  }
  return hex;
}

std::string finish(EVP_MD_CTX* context) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned length = 0;
  EVP_DigestFinal_ex(context, digest, &length);
  return to_hex(digest, length);
}

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  DigestContext context(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr);
  EVP_DigestUpdate(context.get(), bytes.data(), bytes.size());
  return finish(context.get());
}

Result<std::string> sha256_file(const std::filesystem::path& path) {
  // Only a regular file is hashed: a fifo or device there would block the read.
  if (Status regular = check_regular_file(path, FollowLinks::kYes); !regular) return regular;
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot open '" + path.string() + "' for reading");
  DigestContext context(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr);
  std::vector<char> buffer(1 << 16);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    EVP_DigestUpdate(context.get(), buffer.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) return io_error("error while reading '" + path.string() + "'");
  return finish(context.get());
}

}  // namespace scion::spec
