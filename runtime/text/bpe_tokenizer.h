// Byte-level BPE from a Hugging Face tokenizer.json (GPT-2, RoBERTa, Llama 3, SmolLM),
// with the ids Hugging Face `tokenizers` gives.
//
// Encoding, in `tokenizers`' order:
//   1. added tokens (specials such as <s>, <|endoftext|>, and any others the file adds)
//      are found in the raw text, leftmost and longest first, honouring lstrip/rstrip
//      (RoBERTa's <mask> takes the spaces before it) and single_word; each becomes its id;
//   2. the text between them is pre-tokenised by the file's pre_tokenizer: ByteLevel
//      (optionally adding a prefix space, optionally splitting by GPT-2's regex), Split by
//      GPT-2's or Llama 3's regex (runtime/text/byte_level.h), Digits, or a Sequence;
//   3. each piece's bytes become GPT-2's printable characters and are merged pairwise, the
//      pair of lowest merge rank first (leftmost on ties), until no pair has a rank; with
//      ignore_merges (Llama 3) a piece that is itself in the vocabulary is one token.
// Characters that are not in the vocabulary become the model's unk_token, or are dropped
// when it has none (as `tokenizers` does; byte-level vocabularies hold all 256 bytes).
// No normalizer is supported (these families have none); a file with one, or with another
// model, pre-tokeniser, BPE dropout, byte_fallback or subword prefixes, is refused naming
// the key.
//
// Special tokens: the post-processor (RobertaProcessing, TemplateProcessing, ByteLevel,
// BertProcessing or a Sequence of them) fixes what `tokenizers` puts around one text:
// RoBERTa <s> … </s>, Llama 3 <|begin_of_text|> …, GPT-2 nothing. post_process() applies
// exactly that. scion's batcher frames every sequence as [CLS/BOS] text [SEP/EOS]
// (runtime/text/tokenizer.h), so special_tokens() gives it the post-processor's opening
// and closing tokens, and where the post-processor adds none, the bos_token / eos_token
// of the tokenizer_config.json beside tokenizer.json (GPT-2: <|endoftext|> on both
// sides, the separator GPT-2 was trained with). pad and mask come from that file
// (pad_token, else the closing token; mask_token, else none).
// Immutable after load; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/text/byte_level.h"
#include "runtime/text/tokenizer.h"

namespace scion::text {

class BpeTokenizer final : public Tokenizer {
 public:
  // Errors: kNotFound (file missing), kSpecError naming the file and key of anything it
  // cannot run exactly, or a missing start/end token (see above).
  static Result<std::unique_ptr<BpeTokenizer>> load_hugging_face(
      const std::filesystem::path& tokenizer_json);

  std::vector<std::int32_t> encode(std::string_view text) const override;
  // Byte-level decoding of every id that is not a special added token; invalid UTF-8 in
  // the result becomes U+FFFD.
  std::string decode(const std::vector<std::int32_t>& ids) const override;
  int vocab_size() const override { return static_cast<int>(tokens_.size()); }
  const SpecialTokens& special_tokens() const override { return specials_; }

  // `ids` framed as the file's post-processor frames one text.
  std::vector<std::int32_t> post_process(const std::vector<std::int32_t>& ids) const;

  // One pre-tokeniser step (step 2 above).
  struct PreTokenizer {
    enum class Kind { kByteLevel, kSplit, kDigits } kind = Kind::kByteLevel;
    bool add_prefix_space = false;  // kByteLevel
    bool use_regex = true;          // kByteLevel: split by GPT-2's pattern
    SplitPattern pattern = SplitPattern::kGpt2;  // kSplit
    bool individual_digits = false;              // kDigits
  };
  struct AddedToken {
    std::string content;
    std::int32_t id = 0;
    bool lstrip = false, rstrip = false, single_word = false, special = false;
  };

 private:
  BpeTokenizer() = default;
  void encode_segment(std::string_view text, std::vector<std::int32_t>& ids) const;
  void encode_word(const std::string& word, std::vector<std::int32_t>& ids) const;

  std::vector<std::string> tokens_;                        // id -> token
  std::unordered_map<std::string, std::int32_t> ids_;      // token -> id (model vocab)
  std::unordered_map<std::uint64_t, std::pair<int, std::int32_t>> merges_;  // pair -> rank, id
  std::vector<PreTokenizer> pre_tokenizers_;
  std::vector<AddedToken> added_;       // longest first
  std::array<bool, 256> added_starts_{};  // first bytes of added tokens: where to look
  std::vector<bool> special_ids_;       // id -> a special added token (skipped by decode)
  std::vector<std::int32_t> opening_, closing_;  // the post-processor's, for one text
  std::int32_t unk_ = kNoToken;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  SpecialTokens specials_;
};

}  // namespace scion::text
