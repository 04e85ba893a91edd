// The prose reader's clauses: tokens of a sentence, clauses (cut at "but", "however", ";", dashes …), the phrase
// vocabularies (verdicts, negations, operations, path classes) and what one clause holds (ClauseRead), hang and slow
// details, counts of GPUs and nodes.
#include "readers/prose/report_text_grammar.h"

namespace scalescope::analyze::report_text_detail {

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
bool negator(std::string_view w) { return in(kNegators, w) || ends_with(w, "n't") || ends_with(w, "n’t"); }
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
    const std::string after_next = i + 2 < e ? t[i + 2].low : "";
    if (w == "never" && (next == "returns" || next == "finishes" || next == "completes" || next == "ends" || next == "returned"))
      hang = true;
    // "never starts the test", "never begins training": a run that does not start — not "the loss never starts
    // decreasing", "never begins before backward finishes", "never proceeds beyond 60%".
    if (w == "never" && (next == "starts" || next == "begins" || next == "proceeds" || next == "continues") &&
        (i + 2 >= e || after_next == "the" || after_next == "training" || after_next == "any" || after_next == "its" ||
         after_next == "running" || after_next == "at" || after_next == "after"))
      hang = true;
    // "the process blocks", "the test is blocked after init": a run that stops — not "thread blocks", "is blocked
    // waiting for rank 1" (a wait with its cause named), "blocked by the firewall", "blocked on loss.item()", "blocks of
    // 256 threads".
    if ((w == "blocks" || w == "blocked") &&
        (prev == "process" || prev == "program" || prev == "job" || prev == "test" || prev == "training" || prev == "script" ||
         prev == "run" || prev == "it" || prev == "is" || prev == "gets" || prev == "got" || prev == "stays" ||
         prev == "remains" || prev == "was" || prev == "becomes") &&
        (i + 1 >= e || next == "after" || next == "at" || next == "forever" || next == "indefinitely" || next == "during" ||
         next == "there" || next == "and" || next == "until"))
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
std::optional<int> count_of(std::string_view w, bool* x) {
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

}  // namespace scalescope::analyze::report_text_detail
