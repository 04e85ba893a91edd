#pragma once
// What the predictor reads: one rank's step from scalescope's own reports, and the link from a measured file.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "predict/link_model.h"
#include "predict/step_model.h"

namespace scalescope::predict {

/// A measured multi-rank step of the same run (a doctor report's other world sizes), for predicted-vs-measured.
struct MeasuredPoint {
  int ranks = 0;
  double step_s = 0;
};

struct RunInput {
  StepProfile profile;
  std::vector<MeasuredPoint> measured;  ///< world sizes ≥ 2 of a doctor report
  std::string model;                    ///< the model's name when the report has one
};

/// From a scalescope.train/1 report at world size 1, a scalescope.doctor/1 report (its world-size-1 point; its
/// other points become `measured`), or a scalescope.capture/1 of a one-rank PyTorch DDP job (`scalescope profile`:
/// its step outside the profiled window, DDP's bucket sizes and backward's share from DDP's logging data). Uses the phases (forward, backward, optimizer; the rest of the step as other),
/// the bucket sizes, and gradient bytes per parameter for the element size. Bucket readiness is not recorded per
/// bucket: gradients are taken as produced at an even rate over backward (said in `assumptions`).
/// Throws core::Error naming what is missing (no world-size-1 run, no phases, no buckets).
RunInput run_from_report(const nlohmann::json& report, const std::string& source);

/// Bucket ready times measured in a one-rank PyTorch profiler trace (`scalescope profile`'s trace.rank0.json.gz):
/// in each ProfilerStep#N, DDP's all-reduce calls (its reducer's "nccl:all_reduce" range, one per bucket in bucket
/// order, called when the bucket's last gradient has been launched) and, for each, the GPU end t_i of the last GPU
/// work launched before it (at one rank NCCL launches no kernel, so the call's own GPU time cannot be used). Bucket
/// i is then ready (t_last − t_i) before backward ends, the last bucket at backward's end; the median over the steps
/// whose call count equals the bucket count. Replaces `profile.buckets[i].ready_s` and the
/// even-rate assumption; returns false (leaving `in` as it was) with the reason in `why` when the trace is
/// unreadable or no step has one all-reduce per bucket. Throws nothing.
bool ready_times_from_trace(RunInput& in, const std::string& trace_path, std::string* why);

/// The one-rank run a user names on the command line:
/// - a train/doctor JSON;
/// - a `scalescope profile` job directory: its capture.rank0.json (the step outside the profiled window, DDP's
///   buckets) with, from the trace of its window (predict/trace_step.h), the step's split into forward, backward and
///   optimizer on the GPU's timeline and each bucket's ready time (when the trace cannot give them: DDP's logging
///   data and the even rate, with the trace's reason in the assumption);
/// - a PyTorch profiler trace alone (`.json`, `.json.gz`), or a directory without a capture holding traces (rank 0's,
///   else the first by name): the step, its parts, the buckets (the all-reduce calls' sizes and dtype) and their
///   ready times all from the trace; what it cannot say (bucket_cap_mb) is printed as an assumption.
/// Throws core::UsageError when the path is neither, core::Error as run_from_report, or naming what a trace lacks
/// (no ProfilerStep#N ranges, no GPU work, no backward, no DDP all-reduce call, calls without sizes).
RunInput run_from_path(const std::string& path);

/// The files run_from_path reads for `path`: the report (a job directory's capture.rank0.json) and, for a capture,
/// the trace its window names (which may lie anywhere); or the trace read alone. For the output guard: an output must be none of them.
/// Throws nothing: a file that cannot be read or parsed is simply not listed beyond the report itself.
std::vector<std::string> run_input_files(const std::string& path);

/// The link from a file: `scalescope comm` JSON (one report or several), an nccl-tests output, or an NCCL profiler
/// plugin record; else, when `spec` is not a file, a named link (LinkModel::named). Throws core::Error /
/// core::UsageError naming the cause.
LinkModel link_from(const std::string& spec);

}  // namespace scalescope::predict
