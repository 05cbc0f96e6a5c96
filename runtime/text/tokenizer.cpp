#include "runtime/text/tokenizer.h"

#include "runtime/text/bpe_tokenizer.h"
#include "runtime/text/byte_tokenizer.h"
#include "runtime/text/wordpiece_tokenizer.h"

namespace scion::text {

PairFraming Tokenizer::pair_framing() const {
  const SpecialTokens& s = special_tokens();
  return {.open = {s.cls}, .middle = {s.sep}, .close = {s.sep}, .second_type = 1};
}

void Tokenizer::encode_words(std::span<const std::string> words, std::vector<std::int32_t>& ids,
                             std::vector<std::int32_t>& starts) const {
  for (std::size_t w = 0; w < words.size(); ++w) {
    if (w > 0)
      for (std::int32_t id : encode(" ")) ids.push_back(id);
    starts.push_back(static_cast<std::int32_t>(ids.size()));
    for (std::int32_t id : encode(words[w])) ids.push_back(id);
  }
}

Result<std::unique_ptr<Tokenizer>> make_tokenizer(const spec::TokenizerSpec& spec,
                                                  const std::filesystem::path& root_dir) {
  switch (spec.kind) {
    case spec::TokenizerKind::kByte:
      return std::unique_ptr<Tokenizer>(std::make_unique<ByteTokenizer>());
    case spec::TokenizerKind::kWordPiece: {
      if (spec.vocab_file.empty())
        return spec_error(
            "tokenizer.vocab_file: a WordPiece tokenizer needs a vocabulary file "
            "(vocab.txt, one token per line, or a Hugging Face tokenizer.json)");
      const std::filesystem::path file = root_dir / spec.vocab_file;
      auto loaded = file.extension() == ".json" ? WordPieceTokenizer::load_hugging_face(file)
                                                : WordPieceTokenizer::load(file);
      if (!loaded) return loaded.status();
      return std::unique_ptr<Tokenizer>(std::move(loaded).value());
    }
    case spec::TokenizerKind::kBpe: {
      const std::filesystem::path file = root_dir / spec.vocab_file;
      if (spec.vocab_file.empty() || file.extension() != ".json")
        return spec_error(
            "tokenizer.vocab_file: a BPE tokenizer needs a Hugging Face tokenizer.json "
            "(byte-level BPE: GPT-2, RoBERTa, Llama 3); merges.txt + vocab.json are not read");
      auto loaded = BpeTokenizer::load_hugging_face(file);
      if (!loaded) return loaded.status();
      return std::unique_ptr<Tokenizer>(std::move(loaded).value());
    }
  }
  return internal_error("tokenizer.kind: unknown kind");
}

int required_vocab_size(spec::TokenizerKind kind) {
  return kind == spec::TokenizerKind::kByte ? byte_tokenizer_vocab_size() : 0;
}

}  // namespace scion::text
