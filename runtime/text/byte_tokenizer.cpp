#include "runtime/text/byte_tokenizer.h"

#include <cassert>

#include "runtime/text/lossy_utf8.h"

namespace scion::text {

ByteTokenizer::ByteTokenizer() {
  specials_.pad = kByteValues;
  specials_.cls = kByteValues + 1;
  specials_.sep = kByteValues + 2;
  specials_.mask = kByteValues + 3;
}

std::vector<std::int32_t> ByteTokenizer::encode(std::string_view text) const {
  std::vector<std::int32_t> ids;
  ids.reserve(text.size());
  // Through unsigned char: a plain char is signed on x86 and would give negative ids.
  for (char c : text) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<std::int32_t>& ids) const {
  std::string bytes;
  bytes.reserve(ids.size());
  for (std::int32_t id : ids) {
    assert(id >= 0 && id < vocab_size());
    if (id < kByteValues) bytes.push_back(static_cast<char>(id));
  }
  return lossy_utf8(bytes);
}

}  // namespace scion::text
