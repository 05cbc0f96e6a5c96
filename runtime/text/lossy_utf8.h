// Text made valid UTF-8 for printing: what a decoder gives when the bytes of its tokens
// do not form whole characters (a byte-level model may stop inside one).
#pragma once

#include <string>
#include <string_view>

namespace scion::text {

// `bytes` with every byte that does not start a well-formed UTF-8 sequence replaced by
// U+FFFD, as `tokenizers` decodes; valid UTF-8 comes back unchanged.
std::string lossy_utf8(std::string_view bytes);

}  // namespace scion::text
