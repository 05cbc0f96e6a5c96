// BPE from tokenizer.json against ids `tokenizers` produced once
// (tests/python/make_hf_bpe_fixtures.py; checked in, so no Python runs here): GPT-2,
// RoBERTa, Llama 3 and SmolLM styles of byte-level pre-tokeniser and post-processor (and
// ByteLevel's add_prefix_space), and SentencePiece-style BPE with byte fallback (Llama 2's
// normaliser, and Metaspace), on a corpus of
// accents, emoji, CJK, long words, whitespace runs, URLs, numbers and contractions.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/text/bpe_tokenizer.h"
#include "runtime/text/byte_level.h"
#include "tests/unit/hf_fixtures.h"
#include "tests/unit/lineage_test_support.h"

using namespace scion;
using namespace scion::test;
namespace fs = std::filesystem;

namespace {

std::unique_ptr<text::BpeTokenizer> load(const fs::path& file) {
  auto loaded = text::BpeTokenizer::load_hugging_face(file);
  INFO(file.string() << ": " << (loaded.is_ok() ? "" : loaded.status().message()));
  REQUIRE(loaded.is_ok());
  return std::move(loaded).value();
}

Status refusal(const std::string& tokenizer_json) {
  lineage::testing::TempDir dir;
  std::ofstream(dir.path() / "tokenizer.json") << tokenizer_json;
  auto loaded = text::BpeTokenizer::load_hugging_face(dir.path() / "tokenizer.json");
  REQUIRE_FALSE(loaded.is_ok());
  return loaded.status();
}

}  // namespace

TEST_CASE("byte-level BPE gives the ids of Hugging Face tokenizers", "[bpe]") {
  const nlohmann::json golden = read_json(kFixtures / "bpe-golden.json");
  const auto texts = golden["texts"].get<std::vector<std::string>>();
  REQUIRE(golden["tokenizers"].size() == 7);
  for (const auto& [name, expected] : golden["tokenizers"].items()) {
    const auto tok = load(kFixtures / name / "tokenizer.json");
    for (std::size_t i = 0; i < texts.size(); ++i) {
      INFO(name << ": \"" << texts[i] << "\"");
      const std::vector<std::int32_t> ids = tok->encode(texts[i]);
      CHECK(ids == expected["plain"][i].get<std::vector<std::int32_t>>());
      CHECK(tok->post_process(ids) == expected["framed"][i].get<std::vector<std::int32_t>>());
      CHECK(tok->decode(ids) == expected["decoded"][i].get<std::string>());
    }
  }
}

TEST_CASE("BPE special tokens follow the post-processor, then tokenizer_config.json", "[bpe]") {
  const auto roberta = load(kFixtures / "bpe-roberta/tokenizer.json");
  const text::SpecialTokens& r = roberta->special_tokens();
  CHECK(r.cls == 0);  // <s>, from RobertaProcessing
  CHECK(r.sep == 2);  // </s>
  CHECK(r.pad == 1);  // <pad>, from tokenizer_config.json
  CHECK(r.mask == 420);
  CHECK(roberta->vocab_size() == 421);  // the added <mask> after the model's vocabulary
  // <mask> strips the spaces before it (lstrip), as RoBERTa's does.
  CHECK(roberta->encode("a <mask>") == roberta->encode("a<mask>"));

  const auto gpt2 = load(kFixtures / "bpe-gpt2/tokenizer.json");
  CHECK(gpt2->post_process({5}) == std::vector<std::int32_t>{5});  // GPT-2 adds nothing
  CHECK(gpt2->special_tokens().cls == 0);  // <|endoftext|> from tokenizer_config.json
  CHECK(gpt2->special_tokens().sep == 0);
  CHECK(gpt2->special_tokens().mask == text::kNoToken);

  const auto llama = load(kFixtures / "bpe-llama3/tokenizer.json");
  CHECK(llama->post_process({5}) == std::vector<std::int32_t>{0, 5});  // BOS only
  CHECK(llama->special_tokens().sep == 1);  // <|end_of_text|>, the config's eos_token
}

TEST_CASE("the split patterns cut text as the regular expressions do", "[bpe]") {
  using text::SplitPattern;
  auto split = [](std::string_view s, SplitPattern p) {
    std::vector<std::string> out;
    for (std::string_view v : text::split_by_pattern(s, p)) out.emplace_back(v);
    return out;
  };
  CHECK(split("don't  stop\n", SplitPattern::kGpt2) ==
        std::vector<std::string>{"don", "'t", " ", " stop", "\n"});
  CHECK(split("I'M 12345 ok\n\nx", SplitPattern::kLlama3) ==
        std::vector<std::string>{"I", "'M", " ", "123", "45", " ok", "\n\n", "x"});
  CHECK(text::byte_to_unicode(' ') == "\xC4\xA0");  // "Ġ"
  CHECK(text::byte_level_decode(text::byte_level_encode("caf\xC3\xA9 \n")) == "caf\xC3\xA9 \n");
  CHECK(text::BpeTokenizer::byte_token(0x0A) == "<0x0A>");
}

TEST_CASE("a tokenizer.json the byte-level BPE cannot run exactly is refused, naming the key",
          "[bpe]") {
  const std::string vocab = R"("vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"])";
  CHECK(refusal(R"({"model": {"type": "WordPiece"}})").message().find("model.type is WordPiece") !=
        std::string::npos);
  CHECK(refusal(R"({"model": {"type": "BPE", )" + vocab + R"(}, "normalizer": {"type": "NFC"}})")
            .message()
            .find("normalizer.type is NFC") != std::string::npos);
  CHECK(refusal(R"({"model": {"type": "BPE", )" + vocab +
                R"(}, "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}})")
            .message()
            .find("pre_tokenizer.type is Whitespace") != std::string::npos);
  CHECK(refusal(R"({"model": {"type": "BPE", )" + vocab +
                R"(}, "pre_tokenizer": {"type": "ByteLevel"}, "decoder": {"type": "WordPiece"}})")
            .message()
            .find("decoder.type is WordPiece") != std::string::npos);
  CHECK(refusal(R"({"model": {"type": "BPE", )" + vocab +
                R"(}, "normalizer": null, "pre_tokenizer": {"type": "Split", "pattern": )"
                R"({"Regex": "\\d+"}, "behavior": "Isolated", "invert": false}})")
            .message()
            .find("pre_tokenizer.pattern") != std::string::npos);
  CHECK(refusal(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]},)"
                R"( "normalizer": null, "pre_tokenizer": {"type": "ByteLevel"}})")
            .message()
            .find("model.merges[0]") != std::string::npos);
  // No post-processor framing and no tokenizer_config.json: nothing to frame with.
  CHECK(refusal(R"({"model": {"type": "BPE", )" + vocab +
                R"(}, "normalizer": null, "pre_tokenizer": {"type": "ByteLevel"}})")
            .message()
            .find("no start token") != std::string::npos);
}
