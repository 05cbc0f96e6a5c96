#include "spec/yaml_tree.h"

#include <fmt/format.h>
#include <yaml-cpp/anchor.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <map>
#include <sstream>

namespace scion::spec {
namespace {

// Thrown inside the event handler to stop yaml-cpp's parser; caught in parse_yaml.
struct LimitExceeded {
  int line, column;
  std::string message;
};

class TreeBuilder : public YAML::EventHandler {
 public:
  explicit TreeBuilder(const YamlLimits& limits) : limits_(limits) {}

  std::shared_ptr<const YamlNode> root() const { return root_; }
  int documents() const { return documents_; }

  void OnDocumentStart(const YAML::Mark&) override { ++documents_; }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    add(make(YamlNode::Kind::kNull, mark), anchor);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    auto node = make(YamlNode::Kind::kScalar, mark);
    node->value = value;
    node->quoted = tag != "?";
    add(node, anchor);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) fail(mark, "alias to an unknown anchor");
    const std::shared_ptr<YamlNode>& target = it->second;
    for (const Open& open : stack_)
      if (open.node == target) fail(mark, "recursive alias: an anchor used inside itself");
    count(mark, target->expanded_size);
    attach(target, mark);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(make(YamlNode::Kind::kSequence, mark), anchor, mark);
  }
  void OnSequenceEnd() override { close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(make(YamlNode::Kind::kMap, mark), anchor, mark);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Open {
    std::shared_ptr<YamlNode> node;
    std::shared_ptr<const YamlNode> pending_key;  // maps: key waiting for its value
  };

  [[noreturn]] static void fail(const YAML::Mark& mark, std::string message) {
    throw LimitExceeded{mark.line + 1, mark.column + 1, std::move(message)};
  }

  void count(const YAML::Mark& mark, std::size_t nodes) {
    total_nodes_ += nodes;
    if (total_nodes_ > limits_.max_nodes)
      fail(mark, fmt::format("the spec expands to more than {} YAML nodes (aliases count once "
                             "per use); write it out with fewer aliases",
                             limits_.max_nodes));
  }

  std::shared_ptr<YamlNode> make(YamlNode::Kind kind, const YAML::Mark& mark) {
    count(mark, 1);
    auto node = std::make_shared<YamlNode>();
    node->kind = kind;
    node->line = mark.line + 1;
    node->column = mark.column + 1;
    return node;
  }

  void add(const std::shared_ptr<YamlNode>& node, YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) anchors_[anchor] = node;
    attach(node, YAML::Mark());
  }

  void open(const std::shared_ptr<YamlNode>& node, YAML::anchor_t anchor, const YAML::Mark& mark) {
    if (static_cast<int>(stack_.size()) >= limits_.max_depth)
      fail(mark, fmt::format("the spec nests deeper than {} levels", limits_.max_depth));
    add(node, anchor);
    stack_.push_back({node, nullptr});
  }

  void close() {
    std::shared_ptr<YamlNode> node = stack_.back().node;
    stack_.pop_back();
    // Size is known only now; aliases taken later count it in full.
    std::size_t size = 1;
    for (const auto& item : node->items) size += item->expanded_size;
    for (const auto& [key, value] : node->entries)
      size += key->expanded_size + value->expanded_size;
    node->expanded_size = size;
  }

  void attach(const std::shared_ptr<const YamlNode>& node, const YAML::Mark&) {
    if (stack_.empty()) {
      if (!root_) root_ = node;
      return;
    }
    Open& parent = stack_.back();
    if (parent.node->kind == YamlNode::Kind::kSequence) {
      parent.node->items.push_back(node);
    } else if (!parent.pending_key) {
      parent.pending_key = node;
    } else {
      parent.node->entries.emplace_back(std::move(parent.pending_key), node);
      parent.pending_key = nullptr;
    }
  }

  const YamlLimits& limits_;
  std::shared_ptr<const YamlNode> root_;
  std::vector<Open> stack_;
  std::map<YAML::anchor_t, std::shared_ptr<YamlNode>> anchors_;
  std::size_t total_nodes_ = 0;
  int documents_ = 0;
};

// Line and column (1-based) of a byte offset, counting columns in bytes.
std::pair<int, int> position_of(std::string_view text, std::size_t offset) {
  int line = 1, column = 1;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

// Length of the UTF-8 sequence starting at text[i], or 0 when it is malformed
// (overlong forms, surrogates and code points above U+10FFFF included).
std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  std::size_t length;
  unsigned min_second = 0x80, max_second = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    if (b0 == 0xE0) min_second = 0xA0;
    if (b0 == 0xED) max_second = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    if (b0 == 0xF0) min_second = 0x90;
    if (b0 == 0xF4) max_second = 0x8F;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(i + 1) < min_second || byte(i + 1) > max_second) return 0;
  for (std::size_t k = 2; k < length; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return length;
}

// The first byte that makes `text` unfit as a YAML spec: invalid UTF-8 or a control
// character other than tab, newline and carriage return.
std::optional<Diagnostic> check_text(std::string_view text, const std::string& file) {
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char b = static_cast<unsigned char>(text[i]);
    std::string problem;
    if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7F) {
      problem = fmt::format(
          "control character 0x{:02X}: the spec looks like binary data; "
          "it must be UTF-8 text",
          b);
    } else if (const std::size_t n = utf8_sequence_length(text, i); n == 0) {
      problem = fmt::format("invalid UTF-8 (byte 0x{:02X}); save the spec as UTF-8", b);
    } else {
      i += n;
      continue;
    }
    const auto [line, column] = position_of(text, i);
    return Diagnostic::at(file, line, column, problem);
  }
  return std::nullopt;
}

// The first tab in the leading whitespace of a line up to `last_line` (1-based): YAML
// indents with spaces only, and yaml-cpp's messages about it ("end of map not found")
// do not say so.
std::optional<std::pair<int, int>> tab_in_indentation(std::string_view text, int last_line) {
  int line = 1;
  for (std::size_t start = 0; start < text.size() && line <= last_line; ++line) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view row = text.substr(start, end - start);
    const std::size_t indent = row.find_first_not_of(" \t");
    const std::string_view lead =
        row.substr(0, indent == std::string_view::npos ? row.size() : indent);
    const bool blank_or_comment = indent == std::string_view::npos || row[indent] == '#';
    if (const std::size_t tab = lead.find('\t'); tab != std::string_view::npos && !blank_or_comment)
      return std::pair{line, static_cast<int>(tab) + 1};
    start = end + 1;
  }
  return std::nullopt;
}

// A flow collection's opening bracket and where it is.
struct FlowOpen {
  char bracket;  // '[' or '{'
  int line, column;
};

// The innermost flow collection still open at the end of `text`, or closed by the wrong
// bracket. Quoted scalars and comments are skipped; in block context a bracket opens a
// collection only where a value starts.
std::optional<FlowOpen> unclosed_flow(std::string_view text) {
  std::vector<FlowOpen> open;
  int line = 1, column = 0;
  bool value_start = true;  // nothing but spaces since a line start, ':', '-', ',' or a bracket
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    ++column;
    if (c == '\n') {
      ++line;
      column = 0;
      value_start = true;
      continue;
    }
    if (c == ' ' || c == '\t') continue;
    if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t')) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i, ++column;
      continue;
    }
    if ((c == '"' || c == '\'') && value_start) {
      // Skip to the closing quote (a doubled '' or an escaped \" stays inside).
      for (++i, ++column; i < text.size(); ++i, ++column) {
        if (text[i] == '\n') ++line, column = 0;
        if (c == '"' && text[i] == '\\') {
          ++i, ++column;
          continue;
        }
        if (text[i] != c) continue;
        if (c == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
          ++i, ++column;
          continue;
        }
        break;
      }
      value_start = false;
      continue;
    }
    const bool in_flow = !open.empty();
    if ((c == '[' || c == '{') && (value_start || in_flow)) {
      open.push_back({c, line, column});
    } else if ((c == ']' || c == '}') && in_flow) {
      if (open.back().bracket != (c == ']' ? '[' : '{')) break;
      open.pop_back();
    }
    value_start = c == ':' || c == '-' || c == ',' || c == '[' || c == '{';
  }
  if (open.empty()) return std::nullopt;
  return open.back();
}

// A block line: where it is, its indentation and its text without a trailing comment.
struct BlockLine {
  int line = 0;
  std::size_t indent = 0;
  std::string_view content;
};

// The lines of `text` up to `last_line` that carry block structure: blank and comment
// lines, and the inner lines of a block scalar (`key: |`) or of a flow collection that
// spans lines, are left out (their indentation is free).
std::vector<BlockLine> block_lines(std::string_view text, int last_line) {
  std::vector<BlockLine> lines;
  // Inside a block scalar opened at this indentation; npos: not in one.
  std::size_t scalar_indent = std::string_view::npos;
  int flow_depth = 0;
  int line = 1;
  for (std::size_t start = 0; start < text.size() && line <= last_line; ++line) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view row = text.substr(start, end - start);
    start = end + 1;
    const std::size_t indent = row.find_first_not_of(' ');
    if (indent == std::string_view::npos || row[indent] == '#') continue;
    if (scalar_indent != std::string_view::npos && indent > scalar_indent) continue;
    scalar_indent = std::string_view::npos;
    if (const std::size_t hash = row.find(" #"); hash != std::string_view::npos)
      row = row.substr(0, hash);
    while (!row.empty() && (row.back() == ' ' || row.back() == '\r')) row.remove_suffix(1);
    const bool inside_flow = flow_depth > 0;
    for (char c : row) flow_depth += (c == '[' || c == '{') - (c == ']' || c == '}');
    if (inside_flow) continue;
    if (row.ends_with(": |") || row.ends_with(": >") || row.ends_with(": |-") ||
        row.ends_with(": >-"))
      scalar_indent = indent;
    lines.push_back({line, indent, row.substr(indent)});
  }
  return lines;
}

// Whether a block line leaves its value to the lines below it: `key:`, or `key:` with
// only an anchor or a tag (`train: &adapt`), or a lone `-`.
bool opens_block_below(std::string_view content) {
  if (content == "-" || content.ends_with(':')) return true;
  const std::size_t colon = content.find(": ");
  if (colon == std::string_view::npos) return false;
  std::string_view rest = content.substr(colon + 2);
  while (!rest.empty()) {
    const std::size_t start = rest.find_first_not_of(' ');
    if (start == std::string_view::npos) break;
    if (rest[start] != '&' && rest[start] != '!') return false;
    const std::size_t end = rest.find(' ', start);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  }
  return true;
}

// The first block line up to `last_line` whose indentation breaks the mapping around
// it, with what is wrong: deeper than a line that already has its value, or shallower
// than the line above without lining up with any key it could belong to. yaml-cpp says
// "end of map not found" on a later line for both.
std::optional<std::pair<int, std::string>> misindented_line(std::string_view text, int last_line) {
  std::vector<std::size_t> open{0};  // indentations of the blocks the line may be in
  bool opens_block = true;           // the line above ends with ':' (or starts a list item)
  for (const BlockLine& l : block_lines(text, last_line)) {
    if (l.indent > open.back()) {
      if (!opens_block)
        return std::pair{l.line, fmt::format("this line is indented {} spaces, deeper than the "
                                             "line above, which already has its value; indent "
                                             "it as that line ({} spaces), or end that line "
                                             "with ':' to open a mapping",
                                             l.indent, open.back())};
      open.push_back(l.indent);
    } else {
      // The enclosing levels this line falls between: the last one left, the one kept.
      std::size_t deeper = open.back();
      while (open.size() > 1 && open.back() > l.indent) {
        deeper = open.back();
        open.pop_back();
      }
      if (open.back() != l.indent)
        return std::pair{l.line, fmt::format("this line is indented {} spaces, which lines up "
                                             "with no key above it (they are at {} and {} "
                                             "spaces); indent it as the keys it belongs with",
                                             l.indent, open.back(), deeper)};
    }
    opens_block = opens_block_below(l.content);
    // A list item's own keys line up with the text after its "- ".
    if (l.content.starts_with("- ")) {
      open.push_back(l.indent + 2);
      opens_block = true;
    }
  }
  return std::nullopt;
}

// A yaml-cpp syntax error as a Diagnostic, pointing at the cause where yaml-cpp's own
// mark does not: a tab in indentation, or the bracket of a flow collection never closed.
Diagnostic syntax_error(std::string_view text, const YAML::Exception& e, const std::string& file) {
  const bool known = !e.mark.is_null();
  const int line = known ? e.mark.line + 1 : 1;
  if (const auto tab = tab_in_indentation(text, line))
    return Diagnostic::at(file, tab->first, tab->second,
                          "invalid YAML: tab character in indentation; indent with spaces");
  if (e.msg.find("flow") != std::string::npos)
    if (const auto opened = unclosed_flow(text)) {
      const bool list = opened->bracket == '[';
      return Diagnostic::at(
          file, opened->line, opened->column,
          fmt::format("invalid YAML: the flow {} opened here with '{}' is never closed; add '{}' "
                      "where it ends",
                      list ? "list" : "mapping", opened->bracket, list ? ']' : '}'));
    }
  if (e.msg.find("end of map") != std::string::npos)
    if (const auto culprit = misindented_line(text, line))
      return Diagnostic::at(file, culprit->first, 1, "invalid YAML: " + culprit->second);
  return Diagnostic::at(file, line, known ? e.mark.column + 1 : 1, "invalid YAML: " + e.msg);
}

}  // namespace

std::string describe(const YamlNode& node) {
  switch (node.kind) {
    case YamlNode::Kind::kNull:
      return "nothing (null)";
    case YamlNode::Kind::kSequence:
      return "a list";
    case YamlNode::Kind::kMap:
      return "a mapping";
    case YamlNode::Kind::kScalar:
      break;
  }
  return fmt::format("'{}'", shorten(node.value));
}

std::string shorten(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::size_t cut = max_bytes;
  // Back off continuation bytes (10xxxxxx) to the start of the character.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  std::string out(text.substr(0, cut));
  out.append("...");
  return out;
}

YamlParse parse_yaml(std::string_view text, const std::string& display_name,
                     const YamlLimits& limits) {
  YamlParse result;
  if (text.size() > limits.max_bytes) {
    result.error = Diagnostic::at(display_name, 1, 1,
                                  fmt::format("the spec is {} bytes, over the limit of {} bytes; "
                                              "a spec describes data, keep the data in files",
                                              text.size(), limits.max_bytes));
    return result;
  }
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // UTF-8 byte order mark
  if (auto bad = check_text(text, display_name)) {
    result.error = std::move(bad);
    return result;
  }
  TreeBuilder builder(limits);
  try {
    std::istringstream stream{std::string(text)};
    YAML::Parser parser(stream);
    if (parser.HandleNextDocument(builder) && parser.HandleNextDocument(builder) &&
        builder.documents() > 1) {
      result.error = Diagnostic::at(display_name, 1, 1,
                                    "the spec holds more than one YAML document ('---'); "
                                    "put everything in one");
      return result;
    }
  } catch (const LimitExceeded& e) {
    result.error = Diagnostic::at(display_name, e.line, e.column, e.message);
    return result;
  } catch (const YAML::Exception& e) {
    result.error = syntax_error(text, e, display_name);
    return result;
  } catch (const std::exception& e) {
    result.error =
        Diagnostic::at(display_name, 1, 1, std::string("cannot read the spec: ") + e.what());
    return result;
  }
  result.root = builder.root();
  return result;
}

}  // namespace scion::spec
