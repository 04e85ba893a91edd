// Table reader, part 1: cells — numbers with their units, blank cells, and what a column header measures.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <vector>

#include "text/log_text.h"
#include "readers/tables/tables_internal.h"

namespace scalescope::analyze::tables_detail {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }
bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

std::string clean_cell(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((s[i] == '*' || s[i] == '_') && i + 1 < s.size() && s[i + 1] == s[i]) {
      ++i;
      continue;
    }
    if (s[i] == '`') continue;
    out += s[i];
  }
  return std::string(trim_blanks(out));
}

std::vector<std::string> words_of(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) out.push_back(cur);
    cur.clear();
  };
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c)) || std::string_view("()[],;/+@|&:_=").find(c) != std::string_view::npos)
      flush();
    else
      cur += c;
  }
  flush();
  return out;
}

namespace {

struct UnitName {
  const char* printed;  // lower case, except where case matters (marked by `exact`)
  const char* unit;
  double factor;
  const char* quantity;
  bool exact = false;
};

// Units by their printed names. Bits and bytes differ by case ("Gb/s" vs "GB/s"), so those are matched exactly.
constexpr UnitName kUnits[] = {
    {"s", "s", 1, "run time"}, {"sec", "s", 1, "run time"}, {"secs", "s", 1, "run time"},
    {"second", "s", 1, "run time"}, {"seconds", "s", 1, "run time"},
    {"ms", "ms", 1, "run time"}, {"msec", "ms", 1, "run time"}, {"msecs", "ms", 1, "run time"},
    {"millisecond", "ms", 1, "run time"}, {"milliseconds", "ms", 1, "run time"},
    {"us", "us", 1, "run time"}, {"µs", "us", 1, "run time"}, {"μs", "us", 1, "run time"},
    {"usec", "us", 1, "run time"}, {"microseconds", "us", 1, "run time"},
    {"min", "s", 60, "run time"}, {"mins", "s", 60, "run time"}, {"minute", "s", 60, "run time"},
    {"minutes", "s", 60, "run time"}, {"m", "s", 60, "run time", true},
    {"h", "s", 3600, "run time"}, {"hr", "s", 3600, "run time"}, {"hrs", "s", 3600, "run time"},
    {"hour", "s", 3600, "run time"}, {"hours", "s", 3600, "run time"},
    {"s/it", "s", 1, "step time"}, {"sec/it", "s", 1, "step time"}, {"s/iter", "s", 1, "step time"},
    {"s/step", "s", 1, "step time"}, {"sec/step", "s", 1, "step time"}, {"s/batch", "s", 1, "step time"},
    {"ms/it", "ms", 1, "step time"}, {"ms/iter", "ms", 1, "step time"}, {"ms/step", "ms", 1, "step time"},
    {"ms/batch", "ms", 1, "step time"},
    {"s/epoch", "s", 1, "epoch time"}, {"sec/epoch", "s", 1, "epoch time"}, {"min/epoch", "s", 60, "epoch time"},
    {"secs/epoch", "s", 1, "epoch time"}, {"seconds/epoch", "s", 1, "epoch time"}, {"s per epoch", "s", 1, "epoch time"},
    {"sec per epoch", "s", 1, "epoch time"}, {"seconds per epoch", "s", 1, "epoch time"},
    {"mins/epoch", "s", 60, "epoch time"}, {"minutes/epoch", "s", 60, "epoch time"},
    {"min per epoch", "s", 60, "epoch time"}, {"minutes per epoch", "s", 60, "epoch time"},
    {"h/epoch", "s", 3600, "epoch time"}, {"s/ep", "s", 1, "epoch time"},
    {"s per it", "s", 1, "step time"}, {"s per step", "s", 1, "step time"}, {"seconds per step", "s", 1, "step time"},
    {"s/iteration", "s", 1, "step time"}, {"seconds per iteration", "s", 1, "step time"},
    {"GB/s", "GB/s", 1, "bandwidth", true}, {"GBps", "GB/s", 1, "bandwidth", true},
    {"GBs", "GB/s", 1, "bandwidth", true}, {"gb/s", "GB/s", 1, "bandwidth", true},
    {"GiB/s", "GB/s", 1.073741824, "bandwidth", true}, {"MB/s", "GB/s", 1e-3, "bandwidth", true},
    {"MBps", "GB/s", 1e-3, "bandwidth", true}, {"MiB/s", "GB/s", 1.048576e-3, "bandwidth", true},
    {"TB/s", "GB/s", 1e3, "bandwidth", true},
    {"Gb/s", "Gb/s", 1, "bandwidth", true}, {"Gbps", "Gb/s", 1, "bandwidth", true},
    {"Gbit/s", "Gb/s", 1, "bandwidth", true}, {"gbps", "Gb/s", 1, "bandwidth", true},
    {"Mb/s", "Gb/s", 1e-3, "bandwidth", true}, {"Mbps", "Gb/s", 1e-3, "bandwidth", true},
    {"samples/s", "samples/s", 1, "throughput"}, {"samples/sec", "samples/s", 1, "throughput"},
    {"sample/s", "samples/s", 1, "throughput"}, {"samples/second", "samples/s", 1, "throughput"},
    {"items/s", "samples/s", 1, "throughput"}, {"items/sec", "samples/s", 1, "throughput"},
    {"img/s", "img/s", 1, "throughput"}, {"imgs/s", "img/s", 1, "throughput"}, {"img/sec", "img/s", 1, "throughput"},
    {"images/s", "img/s", 1, "throughput"}, {"images/sec", "img/s", 1, "throughput"},
    {"image/s", "img/s", 1, "throughput"}, {"images/second", "img/s", 1, "throughput"},
    {"tokens/s", "tokens/s", 1, "throughput"}, {"tok/s", "tokens/s", 1, "throughput"},
    {"tokens/sec", "tokens/s", 1, "throughput"}, {"tokens/second", "tokens/s", 1, "throughput"},
    {"sequences/s", "sequences/s", 1, "throughput"}, {"sequences/sec", "sequences/s", 1, "throughput"},
    {"seq/s", "sequences/s", 1, "throughput"}, {"seqs/s", "sequences/s", 1, "throughput"},
    {"sentences/s", "sequences/s", 1, "throughput"},
    {"it/s", "it/s", 1, "throughput"}, {"its/s", "it/s", 1, "throughput"}, {"iter/s", "it/s", 1, "throughput"},
    {"iters/s", "it/s", 1, "throughput"}, {"iterations/s", "it/s", 1, "throughput"},
    {"steps/s", "it/s", 1, "throughput"}, {"step/s", "it/s", 1, "throughput"}, {"steps/sec", "it/s", 1, "throughput"},
    {"step/sec", "it/s", 1, "throughput"}, {"steps/second", "it/s", 1, "throughput"},
    // Frames (environment steps) per second: reinforcement learning's throughput.
    {"FPS", "frames/s", 1, "throughput"}, {"fps", "frames/s", 1, "throughput"}, {"frames/s", "frames/s", 1, "throughput"},
    {"frames/sec", "frames/s", 1, "throughput"}, {"frames/second", "frames/s", 1, "throughput"},
    {"%", "%", 1, ""}, {"percent", "%", 1, ""},
    {"x", "", 1, "speedup"}, {"×", "", 1, "speedup"},
};

bool all_alpha(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
}

// "1,234.5", "1234", "-3.2e-3" at the start of `s`: the value and the characters it took.
std::optional<std::pair<double, std::size_t>> leading_number(std::string_view s) {
  std::size_t i = 0;
  std::string digits;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) digits += s[i++];
  const std::size_t int_start = i;
  while (i < s.size()) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      digits += s[i++];
    } else if (s[i] == ',' && i > int_start && i + 3 < s.size() &&
               std::isdigit(static_cast<unsigned char>(s[i + 1])) && std::isdigit(static_cast<unsigned char>(s[i + 2])) &&
               std::isdigit(static_cast<unsigned char>(s[i + 3])) &&
               (i + 4 >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i + 4])))) {
      ++i;  // a thousands separator: exactly three digits follow
    } else {
      break;
    }
  }
  if (i < s.size() && s[i] == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
    digits += s[i++];
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) digits += s[i++];
  } else if (i == int_start && i < s.size() && s[i] == '.') {
    return std::nullopt;
  }
  if (i == int_start) return std::nullopt;
  if (i + 1 < s.size() && (s[i] == 'e' || s[i] == 'E') &&
      (std::isdigit(static_cast<unsigned char>(s[i + 1])) ||
       ((s[i + 1] == '-' || s[i + 1] == '+') && i + 2 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 2]))))) {
    std::size_t j = i + 1;
    std::string exp = "e";
    if (s[j] == '-' || s[j] == '+') exp += s[j++];
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) exp += s[j++];
    if (j >= s.size() || !std::isalpha(static_cast<unsigned char>(s[j]))) {
      digits += exp;
      i = j;
    }
  }
  double v = 0;
  const char* b = digits.data();
  if (*b == '+') ++b;
  auto [p, ec] = std::from_chars(b, digits.data() + digits.size(), v);
  if (ec != std::errc() || p != digits.data() + digits.size() || !std::isfinite(v)) return std::nullopt;
  return std::make_pair(v, i);
}

}  // namespace

std::optional<Unit> unit_of(std::string_view text) {
  std::string t(trim_blanks(text));
  while (!t.empty() && (t.back() == '.' || t.back() == ',')) t.pop_back();
  if (t.empty() || t.size() > 24) return std::nullopt;
  const std::string l = lower(t);
  for (const auto& u : kUnits)
    if (u.exact ? t == u.printed : l == u.printed)
      return Unit{u.unit, u.factor, u.quantity, std::string_view(u.unit).empty() && std::string_view(u.quantity) == "speedup"};
  // Time per step: "sec/batch", "s/iter", "ms/step", "sec/batch/gpu" (a per-GPU step time is still the step's time).
  {
    std::vector<std::string> parts;
    std::string part;
    for (char c : l + "/") {
      if (c == '/') {
        parts.push_back(std::string(trim_blanks(part)));
        part.clear();
      } else {
        part += c;
      }
    }
    auto is = [](const std::string& x, std::initializer_list<const char*> ws) {
      for (auto w : ws)
        if (x == w) return true;
      return false;
    };
    if ((parts.size() == 2 || (parts.size() == 3 && is(parts[2], {"gpu", "device", "rank", "card"}))) &&
        is(parts[1], {"batch", "iter", "it", "step", "iteration"})) {
      if (is(parts[0], {"s", "sec", "secs", "second", "seconds"})) return Unit{"s", 1, "step time", false};
      if (is(parts[0], {"ms", "msec", "millisecond", "milliseconds"})) return Unit{"s", 1e-3, "step time", false};
    }
  }
  // Other rates: "<word>/s", "<word>/sec", "<word> per second".
  for (std::string_view suffix : {"/s", "/sec", "/second", " per second", " per sec", "/ s"})
    if (ends_with(l, suffix) && all_alpha(std::string_view(l).substr(0, l.size() - suffix.size())))
      return Unit{std::string(std::string_view(l).substr(0, l.size() - suffix.size())) + "/s", 1, "throughput", false};
  return std::nullopt;
}

bool is_blank_cell(std::string_view cell) {
  const std::string l = lower(clean_cell(cell));
  if (l.empty()) return true;
  if (std::all_of(l.begin(), l.end(), [](char c) { return c == '-' || c == ' '; })) return true;
  for (std::string_view d : {"—", "–", "n/a", "na", "n.a.", "none", "null", "?", "tbd", "nan", "-/-", "..."})
    if (l == d) return true;
  return false;
}

namespace {

// "2m20s", "1h 20m", "1 h 30 min", "3m 5.2s": two or more time components, in seconds.
std::optional<double> compound_duration(std::string_view s) {
  double total = 0;
  int parts = 0;
  while (true) {
    s = trim_blanks(s);
    if (s.empty()) break;
    auto n = leading_number(s);
    if (!n || n->first < 0) return std::nullopt;
    s = trim_blanks(s.substr(n->second));
    std::size_t k = 0;
    while (k < s.size() && std::isalpha(static_cast<unsigned char>(s[k]))) ++k;
    auto u = unit_of(s.substr(0, k));
    if (!u || u->unit != "s" || u->quantity != "run time") return std::nullopt;
    total += n->first * u->factor;
    ++parts;
    s = s.substr(k);
  }
  if (parts < 2) return std::nullopt;
  return total;
}

// "1:42" (m:ss), "1:02:03" (h:mm:ss), "0:01:42.5": seconds.
std::optional<double> clock_time(std::string_view s) {
  std::vector<std::string_view> parts;
  std::size_t b = 0;
  for (std::size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == ':') {
      parts.push_back(s.substr(b, i - b));
      b = i + 1;
    }
  if (parts.size() < 2 || parts.size() > 3) return std::nullopt;
  double total = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto p = parts[i];
    const bool last = i + 1 == parts.size();
    if (p.empty() || (i > 0 && (p.size() < 2 || !std::isdigit(static_cast<unsigned char>(p[1]))))) return std::nullopt;
    auto n = leading_number(p);
    if (!n || n->second != p.size() || n->first < 0 || (!last && std::floor(n->first) != n->first)) return std::nullopt;
    if (i > 0 && n->first >= 60) return std::nullopt;
    total = total * 60 + n->first;
  }
  return total;
}

// Strips one prefix of `s` from `prefixes` (case-insensitive); true when one was there.
bool strip_prefix(std::string& s, std::initializer_list<std::string_view> prefixes) {
  const std::string l = lower(s);
  for (auto p : prefixes)
    if (starts_with(l, p)) {
      s = std::string(trim_blanks(std::string_view(s).substr(p.size())));
      return true;
    }
  return false;
}

}  // namespace

std::optional<Value> parse_value(std::string_view cell) {
  std::string s = clean_cell(cell);
  if (s.empty() || s.size() > 80) return std::nullopt;
  Value v;
  while (strip_prefix(s, {"~", "≈", "about ", "approx. ", "approx ", "ca. ", "around ", "≃"})) v.approx = true;
  // A trailing note in parentheses or brackets: "101 (1.01x)", "2.5 [n=3]".
  for (int k = 0; k < 2 && !s.empty() && (s.back() == ')' || s.back() == ']'); ++k) {
    const auto open = s.rfind(s.back() == ')' ? '(' : '[');
    if (open == std::string::npos || open == 0) break;
    s = std::string(trim_blanks(std::string_view(s).substr(0, open)));
  }
  // "± spread": the spread is dropped; its unit serves when the value has none.
  std::string spread_text;
  for (std::string_view sep : {"±", "+/-", "+-"}) {
    const auto pos = s.find(sep);
    if (pos != std::string::npos && pos > 0) {
      spread_text = std::string(trim_blanks(std::string_view(s).substr(pos + sep.size())));
      s = std::string(trim_blanks(std::string_view(s).substr(0, pos)));
      v.spread = true;
      break;
    }
  }
  if (s.empty()) return std::nullopt;
  bool ratio_prefix = false;
  if (s[0] == 'x' || s[0] == 'X') {
    if (s.size() > 1 && (std::isdigit(static_cast<unsigned char>(s[1])) || s[1] == '.')) s = s.substr(1), ratio_prefix = true;
  } else if (starts_with(s, "×")) {
    s = std::string(trim_blanks(std::string_view(s).substr(std::string_view("×").size()))), ratio_prefix = true;
  }
  if (contains(s, ":")) {
    auto t = clock_time(s);
    if (!t) return std::nullopt;
    v.value = *t;
    v.unit = Unit{"s", 1, "run time", false};
    v.clock = true;
    return v;
  }
  if (auto d = compound_duration(s)) {
    v.value = *d;
    v.unit = Unit{"s", 1, "run time", false};
    return v;
  }
  auto n = leading_number(s);
  if (!n) return std::nullopt;
  double value = n->first;
  std::string rest(trim_blanks(std::string_view(s).substr(n->second)));
  // A range: "40-41", "40 – 41", "40 to 41": the midpoint.
  for (std::string_view sep : {"-", "–", "—", "to "}) {
    if (!starts_with(lower(rest), sep)) continue;
    const std::string after(trim_blanks(std::string_view(rest).substr(sep.size())));
    auto m = leading_number(after);
    if (m && m->first >= value && (after[0] != '-' && after[0] != '+')) {
      value = (value + m->first) / 2;
      rest = std::string(trim_blanks(std::string_view(after).substr(m->second)));
      v.range = true;
    }
    break;
  }
  // "41k", "1.2M tokens/s": thousands and millions.
  if (!rest.empty() && (rest[0] == 'k' || rest[0] == 'K' || rest[0] == 'M') &&
      (rest.size() == 1 || !std::isalpha(static_cast<unsigned char>(rest[1])))) {
    value *= rest[0] == 'M' ? 1e6 : 1e3;
    rest = std::string(trim_blanks(std::string_view(rest).substr(1)));
  }
  if (!rest.empty()) {
    auto u = unit_of(rest);
    if (!u) return std::nullopt;
    v.unit = u;
  } else if (!spread_text.empty()) {
    if (auto m = leading_number(spread_text)) {
      const std::string su(trim_blanks(std::string_view(spread_text).substr(m->second)));
      if (!su.empty()) v.unit = unit_of(su);
    }
  }
  if (ratio_prefix) {
    if (v.unit && !v.unit->ratio) return std::nullopt;
    v.unit = Unit{"", 1, "speedup", true};
  }
  if (v.unit) {
    value *= v.unit->factor;
    v.unit->factor = 1;  // the value is now in v.unit->unit
  }
  if (!std::isfinite(value)) return std::nullopt;
  v.value = value;
  return v;
}

}  // namespace scalescope::analyze::tables_detail
