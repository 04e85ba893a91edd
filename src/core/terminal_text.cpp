#include "core/terminal_text.h"

namespace scalescope::core {
namespace {

/// U+202A–U+202E and U+2066–U+2069 (E2 80 AA–AE, E2 81 A6–A9): the bidirectional embedding/override/isolate
/// controls (Unicode Standard Annex #9).
bool bidi_control(unsigned char b1, unsigned char b2) {
  return (b1 == 0x80 && b2 >= 0xAA && b2 <= 0xAE) || (b1 == 0x81 && b2 >= 0xA6 && b2 <= 0xA9);
}

}  // namespace

std::string terminal_text(const std::string& text, std::size_t max_code_points) {
  std::string out;
  std::size_t points = 0;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    // Length of a well-formed UTF-8 sequence starting here (RFC 3629), 0 when it is not one.
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len > 1 && (i + len > text.size() || (len == 2 && c < 0xC2) || (len == 4 && c > 0xF4))) len = 0;
    for (std::size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) len = 0;
    if (points == max_code_points) {
      if (max_code_points >= 3) {  // replace the last three with "..." (they are single bytes or whole sequences)
        for (int drop = 0; drop < 3; ++drop) {
          while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
          if (!out.empty()) out.pop_back();
        }
        out += "...";
      }
      return out;
    }
    if (len == 0 || (len == 1 && (c < 0x20 || c == 0x7F))) {
      out += '?';
      i += len == 0 ? 1 : len;
    } else if ((len == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) ||
               (len == 3 && c == 0xE2 && bidi_control(static_cast<unsigned char>(text[i + 1]),
                                                      static_cast<unsigned char>(text[i + 2])))) {
      out += '?';  // C1 controls (U+0080–U+009F) and bidirectional overrides, which reorder what follows
      i += len;
    } else {
      out.append(text, i, len);
      i += len;
    }
    ++points;
  }
  return out;
}

}  // namespace scalescope::core

namespace scalescope::core {
namespace {

/// The length of the well-formed UTF-8 sequence at `s[i]` (RFC 3629; Unicode Table 3-7), 0 when there is none.
std::size_t well_formed_length(const std::string& s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) len = 2;
  else if (c == 0xE0) len = 3, lo = 0xA0;
  else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) len = 3;
  else if (c == 0xED) len = 3, hi = 0x9F;
  else if (c == 0xF0) len = 4, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) len = 4;
  else if (c == 0xF4) len = 4, hi = 0x8F;
  else return 0;
  if (i + len > s.size() || b(1) < lo || b(1) > hi) return 0;
  for (std::size_t k = 2; k < len; ++k)
    if (b(k) < 0x80 || b(k) > 0xBF) return 0;
  return len;
}

}  // namespace

std::string utf8_or_escaped(const std::string& bytes, bool* escaped, bool force) {
  bool any = false;
  for (std::size_t i = 0; i < bytes.size();) {
    const std::size_t len = well_formed_length(bytes, i);
    if (len == 0) {
      any = true;
      break;
    }
    i += len;
  }
  if (escaped) *escaped = any;
  if (!any && !force) return bytes;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < bytes.size();) {
    const std::size_t len = well_formed_length(bytes, i);
    if (len == 0) {
      const auto c = static_cast<unsigned char>(bytes[i++]);
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    } else {
      if (bytes[i] == '\\') out += '\\';
      out.append(bytes, i, len);
      i += len;
    }
  }
  return out;
}

}  // namespace scalescope::core
