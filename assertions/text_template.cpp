#include "assertions/text_template.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "assertions/random.h"
#include "spec/spelling.h"

namespace scion::assertions {
namespace {

Status template_error(std::string_view where, std::size_t column, std::string_view what) {
  return spec_error(fmt::format("{}, column {}: {}", where, column, what));
}

// Resolves a slot key to its lexicon: the key itself, or the key without trailing digits.
const std::vector<std::string>* resolve_lexicon(const LexiconSet& lexicons, const std::string& key,
                                                std::string* lexicon_name) {
  if (const auto* exact = lexicons.find(key)) {
    *lexicon_name = key;
    return exact;
  }
  std::size_t end = key.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(key[end - 1]))) --end;
  if (end == key.size() || end == 0) return nullptr;
  *lexicon_name = key.substr(0, end);
  return lexicons.find(*lexicon_name);
}

std::string lower_ascii(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool starts_with_any(std::string_view word, std::initializer_list<std::string_view> prefixes) {
  for (std::string_view p : prefixes)
    if (word.starts_with(p)) return true;
  return false;
}

}  // namespace

std::string_view indefinite_article(std::string_view word) {
  const std::string w = lower_ascii(word);
  if (w.empty()) return "a";
  // Spelling is a proxy for sound; these prefixes are the common exceptions.
  if (starts_with_any(w, {"hour", "honest", "honor", "honour", "heir"})) return "an";
  if (starts_with_any(w, {"uni", "use", "usu", "uti", "eu", "one", "once", "ubiq", "ura"}))
    return "a";
  return std::string_view("aeiou").find(w[0]) != std::string_view::npos ? "an" : "a";
}

Result<TextTemplate> TextTemplate::parse(std::string_view text, const LexiconSet& lexicons,
                                         std::string_view where) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
    return spec_error(
        fmt::format("{}: the template is empty; write a sentence such as "
                    "\"{{name}} likes the {{noun}}.\"",
                    where));
  TextTemplate t;
  t.source_ = std::string(text);
  std::string literal;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '}') {
      if (i + 1 < text.size() && text[i + 1] == '}') {
        literal += '}';
        ++i;
        continue;
      }
      return template_error(where, i + 1,
                            "'}' has no matching '{'; write '}}' for a literal brace");
    }
    if (c != '{') {
      literal += c;
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '{') {
      literal += '{';
      ++i;
      continue;
    }
    const std::size_t close = text.find('}', i + 1);
    const std::size_t next_open = text.find('{', i + 1);
    if (close == std::string_view::npos || next_open < close)
      return template_error(
          where, i + 1,
          "'{' is not closed; close the slot with '}' or write '{{' for a literal brace");
    std::string body(text.substr(i + 1, close - i - 1));
    bool article = false;
    if (body.starts_with("a:")) {
      article = true;
      body = body.substr(2);
    }
    if (body.empty())
      return template_error(where, i + 1,
                            "the slot is empty; name a lexicon, e.g. {noun} or {a:noun}");
    if (!is_lexicon_name(body))
      return template_error(where, i + 1,
                            fmt::format("'{}' is not a lexicon name (letters, digits, '_')", body));
    std::string lexicon_name;
    const auto* values = resolve_lexicon(lexicons, body, &lexicon_name);
    if (values == nullptr) {
      const auto names = lexicons.names();
      const std::vector<std::string_view> words(names.begin(), names.end());
      return template_error(
          where, i + 1,
          fmt::format("unknown lexicon '{}'{}; define it under `lexicons:` or use one of: {}", body,
                      spec::did_you_mean(body, words), fmt::join(names, ", ")));
    }
    auto it = std::find_if(t.slots_.begin(), t.slots_.end(),
                           [&](const Slot& s) { return s.key == body; });
    if (it == t.slots_.end()) {
      t.slots_.push_back({body, lexicon_name, *values});
      it = t.slots_.end() - 1;
    }
    const bool opens_sentence =
        t.pieces_.empty() && literal.find_first_not_of(" \t") == std::string::npos;
    t.pieces_.push_back({std::move(literal), static_cast<int>(it - t.slots_.begin()), article,
                         article && opens_sentence});
    literal.clear();
    i = close;
  }
  t.pieces_.push_back({std::move(literal), -1, false, false});
  return t;
}

std::string TextTemplate::render(const std::vector<std::size_t>& choice) const {
  std::string out;
  for (const Piece& piece : pieces_) {
    out += piece.literal;
    if (piece.slot < 0) continue;
    const std::string& value = slots_[piece.slot].values[choice[piece.slot]];
    if (piece.article) {
      std::string article(indefinite_article(value));
      if (piece.capitalize_article)
        article[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(article[0])));
      out += article;
      out += ' ';
    }
    out += value;
  }
  return out;
}

namespace {

// Independent slots of one lexicon must differ: "{name1} met {name2}" never pairs a
// name with itself.
bool slots_distinct(const TextTemplate& t, const std::vector<std::size_t>& choice) {
  const auto& slots = t.slots();
  for (std::size_t a = 0; a < slots.size(); ++a)
    for (std::size_t b = a + 1; b < slots.size(); ++b)
      if (slots[a].lexicon == slots[b].lexicon &&
          slots[a].values[choice[a]] == slots[b].values[choice[b]])
        return false;
  return true;
}

// True if the template has at most `cap` fills; checked by division so that large
// products cannot overflow.
bool product_fits(const TextTemplate& t, std::size_t cap) {
  std::size_t total = 1;
  for (const auto& slot : t.slots()) {
    if (total > cap / slot.values.size()) return false;  // lexicons are never empty
    total *= slot.values.size();
  }
  return true;
}

TemplateFill make_fill(const TextTemplate& t, std::size_t index,
                       const std::vector<std::size_t>& choice) {
  TemplateFill fill{t.render(choice), index, {}};
  for (std::size_t s = 0; s < t.slots().size(); ++s)
    fill.values.emplace_back(t.slots()[s].key, t.slots()[s].values[choice[s]]);
  return fill;
}

void enumerate_all(const TextTemplate& t, std::size_t index, std::size_t budget,
                   std::vector<TemplateFill>* out) {
  std::vector<std::size_t> choice(t.slots().size(), 0);
  std::size_t produced = 0;
  while (produced < budget) {
    if (slots_distinct(t, choice)) {
      out->push_back(make_fill(t, index, choice));
      ++produced;
    }
    // Mixed-radix increment, last slot fastest.
    std::size_t s = choice.size();
    while (s > 0 && ++choice[s - 1] == t.slots()[s - 1].values.size()) choice[--s] = 0;
    if (s == 0) return;
  }
}

void sample_distinct(const TextTemplate& t, std::size_t index, std::size_t budget,
                     std::uint64_t seed, std::vector<TemplateFill>* out) {
  auto rng = base::SeededRng::from_state(seed);
  std::set<std::vector<std::size_t>> seen;
  // Bounded so that templates whose slots cannot all differ still terminate.
  const std::size_t max_attempts = 20 * budget + 100;
  std::vector<std::size_t> choice(t.slots().size());
  for (std::size_t attempt = 0; attempt < max_attempts && seen.size() < budget; ++attempt) {
    for (std::size_t s = 0; s < choice.size(); ++s)
      choice[s] = rng.below(t.slots()[s].values.size());
    if (!slots_distinct(t, choice) || !seen.insert(choice).second) continue;
    out->push_back(make_fill(t, index, choice));
  }
}

}  // namespace

std::vector<TemplateFill> expand_templates(const std::vector<TextTemplate>& templates,
                                           std::size_t max_cases, std::uint64_t seed) {
  std::vector<TemplateFill> out;
  for (std::size_t i = 0; i < templates.size(); ++i) {
    const std::size_t remaining = max_cases - std::min(max_cases, out.size());
    const std::size_t templates_left = templates.size() - i;
    const std::size_t budget =
        remaining / templates_left + (remaining % templates_left != 0 ? 1 : 0);
    if (budget == 0) break;
    if (product_fits(templates[i], budget))
      enumerate_all(templates[i], i, budget, &out);
    else
      sample_distinct(templates[i], i, budget, derive_seed(seed, i), &out);
  }
  return out;
}

}  // namespace scion::assertions
