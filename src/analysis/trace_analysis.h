#pragma once
// Where the time of a data-parallel training step goes, from PyTorch profiler (Kineto) traces of its ranks:
// per rank and step, GPU busy/idle, compute, communication and copies, overlap, exposed communication, launch
// gaps, host synchronisation; across ranks, the matching of each collective, clock alignment, wait times and the
// straggler; against an optional 1-rank baseline, the seed's verdict; and a scaling-loss waterfall per rank that
// adds up exactly to the measured loss. Pure functions over the events trace_reader keeps.
//
// Units: times in the public records are milliseconds (suffix _ms) or microseconds (_us); bytes are bytes;
// bandwidths are GB/s with GB = 1e9 bytes. Internally everything is integer nanoseconds, so sums are exact.
//
// Definitions (all over one step's time window W = [start, end): by default from the first GPU activity launched
// in ProfilerStep#N to the first launched in step N+1, else the annotation's CPU range, see StepWindows; GPU
// intervals are clipped to W, so a kernel launched in step N that runs into step N+1 counts where it runs):
//  - C = union of compute-kernel intervals (every kernel that is not communication), M = union of communication
//    kernels (NCCL kernels by name: ncclKernel_*, ncclDevKernel_* including the 2.17+ ncclDevKernel_AllReduce_
//    Sum_f32_RING_LL style, or any kernel carrying "Collective name"), Y = union of copies and memsets;
//  - GPU busy = |C ∪ M ∪ Y|, idle = |W| − busy;
//  - overlap = |C ∩ M| / |M| (the share of communication time during which compute runs; HTA's
//    "communication computation overlap" uses the same intersection idea);
//  - exposed communication = |M \ C|;
//  - straggler wait = the part of exposed communication during which this rank's collective had started but the
//    last rank of the same collective had not (see CrossRankAnalysis);
//  - data wait = exposed host-to-device copies |H \ (C ∪ M)| plus GPU idle time while the CPU is inside a data
//    loader range (an annotation whose name contains "DataLoader", e.g. enumerate(DataLoader)#…__next__);
//  - host sync = GPU idle gaps (outside data loading) in which a host synchronisation call returned: the GPU
//    drained its queue because the CPU waited for it, then sat idle until the CPU launched again;
//  - other = the rest of the idle time (launch gaps, CPU overhead) plus exposed copies other than
//    host-to-device.
// Then |W| = |C| + exposed comm + data wait + host sync + other exactly, and the waterfall's loss
// (step − ideal) is the sum of its parts: without a baseline the ideal is the rank's compute time |C|, with a
// 1-rank baseline it is the baseline's step time, and each part is the difference from the baseline's part
// (plus "compute": |C| − baseline |C|), as doctor::ScalingLoss does for live runs.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "readers/trace/trace_reader.h"
#include "comm/collectives.h"
#include "core/scaling.h"
#include "diagnose/verdict.h"

namespace scalescope::analyze {

/// How ranks' clocks are put on one time axis before waits are measured.
enum class ClockAlignment {
  /// baseTimeNanoseconds when every trace has it (else the timestamps as written), then refined by the ends of
  /// matched collectives (see CrossRankAnalysis::alignment). The default.
  auto_,
  /// baseTimeNanoseconds when every trace has it, else the timestamps as written; no refinement.
  base_time,
  /// The timestamps as written (older Kineto traces are in unix-epoch µs, so hosts' NTP offsets remain).
  none,
};

/// What time window one training step is.
enum class StepWindows {
  /// The default. GPU side: step N runs from the first GPU activity launched inside the ProfilerStep#N CPU range
  /// (kernel, copy or memset, linked to its launch call by "correlation") to the first one launched in step N+1;
  /// the last step ends with the end of its last GPU activity. A CPU that runs ahead of its GPU (a loop without
  /// host synchronisation) then neither shortens nor shifts the steps. A rank falls back to `annotation` when a
  /// step launched no GPU work or its trace links no activity to a launch (a warning says so).
  gpu_launches,
  /// The CPU range of the ProfilerStep#N annotation itself (HTA's temporal breakdown uses it).
  annotation,
};

/// Options of the analysis.
struct TraceOptions {
  /// A trace of the same job on one rank: enables the verdict and makes the waterfall's ideal the baseline's
  /// step time.
  std::optional<std::string> baseline_path;
  /// Weak scaling (per-rank batch fixed) or strong (global batch fixed): how speedup is computed.
  core::ScalingMode mode = core::ScalingMode::weak;
  ClockAlignment alignment = ClockAlignment::auto_;
  StepWindows step_windows = StepWindows::gpu_launches;
  /// Keep what the merged timeline needs (TraceAnalysis::timelines) for write_merged_timeline().
  bool keep_timeline = false;
  /// Reader options for every file.
  TraceReadOptions read;
};

/// Per-step figures of one rank (or their mean over steps). Times in ms.
struct StepMetrics {
  std::string name;            ///< "ProfilerStep#12", or "whole trace"
  std::int64_t number = -1;    ///< N of ProfilerStep#N, -1 for the whole trace
  double start_ms = 0;         ///< window start on the rank's own clock (trace ts / 1000)
  double step_ms = 0;          ///< window length
  double gpu_busy_ms = 0;      ///< |C ∪ M ∪ Y|
  double gpu_idle_ms = 0;      ///< step − busy
  double compute_ms = 0;       ///< |C|
  double comm_ms = 0;          ///< |M|
  double memcpy_ms = 0;        ///< |Y| (copies and memsets)
  double overlap_ms = 0;       ///< |C ∩ M|
  double exposed_comm_ms = 0;  ///< |M \ C| (straggler wait included)
  double straggler_wait_ms = 0;    ///< exposed communication spent waiting for the last rank
  double data_wait_ms = 0;         ///< exposed host-to-device copies + idle during data loading
  double host_sync_ms = 0;         ///< GPU idle caused by host synchronisation
  double other_ms = 0;             ///< the rest of the idle time and exposed other copies
  double host_syncs = 0;           ///< host synchronisation points (count; a mean in RankAnalysis::mean)
  double host_sync_blocked_ms = 0; ///< CPU time blocked in them
  /// Idle gaps between consecutive compute kernels, all streams merged (count): no compute kernel runs on any
  /// stream (a CUDA graph spreads one stream's kernels over several, so a single stream's gaps would include them).
  double launch_gaps = 0;
  double launch_gap_ms = 0;        ///< their total length
  double launch_gap_idle_ms = 0;   ///< the part of them in which no GPU work at all runs (not waits for comm)
  double collectives = 0;          ///< communication kernels that start in the window (count)
  double comm_late_ms = 0;         ///< Σ start − earliest start of matched collectives (this rank's lateness)
  double comm_wait_ms = 0;         ///< Σ latest start − start of matched collectives (time waiting for others)
  /// Share of communication time overlapped by compute, |C ∩ M| / |M|; nullopt when there is no communication.
  std::optional<double> overlap_fraction() const;
};

/// Where the time beyond the ideal went, per step (mean over steps), ms. The parts add up to measured − ideal.
struct Waterfall {
  double measured_ms = 0;   ///< mean step time
  double ideal_ms = 0;      ///< baseline step time, or the rank's compute time
  std::string ideal_source; ///< "1-rank baseline step" or "the rank's own compute time, as no baseline was given"
  double compute_ms = 0;    ///< compute beyond the baseline's (0 without a baseline)
  double exposed_comm_ms = 0;
  double straggler_wait_ms = 0;
  double data_wait_ms = 0;
  double host_sync_ms = 0;
  double other_ms = 0;
  double loss_ms() const { return measured_ms - ideal_ms; }
  /// compute + exposed comm + straggler wait + data wait + host sync + other; equals loss_ms() up to rounding.
  double parts_ms() const;
};

/// Host synchronisation points of one kind on one rank, over all steps.
struct HostSyncGroup {
  std::string label;          ///< "aten::item", "blocking copy (cudaMemcpyAsync + sync)", "cudaDeviceSynchronize"…
  std::int64_t count = 0;
  double blocked_ms = 0;      ///< CPU time inside the synchronising calls
  double gpu_idle_ms = 0;     ///< GPU idle time attributed to them (the gap each one left)
};

/// Idle gaps between consecutive compute kernels (all streams merged), over all steps.
struct LaunchGapSummary {
  std::int64_t count = 0;
  double total_ms = 0;
  double p50_us = 0;
  double p95_us = 0;
  double max_us = 0;
};

/// Collectives of one kind and size on one rank: count, time and bus bandwidth.
/// busbw = size / time × factor (nccl-tests doc/PERFORMANCE.md: all-reduce 2(n−1)/n, all-gather, reduce-scatter
/// and all-to-all (n−1)/n, broadcast, reduce and send/recv 1), GB = 1e9 bytes; size counts as nccl-tests' "size"
/// column does: the buffer for all-reduce/broadcast/reduce, the whole output for all-gather, the whole input for
/// reduce-scatter and all-to-all.
struct CollectiveGroup {
  std::string collective;            ///< scalescope's name ("all_reduce"…) or the trace's when unknown
  std::string process_group;         ///< PG name, or "stream N" when the trace has no PG metadata
  std::optional<std::int64_t> bytes; ///< nccl-tests "size", bytes; nullopt when the trace gives no size
  std::string dtype;
  std::optional<std::int64_t> ranks; ///< n of the busbw factor (Group size, PG size or world size)
  std::int64_t count = 0;
  double total_us = 0;               ///< Σ kernel durations
  std::optional<double> busbw_gbps;  ///< from Σ bytes / Σ durations
  /// From Σ bytes / Σ (duration − wait for the last rank): the bandwidth once every rank has arrived;
  /// nullopt when no instance was matched across ranks.
  std::optional<double> busbw_after_wait_gbps;
  std::string size_source;           ///< "NCCL metadata", "annotation Input Dims", or "" when no size
};

/// The GPU kernels of one name on one rank over the analysed steps (Nsight Systems' "CUDA GPU Kernel Summary"):
/// where the compute time goes, kernel by kernel.
struct KernelGroup {
  std::string name;          ///< the kernel's name as the trace writes it
  bool comm = false;         ///< an NCCL kernel (is_nccl_kernel_name, or NCCL metadata on it)
  std::int64_t count = 0;    ///< instances that start inside the analysed steps
  double total_ms = 0;       ///< Σ durations
  double per_step_ms = 0;    ///< total / number of steps
  double per_step_count = 0; ///< count / number of steps
  double mean_us = 0;        ///< total / count
  double share = 0;          ///< of all kernel time of the rank in those steps, 0–1
};

/// One compute kernel (name and launch configuration) that ran beside communication kernels: see
/// CommInterference. Per-step figures are means over the analysed steps.
struct KernelInterference {
  std::string name;             ///< the kernel's name as the trace writes it
  std::string launch;           ///< "grid [x,y,z] block [x,y,z]", or "" when the trace has no launch configuration
  double calls_per_step = 0;    ///< calls overlapping communication, per step
  double overlap_ms = 0;        ///< their time beside communication kernels, ms per step
  double slowdown_ms = 0;       ///< Σ slowdown over them (see CommInterference), ms per step (negative: faster)
  double reference_us = 0;      ///< the kernel's median duration without communication beside it, µs
  std::string reference;        ///< "rank" (its own calls without overlap) or "baseline" (the 1-rank trace's calls)
  /// slowdown / overlap, −1 to 1: about the share of SMs communication takes for a kernel that spreads its work over
  /// the SMs it gets (0.12–0.26 measured on 2 × H200, where NCCL's 24 blocks hold 24 of 132 SMs); towards 1 for one
  /// whose blocks fill every SM in one wave and must wait for the SMs communication holds (0.59–0.91 measured for a
  /// cuBLASLt GEMM of 128 blocks on 132 SMs; bench/RESULTS.md, 2026-11-30, third session).
  double slowdown_per_overlap() const { return overlap_ms > 0 ? slowdown_ms / overlap_ms : 0; }
  /// Whether it slows by about its whole overlap: slowdown_per_overlap ≥ kAboutItsOverlap, with overlaps that are
  /// a real part of its calls (≥ kMinOverlapShare of the reference per call, so that a few µs of overlap and
  /// ordinary jitter do not qualify), for a kernel of at least kMinReferenceUs (calls of a few µs also slow by
  /// memory latency beside communication: HTA's A100 test traces show 3–6 µs elementwise kernels of one block
  /// at 0.58–0.64, where waiting for SMs cannot be the reason).
  bool slowed_by_about_its_overlap() const {
    return slowdown_per_overlap() >= kAboutItsOverlap && reference_us >= kMinReferenceUs && calls_per_step > 0 &&
           overlap_ms * 1e3 / calls_per_step >= kMinOverlapShare * reference_us;
  }
  /// Judgements between the measured ranges above: the largest ratio seen for kernels sharing SMs was 0.48 (small
  /// split-K GEMMs), the smallest for the one-wave GEMM 0.59 (a 100 µs kernel).
  static constexpr double kAboutItsOverlap = 0.55;
  static constexpr double kMinOverlapShare = 0.1;
  static constexpr double kMinReferenceUs = 20;
};

/// How much longer compute kernels ran while communication kernels ran beside them (sharing SMs, memory
/// bandwidth): overlap is not free. Each compute-kernel call that starts inside a step window and overlaps a
/// communication kernel of the device is compared with a reference: the median duration of the same kernel — same
/// name and, when the trace records them, the same grid and block — among the rank's own calls (inside the steps)
/// that overlap none (forward's calls of a backward kernel count), else among the 1-rank baseline's calls that
/// overlap none (same launch configuration, or by name alone when one of the two traces records none). Against the
/// baseline, a slowdown also holds what N ranks cost without communication beside the kernel (on 2 × H200 about
/// +1 %), so that part is given apart. A reference needs at least kMinReferenceCalls calls whose durations agree
/// ((p90 − p10) / median ≤ kMaxReferenceSpread: several shapes under one name are then refused, unless their
/// durations agree anyway, as a GEMM's k, which no grid shows, can make them); a kernel without one, or without a
/// name, is counted apart. A call's slowdown is its duration − reference, limited to ± its overlap: communication
/// beside a kernel can delay it by at most the time it runs beside it, more is other work under the same name and
/// launch configuration. Figures in ms per step (means over the analysed steps).
struct CommInterference {
  /// Judgements, not measured spreads: three calls make a median; ±10 % around it is wider than the run-to-run
  /// spread of one GEMM shape on H200 (< 1 %) and narrower than what separates two shapes.
  static constexpr std::size_t kMinReferenceCalls = 3;
  static constexpr double kMaxReferenceSpread = 0.2;
  /// Share of the step from which a finding speaks of it (a warning; a problem from kProblemShare).
  static constexpr double kFindingShare = 0.01;
  static constexpr double kProblemShare = 0.05;
  double calls_with_reference = 0;     ///< calls overlapping communication with a reference, per step
  double calls_without_reference = 0;  ///< those without one, per step
  double overlap_ms = 0;               ///< the overlap with communication of the calls with a reference
  double slowdown_ms = 0;              ///< Σ slowdown of the calls with a reference
  double slowdown_vs_baseline_ms = 0;  ///< the part of slowdown_ms measured against the baseline's calls
  double overlap_without_reference_ms = 0;  ///< the overlap of the calls without one
  std::vector<KernelInterference> kernels;  ///< the kernels with a reference, largest slowdown first
  double slowdown_per_overlap() const { return overlap_ms > 0 ? slowdown_ms / overlap_ms : 0; }
};

/// CPU ranges of one name on one rank inside the analysed steps.
struct CpuRange {
  std::string name;
  double calls_per_step = 0;
  double ms_per_step = 0;   ///< Σ durations / steps (nested calls of one name counted once each)
};

/// One rank's trace, analysed.
struct RankAnalysis {
  std::string source;             ///< file path
  int rank = -1;                  ///< distributedInfo.rank, else from the file name, else the file's index
  std::string rank_source;        ///< "distributedInfo", "file name" or "file order"
  std::optional<std::int64_t> world_size;
  std::string backend;            ///< distributedInfo.backend
  std::string nccl_version;
  std::string device_name;        ///< deviceProperties name of the device analysed ("" when absent)
  int device = -1;                ///< the device analysed (most kernel time), -1 when none
  int compute_stream = -1;        ///< the stream with the most compute-kernel time
  bool has_gpu = false;           ///< the trace has GPU activity, or is a CPU rank's (cpu_ranks)
  /// A rank without GPU activity whose collectives run on the CPU (gloo, MPI, UCC): its main thread's operators
  /// stand for compute kernels, the backend's collective ranges ("gloo:all_reduce" on its worker threads; else the
  /// c10d::* calls) for communication kernels, so every figure keeps its meaning with "GPU" read as "the rank's
  /// main thread"; steps are ProfilerStep#N, else the intervals between the ends of consecutive optimizer steps
  /// (Optimizer.step#…). Clocks without baseTimeNanoseconds (the legacy export is relative to each profiler's
  /// start) are aligned by the ends of matched collectives.
  bool cpu_ranks = false;
  bool steps_from_annotations = false;  ///< ProfilerStep#N found; else one step = the whole trace
  /// The step windows used: "GPU work launched in each step", "ProfilerStep#N CPU ranges" or "whole trace".
  std::string step_windows;
  std::vector<StepMetrics> steps;
  StepMetrics mean;               ///< mean per step
  Waterfall waterfall;            ///< meaningful only with has_gpu
  std::vector<HostSyncGroup> host_syncs;
  LaunchGapSummary launch_gaps;
  std::vector<CollectiveGroup> collectives;  ///< by total time, largest first
  std::vector<KernelGroup> kernels;          ///< by total time, largest first (every name)
  /// DDP's own host-side ranges inside the steps (record_function names "DistributedDataParallel.forward",
  /// "torch.distributed.ddp.reducer::search_unused_parameters" — present only with find_unused_parameters=True —,
  /// "…reducer::…", "_DDPSink"): where DDP's host time goes, by name, largest first.
  std::vector<CpuRange> ddp_ranges;
  /// Compute slowed beside communication; nullopt without communication kernels in the analysed steps.
  std::optional<CommInterference> interference;
  double clock_offset_us = 0;     ///< added to this rank's timestamps to put it on the common axis
  std::uint64_t json_bytes = 0;
  std::uint64_t events_read = 0;
  std::uint64_t events_kept = 0;
  std::vector<std::string> warnings;  ///< the reader's and the analysis' notes
};

/// One collective matched across ranks, with the spread of its starts on the aligned clock.
struct MatchedCollective {
  std::string process_group;
  std::string collective;
  std::string key;            ///< "seq 17", "ProfilerStep#5 #3" or "#42": how it was matched
  int earliest_rank = -1;     ///< first to start
  int latest_rank = -1;       ///< last to start: everyone else waited for it
  double spread_us = 0;       ///< latest start − earliest start
};

/// Matching of collectives across ranks and the clock alignment.
///
/// Matching: the same collective on each rank is found by the process group's sequence number ("Seq") when the
/// trace records it, else by order: the k-th collective of the process group (PG name, or the kernel's stream
/// when the trace has no PG metadata) within the same ProfilerStep#N on each rank (the step is the one whose
/// CPU window holds the kernel's launch), or in the whole trace when there are no steps.
///
/// Clock alignment (TraceOptions::alignment, auto): first baseTimeNanoseconds when every trace has it (unix
/// ns = base + ts × 1000), else the timestamps as written; then, because a collective ends on all ranks within
/// NCCL's completion latency (µs) while its starts differ by the ranks' arrival, each rank's offset to the
/// lowest rank is the median over matched collectives of (reference end − this rank's end). Medians ignore the
/// odd mismatched collective; send/recv is used only when nothing else matched.
///
/// Waits: for a matched collective with aligned starts s_r, rank r's lateness is s_r − min s (the brief's
/// "wait" of the arriving rank: the straggler has the largest) and its wait is max s − s_r (time its kernel
/// spins for the last rank; the exposed part of it is the waterfall's straggler wait). The straggler is the
/// rank with the largest mean lateness per step.
struct CrossRankAnalysis {
  std::string alignment;          ///< how clocks were aligned, in words
  std::string matching;           ///< "seq", "step order", "trace order" or "" when nothing matched
  std::int64_t matched = 0;       ///< collectives matched on ≥ 2 ranks
  std::int64_t unmatched = 0;     ///< collectives present on one rank only, or whose kinds disagree
  std::optional<int> straggler;   ///< rank with the largest mean lateness, when ≥ 2 ranks matched
  double straggler_late_ms_per_step = 0;   ///< its mean lateness per step
  std::vector<MatchedCollective> worst;    ///< up to 10 matched collectives with the largest spread
  std::vector<std::string> notes;
};

/// A file that could not be analysed, and why (core::Error's cause and remedy).
struct FileError {
  std::string path;
  std::string cause;
  std::string remedy;
};

/// A finding: one sentence with the figure, the rank and what to do.
struct Finding {
  std::string severity;  ///< "info", "warning" or "problem"
  std::string text;
};

/// What the merged timeline needs of one rank (kept when TraceOptions::keep_timeline).
struct RankTimeline {
  /// A slice on a track. Times are ns on the aligned clock.
  struct Slice {
    std::int64_t start_ns = 0;
    std::int64_t dur_ns = 0;
    std::uint32_t name = 0;   ///< index into names
    std::uint32_t track = 0;  ///< index into tracks
  };
  int rank = -1;
  std::vector<std::string> names;
  std::vector<std::string> tracks;  ///< "steps", "compute stream 7", "communication stream 40", …
  std::vector<Slice> slices;
};

/// Everything analyze_trace_files() found.
struct TraceAnalysis {
  static constexpr const char* kSchema = "scalescope.trace/1";
  std::vector<RankAnalysis> ranks;          ///< by rank
  std::optional<RankAnalysis> baseline;     ///< the 1-rank baseline, when given and readable
  std::vector<FileError> errors;            ///< files that yielded no result
  CrossRankAnalysis cross;
  std::optional<int> world_size;            ///< from distributedInfo (agreeing), else the number of ranks
  std::optional<core::ScalingMetrics> metrics;        ///< with a baseline and ≥ 2 ranks
  std::optional<diagnose::VerdictFinding> verdict;    ///< diagnose::judge over metrics
  std::string verdict_note;                           ///< why there is no verdict, when there is none
  std::vector<Finding> findings;
  std::vector<RankTimeline> timelines;      ///< with TraceOptions::keep_timeline
};

/// Reads every trace at `paths` (one per rank, any order; .json or .json.gz) and the optional baseline, then
/// analyses them together. A file that cannot be read or holds nothing to analyse goes to
/// TraceAnalysis::errors with its cause and remedy; the others are analysed. Throws nothing for bad input.
TraceAnalysis analyze_trace_files(const std::vector<std::string>& paths, const TraceOptions& options);

/// The analysis over traces already read (the pure part; tests and the fuzzer call it directly).
/// `baseline` is a 1-rank trace or null. Throws nothing for bad input.
TraceAnalysis analyze_traces(std::vector<Trace> traces, const Trace* baseline, const TraceOptions& options);

/// Bytes per element of a dtype as PyTorch names it in traces: c10 ScalarType names ("Float", "BFloat16",
/// "Long", "Float8_e4m3fn"…) and C++ type names of "Input type" ("float", "c10::Half", "long int"…).
/// nullopt for an unknown name.
std::optional<int> dtype_size(std::string_view dtype);

/// The collective a name stands for: PyTorch's "Collective name" ("allreduce", "_allgather_base",
/// "reduce_scatter_tensor_coalesced"…), annotation ops ("all_to_all"), or an NCCL kernel name
/// ("ncclKernel_AllReduce_RING_LL_Sum_float(…)", "ncclDevKernel_AllGather_RING_LL(…)",
/// "ncclDevKernel_AllReduce_Sum_f32_RING_LL"). nullopt when it names none ("ncclDevKernel_Generic").
std::optional<comm::Collective> collective_from_name(std::string_view name);

/// The JSON output (to_json of RankAnalysis) lists this many of the largest kernel names, with the total count.
inline constexpr std::size_t kMaxKernelsInJson = 50;

/// One kernel name's GPU time per step on a rank beside the 1-rank baseline's: which kernels make the waterfall's
/// "compute" part (slower beside NCCL's kernels, or new ones), the way `bench/kernel_diff.py` found them.
struct KernelDelta {
  std::string name;
  bool comm = false;
  double baseline_ms = 0;  ///< per step in the baseline (0: absent there)
  double rank_ms = 0;      ///< per step on the rank (0: absent there)
  double delta_ms() const { return rank_ms - baseline_ms; }
};

/// Every kernel name of `rank` or `baseline` (RankAnalysis::kernels, both complete), largest |Δ per step| first.
std::vector<KernelDelta> kernel_deltas(const RankAnalysis& rank, const RankAnalysis& baseline);

/// {name (invalid UTF-8 replaced), comm, baseline_ms_per_step, ms_per_step, delta_ms_per_step}.
void to_json(nlohmann::json& j, const KernelDelta& d);
/// {calls_with_reference_per_step, calls_without_reference_per_step, overlap_ms_per_step, slowdown_ms_per_step,
/// slowdown_vs_baseline_ms_per_step, slowdown_per_overlap, overlap_without_reference_ms_per_step, kernel_count,
/// kernels: [{name, launch (null when unknown), calls_per_step, overlap_ms_per_step, slowdown_ms_per_step,
/// slowdown_per_overlap, reference_us, reference}] (the kMaxKernelsInJson largest slowdowns)}.
void to_json(nlohmann::json& j, const CommInterference& c);

/// One sentence on `c` for a finding or note: the slowdown per step, its share of `step_ms` (ms), per ms of overlap,
/// the part measured against the baseline, and the kernel that slowed most (its name made terminal-safe). Throws
/// nothing.
std::string interference_text(const CommInterference& c, double step_ms);

/// Whether a kernel name is an NCCL (or RCCL) kernel: it starts with "nccl" or "rccl" (any case), or it is NCCL's
/// file-static one-rank all-reduce ("__nv_static_…oneRankReduce…").
bool is_nccl_kernel_name(std::string_view name);

/// JSON (schema "scalescope.trace/1"): ranks with steps, mean, waterfall, host syncs, launch gaps and
/// collectives; baseline; cross-rank matching; metrics, verdict, findings and errors. Times in ms/µs as named;
/// absent figures are null (a CPU-only rank's GPU figures and waterfall). Text from outside (paths, warnings that
/// quote the file) is made valid UTF-8, so dump() never throws.
void to_json(nlohmann::json& j, const TraceAnalysis& a);
/// One step (or the mean per step): an object with one key per field, named as the fields, plus
/// "overlap_fraction" (null without communication).
void to_json(nlohmann::json& j, const StepMetrics& s);
/// The waterfall: one key per field, plus "loss_ms".
void to_json(nlohmann::json& j, const Waterfall& w);
/// One rank: identity, steps, mean, waterfall (null without GPU activity), host syncs, launch gaps, collectives,
/// clock offset, event counts and warnings.
void to_json(nlohmann::json& j, const RankAnalysis& r);

}  // namespace scalescope::analyze
