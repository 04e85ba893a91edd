#pragma once
// Flags shared by `train` and `doctor`: the workload, its batch, buckets, data and measurement protocol.

#include <string>

#include <CLI/CLI.hpp>

#include "train/job.h"

namespace scalescope::cli {

/// Raw flag values; resolve() turns them into a validated job configuration.
struct WorkloadFlags {
  std::string backend = "auto";
  std::string model = "auto";
  int context = 0, embed = 0, hidden = 0, layers = 0;  // 0: the preset's value
  int batch = 0;                                       // 0: backend default
  bool strong = false;
  double first_bucket_mib = 1.0;
  double bucket_cap_mib = 25.0;
  bool no_overlap = false;
  std::string data;
  int warmup_rounds = 3, timed_rounds = 5, steps_per_round = 10;
  float learning_rate = 1e-3f;
  double timeout_seconds = 1800;
  bool quiet = false;
  std::string fault;               // hidden test hook
  std::string gradient_reduction = "average";  // hidden test hook

  /// Resolves "auto" choices (GPU backend when a GPU is visible; mlp-10m × 64 rows on CPU,
  /// mlp-100m × 8192 rows on GPU) and validates. Throws core::UsageError.
  train::TrainJobConfig resolve(int world_size) const;
};

/// Checks `--out` before a run: writable (core::check_output_path_writable) and not the training data
/// file, which the result would replace. Throws core::Error / core::UsageError.
void check_output_path(const std::string& out, const train::TrainJobConfig& config);

/// A flag's number check: positive (or ≥ 0 when `zero_allowed`), with a one-line message.
CLI::Validator number_check(bool zero_allowed);

/// Registers the workload flags on `app`.
void add_workload_options(CLI::App& app, WorkloadFlags& flags);

}  // namespace scalescope::cli
