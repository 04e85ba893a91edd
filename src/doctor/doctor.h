#pragma once
// `scalescope doctor`: the expert's by-hand scaling check in one call. Trains the same workload at world
// size 1, 2, 4 … up to every GPU (or core), computes speedup, efficiency, comm ratio and overlap against
// the 1-rank run, and gives the seed's verdict.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/trace_analysis.h"
#include "core/scaling.h"
#include "diagnose/verdict.h"
#include "train/job.h"

namespace scalescope::doctor {

struct DoctorConfig {
  /// The workload; its world_size is replaced by each entry of world_sizes.
  train::TrainJobConfig job;
  /// World sizes to run, ascending, starting at 1. Empty: default_world_sizes(devices).
  std::vector<int> world_sizes;
  /// GPU: "" or a directory; each world size N then also records a round kernel by kernel (train
  /// --kernel-trace) into DIR/n<N>, and each N ≥ 2 gets a KernelBreakdown against N = 1.
  std::string kernel_trace_dir;
};

/// What rank 0's kernel traces say about the "compute" part of world size N's scaling loss beside world size 1:
/// the kernels whose GPU time per step changed most, and the idle time between compute kernels on any stream
/// (launch latency, waits for communication). ms per step, from analyze::analyze_trace_files and kernel_deltas.
struct KernelBreakdown {
  int world_size = 0;
  double compute_kernels_delta_ms = 0;  ///< Σ over compute kernels of (time at N − time at 1)
  double comm_kernels_ms = 0;           ///< NCCL kernel time at N
  double gaps_baseline_ms = 0;          ///< idle between compute kernels (all streams) at N = 1
  double gaps_ms = 0;                   ///< the same at N
  double gaps_idle_baseline_ms = 0;     ///< the part of those gaps with no GPU work at all, at N = 1
  double gaps_idle_ms = 0;              ///< the same at N (launch latency, not waits for communication)
  double boundaries_baseline = 0;       ///< those gaps per step at N = 1 (count: about the kernels per step)
  double boundaries = 0;                ///< the same at N
  double boundary_median_baseline_us = 0;  ///< the median gap at N = 1, µs: what one kernel boundary costs
  double boundary_median_us = 0;           ///< the same at N
  std::vector<analyze::KernelDelta> top;  ///< up to 5 compute kernels, largest |change| first
  double step_ms = 0;                     ///< the traced step at N (the trace's own step windows)
  /// Compute kernels slowed beside NCCL's at N (analyze::CommInterference); nullopt without NCCL kernels.
  std::optional<analyze::CommInterference> interference;
};

/// Reads DIR/n1/rank0.json (the baseline) and DIR/n<N>/rank0.json, as `train --kernel-trace` writes them. Throws
/// core::Error naming the file when either is missing or cannot be analysed.
KernelBreakdown kernel_breakdown(const std::string& dir, int world_size);

/// 1, 2, 4, … up to `devices`, plus `devices` itself when it is not a power of two. Throws core::Error
/// when devices < 1.
std::vector<int> default_world_sizes(int devices);

/// Throws core::UsageError unless `sizes` starts at 1 and ascends without repeats (what run_doctor needs: every
/// metric compares against one rank). For the CLI to check --world-sizes before it probes anything.
void check_world_sizes(const std::vector<int>& sizes);

/// Where the step time beyond perfect scaling went, per step in seconds. The ideal step is the 1-rank step
/// (weak scaling: same work per rank) or the 1-rank step / N (strong scaling). The parts add up to
/// measured − ideal: exposed communication beyond the 1-rank run's, compute slower than ideal (contention for
/// cores, memory bandwidth or the GPU; smaller per-rank GEMMs in strong scaling), more data wait, and the
/// rest (launch gaps, waiting for a straggler outside the all-reduce, host overhead).
struct ScalingLoss {
  double ideal = 0;
  double measured = 0;
  double exposed_comm = 0;
  double compute = 0;
  double data_wait = 0;
  double other = 0;
  double total() const { return measured - ideal; }
};

/// The breakdown of `sample` against `baseline` (world size 1), from their mean phase times; `measured`
/// is the headline step time (wall clock). Throws core::Error if baseline is not world size 1.
ScalingLoss scaling_loss(core::ScalingMode mode, const train::TrainResult& baseline, const train::TrainResult& sample);

/// One world size: the measured result and its metrics against world size 1.
struct DoctorPoint {
  train::TrainResult result;
  core::ScalingMetrics metrics;
  ScalingLoss loss;
  std::optional<diagnose::VerdictFinding> verdict;  ///< none at world size 1
  std::optional<KernelBreakdown> kernels;           ///< with DoctorConfig::kernel_trace_dir, N ≥ 2
};

struct DoctorReport {
  static constexpr const char* kSchema = "scalescope.doctor/1";
  std::string backend;           ///< "cpu" or "gpu"
  int devices = 0;               ///< GPUs visible, or CPU cores
  int max_world_size = 0;        ///< largest world size of the sweep
  core::ScalingMode mode = core::ScalingMode::weak;
  std::vector<DoctorPoint> points;
  std::optional<diagnose::VerdictFinding> verdict;  ///< worst over world sizes ≥ 2
  std::vector<std::string> notes;                   ///< observations worth a line each
  std::string failure;           ///< non-empty when a world size failed: the runs before it are kept
  bool complete() const { return failure.empty(); }
};

/// Runs every world size in order (each through train::launch_job). A failing world size stops the sweep:
/// its error goes to report.failure and the points measured so far are kept. `progress(index, count, what)`
/// is called as world size `index` of `count` (from 0) starts, and with index == count at the end. Throws core::Error only for a bad configuration (nothing measured).
/// `devices`: GPUs visible or CPU cores found; `max_world_size`: the largest world size of the default sweep
/// (≤ devices for GPUs; CPU ranks may oversubscribe).
DoctorReport run_doctor(const DoctorConfig& config, int devices, int max_world_size,
                        const std::function<void(std::size_t index, std::size_t count, const std::string& what)>& progress);

/// Overlap rule of issue #2, checked per world size ≥ 2: when backward compute takes at least twice the
/// all-reduce time, exposed communication should stay under 10 % of the all-reduce time. Returns a note
/// when the premise holds (passed or not), nothing otherwise.
std::optional<std::string> overlap_note(const train::TrainResult& result);

/// Step-to-step stability: when the slowest rank's per-step time (CUDA events or steady clock, every timed step)
/// has a p95 above kStallingStepRatio × its median, some steps stall — a rank paused (host work between steps,
/// another process, a page-in), which the headline (mean of the middle 3 rounds) does not hide. Returns a note
/// naming both figures, nothing otherwise (or with fewer than 10 steps).
std::optional<std::string> step_stall_note(const train::TrainResult& result);

/// Kernel boundaries beside one rank (doctor --kernel-trace): when the median gap between compute kernels grew by
/// at least kBoundaryGrowthUs over at least kMinBoundaries boundaries per step, a note with both medians, the
/// count and their product (≈ ms per step the longer boundaries cost): the part of the "compute" loss that no
/// kernel's own time shows (measured on 2 × H200: gpt2-124m 2.66 → 4.00 µs × 765, bench/RESULTS.md 2026-11-30).
/// Nothing otherwise.
std::optional<std::string> boundary_note(const KernelBreakdown& kernels);
/// Thresholds of boundary_note (judgements, not measured run-to-run spreads): growth ≥ 0.5 µs is about half of
/// what 2 × H200 showed for gpt2-124m; ≥ 100 boundaries per step is where fewer kernels could matter.
inline constexpr double kBoundaryGrowthUs = 0.5;
inline constexpr double kMinBoundaries = 100;

/// Compute beside communication (doctor --kernel-trace): when compute kernels of rank 0 ran at least
/// analyze::CommInterference::kFindingShare of its traced step longer while NCCL's kernels ran beside them, a note
/// with analyze::interference_text — the part of the "compute" loss that overlap itself costs (measured on
/// 2 × H200, gpt2-124m: 0.52 ms per step on rank 0, one GEMM per block slowed by 0.91 of its overlap;
/// bench/RESULTS.md 2026-11-30, third session, call 6). Nothing otherwise.
std::optional<std::string> interference_note(const KernelBreakdown& kernels);

/// p95 / median of the per-step times above which step_stall_note speaks (a judgement: steady GPU steps stay
/// within a few %, e.g. gpt2-124m on H200 p95/median 1.005; the unsynchronised rounds fixed in e807b34 gave 3–7).
inline constexpr double kStallingStepRatio = 1.25;

void to_json(nlohmann::json& j, const ScalingLoss& loss);
void to_json(nlohmann::json& j, const KernelBreakdown& k);
void to_json(nlohmann::json& j, const DoctorReport& report);

}  // namespace scalescope::doctor
