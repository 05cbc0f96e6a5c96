// Decoding of BpeTokenizer: the file's decoder steps over the tokens, as `tokenizers`
// runs them (each step maps the list of token strings to a new list; Fuse and ByteLevel
// join it into one).
#include <utf8proc.h>

#include "runtime/text/bpe_tokenizer.h"
#include "runtime/text/lossy_utf8.h"

namespace scion::text {

namespace {

using Tokens = std::vector<std::string>;

bool valid_utf8(const std::string& bytes) {
  for (std::size_t pos = 0; pos < bytes.size();) {
    utf8proc_int32_t c = -1;
    const utf8proc_ssize_t n =
        utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(bytes.data() + pos),
                         static_cast<utf8proc_ssize_t>(bytes.size() - pos), &c);
    if (n <= 0) return false;
    pos += static_cast<std::size_t>(n);
  }
  return true;
}

// The byte of a "<0xXX>" token, or -1.
int byte_of(const std::string& token) {
  if (token.size() != 6 || !token.starts_with("<0x") || token.back() != '>') return -1;
  int value = 0;
  for (char c : token.substr(3, 2)) {
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

// Runs of byte tokens become their text, or one U+FFFD per byte when it is not UTF-8.
Tokens byte_fallback(const Tokens& tokens) {
  Tokens out;
  std::string bytes;
  std::size_t pending = 0;
  auto flush = [&] {
    if (pending == 0) return;
    if (valid_utf8(bytes)) {
      out.push_back(bytes);
    } else {
      for (std::size_t i = 0; i < pending; ++i) out.emplace_back("\xEF\xBF\xBD");
    }
    bytes.clear();
    pending = 0;
  };
  for (const std::string& token : tokens) {
    if (const int b = byte_of(token); b >= 0) {
      bytes += static_cast<char>(b);
      ++pending;
      continue;
    }
    flush();
    out.push_back(token);
  }
  flush();
  return out;
}

// Cuts up to `start` leading and `stop` trailing `content` characters of each token.
Tokens strip(const Tokens& tokens, const std::string& content, int start, int stop) {
  Tokens out;
  for (std::string token : tokens) {
    for (int i = 0; i < start && !content.empty() && token.starts_with(content); ++i)
      token.erase(0, content.size());
    for (int i = 0; i < stop && !content.empty() && token.ends_with(content); ++i)
      token.erase(token.size() - content.size());
    out.push_back(std::move(token));
  }
  return out;
}

}  // namespace

std::string BpeTokenizer::byte_token(unsigned char byte) {
  static const char* kHex = "0123456789ABCDEF";
  return std::string("<0x") + kHex[byte >> 4] + kHex[byte & 15] + ">";
}

std::string BpeTokenizer::decode(const std::vector<std::int32_t>& ids) const {
  Tokens tokens;
  for (std::int32_t id : ids)
    if (!special_ids_[static_cast<std::size_t>(id)])
      tokens.push_back(tokens_[static_cast<std::size_t>(id)]);
  for (const Decoder& d : decoders_) {
    switch (d.kind) {
      case Decoder::Kind::kByteLevel: {
        std::string bytes;
        for (const std::string& token : tokens) {
          auto decoded = byte_level_decode(token);
          bytes += decoded ? *decoded : token;  // an added token's text is not byte-mapped
        }
        tokens = {lossy_utf8(bytes)};
        break;
      }
      case Decoder::Kind::kMetaspace:
        for (std::size_t i = 0; i < tokens.size(); ++i)
          tokens[i] = replace_all(tokens[i], d.pattern, i == 0 && d.drop_first ? "" : " ");
        break;
      case Decoder::Kind::kReplace:
        for (std::string& token : tokens) token = replace_all(token, d.pattern, d.content);
        break;
      case Decoder::Kind::kByteFallback:
        tokens = byte_fallback(tokens);
        break;
      case Decoder::Kind::kFuse: {
        std::string joined;
        for (const std::string& token : tokens) joined += token;
        tokens = {joined};
        break;
      }
      case Decoder::Kind::kStrip:
        tokens = strip(tokens, d.content, d.start, d.stop);
        break;
    }
  }
  std::string text;
  for (const std::string& token : tokens) {
    if (decoders_.empty() && !text.empty()) text += ' ';  // `tokenizers` without a decoder
    text += token;
  }
  return lossy_utf8(text);
}

}  // namespace scion::text
