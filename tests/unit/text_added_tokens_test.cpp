// Added tokens are found without scanning all of them at every position (issue #29,
// item 10): with 10^6 added tokens, a 2,000-character text took 40 s.
#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/text/added_token_matcher.h"
#include "runtime/text/bpe_tokenizer.h"
#include "runtime/text/wordpiece_tokenizer.h"

namespace scion::text {
namespace {

using nlohmann::json;

std::vector<std::size_t> matches(const AddedTokenMatcher& m, std::string_view text,
                                 std::size_t pos) {
  std::vector<std::size_t> out;
  m.matches_at(text, pos, out);
  return out;
}

// "zq" followed by `i` in base 26 over a..z: distinct tokens sharing a first byte, the case
// a scan of every token at every position was slowest for.
std::string added_token(std::size_t i) {
  std::string s = "zq";
  do {
    s += static_cast<char>('a' + i % 26);
    i /= 26;
  } while (i > 0);
  return s;
}

// A BPE tokenizer.json over single letters with `added` added tokens.
std::string bpe_with_added_tokens(std::size_t added) {
  json vocab = {{"<s>", 0}, {"</s>", 1}};
  for (char c = 'a'; c <= 'z'; ++c) vocab[std::string(1, c)] = c - 'a' + 2;
  json tokens = json::array();
  for (std::size_t i = 0; i < added; ++i)
    tokens.push_back({{"id", 28 + i}, {"content", added_token(i)}, {"special", false}});
  return json({{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}},
               {"added_tokens", tokens},
               {"post_processor",
                {{"type", "RobertaProcessing"}, {"cls", {"<s>", 0}}, {"sep", {"</s>", 1}}}}})
      .dump();
}

// The best of three encodings of `text`, in seconds.
double encode_seconds(const Tokenizer& tok, const std::string& text) {
  double best = 1e9;
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<std::int32_t> ids = tok.encode(text);
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    REQUIRE_FALSE(ids.empty());
  }
  return best;
}

TEST_CASE("the added-token matcher finds every token at a position, longest first", "[text]") {
  const AddedTokenMatcher m({"<s>", "<s", "ab", "abc", "", "ab", "\xC3\xA9t\xC3\xA9", "b"});
  CHECK(matches(m, "<s>x", 0) == std::vector<std::size_t>{0, 1});
  CHECK(matches(m, "xabcd", 1) == std::vector<std::size_t>{3, 2});  // a duplicate matches once
  CHECK(matches(m, "xabcd", 2) == std::vector<std::size_t>{7});
  CHECK(matches(m, "ab", 0) == std::vector<std::size_t>{2});  // text ends inside "abc"
  CHECK(matches(m, "\xC3\xA9t\xC3\xA9!", 0) == std::vector<std::size_t>{6});  // bytes >= 0x80
  CHECK(matches(m, "<x", 0).empty());
  CHECK(matches(m, "", 0).empty());
  CHECK(AddedTokenMatcher({""}).empty());
}

TEST_CASE("tokenizers find added tokens as before: leftmost, longest", "[text]") {
  auto bpe = BpeTokenizer::parse_hugging_face(bpe_with_added_tokens(30), "tokenizer.json", "",
                                              "tokenizer_config.json");
  REQUIRE(bpe.is_ok());
  // "zqbb" (28 + 27) holds "zqb" (28 + 1): the longer one wins, then "a", then "zqa" (28).
  REQUIRE(added_token(27) == "zqbb");
  REQUIRE(added_token(1) == "zqb");
  CHECK((*bpe)->encode("zqbbazqa") == std::vector<std::int32_t>{28 + 27, 2, 28});
  CHECK((*bpe)->encode("xzq") == std::vector<std::int32_t>{25, 27, 18});
}

TEST_CASE("encoding time does not grow with the number of added tokens", "[text]") {
  // Scanning every added token at every position made the 100,000-token tokenizer about
  // 100 times slower than the 1,000-token one; looking them up makes it a few percent.
  // A ratio of two timings taken back to back holds on a loaded machine and under
  // sanitizers, where an absolute bound would not.
  const std::string text(2000, 'z');
  auto few = BpeTokenizer::parse_hugging_face(bpe_with_added_tokens(1000), "tokenizer.json", "",
                                              "tokenizer_config.json");
  auto many = BpeTokenizer::parse_hugging_face(bpe_with_added_tokens(100000), "tokenizer.json", "",
                                               "tokenizer_config.json");
  REQUIRE(few.is_ok());
  REQUIRE(many.is_ok());
  const double ratio = encode_seconds(**many, text) / encode_seconds(**few, text);
  INFO("100,000 added tokens take " << ratio << " times as long as 1,000");
  CHECK(ratio < 10);
}

}  // namespace
}  // namespace scion::text
