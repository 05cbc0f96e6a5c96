// libFuzzer target: any bytes as a Hugging Face tokenizer.json, read by both readers
// (WordPiece and BPE), must give a tokenizer or a spec error, never an exception or a
// crash; a tokenizer that loads must encode and decode texts (added tokens, merges, byte
// fallback) with every id inside its vocabulary. An input may carry a tokenizer_config.json
// after a NUL byte (JSON text holds none), which the BPE reader takes as the file beside it.
// Seeds: the real all-MiniLM-L6-v2 tokenizer.json, the fixtures' WordPiece and BPE files,
// and their type-confused variants (tests/fuzz/make_json_corpora.py); docs/fuzzing.md.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/text/bpe_tokenizer.h"
#include "runtime/text/wordpiece_tokenizer.h"

namespace {

// Texts that reach added tokens, subwords, punctuation, CJK, bytes and spaces.
const char* const kTexts[] = {
    "Hello, world! [CLS] unaffable [MASK] don't",
    "<s>caf\xC3\xA9  \xE4\xBD\xA0\xE5\xA5\xBD</s> <|endoftext|> 12345\n\t",
    "\xF0\x9F\x98\x80 \xFF\xFE broken utf-8 <mask> <unk>",
};

void exercise(const scion::text::Tokenizer& tok) {
  for (const char* text : kTexts) {
    const std::vector<std::int32_t> ids = tok.encode(text);
    for (std::int32_t id : ids)
      if (id < 0 || id >= tok.vocab_size()) std::abort();
    (void)tok.decode(ids);
  }
}

void check_error(const scion::Status& status) {
  if (status.code() != scion::StatusCode::kSpecError || status.message().empty()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string_view text = input.substr(0, nul);
  const std::string_view config = nul == std::string_view::npos ? "" : input.substr(nul + 1);

  auto wordpiece = scion::text::WordPieceTokenizer::parse_hugging_face(text, "tokenizer.json");
  if (wordpiece)
    exercise(**wordpiece);
  else
    check_error(wordpiece.status());
  auto bpe = scion::text::BpeTokenizer::parse_hugging_face(text, "tokenizer.json", config,
                                                           "tokenizer_config.json");
  if (bpe)
    exercise(**bpe);
  else
    check_error(bpe.status());
  return 0;
}
