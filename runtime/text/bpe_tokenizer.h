// BPE from a Hugging Face tokenizer.json, with the ids Hugging Face `tokenizers` gives:
// byte-level BPE (GPT-2, RoBERTa, Llama 3, SmolLM) and SentencePiece-style BPE with byte
// fallback (Llama 2, TinyLlama, Mistral).
//
// Encoding, in `tokenizers`' order:
//   1. added tokens (specials such as <s>, <|endoftext|>, and any others the file adds)
//      are found in the raw text, leftmost and longest first, honouring lstrip/rstrip
//      (RoBERTa's <mask> takes the spaces before it) and single_word; each becomes its id;
//   2. the text between them is normalised (SentencePiece-style files: Prepend "▁" and
//      Replace " " by "▁", or a Sequence of them) and pre-tokenised by the file's
//      pre_tokenizer: ByteLevel (optionally adding a prefix space, optionally splitting by
//      GPT-2's regex), Split by GPT-2's or Llama 3's regex (runtime/text/byte_level.h),
//      Digits, Metaspace (spaces to "▁", a "▁" before the first word), or a Sequence;
//   3. with a ByteLevel pre-tokeniser each piece's bytes become GPT-2's printable
//      characters; the characters are merged pairwise, the pair of lowest merge rank first
//      (leftmost on ties), until no pair has a rank; with ignore_merges (Llama 3) a piece
//      that is itself in the vocabulary is one token.
// A character that is not in the vocabulary becomes its UTF-8 bytes as <0xXX> tokens with
// byte_fallback, else the model's unk_token (consecutive ones fused with fuse_unk), or is
// dropped when there is none (as `tokenizers` does; byte-level vocabularies hold all 256
// bytes). A file with another model, normaliser, pre-tokeniser or decoder, BPE dropout or
// subword prefixes is refused naming the key.
//
// Decoding runs the file's decoder: ByteLevel, or a Sequence of Metaspace, Replace,
// ByteFallback, Fuse and Strip, as `tokenizers` does.
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

#include "base/json_value.h"
#include "runtime/text/added_token_matcher.h"
#include "runtime/text/byte_level.h"
#include "runtime/text/tokenizer.h"

namespace scion::text {

class BpeTokenizer final : public Tokenizer {
 public:
  // Errors: kNotFound (file missing), kSpecError naming the file and key of anything it
  // cannot run exactly, or a missing start/end token (see above).
  static Result<std::unique_ptr<BpeTokenizer>> load_hugging_face(
      const std::filesystem::path& tokenizer_json);
  // The same from the texts of tokenizer.json and tokenizer_config.json (empty: none), each
  // named in messages by its file name.
  static Result<std::unique_ptr<BpeTokenizer>> parse_hugging_face(std::string_view text,
                                                                  const std::string& file,
                                                                  std::string_view config_text,
                                                                  const std::string& config_file);

  std::vector<std::int32_t> encode(std::string_view text) const override;
  // The file's decoder applied to every id that is not a special added token; invalid
  // UTF-8 in the result becomes U+FFFD.
  std::string decode(const std::vector<std::int32_t>& ids) const override;
  int vocab_size() const override { return static_cast<int>(tokens_.size()); }
  const SpecialTokens& special_tokens() const override { return specials_; }
  // The post-processor's pair: RobertaProcessing's <s> A </s></s> B </s> (one token type),
  // BertProcessing's, or a TemplateProcessing's `pair`; without one, A and B each closed
  // by the end token after the start token, one token type.
  PairFraming pair_framing() const override { return pair_; }
  // Each word with a space before it, as transformers encodes words with
  // add_prefix_space=True (which is_split_into_words asks of byte-level BPE).
  void encode_words(std::span<const std::string> words, std::vector<std::int32_t>& ids,
                    std::vector<std::int32_t>& starts) const override;

  // `ids` framed as the file's post-processor frames one text.
  std::vector<std::int32_t> post_process(const std::vector<std::int32_t>& ids) const;

  // "<0x0A>": SentencePiece's token for a byte.
  static std::string byte_token(unsigned char byte);

  // One normaliser step (step 2 above).
  struct Normalizer {
    enum class Kind { kPrepend, kReplace } kind = Kind::kPrepend;
    std::string pattern;  // kReplace: the literal text replaced
    std::string content;  // what is prepended, or the replacement
  };
  // One pre-tokeniser step (step 2 above).
  struct PreTokenizer {
    enum class Kind { kByteLevel, kSplit, kDigits, kMetaspace } kind = Kind::kByteLevel;
    bool add_prefix_space = false;               // kByteLevel
    bool use_regex = true;                       // kByteLevel: split by GPT-2's pattern
    SplitPattern pattern = SplitPattern::kGpt2;  // kSplit
    bool individual_digits = false;              // kDigits
    // kMetaspace: spaces become `replacement`; it is put before a piece that lacks it
    // always, never, or only before the text's first piece; split: each piece starts at
    // a replacement.
    enum class Prepend { kAlways, kFirst, kNever } prepend = Prepend::kAlways;
    std::string replacement = "\xE2\x96\x81";  // "▁"
    bool split = true;
  };
  // One decoder step.
  struct Decoder {
    enum class Kind {
      kByteLevel,
      kMetaspace,
      kReplace,
      kByteFallback,
      kFuse,
      kStrip
    } kind = Kind::kByteLevel;
    std::string pattern, content;  // kReplace; kMetaspace: pattern is the replacement
    bool drop_first = true;        // kMetaspace: the first token loses its replacements
    int start = 0, stop = 0;       // kStrip: `content` characters cut from each end
  };
  struct AddedToken {
    std::string content;
    std::int32_t id = 0;
    bool lstrip = false, rstrip = false, single_word = false, special = false;
  };

 private:
  BpeTokenizer() = default;
  // `at_start`: the segment begins the text (Metaspace's prepend_scheme "first").
  void encode_segment(std::string_view text, bool at_start, std::vector<std::int32_t>& ids) const;
  std::vector<std::string> pre_tokenize(std::string text, bool at_start) const;
  void encode_word(const std::string& word, std::vector<std::int32_t>& ids) const;
  // Parts of load_hugging_face: normalizer, pre_tokenizer, decoder and post_processor;
  // model.vocab with added_tokens; model.merges; the framing tokens (tokenizer_config.json).
  Status read_components(const JsonValue& root);
  Status read_vocabulary(const JsonValue& root, const JsonValue& model);
  Status read_merges(const JsonValue& model);
  Status set_specials(const std::string& file, std::string_view config_text,
                      const std::string& config_file);
  // Appends the <0xXX> tokens of `character`'s bytes; false when one is missing.
  bool push_bytes(std::string_view character, std::vector<std::int32_t>& symbols) const;

  std::vector<std::string> tokens_;                    // id -> token
  std::unordered_map<std::string, std::int32_t> ids_;  // token -> id (model vocab)
  std::unordered_map<std::uint64_t, std::pair<int, std::int32_t>> merges_;  // pair -> rank, id
  std::vector<Normalizer> normalizers_;
  std::vector<PreTokenizer> pre_tokenizers_;
  std::vector<Decoder> decoders_;
  bool byte_level_ = true;                // a ByteLevel pre-tokeniser maps bytes to characters
  bool byte_fallback_ = false;            // unknown characters as <0xXX> byte tokens
  std::vector<AddedToken> added_;         // in the file's order
  AddedTokenMatcher added_matcher_;       // finds added_ by index
  std::vector<bool> special_ids_;         // id -> a special added token (skipped by decode)
  std::vector<std::int32_t> opening_, closing_;  // the post-processor's, for one text
  PairFraming pair_;
  std::int32_t unk_ = kNoToken;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  SpecialTokens specials_;
};

}  // namespace scion::text
