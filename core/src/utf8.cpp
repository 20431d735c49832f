#include "tpusim/core/utf8.h"

#include <fmt/format.h>

namespace tpusim {

std::size_t first_invalid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
    if (b >= 0xC2 && b <= 0xDF) {
      len = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      len = 3;
      if (b == 0xE0) lo = 0xA0;
      if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      len = 4;
      if (b == 0xF0) lo = 0x90;
      if (b == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + len > text.size()) return i;
    for (std::size_t k = 1; k < len; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) return i;
    }
    i += len;
  }
  return std::string_view::npos;
}

std::string escape_invalid_utf8(std::string_view text) {
  std::string out;
  while (!text.empty()) {
    const std::size_t bad = first_invalid_utf8(text);
    if (bad == std::string_view::npos) {
      out += text;
      break;
    }
    out += text.substr(0, bad);
    out += fmt::format("\\x{:02X}", static_cast<unsigned char>(text[bad]));
    text.remove_prefix(bad + 1);
  }
  return out;
}

}  // namespace tpusim
