#include "readers/nccl/nccl_log.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "core/parse_count.h"

namespace scalescope::analyze {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_host_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}
bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

std::vector<std::string_view> split_blanks(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::optional<int> to_int(std::string_view t) {
  bool negative = !t.empty() && t.front() == '-';
  if (negative) t.remove_prefix(1);
  auto v = parse_decimal(t);
  if (!v || *v > 2147483647ull) return std::nullopt;
  return negative ? -static_cast<int>(*v) : static_cast<int>(*v);
}

std::optional<std::uint64_t> parse_hex(std::string_view t) {
  if (starts_with(t, "0x") || starts_with(t, "0X")) t.remove_prefix(2);
  if (t.empty() || t.size() > 16) return std::nullopt;
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v, 16);
  if (ec != std::errc() || p != t.data() + t.size()) return std::nullopt;
  return v;
}

std::optional<double> to_double(std::string_view t) {
  while (!t.empty() && (t.back() == ',' || t.back() == ')')) t.remove_suffix(1);
  if (t.empty()) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// The value after `key ` in a token list ("rank 13 nRanks 16" → key "nRanks" → "16").
std::optional<std::string_view> value_after(const std::vector<std::string_view>& tok, std::string_view key) {
  for (std::size_t i = 0; i + 1 < tok.size(); ++i)
    if (tok[i] == key) return tok[i + 1];
  return std::nullopt;
}

// ---- the line prefix ----

enum class Level { info, warn, trace };

struct Tag {
  std::size_t pos = 0;  // where "NCCL" starts
  std::size_t end = 0;  // after the level word
  Level level = Level::info;
};

// Every "NCCL INFO" / "NCCL WARN" / "NCCL TRACE" standing as its own words in the line.
std::vector<Tag> find_tags(std::string_view line) {
  std::vector<Tag> tags;
  std::size_t from = 0;
  while (true) {
    const std::size_t p = line.find("NCCL ", from);
    if (p == std::string_view::npos) break;
    from = p + 5;
    if (p > 0 && line[p - 1] != ' ' && line[p - 1] != '\t' && line[p - 1] != ']' && line[p - 1] != ':' &&
        line[p - 1] != '>')
      continue;
    std::string_view rest = line.substr(p + 5);
    Level level;
    std::size_t len;
    if (starts_with(rest, "INFO")) level = Level::info, len = 4;
    else if (starts_with(rest, "WARN")) level = Level::warn, len = 4;
    else if (starts_with(rest, "TRACE")) level = Level::trace, len = 5;
    else continue;
    const std::size_t end = p + 5 + len;
    if (end < line.size() && line[end] != ' ' && line[end] != '\t') continue;
    tags.push_back({p, end, level});
  }
  return tags;
}

struct Header {
  NcclOrigin origin;
  std::optional<std::string> location;  // "misc/socket.cc:46" (WARN, TRACE)
  std::size_t start = 0;                // where the header begins in the line
  bool has_device = false;
};

// "file.cc:123" or "func:123": one ':' followed by digits only, something before it.
bool is_location(std::string_view t) {
  const std::size_t c = t.rfind(':');
  if (c == std::string_view::npos || c == 0 || c + 1 >= t.size()) return false;
  if (t.substr(0, c).find(':') != std::string_view::npos) return false;
  for (char ch : t.substr(c + 1))
    if (!is_digit(ch)) return false;
  return !is_digit(t.front());
}

// "[5]" → 5.
std::optional<int> device_token(std::string_view t) {
  if (t.size() < 3 || t.front() != '[' || t.back() != ']') return std::nullopt;
  return to_int(t.substr(1, t.size() - 2));
}

// The host at the end of `s` after launcher junk: "[1,0]<stdout>:host-a" → "host-a".
std::optional<std::string> host_suffix(std::string_view s) {
  std::size_t i = s.size();
  while (i > 0 && is_host_char(s[i - 1])) --i;
  std::string_view h = s.substr(i);
  bool letter = std::any_of(h.begin(), h.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
  if (h.empty() || !letter) return std::nullopt;
  return std::string(h);
}

// Reads NCCL's prefix backwards from the tag at `tag_pos`: [location] [trace time] "[dev]" host[:pid:tid].
Header parse_header(std::string_view line, std::size_t tag_pos, std::size_t floor) {
  Header h;
  h.start = tag_pos;
  std::string_view before = line.substr(floor, tag_pos - floor);
  // Token boundaries from the right.
  auto last_token = [&](std::size_t end, std::size_t& tok_start) -> std::string_view {
    std::size_t e = end;
    while (e > 0 && (before[e - 1] == ' ' || before[e - 1] == '\t')) --e;
    std::size_t b = e;
    while (b > 0 && before[b - 1] != ' ' && before[b - 1] != '\t') --b;
    tok_start = b;
    return before.substr(b, e - b);
  };
  std::size_t cursor = before.size(), b = 0;
  std::string_view t = last_token(cursor, b);
  if (!t.empty() && !device_token(t) && is_location(t)) {
    h.location = std::string(t);
    cursor = b;
    t = last_token(cursor, b);
  }
  if (!t.empty() && !device_token(t) && to_double(t)) {  // TRACE's seconds-since-start
    cursor = b;
    t = last_token(cursor, b);
  }
  h.start = floor + cursor;
  if (auto dev = device_token(t)) {
    h.origin.device = *dev;
    h.has_device = true;
    cursor = b;
    h.start = floor + b;
    std::string_view host = last_token(cursor, b);
    if (!host.empty()) {
      // host:pid:tid (possibly glued to launcher junk before the host)
      const std::size_t c2 = host.rfind(':');
      const std::size_t c1 = c2 == std::string_view::npos || c2 == 0 ? std::string_view::npos : host.rfind(':', c2 - 1);
      if (c1 != std::string_view::npos) {
        auto pid = parse_decimal(host.substr(c1 + 1, c2 - c1 - 1));
        auto tid = parse_decimal(host.substr(c2 + 1));
        if (pid && tid && *pid < (1ull << 62) && *tid < (1ull << 62)) {
          h.origin.pid = static_cast<std::int64_t>(*pid);
          h.origin.tid = static_cast<std::int64_t>(*tid);
          h.origin.host = host_suffix(host.substr(0, c1));
          std::size_t i = c1;
          while (i > 0 && is_host_char(host[i - 1])) --i;
          h.start = floor + b + i;
        }
      } else if (std::all_of(host.begin(), host.end(), is_host_char)) {
        h.origin.host = host_suffix(host);
        if (h.origin.host) h.start = floor + b;
      }
    }
  }
  return h;
}

// ---- facts from one message ----

std::string_view strip_dot(std::string_view v) {
  v = trim_blanks(v);
  if (!v.empty() && v.back() == '.') v.remove_suffix(1);
  return v;
}

struct ProcessKey {
  std::optional<std::string> host;
  std::optional<std::int64_t> pid;
  bool operator<(const ProcessKey& o) const { return std::tie(host, pid) < std::tie(o.host, o.pid); }
  bool operator==(const ProcessKey& o) const { return host == o.host && pid == o.pid; }
};

class Parser {
 public:
  Parser(std::string_view text, std::string source) {
    log_.source = std::move(source);
    lines_ = split_lines(text);
    log_.lines = lines_.size();
  }

  NcclLog run() {
    for (std::size_t i = 0; i < lines_.size(); ++i) read_line(i + 1, lines_[i]);
    finish();
    return std::move(log_);
  }

 private:
  NcclLog log_;
  std::vector<std::string_view> lines_;
  std::map<ProcessKey, std::size_t> process_index_;
  std::map<ProcessKey, std::size_t> last_warning_;  // process → index into log_.warnings
  std::map<std::tuple<ProcessKey, std::string>, std::size_t> comm_index_;
  std::map<std::string, std::size_t> evidence_per_kind_;
  std::optional<std::size_t> wrappable_warning_;     // the previous line was this WARN
  std::map<ProcessKey, std::set<int>> process_devices_;
  static constexpr std::size_t kMaxEvidence = 20000;

  void keep(std::size_t line, const std::string& kind, std::size_t per_kind_limit = SIZE_MAX) {
    if (log_.evidence_lines.size() >= kMaxEvidence || log_.evidence_lines.count(line)) return;
    if (evidence_per_kind_[kind]++ >= per_kind_limit) return;
    log_.evidence_lines[line] = excerpt(lines_[line - 1], 300);
  }

  void note(std::string text) {
    if (log_.notes.size() < 200) log_.notes.push_back(std::move(text));
    else if (log_.notes.size() == 200) log_.notes.push_back("more notes left out");
  }

  void count_process(const NcclOrigin& o, std::size_t line) {
    if (!o.host && !o.pid) return;
    ProcessKey key{o.host, o.pid};
    auto [it, fresh] = process_index_.emplace(key, log_.processes.size());
    if (fresh) {
      NcclProcess p;
      p.host = o.host;
      p.pid = o.pid;
      p.first_line = line;
      log_.processes.push_back(std::move(p));
    }
    auto& p = log_.processes[it->second];
    ++p.lines;
    if (o.device) process_devices_[key].insert(*o.device);
  }

  void read_line(std::size_t n, std::string_view raw) {
    const auto tags = find_tags(raw);
    if (tags.empty()) {
      read_untagged(n, raw);
      return;
    }
    // Split glued lines: a later tag starts a new piece when a "[dev]" prefix stands before it.
    std::vector<std::pair<Tag, Header>> pieces;
    std::size_t floor = 0;
    for (std::size_t k = 0; k < tags.size(); ++k) {
      if (tags[k].pos < floor) continue;
      Header h = parse_header(raw, tags[k].pos, floor);
      // A tag without NCCL's "[dev]" prefix is NCCL's only at the start of a line (a log whose prefixes were
      // stripped), alone or after the source location NCCL prints before WARN ("include/shm.h:28 NCCL WARN …");
      // elsewhere it is quoted in a message or in prose.
      const bool bare_with_location = k == 0 && h.location && trim_blanks(raw.substr(0, h.start)).empty();
      if (!h.has_device && !bare_with_location && (k > 0 || !trim_blanks(raw.substr(0, tags[k].pos)).empty())) continue;
      pieces.push_back({tags[k], h});
      floor = tags[k].end;
    }
    if (pieces.empty()) {
      read_untagged(n, raw);
      return;
    }
    if (pieces.size() > 1) note(fmt::format("line {}: {} NCCL lines written into one; read separately", n, pieces.size()));
    wrappable_warning_.reset();
    for (std::size_t k = 0; k < pieces.size(); ++k) {
      const auto& [tag, header] = pieces[k];
      const std::size_t msg_end = k + 1 < pieces.size() ? pieces[k + 1].second.start : raw.size();
      std::string_view message = trim_blanks(raw.substr(tag.end, msg_end > tag.end ? msg_end - tag.end : 0));
      ++log_.nccl_lines;
      if (tag.level == Level::info) ++log_.info_lines;
      else if (tag.level == Level::warn) ++log_.warn_lines;
      else ++log_.trace_lines;
      count_process(header.origin, n);
      if (k + 1 < pieces.size() && message.empty()) continue;  // the first piece lost its text
      if (tag.level == Level::warn) {
        add_warning(n, header, message);
        if (k + 1 == pieces.size()) wrappable_warning_ = log_.warnings.size() - 1;
      } else {
        read_message(n, header.origin, message, header.location);
      }
    }
  }

  // Lines without a level tag: "NCCL version …" (NCCL_DEBUG=VERSION), COLL lines and connection lines
  // whose prefix was lost, and the continuation of a hard-wrapped WARN line.
  void read_untagged(std::size_t n, std::string_view raw) {
    const std::size_t wrap = wrappable_warning_.value_or(SIZE_MAX);
    wrappable_warning_.reset();
    std::string_view line = trim_blanks(raw);
    if (line.empty()) return;
    if (auto p = line.find("NCCL version "); p != std::string_view::npos && p + 13 < line.size() && is_digit(line[p + 13])) {
      add_version(n, NcclOrigin{}, line.substr(p + 13));
      return;
    }
    if (auto p = line.find(": opCount "); p != std::string_view::npos) {
      std::size_t b = p;
      while (b > 0 && std::isalpha(static_cast<unsigned char>(line[b - 1]))) --b;
      if (b < p && add_collective(n, NcclOrigin{}, line.substr(b))) {
        note(fmt::format("line {}: a COLL line without its NCCL prefix (host and pid unknown)", n));
        return;
      }
    }
    if (auto p = line.find("Channel "); p != std::string_view::npos && contains(line, " via ")) {
      if (add_connection(n, NcclOrigin{}, line.substr(p))) {
        note(fmt::format("line {}: a connection line whose NCCL prefix is damaged (host and pid unknown)", n));
        return;
      }
    }
    // A connection quoted without its "Channel NN :" ("9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA").
    if (!line.empty() && is_digit(line.front()) && contains(line, " -> ") && contains(line, " via ")) {
      if (add_connection(n, NcclOrigin{}, "Channel 00 : " + std::string(line))) {
        note(fmt::format("line {}: a connection quoted without its channel and NCCL prefix (channel, host and pid "
                         "unknown)",
                         n));
        return;
      }
    }
    // A setting quoted without its prefix ("NCCL_P2P_LEVEL set by environment to LOC").
    if (starts_with(line, "NCCL_") && (contains(line, " set by environment to ") || contains(line, " set to "))) {
      const std::size_t before = log_.settings.size();
      add_setting(n, NcclOrigin{}, line);
      if (log_.settings.size() > before) {
        note(fmt::format("line {}: an NCCL setting quoted without its NCCL prefix", n));
        return;
      }
    }
    if (wrap != SIZE_MAX && looks_like_continuation(line)) {
      auto& w = log_.warnings[wrap];
      w.message += " ";
      w.message += to_valid_utf8(line);  // the text is JSON-bound: the continuation gets the same repair
      w.wrapped = true;
      keep(n, "warn");
      note(fmt::format("line {}: continues the WARN line {} (hard-wrapped); joined", n, w.line));
    }
  }

  // The rest of a hard-wrapped WARN line ("0, vendor err 129 (Recv)"): several words starting with a digit, a
  // lower-case letter or punctuation, no NCCL tag, and not a bare "host:pid:tid" fragment of a cut line.
  static bool looks_like_continuation(std::string_view line) {
    if (line.size() > 400 || contains(line, "NCCL") || contains(line, "Traceback")) return false;
    if (line.find(' ') == std::string_view::npos) return false;
    const std::string_view first = line.substr(0, line.find(' '));
    if (std::count(first.begin(), first.end(), ':') >= 2) return false;
    const char c = line.front();
    return is_digit(c) || std::islower(static_cast<unsigned char>(c)) || c == ',' || c == '(' || c == ')';
  }

  void add_version(std::size_t n, const NcclOrigin& o, std::string_view text) {
    auto tok = split_blanks(text);
    if (tok.empty()) return;
    std::string_view full = tok.front();
    std::size_t i = 0;
    while (i < full.size() && (is_digit(full[i]) || full[i] == '.')) ++i;
    std::string_view version = full.substr(0, i);
    while (!version.empty() && version.back() == '.') version.remove_suffix(1);
    if (version.empty() || !contains(version, ".")) return;
    // Every NCCL release is major.minor.patch ("2.18.3"): "2.1" is a line cut short, and a version mismatch
    // built on it would be false.
    if (std::count(version.begin(), version.end(), '.') != 2) {
      log_.notes.push_back(fmt::format("line {}: NCCL version '{}' is not major.minor.patch (a cut line?); not used", n,
                                       to_valid_utf8(version)));
      return;
    }
    log_.versions.push_back({std::string(version), to_valid_utf8(full), o, n});
    keep(n, "version", 200);
  }

  void read_message(std::size_t n, const NcclOrigin& o, std::string_view m, const std::optional<std::string>& location) {
    if (m.empty()) return;
    if (starts_with(m, "NCCL version ")) return add_version(n, o, m.substr(13));
    // Unwinding: "transport/net.cc:1134 -> 6", "proxy.cc:858 -> 6 [Proxy Thread]"
    if (auto arrow = m.find(" -> "); arrow != std::string_view::npos && arrow > 0 && is_location(m.substr(0, arrow)) &&
                                     !starts_with(m, "Channel") && !starts_with(m, "Ring")) {
      std::string_view rest = m.substr(arrow + 4);
      if (auto code = leading_decimal(rest)) {
        NcclUnwind u{to_valid_utf8(m.substr(0, arrow)), static_cast<int>(std::min<std::uint64_t>(code->first, 1000000)),
                     to_valid_utf8(trim_blanks(rest.substr(code->second))), n};
        ProcessKey key{o.host, o.pid};
        auto it = last_warning_.find(key);
        if (it != last_warning_.end()) {
          auto& w = log_.warnings[it->second];
          if (w.unwind.size() < 64) w.unwind.push_back(std::move(u));
        } else if (log_.orphan_unwind.size() < 1000) {
          log_.orphan_unwind.push_back(std::move(u));
        }
        keep(n, "unwind", 200);
        return;
      }
    }
    if ((starts_with(m, "Channel ") || starts_with(m, "Ring ")) && contains(m, " via ")) {
      add_connection(n, o, m);
      return;
    }
    if (starts_with(m, "Channel ") || starts_with(m, "Ring ")) {
      add_ring(n, o, m);
      return;
    }
    if (starts_with(m, "Trees ") || starts_with(m, "Trees[")) return add_trees(n, o, m);
    if (contains(m, "coll channels") || contains(m, "p2p channels")) return add_channel_counts(n, o, m);
    if (starts_with(m, "NCCL_")) return add_setting(n, o, m);
    if (starts_with(m, "Using network ")) {
      log_.net_events.push_back({NcclNetEvent::Kind::using_network, to_valid_utf8(trim_blanks(m.substr(14))), o, n});
      keep(n, "net", 200);
      return;
    }
    if (starts_with(m, "Bootstrap") && contains(m, ": Using ")) {
      auto p = m.find(": Using ");
      log_.net_events.push_back({NcclNetEvent::Kind::bootstrap_interface, to_valid_utf8(trim_blanks(m.substr(p + 8))), o, n});
      keep(n, "net", 200);
      return;
    }
    if (starts_with(m, "NET/")) return add_net(n, o, m);
    if (starts_with(m, "Init timings")) return add_init_timings(n, o, m);
    if (contains(m, "comm 0x") && contains(m, "rank ") && (contains(m, "nranks ") || contains(m, "nRanks ")) &&
        !contains(m, "opCount"))
      return add_communicator(n, o, m);
    if (auto p = m.find(": opCount "); p != std::string_view::npos) {
      add_collective(n, o, m);
      return;
    }
    if (starts_with(m, "Pattern ") && contains(m, "type ")) return add_pattern(n, o, m);
    if (starts_with(m, "Check P2P Type")) return add_p2p_check(n, o, m);
    // NCCL's topology check (src/graph/paths.cc): CUDA says no peer access between two GPUs joined below SYS (consumer
    // boards, some VMs) — "P2P is disabled between connected GPUs 1 and 0" (INFO), or between NVLink-joined ones (WARN).
    if (starts_with(m, "P2P is disabled between")) {
      NcclP2pCheck c;
      c.intra_node_p2p_support = false;
      c.origin = o;
      c.line = n;
      keep(n, "p2pcheck", 64);
      if (log_.p2p_checks.size() < 100000) log_.p2p_checks.push_back(std::move(c));
      return;
    }
    (void)location;
  }

  void add_warning(std::size_t n, const Header& h, std::string_view m) {
    NcclWarning w;
    w.location = h.location;
    w.message = to_valid_utf8(m);
    w.origin = h.origin;
    w.line = n;
    if (log_.warnings.size() >= 100000) return;  // a log of nothing but WARNs: the first 100000 tell the story
    log_.warnings.push_back(std::move(w));
    last_warning_[ProcessKey{h.origin.host, h.origin.pid}] = log_.warnings.size() - 1;
    keep(n, "warn", 2000);
  }

  // "<a>[<tag>] -> <b>[<tag>]": rank and the text in brackets.
  static bool rank_and_tag(std::string_view t, int& rank, std::string& tag) {
    const std::size_t open = t.find('[');
    if (open == std::string_view::npos || t.back() != ']') return false;
    auto r = to_int(t.substr(0, open));
    if (!r || *r < 0) return false;
    rank = *r;
    tag = std::string(t.substr(open + 1, t.size() - open - 2));
    return !tag.empty() && std::all_of(tag.begin(), tag.end(), is_hex);
  }

  bool add_connection(std::size_t n, const NcclOrigin& o, std::string_view m) {
    NcclConnection c;
    c.ring_keyword = starts_with(m, "Ring ");
    std::string_view rest = m.substr(c.ring_keyword ? 5 : 8);
    const std::size_t colon = rest.find(" : ");
    if (colon == std::string_view::npos) return false;
    std::string_view chan = trim_blanks(rest.substr(0, colon));
    if (auto slash = chan.find('/'); slash != std::string_view::npos) chan = chan.substr(0, slash);
    auto ch = to_int(chan);
    if (!ch || *ch < 0) return false;
    c.channel = *ch;
    std::string_view body = rest.substr(colon + 3);
    const std::size_t via = body.find(" via ");
    if (via == std::string_view::npos) return false;
    auto tok = split_blanks(body.substr(0, via));
    if (tok.size() < 3 || tok[1] != "->") return false;
    if (!rank_and_tag(tok[0], c.from_rank, c.from_tag) || !rank_and_tag(tok[2], c.to_rank, c.to_tag)) return false;
    if (tok.size() >= 4) {
      if (tok[3] == "[send]") c.direction = "send";
      else if (tok[3] == "[receive]") c.direction = "receive";
    }
    c.via = to_valid_utf8(trim_blanks(body.substr(via + 5)));
    if (c.via.empty()) return false;
    classify(c);
    c.origin = o;
    c.line = n;
    keep(n, "conn:" + c.transport, 8);
    log_.connections.push_back(std::move(c));
    return true;
  }

  static void classify(NcclConnection& c) {
    const std::string& v = c.via;
    std::vector<std::string> parts;
    std::size_t b = 0;
    while (true) {
      const std::size_t s = v.find('/', b);
      parts.push_back(v.substr(b, s == std::string::npos ? std::string::npos : s - b));
      if (s == std::string::npos) break;
      b = s + 1;
    }
    c.gdrdma = std::find(parts.begin(), parts.end(), "GDRDMA") != parts.end();
    c.p2p_read = parts.size() > 2 && parts.back() == "read";
    if (parts[0] == "P2P") {
      c.kind = TransportKind::p2p;
      c.transport = parts.size() > 1 ? "P2P/" + parts[1] : "P2P";
    } else if (parts[0] == "SHM" || starts_with(v, "direct shared memory") || starts_with(v, "shared memory")) {
      c.kind = TransportKind::shm;
      c.transport = "SHM";
    } else if (parts[0] == "NET") {
      c.kind = TransportKind::net;
      c.transport = parts.size() > 1 ? "NET/" + parts[1] : "NET";
    } else if (parts[0] == "COLLNET" || parts[0] == "CollNet") {
      c.kind = TransportKind::collnet;
      c.transport = parts[0];
    } else if (parts[0] == "NVLS") {
      c.kind = TransportKind::nvls;
      c.transport = "NVLS";
    } else if (starts_with(v, "direct pointer")) {  // pre-2.5 wording for P2P inside one process
      c.kind = TransportKind::p2p;
      c.transport = "P2P/direct pointer";
    } else {
      c.kind = TransportKind::other;
      c.transport = parts[0];
    }
  }

  void add_ring(std::size_t n, const NcclOrigin& o, std::string_view m) {
    const bool ring = starts_with(m, "Ring ");
    std::string_view rest = m.substr(ring ? 5 : 8);
    const std::size_t colon = rest.find(':');
    if (colon == std::string_view::npos) return;
    std::string_view chan = trim_blanks(rest.substr(0, colon));
    NcclRing r;
    if (auto slash = chan.find('/'); slash != std::string_view::npos) {
      auto total = to_int(chan.substr(slash + 1));
      if (!total) return;
      r.channels = *total;
      chan = chan.substr(0, slash);
    }
    auto ch = to_int(chan);
    if (!ch || *ch < 0) return;
    r.channel = *ch;
    for (auto t : split_blanks(rest.substr(colon + 1))) {
      auto v = to_int(t);
      if (!v || *v < 0) return;  // not a ring list ("Channel 00 : ..." of some other kind)
      if (r.ranks.size() < 100000) r.ranks.push_back(*v);
    }
    if (r.ranks.empty()) return;
    r.origin = o;
    r.line = n;
    keep(n, "ring", 16);
    log_.rings.push_back(std::move(r));
  }

  // "Trees [0] 5/-1/-1->4->3 [1] 5/-1/-1->4->3"
  void add_trees(std::size_t n, const NcclOrigin& o, std::string_view m) {
    std::size_t p = 0;
    bool any = false;
    while ((p = m.find('[', p)) != std::string_view::npos) {
      const std::size_t close = m.find(']', p);
      if (close == std::string_view::npos) break;
      auto ch = to_int(m.substr(p + 1, close - p - 1));
      p = close + 1;
      if (!ch || *ch < 0) continue;
      std::size_t end = m.find(" [", p);
      std::string_view spec = trim_blanks(m.substr(p, end == std::string_view::npos ? std::string_view::npos : end - p));
      if (auto bar = spec.find('|'); bar != std::string_view::npos) spec = spec.substr(0, bar);
      // children->rank->parent
      const std::size_t a1 = spec.find("->");
      if (a1 == std::string_view::npos) continue;
      const std::size_t a2 = spec.find("->", a1 + 2);
      if (a2 == std::string_view::npos) continue;
      auto rank = to_int(spec.substr(a1 + 2, a2 - a1 - 2));
      auto parent = to_int(spec.substr(a2 + 2));
      if (!rank || !parent) continue;
      NcclTree t;
      t.channel = *ch;
      t.rank = *rank;
      if (*parent >= 0) t.parent = *parent;
      std::string_view kids = spec.substr(0, a1);
      std::size_t b = 0;
      while (b <= kids.size()) {
        const std::size_t s = kids.find('/', b);
        auto k = to_int(kids.substr(b, s == std::string_view::npos ? std::string_view::npos : s - b));
        if (k && *k >= 0) t.children.push_back(*k);
        if (s == std::string_view::npos) break;
        b = s + 1;
      }
      t.origin = o;
      t.line = n;
      if (log_.trees.size() < 1000000) log_.trees.push_back(std::move(t));
      any = true;
    }
    if (any) keep(n, "tree", 16);
  }

  // "2 coll channels, 0 nvls channels, 2 p2p channels, 2 p2p channels per peer"
  void add_channel_counts(std::size_t n, const NcclOrigin& o, std::string_view m) {
    NcclChannelCounts c;
    std::size_t b = 0;
    while (b < m.size()) {
      std::size_t e = m.find(',', b);
      std::string_view part = trim_blanks(m.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b));
      auto tok = split_blanks(part);
      if (tok.size() >= 3 && tok[2] == "channels") {
        if (auto v = to_int(tok[0])) {
          if (tok[1] == "coll") c.coll = *v;
          else if (tok[1] == "collnet") c.collnet = *v;
          else if (tok[1] == "nvls") c.nvls = *v;
          else if (tok[1] == "p2p") (tok.size() >= 5 && tok[3] == "per" ? c.p2p_per_peer : c.p2p) = *v;
        }
      }
      if (e == std::string_view::npos) break;
      b = e + 1;
    }
    if (!c.coll && !c.p2p && !c.nvls && !c.collnet) return;
    c.origin = o;
    c.line = n;
    keep(n, "channels", 16);
    log_.channel_counts.push_back(std::move(c));
  }

  void add_setting(std::size_t n, const NcclOrigin& o, std::string_view m) {
    std::size_t i = 0;
    while (i < m.size() && (std::isupper(static_cast<unsigned char>(m[i])) || is_digit(m[i]) || m[i] == '_')) ++i;
    std::string_view name = m.substr(0, i), rest = m.substr(i);
    NcclSetting s;
    if (starts_with(rest, " set by environment to ")) {
      s.by_environment = true;
      rest.remove_prefix(23);
    } else if (starts_with(rest, " set to ")) {
      rest.remove_prefix(8);
    } else {
      return;
    }
    s.name = std::string(name);
    s.value = to_valid_utf8(strip_dot(rest));
    s.origin = o;
    s.line = n;
    keep(n, "setting", 500);
    if (log_.settings.size() < 10000) log_.settings.push_back(std::move(s));
  }

  void add_net(std::size_t n, const NcclOrigin& o, std::string_view m) {
    std::string_view rest = m.substr(4);
    std::size_t e = 0;
    while (e < rest.size() && rest[e] != ' ' && rest[e] != ':') ++e;
    const std::string provider = to_valid_utf8(rest.substr(0, e));
    std::string_view after = trim_blanks(rest.substr(e));
    if (starts_with(after, ": ")) after = trim_blanks(after.substr(1));
    else if (starts_with(after, ":")) after = trim_blanks(after.substr(1));
    if (starts_with(after, "Using [") || starts_with(after, "Using[")) {
      NcclNetDevices d;
      d.provider = provider;
      std::string_view list = after.substr(5);
      std::string_view oob;
      if (auto semi = list.find(';'); semi != std::string_view::npos) {
        oob = trim_blanks(list.substr(semi + 1));
        list = list.substr(0, semi);
      }
      for (auto t : split_blanks(list)) {
        if (t == "[RO]") { d.relaxed_ordering = true; continue; }
        if (t.front() == '[') {
          auto close = t.find(']');
          if (close != std::string_view::npos && close + 1 < t.size()) d.devices.push_back(to_valid_utf8(t.substr(close + 1)));
        }
      }
      if (starts_with(oob, "OOB ")) d.oob = to_valid_utf8(trim_blanks(oob.substr(4)));
      d.origin = o;
      d.line = n;
      keep(n, "net", 200);
      if (log_.net_devices.size() < 10000) log_.net_devices.push_back(std::move(d));
      return;
    }
    // "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'" / "… Enabled for HCA 1 'mlx5_1'" (NCCL's net_ib.cc)
    if (auto g = after.find("GPU Direct RDMA "); g != std::string_view::npos) {
      std::string_view state = after.substr(g + 16);
      const bool enabled = starts_with(state, "Enabled");
      if (enabled || starts_with(state, "Disabled")) {
        NcclGdrLine d;
        d.enabled = enabled;
        if (auto q = state.find('\''); q != std::string_view::npos) {
          auto q2 = state.find('\'', q + 1);
          d.hca = to_valid_utf8(state.substr(q + 1, q2 == std::string_view::npos ? std::string_view::npos : q2 - q - 1));
        } else if (auto h = state.find("HCA "); h != std::string_view::npos) {
          d.hca = to_valid_utf8(trim_blanks(state.substr(h + 4)));
        }
        d.origin = o;
        d.line = n;
        keep(n, "net", 200);
        if (log_.gdr_lines.size() < 10000) log_.gdr_lines.push_back(std::move(d));
        return;
      }
    }
    if (contains(after, "No device found")) {
      log_.net_events.push_back({NcclNetEvent::Kind::no_device, provider, o, n});
      keep(n, "net", 200);
      return;
    }
    if (contains(after, "Initializ") || contains(after, "Loaded") || contains(after, "lugin") || contains(after, "Using Libfabric")) {
      if (log_.net_events.size() < 10000)
        log_.net_events.push_back({NcclNetEvent::Kind::plugin, to_valid_utf8(trim_blanks(m)), o, n});
      keep(n, "net", 200);
    }
  }

  NcclCommunicator& communicator(const NcclOrigin& o, const std::string& comm, std::size_t n) {
    ProcessKey key{o.host, o.pid};
    auto [it, fresh] = comm_index_.emplace(std::tuple{key, comm}, log_.communicators.size());
    if (fresh) {
      NcclCommunicator c;
      c.comm = comm;
      c.origin = o;
      c.line = n;
      log_.communicators.push_back(std::move(c));
    }
    return log_.communicators[it->second];
  }

  void add_communicator(std::size_t n, const NcclOrigin& o, std::string_view m) {
    auto tok = split_blanks(m);
    auto comm = value_after(tok, "comm");
    if (!comm || !starts_with(*comm, "0x")) return;
    if (log_.communicators.size() >= 100000) return;
    auto& c = communicator(o, to_valid_utf8(*comm), n);
    if (tok[0] != "comm") c.init_call = to_valid_utf8(tok[0]);
    auto set_int = [&](std::optional<int>& field, std::string_view key) {
      if (auto v = value_after(tok, key))
        if (auto i = to_int(*v)) field = *i;
    };
    set_int(c.rank, "rank");
    set_int(c.nranks, "nranks");
    set_int(c.nranks, "nRanks");
    set_int(c.cuda_dev, "cudaDev");
    set_int(c.nvml_dev, "nvmlDev");
    set_int(c.nnodes, "nNodes");
    set_int(c.local_ranks, "localRanks");
    set_int(c.local_rank, "localRank");
    if (auto v = value_after(tok, "busId")) c.bus_id = to_valid_utf8(*v);
    if (auto v = value_after(tok, "commId")) c.comm_id = to_valid_utf8(*v);
    if (contains(m, "Init COMPLETE")) c.init_complete = true;
    keep(n, "comm", 2000);
  }

  // "Init timings - ncclCommInitRank: rank 0 nranks 8 total 0.68 (kernels 0.19, alloc 0.01, …)"
  void add_init_timings(std::size_t n, const NcclOrigin& o, std::string_view m) {
    auto tok = split_blanks(m);
    auto rank = value_after(tok, "rank");
    auto total = value_after(tok, "total");
    if (!rank || !total) return;
    auto r = to_int(*rank);
    auto t = to_double(*total);
    if (!r || !t) return;
    // The communicator of this process with that rank, the latest one.
    NcclCommunicator* target = nullptr;
    for (auto it = log_.communicators.rbegin(); it != log_.communicators.rend(); ++it)
      if (it->origin.host == o.host && it->origin.pid == o.pid && it->rank == *r) { target = &*it; break; }
    if (!target) {
      if (log_.communicators.size() >= 100000) return;
      NcclCommunicator c;
      c.rank = *r;
      c.origin = o;
      c.line = n;
      if (auto v = value_after(tok, "nranks")) c.nranks = to_int(*v);
      log_.communicators.push_back(std::move(c));
      target = &log_.communicators.back();
    }
    target->init_seconds = *t;
    if (auto open = m.find('('); open != std::string_view::npos) {
      auto inner = m.substr(open + 1);
      if (auto close = inner.find(')'); close != std::string_view::npos) inner = inner.substr(0, close);
      std::size_t b = 0;
      while (b < inner.size()) {
        std::size_t e = inner.find(',', b);
        auto pt = split_blanks(inner.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b));
        if (pt.size() == 2)
          if (auto v = to_double(pt[1])) target->init_phases[to_valid_utf8(pt[0])] = *v;
        if (e == std::string_view::npos) break;
        b = e + 1;
      }
    }
    keep(n, "timing", 2000);
  }

  bool add_collective(std::size_t n, const NcclOrigin& o, std::string_view m) {
    const std::size_t p = m.find(": opCount ");
    if (p == std::string_view::npos || p == 0) return false;
    NcclCollectiveCall c;
    c.op = to_valid_utf8(m.substr(0, p));
    if (!std::all_of(c.op.begin(), c.op.end(), [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)); }))
      return false;
    auto tok = split_blanks(m.substr(p + 2));
    if (auto v = value_after(tok, "opCount")) c.op_count = parse_hex(*v);
    if (!c.op_count) return false;
    if (auto v = value_after(tok, "count")) c.count = parse_decimal(*v);
    if (auto v = value_after(tok, "datatype")) c.datatype = to_int(*v);
    if (auto v = value_after(tok, "op")) c.red_op = to_int(*v);
    if (auto v = value_after(tok, "root")) c.root = to_int(*v);
    if (auto v = value_after(tok, "comm")) c.comm = to_valid_utf8(*v);
    if (auto q = m.find("[nranks="); q != std::string_view::npos)
      if (auto v = leading_decimal(m.substr(q + 8)); v && v->first < 100000000) c.nranks = static_cast<int>(v->first);
    c.origin = o;
    c.line = n;
    keep(n, "coll", 64);
    if (log_.collectives.size() < 1000000) log_.collectives.push_back(std::move(c));
    return true;
  }

  // "Pattern 4, crossNic 0, nChannels 1, speed 21.000000/21.000000, type NVL/PIX, sameChannels 1"
  void add_pattern(std::size_t n, const NcclOrigin& o, std::string_view m) {
    NcclGraphPattern g;
    std::size_t b = 0;
    while (b < m.size()) {
      std::size_t e = m.find(',', b);
      auto pt = split_blanks(m.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b));
      if (pt.size() == 2) {
        if (pt[0] == "Pattern") g.pattern = to_int(pt[1]);
        else if (pt[0] == "nChannels") g.channels = to_int(pt[1]);
        else if (pt[0] == "speed" || pt[0] == "bw") {
          auto slash = pt[1].find('/');
          g.speed_intra = to_double(pt[1].substr(0, slash));
          if (slash != std::string_view::npos) g.speed_inter = to_double(pt[1].substr(slash + 1));
        } else if (pt[0] == "type") {
          auto slash = pt[1].find('/');
          g.type_intra = to_valid_utf8(pt[1].substr(0, slash));
          if (slash != std::string_view::npos) g.type_inter = to_valid_utf8(pt[1].substr(slash + 1));
        }
      }
      if (e == std::string_view::npos) break;
      b = e + 1;
    }
    if (g.type_intra.empty()) return;
    g.origin = o;
    g.line = n;
    keep(n, "pattern", 64);
    if (log_.graph_patterns.size() < 100000) log_.graph_patterns.push_back(std::move(g));
  }

  void add_p2p_check(std::size_t n, const NcclOrigin& o, std::string_view m) {
    auto tok = split_blanks(m);
    NcclP2pCheck c;
    if (auto v = value_after(tok, "intraNodeP2pSupport"); v && to_int(*v)) c.intra_node_p2p_support = *to_int(*v) != 0;
    if (auto v = value_after(tok, "isAllDirectP2p"); v && to_int(*v)) c.all_direct_p2p = *to_int(*v) != 0;
    if (auto v = value_after(tok, "directMode")) c.direct_mode = to_int(*v);
    c.origin = o;
    c.line = n;
    keep(n, "p2pcheck", 64);
    if (log_.p2p_checks.size() < 100000) log_.p2p_checks.push_back(std::move(c));
  }

  void finish() {
    for (auto& [key, devs] : process_devices_) {
      auto& p = log_.processes[process_index_[key]];
      p.devices.assign(devs.begin(), devs.end());
    }
    std::map<ProcessKey, std::set<int>> ranks;
    for (const auto& c : log_.communicators)
      if (c.rank) ranks[ProcessKey{c.origin.host, c.origin.pid}].insert(*c.rank);
    for (auto& [key, rs] : ranks)
      if (auto it = process_index_.find(key); it != process_index_.end()) log_.processes[it->second].ranks.assign(rs.begin(), rs.end());
    for (const auto& v : log_.versions)
      if (auto it = process_index_.find(ProcessKey{v.origin.host, v.origin.pid}); it != process_index_.end())
        log_.processes[it->second].version = v.version;
  }
};

}  // namespace

std::string_view to_string(TransportKind k) {
  switch (k) {
    case TransportKind::p2p: return "p2p";
    case TransportKind::shm: return "shm";
    case TransportKind::net: return "net";
    case TransportKind::collnet: return "collnet";
    case TransportKind::nvls: return "nvls";
    case TransportKind::other: return "other";
  }
  return "other";
}

std::string nccl_result_name(int code) {
  switch (code) {
    case 0: return "ncclSuccess";
    case 1: return "ncclUnhandledCudaError (a CUDA call failed)";
    case 2: return "ncclSystemError (a system call failed: socket, memory, file)";
    case 3: return "ncclInternalError (an NCCL bug or a corrupted state)";
    case 4: return "ncclInvalidArgument (a wrong argument to an NCCL call)";
    case 5: return "ncclInvalidUsage (NCCL called the wrong way)";
    case 6: return "ncclRemoteError (a peer failed or disconnected)";
    case 7: return "ncclInProgress";
    default: return "unknown result";
  }
}

NcclLog parse_nccl_log(std::string_view text, std::string source) {
  core::count_parse("nccl_log", text);
  return Parser(text, std::move(source)).run();
}

NcclLog read_nccl_log_file(const std::string& path) {
  return parse_nccl_log(read_text_file(path, "NCCL log", 256ull << 20), path);
}

}  // namespace scalescope::analyze
