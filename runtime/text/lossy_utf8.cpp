#include "runtime/text/lossy_utf8.h"

#include <utf8proc.h>

namespace scion::text {

std::string lossy_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t pos = 0; pos < bytes.size();) {
    utf8proc_int32_t c = -1;
    const utf8proc_ssize_t n =
        utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(bytes.data() + pos),
                         static_cast<utf8proc_ssize_t>(bytes.size() - pos), &c);
    if (n <= 0) {
      out += "\xEF\xBF\xBD";
      ++pos;
    } else {
      out.append(bytes, pos, static_cast<std::size_t>(n));
      pos += static_cast<std::size_t>(n);
    }
  }
  return out;
}

}  // namespace scion::text
