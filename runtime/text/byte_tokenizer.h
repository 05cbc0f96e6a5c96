// ByteTokenizer: every byte of the UTF-8 text is one token, so any input is representable
// and there is no unknown token.
//
// Ids 0..255 are the byte values themselves; the specials follow them:
//   256 [PAD], 257 [CLS]/[BOS], 258 [SEP]/[EOS], 259 [MASK]
// so the vocabulary has byte_tokenizer_vocab_size() = 260 ids, not 256: an architecture
// using the byte tokenizer must declare vocab_size 260 (the spec loader checks it through
// text::required_vocab_size). Immutable; thread-safe.
#pragma once

#include "runtime/text/tokenizer.h"

namespace scion::text {

inline constexpr int kByteValues = 256;

// 256 byte values + 4 specials.
constexpr int byte_tokenizer_vocab_size() { return kByteValues + 4; }
static_assert(byte_tokenizer_vocab_size() == spec::kByteTokenizerVocabSize);

class ByteTokenizer final : public Tokenizer {
 public:
  ByteTokenizer();

  std::vector<std::int32_t> encode(std::string_view text) const override;
  // The bytes of the ids below 256; bytes that form no UTF-8 character become U+FFFD.
  std::string decode(const std::vector<std::int32_t>& ids) const override;
  int vocab_size() const override { return byte_tokenizer_vocab_size(); }
  const SpecialTokens& special_tokens() const override { return specials_; }

 private:
  SpecialTokens specials_;
};

}  // namespace scion::text
