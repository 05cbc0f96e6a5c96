// Text for XML and HTML (JUnit reports, the HTML family report and its SVG): one escape
// for element content and quoted attribute values alike, so that any string from a spec,
// a data set or the store shows as written and cannot break, or be refused by, a parser.
#pragma once

#include <string>
#include <string_view>

namespace scion::base {

// `text` made safe for XML 1.0 and HTML, in element content and in double- or
// single-quoted attribute values:
// - & < > " ' become &amp; &lt; &gt; &quot; &#39; (&#39; rather than &apos;, which
//   HTML 4 lacks);
// - tab, line feed and carriage return become &#9; &#10; &#13;, which survive in attribute
//   values (a parser would otherwise normalise them to spaces);
// - the other control characters (U+0000..U+001F, U+007F), which XML 1.0 forbids even as
//   references, and U+FFFE, U+FFFF become U+FFFD;
// - bytes that are not well-formed UTF-8 become U+FFFD, one for each maximal ill-formed
//   subsequence (the Unicode and WHATWG rule), so the output is always valid UTF-8.
std::string markup_escape(std::string_view text);

}  // namespace scion::base
