#include "readers/job/watchdog.h"
#include "core/parse_count.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <fmt/format.h>

namespace scalescope::analyze {
namespace {

bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

std::optional<int> small_int(std::optional<std::uint64_t> v) {
  if (!v || *v > 100000000) return std::nullopt;
  return static_cast<int>(*v);
}

// The number after `key` in `s` ("last enqueued NCCL work: 7755," → 7755).
std::optional<std::uint64_t> number_after(std::string_view s, std::string_view key) {
  auto p = s.find(key);
  if (p == std::string_view::npos) return std::nullopt;
  auto rest = s.substr(p + key.size());
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  auto v = leading_decimal(rest);
  // A number cut off by the end of a truncated line is not a number: "work: 77" could have been 7753.
  if (!v || v->second == rest.size()) return std::nullopt;
  return v->first;
}

// "[rank3]:" anywhere in the line (TORCH_CPP_LOG's prefix; glued prefixes of several lines: the first).
std::optional<int> global_rank_prefix(std::string_view s, std::size_t before) {
  std::size_t p = 0;
  while ((p = s.find("[rank", p)) != std::string_view::npos && p < before) {
    auto v = leading_decimal(s.substr(p + 5));
    if (v && p + 5 + v->second + 1 < s.size() && s[p + 5 + v->second] == ']' && s[p + 6 + v->second] == ':')
      return small_int(v->first);
    p += 5;
  }
  return std::nullopt;
}

struct RankLabel {
  std::optional<int> group_rank;
  std::optional<std::string> process_group;
};

// The last "[Rank N]" and the last "[PG … Rank N]" before `before`.
RankLabel rank_label(std::string_view s, std::size_t before) {
  RankLabel r;
  std::string_view head = s.substr(0, before);
  for (std::size_t p = head.find('['); p != std::string_view::npos; p = head.find('[', p + 1)) {
    const std::size_t close = head.find(']', p);
    if (close == std::string_view::npos) break;
    std::string_view inner = head.substr(p + 1, close - p - 1);
    const std::size_t rk = inner.rfind("Rank ");
    if (rk == std::string_view::npos) continue;
    auto n = parse_decimal(inner.substr(rk + 5));
    if (!n) continue;
    if (rk == 0) {
      r.group_rank = small_int(n);
    } else if (inner.substr(0, 3) == "PG " && rk > 3) {
      r.group_rank = small_int(n);
      r.process_group = to_valid_utf8(trim_blanks(inner.substr(3, rk - 3)));
    }
  }
  return r;
}

// glog's header "[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607]" → "E1206 18:44:12.715298746".
std::optional<std::string> glog_timestamp(std::string_view s) {
  auto p = s.find("ProcessGroupNCCL.cpp:");
  if (p == std::string_view::npos) return std::nullopt;
  auto open = s.rfind('[', p);
  if (open == std::string_view::npos || open + 2 > p) return std::nullopt;
  std::string_view ts = trim_blanks(s.substr(open + 1, p - open - 1));
  if (ts.size() < 3 || !contains(ts, ":") || !std::isalpha(static_cast<unsigned char>(ts.front()))) return std::nullopt;
  return to_valid_utf8(ts);
}

struct WorkFields {
  std::vector<std::pair<std::string, std::string>> pairs;
  bool closed = false;
  std::size_t end = 0;  // after the closing parenthesis
};

// "SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1)" → pairs; the last pair of an unclosed
// list is dropped (the line was cut inside it).
WorkFields work_fields(std::string_view s, std::size_t from) {
  WorkFields w;
  int depth = 0;
  std::size_t start = from;
  auto push = [&](std::size_t end) {
    std::string_view item = trim_blanks(s.substr(start, end - start));
    auto eq = item.rfind('=');
    // "Timeout(ms)=1": the key is everything before the last '=' that is outside brackets; keys have no '='.
    eq = item.find('=');
    if (eq != std::string_view::npos && eq > 0) w.pairs.emplace_back(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
  };
  for (std::size_t i = from; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(' || c == '[') ++depth;
    else if ((c == ')' || c == ']') && depth > 0) --depth;
    else if (c == ')' && depth == 0) {
      push(i);
      w.closed = true;
      w.end = i + 1;
      return w;
    } else if (c == ',' && depth == 0) {
      push(i);
      start = i + 1;
    }
  }
  w.end = s.size();
  return w;  // unclosed: the item after the last comma is cut and not pushed
}

bool compatible(const std::optional<int>& a, const std::optional<int>& b) { return !a || !b || *a == *b; }
bool compatible(const std::optional<std::string>& a, const std::optional<std::string>& b) { return !a || !b || *a == *b; }

class Parser {
 public:
  Parser(std::string_view text, std::string source) {
    log_.source = std::move(source);
    lines_ = split_lines(text);
    log_.lines = lines_.size();
  }

  WatchdogLog run() {
    for (std::size_t i = 0; i < lines_.size(); ++i) read_line(i + 1, lines_[i]);
    attach_states();
    return std::move(log_);
  }

 private:
  WatchdogLog log_;
  std::vector<std::string_view> lines_;

  void keep(std::size_t n) {
    if (log_.evidence_lines.size() < 20000) log_.evidence_lines.emplace(n, excerpt(lines_[n - 1], 300));
  }
  void note(std::string s) {
    if (log_.notes.size() < 200) log_.notes.push_back(std::move(s));
  }

  void read_line(std::size_t n, std::string_view line) {
    bool used = false;
    std::size_t from = 0;
    while (true) {
      const std::size_t w = line.find("WorkNCCL(", from);
      if (w == std::string_view::npos) break;
      from = w + 9;
      used |= read_timeout(n, line, w);
    }
    if (contains(line, "last enqueued NCCL work") || contains(line, "last completed NCCL work") ||
        contains(line, "Timeout at NCCL work") || contains(line, "detected by watchdog at work")) {
      read_state(n, line);
      used = true;
    }
    if (!used) {
      std::string_view t = trim_blanks(line);
      if (t.substr(0, 7) == "frame #" || t.substr(0, 21) == "Exception raised from") return;
      if (contains(line, "ProcessGroupNCCL.cpp:") || contains(line, "watchdog thread terminated") ||
          contains(line, "Some NCCL operations have failed")) {
        if (log_.other_errors.size() < 1000) log_.other_errors.emplace_back(n, excerpt(line, 300));
        keep(n);
      }
    }
  }

  bool read_timeout(std::size_t n, std::string_view line, std::size_t at) {
    const auto fields = work_fields(line, at + 9);
    std::string_view tail = line.substr(fields.end);
    // A message wrapped over lines (as people re-flow it when pasting): "[Rank 0] Watchdog caught collective
    // operation timeout:" above the WorkNCCL(…) line, "ran for N milliseconds before timing out." below it.
    const std::string_view before = n >= 2 ? lines_[n - 2] : std::string_view();
    const std::string_view after = n < lines_.size() ? trim_blanks(lines_[n]) : std::string_view();
    const bool header_above = at == line.find_first_not_of(" \t") && contains(before, "Watchdog caught collective operation timeout");
    if (!contains(tail, "ran for ") && after.substr(0, 8) == "ran for ") tail = after;
    const bool timeout_words = contains(line, "timeout") || contains(line, "timed out") || contains(line, "Timeout") || header_above;
    if (!timeout_words) return false;
    WatchdogTimeout t;
    for (const auto& [k, v] : fields.pairs) {
      if (k == "SeqNum") t.seq_num = parse_decimal(v);
      else if (k == "OpType" && !v.empty()) t.op_type = to_valid_utf8(v);
      else if (k == "NumelIn") t.numel_in = parse_decimal(v);
      else if (k == "NumelOut") t.numel_out = parse_decimal(v);
      else if (k == "Timeout(ms)") {
        t.timeout_ms = parse_decimal(v);
        if (!t.timeout_ms) note(fmt::format("line {}: Timeout(ms)={} is no count of milliseconds; not used", n, to_valid_utf8(v)));
      }
      else if (k == "TensorShape") t.tensor_shape = to_valid_utf8(v);
    }
    if (!fields.closed) note(fmt::format("line {}: cut off inside WorkNCCL(…); the fields after the last complete one are absent", n));
    if (auto p = tail.find("ran for "); p != std::string_view::npos) {
      auto rest = tail.substr(p + 8);
      if (auto v = leading_decimal(rest); v && rest.substr(v->second, 12) == " millisecond") {
        // No collective runs for a year: a larger figure is a damaged line, and "noticed 292 million years late"
        // would be built on it.
        constexpr std::uint64_t kYearMs = 365ull * 24 * 3600 * 1000;
        if (v->first <= kYearMs) t.elapsed_ms = v->first;
        else note(fmt::format("line {}: ran for {} milliseconds is more than a year: a damaged line; not used", n, v->first));
      }
    }
    if (!t.op_type && !t.seq_num && !t.timeout_ms) return false;
    t.global_rank = global_rank_prefix(line, at);
    auto label = rank_label(line, at);
    if (header_above && !t.global_rank && !label.group_rank) {
      const std::size_t h = before.find("Watchdog caught");
      t.global_rank = global_rank_prefix(before, h);
      label = rank_label(before, h);
      note(fmt::format("line {}: the message continues from line {} (wrapped); its rank label is read there", n, n - 1));
    }
    t.group_rank = label.group_rank;
    t.process_group = label.process_group;
    t.timestamp = glog_timestamp(line.substr(0, at));
    t.line = n;
    add(std::move(t));
    keep(n);
    return true;
  }

  void add(WatchdogTimeout t) {
    for (auto& o : log_.timeouts) {
      if (o.op_type == t.op_type && o.seq_num == t.seq_num && o.numel_in == t.numel_in && o.numel_out == t.numel_out &&
          o.timeout_ms == t.timeout_ms && o.elapsed_ms == t.elapsed_ms && o.tensor_shape == t.tensor_shape &&
          compatible(o.group_rank, t.group_rank) && compatible(o.global_rank, t.global_rank) &&
          compatible(o.process_group, t.process_group) && (o.group_rank || o.global_rank || (!t.group_rank && !t.global_rank))) {
        ++o.repeats;
        if (!o.global_rank) o.global_rank = t.global_rank;
        if (!o.group_rank) o.group_rank = t.group_rank;
        if (!o.process_group) o.process_group = t.process_group;
        if (!o.timestamp) o.timestamp = t.timestamp;
        return;
      }
    }
    if (log_.timeouts.size() < 100000) log_.timeouts.push_back(std::move(t));
  }

  void read_state(std::size_t n, std::string_view line) {
    WatchdogWorkState s;
    s.at_work = number_after(line, "at work:");
    if (!s.at_work) s.at_work = number_after(line, "Timeout at NCCL work:");
    s.last_enqueued = number_after(line, "last enqueued NCCL work:");
    s.last_completed = number_after(line, "last completed NCCL work:");
    s.last_started = number_after(line, "last started NCCL work:");
    const std::size_t at = line.find(" work");
    s.global_rank = global_rank_prefix(line, at);
    auto label = rank_label(line, at);
    s.group_rank = label.group_rank;
    s.process_group = label.process_group;
    s.line = n;
    if (!s.at_work && !s.last_enqueued && !s.last_completed) return;
    keep(n);
    if (log_.work_states.size() < 100000) log_.work_states.push_back(std::move(s));
  }

  // A state line belongs to the timeout of the same rank whose SeqNum it names.
  void attach_states() {
    std::vector<WatchdogWorkState> rest;
    for (auto& s : log_.work_states) {
      WatchdogTimeout* match = nullptr;
      int candidates = 0;
      for (auto& t : log_.timeouts) {
        if (!s.at_work || t.seq_num != s.at_work) continue;
        if (!compatible(t.global_rank, s.global_rank) || !compatible(t.group_rank, s.group_rank) ||
            !compatible(t.process_group, s.process_group))
          continue;
        const bool same_rank = (t.global_rank && t.global_rank == s.global_rank) || (t.group_rank && t.group_rank == s.group_rank);
        if (!same_rank) continue;
        if (!match) match = &t;
        ++candidates;
      }
      if (match && candidates == 1) {
        if (!match->process_group) match->process_group = s.process_group;
        if (!match->global_rank) match->global_rank = s.global_rank;
        if (!match->group_rank) match->group_rank = s.group_rank;
        match->last_enqueued = s.last_enqueued;
        match->last_completed = s.last_completed;
        match->last_started = s.last_started;
      } else {
        rest.push_back(std::move(s));
      }
    }
    log_.work_states = std::move(rest);
  }
};

std::string seconds_text(std::uint64_t ms) {
  if (ms < 1000) return fmt::format("{} ms", ms);
  const double s = static_cast<double>(ms) / 1000.0;
  if (s < 600) return fmt::format("{:.0f} s", s);
  if (s < 7200) return fmt::format("{:.0f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

std::string op_text(const WatchdogTimeout& t) {
  std::string s = t.op_type.value_or("an unnamed collective");
  if (t.seq_num) s += fmt::format(" #{}", *t.seq_num);
  return s;
}

}  // namespace

bool has_watchdog_messages(std::string_view text) {
  return contains(text, "WorkNCCL(") || contains(text, "Watchdog caught collective operation timeout") ||
         contains(text, "last enqueued NCCL work") || contains(text, "ProcessGroupNCCL.cpp:") ||
         contains(text, "watchdog thread terminated");
}

WatchdogLog parse_watchdog(std::string_view text, std::string source) {
  core::count_parse("watchdog", text);
  WatchdogLog log = Parser(text, std::move(source)).run();
  // Only the stack of the watchdog's timeout check survived (the paste starts below the WorkNCCL line): the check
  // raised, so a collective timed out; which one is not in the text.
  if (log.timeouts.empty() && log.other_errors.empty()) {
    std::size_t n = 0;
    for (auto l : split_lines(text)) {
      ++n;
      if (contains(l, "WorkNCCL::checkTimeout") || contains(l, "Watchdog caught collective operation timeout")) {
        log.other_errors.emplace_back(n, std::string(trim_blanks(l)).substr(0, 300));
        log.evidence_lines[n] = excerpt(l);
        break;
      }
    }
  }
  return log;
}

WatchdogLog read_watchdog_file(const std::string& path) {
  return parse_watchdog(read_text_file(path, "watchdog log", 256ull << 20), path);
}

WatchdogAnalysis analyze_watchdog(std::span<const WatchdogLog> logs, const WatchdogOptions& options) {
  WatchdogAnalysis a;
  std::vector<LogFinding> f;
  auto evidence = [&](std::size_t li, std::size_t line) {
    auto it = logs[li].evidence_lines.find(line);
    return Evidence{logs[li].source, line, it != logs[li].evidence_lines.end() ? it->second : std::string()};
  };
  struct Entry {
    std::size_t log;
    const WatchdogTimeout* t;
  };
  std::vector<Entry> all;
  std::set<std::string> named_groups;
  // Work-state lines of ranks whose timeout message is not in the text ("[PG 1 Rank 3] Exception … at work:
  // 1580, last enqueued …") still say where that rank was: they join the comparison without an OpType.
  std::vector<std::vector<WatchdogTimeout>> from_states(logs.size());
  for (std::size_t li = 0; li < logs.size(); ++li)
    for (const auto& s : logs[li].work_states)
      if (s.at_work && (s.global_rank || s.group_rank)) {
        WatchdogTimeout t;
        t.global_rank = s.global_rank;
        t.group_rank = s.group_rank;
        t.process_group = s.process_group;
        t.seq_num = s.at_work;
        t.last_enqueued = s.last_enqueued;
        t.last_completed = s.last_completed;
        t.last_started = s.last_started;
        t.line = s.line;
        from_states[li].push_back(std::move(t));
      }
  for (std::size_t li = 0; li < logs.size(); ++li) {
    for (const auto& t : logs[li].timeouts) all.push_back({li, &t});
    for (const auto& t : from_states[li]) all.push_back({li, &t});
  }
  for (const auto& e : all)
    if (e.t->process_group) named_groups.insert(*e.t->process_group);
  // Messages that do not name their process group are compared with the named ones only when the logs name
  // exactly one group; the note says so.
  std::map<std::string, std::vector<Entry>> groups;
  bool assumed = false;
  for (const auto& e : all) {
    std::string g;
    if (e.t->process_group) g = *e.t->process_group;
    else if (named_groups.size() == 1) g = *named_groups.begin(), assumed = true;
    else g = "";
    groups[g].push_back(e);
  }
  auto label = [](const WatchdogTimeout& t, bool global) {
    if (global && t.global_rank) return fmt::format("rank {}", *t.global_rank);
    if (t.group_rank) return fmt::format("Rank {}", *t.group_rank);
    if (t.global_rank) return fmt::format("rank {}", *t.global_rank);
    return std::string("an unnamed rank");
  };

  for (auto& [group, entries] : groups) {
    const bool global = std::all_of(entries.begin(), entries.end(), [](const Entry& e) { return e.t->global_rank.has_value(); });
    std::sort(entries.begin(), entries.end(), [&](const Entry& x, const Entry& y) {
      auto kx = global ? x.t->global_rank : x.t->group_rank, ky = global ? y.t->global_rank : y.t->group_rank;
      return std::tie(kx, x.t->seq_num, x.log, x.t->line) < std::tie(ky, y.t->seq_num, y.log, y.t->line);
    });
    const std::string where = group.empty() ? "" : " in process group " + group;
    for (const auto& e : entries)
      a.ranks.push_back({label(*e.t, global) + (group.empty() ? "" : " (PG " + group + ")"), *e.t, logs[e.log].source});

    // A rank label seen at several SeqNums: several groups or processes share it.
    std::map<std::string, std::set<std::uint64_t>> seqs_by_rank;
    for (const auto& e : entries)
      if (e.t->seq_num && (e.t->global_rank || e.t->group_rank)) seqs_by_rank[label(*e.t, global)].insert(*e.t->seq_num);
    std::vector<std::string> ambiguous;
    for (const auto& [r, s] : seqs_by_rank)
      if (s.size() > 1) {
        std::string list;
        for (auto x : s) list += (list.empty() ? "" : ", ") + std::to_string(x);
        ambiguous.push_back(fmt::format("{} at SeqNum {}", r, list));
      }
    std::vector<Evidence> ev_all;
    for (std::size_t i = 0; i < entries.size() && i < 6; ++i) ev_all.push_back(evidence(entries[i].log, entries[i].t->line));

    if (!ambiguous.empty()) {
      std::string list;
      for (const auto& x : ambiguous) list += (list.empty() ? "" : "; ") + x;
      f.push_back({Severity::info, "the same rank label timed out at several SeqNums" + where + ": " + list,
                   "A process group numbers its collectives itself, and one rank cannot be stuck in two of them: these "
                   "messages come from several process groups (each has its own Rank 0) or several processes, which "
                   "the messages do not name. SeqNums are therefore not compared between them, and no straggler is "
                   "named.",
                   "log with TORCH_CPP_LOG_LEVEL=INFO and a recent PyTorch, whose messages name the process group "
                   "([PG n Rank r]) and the global rank ([rankN]:)",
                   ev_all});
      if (a.verdict.empty())
        a.verdict = fmt::format("{} timeout message(s){} from several process groups that the messages do not tell apart; "
                                "no cross-rank comparison possible",
                                entries.size(), where);
      continue;
    }

    // Same SeqNum, different collectives: a mismatch.
    std::map<std::uint64_t, std::vector<const Entry*>> by_seq;
    for (const auto& e : entries)
      if (e.t->seq_num) by_seq[*e.t->seq_num].push_back(&e);
    for (const auto& [seq, es] : by_seq) {
      // Only what both sides print is compared: a message cut before its OpType is no mismatch.
      std::set<std::string> ops;
      std::set<std::uint64_t> numels;
      for (auto* e : es) {
        if (e->t->op_type) ops.insert(*e->t->op_type);
        if (e->t->numel_in) numels.insert(*e->t->numel_in);
      }
      const bool op_differs = ops.size() > 1;
      if (!op_differs && numels.size() < 2) continue;
      std::map<std::string, std::vector<const Entry*>> by_op;
      for (auto* e : es) {
        if (op_differs ? !e->t->op_type : !e->t->numel_in) continue;
        std::string key = e->t->op_type.value_or("?");
        if (e->t->numel_in) key += fmt::format(" (NumelIn {})", *e->t->numel_in);
        by_op[key].push_back(e);
      }
      if (by_op.size() < 2) continue;
      std::string parts;
      std::vector<Evidence> ev;
      for (const auto& [op, list] : by_op) {
        std::string who;
        for (std::size_t i = 0; i < list.size(); ++i) {
          if (i == 6) { who += ", …"; break; }
          who += (who.empty() ? "" : ", ") + label(*list[i]->t, global);
        }
        parts += (parts.empty() ? "" : "; ") + who + " in " + op;
        if (ev.size() < 6) ev.push_back(evidence(list.front()->log, list.front()->t->line));
      }
      const auto* first = by_op.begin()->second.front()->t;
      const auto* second = std::next(by_op.begin())->second.front()->t;
      std::string title = fmt::format("collective mismatch at SeqNum {}{}: {}", seq, where, parts);
      a.op_mismatch = true;
      f.push_back({Severity::error, title,
                   op_differs
                       ? "The ranks of one process group called different collectives as their collective number " +
                             std::to_string(seq) +
                             ": each waits for the others to join a collective they never call, until the watchdog "
                             "fires. The code path differs between ranks (a condition on the rank or on data, an "
                             "uneven number of batches, a collective skipped or added on some ranks, e.g. an "
                             "evaluation or checkpoint step only rank 0 runs)."
                       : "The ranks called the same collective with different element counts at the same SeqNum: "
                         "tensors of different sizes (uneven last batch, a different model or bucket layout per rank).",
                   "find where the ranks' code paths diverge at this step (TORCH_DISTRIBUTED_DEBUG=DETAIL checks "
                   "collectives across ranks and names the mismatch; the flight recorder, TORCH_NCCL_TRACE_BUFFER_SIZE, "
                   "records the last collectives of each rank)",
                   ev});
      if (a.verdict.empty())
        a.verdict = fmt::format("{} timed out in {}{} while {} was in {}: collective mismatch", label(*first, global),
                                op_text(*first) + (first->elapsed_ms ? " after " + seconds_text(*first->elapsed_ms) : ""),
                                where, label(*second, global), op_text(*second));
    }

    // Different SeqNums: the ranks at the lowest are behind.
    if (by_seq.size() > 1) {
      const auto& low = by_seq.begin()->second;
      const auto& high = by_seq.rbegin()->second;
      std::string behind, ahead;
      for (std::size_t i = 0; i < low.size() && i < 8; ++i) behind += (behind.empty() ? "" : ", ") + label(*low[i]->t, global);
      for (std::size_t i = 0; i < high.size() && i < 8; ++i) ahead += (ahead.empty() ? "" : ", ") + label(*high[i]->t, global);
      std::vector<Evidence> ev{evidence(low.front()->log, low.front()->t->line), evidence(high.front()->log, high.front()->t->line)};
      a.seq_mismatch = true;
      for (auto* e : low) a.behind.push_back(label(*e->t, global));
      std::string states;
      for (auto* e : low)
        if (e->t->last_enqueued || e->t->last_completed)
          states += fmt::format(" {}: last enqueued {}, last completed {}.", label(*e->t, global),
                                e->t->last_enqueued ? std::to_string(*e->t->last_enqueued) : "not printed",
                                e->t->last_completed ? std::to_string(*e->t->last_completed) : "not printed");
      f.push_back({Severity::error,
                   fmt::format("ranks stuck at different SeqNums{}: {} at {} (lowest) while {} at {} (highest)", where,
                               behind, op_text(*low.front()->t), ahead, op_text(*high.front()->t)),
                   "A collective completes on all ranks of a group or on none, so ranks that reached a later SeqNum "
                   "finished the earlier ones: the ranks at the lowest SeqNum are behind — they have not launched the "
                   "later collectives (a slow or hung step, data loading, a host-side deadlock, or a code path that "
                   "issues fewer collectives)." + states,
                   "look at what the ranks behind were doing when the timeout fired (py-spy dump, their stack traces, "
                   "the flight recorder with TORCH_NCCL_TRACE_BUFFER_SIZE)",
                   ev});
      if (a.verdict.empty())
        a.verdict = fmt::format("{} behind{}: timed out in {} while {} reached {}", behind, where,
                                op_text(*low.front()->t), ahead, op_text(*high.front()->t));
    } else if (by_seq.size() == 1 && by_seq.begin()->second.size() == entries.size() && a.verdict.empty()) {
      const WatchdogTimeout* t = entries.front().t;
      std::set<std::string> ops;
      std::set<std::uint64_t> numels;
      for (const auto& e : entries) {
        if (e.t->op_type) ops.insert(*e.t->op_type);
        if (e.t->numel_in) numels.insert(*e.t->numel_in);
      }
      for (const auto& e : entries)  // the entry that prints the most names the collective
        if (e.t->op_type && (!t->op_type || (e.t->elapsed_ms && !t->elapsed_ms))) t = e.t;
      if (ops.size() <= 1 && numels.size() <= 1 && entries.size() > 1) {
        std::string who;
        for (std::size_t i = 0; i < entries.size(); ++i) {
          if (i == 12) { who += ", …"; break; }
          who += (who.empty() ? "" : ", ") + label(*entries[i].t, global);
        }
        a.verdict = fmt::format("{} rank(s){} timed out in the same collective, {}{}{}", entries.size(), where, op_text(*t),
                                t->elapsed_ms ? " after " + seconds_text(*t->elapsed_ms) : "",
                                t->timeout_ms ? fmt::format(" (timeout {})", seconds_text(*t->timeout_ms)) : "");
        f.push_back({Severity::info,
                     fmt::format("every reporting rank{} ({}) timed out in {}", where, who, op_text(*t)),
                     "No rank that reported is behind at the collective level: they all launched this collective and "
                     "waited for it. The cause is a rank that did not report here (look for ranks missing from this "
                     "list), a network failure between them, or a GPU kernel that hung.",
                     "check whether every rank of the group appears; if so, look for NCCL WARN lines, Xid errors "
                     "(dmesg) and network errors at the time of the hang",
                     ev_all});
      }
    }
  }
  if (assumed)
    f.push_back({Severity::info,
                 fmt::format("some timeout messages do not name their process group; they were compared with group {}, "
                             "the only one the messages name", *named_groups.begin()),
                 "Each rank prints its process group only in the companion line (\"[PG n Rank r] Exception … at work\"), "
                 "which is missing (cut off) for some ranks.",
                 "", {}});

  // Per timeout: late detection, short timeouts, NumelIn ≠ NumelOut (once per distinct case).
  std::set<std::string> seen;
  for (const auto& e : all) {
    const auto& t = *e.t;
    if (t.timeout_ms && t.elapsed_ms && *t.elapsed_ms > *t.timeout_ms) {
      const std::uint64_t late = *t.elapsed_ms - *t.timeout_ms;
      if (late > options.late_detection_ms && late > *t.timeout_ms && seen.insert("late").second)
        f.push_back({Severity::warning,
                     fmt::format("the timeout was noticed {} late: {} ran for {} with a timeout of {}", seconds_text(late),
                                 op_text(t), seconds_text(*t.elapsed_ms), seconds_text(*t.timeout_ms)),
                     "The watchdog checks its collectives every few seconds; noticing a timeout this late means its "
                     "thread was blocked (a hung CUDA call or driver, a stopped or swapped process, an overloaded "
                     "host). The hang began about " + seconds_text(*t.elapsed_ms) + " before the message.",
                     "look at what the process was doing at the start of the hang (the time of the message minus the "
                     "elapsed time); check dmesg for GPU Xid errors",
                     {evidence(e.log, t.line)}});
    }
    if (t.timeout_ms && *t.timeout_ms < options.short_timeout_ms && seen.insert("short").second)
      f.push_back({Severity::warning, fmt::format("the collective timeout is only {}", seconds_text(*t.timeout_ms)),
                   "Collectives that take longer trip it, and the first one includes NCCL's connection set-up; a "
                   "timeout this short turns ordinary waits into failures (or was set on purpose, e.g. in a test).",
                   "set a larger timeout in init_process_group(timeout=…) unless the short one is intended",
                   {evidence(e.log, t.line)}});
    if (t.numel_in && t.numel_out && *t.numel_in != *t.numel_out && *t.numel_in > 0 && *t.numel_out > 0) {
      const std::string key = fmt::format("numel {} {}", *t.numel_in, *t.numel_out);
      if (!seen.insert(key).second) continue;
      const auto big = std::max(*t.numel_in, *t.numel_out), small = std::min(*t.numel_in, *t.numel_out);
      std::string ratio = big % small == 0 ? fmt::format("{} ×", big / small) : fmt::format("{:.2f} ×", double(big) / double(small));
      const bool scatter = *t.numel_in > *t.numel_out;
      f.push_back({Severity::info,
                   fmt::format("{}: NumelIn {} = {} NumelOut {}: a {}", op_text(t), *t.numel_in, ratio, *t.numel_out,
                               scatter ? "reduce-scatter (each rank keeps its shard)" : "all-gather (each rank contributes a shard)"),
                   big % small == 0
                       ? fmt::format("The ratio is the number of ranks in the group ({}), as in FSDP/ZeRO sharding.", big / small)
                       : "The ratio is not a whole number: the shards are padded or uneven.",
                   "", {evidence(e.log, t.line)}});
    }
  }
  if (all.empty()) {
    std::size_t others = 0;
    std::vector<Evidence> ev;
    for (std::size_t li = 0; li < logs.size(); ++li)
      for (const auto& [line, text] : logs[li].other_errors) {
        ++others;
        if (ev.size() < 6) ev.push_back({logs[li].source, line, text});
      }
    if (others > 0) {
      f.push_back({Severity::error, fmt::format("{} ProcessGroupNCCL error line(s) without a timed-out collective", others),
                   "The watchdog or ProcessGroupNCCL reported a failure, but no WorkNCCL(...) with its collective "
                   "survived in the text.",
                   "read the lines shown; the NCCL log of the same run (NCCL_DEBUG=INFO) usually names the cause", ev});
      a.verdict = "ProcessGroupNCCL errors without the collective that failed";
    } else {
      a.verdict = "no watchdog timeout in the text";
    }
  } else if (a.verdict.empty()) {
    const auto& t = *all.front().t;
    a.verdict = fmt::format("{} timed out in {}{}{}", label(t, true), op_text(t),
                            t.elapsed_ms ? " after " + seconds_text(*t.elapsed_ms) : "",
                            t.timeout_ms ? fmt::format(" (timeout {})", seconds_text(*t.timeout_ms)) : "");
  }
  std::stable_sort(f.begin(), f.end(), [](const LogFinding& x, const LogFinding& y) {
    return static_cast<int>(x.severity) > static_cast<int>(y.severity);
  });
  a.findings = std::move(f);
  return a;
}

void to_json(nlohmann::json& j, const WatchdogTimeout& t) {
  j = {{"global_rank", optional_json(t.global_rank)},   {"group_rank", optional_json(t.group_rank)},
       {"process_group", optional_json(t.process_group)}, {"op_type", optional_json(t.op_type)},
       {"seq_num", optional_json(t.seq_num)},           {"numel_in", optional_json(t.numel_in)},
       {"numel_out", optional_json(t.numel_out)},       {"tensor_shape", optional_json(t.tensor_shape)},
       {"timeout_ms", optional_json(t.timeout_ms)},     {"elapsed_ms", optional_json(t.elapsed_ms)},
       {"last_enqueued", optional_json(t.last_enqueued)}, {"last_completed", optional_json(t.last_completed)},
       {"last_started", optional_json(t.last_started)}, {"timestamp", optional_json(t.timestamp)},
       {"line", t.line},                                {"repeats", t.repeats}};
}

void to_json(nlohmann::json& j, const WatchdogLog& log) {
  nlohmann::json states = nlohmann::json::array(), others = nlohmann::json::array(), notes = nlohmann::json::array();
  for (const auto& s : log.work_states)
    states.push_back({{"global_rank", optional_json(s.global_rank)}, {"group_rank", optional_json(s.group_rank)},
                      {"process_group", optional_json(s.process_group)}, {"at_work", optional_json(s.at_work)},
                      {"last_enqueued", optional_json(s.last_enqueued)}, {"last_completed", optional_json(s.last_completed)},
                      {"last_started", optional_json(s.last_started)}, {"line", s.line}});
  for (const auto& [line, text] : log.other_errors) others.push_back({{"line", line}, {"text", text}});
  for (const auto& n : log.notes) notes.push_back(to_valid_utf8(n));
  j = {{"source", to_valid_utf8(log.source)}, {"lines", log.lines}, {"timeouts", log.timeouts},
       {"work_states", states}, {"other_errors", others}, {"notes", notes}};
}

void to_json(nlohmann::json& j, const WatchdogAnalysis& a) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : a.ranks) ranks.push_back({{"rank", r.rank}, {"source", to_valid_utf8(r.source)}, {"timeout", r.timeout}});
  j = {{"verdict", to_valid_utf8(a.verdict)}, {"ranks", ranks}, {"findings", a.findings}};
}

}  // namespace scalescope::analyze
