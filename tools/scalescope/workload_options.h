#pragma once
// Flags shared by `train` and `doctor`: the workload, its batch, buckets, data and measurement protocol.

#include <limits>
#include <string>

#include <CLI/CLI.hpp>

#include "core/output_guard.h"
#include "train/job.h"

namespace scalescope::cli {

/// Raw flag values; resolve() turns them into a validated job configuration.
struct WorkloadFlags {
  std::string backend = "auto";
  std::string model = "auto";
  int context = 0, embed = 0, hidden = 0, layers = 0, seq = 0;  // 0: the preset's value
  bool keep_activations = false;
  std::string attention;  ///< "" (not given: cudnn where built in, else flash), "cudnn", "flash" or "gemm"
  int batch = 0;                                       // 0: backend default
  bool strong = false;
  double first_bucket_mib = 1.0;
  double bucket_cap_mib = 25.0;
  bool no_overlap = false;
  bool overlap_optimizer = false;
  bool cuda_graph = false;
  std::string embedding_exchange = "auto";
  std::string data;
  int warmup_rounds = 3, timed_rounds = 5, steps_per_round = 10;
  double learning_rate = 1e-3;  ///< parsed as a double so that a value beyond float is named, not "inf"
  double timeout_seconds = 1800;
  bool quiet = false;
  std::string stream_priority = "equal";  // GPU ranks: train::StreamPriority
  std::string fault;               // hidden test hook
  std::string gradient_reduction = "average";  // hidden test hook

  /// Resolves "auto" choices (GPU backend when a GPU is visible; mlp-10m × 64 rows on CPU, mlp-100m × 8192
  /// rows on GPU; a preset's default batch otherwise: default_batch()) and validates. Throws core::UsageError.
  train::TrainJobConfig resolve(int world_size) const;
};

/// Checks a run's outputs before it starts (core::check_run_outputs): writable, none the same file as another, and
/// none the training data (`--data FILE`).
void check_outputs(const std::vector<core::RunOutput>& outputs, const train::TrainJobConfig& config);

/// Checks `--kernel-trace DIR` before a run of `config` (train's, or doctor's world-size-1 job): a non-empty name,
/// GPU ranks (config.validate() with the directory set), and nothing there that is not a directory. The
/// directory itself is made by the ranks once they have run, so a refused or failed run leaves none. Throws
/// core::UsageError naming the problem.
void check_kernel_trace_dir(const std::string& dir, train::TrainJobConfig config);

/// A flag's number check: finite, positive (or ≥ 0 when `zero_allowed`) and at most `at_most`, with a one-line
/// message (inf is refused: --timeout inf reached the ranks' job file as JSON null).
CLI::Validator number_check(bool zero_allowed, double at_most = std::numeric_limits<double>::max());


/// CLI11 validator for --out: an empty file name (e.g. `--out "$UNSET"`) is refused instead of writing nothing, and a
/// name starting with '-' (CLI11 gives --out the next word even when it is a flag) as looking like a flag.
CLI::Validator output_file_check();

/// The batch rows per rank used when --batch is not given: on GPU 8192 for the MLP presets, 64 for tiny-14m,
/// 16 for gpt2-124m and gpt-350m, 8 for gpt-1.3b, 1 for the Llama shapes (the anchors' batches); on CPU 64
/// for the MLP presets and 2 for GPT presets (an fp32 core is ~1000× slower than an H200).
int default_batch(const train::ModelSpec& model, bool gpu);

/// One line for the start of a run: parameters, FLOPs per token and the estimated memory per rank.
std::string model_summary(const train::TrainJobConfig& config);

/// Registers the workload flags on `app`.
void add_workload_options(CLI::App& app, WorkloadFlags& flags);

}  // namespace scalescope::cli
