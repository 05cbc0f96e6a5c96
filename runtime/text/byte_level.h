// The text pieces of BPE pre-tokenisation, as Hugging Face `tokenizers` cuts them: the
// regular expressions that split text into words before byte-level BPE, the Digits and
// Metaspace splits, and GPT-2's byte-to-character table.
//
// The two split patterns scion runs are matched by hand (Debian has no PCRE2 headers in
// the build, and these patterns need Unicode categories), with utf8proc for \p{L} (Lu Ll
// Lt Lm Lo) and \p{N} (Nd Nl No) and the Unicode White_Space property for \s:
//   kGpt2      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//              (GPT-2, RoBERTa, and the ByteLevel pre-tokeniser with use_regex)
//   kLlama3    (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//              ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+   (Llama 3, SmolLM2)
// Each match is its own piece ("Isolated"); bytes that are not valid UTF-8 count as
// characters of no category, as one byte each. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace scion::text {

enum class SplitPattern { kGpt2, kLlama3 };

// The pattern a tokenizer.json Split or ByteLevel regex spells, or nullopt for another.
std::optional<SplitPattern> split_pattern_named(std::string_view regex);

// The pieces of `text` (views into it, in order, none empty) split by `pattern`.
std::vector<std::string_view> split_by_pattern(std::string_view text, SplitPattern pattern);

// The Digits pre-tokeniser: each digit (Unicode N) its own piece when `individual`, else
// each run of digits; the text between stays as pieces.
std::vector<std::string_view> split_digits(std::string_view text, bool individual);

// Pieces of `text` each starting at an occurrence of `delimiter`, except perhaps the
// first (`tokenizers`' MergedWithNext, as Metaspace splits). REQUIRES: delimiter non-empty.
std::vector<std::string_view> split_before_each(std::string_view text, std::string_view delimiter);

// `text` with every occurrence of `from` replaced by `to` (`text` itself for an empty `from`).
std::string replace_all(std::string_view text, std::string_view from, std::string_view to);

// GPT-2's bytes_to_unicode(): the printable character (as UTF-8) that stands for a byte,
// so that every token is printable text ("Ġ" for a space).
const std::string& byte_to_unicode(unsigned char byte);
// `text`'s bytes mapped through byte_to_unicode().
std::string byte_level_encode(std::string_view text);
// The bytes of a byte-level token, or nullopt when a character is not one of the 256.
std::optional<std::string> byte_level_decode(std::string_view token);

// Unicode White_Space (Rust's char::is_whitespace, Oniguruma's \s).
bool is_unicode_space(int code_point);

}  // namespace scion::text
