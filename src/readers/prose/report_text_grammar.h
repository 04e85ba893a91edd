// The grammar of the prose reader (internal to readers/prose/report_text*.cpp): the word helpers, the classes of a
// line (code, quote, table, log, env, heading, list, text) and the cutting of text into paragraphs and sentences
// (report_text_lines.cpp), the tokens and clauses of a sentence, the phrase vocabularies and what one clause holds
// (report_text_clauses.cpp). report_text.cpp reads sentences into claims and counts with them.
#pragma once

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

#include "readers/prose/report_text.h"

namespace scalescope::analyze::report_text_detail {


using diagnose::Claim;
using diagnose::Reading;

inline constexpr std::size_t kMaxLines = 200000;       // read at most this many lines
inline constexpr std::size_t kDetectLines = 4000;      // detection looks at the head only
inline constexpr std::size_t kDetectBytes = 256 * 1024;
inline constexpr std::size_t kMaxProseBytes = 256 * 1024;  // a post is far smaller: the rest of a larger text is not read
inline constexpr std::size_t kMaxLineBytes = 8 * 1024;     // a line longer than this is read up to here (no sentence is)

// ───────────────────────────── small helpers ─────────────────────────────

/// The lead byte of a CJK ideograph in UTF-8 (U+4E00–U+9FFF: E4–E9, three bytes in all).
inline bool cjk_lead(char c) {
  const auto b = static_cast<unsigned char>(c);
  return b >= 0xE4 && b <= 0xE9;
}

std::string lower(std::string_view s);
bool starts_with(std::string_view s, std::string_view p);
bool ends_with(std::string_view s, std::string_view p);
bool contains(std::string_view s, std::string_view p);
bool is_alpha(char c);
bool is_digit(char c);
bool is_upper(char c);
bool all_digits(std::string_view s);
bool any_digit(std::string_view s);
bool any_alpha(std::string_view s);
template <class C>
bool in(const C& set, std::string_view w) {
  return std::find(std::begin(set), std::end(set), w) != std::end(set);
}

// A plain word: letters, with inner hyphens or apostrophes ("don't", "spin-wait", "it's").
bool word_like(std::string_view w);

// "NAME=value" (NAME a variable, option or kernel-parameter name): the position of '=' or npos.
std::size_t assignment_eq(std::string_view w);

// An environment variable's name as written in settings people state: upper case with a prefix of a library or
// launcher that reads it (NCCL_, CUDA_, TORCH_ …) or a name launchers read (WORLD_SIZE …).
bool env_like_name(std::string_view n);

// ───────────────────────────── lines ─────────────────────────────

enum class LineKind { blank, code, quote, table, log, heading, item, text };

// The nccl-tests and log headers that start with '#' but are no markdown heading.
bool tests_hash_line(std::string_view t);

// "host-a:1234:5678 [0] …", "[2024-01-02 10:11:12] …", "2024-01-02T10:11:12 …", "10:11:12.123 …", "I0102 10:11:12 …",
// "[rank0]: …", "[W reducer.cpp:1050] …", "Traceback (most recent call last):", "  File "x.py", line 3", "RuntimeError: …",
// NCCL INFO / WARN lines: a line of a program's output, not the poster's words.
bool log_line(std::string_view raw);

// A line of NAME=value settings only ("NCCL_DEBUG=INFO", "export A=1 B=2"): an env dump's line.
bool env_line(std::string_view t);

// A markdown list marker at the start of `t` ("- ", "* ", "+ ", "1. ", "2) "): its length, else 0.
std::size_t list_marker(std::string_view t);

std::size_t indent_of(std::string_view l);

struct Classified {
  LineKind kind = LineKind::blank;
  std::string text;  // for text, items and headings: the line without markers, trimmed
};

// Classes every line (see the file comment).
std::vector<Classified> classify(const std::vector<std::string_view>& lines);

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
std::string strip_inline(std::string_view s);

std::vector<Piece> paragraphs(const std::vector<Classified>& cls);

bool sentence_end(char c);

struct Sentence {
  std::string text;
  std::size_t line = 0;        // of its first character
  const Piece* piece = nullptr;
  std::size_t offset = 0;      // of its first character in the paragraph
  std::size_t line_at(std::size_t pos) const { return piece ? piece->line_of(offset + pos) : line; }
};

// Cuts a paragraph into sentences at '.', '!', '?' (and the full-width '？', '。', '！') followed by a blank, unless
// the word before is an abbreviation ("e.g.", "vs.") or the next word starts in lower case.
std::vector<Sentence> sentences(const Piece& p);

// ───────────────────────────── tokens and clauses ─────────────────────────────

struct Tok {
  std::string raw;   // as printed
  std::string core;  // without surrounding punctuation
  std::string low;   // core in lower case
  bool ends_clause = false;  // raw ends with ';' (a clause ends after it)
  bool open_paren = false;   // raw starts with '('
  std::size_t pos = 0;       // offset in the sentence
};

std::vector<Tok> tokens(std::string_view sentence);

inline constexpr std::string_view kClauseBreaks[] = {"but", "however", "whereas", "although", "though", "yet"};

bool verdict_word(std::string_view w);

// The clauses of a sentence as [begin, end) token ranges: cut at "but", "however", "whereas", "although", "though",
// "yet", at ';' and dashes, and at a comma when the words on both sides each hold a verdict ("with X it hangs, with Y
// it works").
std::vector<std::pair<std::size_t, std::size_t>> clauses(const std::vector<Tok>& t);
std::vector<std::pair<std::size_t, std::size_t>> split_at_commas(const std::vector<Tok>& t, std::size_t b, std::size_t e);

std::vector<std::pair<std::size_t, std::size_t>> clauses(const std::vector<Tok>& t);

// ───────────────────────────── vocabularies ─────────────────────────────

inline constexpr std::string_view kNegators[] = {"not", "no", "never", "without", "none", "nor", "cannot", "neither"};
bool negator(std::string_view w);

inline constexpr std::string_view kHangWords[] = {"hang", "hangs", "hanging", "hung", "stuck", "deadlock", "deadlocks",
                                           "deadlocked", "deadlocking", "freeze", "freezes", "freezing", "froze",
                                           "frozen", "stall", "stalls", "stalled", "stalling", "spin-wait",
                                           "spin-waits", "spin-waiting", "livelock"};
inline constexpr std::string_view kSpinWords[] = {"spin", "spins", "spinning"};
inline constexpr std::string_view kForever[] = {"forever", "indefinitely", "infinite", "endlessly"};
inline constexpr std::string_view kWorksWords[] = {"works", "worked", "working", "resolves", "resolved", "resolve",
                                            "fixes", "fixed", "fix", "solves", "solved", "solve", "solution",
                                            "workaround", "workarounds", "workaround", "helps", "helped", "succeeds",
                                            "succeeded", "passes", "avoids", "avoided", "avoid",
                                            "circumvents", "circumvented"};
inline constexpr std::string_view kWorkAux[] = {"does", "did", "do", "can", "could", "will", "would", "to", "it", "they",
                                         "then", "everything", "all", "both", "now", "that", "this", "which", "and"};
inline constexpr std::string_view kSlowWords[] = {"slow", "slower", "slowly", "slowness", "slowdown", "slowed", "sluggish"};
inline constexpr std::string_view kLowWords[] = {"speed", "speeds", "bandwidth", "throughput", "performance", "busbw",
                                          "scaling", "utilization", "utilisation"};
inline constexpr std::string_view kFailWords[] = {"fails", "failed", "fail", "failing", "failure", "crash", "crashes",
                                           "crashed", "crashing", "segfault", "segfaults", "aborts", "aborted",
                                           "error", "errors", "breaks", "broken"};
// Trials: what was tried is no setting in force; a trial that worked is still a works-with.
inline constexpr std::string_view kTryWords[] = {"tried", "try", "trying", "tries", "attempted", "attempt", "attempting",
                                          "experimented", "testing", "toggled", "toggle", "toggling", "compared",
                                          "comparing", "versus", "vs"};
// Suggestions and instructions: nothing they name is a claim or a setting in force.
inline constexpr std::string_view kSuggestWords[] = {"suggest", "suggested", "suggests", "suggestion", "please", "should",
                                              "recommend", "recommended", "recommends", "advise", "advised"};
// A sentence that starts with one of these is an instruction ("Set NCCL_P2P_DISABLE=1 and rerun").
inline constexpr std::string_view kImperatives[] = {"run", "rerun", "re-run", "set", "use", "try", "check", "compare",
                                             "enable", "disable", "keep", "add", "remove", "unset", "consider", "make",
                                             "do", "don't", "avoid", "increase", "mount", "pass", "install", "upgrade",
                                             "downgrade", "confirm", "grep", "look", "see", "verify", "ask", "load"};
inline constexpr std::string_view kConditionals[] = {"if", "whether", "unless"};
inline constexpr std::string_view kStillWords[] = {"still", "even", "again"};
inline constexpr std::string_view kAnaphora[] = {"this", "that", "it", "which", "now", "then", "these"};
inline constexpr std::string_view kStop[] = {
    "the", "a", "an", "and", "or", "but", "with", "without", "to", "of", "in", "on", "at", "for", "from", "by", "it",
    "is", "was", "are", "were", "be", "been", "this", "that", "these", "those", "then", "than", "as", "so", "if",
    "when", "while", "i", "we", "you", "they", "he", "she", "my", "our", "your", "their", "its", "did", "does", "do",
    "has", "have", "had", "will", "would", "can", "could", "should", "not", "no", "also", "only", "just", "all",
    "both", "after", "before", "which", "what", "where", "how", "why", "there", "here", "fine", "well", "works",
    "work", "worked", "fixes", "fixed", "resolves", "resolved", "solves", "solved", "helps", "helped", "hangs",
    "hang", "hanging", "slow", "slower", "now", "again", "still", "even", "into", "through", "via", "using", "use",
    "used"};

bool verdict_word(std::string_view w);

bool op_word(std::string_view w, std::string* norm);

// nccl-tests programs: all_reduce_perf, sendrecv_perf …
bool tests_program(std::string_view w);

// A path class as nvidia-smi names it, or NVLink: the detail, or "".
std::string path_class(const Tok& t);

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
bool negated(const std::vector<Tok>& t, std::size_t b, std::size_t i);

// A flag as written ("--ipc=host", "--shm-size=8g", "--gpus all"), or "".
std::string flag_at(const std::vector<Tok>& t, std::size_t i, std::size_t e);

// Up to `n` tokens from `from` (forward, or backward when `dir` < 0) that are no stop words, as printed.
std::string phrase(const std::vector<Tok>& t, std::size_t b, std::size_t e, std::size_t from, int dir, std::size_t n);

// A short phrase that names a thing ("DDP", "DataParallel", "nn.DataParallel"), not an action ("idling 30 min",
// "exit cleanly").
bool nounish(const std::string& p);

inline constexpr std::string_view kChangeVerbs[] = {
    "disable", "disabling", "disabled", "enable", "enabling", "enabled", "unset", "unsetting", "remove", "removing",
    "removed", "upgrade", "upgrading", "upgraded", "downgrade", "downgrading", "downgraded", "increase", "increasing",
    "increased", "reduce", "reducing", "reduced", "mount", "mounting", "mounted", "load", "loading", "loaded",
    "reinstall", "reinstalling", "reinstalled", "passing", "adding", "added", "rebooting", "booting"};

ClauseRead read_clause(const std::vector<Tok>& t, std::size_t b, std::size_t e);

// Where a hang happens as the sentence says: "first all-reduce", "init", "after init", a test program, "GPUs at 100%".
std::string hang_detail(const std::vector<Tok>& t);

bool brand_word(std::string_view w);

// The figures a slowness statement gives: "4-5x slower", "1.2 GB/s", "30%".
std::string slow_figures(const std::vector<Tok>& t, std::size_t b, std::size_t e);

// ───────────────────────────── counts: GPUs and nodes ─────────────────────────────

std::optional<int> number_word(std::string_view w);

// A count as written: "8", "8x", "8×", "two". `x`: it carried an "x".
std::optional<int> count_of(std::string_view w, bool* x = nullptr);

inline constexpr std::string_view kNodeAdjectives[] = {"different", "separate", "physical", "compute", "worker", "gpu",
                                                "dgx", "hgx", "identical", "similar", "bare-metal", "cloud"};

bool node_word(std::string_view w);
bool gpu_noun(std::string_view w);

bool brand_word(std::string_view w);
// A model token: "A100", "H100", "V100", "T4", "L40S", "2080", "5880", "1080", "GB200", "3090s" (plural).
bool model_token(std::string_view w);
bool qualifier_word(std::string_view l);

// Whether `name` is a GPU product: the hardware table knows it, or it holds a brand word and a model number, or its
// model number is one the table holds ("8x A100").
bool gpu_name_ok(const std::string& name, bool brand, const std::string& model);


}  // namespace scalescope::analyze::report_text_detail
