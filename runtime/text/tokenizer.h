// Tokenizer: turns text into token ids and back.
//
// Every tokenizer exposes the same special ids so that batching (runtime/data/) can frame
// sequences without knowing the vocabulary: an encoder sequence is [CLS] text [SEP], a
// decoder sequence is [BOS] text [EOS]; CLS and BOS share one id, as do SEP and EOS.
// encode() never adds specials — framing is the batcher's job. A tokenizer is immutable
// after construction and safe to share across threads.
//
// Kinds: kByte (runtime/text/byte_tokenizer.h), kWordPiece (wordpiece_tokenizer.h), kBpe
// (bpe_tokenizer.h: byte-level BPE from a Hugging Face tokenizer.json).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "spec/workspace.h"

namespace scion::text {

// Ids of the special tokens. kNoToken marks a special a vocabulary does not have.
inline constexpr std::int32_t kNoToken = -1;
struct SpecialTokens {
  std::int32_t pad = kNoToken;
  std::int32_t cls = kNoToken;  // also BOS for decoders
  std::int32_t sep = kNoToken;  // also EOS for decoders
  std::int32_t mask = kNoToken;
  std::int32_t unk = kNoToken;  // kNoToken where every input is representable (bytes)

  bool is_special(std::int32_t id) const {
    return id != kNoToken && (id == pad || id == cls || id == sep || id == mask || id == unk);
  }
};

// How a sentence pair is framed: open A middle B close, as the tokenizer's post-processor
// frames a pair ([CLS] A [SEP] B [SEP] for BERT, <s> A </s></s> B </s> for RoBERTa). Token
// type 0 covers open, A and middle; B and close take `second_type` (1 for BERT; 0 for
// RoBERTa, whose models have one token type).
struct PairFraming {
  std::vector<std::int32_t> open, middle, close;
  int second_type = 1;

  std::size_t specials() const { return open.size() + middle.size() + close.size(); }
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Token ids of `text`, without special tokens.
  virtual std::vector<std::int32_t> encode(std::string_view text) const = 0;
  // Text of `ids`, valid UTF-8 (bytes that form no character print as U+FFFD); special ids
  // (pad, cls, sep, mask) are skipped, unk prints as its token ("[UNK]" for WordPiece).
  // REQUIRES: every id in [0, vocab_size()).
  virtual std::string decode(const std::vector<std::int32_t>& ids) const = 0;
  // Number of ids, specials included: the embedding table needs this many rows.
  virtual int vocab_size() const = 0;
  virtual const SpecialTokens& special_tokens() const = 0;
  // The framing of a sentence pair. This default: [CLS] A [SEP] B [SEP], B of type 1.
  virtual PairFraming pair_framing() const;
  // Words already split (token classification): appends their ids to `ids` and, per word,
  // the index in `ids` of its first sub-word to `starts`, as transformers encodes
  // is_split_into_words input. This default (bytes) puts a space token between words,
  // which starts no word.
  virtual void encode_words(std::span<const std::string> words, std::vector<std::int32_t>& ids,
                            std::vector<std::int32_t>& starts) const;
};

// The tokenizer a spec asks for. A relative vocab_file resolves against `root_dir` (the
// spec's directory). Errors: a missing or malformed vocabulary (kNotFound / kSpecError
// naming the file and line), or a BPE vocab_file that is not a tokenizer.json (kSpecError).
Result<std::unique_ptr<Tokenizer>> make_tokenizer(const spec::TokenizerSpec& spec,
                                                  const std::filesystem::path& root_dir);

// The vocabulary size a spec must declare (Architecture::vocab_size) for a tokenizer
// kind, or 0 where it depends on a vocabulary file (WordPiece, BPE).
int required_vocab_size(spec::TokenizerKind kind);

}  // namespace scion::text
