#include "runtime/text/wordpiece_tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <fstream>

#include "base/regular_file.h"

namespace scion::text {
namespace {

constexpr std::size_t kMaxWordBytes = 100;  // BERT's limit; longer words become [UNK]

bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool is_ascii_punctuation(char c) {
  const unsigned char u = static_cast<unsigned char>(c);
  return (u >= 33 && u <= 47) || (u >= 58 && u <= 64) || (u >= 91 && u <= 96) ||
         (u >= 123 && u <= 126);
}
bool is_ascii_upper(char c) { return c >= 'A' && c <= 'Z'; }
// A UTF-8 continuation byte (10xxxxxx) never starts a character.
bool is_char_boundary(std::string_view s, std::size_t pos) {
  return pos == s.size() || (static_cast<unsigned char>(s[pos]) & 0xC0) != 0x80;
}

// Words of `text`: runs of non-space, non-punctuation bytes, and each punctuation byte alone.
std::vector<std::string> split_words(std::string_view text, bool lower_case) {
  std::vector<std::string> words;
  std::string current;
  auto flush = [&] {
    if (!current.empty()) words.push_back(std::move(current));
    current.clear();
  };
  for (char c : text) {
    if (is_ascii_space(c)) {
      flush();
    } else if (is_ascii_punctuation(c)) {
      flush();
      words.emplace_back(1, c);
    } else {
      current.push_back(lower_case && is_ascii_upper(c) ? static_cast<char>(c - 'A' + 'a') : c);
    }
  }
  flush();
  return words;
}

}  // namespace

Result<std::unique_ptr<WordPieceTokenizer>> WordPieceTokenizer::load(
    const std::filesystem::path& vocab_file) {
  if (Status regular = check_regular_file(vocab_file, FollowLinks::kYes);
      !regular && regular.code() != StatusCode::kNotFound)
    return regular;
  std::ifstream in(vocab_file, std::ios::binary);
  if (!in)
    return not_found(
        fmt::format("{}: cannot open the WordPiece vocabulary; check "
                    "tokenizer.vocab_file in the spec",
                    vocab_file.string()));
  std::unique_ptr<WordPieceTokenizer> tok(new WordPieceTokenizer());
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty())
      return spec_error(
          fmt::format("{}:{}: empty line in the WordPiece vocabulary; every "
                      "line must hold one token",
                      vocab_file.string(), line_number));
    const auto id = static_cast<std::int32_t>(tok->tokens_.size());
    if (!tok->ids_.emplace(line, id).second)
      return spec_error(
          fmt::format("{}:{}: token '{}' appears twice in the vocabulary; "
                      "remove the duplicate",
                      vocab_file.string(), line_number, line));
    tok->tokens_.push_back(line);
  }
  if (in.bad())
    return io_error(fmt::format("{}: read failed after line {}", vocab_file.string(), line_number));

  SCION_RETURN_IF_ERROR(tok->set_specials(vocab_file.string(), "add it on its own line"));
  const SpecialTokens& s = tok->specials_;
  tok->lower_case_ = std::none_of(tok->tokens_.begin(), tok->tokens_.end(), [&](const auto& t) {
    const std::int32_t id = tok->ids_.at(t);
    return !s.is_special(id) && std::any_of(t.begin(), t.end(), is_ascii_upper);
  });
  return tok;
}

Status WordPieceTokenizer::set_specials(const std::string& source, const char* remedy) {
  struct Required {
    const char* token;
    std::int32_t* id;
  };
  SpecialTokens& s = specials_;
  for (Required r :
       {Required{"[PAD]", &s.pad}, Required{"[UNK]", &s.unk}, Required{"[CLS]", &s.cls},
        Required{"[SEP]", &s.sep}, Required{"[MASK]", &s.mask}}) {
    *r.id = find(r.token);
    if (*r.id == kNoToken)
      return spec_error(
          fmt::format("{}: the vocabulary has no {} token; {}", source, r.token, remedy));
  }
  return Status::ok();
}

std::int32_t WordPieceTokenizer::find(const std::string& token) const {
  auto it = ids_.find(token);
  return it == ids_.end() ? kNoToken : it->second;
}

void WordPieceTokenizer::encode_word(std::string_view word, std::vector<std::int32_t>& ids) const {
  if (hugging_face_ ? utf8_length(word) > max_word_chars_ : word.size() > kMaxWordBytes) {
    ids.push_back(specials_.unk);
    return;
  }
  std::vector<std::int32_t> pieces;
  std::size_t start = 0;
  while (start < word.size()) {
    std::int32_t piece = kNoToken;
    std::size_t end = word.size();
    for (; end > start; --end) {
      if (!is_char_boundary(word, end)) continue;
      std::string candidate(start > 0 ? std::string_view(continuation_) : std::string_view{});
      candidate.append(word.substr(start, end - start));
      piece = find(candidate);
      if (piece != kNoToken) break;
    }
    if (piece == kNoToken) {
      ids.push_back(specials_.unk);
      return;
    }
    pieces.push_back(piece);
    start = end;
  }
  ids.insert(ids.end(), pieces.begin(), pieces.end());
}

std::vector<std::int32_t> WordPieceTokenizer::encode(std::string_view text) const {
  std::vector<std::int32_t> ids;
  if (hugging_face_) {
    encode_hugging_face(text, ids);
    return ids;
  }
  for (const std::string& word : split_words(text, lower_case_)) encode_word(word, ids);
  return ids;
}

std::string WordPieceTokenizer::decode(const std::vector<std::int32_t>& ids) const {
  std::string text;
  for (std::int32_t id : ids) {
    assert(id >= 0 && id < vocab_size());
    if (id != specials_.unk && specials_.is_special(id)) continue;
    const std::string& token = tokens_[static_cast<std::size_t>(id)];
    if (token.starts_with(continuation_) && !text.empty()) {
      text.append(token, continuation_.size());
    } else {
      if (!text.empty()) text.push_back(' ');
      text.append(token);
    }
  }
  return text;
}

void WordPieceTokenizer::encode_words(std::span<const std::string> words,
                                      std::vector<std::int32_t>& ids,
                                      std::vector<std::int32_t>& starts) const {
  for (const std::string& word : words) {
    starts.push_back(static_cast<std::int32_t>(ids.size()));
    for (std::int32_t id : encode(word)) ids.push_back(id);
  }
}

}  // namespace scion::text
