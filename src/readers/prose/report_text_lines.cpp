// The prose reader's lines, paragraphs and sentences: word helpers, the class of each line (code, quotes, tables,
// logs, env dumps, headings, list items, text), paragraphs of the text lines and the sentences of a paragraph.
#include "readers/prose/report_text_grammar.h"

namespace scalescope::analyze::report_text_detail {

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
// A plain word: letters, with inner hyphens or apostrophes ("don't", "spin-wait", "it's"); or a run of CJK text
// (its lead byte E4–E9: U+4E00–U+9FFF), which sets no blanks between its words.
bool word_like(std::string_view w) {
  if (w.empty() || !(is_alpha(w.front()) || cjk_lead(w.front()))) return false;
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

}  // namespace scalescope::analyze::report_text_detail
