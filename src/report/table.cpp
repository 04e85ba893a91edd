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


}  // namespace

TextTable::TextTable(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() != headers_.size())
    throw core::Error("table row has " + std::to_string(cells.size()) + " cells for " +
                      std::to_string(headers_.size()) + " columns");
  rows_.push_back(std::move(cells));
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
