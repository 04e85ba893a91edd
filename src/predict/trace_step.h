#pragma once
// One rank's training step as a PyTorch profiler (Kineto) trace shows it, for the predictor: the step's period, its
// forward / backward / optimizer on the GPU's timeline, DDP's buckets from the all-reduce calls' arguments, and
// when each bucket became ready. Pure C++ over the trace reader's events (no CUDA).

#include <string>
#include <vector>

#include "readers/trace/trace_reader.h"

namespace scalescope::predict {

/// What one profiled step of a one-rank DDP job gives. Seconds; bytes as all-reduced.
struct TraceStep {
  int steps = 0;                      ///< ProfilerStep#N ranges read
  std::vector<double> periods_s;      ///< each step's period (see step_from_trace), in step order
  double step_s = 0;                  ///< median of periods_s
  /// Medians over the steps of the GPU timeline's parts, each from the end of the one before: forward (to the GPU
  /// end of the last work launched outside backward and the optimizer before backward's first launch), backward
  /// (to the GPU end of the last work the autograd engine's thread launched), optimizer (to the GPU end of the last
  /// work launched inside an `Optimizer.step#` range; 0 when the trace has none).
  double forward_s = 0, backward_s = 0, optimizer_s = 0;
  bool gpu_bound = false;             ///< the GPU's period, not the host's, set most steps' period
  std::vector<double> bucket_bytes;   ///< DDP's all-reduce calls of the step with the most common count, in call order
  std::string dtype;                  ///< the calls' dtype as the trace names it ("BFloat16"); "" when not given
  int element_bytes = 0;              ///< bytes per element of `dtype` (0 unknown)
  /// For each bucket, seconds before the last bucket's call that its gradient was ready on the GPU (the GPU end of
  /// the last work launched before its all-reduce call), median over the steps with the common count.
  std::vector<double> ready_before_end_s;
  int bucket_steps = 0;               ///< steps whose all-reduce calls were used
  std::vector<int> calls_per_step;    ///< DDP all-reduce calls in each profiled step, in step order
  int world_size = 0;                 ///< the trace's distributedInfo world size (0 not given)
};

/// Reads the step from `t`. A step's period is the larger of its ProfilerStep#N range on the host and, on the GPU,
/// the time from the GPU end of the previous step's work (for the first step, the start of its own first work) to
/// the GPU end of the work it launched: whichever side is behind sets the pace (a GPU-bound job's host ranges are
/// shorter than its step while its queue fills). Returns false with the reason in `why` when the trace has no
/// ProfilerStep#N range, no GPU activity launched inside one (a CPU-only trace), or no backward launched by the
/// autograd engine's thread (thread names "pt_autograd_N", which PyTorch writes for its GPU backward threads).
/// Bucket fields stay empty when no step has an all-reduce call (a job without DDP). Throws nothing.
bool step_from_trace(const analyze::Trace& t, TraceStep& out, std::string* why);

}  // namespace scalescope::predict
