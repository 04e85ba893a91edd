// The trace analysis's findings (trace_analysis_internal.h's add_findings): the straggler and whom it waits for,
// low overlap, exposed communication, data and host waits, a baseline that is not GPU-bound, ranks left out.

#include "analysis/trace_analysis_internal.h"

#include <map>

namespace scalescope::analyze::trace_analysis_internal {
namespace {

/// GPU busy share below which a 1-rank baseline counts as CPU- or launch-bound (a judgement, not a published
/// threshold: a GPU-bound training step keeps its GPU ≥ 90 % busy, e.g. 97.6 % for gpt-1.3b on H200 in RESULTS).
constexpr double kBusyBaselineShare = 0.85;

}  // namespace

void add_findings(TraceAnalysis& a) {
  auto add_f = [&](std::string sev, std::string text) { a.findings.push_back({std::move(sev), std::move(text)}); };
  const std::vector<RankAnalysis>& R = a.ranks;
  // Straggler: the rank that waits most, and who it waits for.
  if (a.cross.straggler) {
    const RankAnalysis* waiter = nullptr;
    for (const auto& r : R)
      if (r.rank != *a.cross.straggler && r.has_gpu && (!waiter || r.mean.comm_wait_ms > waiter->mean.comm_wait_ms))
        waiter = &r;
    if (waiter && waiter->mean.comm_wait_ms > 0 && waiter->mean.step_ms > 0) {
      const double share = waiter->mean.comm_wait_ms / waiter->mean.step_ms;
      if (share >= 0.01)
        add_f(share >= 0.05 ? "problem" : "warning",
              fmt::format("rank {} waits {:.2f} ms per step for the others: rank {} is the straggler (it starts its "
                          "collectives {:.2f} ms per step after the first rank; {:.2f} ms per step of the wait is "
                          "exposed)",
                          waiter->rank, waiter->mean.comm_wait_ms, *a.cross.straggler,
                          a.cross.straggler_late_ms_per_step, waiter->mean.straggler_wait_ms));
    }
  }
  // One finding per kind of loss, naming the worst rank and how many ranks share it.
  auto share_finding = [&](double threshold, double problem_share, auto value_of, auto text_of) {
    std::vector<const RankAnalysis*> hit;
    const RankAnalysis* worst = nullptr;
    for (const auto& r : R) {
      if (!r.has_gpu || r.mean.step_ms <= 0) continue;
      const double share = value_of(r) / r.mean.step_ms;
      if (share < threshold) continue;
      hit.push_back(&r);
      if (!worst || share > value_of(*worst) / worst->mean.step_ms) worst = &r;
    }
    if (!worst) return;
    const double share = value_of(*worst) / worst->mean.step_ms;
    std::string who = hit.size() == 1 ? fmt::format("rank {}", worst->rank)
                                      : fmt::format("{} of {} ranks (worst: rank {})", hit.size(), R.size(), worst->rank);
    add_f(share >= problem_share ? "problem" : "warning", who + ": " + text_of(*worst));
  };
  share_finding(0.10, 0.30, [](const RankAnalysis& r) { return r.mean.exposed_comm_ms - r.mean.straggler_wait_ms; },
                [](const RankAnalysis& r) {
                  const double x = r.mean.exposed_comm_ms - r.mean.straggler_wait_ms;
                  const auto ov = r.mean.overlap_fraction();
                  return fmt::format("exposed communication is {} of the step ({:.2f} ms per step; overlap {}): "
                                     "bucket sizes / overlap — larger DDP buckets (bucket_cap_mb), all-reduce started "
                                     "during backward, fewer and larger collectives",
                                     pct(x, r.mean.step_ms), x, ov ? pct(*ov, 1) : std::string("-"));
                });
  share_finding(0.01, 0.10, [](const RankAnalysis& r) { return r.mean.host_syncs >= 1 ? r.mean.host_sync_ms : 0.0; },
                [](const RankAnalysis& r) {
                  const std::string what = r.host_syncs.empty() ? std::string() : " (mostly " + r.host_syncs.front().label + ")";
                  return fmt::format("{:.1f} host syncs per step{} cost {:.2f} ms of GPU idle per step ({} of the "
                                     "step): avoid .item()/.cpu() and blocking copies inside the step",
                                     r.mean.host_syncs, what, r.mean.host_sync_ms, pct(r.mean.host_sync_ms, r.mean.step_ms));
                });
  // Overlap is not free: compute slowed beside communication (counted as compute, not as exposed communication).
  share_finding(CommInterference::kFindingShare, CommInterference::kProblemShare,
                [](const RankAnalysis& r) { return r.interference ? std::max(0.0, r.interference->slowdown_ms) : 0.0; },
                [](const RankAnalysis& r) { return interference_text(*r.interference, r.mean.step_ms); });
  share_finding(0.05, 0.20, [](const RankAnalysis& r) { return r.mean.data_wait_ms; }, [](const RankAnalysis& r) {
    return fmt::format("data wait is {} of the step ({:.2f} ms per step): more DataLoader workers, pin_memory=True and "
                       "non_blocking copies, prefetching",
                       pct(r.mean.data_wait_ms, r.mean.step_ms), r.mean.data_wait_ms);
  });
  share_finding(0.10, 0.30, [](const RankAnalysis& r) { return r.mean.other_ms; }, [](const RankAnalysis& r) {
    return fmt::format("the GPU idles {} of the step outside communication, data loading and syncs ({:.2f} ms per "
                       "step; {:.0f} launch gaps per step between compute kernels, p95 {:.1f} µs): launch-bound or "
                       "CPU-bound — CUDA graphs, torch.compile, larger batches, less Python per step",
                       pct(r.mean.other_ms, r.mean.step_ms), r.mean.other_ms, r.mean.launch_gaps, r.launch_gaps.p95_us);
  });
  // A baseline whose GPU idles is CPU- or launch-bound (the profiler's own per-operator cost can make it so):
  // the speedup against it then measures the host as much as the GPUs.
  if (a.baseline && a.baseline->has_gpu && a.metrics && a.baseline->mean.step_ms > 0) {
    const double busy = a.baseline->mean.gpu_busy_ms / a.baseline->mean.step_ms;
    if (busy < kBusyBaselineShare)
      add_f("warning",
            fmt::format("the 1-rank baseline's GPU was busy only {} of its steps{}: that run was CPU- or "
                        "launch-bound (profiling adds CPU time to every operator), so the speedup {:.2f} against it "
                        "says as much about the host as about the GPUs — compare unprofiled step times (scalescope "
                        "doctor, or the job's own timer)",
                        pct(busy, 1),
                        a.baseline->mean.launch_gaps >= 1
                            ? fmt::format(" ({:.0f} launch gaps per step)", a.baseline->mean.launch_gaps)
                            : std::string(),
                        a.metrics->speedup));
  }
  for (const auto& r : R)
    if (!r.has_gpu)
      add_f("info", fmt::format("rank {} has no GPU activity{}: a CPU-only rank, its GPU figures are absent", r.rank,
                                r.backend.empty() ? "" : " (backend " + r.backend + ")"));
  if (a.metrics && a.world_size)
    for (const auto& near : diagnose::near_thresholds(*a.world_size, a.metrics->speedup, a.metrics->comm_ratio))
      add_f("info", near + ": another run could get another verdict; compare several steps or runs before acting");
  if (a.world_size && *a.world_size > static_cast<int>(R.size()) && R.size() >= 1)
    add_f("info", fmt::format("{} of {} ranks analysed: waits and the straggler are among these ranks only", R.size(),
                              *a.world_size));
}

}  // namespace scalescope::analyze::trace_analysis_internal
