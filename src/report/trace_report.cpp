#include "report/trace_report.h"

#include <algorithm>

#include <map>

#include <fmt/format.h>

#include "report/table.h"

namespace scalescope::report {
namespace {

std::string f2(double v) { return fmt::format("{:.2f}", v); }
std::string pct(double part, double whole) { return whole > 0 ? fmt::format("{:.1f} %", 100.0 * part / whole) : "-"; }

std::string bytes_text(std::int64_t b) {
  if (b >= 1'000'000'000) return fmt::format("{:.2f} GB", static_cast<double>(b) / 1e9);
  if (b >= 1'000'000) return fmt::format("{:.2f} MB", static_cast<double>(b) / 1e6);
  if (b >= 1'000) return fmt::format("{:.1f} kB", static_cast<double>(b) / 1e3);
  return fmt::format("{} B", b);
}

void add_row(TextTable& t, const analyze::RankAnalysis& r, const std::string& label) {
  const auto& m = r.mean;
  if (!r.has_gpu) {
    t.add_row({label, std::to_string(r.steps.size()), f2(m.step_ms), "-", "-", "-", "-", "-",
               fmt::format("{:.1f}", m.host_syncs), "-"});
    return;
  }
  const auto ov = m.overlap_fraction();
  t.add_row({label, std::to_string(r.steps.size()), f2(m.step_ms), pct(m.gpu_busy_ms, m.step_ms), f2(m.compute_ms),
             f2(m.comm_ms), ov ? fmt::format("{:.1f} %", 100.0 * *ov) : "-", f2(m.exposed_comm_ms),
             fmt::format("{:.1f}", m.host_syncs), f2(m.comm_wait_ms)});
}

}  // namespace

std::string render_trace_report(const analyze::TraceAnalysis& a, bool list_file_errors) {
  std::string out;
  const std::size_t gpu_ranks =
      static_cast<std::size_t>(std::count_if(a.ranks.begin(), a.ranks.end(), [](const auto& r) { return r.has_gpu; }));
  // CPU ranks (a gloo job's) are described in CPU words: their "GPU" figures are the CPU's operators.
  const bool cpu = !a.ranks.empty() && std::all_of(a.ranks.begin(), a.ranks.end(), [](const auto& r) { return r.cpu_ranks; });
  out += fmt::format("traces: {} rank{} analysed ({}){}{}\n", a.ranks.size(), a.ranks.size() == 1 ? "" : "s",
                     cpu ? "CPU ranks: compute is the CPU's operators" : fmt::format("{} with GPU activity", gpu_ranks),
                     a.world_size ? fmt::format(", world size {}", *a.world_size) : "",
                     a.errors.empty() ? "" : fmt::format(", {} file{} failed", a.errors.size(), a.errors.size() == 1 ? "" : "s"));
  std::map<std::string, int> windows;  // how each rank's steps were drawn
  for (const auto& r : a.ranks) ++windows[r.step_windows];
  if (a.baseline) ++windows[a.baseline->step_windows];
  if (!windows.empty()) {
    std::string w;
    for (const auto& [how, n] : windows)
      w += fmt::format("{}{}{}", w.empty() ? "" : "; ", how, windows.size() > 1 ? fmt::format(" ({} traces)", n) : "");
    out += "steps: " + w + "\n";
  }
  if (gpu_ranks >= 2) {
    out += fmt::format("clocks: {}\n", a.cross.alignment);
    out += fmt::format("collectives matched across ranks: {} (by {}), {} unmatched\n", a.cross.matched,
                       a.cross.matching.empty() ? "-" : a.cross.matching, a.cross.unmatched);
  }
  if (!a.ranks.empty() || a.baseline) {
    out += '\n';
    TextTable t({"rank", "steps", "step ms", cpu ? "busy" : "GPU busy", "compute ms", "comm ms", "overlap", "exposed comm ms",
                 "host syncs", "straggler wait ms"});
    if (a.baseline) add_row(t, *a.baseline, "baseline");
    for (const auto& r : a.ranks) add_row(t, r, std::to_string(r.rank));
    out += t.render();
    out += "(means per step; host syncs: synchronisation points per step; straggler wait: time the rank's "
           "collectives wait for the last rank to arrive)\n";
  }
  bool header = false;
  for (const auto& r : a.ranks) {
    if (!r.has_gpu) continue;
    const auto& w = r.waterfall;
    if (!header) {
      out += fmt::format("\nwhere the step time beyond the ideal went (ms per step; ideal: {}):\n", w.ideal_source);
      header = true;
    }
    out += fmt::format("  rank {}: measured {} vs ideal {} = {:+.2f}:", r.rank, f2(w.measured_ms), f2(w.ideal_ms), w.loss_ms());
    if (a.baseline) out += fmt::format(" compute {:+.2f},", w.compute_ms);
    out += fmt::format(" exposed comm {:+.2f}, straggler wait {:+.2f}, data wait {:+.2f}, host sync {:+.2f}, other {:+.2f}\n",
                       w.exposed_comm_ms, w.straggler_wait_ms, w.data_wait_ms, w.host_sync_ms, w.other_ms);
  }
  // The largest collectives of the first rank with any.
  for (const auto& r : a.ranks) {
    if (r.collectives.empty()) continue;
    out += fmt::format("\ncollectives of rank {} (largest total time first; busbw in GB/s, nccl-tests' definition):\n", r.rank);
    TextTable t({"collective", "group", "size", "dtype", "count", "total ms", "busbw", "busbw after wait"});
    for (std::size_t i = 0; i < r.collectives.size() && i < 8; ++i) {
      const auto& c = r.collectives[i];
      t.add_row({c.collective, c.process_group, c.bytes ? bytes_text(*c.bytes) : "-", c.dtype.empty() ? "-" : c.dtype,
                 std::to_string(c.count), fmt::format("{:.3f}", c.total_us / 1e3),
                 c.busbw_gbps ? f2(*c.busbw_gbps) : "-", c.busbw_after_wait_gbps ? f2(*c.busbw_after_wait_gbps) : "-"});
    }
    out += t.render();
    if (r.collectives.size() > 8) out += fmt::format("({} more groups in the JSON output)\n", r.collectives.size() - 8);
    break;
  }
  // The kernels that take the GPU time, on the first rank with any (Nsight Systems' kernel summary).
  for (const auto& r : a.ranks) {
    if (r.kernels.empty()) continue;
    out += cpu ? fmt::format("\noperators of rank {} (largest time first, per step):\n", r.rank)
               : fmt::format("\nkernels of rank {} (largest GPU time first, per step):\n", r.rank);
    TextTable t({cpu ? "operator" : "kernel", "kind", "calls/step", "mean µs", "ms per step", "share"});
    for (std::size_t i = 0; i < r.kernels.size() && i < 10; ++i) {
      const auto& k = r.kernels[i];
      t.add_row({terminal_text(k.name, 60), k.comm ? "comm" : "compute", fmt::format("{:.1f}", k.per_step_count),
                 fmt::format("{:.1f}", k.mean_us),
                 fmt::format("{:.3f}", k.per_step_ms), fmt::format("{:.1f} %", 100.0 * k.share)});
    }
    out += t.render();
    if (r.kernels.size() > 10)
      out += fmt::format("({} {} names in all; the JSON output lists the {} largest)\n", r.kernels.size(), cpu ? "operator" : "kernel",
                         std::min<std::size_t>(r.kernels.size(), analyze::kMaxKernelsInJson));
    if (a.baseline && !a.baseline->kernels.empty()) {  // which kernels make the waterfall's "compute" part
      out += fmt::format("\nkernels of rank {} beside the 1-rank baseline (ms per step, largest change first):\n", r.rank);
      TextTable d({"kernel", "kind", "baseline", "rank", "change"});
      const auto deltas = analyze::kernel_deltas(r, *a.baseline);
      for (std::size_t i = 0; i < deltas.size() && i < 8; ++i) {
        const auto& k = deltas[i];
        d.add_row({terminal_text(k.name, 60), k.comm ? "comm" : "compute",
                   fmt::format("{:.3f}", k.baseline_ms), fmt::format("{:.3f}", k.rank_ms),
                   fmt::format("{:+.3f}", k.delta_ms())});
      }
      out += d.render();
      out += fmt::format("idle between compute kernels, all streams (launch gaps, waits for communication): {:.3f} ms "
                         "per step in the baseline, {:.3f} on rank {} ({:+.3f}); of it with the whole GPU idle: {:.3f} "
                         "and {:.3f} ({:+.3f})\n",
                         a.baseline->mean.launch_gap_ms, r.mean.launch_gap_ms, r.rank,
                         r.mean.launch_gap_ms - a.baseline->mean.launch_gap_ms, a.baseline->mean.launch_gap_idle_ms,
                         r.mean.launch_gap_idle_ms, r.mean.launch_gap_idle_ms - a.baseline->mean.launch_gap_idle_ms);
      // The same idle as kernel boundaries: how many per step, and what a typical one costs (its median), which
      // tells more kernels apart from longer boundaries.
      out += fmt::format("kernel boundaries: {:.1f} gaps per step in the baseline, median {:.2f} µs; {:.1f} on rank {}, "
                         "median {:.2f} µs ({:+.2f})\n",
                         a.baseline->mean.launch_gaps, a.baseline->launch_gaps.p50_us, r.mean.launch_gaps, r.rank,
                         r.launch_gaps.p50_us, r.launch_gaps.p50_us - a.baseline->launch_gaps.p50_us);
    }
    break;
  }
  // Compute slowed beside communication, on the rank where it slowed most (the one a finding names).
  const analyze::RankAnalysis* slowed = nullptr;
  for (const auto& r : a.ranks)
    if (r.interference && r.interference->calls_with_reference + r.interference->calls_without_reference > 0 &&
        (!slowed || r.interference->slowdown_ms > slowed->interference->slowdown_ms))
      slowed = &r;
  if (slowed && !cpu) {  // (CPU ranks: no kernels beside communication on a GPU)
    const auto& c = *slowed->interference;
    out += fmt::format("\ncompute kernels beside communication on rank {} (ms per step; slowdown: against the kernel's "
                       "median alone, at most the overlap):\n",
                       slowed->rank);
    if (!c.kernels.empty()) {
      TextTable t({"kernel", "launch", "calls/step", "overlap ms", "slowdown ms", "of overlap", "alone µs", "from"});
      for (std::size_t i = 0; i < c.kernels.size() && i < 6; ++i) {
        const auto& k = c.kernels[i];
        t.add_row({terminal_text(k.name, 50), k.launch.empty() ? "-" : terminal_text(k.launch, 40),
                   fmt::format("{:.1f}", k.calls_per_step), fmt::format("{:.3f}", k.overlap_ms),
                   fmt::format("{:+.3f}", k.slowdown_ms), fmt::format("{:.2f}", k.slowdown_per_overlap()),
                   fmt::format("{:.1f}", k.reference_us), k.reference});
      }
      out += t.render();
      if (c.kernels.size() > 6)
        out += fmt::format("({} kernels with a reference in all; the JSON output lists up to {})\n", c.kernels.size(),
                           analyze::kMaxKernelsInJson);
    }
    out += fmt::format("with a reference: {:.1f} calls per step overlap communication for {:.3f} ms and slow by {:+.3f} ms "
                       "({:.2f} per ms of overlap",
                       c.calls_with_reference, c.overlap_ms, c.slowdown_ms, c.slowdown_per_overlap());
    if (c.slowdown_vs_baseline_ms != 0)
      out += fmt::format("; {:+.3f} ms of it measured against the baseline, so it also includes what running on more "
                         "ranks costs without communication",
                         c.slowdown_vs_baseline_ms);
    out += ")";
    if (c.calls_without_reference > 0)
      out += fmt::format("; without one: {:.1f} calls per step overlapping for {:.3f} ms (fewer than {} calls without "
                         "communication beside them, calls of several shapes under one name, or no name{})",
                         c.calls_without_reference, c.overlap_without_reference_ms,
                         analyze::CommInterference::kMinReferenceCalls,
                         a.baseline ? "" : "; --baseline with a 1-rank trace can give them one");
    out += '\n';
  }
  if (a.verdict) {
    out += fmt::format("\nverdict: {}", diagnose::to_string(a.verdict->verdict));
    for (std::size_t i = 0; i < a.verdict->reasons.size(); ++i)
      out += (i == 0 ? " — " : "; ") + a.verdict->reasons[i];
    if (a.metrics)
      out += fmt::format("\n  speedup {:.2f}, efficiency {:.1f} %, comm ratio {:.1f} %", a.metrics->speedup,
                         100.0 * a.metrics->efficiency, 100.0 * a.metrics->comm_ratio);
    out += '\n';
  } else if (!a.verdict_note.empty()) {
    out += "\nverdict: - (" + a.verdict_note + ")\n";
  }
  if (!a.findings.empty()) {
    out += "\nfindings:\n";
    for (const auto& f : a.findings) out += fmt::format("  [{}] {}\n", f.severity, f.text);
  }
  // What the reader and the analysis skipped or assumed, per rank (the JSON has them all).
  bool warned = false;
  auto warnings_of = [&](const analyze::RankAnalysis& r, const std::string& who) {
    if (r.warnings.empty()) return;
    if (!warned) out += "\nwarnings:\n";
    warned = true;
    for (std::size_t i = 0; i < r.warnings.size() && i < 5; ++i)
      out += fmt::format("  {}: {}\n", who, terminal_text(r.warnings[i], 300));
    if (r.warnings.size() > 5) out += fmt::format("  {}: … {} more in the JSON output\n", who, r.warnings.size() - 5);
  };
  for (const auto& r : a.ranks) warnings_of(r, fmt::format("rank {}", r.rank));
  if (a.baseline) warnings_of(*a.baseline, "baseline");
  if (!a.cross.notes.empty()) {
    out += "\nnotes:\n";
    for (const auto& n : a.cross.notes) out += "  " + n + "\n";
  }
  if (!a.errors.empty() && list_file_errors) {
    out += "\nfiles not analysed:\n";
    for (const auto& e : a.errors) out += fmt::format("  {}\n    {}\n", e.cause, e.remedy);
  }
  return out;
}

}  // namespace scalescope::report
