#include "core/parse_count.h"

#include <functional>
#include <stdexcept>

namespace scalescope::core {
namespace {

thread_local std::map<std::pair<std::string, std::size_t>, int>* t_counts = nullptr;

}  // namespace

ParseCounting::ParseCounting() {
  if (t_counts != nullptr) throw std::logic_error("ParseCounting: already counting in this thread");
  t_counts = new std::map<std::pair<std::string, std::size_t>, int>();
}

ParseCounting::~ParseCounting() {
  delete t_counts;
  t_counts = nullptr;
}

const std::map<std::pair<std::string, std::size_t>, int>& ParseCounting::counts() const { return *t_counts; }

std::string ParseCounting::repeated() const {
  std::string out;
  for (const auto& [key, n] : *t_counts)
    if (n > 1) out += (out.empty() ? "" : ", ") + key.first + " x" + std::to_string(n);
  return out;
}

void count_parse(std::string_view reader, std::string_view text) {
  if (t_counts == nullptr) return;
  ++(*t_counts)[{std::string(reader), std::hash<std::string_view>{}(text)}];
}

}  // namespace scalescope::core
