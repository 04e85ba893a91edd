#pragma once
// The data-parallel engine, with PyTorch DDP's semantics (torch/csrc/distributed/c10d/reducer.cpp):
//  - gradients live in buckets (bucket_plan.h), reverse parameter order, first bucket small;
//  - a bucket's all-reduce starts as soon as all its gradients are ready during backward, in bucket order,
//    on the communicator's own channel (CUDA stream or progress thread), overlapping the rest of backward;
//  - gradients are averaged over ranks; the optimizer waits for all all-reduces;
//  - with overlap off, every all-reduce waits for the whole backward (the "no overlap" baseline).
// Backend-neutral: the same engine drives CPU ranks (MPI) and GPU ranks (NCCL).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "train/bucket_plan.h"
#include "train/model.h"
#include "train/step_replay.h"
#include "train/timeline.h"

namespace scalescope::train {

/// Times of one training step on one rank, in seconds. Phases are consecutive on the compute timeline:
/// total = data_wait + stage + forward + backward + exposed_comm + optimizer (GPU: CUDA-event time; the
/// host-side data wait is added on). exposed_comm is the time from the end of backward to the end of the
/// last collective (with the embedding all-gather: and of the gathered scatter-add after it): the
/// communication that compute did not hide.
struct StepTiming {
  double data_wait = 0;      ///< host time waiting for the loader thread
  double stage = 0;          ///< copying the batch to the device (GPU) — 0 on CPU
  double forward = 0;
  double backward = 0;
  double exposed_comm = 0;
  double optimizer = 0;
  double total = 0;
  double all_reduce_seconds = 0;     ///< sum of the durations of this step's all-reduces
  int all_reduce_count = 0;
  std::uint64_t all_reduce_bytes = 0;
  /// Duration of the step's last all-reduce (the last bucket), seconds: it can start only once the last
  /// gradients are ready, so it bounds the exposed communication from below. With the embedding all-gathered
  /// the last collective is the gradients' all-gather, not this.
  double last_all_reduce_seconds = 0;
  /// The embedding exchange's all-gathers (EmbeddingExchange::all_gather; 0 otherwise): the tokens at the start
  /// of the step and the embedding-output gradients after backward. Seconds summed, bytes one rank sent.
  double all_gather_seconds = 0;
  int all_gather_count = 0;
  std::uint64_t all_gather_bytes = 0;
  /// Host wall-clock seconds (steady clock) the step's call spent in Model::stage_batch — on GPU mostly waiting
  /// until the previous batch's copy has left the pinned staging buffer, i.e. for the device to reach the
  /// previous step: large when the host runs ahead of the device, near 0 when the host is the bottleneck.
  double host_stage = 0;
  /// Host wall-clock seconds spent issuing the rest of the step (forward, backward with the all-reduce
  /// launches, join, optimizer). On GPU the step is launch-bound when this approaches `total`.
  double host_issue = 0;
  /// When each bucket was ready, seconds after backward began (its all-reduce was issued: the timeline's marker
  /// sits where the bucket's last gradient is computed — on GPU an event on the compute stream), in bucket order.
  /// Empty for steps replayed from a CUDA graph or captured, and without overlap (all buckets start after backward).
  std::vector<double> bucket_ready;
  /// Compute time: forward + backward + optimizer (the seed's "compute time" in the comm ratio).
  double compute() const { return forward + backward + optimizer; }
  /// Gradient communication: the all-reduces plus the tied embedding's all-gathers, seconds (what the comm ratio
  /// and the overlap count).
  double gradient_comm() const { return all_reduce_seconds + all_gather_seconds; }
};

/// How a tied token embedding's gradient is exchanged (Model::embedding_gather): all-reduced whole once backward
/// has finished it, as DDP does, or its head part all-reduced early and the input side all-gathered at the end.
enum class EmbeddingExchange { automatic, all_reduce, all_gather };

/// "auto", "all-reduce", "all-gather" (the --embedding-exchange spelling).
const char* to_string(EmbeddingExchange exchange);
/// Throws core::UsageError naming the accepted spellings.
EmbeddingExchange parse_embedding_exchange(const std::string& text);

/// The automatic choice of EmbeddingExchange: all-gather when the model offers it, world_size ≥ 2, and it moves
/// fewer bytes after backward. Per rank the all-gather receives (n − 1)·P and a ring all-reduce moves 2(n − 1)/n·S
/// (nccl-tests' bus factors), so all-gather iff P < 2S/n, with P = rows_per_rank × gather.gather_bytes_per_row
/// and S = gather.table_gradient_bytes. Latency and the scatter-add after the all-gather are left out. False for
/// rows_per_rank ≤ 0.
bool prefer_embedding_gather(const EmbeddingGather& gather, int world_size, int rows_per_rank);

struct EngineOptions {
  BucketConfig buckets;
  bool overlap = true;  ///< false: start the all-reduces only after the whole backward
  /// true: AdamW of every parameter outside the last bucket runs as soon as the other buckets are all-reduced,
  /// while the last bucket's all-reduce still runs; then AdamW of the last bucket. The last bucket holds the
  /// first parameters, whose gradients backward finishes last (a GPT's tied token embedding: 154 MB for
  /// gpt2-124m), so its all-reduce is the exposed communication DDP leaves after backward; this hides it
  /// behind most of the optimizer (on 2 × H200 AdamW then ran as much slower: no net gain for gpt2-124m,
  /// −0.2 to −0.7 % for gpt-1.3b; bench/RESULTS.md). Same arithmetic (AdamW is element-wise; each parameter
  /// counts its own steps), as PyTorch's experimental DDP optimizer-in-backward (`_register_fused_optim`) does
  /// per bucket.
  /// Eager steps only: not with a StepReplay (--cuda-graph).
  bool overlap_optimizer = false;
  /// The tied embedding's exchange. `automatic` decides with prefer_embedding_gather (and picks all_reduce
  /// with overlap_optimizer, whose split of the step assumes the embedding's gradient in the last bucket, and
  /// with a gradient_reduction other than average, which the gathered part does not follow); all_gather on a
  /// model without Model::embedding_gather(), with overlap_optimizer or with sum is refused.
  EmbeddingExchange embedding_exchange = EmbeddingExchange::automatic;
  /// Batch rows per rank, for the automatic choice (0: unknown, all_reduce).
  int rows_per_rank = 0;
  /// Reduction of gradients across ranks. `average` is DDP's; `sum` exists only so the correctness test can
  /// show that a wrong average is caught (scalescope train --internal-gradient-reduction sum).
  comm::ReduceOp gradient_reduction = comm::ReduceOp::average;
};

class DataParallelEngine {
 public:
  /// Eager steps before the step is captured for replay: the first calls of each GEMM shape choose and time
  /// cuBLASLt's algorithms and NCCL connects its peers lazily on the first collectives, neither of which may
  /// happen inside a capture.
  static constexpr int kEagerStepsBeforeCapture = 3;

  /// Builds the bucket plan and allocates the model's flat gradient buffer. The references must outlive
  /// the engine. With `replay` (GPU ranks, --cuda-graph; not owned, outlives the engine) the step's forward,
  /// backward, all-reduces and join are captured once after kEagerStepsBeforeCapture eager steps and replayed
  /// after that, recaptured when the batch shape changes; the optimizer and the batch copy stay eager. Throws
  /// core::Error from the model or plan (e.g. a zero bucket size), core::UsageError for `replay` with a model
  /// that cannot be replayed (Model::replayable()) or with options.overlap_optimizer.
  DataParallelEngine(Model& model, comm::Communicator& comm, Timeline& timeline, EngineOptions options,
                     StepReplay* replay = nullptr);

  /// Broadcasts rank 0's parameters to every rank (DDP does this at construction), so all replicas start
  /// equal even if their initialisation differed.
  void broadcast_initial_parameters();

  /// One synchronous-SGD step on this rank's batch: stage, forward, backward with bucketed all-reduces,
  /// wait for communication, AdamW. On GPU it returns once the work is issued (no host synchronisation).
  /// Replayed steps (see the constructor) time the same phases with the same markers.
  /// `data_wait_seconds` is the host time spent waiting for this batch (from the loader).
  void step(const TokenBatchView& batch, double data_wait_seconds, const AdamWConfig& adamw);

  /// Timings of the steps since the last call. Synchronises the timeline first, then clears its markers.
  std::vector<StepTiming> take_step_timings();

  const BucketPlan& plan() const { return plan_; }
  /// Whether this engine exchanges the tied embedding's input-side gradient by all-gather (the choice made from
  /// options().embedding_exchange).
  bool gathers_embedding() const { return gather_.has_value(); }
  const EngineOptions& options() const { return options_; }
  /// Steps issued eagerly, captured, and replayed so far (a captured step also runs, launched once).
  struct ReplayCounts {
    int eager = 0, captured = 0, replayed = 0;
  };
  const ReplayCounts& replay_counts() const { return replay_counts_; }

 private:
  struct StepMarks {
    Marker begin, staged, forward_end, backward_end, comm_end, optimizer_end;
    // splits_optimizer(): after the wait for all but the last bucket, and after the optimizer of their parameters.
    Marker early_joined = 0, early_optimized = 0;
    std::vector<Marker> bucket_ready;  // one per bucket as it starts during backward (eager steps only)
    double data_wait;
    double host_stage, host_issue;  // steady-clock seconds (StepTiming's fields of the same names)
  };
  /// What a replayed step repeats, in capture order: the timeline markers after staging, the all-reduce starts
  /// (by bucket), the embedding exchange's all-gathers and the join. The timing events they name are bound to the record's event nodes in this order.
  struct BookkeepingCall {
    enum Kind { forward_end, backward_end, comm_end, all_reduce, join, gather_tokens, gather_row_gradients } kind;
    std::size_t bucket = 0;
  };

  /// The plan for `gather` (or DDP's reverse order without): the token table first, the position table in none.
  static BucketPlan plan_for(const Model& model, const std::optional<EmbeddingGather>& gather,
                             const BucketConfig& config);
  /// Starts one of the embedding exchange's all-gathers (gather_tokens or gather_row_gradients).
  void start_gather(BookkeepingCall::Kind kind);
  void on_gradient_ready(std::size_t parameter);
  void launch_ready_buckets();
  /// Starts bucket `bucket`'s all-reduce (eagerly, into a capture, or naming a replayed step's events).
  void start_bucket(std::size_t bucket);
  /// overlap_optimizer took effect (≥ 2 buckets): every step's AdamW runs in the two parts below.
  bool splits_optimizer() const { return early_parameters_.size() > 0; }
  Marker record_marker(BookkeepingCall::Kind kind);
  /// Forward, backward with the all-reduces, and the join: issued eagerly, captured (then launched once), or
  /// replayed, as the replayer's state and the batch shape decide.
  void forward_backward_join(const TokenBatchView& batch, const AdamWConfig& adamw, StepMarks& m);
  void issue_forward_backward_join(const AdamWConfig& adamw, StepMarks& m);
  void replay_forward_backward_join(StepMarks& m);

  Model& model_;
  comm::Communicator& comm_;
  Timeline& timeline_;
  EngineOptions options_;
  std::optional<EmbeddingGather> gather_;  // set when the embedding's gradient is all-gathered
  BucketPlan plan_;
  std::size_t bucketed_parameters_ = 0;  // parameters in some bucket: those backward reports
  // overlap_optimizer with ≥ 2 buckets: the parameters outside the last bucket, then those in it; else empty.
  ParameterRange early_parameters_, late_parameters_;
  float* gradients_ = nullptr;
  std::vector<std::size_t> pending_;      // per bucket: gradients not yet ready in this backward
  std::size_t next_bucket_ = 0;           // next bucket to launch (buckets start in order, as NCCL needs)
  std::size_t ready_parameters_ = 0;
  std::vector<StepMarks> marks_;

  StepReplay* replay_ = nullptr;
  bool capturing_ = false;
  std::vector<Marker>* ready_marks_ = nullptr;  ///< the step's bucket_ready while backward issues (else null)
  bool captured_ = false;                   // a record for `shape_` exists
  std::pair<int, int> shape_{-1, -1};       // rows, row tokens of the last step
  int eager_since_shape_ = 0;               // eager steps of the current batch shape
  std::vector<BookkeepingCall> bookkeeping_;  // recorded while capturing
  ReplayCounts replay_counts_;
};

}  // namespace scalescope::train
