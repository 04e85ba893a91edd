#include "text/log_text.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "core/error.h"

namespace scalescope::analyze {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' || text[i] == '\r') {
      lines.push_back(text.substr(start, i - start));
      if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  if (start < text.size()) lines.push_back(text.substr(start));
  return lines;
}

std::string_view trim_blanks(std::string_view s) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

namespace {

// Length of the well-formed UTF-8 sequence at s[i], or 0 when the byte there does not start one.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || i + len > s.size()) return 0;
  if ((len == 2 && c < 0xC2) || (len == 4 && c > 0xF4)) return 0;
  for (std::size_t k = 1; k < len; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  const auto c1 = len > 1 ? static_cast<unsigned char>(s[i + 1]) : 0;
  if (len == 3 && ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0))) return 0;  // overlong, surrogates
  if (len == 4 && ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90))) return 0;
  return len;
}

}  // namespace

std::string to_valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    if (const std::size_t len = utf8_length(s, i)) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::string excerpt(std::string_view line, std::size_t max_bytes) {
  std::string s = to_valid_utf8(trim_blanks(line));
  if (s.size() <= max_bytes) return s;
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return s.substr(0, cut) + "…";
}

std::optional<std::uint64_t> parse_decimal(std::string_view t) {
  if (t.empty() || t.size() > 20) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : t) {
    if (c < '0' || c > '9') return std::nullopt;
    const std::uint64_t d = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

std::optional<std::pair<std::uint64_t, std::size_t>> leading_decimal(std::string_view t) {
  std::size_t n = 0;
  while (n < t.size() && n < 19 && t[n] >= '0' && t[n] <= '9') ++n;
  if (n == 0) return std::nullopt;
  return std::pair{*parse_decimal(t.substr(0, n)), n};
}

std::string read_text_file(const std::string& path, const std::string& what, std::uint64_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw core::Error(fmt::format("cannot read {} '{}': {}", what, path, std::strerror(errno)),
                      "check the path and its permissions");
  if (S_ISDIR(st.st_mode))
    throw core::Error(fmt::format("'{}' is a directory, not a file", path), "pass the files inside it, e.g. DIR/*");
  if (!S_ISREG(st.st_mode))
    throw core::Error(fmt::format("'{}' is not a regular file (a device, FIFO or socket)", path),
                      "save the text to a file first and pass that file");
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    throw core::Error(fmt::format("{} '{}' is {} bytes, more than the {} MiB scalescope reads", what, path,
                                  static_cast<std::uint64_t>(st.st_size), max_bytes >> 20),
                      "cut the file to the part that matters (e.g. grep the NCCL or watchdog lines) and pass that");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw core::Error(fmt::format("cannot open {} '{}': {}", what, path, std::strerror(errno)),
                             "check the path and its permissions");
  std::string text;
  text.resize(static_cast<std::size_t>(st.st_size));
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw core::Error(fmt::format("cannot read {} '{}': read error", what, path), "check the disk and the file");
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

std::string_view to_string(Severity s) {
  switch (s) {
    case Severity::info: return "info";
    case Severity::warning: return "warning";
    case Severity::error: return "error";
  }
  return "info";
}

void to_json(nlohmann::json& j, Severity s) { j = std::string(to_string(s)); }

void to_json(nlohmann::json& j, const Evidence& e) {
  j = {{"source", to_valid_utf8(e.source)}, {"line", e.line}, {"text", to_valid_utf8(e.excerpt)}};
}

void to_json(nlohmann::json& j, const LogFinding& f) {
  j = {{"severity", f.severity}, {"title", to_valid_utf8(f.title)}, {"detail", to_valid_utf8(f.detail)},
       {"remedy", to_valid_utf8(f.remedy)}, {"evidence", f.evidence}};
}

}  // namespace scalescope::analyze
