// Reader of prose (issue text, a report beside the logs): see readers/prose/report_text.h.
//
// How it reads. The text is cut into lines and each line is classed: fenced or indented code, quoted lines ("> "),
// tables, log-looking lines (NCCL lines and NCCL's messages quoted without their prefix, "host:pid:tid", timestamps,
// Python tracebacks and exceptions, framework warnings and the lines wrapped after them), env-dump lines, headings,
// list items and text. Code, quotes, tables and log lines are left to the other readers. The rest is joined into
// paragraphs (a list item, a heading, an env line is one), the paragraphs cut into sentences, the sentences into
// clauses (at "but", "however", "whereas", "although", "though", "yet", ";", dashes, and at a comma with a verdict on
// both sides). Each clause is read against small phrase vocabularies — hang words, works words, slow words, fail
// words, negations ("not", "n't", "no longer", "without"), "only", trial words ("tried", "toggled"), suggestion words
// ("should", "please", "could you"), conditionals ("if", "whether") — and for the details near them: settings
// (NAME=value, "NAME set to value"; option and kernel-parameter names too, not CamelCase log fields), flags
// (--ipc=host), "X instead of Y" / "switching from Y to X", changes ("disabling VT-d", "with GPUDirect RDMA enabled")
// and path classes (SYS, NODE, PHB, PXB, PIX, NV#, NVLink, cross-socket). Reader::sentence turns what a clause holds
// into claims: works (or a denied hang) + a change → works-with (slow-with when it or a following clause is slow);
// works + a path → works-on-path (+ fails-on-path "others than P" with "only"); a denied "work" → fails-with;
// hang/fail + a change → fails-with only with "only" or beside a works-with in the same sentence, else the settings
// are the job's (in force); hang/fail + a path → fails-on-path; slow + a change → slow-with, else slow with the
// figures; trials, suggestions, questions, conditionals and "still"/"even" give no works-with and no setting in force.
// A sentence that says "it works now" after one that set something without a verdict reads that as the change.
// Headings set the section: under "Workaround" / "Solution" a named change works, under "What I tried" /
// "Suggestions" / "Expected" nothing is in force. Counts of nodes and GPU products are read per sentence. Pure;
// nothing here throws out of the public functions.
#include "readers/prose/report_text.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "text/log_text.h"
#include "knowledge/hardware.h"
#include "readers/code/python_code.h"
#include "readers/prose/measures.h"

namespace scalescope::analyze {
namespace {

using diagnose::Claim;
using diagnose::Reading;

constexpr std::size_t kMaxLines = 200000;       // read at most this many lines
constexpr std::size_t kDetectLines = 4000;      // detection looks at the head only
constexpr std::size_t kDetectBytes = 256 * 1024;

// ───────────────────────────── small helpers ─────────────────────────────

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}
bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }
bool is_alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool is_upper(char c) { return std::isupper(static_cast<unsigned char>(c)) != 0; }
bool all_digits(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_digit); }
bool any_digit(std::string_view s) { return std::any_of(s.begin(), s.end(), is_digit); }
bool any_alpha(std::string_view s) { return std::any_of(s.begin(), s.end(), is_alpha); }
template <class C>
bool in(const C& set, std::string_view w) {
  return std::find(std::begin(set), std::end(set), w) != std::end(set);
}

// A plain word: letters, with inner hyphens or apostrophes ("don't", "spin-wait", "it's").
bool word_like(std::string_view w) {
  if (w.empty() || !is_alpha(w.front())) return false;
  for (char c : w)
    if (!(is_alpha(c) || c == '-' || c == '\'' || static_cast<unsigned char>(c) >= 0x80)) return false;
  return true;
}

// "NAME=value" (NAME a variable, option or kernel-parameter name): the position of '=' or npos.
std::size_t assignment_eq(std::string_view w) {
  if (w.empty() || !(is_alpha(w.front()) || w.front() == '_')) return std::string_view::npos;
  for (std::size_t i = 1; i < w.size(); ++i) {
    if (w[i] == '=') return i + 1 < w.size() ? i : std::string_view::npos;
    if (!(std::isalnum(static_cast<unsigned char>(w[i])) || w[i] == '_' || w[i] == '.' || w[i] == '-'))
      return std::string_view::npos;
  }
  return std::string_view::npos;
}

// An environment variable's name as written in settings people state: upper case with a prefix of a library or
// launcher that reads it (NCCL_, CUDA_, TORCH_ …) or a name launchers read (WORLD_SIZE …).
bool env_like_name(std::string_view n) {
  if (n.size() < 3) return false;
  for (char c : n)
    if (!(is_upper(c) || is_digit(c) || c == '_')) return false;
  static constexpr std::string_view kPrefixes[] = {
      "NCCL_", "CUDA_", "TORCH_", "OMP_", "UCX_", "FI_", "MASTER_", "PYTORCH_", "NVIDIA_", "MKL_", "GLOO_", "SLURM_",
      "OMPI_", "PMI_", "PMIX_", "I_MPI_", "MLX5_", "HOROVOD_", "CUBLAS_", "CUDNN_", "TF_", "XLA_", "HF_",
      "ACCELERATE_", "DEEPSPEED_", "NVSHMEM_", "RDMAV_", "IBV_", "UCC_", "HCOLL_", "TORCHELASTIC_", "LOCAL_"};
  static constexpr std::string_view kNames[] = {"WORLD_SIZE", "RANK", "LOCAL_RANK", "NODE_RANK", "NNODES",
                                                "NPROC_PER_NODE", "LD_LIBRARY_PATH", "LD_PRELOAD"};
  for (auto p : kPrefixes)
    if (starts_with(n, p) && n.size() > p.size()) return true;
  return in(kNames, n);
}

// ───────────────────────────── lines ─────────────────────────────

enum class LineKind { blank, code, quote, table, log, heading, item, text };

// The nccl-tests and log headers that start with '#' but are no markdown heading.
bool tests_hash_line(std::string_view t) {
  std::string_view r = t;
  while (!r.empty() && r.front() == '#') r.remove_prefix(1);
  r = trim_blanks(r);
  for (std::string_view w : {"nThread", "Using devices", "Rank", "Avg bus", "Out of bounds", "size", "(B)", "Collective"})
    if (starts_with(r, w)) return true;
  return false;
}

// "host-a:1234:5678 [0] …", "[2024-01-02 10:11:12] …", "2024-01-02T10:11:12 …", "10:11:12.123 …", "I0102 10:11:12 …",
// "[rank0]: …", "[W reducer.cpp:1050] …", "Traceback (most recent call last):", "  File "x.py", line 3", "RuntimeError: …",
// NCCL INFO / WARN lines: a line of a program's output, not the poster's words.
bool log_line(std::string_view raw) {
  const std::string_view t = trim_blanks(raw);
  if (t.empty()) return false;
  if (contains(t, "NCCL INFO") || contains(t, "NCCL WARN") || contains(t, "NCCL TRACE")) return true;
  // NCCL's own messages quoted without their prefix: "NCCL_P2P_LEVEL set by environment to LOC", "NCCL_IB_HCA set to
  // mlx5_0", "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC", "9[1a000] -> 2[6b000] [send] via NET/IB/0".
  {
    const auto sp = t.find(' ');
    const std::string_view first = t.substr(0, sp);
    if (sp != std::string_view::npos && first.size() > 5 && starts_with(first, "NCCL_") &&
        (starts_with(t.substr(sp), " set by environment to ") || starts_with(t.substr(sp), " set to ")))
      return true;
    if (contains(t, " -> ") && contains(t, " via ")) return true;
  }
  if (starts_with(t, "Traceback (most recent call last)") || starts_with(t, "File \"") || starts_with(t, "During handling of"))
    return true;
  // host:pid:tid
  {
    const auto sp = t.find(' ');
    const std::string_view first = t.substr(0, sp);
    const auto c2 = first.rfind(':');
    if (c2 != std::string_view::npos && c2 > 0) {
      const auto c1 = first.rfind(':', c2 - 1);
      if (c1 != std::string_view::npos && c1 > 0 && all_digits(first.substr(c1 + 1, c2 - c1 - 1)) &&
          all_digits(first.substr(c2 + 1)))
        return true;
    }
  }
  // Timestamps: "2024-01-02", "[2024-01-02", "10:11:12", glog "I0102 10:11:12".
  {
    std::string_view s = t;
    if (!s.empty() && s.front() == '[') s.remove_prefix(1);
    if (s.size() >= 10 && all_digits(s.substr(0, 4)) && s[4] == '-' && all_digits(s.substr(5, 2)) && s[7] == '-' &&
        all_digits(s.substr(8, 2)))
      return true;
    if (s.size() >= 8 && all_digits(s.substr(0, 2)) && s[2] == ':' && all_digits(s.substr(3, 2)) && s[5] == ':' &&
        all_digits(s.substr(6, 2)))
      return true;
    if (s.size() >= 6 && (s[0] == 'I' || s[0] == 'W' || s[0] == 'E' || s[0] == 'F') && all_digits(s.substr(1, 4)) &&
        s[5] == ' ')
      return true;
  }
  // "[rank0]:", "[W reducer.cpp:1050]", "[E ProcessGroupNCCL.cpp:…]", "[default0]:", "[1,0]<stdout>:"
  if (t.front() == '[') {
    const auto close = t.find(']');
    if (close != std::string_view::npos && close < 80) {
      const std::string l = lower(t.substr(1, close - 1));
      if (starts_with(l, "rank") || starts_with(l, "default") || contains(l, ".cpp") || contains(l, ".py") ||
          contains(l, ".cc") || contains(l, ".h:") || (l.size() >= 2 && (l[0] == 'w' || l[0] == 'e' || l[0] == 'i') && l[1] == ' ') ||
          (any_digit(l) && !any_alpha(l)))
        return true;
    }
  }
  // "RuntimeError: …", "torch.distributed.DistBackendError: …", "UserWarning: …", "ERROR: …", "WARNING:root:…"
  {
    const auto colon = t.find(':');
    if (colon != std::string_view::npos && colon > 2 && colon < 60) {
      const std::string_view head = t.substr(0, colon);
      if (head.find(' ') == std::string_view::npos &&
          (ends_with(head, "Error") || ends_with(head, "Exception") || ends_with(head, "Warning") || head == "ERROR" ||
           head == "WARNING" || head == "INFO" || head == "DEBUG" || head == "CRITICAL" || head == "FATAL"))
        return true;
    }
  }
  return false;
}

// A line of NAME=value settings only ("NCCL_DEBUG=INFO", "export A=1 B=2"): an env dump's line.
bool env_line(std::string_view t) {
  t = trim_blanks(t);
  if (starts_with(t, "export ")) t.remove_prefix(7);
  bool any = false;
  std::size_t i = 0;
  while (i < t.size()) {
    while (i < t.size() && (t[i] == ' ' || t[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < t.size() && t[j] != ' ' && t[j] != '\t') ++j;
    if (j > i) {
      if (assignment_eq(t.substr(i, j - i)) == std::string_view::npos) return false;
      any = true;
    }
    i = j;
  }
  return any;
}

// A markdown list marker at the start of `t` ("- ", "* ", "+ ", "1. ", "2) "): its length, else 0.
std::size_t list_marker(std::string_view t) {
  if (t.size() >= 2 && (t[0] == '-' || t[0] == '*' || t[0] == '+') && (t[1] == ' ' || t[1] == '\t')) return 2;
  std::size_t i = 0;
  while (i < t.size() && i < 3 && is_digit(t[i])) ++i;
  if (i > 0 && i + 1 < t.size() && (t[i] == '.' || t[i] == ')') && t[i + 1] == ' ') return i + 2;
  return 0;
}

std::size_t indent_of(std::string_view l) {
  std::size_t n = 0;
  for (char c : l) {
    if (c == ' ') ++n;
    else if (c == '\t') n += 4;
    else break;
  }
  return n;
}

struct Classified {
  LineKind kind = LineKind::blank;
  std::string text;  // for text, items and headings: the line without markers, trimmed
};

// Classes every line (see the file comment).
std::vector<Classified> classify(const std::vector<std::string_view>& lines) {
  std::vector<Classified> out(lines.size());
  bool fenced = false;
  std::string fence;
  LineKind prev = LineKind::blank;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string_view raw = lines[i];
    const std::string_view t = trim_blanks(raw);
    Classified& c = out[i];
    if (fenced) {
      c.kind = LineKind::code;
      if (starts_with(t, fence)) fenced = false;
      prev = c.kind;
      continue;
    }
    if (starts_with(t, "```") || starts_with(t, "~~~")) {
      fenced = true;
      fence = std::string(t.substr(0, 3));
      c.kind = LineKind::code;
      prev = c.kind;
      continue;
    }
    if (t.empty()) {
      c.kind = LineKind::blank;
      prev = c.kind;
      continue;
    }
    // Indented code: four blanks (or a tab) after a blank line or more code; never inside a paragraph or a list.
    if (indent_of(raw) >= 4 && (prev == LineKind::blank || prev == LineKind::code) && list_marker(t) == 0) {
      c.kind = LineKind::code;
      prev = c.kind;
      continue;
    }
    if (t.front() == '>') {
      c.kind = LineKind::quote;
      prev = c.kind;
      continue;
    }
    if (log_line(t) || (prev == LineKind::log && list_marker(t) == 0 && t.front() != '#')) {
      c.kind = LineKind::log;  // a log line and the lines wrapped after it
      prev = c.kind;
      continue;
    }
    if (std::count(t.begin(), t.end(), '|') >= 2 || (t.front() == '|' && t.size() > 1)) {
      c.kind = LineKind::table;
      prev = c.kind;
      continue;
    }
    if (env_line(t)) {
      c.kind = LineKind::text;  // read for its settings (a sentence of its own)
      c.text = std::string(t);
      prev = LineKind::blank;   // one line, one unit
      continue;
    }
    if (t.front() == '#') {
      std::size_t h = 0;
      while (h < t.size() && t[h] == '#') ++h;
      if (h <= 6 && h < t.size() && t[h] == ' ' && !tests_hash_line(t)) {
        c.kind = LineKind::heading;
        c.text = std::string(trim_blanks(t.substr(h)));
      } else {
        c.kind = LineKind::log;  // "# nThread …", "#  Rank 0 …", a shell comment
      }
      prev = c.kind;
      continue;
    }
    if (const auto m = list_marker(t); m > 0) {
      c.kind = LineKind::item;
      c.text = std::string(trim_blanks(t.substr(m)));
      prev = c.kind;
      continue;
    }
    c.kind = LineKind::text;
    c.text = std::string(t);
    prev = c.kind;
  }
  return out;
}

// ───────────────────────────── paragraphs and sentences ─────────────────────────────

struct Piece {
  std::string text;
  bool heading = false;
  std::vector<std::pair<std::size_t, std::size_t>> line_at;  // (offset in text, 1-based line)
  std::size_t line_of(std::size_t offset) const {
    if (line_at.empty()) return 0;
    // The last line that starts at or before `offset` (line_at is sorted by offset).
    auto it = std::upper_bound(line_at.begin(), line_at.end(), offset,
                               [](std::size_t o, const std::pair<std::size_t, std::size_t>& e) { return o < e.first; });
    return it == line_at.begin() ? line_at.front().second : std::prev(it)->second;
  }
};

// Markdown inline marks removed: emphasis ("**", "__"), backticks, links "[text](url)" → text.
std::string strip_inline(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if ((c == '*' || c == '_') && i + 1 < s.size() && s[i + 1] == c) {
      ++i;
      continue;
    }
    if (c == '`') continue;
    if (c == ']' && i + 1 < s.size() && s[i + 1] == '(') {
      const auto close = s.find(')', i + 2);
      if (close != std::string_view::npos && close - i < 300) {
        i = close;
        continue;
      }
    }
    if (c == '[' && s.find("](", i) != std::string_view::npos) continue;
    out += c;
  }
  return out;
}

std::vector<Piece> paragraphs(const std::vector<Classified>& cls) {
  std::vector<Piece> out;
  bool open = false;
  for (std::size_t i = 0; i < cls.size(); ++i) {
    const auto& c = cls[i];
    const bool text = c.kind == LineKind::text, item = c.kind == LineKind::item, heading = c.kind == LineKind::heading;
    if (!(text || item || heading)) {
      open = false;
      continue;
    }
    const std::string t = strip_inline(c.text);
    const bool env = text && env_line(c.text);
    if (!open || item || heading || env) {
      out.emplace_back();
      out.back().heading = heading;
    } else {
      out.back().text += ' ';
    }
    out.back().line_at.emplace_back(out.back().text.size(), i + 1);
    out.back().text += t;
    open = text && !env;  // text continues on the next text line; items, headings and env lines stand alone
    if (item) open = true;  // an item's wrapped lines join it
  }
  return out;
}

bool sentence_end(char c) { return c == '.' || c == '!' || c == '?'; }

struct Sentence {
  std::string text;
  std::size_t line = 0;        // of its first character
  const Piece* piece = nullptr;
  std::size_t offset = 0;      // of its first character in the paragraph
  std::size_t line_at(std::size_t pos) const { return piece ? piece->line_of(offset + pos) : line; }
};

// Cuts a paragraph into sentences at '.', '!', '?' (and the full-width '？', '。', '！') followed by a blank, unless
// the word before is an abbreviation ("e.g.", "vs.") or the next word starts in lower case.
std::vector<Sentence> sentences(const Piece& p) {
  std::vector<Sentence> out;
  const std::string& s = p.text;
  std::size_t start = 0;
  auto push = [&](std::size_t end) {
    const std::string_view t = trim_blanks(std::string_view(s).substr(start, end - start));
    const std::size_t off = static_cast<std::size_t>(t.data() - s.data());
    if (!t.empty()) out.push_back({std::string(t), p.line_of(off), &p, off});
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    std::size_t len = 0;
    if (sentence_end(s[i])) len = 1;
    for (std::string_view w : {"？", "。", "！"})
      if (s.compare(i, w.size(), w) == 0) len = w.size();
    if (len == 0) continue;
    const std::size_t after = i + len;
    if (after < s.size() && s[after] != ' ' && s[after] != '\t' && len == 1) continue;
    std::size_t n = after;
    while (n < s.size() && (s[n] == ' ' || s[n] == '\t')) ++n;
    if (len == 1 && s[i] == '.') {
      std::size_t b = i;
      while (b > start && s[b - 1] != ' ' && i - b < 12) --b;
      const std::string w = lower(std::string_view(s).substr(b, i - b));
      if (w == "e.g" || w == "i.e" || w == "vs" || w == "etc" || w == "approx" || w == "fig" || w == "no" || w == "cf" ||
          w == "ca" || w == "resp" || w == "incl" || w == "ver" || w == "v" || w.size() == 1)
        continue;
      // "etc. and", "e.g. the": an abbreviation's dot before a lower-case word.
      if (n < s.size() && std::islower(static_cast<unsigned char>(s[n])) && w.find('.') != std::string::npos) continue;
    }
    push(after);
    start = after;
    i = after - 1;
  }
  push(s.size());
  return out;
}

// ───────────────────────────── tokens and clauses ─────────────────────────────

struct Tok {
  std::string raw;   // as printed
  std::string core;  // without surrounding punctuation
  std::string low;   // core in lower case
  bool ends_clause = false;  // raw ends with ';' (a clause ends after it)
  bool open_paren = false;   // raw starts with '('
  std::size_t pos = 0;       // offset in the sentence
};

std::vector<Tok> tokens(std::string_view sentence) {
  std::string s(sentence);
  // Dashes between words separate like blanks: "indefinitely—no timeout", "works -- but".
  for (std::string_view d : {"—", "–"}) {
    std::size_t pos = 0;
    while ((pos = s.find(d, pos)) != std::string::npos) s.replace(pos, d.size(), " ; ");
  }
  std::vector<Tok> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    std::size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) {
      Tok t;
      t.raw = s.substr(i, j - i);
      std::string_view c = t.raw;
      while (!c.empty() && std::string_view("([{\"'*<").find(c.front()) != std::string_view::npos) c.remove_prefix(1);
      const bool assignment = t.raw.find('=') != std::string::npos;
      while (!c.empty() && std::string_view(assignment ? ")]}\"'>,.;:!?" : ")]}\"'*>,.;:!?").find(c.back()) != std::string_view::npos)
        c.remove_suffix(1);
      for (std::string_view w : {"？", "。", "！", "，"})
        while (ends_with(c, w)) c.remove_suffix(w.size());
      t.core = std::string(c);
      t.low = lower(c);
      t.ends_clause = ends_with(t.raw, ";");
      t.open_paren = !t.raw.empty() && t.raw.front() == '(';
      t.pos = i;
      if (t.raw == ";") {
        if (!out.empty()) out.back().ends_clause = true;
      } else {
        out.push_back(std::move(t));
      }
    }
    i = j;
  }
  return out;
}

constexpr std::string_view kClauseBreaks[] = {"but", "however", "whereas", "although", "though", "yet"};

bool verdict_word(std::string_view w);

// The clauses of a sentence as [begin, end) token ranges: cut at "but", "however", "whereas", "although", "though",
// "yet", at ';' and dashes, and at a comma when the words on both sides each hold a verdict ("with X it hangs, with Y
// it works").
std::vector<std::pair<std::size_t, std::size_t>> clauses(const std::vector<Tok>& t);
std::vector<std::pair<std::size_t, std::size_t>> split_at_commas(const std::vector<Tok>& t, std::size_t b, std::size_t e) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  std::vector<std::size_t> before(e - b + 1, 0);  // verdict words in [b, b + k)
  for (std::size_t k = b; k < e; ++k) before[k - b + 1] = before[k - b] + (verdict_word(t[k].low) ? 1 : 0);
  std::size_t start = b;
  for (std::size_t i = b; i + 1 < e; ++i) {
    if (!ends_with(t[i].raw, ",")) continue;
    const bool left = before[i - b + 1] > before[start - b], right = before[e - b] > before[i - b + 1];
    if (left && right) {
      out.emplace_back(start, i + 1);
      start = i + 1;
    }
  }
  out.emplace_back(start, e);
  return out;
}

std::vector<std::pair<std::size_t, std::size_t>> clauses(const std::vector<Tok>& t) {
  std::vector<std::pair<std::size_t, std::size_t>> coarse, out;
  std::size_t b = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (in(kClauseBreaks, t[i].low) && i > b) {
      out.emplace_back(b, i);
      b = i;
    }
    if (t[i].ends_clause) {
      out.emplace_back(b, i + 1);
      b = i + 1;
    }
  }
  if (b < t.size()) out.emplace_back(b, t.size());
  for (auto [cb, ce] : out)
    for (auto x : split_at_commas(t, cb, ce)) coarse.push_back(x);
  return coarse;
}

// ───────────────────────────── vocabularies ─────────────────────────────

constexpr std::string_view kNegators[] = {"not", "no", "never", "without", "none", "nor", "cannot", "neither"};
bool negator(std::string_view w) { return in(kNegators, w) || ends_with(w, "n't") || ends_with(w, "n’t"); }

constexpr std::string_view kHangWords[] = {"hang", "hangs", "hanging", "hung", "stuck", "deadlock", "deadlocks",
                                           "deadlocked", "deadlocking", "freeze", "freezes", "freezing", "froze",
                                           "frozen", "stall", "stalls", "stalled", "stalling", "spin-wait",
                                           "spin-waits", "spin-waiting", "livelock"};
constexpr std::string_view kSpinWords[] = {"spin", "spins", "spinning"};
constexpr std::string_view kForever[] = {"forever", "indefinitely", "infinite", "endlessly"};
constexpr std::string_view kWorksWords[] = {"works", "worked", "working", "resolves", "resolved", "resolve",
                                            "fixes", "fixed", "fix", "solves", "solved", "solve", "solution",
                                            "workaround", "workarounds", "workaround", "helps", "helped", "succeeds",
                                            "succeeded", "passes", "avoids", "avoided", "avoid",
                                            "circumvents", "circumvented"};
constexpr std::string_view kWorkAux[] = {"does", "did", "do", "can", "could", "will", "would", "to", "it", "they",
                                         "then", "everything", "all", "both", "now", "that", "this", "which", "and"};
constexpr std::string_view kSlowWords[] = {"slow", "slower", "slowly", "slowness", "slowdown", "slowed", "sluggish"};
constexpr std::string_view kLowWords[] = {"speed", "speeds", "bandwidth", "throughput", "performance", "busbw",
                                          "scaling", "utilization", "utilisation"};
constexpr std::string_view kFailWords[] = {"fails", "failed", "fail", "failing", "failure", "crash", "crashes",
                                           "crashed", "crashing", "segfault", "segfaults", "aborts", "aborted",
                                           "error", "errors", "breaks", "broken"};
// Trials: what was tried is no setting in force; a trial that worked is still a works-with.
constexpr std::string_view kTryWords[] = {"tried", "try", "trying", "tries", "attempted", "attempt", "attempting",
                                          "experimented", "testing", "toggled", "toggle", "toggling", "compared",
                                          "comparing", "versus", "vs"};
// Suggestions and instructions: nothing they name is a claim or a setting in force.
constexpr std::string_view kSuggestWords[] = {"suggest", "suggested", "suggests", "suggestion", "please", "should",
                                              "recommend", "recommended", "recommends", "advise", "advised"};
// A sentence that starts with one of these is an instruction ("Set NCCL_P2P_DISABLE=1 and rerun").
constexpr std::string_view kImperatives[] = {"run", "rerun", "re-run", "set", "use", "try", "check", "compare",
                                             "enable", "disable", "keep", "add", "remove", "unset", "consider", "make",
                                             "do", "don't", "avoid", "increase", "mount", "pass", "install", "upgrade",
                                             "downgrade", "confirm", "grep", "look", "see", "verify", "ask", "load"};
constexpr std::string_view kConditionals[] = {"if", "whether", "unless"};
constexpr std::string_view kStillWords[] = {"still", "even", "again"};
constexpr std::string_view kAnaphora[] = {"this", "that", "it", "which", "now", "then", "these"};
constexpr std::string_view kStop[] = {
    "the", "a", "an", "and", "or", "but", "with", "without", "to", "of", "in", "on", "at", "for", "from", "by", "it",
    "is", "was", "are", "were", "be", "been", "this", "that", "these", "those", "then", "than", "as", "so", "if",
    "when", "while", "i", "we", "you", "they", "he", "she", "my", "our", "your", "their", "its", "did", "does", "do",
    "has", "have", "had", "will", "would", "can", "could", "should", "not", "no", "also", "only", "just", "all",
    "both", "after", "before", "which", "what", "where", "how", "why", "there", "here", "fine", "well", "works",
    "work", "worked", "fixes", "fixed", "resolves", "resolved", "solves", "solved", "helps", "helped", "hangs",
    "hang", "hanging", "slow", "slower", "now", "again", "still", "even", "into", "through", "via", "using", "use",
    "used"};

bool verdict_word(std::string_view w) {
  return in(kHangWords, w) || in(kWorksWords, w) || in(kSlowWords, w) || in(kFailWords, w) || w == "work" || w == "help";
}

bool op_word(std::string_view w, std::string* norm) {
  static const std::pair<std::string_view, std::string_view> k[] = {
      {"all-reduce", "all-reduce"}, {"allreduce", "all-reduce"}, {"all_reduce", "all-reduce"},
      {"ncclallreduce", "all-reduce"}, {"allreduces", "all-reduce"}, {"all-reduces", "all-reduce"},
      {"broadcast", "broadcast"}, {"ncclbroadcast", "broadcast"}, {"barrier", "barrier"},
      {"all-gather", "all-gather"}, {"allgather", "all-gather"}, {"all_gather", "all-gather"},
      {"ncclallgather", "all-gather"}, {"reduce-scatter", "reduce-scatter"}, {"reducescatter", "reduce-scatter"},
      {"reduce_scatter", "reduce-scatter"}, {"ncclreducescatter", "reduce-scatter"}, {"alltoall", "all-to-all"},
      {"all-to-all", "all-to-all"}, {"collective", "collective"}, {"collectives", "collective"},
      {"iteration", "iteration"}, {"step", "step"}, {"epoch", "epoch"}, {"batch", "batch"},
      {"forward", "forward"}, {"backward", "backward"}, {"evaluation", "evaluation"}, {"validation", "validation"},
      {"checkpoint", "checkpoint"}};
  for (auto [a, b] : k)
    if (w == a) {
      if (norm) *norm = std::string(b);
      return true;
    }
  return false;
}

// nccl-tests programs: all_reduce_perf, sendrecv_perf …
bool tests_program(std::string_view w) {
  if (ends_with(w, "_mpi")) w.remove_suffix(4);
  if (!ends_with(w, "_perf") || w.size() <= 5) return false;
  const auto stem = w.substr(0, w.size() - 5);
  return std::all_of(stem.begin(), stem.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)) || c == '_'; });
}

// A path class as nvidia-smi names it, or NVLink: the detail, or "".
std::string path_class(const Tok& t) {
  const std::string& c = t.core;
  if (c == "SYS" || c == "NODE" || c == "PHB" || c == "PXB" || c == "PIX") return c;
  if (c.size() >= 3 && c.size() <= 4 && c[0] == 'N' && c[1] == 'V' && all_digits(std::string_view(c).substr(2))) return c;
  const std::string& l = t.low;
  if (l == "nvlink" || l == "nvlinks" || l == "nv-link" || l == "nvlinked") return "NVLink";
  if (l == "cross-socket" || l == "inter-socket" || l == "cross-numa") return "SYS";
  return "";
}

// ───────────────────────────── per-clause reading ─────────────────────────────

struct Detail {
  std::vector<std::string> settings;     // "NAME=value" as written (any name: env, option, kernel parameter)
  std::vector<std::pair<std::string, std::string>> env;  // the environment settings among them
  std::vector<std::string> flags;        // "--ipc=host", "--gpus all"
  std::string instead;                   // "DDP instead of DataParallel"
  std::string change;                    // "disabling VT-d"
  std::string text() const {
    std::vector<std::string> parts = settings;
    for (const auto& f : flags) parts.push_back(f);
    if (!parts.empty()) return fmt::format("{}", fmt::join(parts, " "));
    if (!instead.empty()) return instead;
    return change;
  }
  bool empty() const { return settings.empty() && flags.empty() && instead.empty() && change.empty(); }
};

struct ClauseRead {
  std::size_t b = 0, e = 0;
  bool hang = false, hang_negated = false;
  bool works = false, works_negated = false, work_verb_negated = false;
  bool slow = false, slow_negated = false;
  bool fail = false;
  bool only = false, tried = false, conditional = false, still = false, anaphora = false;
  bool consumed = false;  // read together with an earlier clause
  bool suggested = false;
  bool better = false;  // "better", "faster", "improves": works-with only when a change is named
  Detail detail;
  std::vector<std::string> paths;
};

// Whether the word at `i` is negated: a negator among the three words before it within the clause ("does not
// hang", "no longer hangs", "without hanging"), not across another verdict word.
bool negated(const std::vector<Tok>& t, std::size_t b, std::size_t i) {
  for (std::size_t k = i; k > b && i - k < 3;) {
    --k;
    if (t[k].low == "longer" && k > b && t[k - 1].low == "no") return true;
    if (negator(t[k].low)) return true;
    if (in(kHangWords, t[k].low) || in(kWorksWords, t[k].low)) break;
  }
  return false;
}

// A flag as written ("--ipc=host", "--shm-size=8g", "--gpus all"), or "".
std::string flag_at(const std::vector<Tok>& t, std::size_t i, std::size_t e) {
  const std::string& c = t[i].core;
  if (!starts_with(c, "--") || c.size() < 4 || !is_alpha(c[2])) return "";
  if (c.find('=') != std::string::npos) return c;
  if (i + 1 < e) {
    const std::string& n = t[i + 1].core;
    static constexpr std::string_view kNotValues[] = {"and", "or", "but", "the", "a", "an", "to", "with", "which",
                                                      "that", "is", "was", "it", "in", "on", "for", "of", "as"};
    if (!n.empty() && !starts_with(n, "-") && n.size() <= 16 && !in(kNotValues, t[i + 1].low) && !t[i + 1].open_paren &&
        std::any_of(n.begin(), n.end(), [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) != 0; }) &&
        !ends_with(t[i].raw, ",") && (std::islower(static_cast<unsigned char>(n[0])) || is_digit(n[0]) || n[0] == '/'))
      return c + " " + n;
  }
  return c;
}

// Up to `n` tokens from `from` (forward, or backward when `dir` < 0) that are no stop words, as printed.
std::string phrase(const std::vector<Tok>& t, std::size_t b, std::size_t e, std::size_t from, int dir, std::size_t n) {
  std::vector<std::string> w;
  std::size_t k = from;
  while (w.size() < n && k >= b && k < e) {
    if (in(kStop, t[k].low) || t[k].core.empty() || in(kClauseBreaks, t[k].low)) break;
    if (dir > 0 && !w.empty() && (t[k].open_paren)) break;
    w.push_back(t[k].core);
    const bool cut = dir > 0 ? std::string_view(",;:)").find(t[k].raw.back()) != std::string_view::npos
                             : (k > b && std::string_view(",;:)").find(t[k - 1].raw.back()) != std::string_view::npos);
    if (cut) break;
    if (dir < 0) {
      if (k == b) break;
      --k;
    } else {
      ++k;
    }
  }
  if (dir < 0) std::reverse(w.begin(), w.end());
  return fmt::format("{}", fmt::join(w, " "));
}

// A short phrase that names a thing ("DDP", "DataParallel", "nn.DataParallel"), not an action ("idling 30 min",
// "exit cleanly").
bool nounish(const std::string& p) {
  std::size_t b = 0;
  while (b < p.size()) {
    auto e = p.find(' ', b);
    if (e == std::string::npos) e = p.size();
    const std::string w = lower(std::string_view(p).substr(b, e - b));
    if (ends_with(w, "ing") || ends_with(w, "ly") || all_digits(w)) return false;
    b = e + 1;
  }
  return !p.empty();
}

constexpr std::string_view kChangeVerbs[] = {
    "disable", "disabling", "disabled", "enable", "enabling", "enabled", "unset", "unsetting", "remove", "removing",
    "removed", "upgrade", "upgrading", "upgraded", "downgrade", "downgrading", "downgraded", "increase", "increasing",
    "increased", "reduce", "reducing", "reduced", "mount", "mounting", "mounted", "load", "loading", "loaded",
    "reinstall", "reinstalling", "reinstalled", "passing", "adding", "added", "rebooting", "booting"};

ClauseRead read_clause(const std::vector<Tok>& t, std::size_t b, std::size_t e) {
  ClauseRead c;
  c.b = b;
  c.e = e;
  bool endless = false;  // "forever", "indefinitely", "100%": what makes spinning a hang
  for (std::size_t k = b; k < e; ++k) endless = endless || in(kForever, t[k].low) || contains(t[k].core, "100%");
  for (std::size_t i = b; i < e; ++i) {
    const std::string& w = t[i].low;
    const std::string prev = i > b ? t[i - 1].low : "";
    const std::string next = i + 1 < e ? t[i + 1].low : "";
    // hang
    bool hang = in(kHangWords, w) || (w == "progress" && prev == "forward" && i >= b + 2 && t[i - 2].low == "no") ||
                (w == "progress" && prev == "no");
    // "stuck at ~40 GB/s", "stalls at 12 GB/s": a plateau, not a hang.
    if (hang && (next == "at" || next == "around") && i + 2 < e && !contains(t[i + 2].core, "%") &&
        (is_digit(t[i + 2].core.empty() ? 'x' : t[i + 2].core[0]) || starts_with(t[i + 2].core, "~")))
      hang = false;
    if (in(kSpinWords, w) && endless) hang = true;
    if (w == "never" && (next == "returns" || next == "finishes" || next == "completes" || next == "ends" || next == "returned"))
      hang = true;
    if ((w == "forever" || w == "indefinitely") && (prev == "waits" || prev == "wait" || prev == "waiting" || prev == "blocks" || prev == "blocked"))
      hang = true;
    if (hang) {
      const bool neg = (w == "progress") ? false : negated(t, b, i);
      if (neg) c.hang_negated = true;
      else c.hang = true;
    }
    // works
    bool works = in(kWorksWords, w) && !(w == "fix" || w == "resolve" || w == "solve" || w == "avoid");
    // Base forms are verbs after an auxiliary or a negation ("did not help", "does not work", "will fix"), else nouns
    // or instructions ("the fix", "try to work around").
    if ((w == "work" || w == "help" || w == "fix" || w == "resolve" || w == "solve" || w == "avoid") &&
        (in(kWorkAux, prev) || negator(prev)))
      works = true;
    if (w == "fix" && (prev == "the" || prev == "a" || prev == "this" || prev == "that")) works = true;  // "the fix"
    if (w == "work" && next == "around") works = true;
    if ((w == "runs" || w == "ran" || w == "run" || w == "running" || w == "is" || w == "goes" || w == "went" || w == "go") &&
        (next == "fine" || next == "normally" || next == "smoothly" || next == "away" || next == "ok" || next == "okay"))
      works = true;
    if ((w == "disappears" || w == "disappeared" || w == "vanishes" || w == "vanished")) works = true;
    if (w == "better" || w == "improves" || w == "improved" || w == "faster") c.better = true;
    if (w == "rid" && prev == "gets") works = true;
    if (works) {
      // "the fix" / "a solution" are nouns, fine; "no fix", "didn't help": negated.
      if (negated(t, b, i)) {
        c.works_negated = true;
        if ((w == "work" || w == "works" || w == "worked" || w == "working")) c.work_verb_negated = true;
      } else {
        c.works = true;
      }
    }
    // slow
    bool low_word_before = false;  // "the speed was really low"
    for (std::size_t k = i; k > b && i - k < 4;) {
      --k;
      if (in(kLowWords, t[k].low)) low_word_before = true;
    }
    bool slow = in(kSlowWords, w) || ((w == "low" || w == "poor" || w == "terrible" || w == "bad") && (in(kLowWords, next) || low_word_before)) ||
                (w == "degraded" && (in(kLowWords, next) || low_word_before));
    // "solved the slowdown": the slowness is what the change removed, not what remains.
    if (slow && (w == "slowdown" || w == "slowness" || w == "slowdowns")) {
      for (std::size_t k = b; k < i; ++k)
        if (in(kWorksWords, t[k].low)) slow = false;
    }
    if (slow) {
      if (negated(t, b, i)) c.slow_negated = true;
      else c.slow = true;
    }
    if (in(kFailWords, w) && !negated(t, b, i)) c.fail = true;
    if (w == "only") c.only = true;
    if (in(kTryWords, w)) c.tried = true;
    if (in(kSuggestWords, w) || (w == "you" && (prev == "could" || prev == "can" || prev == "would" || prev == "should")) ||
        (w == "next" && (next == "checks" || next == "steps" || next == "step")))
      c.suggested = true;
    if (in(kConditionals, w) || (w == "case" && prev == "in") || (w == "prevent" && prev == "to")) c.conditional = true;
    if (in(kStillWords, w)) c.still = true;
    if (in(kAnaphora, w)) c.anaphora = true;
    // details
    const std::string& core = t[i].core;
    if (const auto eq = assignment_eq(core); eq != std::string::npos) {
      const std::string name = core.substr(0, eq), value = core.substr(eq + 1);
      const bool lower_name = std::none_of(name.begin(), name.end(), is_upper);
      if (!env_like_name(name) && !lower_name) continue;  // "NumelIn=1": a log field, not a setting
      c.detail.settings.push_back(core);
      if (env_like_name(name)) c.detail.env.emplace_back(name, value);
      continue;
    }
    if (env_like_name(core) && core.find('_') != std::string::npos) {
      // "NCCL_P2P_DISABLE set to 1", "set NCCL_P2P_LEVEL to NVL", "NCCL_IB_DISABLE set by environment to 0",
      // "NCCL_IB_DISABLE is 0"
      std::size_t k = i + 1;
      bool set = prev == "set" || prev == "setting";
      const bool cut = std::string_view(",;:)").find(t[i].raw.back()) != std::string_view::npos;
      while (!cut && k < e && k <= i + 4 &&
             (t[k].low == "set" || t[k].low == "is" || t[k].low == "was" || t[k].low == "=" || t[k].low == "by" ||
              t[k].low == "environment" || t[k].low == "the")) {
        set = set || t[k].low == "set";
        ++k;
      }
      bool to = false;
      if (!cut && k < e && t[k].low == "to") ++k, to = true;
      const std::string v = k < e ? t[k].core : "";
      const bool value_like = !v.empty() && v.size() <= 40 && !in(kStop, t[k].low) &&
                              (set || is_digit(v[0]) ||
                               std::all_of(v.begin(), v.end(), [](char ch) { return is_upper(ch) || is_digit(ch) || ch == '_'; }));
      if (!cut && k < e && k > i + 1 && (to || t[k - 1].low == "is" || t[k - 1].low == "=") && value_like) {
        const std::string s = core + "=" + t[k].core;
        c.detail.settings.push_back(s);
        c.detail.env.emplace_back(core, t[k].core);
        i = k;
        continue;
      }
      c.detail.settings.push_back(core);  // named without a value
      continue;
    }
    if (auto f = flag_at(t, i, e); !f.empty()) {
      c.detail.flags.push_back(f);
      if (f.find(' ') != std::string::npos) ++i;
      continue;
    }
    if (w == "instead" && next == "of" && i + 2 < e && c.detail.instead.empty()) {
      const std::string x = phrase(t, b, e, i - (i > b ? 1 : 0), -1, 2), y = phrase(t, b, e, i + 2, +1, 2);
      if (i > b && !x.empty() && !y.empty() && nounish(x) && nounish(y)) c.detail.instead = x + " instead of " + y;
    }
    if ((w == "switching" || w == "switch" || w == "switched" || w == "moving" || w == "replacing" || w == "replaced" ||
         w == "replace") &&
        c.detail.instead.empty()) {
      // "switching from DataParallel to DDP", "replacing DataParallel with DDP"
      std::size_t k = i + 1;
      if (k < e && t[k].low == "from") ++k;
      const std::string x = phrase(t, b, e, k, +1, 3);
      std::size_t m = k;
      while (m < e && t[m].low != "to" && t[m].low != "with" && m < k + 4) ++m;
      if (!x.empty() && m < e && m + 1 < e && (t[m].low == "to" || t[m].low == "with")) {
        const std::string y = phrase(t, b, e, m + 1, +1, 3);
        if (!y.empty()) c.detail.instead = y + " instead of " + x;
      }
    }
    if (in(kChangeVerbs, w) && c.detail.change.empty() && ends_with(w, "ed") && i > b &&
        (i + 1 >= e || in(kStop, next) || std::string_view(",;:)").find(t[i].raw.back()) != std::string_view::npos)) {
      // "with GPUDirect RDMA enabled", "the IOMMU disabled": the object before the participle.
      const std::string obj = phrase(t, b, e, i - 1, -1, 3);
      if (!obj.empty() && nounish(obj)) {
        c.detail.change = obj + " " + t[i].core;
        continue;
      }
    }
    if (in(kChangeVerbs, w) && c.detail.change.empty() && i + 1 < e &&
        std::string_view(",;:)").find(t[i].raw.back()) == std::string_view::npos) {
      std::size_t k = i + 1;
      if (w == "booting" || w == "rebooting") {
        while (k < e && (t[k].low == "the" || t[k].low == "kernel" || t[k].low == "with")) ++k;
      }
      const std::string obj = phrase(t, b, e, k, +1, 3);
      if (!obj.empty()) c.detail.change = t[i].core + " " + obj;
    }
    if (auto p = path_class(t[i]); !p.empty()) {
      const bool neg = i > b && (negator(t[i - 1].low) || (i > b + 1 && negator(t[i - 2].low) && t[i - 1].low == "through"));
      if (!neg && std::find(c.paths.begin(), c.paths.end(), p) == c.paths.end()) c.paths.push_back(p);
    }
    if ((w == "across" || w == "different") && i + 1 < e) {
      std::size_t k = i + 1;
      if (t[k].low == "the" && k + 1 < e) ++k;
      if (t[k].low == "cpu" && k + 1 < e) ++k;
      if ((t[k].low == "sockets" || t[k].low == "socket") && std::find(c.paths.begin(), c.paths.end(), "SYS") == c.paths.end())
        c.paths.push_back("SYS");
    }
  }
  // A kernel parameter or a NAME=value is a setting already; the change verb before it adds nothing.
  if (!c.detail.settings.empty() || !c.detail.flags.empty()) c.detail.change.clear();
  return c;
}

// Where a hang happens as the sentence says: "first all-reduce", "init", "after init", a test program, "GPUs at 100%".
std::string hang_detail(const std::vector<Tok>& t) {
  std::vector<std::string> parts;
  std::string best_op;
  auto rank = [](const std::string& op) {
    return op == "collective" || op == "iteration" || op == "step" || op == "batch" || op == "epoch" ? 0 : 1;
  };
  for (const auto& x : t) {
    std::string n;
    if (op_word(x.low, &n) && (best_op.empty() || rank(n) > rank(best_op))) best_op = n;
  }
  bool first = false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].low != "first") continue;
    for (std::size_t k = i + 1; k < t.size() && k <= i + 4; ++k) {
      std::string n;
      if (op_word(t[k].low, &n)) {
        first = true;
        parts.push_back("first " + (rank(best_op) > rank(n) ? best_op : n));
        break;
      }
    }
    if (first) break;
  }
  if (!first && !best_op.empty() && rank(best_op) > 0) parts.push_back(best_op);
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::string& w = t[i].low;
    const bool init = w == "init" || w == "initialization" || w == "initialisation" || w == "ncclcomminitrank" ||
                      w == "init_process_group" || w == "startup" || w == "ncclcomminitall";
    if (!init) continue;
    const std::string prev = i > 0 ? t[i - 1].low : "";
    const std::string next = i + 1 < t.size() ? t[i + 1].low : "";
    if (prev == "after" || next == "completes" || next == "completed" || next == "succeeds" || next == "finishes")
      parts.push_back("after init");
    else if (prev == "at" || prev == "during" || prev == "in")
      parts.push_back("init");
    break;
  }
  for (const auto& x : t)
    if (tests_program(x.core)) {
      parts.push_back(x.core);
      break;
    }
  for (std::size_t i = 0; i < t.size(); ++i)
    if (contains(t[i].core, "100%")) {
      bool gpu = false;
      for (std::size_t k = i + 1; k < t.size() && k <= i + 4; ++k)
        if (t[k].low == "gpu" || t[k].low == "sm" || contains(t[k].low, "util") || t[k].low == "usage" ||
            t[k].low == "volatile")
          gpu = true;
      if (gpu) {
        parts.push_back("GPUs at 100%");
        break;
      }
    }
  std::vector<std::string> uniq;
  for (auto& p : parts)
    if (std::find(uniq.begin(), uniq.end(), p) == uniq.end()) uniq.push_back(p);
  return fmt::format("{}", fmt::join(uniq, "; "));
}

bool brand_word(std::string_view w);

// The figures a slowness statement gives: "4-5x slower", "1.2 GB/s", "30%".
std::string slow_figures(const std::vector<Tok>& t, std::size_t b, std::size_t e) {
  static constexpr std::string_view kUnits[] = {"gb/s", "gbps", "gb/sec", "mb/s", "gbit/s", "gib/s", "tb/s", "s/it",
                                                "it/s", "s/epoch", "samples/s", "samples/sec", "tokens/s", "img/s",
                                                "images/s", "ms", "s", "sec", "seconds", "minutes", "min", "hours",
                                                "%", "x", "times"};
  std::vector<std::string> out;
  for (std::size_t i = b; i < e; ++i) {
    const std::string& c = t[i].core;
    if (c.empty() || !(is_digit(c[0]) || c[0] == '~')) continue;
    if (i > b && brand_word(t[i - 1].low)) continue;  // "RTX 3090s"
    std::size_t k = c[0] == '~' ? 1 : 0;
    while (k < c.size() && (is_digit(c[k]) || c[k] == '.' || c[k] == '-' || c[k] == ',')) ++k;
    const std::size_t d0 = c[0] == '~' ? 1 : 0;
    if (k == d0 || d0 >= c.size() || !is_digit(c[d0])) continue;
    std::string unit = lower(std::string_view(c).substr(k));
    std::string text = c;
    std::size_t used = i;
    if (unit.empty() && i + 1 < e && in(kUnits, t[i + 1].low)) {
      unit = t[i + 1].low;
      text += " " + t[i + 1].core;
      used = i + 1;
    }
    if (unit.empty() || (!in(kUnits, unit) && unit != "×")) continue;
    if ((unit == "x" || unit == "×" || unit == "times") && used + 1 < e &&
        (t[used + 1].low == "slower" || t[used + 1].low == "faster" || t[used + 1].low == "lower" || t[used + 1].low == "higher"))
      text += " " + t[used + 1].core;
    out.push_back(text);
    i = used;
  }
  return fmt::format("{}", fmt::join(out, "; "));
}

// ───────────────────────────── counts: GPUs and nodes ─────────────────────────────

std::optional<int> number_word(std::string_view w) {
  static const std::pair<std::string_view, int> k[] = {
      {"one", 1}, {"single", 1}, {"two", 2}, {"dual", 2}, {"three", 3}, {"four", 4}, {"five", 5}, {"six", 6},
      {"seven", 7}, {"eight", 8}, {"nine", 9}, {"ten", 10}, {"eleven", 11}, {"twelve", 12}, {"sixteen", 16},
      {"thirty-two", 32}, {"sixty-four", 64}};
  for (auto [a, n] : k)
    if (w == a) return n;
  return std::nullopt;
}

// A count as written: "8", "8x", "8×", "two". `x`: it carried an "x".
std::optional<int> count_of(std::string_view w, bool* x = nullptr) {
  std::string_view s = w;
  bool has_x = false;
  if (ends_with(s, "×")) s.remove_suffix(std::string_view("×").size()), has_x = true;
  else if (!s.empty() && (s.back() == 'x' || s.back() == 'X') && s.size() > 1 && all_digits(s.substr(0, s.size() - 1)))
    s.remove_suffix(1), has_x = true;
  if (x) *x = has_x;
  if (all_digits(s) && s.size() <= 4) {
    const int n = std::stoi(std::string(s));
    if (n >= 1 && n <= 4096) return n;
    return std::nullopt;
  }
  if (!has_x) return number_word(w);
  return std::nullopt;
}

constexpr std::string_view kNodeAdjectives[] = {"different", "separate", "physical", "compute", "worker", "gpu",
                                                "dgx", "hgx", "identical", "similar", "bare-metal", "cloud"};

bool node_word(std::string_view w) {
  return w == "node" || w == "nodes" || w == "machine" || w == "machines" || w == "server" || w == "servers" ||
         w == "host" || w == "hosts" || w == "instance" || w == "instances";
}
bool gpu_noun(std::string_view w) {
  return w == "gpu" || w == "gpus" || w == "card" || w == "cards" || w == "devices" || w == "device" || w == "boards";
}

bool brand_word(std::string_view w) {
  return w == "nvidia" || w == "geforce" || w == "tesla" || w == "quadro" || w == "titan" || w == "rtx" || w == "gtx";
}
// A model token: "A100", "H100", "V100", "T4", "L40S", "2080", "5880", "1080", "GB200", "3090s" (plural).
bool model_token(std::string_view w) {
  if (w.size() < 2 || w.size() > 7) return false;
  std::size_t i = 0;
  while (i < w.size() && is_alpha(w[i])) ++i;
  if (i > 2) return false;
  const std::size_t d = i;
  while (i < w.size() && is_digit(w[i])) ++i;
  const std::size_t digits = i - d;
  if (digits == 0 || (d == 0 && digits < 3) || digits > 4) return false;
  const std::string_view rest = w.substr(i);
  return rest.empty() || rest == "s" || rest == "S" || rest == "ti" || rest == "Ti" || rest == "TI";
}
bool qualifier_word(std::string_view l) {
  static constexpr std::string_view k[] = {"ti", "super", "ada", "generation", "sxm", "sxm2", "sxm3", "sxm4", "sxm5",
                                           "pcie", "nvl", "hbm3", "hbm3e", "hbm2", "hbm2e", "max-q", "blackwell",
                                           "hopper", "ampere", "pro", "server", "edition", "workstation"};
  if (in(k, l)) return true;
  // "80GB", "48gb", "A100-SXM4-80GB" pieces
  if (l.size() >= 3 && ends_with(l, "gb") && all_digits(l.substr(0, l.size() - 2))) return true;
  return false;
}

// Whether `name` is a GPU product: the hardware table knows it, or it holds a brand word and a model number, or its
// model number is one the table holds ("8x A100").
bool gpu_name_ok(const std::string& name, bool brand, const std::string& model) {
  if (topo::find_gpu(name)) return true;
  if (brand && !model.empty()) return true;
  if (model.empty()) return false;
  const std::string lm = lower(model);
  for (const auto& g : topo::gpu_table()) {
    const std::string m = lower(g.model);
    std::size_t pos = 0;
    while ((pos = m.find(lm, pos)) != std::string::npos) {
      const bool left = pos == 0 || !std::isalnum(static_cast<unsigned char>(m[pos - 1]));
      const std::size_t end = pos + lm.size();
      const bool right = end == m.size() || !std::isalnum(static_cast<unsigned char>(m[end]));
      if (left && right) return true;
      pos = end;
    }
  }
  return false;
}

// ───────────────────────────── the reader ─────────────────────────────

// What the section a sentence stands in (by its heading) says of the settings it names.
enum class Section { plain, works, tried };

Section section_of(std::string_view heading) {
  const std::string h = lower(heading);
  for (std::string_view w : {"workaround", "work around", "solution", "resolution", "what works", "fix", "solved"})
    if (contains(h, w)) return Section::works;
  for (std::string_view w : {"tried", "attempt", "suggest", "next step", "expected", "recommend", "todo", "ideas"})
    if (contains(h, w)) return Section::tried;
  return Section::plain;
}

struct Reader {
  explicit Reader(const std::string& s) : source(s) {}
  Section section = Section::plain;
  const std::string& source;
  Reading r;
  std::set<std::pair<std::string, std::string>> claims_seen;
  std::set<std::pair<std::string, std::string>> settings_seen;
  std::set<std::string> gpus_seen;
  std::set<std::string> hypervisors_seen;
  std::set<double> nics_stated;
  std::vector<diagnose::Fact> hangs;  // emitted at the end (detail-less ones only when no other)
  MeasureState measure_state;         // what earlier sentences said (readers/prose/measures.h)
  struct Container {
    std::string runtime;
    std::vector<std::string> flags;
    diagnose::Provenance where;
  };
  std::vector<Container> containers;
  struct Nodes {
    int nodes = 0;
    std::optional<int> per_node;
    diagnose::Provenance where;
    std::string basis;
  };
  std::vector<Nodes> nodes;
  bool multi_node = false;
  diagnose::Provenance multi_where;
  // Settings of the previous sentence stated without a verdict: in force unless the next sentence says they fixed it.
  struct Pending {
    std::vector<std::pair<std::string, std::string>> env;
    Detail detail;
    diagnose::Provenance where;
    std::size_t line = 0;
  };
  std::optional<Pending> pending;

  void claim(const std::string& kind, const std::string& detail, const diagnose::Provenance& where) {
    if (kind == "hang") {
      hangs.push_back({Claim{kind, detail}, where});
      return;
    }
    if (!claims_seen.insert({kind, detail}).second) return;
    r.facts.add(Claim{kind, detail}, where);
  }

  void settings_in_force(const std::vector<std::pair<std::string, std::string>>& env, const diagnose::Provenance& where) {
    for (const auto& [n, v] : env) {
      if (v.empty() || !settings_seen.insert({n, v}).second) continue;
      r.facts.add(diagnose::Setting{.name = n, .value = v, .origin = "environment"}, where);
    }
  }

  void flush_pending() {
    if (pending) settings_in_force(pending->env, pending->where);
    pending.reset();
  }

  // What a sentence says of the platform, as stated facts: a hypervisor ("a VM", "SR-IOV VF pass-through", "KVM"),
  // the network's line rate ("4xEDR 100Gbps", "2 * HDR", "a 10G network card"), and a code path that only one rank
  // runs ("validation on just one GPU", "save on rank 0 only") — the shape of a collective the others never issue.
  void platform(const std::string& text, const std::vector<Tok>& t, const std::function<diagnose::Provenance(std::size_t)>& at_tok,
                bool imperative) {
    const std::string low = lower(text);
    // A reproduction step ("2. Run the validation step on just one GPU") still describes the job's code path.
    one_rank_path(text, low, at_tok);
    if (imperative) return;
    static const std::vector<std::pair<std::string_view, std::string_view>> hypervisors = {
        {"virtual machine", "a virtual machine"}, {"sr-iov", "SR-IOV"}, {"pass-through", "device pass-through"},
        {"passthrough", "device pass-through"}, {"kvm", "KVM"}, {"vmware", "VMware"}, {"hyper-v", "Hyper-V"},
        {"xen", "Xen"}, {"qemu", "QEMU"}};
    for (const auto& [word, what] : hypervisors)
      if (contains(low, word) && hypervisors_seen.insert(std::string(what)).second) {
        r.facts.add(diagnose::HypervisorSeen{"the poster says: " + std::string(what)}, at_tok(0));
        break;
      }
    for (std::size_t k = 0; k < t.size(); ++k)
      if (t[k].low == "vm" || t[k].low == "vms" || t[k].low == "guest") {
        if (hypervisors_seen.insert("a VM").second) r.facts.add(diagnose::HypervisorSeen{"the poster says: a VM"}, at_tok(k));
        break;
      }
    // Network line rates: "100Gbps", "100 Gb/s", "10G network", "EDR", "HDR", "NDR" (InfiniBand's per-port rates).
    static const std::regex rate(R"((\d{1,4}(?:\.\d+)?)\s*(?:gbps|gb/s|gbit/s|gbit|g\b)(?=[^a-z]|$))");
    const bool network = contains(low, "network") || contains(low, "nic") || contains(low, "ethernet") ||
                         contains(low, "infiniband") || contains(low, "roce") || contains(low, "gbe") || contains(low, "card") ||
                         contains(low, "interconnect") || contains(low, " ib ");
    std::optional<double> gbit;
    std::string layer;
    for (const auto& [name, g] : std::vector<std::pair<std::string, double>>{{"ndr", 400}, {"hdr", 200}, {"edr", 100}, {"fdr", 56}})
      for (const auto& x : t)
        if (x.low == name || (x.low.size() > name.size() && x.low.ends_with(name) && std::isdigit(static_cast<unsigned char>(x.low[0])))) {
          gbit = g;
          layer = "IB";
        }
    if (!gbit && network && low.size() < 2000) {
      std::smatch m;
      if (std::regex_search(low, m, rate)) {
        const double v = std::stod(m[1].str());
        if (v >= 1 && v <= 1600) gbit = v, layer = contains(low, "ethernet") || contains(low, "gbe") ? "Ethernet" : "";
      }
    }
    if (gbit && nics_stated.insert(*gbit).second) {
      diagnose::NicSeen n;
      n.name = "stated in the report";
      n.line_gbit = gbit;
      if (!layer.empty()) n.link_layer = layer;
      r.facts.add(std::move(n), at_tok(0));
    }
  }

  void one_rank_path(const std::string& text, const std::string& low, const std::function<diagnose::Provenance(std::size_t)>& at_tok) {
    const bool one_rank = contains(low, "only on rank 0") || contains(low, "on rank 0 only") || contains(low, "rank 0 only") ||
                          contains(low, "just one gpu") || contains(low, "only one gpu") || contains(low, "on one gpu") ||
                          contains(low, "only rank 0") || contains(low, "only the main process") || contains(low, "is_main_process") ||
                          contains(low, "local_rank == 0") || contains(low, "rank == 0");
    const bool path = contains(low, "validation") || contains(low, "validate") || contains(low, "evaluat") || contains(low, "eval ") ||
                      contains(low, "checkpoint") || contains(low, "save") || contains(low, "logging") || contains(low, "test set");
    if (one_rank && path) claim("one-rank-path", text.size() > 160 ? text.substr(0, 160) + "…" : text, at_tok(0));
  }

  void sentence(const Sentence& s) {
    const auto t = tokens(s.text);
    if (t.empty()) return;
    // Provenance: the sentence, at the line of the token a fact rests on.
    const std::function<diagnose::Provenance(std::size_t)> at_tok = [&](std::size_t k) {
      return diagnose::at(source, s.line_at(k < t.size() ? t[k].pos : 0), s.text);
    };
    const bool question = ends_with(s.text, "?") || ends_with(s.text, "？");
    // An instruction or suggestion ("Set X and rerun", "Next steps: …", "I'd suggest X"), or a sentence under a heading
    // that lists what was tried or suggested: what it names is no claim and no setting in force.
    bool imperative = (in(kImperatives, t.front().low) && !ends_with(t.front().raw, ":")) || section == Section::tried;
    if (t.front().low == "next" && t.size() > 1 && (t[1].low == "checks" || t[1].low == "steps" || t[1].low == "step"))
      imperative = true;
    for (const auto& x : t)
      if (in(kSuggestWords, x.low)) imperative = true;
    counts(t, at_tok);
    if (!imperative) read_sentence_measures(s.text, at_tok(0), r.facts, &measure_state);
    if (!imperative) container(t, at_tok);
    if (!question) platform(s.text, t, at_tok, imperative);

    const auto cl = clauses(t);
    std::vector<ClauseRead> reads;
    for (auto [b, e] : cl) reads.push_back(read_clause(t, b, e));
    bool any_works_with = false;
    // "no longer hangs", "it does not hang with X": a negated hang says it works; "X gives a better result": so does
    // an improvement that names its change.
    for (auto& c : reads) {
      if (c.hang_negated && !c.hang && !c.works_negated) c.works = true;
      if (c.better && !c.detail.empty() && !c.works_negated) c.works = true;
    }
    for (const auto& c : reads)
      if (c.works && !c.detail.empty()) any_works_with = true;

    bool used_pending = false;
    std::optional<std::string> detail_of_hang;
    std::vector<std::pair<std::string, std::string>> in_force;
    for (std::size_t k = 0; k < reads.size(); ++k) {
      ClauseRead& c = reads[k];
      if (c.consumed) continue;
      const std::string detail = c.detail.text();
      const auto where = at_tok(c.b);
      const bool suggestion = c.suggested || imperative || (c.tried && !(c.works && !question));
      if (c.conditional) {
        note_not_in_force(c, s.line, "stated as a condition");
        continue;
      }
      if (c.hang) {
        // (also in a question: "why does it hang?" presupposes the hang)
        if (!detail_of_hang) detail_of_hang = hang_detail(t);
        claim("hang", *detail_of_hang, where);
      }
      if (suggestion) {
        note_not_in_force(c, s.line, "tried or suggested");
        continue;
      }
      if (c.works && !question) {
        // Slow in this clause, or in a later clause of the sentence that names no change of its own: slow-with.
        bool slow = c.slow;
        for (std::size_t m = k + 1; m < reads.size() && !slow; ++m)
          if (reads[m].slow && reads[m].detail.empty() && !reads[m].works) {
            slow = true;
            reads[m].consumed = true;  // its slowness is this change's
          }
        if (!detail.empty()) {
          claim(slow ? "slow-with" : "works-with", detail, where);
          note_not_in_force(c, s.line, "stated as what makes it work");
        } else if (!c.paths.empty()) {
          for (const auto& p : c.paths) claim("works-on-path", p, where);
          if (c.only) claim("fails-on-path", "others than " + fmt::format("{}", fmt::join(c.paths, ", ")), where);
        } else if (pending && c.anaphora && !pending->detail.empty()) {
          claim(slow ? "slow-with" : "works-with", pending->detail.text(), where);
          r.notes.push_back(fmt::format("line {}: {} read as what made it work (\"{}\" on line {})", s.line,
                                        pending->detail.text(), excerpt(s.text, 60), pending->line));
          pending.reset();
          used_pending = true;
        }
        continue;
      }
      if (c.work_verb_negated && !question) {
        if (!detail.empty()) claim("fails-with", detail, where);
        else
          for (const auto& p : c.paths) claim("fails-on-path", p, where);
        note_not_in_force(c, s.line, "stated as what it fails with");
        continue;
      }
      if (c.works_negated) {
        note_not_in_force(c, s.line, "stated as what did not help");
        continue;
      }
      if (question && !c.hang) {
        note_not_in_force(c, s.line, "named in a question");
        continue;
      }
      if ((c.hang || c.fail) && !question) {
        if (c.still) {
          note_not_in_force(c, s.line, "it still hangs or fails with it");
          continue;
        }
        if (!detail.empty() && (c.only || any_works_with)) {
          claim("fails-with", detail, where);
          note_not_in_force(c, s.line, "stated as what it fails with");
          continue;
        }
        if (detail.empty() || c.detail.env.empty()) {
          if (!c.paths.empty() && detail.empty()) {
            for (const auto& p : c.paths) claim("fails-on-path", p, where);
            if (c.only) claim("works-on-path", "others than " + fmt::format("{}", fmt::join(c.paths, ", ")), where);
          }
        }
        for (const auto& x : c.detail.env) in_force.push_back(x);
        continue;
      }
      if (c.slow && !c.slow_negated && !question) {
        if (!detail.empty() && !c.still) {
          claim("slow-with", detail, where);
          note_not_in_force(c, s.line, "stated as what makes it slow");
        } else {
          claim("slow", slow_figures(t, c.b, c.e), where);
        }
        continue;
      }
      // No verdict: settings the text states are in force (unless the next sentence says they fixed it); under a
      // "Workaround" or "Solution" heading, what a line names is what makes it work.
      if (c.still) continue;
      if (section == Section::works && !detail.empty()) {
        claim("works-with", detail, where);
        note_not_in_force(c, s.line, "listed under a workaround heading");
        continue;
      }
      for (const auto& x : c.detail.env) in_force.push_back(x);
    }
    if (!used_pending) flush_pending();
    if (!in_force.empty()) {
      Pending p;
      p.env = in_force;
      for (const auto& [n, v] : in_force) p.detail.settings.push_back(n + "=" + v);
      p.where = at_tok(0);
      p.line = s.line;
      pending = std::move(p);
    }
  }

  void note_not_in_force(const ClauseRead& c, std::size_t line, const char* why) {
    for (const auto& [n, v] : c.detail.env)
      r.notes.push_back(fmt::format("line {}: {}={} is {}, not a setting in force: read as a claim only", line, n, v, why));
  }

  // Container runtimes and the flags stated with them.
  void container(const std::vector<Tok>& t, const std::function<diagnose::Provenance(std::size_t)>& at_tok) {
    std::string runtime;
    std::size_t at = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const std::string& w = t[i].low;
      std::string rt;
      if (w == "docker" || w == "nvidia-docker" || w == "podman" || w == "dockerfile") rt = "docker";
      else if (w == "kubernetes" || w == "k8s" || w == "kubeflow" || w == "kubectl") rt = "kubernetes";
      else if (w == "pod" && i > 0 && (t[i - 1].low == "a" || t[i - 1].low == "the" || t[i - 1].low == "k8s")) rt = "kubernetes";
      else if (w == "singularity" || w == "apptainer") rt = "singularity";
      else if (w == "enroot" || w == "pyxis") rt = "enroot";
      else if (w == "container" || w == "containers" || w == "containerized" || w == "containerised") rt = "container";
      if (rt.empty()) continue;
      bool denied = false;  // "not in a container", "without docker", "outside the container"
      for (std::size_t k = i; k > 0 && i - k < 3;) {
        --k;
        if (negator(t[k].low) || t[k].low == "outside") denied = true;
      }
      if (denied) continue;
      if (runtime.empty() || runtime == "container") {
        runtime = rt;
        at = i;
      }
    }
    if (runtime.empty()) return;
    const auto where = at_tok(at);
    std::vector<std::string> flags;
    bool verdict = false;
    for (const auto& x : t)
      if (in(kTryWords, x.low) || in(kWorksWords, x.low)) verdict = true;
    if (!verdict)
      for (std::size_t i = 0; i < t.size(); ++i)
        if (auto f = flag_at(t, i, t.size()); !f.empty()) {
          flags.push_back(f);
          if (f.find(' ') != std::string::npos) ++i;
        }
    for (auto& c : containers) {
      if (c.runtime == runtime || c.runtime == "container" || runtime == "container") {
        if (c.runtime == "container" && runtime != "container") {
          c.runtime = runtime;
          c.where = where;
        }
        for (auto& f : flags)
          if (std::find(c.flags.begin(), c.flags.end(), f) == c.flags.end()) c.flags.push_back(f);
        return;
      }
    }
    containers.push_back({runtime, flags, where});
  }

  // Node counts ("two nodes", "2-node", "2 nodes x 8 GPUs", "every node has 8 GPUs") and GPU products named with a
  // count ("2x NVIDIA RTX 5880 Ada Generation", "4 GeForce RTX 2080 GPUs").
  void counts(const std::vector<Tok>& t, const std::function<diagnose::Provenance(std::size_t)>& at_tok) {
    std::optional<int> per_node;
    for (std::size_t i = 0; i < t.size(); ++i) {
      // "every node has 8 gpu", "each node with 4 GPUs"
      if ((t[i].low == "every" || t[i].low == "each" || t[i].low == "per") && i + 1 < t.size() && node_word(t[i + 1].low)) {
        for (std::size_t k = i + 2; k < t.size() && k <= i + 4; ++k)
          if (auto n = count_of(t[k].low); n && k + 1 < t.size() && gpu_noun(t[k + 1].low)) per_node = n;
      }
      // "8 GPUs per node", "8 GPUs each", "8 GPUs/node"
      if (auto n = count_of(t[i].low); n && i + 1 < t.size() && gpu_noun(t[i + 1].low)) {
        const std::string a = i + 2 < t.size() ? t[i + 2].low : "", b = i + 3 < t.size() ? t[i + 3].low : "";
        if (((a == "per" || a == "each" || a == "in") && (node_word(b) || b == "each")) || ends_with(t[i + 1].low, "/node"))
          per_node = n;
      }
    }
    for (std::size_t i = 0; i < t.size(); ++i) {
      const std::string& w = t[i].low;
      const std::string prev = i > 0 ? t[i - 1].low : "";
      // multi-node words
      if (w == "multi-node" || w == "multinode" || w == "inter-node" || w == "internode" || w == "cross-node" ||
          (w == "multiple" && i + 1 < t.size() && (t[i + 1].low == "nodes" || t[i + 1].low == "machines")) ||
          (w == "across" && i + 1 < t.size() && (t[i + 1].low == "nodes" || t[i + 1].low == "machines"))) {
        if (!multi_node) multi_where = at_tok(i);
        multi_node = true;
      }
      // "two node(s)", "2 nodes", "2-node", "a single node"
      std::optional<int> n;
      std::size_t word_at = i + 1;
      if (auto dash = w.find('-'); dash != std::string::npos && node_word(w.substr(dash + 1))) {
        bool x = false;
        n = count_of(w.substr(0, dash), &x);
        if (x) n.reset();
        word_at = i;
      } else if (bool x = false; auto c = x ? std::nullopt : count_of(w, &x)) {
        if (x) continue;  // "an 8x H100 node": GPUs per node
        // "two nodes", "three A100 nodes", "2 DGX H100 nodes", "two separate machines"
        std::size_t k = i + 1;
        while (k < t.size() && k <= i + 2 && !node_word(t[k].low) &&
               (model_token(t[k].core) || brand_word(t[k].low) || qualifier_word(t[k].low) ||
                in(kNodeAdjectives, t[k].low)))
          ++k;
        if (k < t.size() && node_word(t[k].low) && t[k].core != "NODE") {
          n = c;
          word_at = k;
        }
      }
      if (!n) continue;
      if (prev == "numa" || prev == "gpu" || prev == "the" || (prev == "of" && *n == 1)) continue;
      // ("2 nodes of the cluster", "2 NUMA nodes" are no node count; "2 nodes of 8 GPUs" is)
      const bool of_gpus = word_at + 3 < t.size() && t[word_at + 1].low == "of" && count_of(t[word_at + 2].low) &&
                           gpu_noun(t[word_at + 3].low);
      if (word_at + 1 < t.size() && ((t[word_at + 1].low == "of" && !of_gpus) || t[word_at + 1].low == "numa")) continue;
      // Nodes of a network's layers ("3 layers of 1024 nodes", "a hidden layer with 512 nodes") are no machines.
      {
        bool layer = false;
        for (std::size_t k = i >= 4 ? i - 4 : 0; k < i; ++k)
          layer = layer || t[k].low == "layer" || t[k].low == "layers" || t[k].low == "hidden" || t[k].low == "neurons";
        if (layer) continue;
      }
      std::optional<int> pn = per_node;
      // "2 nodes x 8 GPUs", "2 nodes with 8 GPUs each"
      for (std::size_t k = word_at + 1; k < t.size() && k <= word_at + 3; ++k)
        if (auto g = count_of(t[k].low); g && k + 1 < t.size() && gpu_noun(t[k + 1].low) &&
                                          (t[k - 1].low == "x" || t[k - 1].low == "×" || t[k - 1].low == "with" ||
                                           t[k - 1].low == "of" || t[k - 1].low == "each"))
          pn = g;
      nodes.push_back({*n, pn, at_tok(i),
                       fmt::format("report text: {}", excerpt(word_at == i ? t[i].core : t[i].core + " " + t[word_at].core, 60))});
    }
    // GPU products with a count.
    for (std::size_t i = 0; i < t.size(); ++i) {
      bool x = false;
      auto n = count_of(t[i].low, &x);
      if (!n) continue;
      // The thing compared with ("compared to 8×RTX 4090 GPUs", "faster than 2 V100s") is not the job's hardware.
      if (i > 0 && (t[i - 1].low == "than" || t[i - 1].low == "versus" || t[i - 1].low == "vs" || t[i - 1].low == "vs." ||
                    (i > 1 && (t[i - 2].low == "compared" || t[i - 2].low == "similar") && (t[i - 1].low == "to" || t[i - 1].low == "with"))))
        continue;
      std::size_t k = i + 1;
      if (k < t.size() && (t[k].low == "x" || t[k].low == "×")) ++k;
      std::vector<std::string> name;
      bool brand = false;
      std::string model;
      for (; k < t.size() && name.size() < 7; ++k) {
        const Tok& w = t[k];
        if (w.open_paren && !name.empty()) break;
        std::string core = w.core;
        bool take = false;
        if (brand_word(w.low)) {
          brand = take = true;
        } else if (model.empty() && model_token(core)) {
          if (core.size() > 2 && (core.back() == 's' || core.back() == 'S') && is_digit(core[core.size() - 2])) core.pop_back();
          model = core;
          take = true;
        } else if (model.empty() && core.find('-') != std::string::npos && topo::find_gpu(core)) {
          model = core;
          take = true;
        } else if (!name.empty() && qualifier_word(w.low)) {
          take = true;
        } else if (!name.empty() && lower(name.back()) == "titan" && (w.low == "v" || w.low == "xp" || w.low == "x")) {
          take = true;
        } else if (!name.empty() && all_digits(core) && k + 1 < t.size() && t[k + 1].low == "gb") {
          take = true;
        } else if (!name.empty() && w.low == "gb" && all_digits(name.back())) {
          take = true;
        }
        if (!take || core.empty()) break;
        name.push_back(core);
        if (std::string_view(",;:)").find(w.raw.back()) != std::string_view::npos) break;
      }
      if (name.empty()) continue;
      if (k < t.size() && node_word(t[k].low)) continue;  // "three A100 nodes": a node count
      const std::string full = fmt::format("{}", fmt::join(name, " "));
      if (model.empty() ? topo::find_gpu(full) == nullptr : !gpu_name_ok(full, brand, model)) continue;
      if (!gpus_seen.insert(lower(full)).second) continue;
      const auto where = at_tok(i);
      r.facts.add(diagnose::GpuSeen{full, std::nullopt, std::nullopt, std::nullopt, std::nullopt}, where);
      r.notes.push_back(fmt::format("line {}: {} × {} named", where.line, *n, full));
      if (*n >= 2 && *n <= 1024) r.facts.add(diagnose::GpuCount{*n, "stated", std::nullopt}, where);
    }
  }

  void finish() {
    flush_pending();
    // Hangs: one per detail; detail-less ones only when none says where.
    bool detailed = std::any_of(hangs.begin(), hangs.end(), [](const diagnose::Fact& f) {
      return !std::get<Claim>(f.value).detail.empty();
    });
    std::vector<diagnose::Fact> keep;
    for (auto& f : hangs) {
      const auto& c = std::get<Claim>(f.value);
      if (detailed && c.detail.empty()) continue;
      if (!claims_seen.insert({c.kind, c.detail}).second) continue;
      keep.push_back(std::move(f));
    }
    // Put the hang claims first: they are what the text is about.
    diagnose::FactSet all;
    for (auto& f : keep) all.add(std::move(f));
    // The sentence grammar's bare GPU names ("H100") where a fuller name of the same board was read ("8 × H100 80GB
    // HBM3"), and its "several nodes" where a node count was read, say nothing more: left out.
    std::vector<std::string> full_names;
    for (const auto& g : r.facts.of<diagnose::GpuSeen>()) full_names.push_back(lower(g.fact.name));
    bool counted_nodes = false;
    for (const auto& n : nodes) counted_nodes = counted_nodes || n.nodes >= 2;
    std::set<std::string> bare_seen;
    for (const auto& f : r.facts.all()) {
      if (const auto* g = std::get_if<diagnose::GpuSeen>(&f.value)) {
        const std::string l = lower(g->name);
        const bool fuller = std::any_of(full_names.begin(), full_names.end(),
                                        [&](const std::string& o) { return o != l && o.find(l) != std::string::npos; });
        if (fuller || !bare_seen.insert(l).second) continue;
      }
      if (const auto* c = std::get_if<Claim>(&f.value); c && c->kind == "nodes" && c->detail == "multi-node" && (counted_nodes || multi_node))
        continue;
      all.add(f);
    }
    for (const auto& c : containers) {
      std::string d = c.runtime;
      for (const auto& f : c.flags) d += " " + f;
      all.add(Claim{"container", d}, c.where);
    }
    // Nodes: a count of 1 is "one of the nodes" when the text names more.
    int most = 0;
    for (const auto& n : nodes) most = std::max(most, n.nodes);
    std::set<int> said;
    for (const auto& n : nodes) {
      if (most >= 2 && n.nodes == 1) continue;
      if (!said.insert(n.nodes).second) continue;
      all.add(Claim{"nodes", std::to_string(n.nodes)}, n.where);
      diagnose::WorldShape w;
      w.nodes = n.nodes;
      if (n.per_node) {
        w.ranks_per_node = n.per_node;
        w.ranks = n.nodes * *n.per_node;
      }
      w.basis = n.per_node ? fmt::format("{} ({} GPUs per node)", n.basis, *n.per_node) : n.basis;
      all.add(std::move(w), n.where);
    }
    if (multi_node && most < 2) all.add(Claim{"nodes", "multi-node"}, multi_where);
    r.facts = std::move(all);
  }
};

struct Layout {
  std::vector<std::string_view> lines;
  std::vector<Classified> cls;
};

Layout layout(std::string_view text, std::size_t max_lines, Reading* notes_to) {
  Layout l;
  l.lines = split_lines(text);
  if (l.lines.size() > max_lines) {
    l.lines.resize(max_lines);
    if (notes_to) notes_to->notes.push_back(fmt::format("only the first {} lines were read", max_lines));
  }
  l.cls = classify(l.lines);
  return l;
}

/// "4x4090", "8xA100", "2xH100": a count fused to a GPU's name, split ("4x 4090") so that it reads as "4x RTX 4090"
/// does. Only the first MiB (a prose post is far smaller); line breaks are kept, so line numbers do not move.
std::string split_fused_counts(std::string_view text) {
  if (text.size() > (1u << 20)) return std::string(text);
  static const std::regex fused(R"(\b(\d{1,2})([xX])([A-Za-z]{0,4}\d{3,4}[A-Za-z]{0,3})\b)");
  return std::regex_replace(std::string(text), fused, "$1$2 $3");
}

Reading read_layout(const Layout& l, const std::string& source) {
  Reader rd(source);
  std::size_t code = 0, logs = 0, quotes = 0, tables = 0;
  for (const auto& c : l.cls) {
    code += c.kind == LineKind::code;
    logs += c.kind == LineKind::log;
    quotes += c.kind == LineKind::quote;
    tables += c.kind == LineKind::table;
  }
  // A level-1 heading on the text's first line is its title.
  bool first = false;
  for (std::size_t i = 0; i < l.cls.size(); ++i)
    if (l.cls[i].kind != LineKind::blank) {
      first = l.cls[i].kind == LineKind::heading && starts_with(trim_blanks(l.lines[i]), "# ");
      break;
    }
  for (const auto& p : paragraphs(l.cls)) {
    // A heading ("## Workaround", "What I tried:") sets what the sentences under it say of their settings. The text's
    // first line, when a heading, is its title ("# Expected bandwidth results? …"): it names the topic, not a section.
    const std::string_view pt = trim_blanks(p.text);
    const bool label = !pt.empty() && pt.back() == ':' && std::count(pt.begin(), pt.end(), ' ') < 6;
    const bool title = first && p.heading;
    first = false;
    if ((p.heading && !title) || label) rd.section = section_of(pt);
    for (const auto& s : sentences(p)) rd.sentence(s);
  }
  rd.finish();
  // Code blocks: each run of code lines is read as Python (the training code a post pastes); fences are blanked.
  for (std::size_t i = 0; i < l.cls.size();) {
    if (l.cls[i].kind != LineKind::code) {
      ++i;
      continue;
    }
    const std::size_t from = i;
    std::string block;
    for (; i < l.cls.size() && l.cls[i].kind == LineKind::code; ++i) {
      const std::string_view t = trim_blanks(l.lines[i]);
      block += (starts_with(t, "```") || starts_with(t, "~~~")) ? std::string_view() : l.lines[i];
      block += '\n';
    }
    if (block.find("torch") == std::string::npos && block.find("DataLoader") == std::string::npos &&
        block.find(".item()") == std::string::npos && block.find("DataParallel") == std::string::npos)
      continue;
    rd.r.facts.append(read_python_code(block, source, from + 1).facts);
  }
  if (code) rd.r.notes.push_back(fmt::format("{} line(s) of code blocks left to the other readers", code));
  if (logs) rd.r.notes.push_back(fmt::format("{} log-like line(s) left to the other readers", logs));
  if (quotes) rd.r.notes.push_back(fmt::format("{} quoted line(s) ('> ') not read: they may be someone else's words", quotes));
  if (tables) rd.r.notes.push_back(fmt::format("{} table line(s) left to the table reader", tables));
  return std::move(rd.r);
}

// Tokens of a line and how many are words: what tells prose from data.
std::pair<std::size_t, std::size_t> word_share(std::string_view line) {
  std::size_t tokens = 0, words = 0;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    std::size_t j = i;
    while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j]))) ++j;
    if (j > i) {
      std::string_view w = line.substr(i, j - i);
      while (!w.empty() && std::string_view("([{\"'*`<").find(w.front()) != std::string_view::npos) w.remove_prefix(1);
      while (!w.empty() && std::string_view(")]}\"'*`>,.;:!?").find(w.back()) != std::string_view::npos) w.remove_suffix(1);
      ++tokens;
      if (word_like(w)) ++words;
    }
    i = j;
  }
  return {tokens, words};
}

constexpr std::string_view kFunctionWords[] = {"the", "a", "an", "is", "it", "and", "with", "but", "i", "we", "to",
                                               "of", "on", "in", "when", "only", "this", "that", "was", "are", "my",
                                               "our", "not", "be", "have", "has", "can", "does", "did", "which"};

}  // namespace

bool looks_like_report_text(std::string_view text) {
  try {
    if (text.size() > kDetectBytes) text = text.substr(0, kDetectBytes);
    const std::string split = split_fused_counts(text);
    text = split;
    const auto first = text.find_first_not_of(" \t\r\n\xEF\xBB\xBF");
    if (first == std::string_view::npos) return false;
    if (text[first] == '{') return false;  // JSON
    if (text[first] == '[') {
      const auto next = text.find_first_not_of(" \t\r\n", first + 1);
      if (next == std::string_view::npos || text[next] == '{' || text[next] == '"' || text[next] == '[') return false;
    }
    const Layout l = layout(text, kDetectLines, nullptr);
    std::size_t all_tokens = 0, prose_tokens = 0, sentence_lines = 0, prose_lines = 0, nonblank = 0, foreign = 0;
    for (std::size_t i = 0; i < l.cls.size(); ++i) {
      const auto& c = l.cls[i];
      if (c.kind == LineKind::blank || c.kind == LineKind::code) continue;
      ++nonblank;
      const auto [tok, words] = word_share(trim_blanks(l.lines[i]));
      all_tokens += tok;
      if (c.kind == LineKind::log || c.kind == LineKind::table || c.kind == LineKind::quote) {
        ++foreign;
        continue;
      }
      if (c.kind == LineKind::text && env_line(c.text)) {
        ++foreign;
        continue;
      }
      if (tok >= 3 && words * 10 >= tok * 6) {
        prose_tokens += tok;
        ++prose_lines;
        // A sentence: six or more tokens with a function word of English.
        if (tok >= 6) {
          std::size_t fw = 0;
          for (const auto& x : tokens(c.text)) fw += in(kFunctionWords, x.low) ? 1 : 0;
          if (fw >= 1) ++sentence_lines;
        }
      } else if (c.kind == LineKind::heading) {
        prose_tokens += tok;
      }
    }
    if (nonblank == 0 || prose_lines == 0) return false;
    // Mostly pasted output: prose only when it still holds two sentences of its own (a post that quotes a log).
    const bool two_sentences = sentence_lines >= 2 && sentence_lines * 5 >= nonblank;
    if (prose_tokens * 2 < all_tokens && !two_sentences) return false;
    if (foreign * 2 > nonblank && !two_sentences) return false;
    const Reading r = read_layout(l, "");
    // Mentions of a link or a precision alone (a topology matrix's legend: "PIX = Connection traversing … PCIe") do
    // not make a text prose about a job.
    std::size_t telling = 0;
    for (const auto& f : r.facts.all()) {
      const auto* c = std::get_if<Claim>(&f.value);
      telling += !(c && (c->kind == "link" || c->kind == "precision")) && !std::holds_alternative<diagnose::NicSeen>(f.value);
    }
    if (telling == 0) return false;
    // Sentences; or, failing those, a list in words ("Hardware: 4 GeForce RTX 2080 GPUs / docker … image") that names
    // a GPU product or makes a claim.
    return sentence_lines > 0 || (prose_lines >= 2 && (r.facts.count<diagnose::Claim>() > 0 || r.facts.count<diagnose::GpuSeen>() > 0));
  } catch (...) {
    return false;
  }
}

Reading read_report_text(std::string_view text, const std::string& source) {
  Reading notes;
  try {
    const std::string split = split_fused_counts(text);
    const Layout l = layout(split, kMaxLines, &notes);
    Reading r = read_layout(l, source);
    for (auto& n : notes.notes) r.notes.insert(r.notes.begin(), std::move(n));
    return r;
  } catch (const std::exception& e) {
    notes.notes.push_back(std::string("the report reader stopped: ") + e.what());
  } catch (...) {
    notes.notes.push_back("the report reader stopped");
  }
  return notes;
}

}  // namespace scalescope::analyze
