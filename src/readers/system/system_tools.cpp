// The system-tools reader: the shared line model and text helpers, and the two public entry points, which run every
// tool's reader (system_tools_*.cpp) over the same lines.

#include "readers/system/system_tools.h"

#include "core/parse_count.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "text/log_text.h"
#include "readers/system/system_tools_internal.h"

namespace scalescope::analyze {
namespace system_tools_detail {

// ───────────────────────── lines ─────────────────────────

std::vector<Line> make_lines(std::string_view text) {
  std::vector<Line> out;
  const auto raw_lines = split_lines(text);
  out.reserve(raw_lines.size());
  std::size_t n = 0;
  for (std::string_view raw : raw_lines) {
    Line l;
    l.number = ++n;
    l.raw = raw;
    std::string_view body = raw;
    // E-mail and markdown quote markers: "> ", ">> ", "> > " at the start of the line.
    for (;;) {
      std::size_t i = 0;
      while (i < body.size() && body[i] == ' ' && i < 3) ++i;
      if (i < body.size() && body[i] == '>') {
        body.remove_prefix(i + 1);
        if (!body.empty() && body.front() == ' ') body.remove_prefix(1);
        continue;
      }
      break;
    }
    l.body = body;
    l.text = trim_blanks(body);
    std::size_t col = 0;
    for (char c : body) {
      if (c == ' ') ++col;
      else if (c == '\t') col = (col / 8 + 1) * 8;
      else break;
    }
    l.indent = col;
    out.push_back(l);
  }
  return out;
}

const char* tool_name(Tool t) {
  switch (t) {
    case Tool::lspci: return "lspci";
    case Tool::smi_query: return "nvidia-smi -q";
    case Tool::smi_nvlink: return "nvidia-smi nvlink";
    case Tool::smi_p2p: return "nvidia-smi topo -p2p";
    case Tool::smi_list: return "nvidia-smi -L";
    case Tool::kernel_log: return "kernel log";
    case Tool::p2p_test: return "p2pBandwidthLatencyTest";
    case Tool::ibstat: return "ibstat";
    case Tool::hypervisor: return "hypervisor";
    case Tool::smi_table: return "nvidia-smi";
    case Tool::iperf: return "iperf";
    case Tool::health_check: return "node health checks";
    case Tool::count_: break;
  }
  return "";
}

// ───────────────────────── Scan ─────────────────────────

void Scan::add(diagnose::FactValue value, const Line& line) {
  facts_.push_back({std::move(value), diagnose::at(source_, line.number, line.raw)});
}

void Scan::add(diagnose::FactValue value, diagnose::Provenance where) {
  facts_.push_back({std::move(value), std::move(where)});
}

void Scan::note(const Line& line, const std::string& message) {
  note("line " + std::to_string(line.number) + ": " + message);
}

void Scan::note(const std::string& message) {
  constexpr std::size_t kMaxNotes = 64;
  if (notes_.size() < kMaxNotes) {
    notes_.push_back(to_valid_utf8(message));
    return;
  }
  ++dropped_notes_;
  const std::string tail = "… and " + std::to_string(dropped_notes_) + " more notes like these";
  if (dropped_notes_ == 1) notes_.push_back(tail);
  else notes_.back() = tail;
}

void Scan::hypervisor(const std::string& what, const Line& line, const std::string& key) {
  saw(Tool::hypervisor);
  if (!hypervisors_.insert(key.empty() ? what : key).second) return;
  add(diagnose::HypervisorSeen{what}, line);
}

// ───────────────────────── text helpers ─────────────────────────

namespace {
char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
}  // namespace

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}
bool istarts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}
std::size_t ifind(std::string_view s, std::string_view needle) {
  if (needle.empty()) return 0;
  if (needle.size() > s.size()) return std::string_view::npos;
  for (std::size_t i = 0; i + needle.size() <= s.size(); ++i) {
    std::size_t k = 0;
    while (k < needle.size() && lower(s[i + k]) == lower(needle[k])) ++k;
    if (k == needle.size()) return i;
  }
  return std::string_view::npos;
}
bool icontains(std::string_view s, std::string_view needle) { return ifind(s, needle) != std::string_view::npos; }
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_blank(s[i])) ++i;
    const std::size_t start = i;
    while (i < s.size() && !is_blank(s[i])) ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

std::optional<std::pair<std::string_view, std::string_view>> split_key_value(std::string_view s) {
  const std::size_t colon = s.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const std::string_view key = trim_blanks(s.substr(0, colon));
  if (key.empty()) return std::nullopt;
  return std::pair{key, trim_blanks(s.substr(colon + 1))};
}

std::optional<std::pair<double, std::size_t>> leading_number(std::string_view s) {
  std::size_t skip = 0;
  while (skip < s.size() && is_blank(s[skip])) ++skip;
  s.remove_prefix(skip);
  if (s.empty() || !(is_digit(s.front()) || ((s.front() == '-' || s.front() == '.') && s.size() > 1))) return std::nullopt;
  double v = 0;
  const auto res = std::from_chars(s.data(), s.data() + s.size(), v);
  if (res.ec != std::errc() || !std::isfinite(v)) return std::nullopt;
  return std::pair{v, skip + static_cast<std::size_t>(res.ptr - s.data())};
}

std::optional<double> number(std::string_view s) {
  s = trim_blanks(s);
  const auto lead = leading_number(s);
  if (!lead || lead->second != s.size()) return std::nullopt;
  return lead->first;
}

std::optional<int> leading_int(std::string_view s) {
  std::size_t n = 0;
  while (n < s.size() && n < 9 && is_digit(s[n])) ++n;
  if (n == 0) return std::nullopt;
  int v = 0;
  for (std::size_t i = 0; i < n; ++i) v = v * 10 + (s[i] - '0');
  return v;
}

std::optional<int> small_int(std::string_view s) {
  s = trim_blanks(s);
  if (s.empty() || s.size() > 9) return std::nullopt;
  for (char c : s)
    if (!is_digit(c)) return std::nullopt;
  return leading_int(s);
}

std::size_t pci_address_length(std::string_view s) {
  // bus ":" device "." function, after an optional domain of 4 or 8 hex digits and ':'.
  auto bdf = [&](std::size_t at) -> std::size_t {
    if (at + 7 > s.size()) return 0;
    if (!is_hex(s[at]) || !is_hex(s[at + 1]) || s[at + 2] != ':' || !is_hex(s[at + 3]) || !is_hex(s[at + 4]) ||
        s[at + 5] != '.' || s[at + 6] < '0' || s[at + 6] > '7')
      return 0;
    if (at + 7 < s.size() && (is_hex(s[at + 7]) || s[at + 7] == ':' || s[at + 7] == '.')) return 0;
    return at + 7;
  };
  std::size_t hex = 0;
  while (hex < s.size() && is_hex(s[hex])) ++hex;
  if ((hex == 4 || hex == 8) && hex < s.size() && s[hex] == ':') {
    if (const std::size_t end = bdf(hex + 1)) return end;
  }
  return bdf(0);
}

bool is_prompt(std::string_view text) {
  if (starts_with(text, "$ ") || starts_with(text, "# ") || starts_with(text, "% ") || text == "$" || text == "#")
    return true;
  // user@host:~$ cmd, root@host:/dir# cmd, (env) user@host:~$ cmd, [user@host dir]$ cmd
  const std::size_t at = text.find('@');
  if (at == std::string_view::npos || at == 0 || at > 80 || is_blank(text[at - 1])) return false;
  const bool bracketed = text.substr(0, at).find('[') != std::string_view::npos;
  for (std::size_t i = at + 1; i < text.size() && i < at + 100; ++i) {
    const char c = text[i];
    if ((c == '$' || c == '#') && (i + 1 == text.size() || text[i + 1] == ' ')) return true;
    if (c == ' ' && !bracketed) return false;
  }
  return false;
}

bool is_fence(std::string_view text) { return starts_with(text, "```") || starts_with(text, "~~~"); }

bool is_elision(std::string_view text) {
  if (text.empty()) return false;
  if (text == "[...]" || text == "[…]" || text == "…" || iequals(text, "[snip]") || iequals(text, "<snip>")) return true;
  for (char c : text)
    if (c != '.') return false;
  return text.size() >= 3;
}

bool plain_log_prefix(std::string_view prefix) {
  return prefix.find_first_of("`\"'") == std::string_view::npos && prefix.size() <= 160;
}

// ───────────────────────── the whole scan ─────────────────────────

namespace {

Scan scan_text(std::string_view text, const std::string& source) {
  Scan scan(source);
  const std::vector<Line> lines = make_lines(text);
  read_lspci(lines, scan);
  read_smi_query(lines, scan);
  read_smi_lists(lines, scan);
  read_smi_p2p(lines, scan);
  read_kernel_log(lines, scan);
  read_p2p_test(lines, scan);
  read_ib_tools(lines, scan);
  read_smi_table(lines, scan);
  read_iperf(lines, scan);
  read_health_checks(lines, scan);
  return scan;
}

}  // namespace
}  // namespace system_tools_detail

namespace {

// The tools whose output a scan recognised, in Tool order.
std::vector<std::string> tools_of(const system_tools_detail::Scan& scan) {
  using namespace system_tools_detail;
  std::vector<std::string> out;
  for (std::size_t i = 0; i < static_cast<std::size_t>(Tool::count_); ++i)
    if (scan.seen(static_cast<Tool>(i))) out.emplace_back(tool_name(static_cast<Tool>(i)));
  return out;
}

// The reading of a scan: its facts in line order, its notes.
diagnose::Reading reading_of(system_tools_detail::Scan& scan) {
  diagnose::Reading reading;
  auto& facts = scan.facts();
  std::stable_sort(facts.begin(), facts.end(),
                   [](const diagnose::Fact& a, const diagnose::Fact& b) { return a.where.line < b.where.line; });
  for (auto& f : facts) reading.facts.add(std::move(f));
  reading.notes = std::move(scan.notes());
  return reading;
}

}  // namespace

std::vector<std::string> detect_system_tools(std::string_view text) {
  try {
    return tools_of(system_tools_detail::scan_text(text, "text"));
  } catch (...) {  // only std::bad_alloc can get here; a reader never throws otherwise
    return {};
  }
}

diagnose::Reading read_system_tools(std::string_view text, const std::string& source) {
  try {
    core::count_parse("system_tools", text);
    auto scan = system_tools_detail::scan_text(text, source);
    return reading_of(scan);
  } catch (...) {  // only std::bad_alloc can get here
    diagnose::Reading reading;
    reading.notes.push_back("the system-tools reader ran out of memory on this text; nothing was read");
    return reading;
  }
}

std::optional<diagnose::Reading> read_system_tools_if_any(std::string_view text, const std::string& source,
                                                          std::vector<std::string>& tools) {
  try {
    core::count_parse("system_tools", text);
    auto scan = system_tools_detail::scan_text(text, source);
    tools = tools_of(scan);
    if (tools.empty()) return std::nullopt;
    return reading_of(scan);
  } catch (...) {  // only std::bad_alloc can get here; a reader never throws otherwise
    tools.clear();
    return std::nullopt;
  }
}

}  // namespace scalescope::analyze
