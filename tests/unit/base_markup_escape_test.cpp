#include <catch2/catch.hpp>
#include <string>

#include "base/markup_escape.h"

using scion::base::markup_escape;

namespace {
const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD
std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out += static_cast<char>(v);
  return out;
}
}  // namespace

TEST_CASE("markup characters and both quotes become references", "[base][markup]") {
  CHECK(markup_escape("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&#39;");
  CHECK(markup_escape("odd \"name\" <x>&y") == "odd &quot;name&quot; &lt;x&gt;&amp;y");
  CHECK(markup_escape("&amp;") == "&amp;amp;");  // escaped text is escaped again, not kept
  CHECK(markup_escape("") == "");
  CHECK(markup_escape("plain text 123") == "plain text 123");
}

TEST_CASE("tab, line feed and carriage return survive as references; other controls do not",
          "[base][markup]") {
  CHECK(markup_escape("x\ty\nz\r") == "x&#9;y&#10;z&#13;");
  CHECK(markup_escape(std::string("bell\x07", 5)) == "bell" + kReplacement);
  CHECK(markup_escape(std::string("nul\0end", 7)) == "nul" + kReplacement + "end");
  CHECK(markup_escape(bytes({0x1B, '[', '0', 'm'})) == kReplacement + "[0m");  // ESC
  CHECK(markup_escape(bytes({0x7F})) == kReplacement);                        // DEL
  CHECK(markup_escape(bytes({0x1F})) == kReplacement);
  CHECK(markup_escape(" ") == " ");  // 0x20 is text
}

TEST_CASE("well-formed UTF-8 passes through unchanged", "[base][markup]") {
  CHECK(markup_escape("caf\xC3\xA9") == "caf\xC3\xA9");                         // 2 bytes
  CHECK(markup_escape("\xE2\x80\xA6") == "\xE2\x80\xA6");                       // … 3 bytes
  CHECK(markup_escape("\xF0\x9F\x98\x80") == "\xF0\x9F\x98\x80");               // 😀 4 bytes
  CHECK(markup_escape("\xF4\x8F\xBF\xBD") == "\xF4\x8F\xBF\xBD");               // U+10FFFD
  CHECK(markup_escape("\xC2\x85") == "\xC2\x85");  // C1 controls are allowed by XML 1.0
}

TEST_CASE("ill-formed UTF-8 becomes one U+FFFD per maximal ill-formed subpart",
          "[base][markup]") {
  CHECK(markup_escape(bytes({0x80})) == kReplacement);                  // lone continuation
  CHECK(markup_escape(bytes({'a', 0xFF, 'b'})) == "a" + kReplacement + "b");
  CHECK(markup_escape(bytes({0xC0, 0xAF})) == kReplacement + kReplacement);  // overlong '/'
  CHECK(markup_escape(bytes({0xE0, 0x80, 0xAF})) ==
        kReplacement + kReplacement + kReplacement);                   // overlong, 3 bytes
  CHECK(markup_escape(bytes({0xED, 0xA0, 0x80})) ==
        kReplacement + kReplacement + kReplacement);                   // a UTF-16 surrogate
  CHECK(markup_escape(bytes({0xF4, 0x90, 0x80, 0x80})) ==
        kReplacement + kReplacement + kReplacement + kReplacement);    // above U+10FFFF
  CHECK(markup_escape(bytes({0xE2, 0x80})) == kReplacement);           // cut short at the end
  CHECK(markup_escape(bytes({0xE2, 0x80, '<'})) == kReplacement + "&lt;");  // cut short
  CHECK(markup_escape(bytes({0xF0, 0x9F, 0x98})) == kReplacement);     // 3 of 4 bytes
  CHECK(markup_escape(bytes({0xC3})) == kReplacement);
}

TEST_CASE("the noncharacters U+FFFE and U+FFFF, which XML forbids, are replaced",
          "[base][markup]") {
  CHECK(markup_escape("\xEF\xBF\xBE") == kReplacement);
  CHECK(markup_escape("\xEF\xBF\xBF") == kReplacement);
  CHECK(markup_escape("\xEF\xBF\xBD") == kReplacement);  // U+FFFD itself is kept
}
