// Across the ranks of one trace analysis (trace_analysis_internal.h's match_across_ranks): each collective
// matched on every rank, the ranks' clocks aligned on the collectives that synchronise them, and the waits and
// the straggler measured.

#include "analysis/trace_analysis_internal.h"

#include <map>
#include <set>
#include <unordered_map>

namespace scalescope::analyze::trace_analysis_internal {
namespace {

// ---------------------------------------------------------------------------------------------------------
// Cross-rank matching and clock alignment.

bool synchronising(const CommOp& c) {
  return c.kind && *c.kind != Collective::send_recv && !(c.send_recv_kernel && *c.kind != Collective::all_to_all);
}

}  // namespace

void match_across_ranks(std::vector<RankData*>& ranks, const TraceOptions& options, CrossRankAnalysis& cross) {
  const bool all_base = !ranks.empty() && std::all_of(ranks.begin(), ranks.end(), [](const RankData* r) { return r->base_time_ns.has_value(); });
  std::vector<std::int64_t> coarse(ranks.size(), 0);
  if (options.alignment != ClockAlignment::none && all_base)
    for (std::size_t i = 0; i < ranks.size(); ++i) coarse[i] = *ranks[i]->base_time_ns;
  for (std::size_t i = 0; i < ranks.size(); ++i) ranks[i]->offset_ns = coarse[i];
  std::string coarse_text = options.alignment != ClockAlignment::none && all_base ? "baseTimeNanoseconds"
                                                                                  : "timestamps as written";
  cross.alignment = coarse_text;
  if (ranks.size() < 2) return;

  // Keys: (pg, seq) or (pg, step, k-th) or (pg, k-th).
  const bool all_steps = std::all_of(ranks.begin(), ranks.end(), [](const RankData* r) { return r->out.steps_from_annotations; });
  std::map<std::string, std::vector<std::pair<std::size_t, std::size_t>>> groups;
  std::set<std::string> methods;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    std::map<std::pair<std::string, std::int64_t>, std::int64_t> counters;
    for (std::size_t k = 0; k < ranks[r]->comms.size(); ++k) {
      CommOp& c = ranks[r]->comms[k];
      std::string key;
      if (c.seq) {
        key = fmt::format("{}\x1fseq {}", c.pg, *c.seq);
        methods.insert("seq");
      } else if (all_steps) {
        c.ordinal = counters[{c.pg, c.step}]++;
        key = c.step >= 0 ? fmt::format("{}\x1fProfilerStep#{} #{}", c.pg, c.step, c.ordinal + 1)
                          : fmt::format("{}\x1foutside steps #{}", c.pg, c.ordinal + 1);
        methods.insert("step order");
      } else {
        c.ordinal = counters[{c.pg, -1}]++;
        key = fmt::format("{}\x1f#{}", c.pg, c.ordinal + 1);
        methods.insert("trace order");
      }
      groups[key].emplace_back(r, k);
    }
  }
  for (const auto& m : methods) cross.matching += (cross.matching.empty() ? "" : " + ") + m;

  struct Match {
    std::string key;
    std::vector<std::pair<std::size_t, std::size_t>> members;
  };
  std::vector<Match> matches;
  for (auto& [key, members] : groups) {
    std::set<std::size_t> seen;
    std::vector<std::pair<std::size_t, std::size_t>> uniq;
    for (const auto& m : members)
      if (seen.insert(m.first).second) uniq.push_back(m);
      else ++cross.unmatched;
    if (uniq.size() < 2) {
      cross.unmatched += static_cast<std::int64_t>(uniq.size());
      continue;
    }
    // Kinds must agree where known.
    std::optional<Collective> kind;
    bool agree = true;
    for (const auto& [r, k] : uniq) {
      const auto& c = ranks[r]->comms[k];
      if (c.kind && kind && *c.kind != *kind) agree = false;
      if (c.kind && !kind) kind = c.kind;
    }
    if (!agree) {
      cross.unmatched += static_cast<std::int64_t>(uniq.size());
      continue;
    }
    matches.push_back({key, std::move(uniq)});
  }
  cross.matched = static_cast<std::int64_t>(matches.size());
  if (matches.empty()) {
    cross.notes.push_back("no collective was found on two or more ranks: no waits, no straggler");
    return;
  }

  // Fine alignment: median of end differences to an already aligned rank.
  if (options.alignment == ClockAlignment::auto_) {
    std::vector<bool> aligned(ranks.size(), false);
    aligned[0] = true;
    std::int64_t used = 0;
    for (int pass = 0; pass < 2; ++pass) {  // pass 0: synchronising collectives; pass 1: send/recv too
      bool progress = true;
      while (progress) {
        progress = false;
        for (std::size_t r = 1; r < ranks.size(); ++r) {
          if (aligned[r]) continue;
          std::vector<std::int64_t> diffs;
          for (const auto& m : matches) {
            const CommOp* mine = nullptr;
            const CommOp* ref = nullptr;
            std::size_t ref_rank = 0;
            for (const auto& [q, k] : m.members) {
              const CommOp& c = ranks[q]->comms[k];
              if (pass == 0 && !synchronising(c)) continue;
              if (q == r) mine = &c;
              else if (aligned[q] && !ref) {
                ref = &c;
                ref_rank = q;
              }
            }
            if (mine && ref) diffs.push_back(sat_sub(sat_add(ref->end, ranks[ref_rank]->offset_ns), mine->end));
          }
          if (diffs.empty()) continue;
          used += static_cast<std::int64_t>(diffs.size());
          ranks[r]->offset_ns = median(std::move(diffs));
          aligned[r] = true;
          progress = true;
        }
      }
    }
    const auto n_aligned = std::count(aligned.begin(), aligned.end(), true);
    cross.alignment = fmt::format("{}, then collective ends (median offset over {} collective pairs; {} of {} ranks)",
                                  coarse_text, used, n_aligned, ranks.size());
    for (std::size_t r = 0; r < ranks.size(); ++r)
      if (!aligned[r])
        cross.notes.push_back(fmt::format("rank {} shares no collective with the others: its clock is the {} only",
                                          ranks[r]->out.rank, coarse_text));
  }

  // Waits.
  std::vector<MatchedCollective> all;
  for (const auto& m : matches) {
    std::int64_t earliest = INT64_MAX, latest = INT64_MIN;
    std::size_t er = 0, lr = 0;
    for (const auto& [r, k] : m.members) {
      const std::int64_t a = sat_add(ranks[r]->comms[k].start, ranks[r]->offset_ns);
      if (a < earliest) {
        earliest = a;
        er = r;
      }
      if (a > latest) {
        latest = a;
        lr = r;
      }
    }
    for (const auto& [r, k] : m.members) {
      CommOp& c = ranks[r]->comms[k];
      const std::int64_t a = sat_add(c.start, ranks[r]->offset_ns);
      c.matched = true;
      c.late_ns = sat_sub(a, earliest);
      c.wait_ns = std::clamp<std::int64_t>(sat_sub(latest, a), 0, c.end - c.start);
    }
    const CommOp& first = ranks[m.members.front().first]->comms[m.members.front().second];
    MatchedCollective mc;
    mc.process_group = first.pg;
    mc.collective = first.kind_name;
    mc.key = m.key.substr(m.key.find('\x1f') + 1);
    mc.earliest_rank = ranks[er]->out.rank;
    mc.latest_rank = ranks[lr]->out.rank;
    mc.spread_us = us(sat_sub(latest, earliest));
    all.push_back(std::move(mc));
  }
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.spread_us > b.spread_us; });
  if (all.size() > 10) all.resize(10);
  cross.worst = std::move(all);
  for (RankData* r : ranks) {
    Ivs w;
    for (const auto& c : r->comms)
      if (c.matched && c.wait_ns > 0) w.emplace_back(c.start, c.start + c.wait_ns);
    r->waits = unite(std::move(w));
  }
}

}  // namespace scalescope::analyze::trace_analysis_internal
