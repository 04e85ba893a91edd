#include "core/suggest.h"

#include <algorithm>
#include <cctype>

namespace scalescope::core {

namespace {

std::string folded(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != '-' && c != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::size_t levenshtein(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string closest_name(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string w = folded(word);
  if (w.empty()) return "";
  std::string best;
  std::size_t best_distance = 0;
  for (const auto& c : candidates) {
    const std::string f = folded(c);
    if (f.empty() || f.size() > 64 || w.size() > 64) continue;
    const std::size_t d = levenshtein(w, f);
    if (d > std::max<std::size_t>(1, std::max(w.size(), f.size()) / 3)) continue;
    if (best.empty() || d < best_distance) best = c, best_distance = d;
  }
  return best;
}

}  // namespace scalescope::core
