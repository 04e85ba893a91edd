#pragma once
// Internal to the trace analysis (trace_analysis.h), shared by its files and by no other: the interval sets and
// small arithmetic every step of it uses, the per-rank record the analysis builds from one trace (RankData: its GPU
// operations, collectives, host syncs and steps), and the steps that pass it on — extract (trace_rank_extract.cpp),
// match_across_ranks (trace_cross_rank.cpp), finish_rank, make_waterfall and make_timeline
// (trace_rank_metrics.cpp), add_findings (trace_findings.cpp). The public entry points (trace_analysis.cpp) call
// them in that order; trace_analysis_json.cpp writes the result.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "analysis/trace_analysis.h"

namespace scalescope::analyze::trace_analysis_internal {

using comm::Collective;

// ---------------------------------------------------------------------------------------------------------
// Interval sets: sorted, disjoint [begin, end) lists of ns.

using Iv = std::pair<std::int64_t, std::int64_t>;
using Ivs = std::vector<Iv>;

inline Ivs unite(Ivs v) {
  std::sort(v.begin(), v.end());
  Ivs out;
  out.reserve(v.size());
  for (const auto& iv : v) {
    if (iv.second <= iv.first) continue;
    if (!out.empty() && iv.first <= out.back().second) out.back().second = std::max(out.back().second, iv.second);
    else out.push_back(iv);
  }
  return out;
}

inline Ivs unite2(const Ivs& a, const Ivs& b) {
  Ivs v;
  v.reserve(a.size() + b.size());
  v.insert(v.end(), a.begin(), a.end());
  v.insert(v.end(), b.begin(), b.end());
  return unite(std::move(v));
}

inline std::int64_t length(const Ivs& v) {
  std::int64_t n = 0;
  for (const auto& iv : v) n += iv.second - iv.first;
  return n;
}

inline Ivs intersect(const Ivs& a, const Ivs& b) {
  Ivs out;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const std::int64_t lo = std::max(a[i].first, b[j].first);
    const std::int64_t hi = std::min(a[i].second, b[j].second);
    if (lo < hi) out.emplace_back(lo, hi);
    if (a[i].second < b[j].second) ++i;
    else ++j;
  }
  return out;
}

inline Ivs subtract(const Ivs& a, const Ivs& b) {
  Ivs out;
  std::size_t j = 0;
  for (const auto& iv : a) {
    std::int64_t lo = iv.first;
    while (j < b.size() && b[j].second <= lo) ++j;
    std::size_t k = j;
    while (k < b.size() && b[k].first < iv.second) {
      if (b[k].first > lo) out.emplace_back(lo, b[k].first);
      lo = std::max(lo, b[k].second);
      ++k;
    }
    if (lo < iv.second) out.emplace_back(lo, iv.second);
  }
  return out;
}

/// The part of a sorted disjoint set inside [lo, hi).
inline Ivs clip(const Ivs& v, std::int64_t lo, std::int64_t hi) {
  Ivs out;
  auto it = std::lower_bound(v.begin(), v.end(), lo, [](const Iv& iv, std::int64_t x) { return iv.second <= x; });
  for (; it != v.end() && it->first < hi; ++it) {
    const std::int64_t a = std::max(it->first, lo), b = std::min(it->second, hi);
    if (a < b) out.emplace_back(a, b);
  }
  return out;
}

/// Length of [a, b) ∩ v, v sorted and disjoint.
inline std::int64_t overlap_with(const Ivs& v, std::int64_t a, std::int64_t b) { return length(clip(v, a, b)); }

/// Whether time `t` lies inside the sorted disjoint set `v`.
inline bool inside(const Ivs& v, std::int64_t t) { return !clip(v, t, t + 1).empty(); }

// Saturating arithmetic where adversarial traces could overflow: clock offsets (base times of different files)
// and sums over many steps. Real traces never come near the bounds.
inline std::int64_t sat_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}
inline std::int64_t sat_sub(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? INT64_MAX : INT64_MIN;
  return r;
}

inline double ms(std::int64_t ns) { return static_cast<double>(ns) / 1e6; }
inline double us(std::int64_t ns) { return static_cast<double>(ns) / 1e3; }

inline bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

inline std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

inline bool contains_icase(std::string_view s, std::string_view needle) {
  return lower(s).find(lower(needle)) != std::string::npos;
}

inline std::int64_t median(std::vector<std::int64_t> v) {
  const std::size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m), v.end());
  if (v.size() % 2 == 1) return v[m];
  const std::int64_t hi = v[m];
  const std::int64_t lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m));
  return lo + (hi - lo) / 2;
}

inline double quantile_sorted(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const double h = (static_cast<double>(v.size()) - 1) * q;
  const auto i = static_cast<std::size_t>(std::floor(h));
  if (i + 1 >= v.size()) return v.back();
  return v[i] + (h - static_cast<double>(i)) * (v[i + 1] - v[i]);
}

// ---------------------------------------------------------------------------------------------------------
// The per-rank record.

enum class GpuClass : std::uint8_t { compute, comm, h2d, other_copy };

struct GpuOp {
  std::int64_t start = 0, end = 0;
  std::uint32_t name = 0;
  std::uint32_t launch = 0;  // index into names: "grid [..] block [..]", 0 when unknown
  std::int32_t stream = -1;
  GpuClass cls = GpuClass::compute;
};

struct CommOp {
  std::int32_t stream = -1;
  std::int64_t start = 0, end = 0;
  std::optional<Collective> kind;
  std::string kind_name;  // scalescope's name, or the trace's when unknown
  bool send_recv_kernel = false;
  std::string pg;
  std::optional<std::int64_t> seq;
  std::int64_t step = -1;   // ProfilerStep number of the launch
  std::int64_t ordinal = 0; // k-th of its pg (within its step when matching by steps)
  std::optional<std::int64_t> bytes;
  std::string dtype;
  std::optional<std::int64_t> ranks;
  std::string size_source;
  bool matched = false;
  std::int64_t late_ns = 0;
  std::int64_t wait_ns = 0;  // latest start − own start, ≤ duration
};

struct SyncPoint {
  std::int64_t begin = 0, end = 0;
  std::string label;
};

struct Step {
  std::string name;
  std::int64_t number = -1;
  std::int64_t begin = 0, end = 0;
};

struct RankData {
  RankAnalysis out;
  std::vector<std::string> names;
  std::vector<GpuOp> gpu;
  std::vector<CommOp> comms;
  std::vector<SyncPoint> syncs;  // by end
  Ivs compute, comm, h2d, other_copy, busy, dataloader, waits;
  std::vector<std::pair<Iv, std::size_t>> sync_gaps;  // idle gap → index into syncs of the first sync ending in it
  std::vector<Step> steps;
  std::optional<std::int64_t> base_time_ns;
  std::int64_t offset_ns = 0;  // added to local times for the common axis
  std::vector<std::pair<std::string, Iv>> ddp_events;  // DDP's own CPU ranges (see RankAnalysis::ddp_ranges)

  /// names[i], or `missing` for an index beyond them (names[0] is "": no name).
  std::string name_at(std::uint32_t i, const char* missing) const { return i < names.size() ? names[i] : missing; }
};

inline std::string step_label(const Step& s) { return s.name; }

/// `part` as a whole percentage of `whole` ("42 %"), "-" when `whole` is not positive.
inline std::string pct(double part, double whole) {
  return whole > 0 ? fmt::format("{:.0f} %", 100.0 * part / whole) : "-";
}

/// One trace's events as its rank's record: GPU operations, collectives, syncs, steps (trace_rank_extract.cpp).
RankData extract(Trace&& t, std::size_t file_index, const std::string& path, StepWindows windows);

/// Matches each collective across the ranks, aligns their clocks and measures waits and the straggler
/// (trace_cross_rank.cpp).
void match_across_ranks(std::vector<RankData*>& ranks, const TraceOptions& options, CrossRankAnalysis& cross);

/// A rank's figures: per-step metrics, their mean, host syncs, launch gaps, the kernel table (trace_rank_metrics.cpp).
void finish_rank(RankData& d);

/// The measured loss of a step as its parts, against the baseline's step when there is one.
Waterfall make_waterfall(const StepMetrics& m, const StepMetrics* base);

/// Interference of communication with the compute kernels beside it, against the baseline's kernels when given.
std::optional<CommInterference> measure_interference(const RankData& d, const RankData* baseline);

/// The rank's timeline for the merged Perfetto trace.
RankTimeline make_timeline(const RankData& d);

/// The analysis's findings (straggler, overlap, data and host waits …) from its ranks (trace_findings.cpp).
void add_findings(TraceAnalysis& a);

}  // namespace scalescope::analyze::trace_analysis_internal
