#include <catch2/catch.hpp>

#include "runtime/text/byte_tokenizer.h"
#include "runtime/text/wordpiece_tokenizer.h"
#include "tests/unit/data_test_files.h"

using namespace scion;
using text::ByteTokenizer;
using text::WordPieceTokenizer;

TEST_CASE("byte tokenizer: ids are byte values, specials follow them", "[data][tokenizer]") {
  ByteTokenizer tok;
  CHECK(tok.vocab_size() == 260);
  CHECK(text::byte_tokenizer_vocab_size() == 260);
  CHECK(text::required_vocab_size(spec::TokenizerKind::kByte) == 260);
  const text::SpecialTokens& s = tok.special_tokens();
  CHECK(s.pad == 256);
  CHECK(s.cls == 257);
  CHECK(s.sep == 258);
  CHECK(s.mask == 259);
  CHECK(s.unk == text::kNoToken);

  // "é" is two UTF-8 bytes, 0xC3 0xA9: both must come out as ids above 127, not negative.
  CHECK(tok.encode("Hi \xC3\xA9") == std::vector<std::int32_t>{72, 105, 32, 0xC3, 0xA9});
  CHECK(tok.encode("").empty());
}

TEST_CASE("byte tokenizer: decode inverts encode and skips specials", "[data][tokenizer]") {
  ByteTokenizer tok;
  const std::string text = "a \"quoted\"\n\tline \xE2\x82\xAC";
  CHECK(tok.decode(tok.encode(text)) == text);
  CHECK(tok.decode({257, 'o', 'k', 259, 258, 256, 256}) == "ok");
  // A character cut short (the first two bytes of the euro sign) prints as U+FFFD, each byte.
  CHECK(tok.decode({'a', 0xE2, 0x82}) == "a\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST_CASE("make_tokenizer builds bytes and refuses a BPE without tokenizer.json clearly",
          "[data][tokenizer]") {
  auto bytes = text::make_tokenizer(spec::TokenizerSpec{}, "/");
  REQUIRE(bytes);
  CHECK((*bytes)->vocab_size() == 260);

  auto bpe = text::make_tokenizer({spec::TokenizerKind::kBpe, "merges.txt"}, "/");
  REQUIRE_FALSE(bpe);
  CHECK(bpe.status().code() == StatusCode::kSpecError);
  CHECK(bpe.status().message().find("a BPE tokenizer needs a Hugging Face tokenizer.json") !=
        std::string::npos);

  auto no_vocab = text::make_tokenizer({spec::TokenizerKind::kWordPiece, ""}, "/");
  REQUIRE_FALSE(no_vocab);
  CHECK(no_vocab.status().code() == StatusCode::kSpecError);
}

namespace {
// ids: 0 [PAD] 1 [UNK] 2 [CLS] 3 [SEP] 4 [MASK] 5 un 6 ##aff 7 ##able 8 the 9 , 10 ##s 11 é 12 ##té
constexpr std::string_view kUncasedVocab =
    "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nun\n##aff\n##able\nthe\n,\n##s\n\xC3\xA9\n##t\xC3\xA9\n";
}  // namespace

TEST_CASE("wordpiece: greedy longest match with ## continuations", "[data][tokenizer]") {
  test::TempFile vocab("vocab.txt", kUncasedVocab);
  auto loaded = WordPieceTokenizer::load(vocab.path());
  REQUIRE(loaded);
  const WordPieceTokenizer& tok = **loaded;
  CHECK(tok.vocab_size() == 13);
  CHECK(tok.lower_cases());
  const text::SpecialTokens& s = tok.special_tokens();
  CHECK(std::vector<int>{s.pad, s.unk, s.cls, s.sep, s.mask} == std::vector<int>{0, 1, 2, 3, 4});

  // Upper case folds (the vocabulary is uncased); punctuation splits; "xyz" has no pieces.
  CHECK(tok.encode("The unaffable, xyz unaffables") ==
        std::vector<std::int32_t>{8, 5, 6, 7, 9, 1, 5, 6, 7, 10});
  // Pieces end only at UTF-8 character boundaries: "été" is é + ##té.
  CHECK(tok.encode("\xC3\xA9t\xC3\xA9") == std::vector<std::int32_t>{11, 12});
  CHECK(tok.decode({2, 8, 5, 6, 7, 9, 1, 3, 0}) == "the unaffable , [UNK]");
}

TEST_CASE("wordpiece: a word longer than 100 bytes is one [UNK]", "[data][tokenizer]") {
  test::TempFile vocab("vocab.txt", std::string(kUncasedVocab) + "a\n##a\n");
  auto tok = WordPieceTokenizer::load(vocab.path());
  REQUIRE(tok);
  CHECK((*tok)->encode(std::string(100, 'a')).size() == 100);
  CHECK((*tok)->encode(std::string(101, 'a')) == std::vector<std::int32_t>{1});
}

TEST_CASE("wordpiece: a cased vocabulary keeps case", "[data][tokenizer]") {
  test::TempFile vocab("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nThe\nthe\n");
  auto tok = WordPieceTokenizer::load(vocab.path());
  REQUIRE(tok);
  CHECK_FALSE((*tok)->lower_cases());
  CHECK((*tok)->encode("The the THE") == std::vector<std::int32_t>{5, 6, 1});
}

TEST_CASE("wordpiece: bad vocabularies name the file and line", "[data][tokenizer]") {
  SECTION("missing file") {
    auto tok = WordPieceTokenizer::load("/nonexistent/vocab.txt");
    REQUIRE_FALSE(tok);
    CHECK(tok.status().code() == StatusCode::kNotFound);
    CHECK(tok.status().message() ==
          "/nonexistent/vocab.txt: cannot open the WordPiece vocabulary; check "
          "tokenizer.vocab_file in the spec");
  }
  SECTION("duplicate token") {
    test::TempFile vocab("vocab.txt", "[PAD]\n[UNK]\nthe\n[CLS]\nthe\n");
    auto tok = WordPieceTokenizer::load(vocab.path());
    REQUIRE_FALSE(tok);
    CHECK(tok.status().message() == vocab.name() +
                                        ":5: token 'the' appears twice in the vocabulary; "
                                        "remove the duplicate");
  }
  SECTION("empty line") {
    test::TempFile vocab("vocab.txt", "[PAD]\n\n[UNK]\n");
    auto tok = WordPieceTokenizer::load(vocab.path());
    REQUIRE_FALSE(tok);
    CHECK(tok.status().message() == vocab.name() +
                                        ":2: empty line in the WordPiece vocabulary; every line "
                                        "must hold one token");
  }
  SECTION("missing special") {
    test::TempFile vocab("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n");
    auto tok = WordPieceTokenizer::load(vocab.path());
    REQUIRE_FALSE(tok);
    CHECK(tok.status().code() == StatusCode::kSpecError);
    CHECK(tok.status().message() ==
          vocab.name() + ": the vocabulary has no [MASK] token; add it on its own line");
  }
}
