#pragma once
// One training configuration measured end to end (`scalescope train`): the launcher side starts the rank
// processes and collects rank 0's result; the rank side trains with the DP engine under the seed's
// measurement protocol and gathers every rank's timings.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/communicator.h"
#include "core/scaling.h"
#include "core/stats.h"
#include "train/backend.h"
#include "train/bucket_plan.h"
#include "train/dp_engine.h"
#include "train/model_spec.h"

namespace scalescope::train {

/// Everything that defines a measured training run. Serialised to JSON for the rank processes and into
/// every result, so a figure always travels with the configuration that produced it.
struct TrainJobConfig {
  BackendKind backend = BackendKind::cpu;
  int world_size = 1;
  ModelSpec model;                ///< the workload: preset and resolved sizes
  /// Batch rows: per rank in weak scaling (global = batch × world size), global in strong scaling
  /// (per rank = batch / world size, which must divide evenly).
  int batch = 64;
  core::ScalingMode mode = core::ScalingMode::weak;
  EngineOptions engine;
  StreamPriority stream_priority = StreamPriority::equal;  ///< GPU ranks only (backend.h)
  /// GPU ranks, GPT: capture the step's forward, backward, all-reduces and join into a CUDA graph after
  /// DataParallelEngine::kEagerStepsBeforeCapture eager steps and replay it (train/step_replay.h).
  bool cuda_graph = false;
  std::string data;  ///< "" = default text corpus, "synthetic", or a file/directory path
  core::MeasurementProtocol protocol;
  AdamWConfig adamw;
  std::uint64_t data_seed = 42;
  double timeout_seconds = 1800;  ///< the launcher stops a job that hangs longer than this
  bool progress = true;           ///< rank 0 reports rounds on stderr
  /// GPU ranks: after the timed rounds, one more round of steps is recorded kernel by kernel (CUPTI) and each
  /// rank writes DIR/rank<R>.json (Kineto's trace format, for `scalescope analyze`); "" = none. The traced
  /// round is in no figure.
  std::string kernel_trace_dir;
  /// Test hook "RANK:STEP:exit|abort|hang|late": that rank fails at that step, to test the launcher's handling,
  /// or (late) starts the round beginning at that step 0.5 s after the others, to test the round barrier.
  std::string fault;

  int rows_per_rank() const;
  int global_rows() const;
  /// Throws core::UsageError naming the first bad field (world size < 1, batch not divisible in strong
  /// scaling, bad protocol, bad fault spec…).
  void validate() const;
  /// The data source in words, e.g. "text (default: /usr/share/games/fortunes)".
  std::string data_label() const;
};
void to_json(nlohmann::json& j, const TrainJobConfig& c);
void from_json(const nlohmann::json& j, TrainJobConfig& c);

/// JSON of one step's (or a mean step's) phase times: keys data_wait_s … all_reduce_bytes, last_all_reduce_s,
/// seconds.
void to_json(nlohmann::json& j, const StepTiming& t);
void from_json(const nlohmann::json& j, StepTiming& t);

/// Per-rank aggregates over the timed steps (means, seconds).
struct RankSummary {
  int rank = 0;
  StepTiming mean;          ///< mean of each phase over the timed steps
  double wall_step_seconds = 0;  ///< trimmed mean over timed rounds of (round wall time / steps)
};

/// The measured result of one configuration (rank 0 assembles it from every rank's figures).
struct TrainResult {
  static constexpr const char* kSchema = "scalescope.train/1";
  TrainJobConfig config;
  std::string device;
  std::string communicator;     ///< "mpi" or "nccl"
  std::string library_versions;
  std::string timing_source;    ///< "cuda-events" or "steady-clock"
  std::string data_description;
  std::uint64_t parameters = 0;
  double flops_per_token = 0;
  std::vector<std::uint64_t> bucket_bytes;  ///< size of each gradient bucket, in all-reduce order
  /// Rank 0's bucket ready times, seconds after backward began, per bucket (median over the timed eager steps;
  /// empty without overlap or when every timed step was replayed from a CUDA graph).
  std::vector<double> bucket_ready_seconds;
  /// Whether the tied embedding's input-side gradient was all-gathered (EmbeddingExchange) rather than its
  /// whole gradient all-reduced in the last bucket.
  bool embedding_all_gathered = false;
  /// Models with a tied embedding (Model::embedding_gather): the tables' fp32 gradient bytes (what all-reducing it
  /// moves) and the bytes one rank would all-gather instead (its rows × tokens and embedding-output gradient per
  /// row); 0 for models without one. For `predict`'s embedding-exchange what-if.
  std::uint64_t embedding_table_gradient_bytes = 0;
  std::uint64_t embedding_gather_bytes_per_rank = 0;
  std::uint64_t tokens_per_step = 0;        ///< predicted tokens per step over all ranks
  /// Step time of the job (slowest rank) per timed round: round wall time / steps. Headline statistic:
  /// step_seconds.trimmed_mean (mean of the middle 3 of 5 rounds).
  std::vector<double> round_step_seconds;
  core::Summary step_seconds;
  /// Every timed step's event-timed total (slowest rank per step): its distribution (p95, cv).
  core::Summary step_event_seconds;
  StepTiming phases;             ///< mean over ranks of each rank's mean phase times
  double max_rank_compute = 0;   ///< slowest rank's mean compute time (straggler view)
  double min_rank_compute = 0;
  std::vector<RankSummary> ranks;
  std::vector<double> losses;    ///< global mean loss of every step (warm-up included), in order
  /// L2 norm of the averaged gradient after the last step of each round (rank 0). Adam's update hardly
  /// changes when all gradients are scaled, so a wrong average shows here rather than in the losses.
  std::vector<double> gradient_norms;
  /// Largest relative difference between a rank's gradient norm and rank 0's: replicas must agree (~1e-7).
  double replica_gradient_spread = 0;
  /// With --cuda-graph: how many of the timed steps were replayed from the graph (rank 0; every rank captures at
  /// the same step). Fewer than all when the warm-up is shorter than the eager steps before the capture.
  int replayed_timed_steps = 0;
  double tokens_per_second() const;
  /// All-reduce bandwidths of the gradient buckets (nccl-tests definitions: algbw = bytes / time,
  /// busbw = algbw × 2(n−1)/n for all-reduce), GB/s with GB = 1e9.
  double all_reduce_algbw_gbps() const;
  double all_reduce_busbw_gbps() const;
  /// The sample the scaling metrics need (core::scaling_metrics); its collectives are the all-reduces plus the
  /// embedding's all-gathers.
  core::ScalingSample scaling_sample() const;
};
void to_json(nlohmann::json& j, const TrainResult& r);
void from_json(const nlohmann::json& j, TrainResult& r);

/// For CPU ranks on this machine: throws core::UsageError when world size × the model's estimate for one CPU
/// rank (ModelSpec::memory_per_rank_bytes with gpu = false) is more than its physical memory (the ranks would
/// die of std::bad_alloc or the OOM killer mid-run).
void check_cpu_memory(const TrainJobConfig& config);

/// Runs this process as one rank of `config` (it must have been started by scalescope's launcher, mpirun or
/// srun). Returns the assembled result on rank 0 and nothing on the other ranks. Throws core::Error.
std::optional<TrainResult> run_rank(const TrainJobConfig& config);

/// CPU ranks a run may start per hardware thread of this machine: oversubscription is allowed (a 2-core CI
/// machine runs 4 ranks), but not to the point where Open MPI exhausts the process's pipes and hangs.
inline constexpr int kMaxCpuRanksPerCore = 8;

/// Throws core::Error when GPU ranks are asked for and no GPU is usable (the machine's fault), core::UsageError
/// when fewer than `world_size` GPUs are visible (one process per GPU) or when CPU ranks would exceed
/// kMaxCpuRanksPerCore per hardware thread.
void require_devices(BackendKind backend, int world_size);

/// Starts `world_size` rank processes running `argv` on this node — GPU ranks: one process per GPU with
/// SCALESCOPE_RANK/_WORLD_SIZE/_LOCAL_RANK and the NCCL id in their environment; CPU ranks: under mpirun —
/// and supervises them (comm::run_processes). `job_directory` (the run's core::TemporaryDirectory) also holds
/// Open MPI's session files, removed with it. Throws core::Error naming a failed rank or a timeout.
void launch_rank_processes(BackendKind backend, int world_size, const std::vector<std::string>& argv,
                           double timeout_seconds, const std::string& job_directory = "");

/// Starts `config.world_size` rank processes of this executable (`scalescope train --internal-job FILE`),
/// supervises them and returns rank 0's result. Throws core::Error naming a failed rank, a timeout, or a
/// missing launcher; nothing is left half-written.
TrainResult launch_job(const TrainJobConfig& config);

/// Writes `result` for `--internal-job`: rank 0's hand-over file, written atomically.
void write_result_file(const std::string& path, const TrainResult& result);

}  // namespace scalescope::train
