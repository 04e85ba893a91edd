#include "report/table.h"

#include <algorithm>

#include "core/error.h"

namespace scalescope::report {
namespace {

std::size_t display_width(const std::string& s) {
  // Count UTF-8 code points: continuation bytes (10xxxxxx) do not start a character.
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

/// U+202A–U+202E and U+2066–U+2069 (E2 80 AA–AE, E2 81 A6–A9): the bidirectional embedding/override/isolate
/// controls (Unicode Standard Annex #9).
bool bidi_control(unsigned char b1, unsigned char b2) {
  return (b1 == 0x80 && b2 >= 0xAA && b2 <= 0xAE) || (b1 == 0x81 && b2 >= 0xA6 && b2 <= 0xA9);
}

}  // namespace

TextTable::TextTable(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() != headers_.size())
    throw core::Error("table row has " + std::to_string(cells.size()) + " cells for " +
                      std::to_string(headers_.size()) + " columns");
  rows_.push_back(std::move(cells));
}

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

std::string TextTable::render() const {
  std::vector<std::size_t> width(headers_.size());
  for (std::size_t c = 0; c < headers_.size(); ++c) {
    width[c] = display_width(headers_[c]);
    for (const auto& r : rows_) width[c] = std::max(width[c], display_width(r[c]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      std::string pad(width[c] - display_width(cells[c]), ' ');
      if (c > 0) out += "  ";
      out += c == 0 ? cells[c] + pad : pad + cells[c];
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(headers_);
  std::size_t total = 0;
  for (auto w : width) total += w;
  out += std::string(total + 2 * (width.size() - 1), '-') + "\n";
  for (const auto& r : rows_) out += line(r);
  return out;
}

}  // namespace scalescope::report
