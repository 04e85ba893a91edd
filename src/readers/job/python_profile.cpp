#include "readers/job/python_profile.h"

#include <cctype>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "core/parse_count.h"
#include "text/log_text.h"

namespace scalescope::analyze {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

std::optional<double> to_seconds(std::string_view t) {
  if (t.empty()) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size() || !std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

// The next blank-separated word of `s` from `pos`; pos moves past it.
std::string_view next_word(std::string_view s, std::size_t& pos) {
  while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t')) ++pos;
  const std::size_t b = pos;
  while (pos < s.size() && s[pos] != ' ' && s[pos] != '\t') ++pos;
  return s.substr(b, pos - b);
}

// Quote markers and launcher prefixes a pasted profile may carry: "> ", "[rank0]:", "0: ".
std::string_view strip_prefix(std::string_view s) {
  s = trim_blanks(s);
  while (starts_with(s, ">") && (s.size() == 1 || s[1] == ' ' || s[1] == '>')) s = trim_blanks(s.substr(1));
  if (starts_with(s, "[rank")) {
    const auto close = s.find("]:");
    if (close != std::string_view::npos && close < 12) s = trim_blanks(s.substr(close + 2));
  }
  return s;
}

struct Location {
  std::string function, file;
  std::optional<int> line;
};

// "module.py:774(__setattr__)", ":0(acquire)", "{method 'acquire' of '_thread.lock' objects}",
// "{built-in method builtins.exec}", "~:0(<built-in method builtins.exec>)", "<string>:1(<module>)".
std::optional<Location> parse_location(std::string_view t) {
  t = trim_blanks(t);
  if (t.empty()) return std::nullopt;
  Location loc;
  auto builtin = [&](std::string_view b) {
    // "method 'acquire' of '_thread.lock' objects" → acquire; "built-in method builtins.exec" → exec.
    if (starts_with(b, "method '")) {
      const auto close = b.find('\'', 8);
      loc.function = std::string(b.substr(8, close == std::string_view::npos ? std::string_view::npos : close - 8));
      return;
    }
    for (std::string_view p : {"built-in method ", "built-in function ", "function ", "method "})
      if (starts_with(b, p)) {
        b.remove_prefix(p.size());
        break;
      }
    const auto sp = b.find(' ');
    if (sp != std::string_view::npos) b = b.substr(0, sp);  // "{function f at 0x…}"
    const auto dot = b.rfind('.');
    loc.function = std::string(dot == std::string_view::npos ? b : b.substr(dot + 1));
  };
  if (t.front() == '{') {
    std::string_view b = t.substr(1);
    if (!b.empty() && b.back() == '}') b.remove_suffix(1);
    builtin(b);
    return loc.function.empty() ? std::nullopt : std::optional<Location>(loc);
  }
  if (t.back() != ')') return std::nullopt;
  // The rightmost ":<digits>(" whose '(' opens the final group.
  for (std::size_t open = t.rfind('('); open != std::string_view::npos && open > 0; open = t.rfind('(', open - 1)) {
    std::size_t d = open;
    while (d > 0 && std::isdigit(static_cast<unsigned char>(t[d - 1]))) --d;
    if (d == open || d == 0 || t[d - 1] != ':') {
      if (open == 0) break;
      continue;
    }
    auto ln = parse_decimal(t.substr(d, open - d));
    std::string_view file = t.substr(0, d - 1);
    std::string_view fn = t.substr(open + 1, t.size() - open - 2);
    if (file == "~" || (file.empty() && !fn.empty() && fn.front() == '<' && contains(fn, "method"))) {
      // Python 3.12's "~:0(<built-in method builtins.exec>)" and pstats' "{…}" for built-ins.
      if (!fn.empty() && fn.front() == '<' && fn.back() == '>') {
        builtin(fn.substr(1, fn.size() - 2));
        return loc;
      }
    }
    loc.file = std::string(file);
    loc.function = std::string(fn);
    if (ln && *ln <= 100000000 && !loc.file.empty()) loc.line = static_cast<int>(*ln);
    if (loc.function.empty()) return std::nullopt;
    return loc;
  }
  return std::nullopt;
}

struct Row {
  diagnose::ProfileRow row;
  bool needs_location = false;  // the location is on the next line (a wrapped paste)
};

// One row: "ncalls tottime percall cumtime percall location"; ncalls may be "total/primitive".
std::optional<Row> parse_row(std::string_view line) {
  std::size_t pos = 0;
  std::string_view calls = next_word(line, pos);
  if (calls.empty() || !std::isdigit(static_cast<unsigned char>(calls.front()))) return std::nullopt;
  Row r;
  const auto slash = calls.find('/');
  auto total = parse_decimal(slash == std::string_view::npos ? calls : calls.substr(0, slash));
  auto prim = slash == std::string_view::npos ? total : parse_decimal(calls.substr(slash + 1));
  if (!total || !prim) return std::nullopt;
  r.row.calls = *total;
  r.row.primitive_calls = *prim;
  double v[4] = {};
  for (double& x : v) {
    auto w = next_word(line, pos);
    auto s = to_seconds(w);
    if (!s) return std::nullopt;
    x = *s;
  }
  r.row.tottime_s = v[0];
  r.row.cumtime_s = v[2];
  std::string_view rest = trim_blanks(line.substr(pos));
  if (rest.empty()) {
    r.needs_location = true;
    return r;
  }
  auto loc = parse_location(rest);
  if (!loc) return std::nullopt;
  r.row.function = std::move(loc->function);
  r.row.file = std::move(loc->file);
  r.row.file_line = loc->line;
  return r;
}

bool is_header(std::string_view l) { return contains(l, "ncalls") && contains(l, "tottime") && contains(l, "cumtime"); }

}  // namespace

bool looks_like_python_profile(std::string_view text) {
  std::size_t rows = 0, n = 0;
  for (auto raw : split_lines(text)) {
    if (++n > 5000) break;
    const auto l = strip_prefix(raw);
    if (is_header(l)) return true;
    if (auto r = parse_row(l); r && !r->needs_location && ++rows >= 2) return true;
  }
  return false;
}

diagnose::Reading read_python_profile(std::string_view text, const std::string& source) {
  core::count_parse("python_profile", text);
  diagnose::Reading out;
  try {
    const auto lines = split_lines(text);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const auto l = strip_prefix(lines[i]);
      if (l.empty() || is_header(l)) continue;
      // "2317016 function calls (2280914 primitive calls) in 63.285 seconds"
      if (contains(l, "function calls") && contains(l, " seconds")) {
        const auto in = l.rfind(" in ");
        if (in != std::string_view::npos) {
          std::size_t pos = in + 4;
          auto secs = to_seconds(next_word(l, pos));
          if (secs) {
            diagnose::Measurement m;
            m.quantity = "profiled time";
            m.unit = "s";
            m.value = *secs;
            m.row = std::string(l.substr(0, in));
            out.facts.add(std::move(m), diagnose::at(source, i + 1, lines[i]));
          }
        }
        continue;
      }
      auto r = parse_row(l);
      if (!r) {
        // A row cut off by the end of the paste, or foreign text.
        if (!l.empty() && std::isdigit(static_cast<unsigned char>(l.front())) && i + 1 == lines.size())
          out.notes.push_back(fmt::format("line {}: a profile row cut off, skipped", i + 1));
        continue;
      }
      std::size_t line_no = i + 1;
      if (r->needs_location) {
        // A row whose location was wrapped onto the next line.
        if (i + 1 < lines.size()) {
          if (auto loc = parse_location(strip_prefix(lines[i + 1]))) {
            r->row.function = std::move(loc->function);
            r->row.file = std::move(loc->file);
            r->row.file_line = loc->line;
            ++i;
          }
        }
        if (r->row.function.empty()) {
          out.notes.push_back(fmt::format("line {}: a profile row without its function, skipped", line_no));
          continue;
        }
        out.notes.push_back(fmt::format("line {}: a profile row wrapped onto the next line, joined", line_no));
      }
      out.facts.add(std::move(r->row), diagnose::at(source, line_no, lines[line_no - 1]));
    }
  } catch (const std::exception& e) {
    out.notes.push_back(std::string("profile reader stopped: ") + e.what());
  }
  return out;
}

}  // namespace scalescope::analyze
