// The pieces the nccl-tests parser reads a line with (nccl_tests_internal.h): text helpers, numbers and their
// printed precision, type names, launcher prefixes and versions; table layouts from header lines; the world sizes a
// row's bus factor allows; and the command lines and scalescope's report headers that name a program and its ranks.

#include "readers/nccl/nccl_tests_internal.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

#include <fmt/format.h>

namespace scalescope::analyze::nccl_tests_internal {

// ---- small text helpers (none of them throws) ----

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    std::size_t j = i;
    while (j < s.size() && !is_space(s[j])) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

bool parse_u64(std::string_view t, std::uint64_t& out) {
  if (t.empty() || t.front() == '-' || t.front() == '+') return false;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
  return ec == std::errc() && p == t.data() + t.size();
}

bool parse_i64(std::string_view t, long long& out) {
  if (t.empty() || t.front() == '+') return false;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
  return ec == std::errc() && p == t.data() + t.size();
}

std::optional<Number> parse_number(std::string_view t) {
  if (t.empty()) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size() || !std::isfinite(v)) return std::nullopt;
  // Precision from the mantissa's decimals and the exponent: "12.25" ±0.005, "3e+02" ±50, "1.0e+07" ±5e5.
  std::string_view mant = t;
  int exp10 = 0;
  if (auto e = t.find_first_of("eE"); e != std::string_view::npos) {
    mant = t.substr(0, e);
    int x = 0;
    std::string_view es = t.substr(e + 1);
    if (!es.empty() && es.front() == '+') es.remove_prefix(1);
    auto [q, ec2] = std::from_chars(es.data(), es.data() + es.size(), x);
    if (ec2 == std::errc() && q == es.data() + es.size()) exp10 = std::clamp(x, -300, 300);
  }
  int decimals = 0;
  if (auto dot = mant.find('.'); dot != std::string_view::npos) decimals = static_cast<int>(mant.size() - dot - 1);
  return Number{v, 0.5 * std::pow(10.0, exp10 - decimals)};
}

bool is_na(std::string_view t) { return t == "N/A" || t == "n/a" || t == "NA" || t == "-nan" || t == "nan"; }

bool is_alpha_token(std::string_view t) {
  return !t.empty() && std::isalpha(static_cast<unsigned char>(t.front())) && !is_na(t);
}

namespace {

// Type names nccl-tests, rccl-tests and NCCL 1.x print that scalescope does not model; a row keeps them as text.
bool is_unmodelled_type(std::string_view t) {
  static const std::set<std::string_view> names = {"uint8", "uint32", "int64", "uint64", "f8e4m3", "f8e5m2",
                                                   "fp8_e4m3", "fp8_e5m2", "f8e4m3fnuz", "f8e5m2fnuz"};
  return names.count(t) > 0;
}

}  // namespace

bool is_type_token(std::string_view t) { return comm::parse_data_type(t).has_value() || is_unmodelled_type(t); }

// Bytes per element of a row's type, modelled or not (nccl-tests src/common.cu, wordSize).
std::optional<std::size_t> row_element_size(const SweepRow& r) {
  if (r.type) return comm::element_size(*r.type);
  const std::string_view t = r.type_name;
  if (t == "uint8" || t.find("8e") != std::string_view::npos) return 1;  // uint8 and the fp8 formats
  if (t == "uint32") return 4;
  if (t == "int64" || t == "uint64") return 8;
  return std::nullopt;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// The text with every byte that is not part of a well-formed UTF-8 sequence replaced by U+FFFD, so what the
// Sweep keeps from a damaged file can always be written as JSON.
std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size() && !(len == 2 && c < 0xC2) && !(len == 4 && c > 0xF4);
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok && len == 3) {  // no overlong forms, no UTF-16 surrogates
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);
    }
    if (ok && len == 4) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::string shorten(std::string_view s, std::size_t max) {
  std::string out(trim(s));
  if (out.size() > max) out = out.substr(0, max) + "…";
  return out;
}

// Removes what launchers put before each line: Open MPI's --tag-output "[1,0]<stdout>:", torchrun's
// "[default0]:", Slurm's `srun --label` "12: ". Returns the rest of the line.
std::string_view strip_launcher_prefix(std::string_view s) {
  std::string_view t = s;
  std::size_t i = 0;
  while (i < t.size() && is_space(t[i])) ++i;
  if (i < t.size() && t[i] == '[') {
    std::size_t close = t.find(']', i);
    if (close != std::string_view::npos && close - i <= 32) {
      bool ok = true;
      for (std::size_t k = i + 1; k < close; ++k) {
        unsigned char c = static_cast<unsigned char>(t[k]);
        if (!(std::isalnum(c) || c == ',' || c == '_' || c == '.')) ok = false;
      }
      std::size_t after = close + 1;
      for (std::string_view stream : {"<stdout>", "<stderr>"})
        if (t.substr(after, stream.size()) == stream) after += stream.size();
      if (ok && after < t.size() && t[after] == ':') return t.substr(after + 1);
    }
  }
  std::size_t j = i;
  while (j < t.size() && std::isdigit(static_cast<unsigned char>(t[j]))) ++j;
  if (j > i && j - i <= 6 && j < t.size() && t[j] == ':' && (j + 1 == t.size() || t[j + 1] == ' '))
    return t.substr(j + 1);
  return t;
}

bool is_nccl_log_line(std::string_view s) {
  return s.find("NCCL INFO") != std::string_view::npos || s.find("NCCL WARN") != std::string_view::npos ||
         s.find("NCCL TRACE") != std::string_view::npos || s.find("NCCL ABORT") != std::string_view::npos;
}

// "2.8.4+cuda10.1" -> "2.8.4"
std::string clean_version(std::string_view v) {
  std::string s(v);
  if (auto plus = s.find('+'); plus != std::string::npos) s.resize(plus);
  return s;
}

// NCCL_VERSION_CODE: major*10000 + minor*100 + patch since NCCL 2.9, major*1000 + minor*100 + patch before
// (NCCL's nccl.h, NCCL_VERSION macro).
std::string decode_nccl_version_code(long long code) {
  if (code >= 10000) return fmt::format("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, (code % 1000) / 100, code % 100);
}

// ---- table layout ----

std::string field_name(Field f, int dir, const Layout& layout) {
  std::string base;
  switch (f) {
    case Field::redop: return "redop";
    case Field::root: return "root";
    case Field::time: base = "time"; break;
    case Field::algbw: base = "algbw"; break;
    case Field::busbw: base = "busbw"; break;
    case Field::wrong: base = layout.wrong_name; break;
    case Field::i_min: base = "i_min"; break;
    case Field::i_max: base = "i_max"; break;
    case Field::i_p99: base = "i_p99"; break;
    case Field::i_cv: base = "i_cv%"; break;
  }
  return (dir == 0 ? "out-of-place " : "in-place ") + base;
}

std::optional<Layout> header_layout(const std::vector<std::string_view>& tok) {
  auto has = [&](std::string_view w) { return std::find(tok.begin(), tok.end(), w) != tok.end(); };
  if (!(has("size") || has("bytes")) || !has("algbw") || !has("busbw")) return std::nullopt;
  Layout l;
  l.from_header = true;
  l.has_redop = has("redop") || has("op");
  l.has_root = has("root");
  l.per_iteration = has("i_min");
  l.timestamp = has("timestamp");
  l.time_in_ms = has("bytes") && has("N");  // NCCL 1.x: "bytes N type op time algbw busbw res"
  if (has("error")) l.wrong_name = "error";
  if (has("res")) l.wrong_name = "res";
  return l;
}

// ---- per-row evidence for the collective and the rank count ----

NRange intersect(NRange a, NRange b) { return {std::max(a.lo, b.lo), std::min(a.hi, b.hi)}; }

// World sizes n for which factor a·(n−1)/n lies in [rlo, rhi] (a = 2 all-reduce, 1 all-gather & co).
NRange n_for_ratio(double a, double rlo, double rhi) {
  const double eps = 1e-9;
  NRange r;
  if (rlo > a + eps) return {2, 1};  // empty: a·(n−1)/n < a for every n
  r.lo = rlo <= eps ? 1 : static_cast<long long>(std::ceil(a / (a - std::min(rlo, a - 1e-12)) - 1e-9));
  if (rhi >= a - eps) r.hi = INT_MAX;
  else r.hi = static_cast<long long>(std::floor(a / (a - rhi) + 1e-9));
  r.lo = std::max(r.lo, 1LL);
  return r;
}

int kind_of(Collective c) {  // 2: 2(n-1)/n, 1: (n-1)/n, 0: factor 1
  switch (c) {
    case Collective::all_reduce: return 2;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all: return 1;
    default: return 0;
  }
}

bool count_is_per_rank_share(Collective c) { return kind_of(c) == 1; }

std::string names(const std::vector<Collective>& cs) {
  std::string out;
  for (auto c : cs) out += (out.empty() ? "" : ", ") + std::string(comm::to_string(c));
  return out;
}

std::optional<long long> flag_value(const std::vector<std::string_view>& tok, std::size_t from, std::size_t to,
                                    std::initializer_list<std::string_view> flags) {
  for (std::size_t i = from; i < to && i < tok.size(); ++i) {
    for (auto f : flags) {
      long long v = 0;
      if (tok[i] == f && i + 1 < tok.size() && parse_i64(tok[i + 1], v) && v > 0) return v;
      if (starts_with(tok[i], f) && tok[i].size() > f.size()) {
        std::string_view rest = tok[i].substr(f.size());
        if (rest.front() == '=') rest.remove_prefix(1);
        else if (starts_with(f, "--")) continue;  // "--npernode" is not "--np"
        if (parse_i64(rest, v) && v > 0) return v;
      }
    }
  }
  return std::nullopt;
}

// The header line `scalescope comm` prints above each table it reports ("# scalescope comm (mpi): all_reduce_perf,
// 2 rank(s)", or "# nccl-tests (file): …" when it re-reports a file), so that its own output reads back. `tok` are
// the words after the '#'. `how` stays empty: the rank count comes from a report header, not a command line.
std::optional<CommandLine> parse_report_header(const std::vector<std::string_view>& tok, int line) {
  for (std::size_t p = 1; p + 2 < tok.size(); ++p) {
    const std::string_view word = tok[p];
    if (!tok[p - 1].ends_with("):") && tok[p - 1] != "comm:") continue;
    // "… 2 rank(s)" or, when the NCCL version is known, "… 2 rank(s), NCCL 2.28.3".
    if (!word.ends_with("_perf,") || (tok[p + 2] != "rank(s)" && tok[p + 2] != "rank(s),")) continue;
    auto c = comm::parse_collective(word.substr(0, word.size() - 6));
    if (!c) return std::nullopt;
    CommandLine cl;
    cl.line = line;
    cl.collective = *c;
    long long ranks = 0;
    if (parse_i64(tok[p + 1], ranks) && ranks > 0 && ranks < 10'000'000) cl.ranks = ranks;
    return cl;
  }
  return std::nullopt;
}

// A command line naming an nccl-tests program ("./build/all_reduce_perf -g 2", "mpirun -np 16 … alltoall_perf").
std::optional<CommandLine> parse_command_line(const std::vector<std::string_view>& tok, int line) {
  for (std::size_t p = 0; p < tok.size(); ++p) {
    std::string_view base = tok[p];
    if (auto slash = base.rfind('/'); slash != std::string_view::npos) base = base.substr(slash + 1);
    std::size_t at = base.find("_perf");
    if (at == std::string_view::npos) at = base.find("_test");  // NCCL 1.x: all_reduce_test
    if (at == std::string_view::npos || at == 0) continue;
    auto c = comm::parse_collective(base.substr(0, at));
    if (!c) continue;
    CommandLine cl;
    cl.line = line;
    cl.collective = *c;
    std::optional<std::size_t> launcher;
    for (std::size_t i = 0; i < p; ++i) {
      std::string_view b = tok[i];
      if (auto slash = b.rfind('/'); slash != std::string_view::npos) b = b.substr(slash + 1);
      if (b == "mpirun" || b == "mpiexec" || b == "srun" || b == "orterun" || b == "prterun") launcher = i;
    }
    const long long g = flag_value(tok, p + 1, tok.size(), {"-g", "--ngpus"}).value_or(1);
    const long long t = flag_value(tok, p + 1, tok.size(), {"-t", "--nthreads"}).value_or(1);
    if (launcher) {
      if (auto np = flag_value(tok, *launcher + 1, p, {"-np", "-n", "--np", "--ntasks"})) {
        if (*np < 10'000'000 && g < 1000 && t < 1000) {
          cl.ranks = *np * g * t;
          cl.how = fmt::format("{} processes × {} GPU(s) × {} thread(s)", *np, g, t);
        }
      }
    } else if (g < 1000 && t < 1000) {
      cl.ranks = g * t;
      cl.how = fmt::format("one process × {} GPU(s) × {} thread(s)", g, t);
    }
    return cl;
  }
  return std::nullopt;
}

}  // namespace scalescope::analyze::nccl_tests_internal
