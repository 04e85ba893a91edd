// A rank's figures from its record (trace_analysis_internal.h): each step's time split into compute, exposed
// communication, straggler wait, data wait, host sync and other; their mean; host syncs and launch gaps;
// communication's interference with the kernels beside it; the kernel table; the scaling-loss waterfall; and
// the rank's timeline for the merged trace.

#include "analysis/trace_analysis_internal.h"

#include <map>
#include <numeric>
#include <set>
#include <unordered_map>

namespace scalescope::analyze::trace_analysis_internal {
namespace {

// ---------------------------------------------------------------------------------------------------------
// Per-step figures.

struct StepTotals {
  std::int64_t step = 0, busy = 0, compute = 0, comm = 0, copies = 0, overlap = 0, exposed = 0, straggler = 0,
               data = 0, host = 0, other = 0, syncs = 0, blocked = 0, gaps = 0, gap_ns = 0, gap_idle_ns = 0,
               collectives = 0, late = 0, wait = 0;
};

StepTotals measure_step(const RankData& d, const Step& s, std::map<std::string, HostSyncGroup>& groups,
                        std::vector<double>& gap_us) {
  StepTotals t;
  const std::int64_t b = s.begin, e = s.end;
  t.step = e - b;
  const Ivs window{{b, e}};
  const Ivs C = clip(d.compute, b, e), M = clip(d.comm, b, e), H = clip(d.h2d, b, e), O = clip(d.other_copy, b, e);
  const Ivs busy = clip(d.busy, b, e);
  const Ivs idle = subtract(window, busy);
  const Ivs CM = unite2(C, M);
  const Ivs exposed = subtract(M, C);
  t.busy = length(busy);
  t.compute = length(C);
  t.comm = length(M);
  t.copies = length(unite2(H, O));
  t.overlap = length(intersect(C, M));
  t.exposed = length(exposed);
  t.straggler = length(intersect(exposed, clip(d.waits, b, e)));
  const std::int64_t h2d_exposed = length(subtract(H, CM));
  const std::int64_t other_exposed = length(subtract(O, unite2(CM, H)));
  const Ivs DL = clip(d.dataloader, b, e);
  const Ivs idle_dl = intersect(idle, DL);
  const Ivs idle_rest = subtract(idle, DL);
  // Idle (outside data loading) in gaps where a host sync returned, attributed to that sync's label.
  std::int64_t host = 0;
  auto g = std::lower_bound(d.sync_gaps.begin(), d.sync_gaps.end(), b,
                            [](const auto& x, std::int64_t v) { return x.first.second <= v; });
  for (; g != d.sync_gaps.end() && g->first.first < e; ++g) {
    const std::int64_t n = length(intersect(idle_rest, clip(Ivs{g->first}, b, e)));
    host += n;
    groups[d.syncs[g->second].label].gpu_idle_ms += ms(n);
  }
  t.data = h2d_exposed + length(idle_dl);
  t.host = host;
  t.other = other_exposed + length(idle_rest) - host;
  auto sp_it = std::lower_bound(d.syncs.begin(), d.syncs.end(), b, [](const SyncPoint& x, std::int64_t v) { return x.end < v; });
  for (; sp_it != d.syncs.end() && sp_it->end < e; ++sp_it) {
    const SyncPoint& sp = *sp_it;
    ++t.syncs;
    t.blocked += sp.end - sp.begin;
    auto& grp = groups[sp.label];
    grp.label = sp.label;
    ++grp.count;
    grp.blocked_ms += ms(sp.end - sp.begin);
  }
  // Launch gaps: no compute kernel running, on any stream, between compute kernels that start in the window.
  // All streams merged rather than the busiest stream alone: a CUDA graph (torch.compile's reduce-overhead,
  // scalescope --cuda-graph) spreads one stream's kernels over several, so one stream shows the others' work
  // as gaps. d.compute is the union of the compute kernels' intervals, sorted and disjoint.
  // A block that began before the window but runs into it (kernels starting in the window merged into it) anchors
  // the first gap; the gap before it belongs to the previous window.
  Ivs gap_spans;
  auto k = std::upper_bound(d.compute.begin(), d.compute.end(), b,
                            [](std::int64_t v, const Iv& iv) { return v < iv.second; });  // first block ending after b
  std::int64_t reach = INT64_MIN;
  if (k != d.compute.end() && k->first < b) reach = (k++)->second;
  for (; k != d.compute.end() && k->first < e; ++k) {
    if (reach != INT64_MIN && k->first > reach) {
      ++t.gaps;
      t.gap_ns += k->first - reach;
      gap_us.push_back(us(k->first - reach));
      gap_spans.push_back({reach, k->first});
    }
    reach = k->second;
  }
  // The part of those gaps in which nothing at all runs on the GPU: launch latency and host delays, without
  // the waits for communication (the compute stream waiting on an all-reduce while NCCL's kernel runs).
  t.gap_idle_ns = length(intersect(gap_spans, idle));
  auto c_it = std::lower_bound(d.comms.begin(), d.comms.end(), b, [](const CommOp& x, std::int64_t v) { return x.start < v; });
  for (; c_it != d.comms.end() && c_it->start < e; ++c_it) {
    const CommOp& c = *c_it;
    ++t.collectives;
    t.late += c.late_ns;
    t.wait += c.wait_ns;
  }
  return t;
}

StepMetrics to_metrics(const StepTotals& t, double n) {
  StepMetrics m;
  auto f = [n](std::int64_t v) { return static_cast<double>(v) / 1e6 / n; };
  m.step_ms = f(t.step);
  m.gpu_busy_ms = f(t.busy);
  m.gpu_idle_ms = f(t.step - t.busy);
  m.compute_ms = f(t.compute);
  m.comm_ms = f(t.comm);
  m.memcpy_ms = f(t.copies);
  m.overlap_ms = f(t.overlap);
  m.exposed_comm_ms = f(t.exposed);
  m.straggler_wait_ms = f(t.straggler);
  m.data_wait_ms = f(t.data);
  m.host_sync_ms = f(t.host);
  m.other_ms = f(t.other);
  m.host_syncs = static_cast<double>(t.syncs) / n;
  m.host_sync_blocked_ms = f(t.blocked);
  m.launch_gaps = static_cast<double>(t.gaps) / n;
  m.launch_gap_ms = f(t.gap_ns);
  m.launch_gap_idle_ms = f(t.gap_idle_ns);
  m.collectives = static_cast<double>(t.collectives) / n;
  m.comm_late_ms = f(t.late);
  m.comm_wait_ms = f(t.wait);
  return m;
}

void add(StepTotals& a, const StepTotals& b) {
  for (auto [x, y] : {std::pair{&a.step, b.step}, {&a.busy, b.busy}, {&a.compute, b.compute}, {&a.comm, b.comm},
                      {&a.copies, b.copies}, {&a.overlap, b.overlap}, {&a.exposed, b.exposed},
                      {&a.straggler, b.straggler}, {&a.data, b.data}, {&a.host, b.host}, {&a.other, b.other},
                      {&a.syncs, b.syncs}, {&a.blocked, b.blocked}, {&a.gaps, b.gaps}, {&a.gap_ns, b.gap_ns}, {&a.gap_idle_ns, b.gap_idle_ns},
                      {&a.collectives, b.collectives}, {&a.late, b.late}, {&a.wait, b.wait}})
    *x = sat_add(*x, y);
}

Ivs step_union(const RankData& d) {
  Ivs v;
  for (const auto& s : d.steps)
    if (s.end > s.begin) v.push_back({s.begin, s.end});
  return unite(std::move(v));
}

/// Durations of the compute kernels that start inside a step window and overlap no communication kernel, by
/// (name, launch configuration) as text: the baseline's references.
using KernelDurations = std::map<std::pair<std::string, std::string>, std::vector<std::int64_t>>;

KernelDurations durations_without_comm(const RankData& d) {
  KernelDurations out;
  const Ivs steps = step_union(d);
  for (const auto& op : d.gpu) {
    if (op.cls != GpuClass::compute || op.name == 0 || op.end <= op.start || !inside(steps, op.start) ||
        overlap_with(d.comm, op.start, op.end) > 0)
      continue;
    out[{d.name_at(op.name, "?"), d.name_at(op.launch, "")}].push_back(op.end - op.start);
  }
  return out;
}

/// The median of `durations` when there are enough of them and they agree (one shape, not several sharing a
/// name): (p90 − p10) / median ≤ CommInterference::kMaxReferenceSpread, p10 and p90 by nearest rank.
std::optional<std::int64_t> reference_duration(std::vector<std::int64_t> durations) {
  if (durations.size() < CommInterference::kMinReferenceCalls) return std::nullopt;
  std::sort(durations.begin(), durations.end());
  const std::size_t n = durations.size();
  const auto at = [&](double q) { return durations[static_cast<std::size_t>(std::lround(q * static_cast<double>(n - 1)))]; };
  const std::int64_t med = median(durations);
  if (med <= 0 || static_cast<double>(at(0.9) - at(0.1)) > CommInterference::kMaxReferenceSpread * static_cast<double>(med))
    return std::nullopt;
  return med;
}

/// CommInterference of the compute kernels that start inside a step window of `d`, with the 1-rank baseline's
/// kernels as the fallback reference (null without a baseline); nullopt when no communication kernel overlaps a
/// step window.

}  // namespace

std::optional<CommInterference> measure_interference(const RankData& d, const RankData* baseline) {
  const Ivs steps = step_union(d);
  if (steps.empty() || std::none_of(d.gpu.begin(), d.gpu.end(), [&](const GpuOp& op) {
        return op.cls == GpuClass::comm && overlap_with(steps, op.start, op.end) > 0;
      }))
    return std::nullopt;
  const double n = static_cast<double>(d.steps.size());
  struct Call {
    std::int64_t dur, overlap;
  };
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<Call>> by_kernel;  // (name, launch)
  std::int64_t overlap_without = 0, calls_without = 0;
  for (const auto& op : d.gpu) {
    if (op.cls != GpuClass::compute || op.end <= op.start || !inside(steps, op.start)) continue;
    const std::int64_t overlap = overlap_with(d.comm, op.start, op.end);
    if (op.name == 0) {  // no name to compare it by
      if (overlap > 0) {
        overlap_without = sat_add(overlap_without, overlap);
        ++calls_without;
      }
      continue;
    }
    by_kernel[{op.name, op.launch}].push_back({op.end - op.start, overlap});
  }
  const KernelDurations base = baseline ? durations_without_comm(*baseline) : KernelDurations{};
  CommInterference r;
  std::int64_t overlap_ns = 0, slowdown_ns = 0, vs_baseline_ns = 0, calls_with = 0;
  for (const auto& [key, calls] : by_kernel) {
    std::vector<std::int64_t> alone;
    std::int64_t overlap = 0, count = 0;
    for (const auto& c : calls) {
      if (c.overlap == 0) alone.push_back(c.dur);
      else {
        overlap = sat_add(overlap, c.overlap);
        ++count;
      }
    }
    if (count == 0) continue;
    KernelInterference k;
    k.name = d.name_at(key.first, "?");
    k.launch = d.name_at(key.second, "");
    std::optional<std::int64_t> reference = reference_duration(std::move(alone));
    k.reference = "rank";
    if (!reference) {  // the baseline's calls of the same launch configuration, or by name when one trace has none
      std::vector<std::int64_t> durations;
      if (auto it = base.find({k.name, k.launch}); it != base.end()) durations = it->second;
      else if (!k.launch.empty()) {
        if (auto bare = base.find({k.name, ""}); bare != base.end()) durations = bare->second;
      } else {
        for (auto it = base.lower_bound({k.name, ""}); it != base.end() && it->first.first == k.name; ++it)
          durations.insert(durations.end(), it->second.begin(), it->second.end());
      }
      if (!durations.empty()) {
        reference = reference_duration(std::move(durations));
        k.reference = "baseline";
      }
    }
    if (!reference) {
      overlap_without = sat_add(overlap_without, overlap);
      calls_without += count;
      continue;
    }
    // Communication beside a kernel can delay it by at most the time it runs beside it; more (or a saving of more)
    // is other work under the same name and launch configuration (a GEMM's k is not in its grid).
    std::int64_t slowdown = 0;
    for (const auto& c : calls)
      if (c.overlap > 0) slowdown = sat_add(slowdown, std::clamp(c.dur - *reference, -c.overlap, c.overlap));
    k.calls_per_step = static_cast<double>(count) / n;
    k.overlap_ms = ms(overlap) / n;
    k.slowdown_ms = ms(slowdown) / n;
    k.reference_us = us(*reference);
    if (k.reference == "baseline") vs_baseline_ns = sat_add(vs_baseline_ns, slowdown);
    r.kernels.push_back(std::move(k));
    calls_with += count;
    overlap_ns = sat_add(overlap_ns, overlap);
    slowdown_ns = sat_add(slowdown_ns, slowdown);
  }
  r.calls_with_reference = static_cast<double>(calls_with) / n;
  r.calls_without_reference = static_cast<double>(calls_without) / n;
  r.overlap_ms = ms(overlap_ns) / n;
  r.slowdown_ms = ms(slowdown_ns) / n;
  r.slowdown_vs_baseline_ms = ms(vs_baseline_ns) / n;
  r.overlap_without_reference_ms = ms(overlap_without) / n;
  std::stable_sort(r.kernels.begin(), r.kernels.end(),
                   [](const auto& a, const auto& b) { return a.slowdown_ms > b.slowdown_ms; });
  return r;
}

void finish_rank(RankData& d) {
  RankAnalysis& out = d.out;
  std::map<std::string, HostSyncGroup> groups;
  std::vector<double> gaps;
  StepTotals total;
  for (const auto& s : d.steps) {
    const StepTotals t = measure_step(d, s, groups, gaps);
    StepMetrics m = to_metrics(t, 1);
    m.name = step_label(s);
    m.number = s.number;
    m.start_ms = ms(s.begin);
    out.steps.push_back(m);
    add(total, t);
  }
  const double n = d.steps.empty() ? 1.0 : static_cast<double>(d.steps.size());
  out.mean = to_metrics(total, n);
  out.mean.name = "mean per step";
  for (auto& [label, g] : groups) {
    g.label = label;
    out.host_syncs.push_back(g);
  }
  std::sort(out.host_syncs.begin(), out.host_syncs.end(), [](const auto& a, const auto& b) {
    return a.gpu_idle_ms != b.gpu_idle_ms ? a.gpu_idle_ms > b.gpu_idle_ms : a.count > b.count;
  });
  // DDP's host ranges that start inside a step.
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> ddp;  // name → (calls, ns)
  for (const auto& [name, iv] : d.ddp_events)
    for (const auto& s : d.steps)
      if (iv.first >= s.begin && iv.first < s.end) {
        auto& [calls, ns] = ddp[name];
        ++calls;
        ns = sat_add(ns, iv.second - iv.first);
        break;
      }
  for (const auto& [name, v] : ddp)
    out.ddp_ranges.push_back({name, static_cast<double>(v.first) / n, ms(v.second) / n});
  std::sort(out.ddp_ranges.begin(), out.ddp_ranges.end(), [](const auto& a, const auto& b) { return a.ms_per_step > b.ms_per_step; });
  std::sort(gaps.begin(), gaps.end());
  out.launch_gaps.count = static_cast<std::int64_t>(gaps.size());
  out.launch_gaps.total_ms = ms(total.gap_ns);
  out.launch_gaps.p50_us = quantile_sorted(gaps, 0.5);
  out.launch_gaps.p95_us = quantile_sorted(gaps, 0.95);
  out.launch_gaps.max_us = gaps.empty() ? 0 : gaps.back();

  // Collectives by (kind, pg, size, dtype).
  std::map<std::tuple<std::string, std::string, std::int64_t, std::string>, std::size_t> index;
  struct Acc {
    double bytes = 0, ns = 0, m_bytes = 0, m_ns = 0;
  };
  std::vector<Acc> acc;
  for (const auto& c : d.comms) {
    const auto key = std::make_tuple(c.kind_name, c.pg, c.bytes.value_or(-1), c.dtype);
    auto [it, fresh] = index.emplace(key, out.collectives.size());
    if (fresh) {
      CollectiveGroup g;
      g.collective = c.kind_name;
      g.process_group = c.pg;
      g.bytes = c.bytes;
      g.dtype = c.dtype;
      g.ranks = c.ranks;
      g.size_source = c.size_source;
      out.collectives.push_back(g);
      acc.emplace_back();
    }
    CollectiveGroup& g = out.collectives[it->second];
    Acc& a = acc[it->second];
    ++g.count;
    g.total_us += us(c.end - c.start);
    if (c.bytes && c.end > c.start) {
      a.bytes += static_cast<double>(*c.bytes);
      a.ns += static_cast<double>(c.end - c.start);
      if (c.matched && c.end - c.start - c.wait_ns > 0) {
        a.m_bytes += static_cast<double>(*c.bytes);
        a.m_ns += static_cast<double>(c.end - c.start - c.wait_ns);
      }
    }
  }
  for (std::size_t i = 0; i < out.collectives.size(); ++i) {
    CollectiveGroup& g = out.collectives[i];
    const auto kind = collective_from_name(g.collective);
    if (!kind || !g.ranks || *g.ranks < 1) continue;
    const double factor = comm::bus_bandwidth_factor(*kind, static_cast<int>(std::min<std::int64_t>(*g.ranks, 1 << 20)));
    if (acc[i].ns > 0) g.busbw_gbps = acc[i].bytes / acc[i].ns * factor;  // bytes/ns = GB/s
    if (acc[i].m_ns > 0) g.busbw_after_wait_gbps = acc[i].m_bytes / acc[i].m_ns * factor;
  }
  std::stable_sort(out.collectives.begin(), out.collectives.end(),
                   [](const auto& a, const auto& b) { return a.total_us > b.total_us; });

  // Kernels by name, those that start inside the analysed steps.
  if (!d.steps.empty()) {
    const std::int64_t lo = d.steps.front().begin, hi = d.steps.back().end;
    std::map<std::uint32_t, std::size_t> by_name;
    std::int64_t all_ns = 0;
    std::vector<std::int64_t> ns;
    for (const auto& op : d.gpu) {
      if ((op.cls != GpuClass::compute && op.cls != GpuClass::comm) || op.start < lo || op.start >= hi) continue;
      auto [it, fresh] = by_name.emplace(op.name, out.kernels.size());
      if (fresh) {
        KernelGroup g;
        g.name = d.name_at(op.name, "?");
        g.comm = op.cls == GpuClass::comm;
        out.kernels.push_back(g);
        ns.push_back(0);
      }
      ++out.kernels[it->second].count;
      ns[it->second] = sat_add(ns[it->second], op.end - op.start);
      all_ns = sat_add(all_ns, op.end - op.start);
    }
    for (std::size_t i = 0; i < out.kernels.size(); ++i) {
      KernelGroup& g = out.kernels[i];
      g.total_ms = ms(ns[i]);
      g.per_step_ms = g.total_ms / static_cast<double>(d.steps.size());
      g.per_step_count = static_cast<double>(g.count) / static_cast<double>(d.steps.size());
      g.mean_us = g.count > 0 ? us(ns[i]) / static_cast<double>(g.count) : 0;
      g.share = all_ns > 0 ? static_cast<double>(ns[i]) / static_cast<double>(all_ns) : 0;
    }
    std::stable_sort(out.kernels.begin(), out.kernels.end(),
                     [](const auto& a, const auto& b) { return a.total_ms > b.total_ms; });
  }
  out.clock_offset_us = us(d.offset_ns);
}

Waterfall make_waterfall(const StepMetrics& m, const StepMetrics* base) {
  Waterfall w;
  w.measured_ms = m.step_ms;
  const double exposed_net = m.exposed_comm_ms - m.straggler_wait_ms;
  if (!base) {
    w.ideal_ms = m.compute_ms;
    w.ideal_source = "the rank's own compute time, as no baseline was given";
    w.exposed_comm_ms = exposed_net;
    w.straggler_wait_ms = m.straggler_wait_ms;
    w.data_wait_ms = m.data_wait_ms;
    w.host_sync_ms = m.host_sync_ms;
    w.other_ms = m.other_ms;
    return w;
  }
  w.ideal_ms = base->step_ms;
  w.ideal_source = "1-rank baseline step";
  w.compute_ms = m.compute_ms - base->compute_ms;
  w.exposed_comm_ms = exposed_net - (base->exposed_comm_ms - base->straggler_wait_ms);
  w.straggler_wait_ms = m.straggler_wait_ms - base->straggler_wait_ms;
  w.data_wait_ms = m.data_wait_ms - base->data_wait_ms;
  w.host_sync_ms = m.host_sync_ms - base->host_sync_ms;
  w.other_ms = m.other_ms - base->other_ms;
  return w;
}

RankTimeline make_timeline(const RankData& d) {
  RankTimeline tl;
  tl.rank = d.out.rank;
  tl.names = d.names;
  std::map<std::string, std::uint32_t> tracks;
  auto track = [&](const std::string& name) {
    auto [it, fresh] = tracks.emplace(name, static_cast<std::uint32_t>(tl.tracks.size()));
    if (fresh) tl.tracks.push_back(name);
    return it->second;
  };
  std::map<std::string, std::uint32_t> extra;
  auto name_id = [&](const std::string& n) {
    auto [it, fresh] = extra.emplace(n, static_cast<std::uint32_t>(tl.names.size()));
    if (fresh) tl.names.push_back(n);
    return it->second;
  };
  const std::int64_t off = d.offset_ns;
  const std::uint32_t steps = track("steps");
  for (const auto& s : d.steps) tl.slices.push_back({sat_add(s.begin, off), s.end - s.begin, name_id(s.name), steps});
  for (const auto& op : d.gpu) {
    const char* what = op.cls == GpuClass::compute ? "compute" : op.cls == GpuClass::comm ? "communication" : "memcpy";
    tl.slices.push_back({sat_add(op.start, off), op.end - op.start, op.name, track(fmt::format("{} stream {}", what, op.stream))});
  }
  for (const auto& c : d.comms) {
    if (c.wait_ns <= 0) continue;
    tl.slices.push_back({sat_add(c.start, off), c.wait_ns, name_id("waiting for the last rank"),
                         track(fmt::format("communication stream {}", c.stream))});
  }
  if (!d.syncs.empty()) {
    const std::uint32_t st = track("host syncs");
    for (const auto& s : d.syncs) tl.slices.push_back({sat_add(s.begin, off), s.end - s.begin, name_id(s.label), st});
  }
  return tl;
}

}  // namespace scalescope::analyze::trace_analysis_internal
