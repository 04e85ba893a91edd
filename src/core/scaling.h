#pragma once
// Scaling metrics: how a measured N-rank configuration compares with the single-rank baseline.

#include <string_view>

#include <nlohmann/json.hpp>

namespace scalescope::core {

/// Weak scaling keeps the per-rank batch fixed (the global batch grows with N); strong scaling keeps the
/// global batch fixed (each rank's share shrinks as 1/N).
enum class ScalingMode { weak, strong };

/// "weak" or "strong".
std::string_view to_string(ScalingMode mode) noexcept;

/// Parses "weak" or "strong" (exact, lower case). Throws core::UsageError naming the text otherwise.
ScalingMode parse_scaling_mode(std::string_view text);

/// One measured configuration, all times in seconds for one training step (headline values, e.g. the
/// trimmed mean over the timed rounds).
struct ScalingSample {
  int world_size = 1;                ///< number of ranks N, ≥ 1
  double step_seconds = 0;           ///< wall/event time of one step on the slowest rank, > 0
  double compute_seconds = 0;        ///< forward + backward + optimizer time of one step on one rank, > 0
  /// Total time of the step's gradient collectives, ≥ 0 (0 at N = 1): the all-reduces, and a tied embedding's
  /// all-gathers where it is exchanged that way (train::EmbeddingExchange).
  double all_reduce_seconds = 0;
  int all_reduce_count = 0;          ///< those collectives per step, ≥ 0 (0 at N = 1)
  double exposed_comm_seconds = 0;   ///< end of backward to end of the last collective (and the gathered
                                     ///< embedding's scatter-add), ≥ 0
  double tokens_per_step = 0;        ///< global tokens processed per step (all ranks), > 0
};

/// Derived figures for one configuration against the single-rank baseline. All dimensionless except
/// tokens_per_second.
struct ScalingMetrics {
  double speedup = 0;           ///< throughput gain over 1 rank; ideal N
  double efficiency = 0;        ///< speedup / N; ideal 1
  double comm_ratio = 0;        ///< all-reduce time per step / single-rank compute time per step
  double tokens_per_second = 0; ///< global tokens per second of this configuration
  double overlap_fraction = 0;  ///< share of all-reduce time hidden behind compute, in [0, 1]
};

/// Compares `sample` (N ranks) with `baseline` (1 rank). T1 = baseline.step_seconds, TN = sample.step_seconds.
/// Definitions from the scalescope brief (the project seed):
///  - weak:   efficiency = T1 / TN,       speedup = N · T1 / TN;
///  - strong: speedup    = T1 / TN,       efficiency = speedup / N;
///  - comm_ratio = (all-reduce time per op × ops per step) / single-rank compute time
///               = sample.all_reduce_seconds / baseline.compute_seconds;
///  - tokens_per_second = sample.tokens_per_step / sample.step_seconds;
///  - overlap_fraction = 1 − exposed_comm_seconds / all_reduce_seconds, clamped to [0, 1] (exposed time
///    can exceed the all-reduce time through idle gaps between all-reduces after backward ends); defined
///    as 1 when all_reduce_seconds == 0, as there is nothing to hide.
/// Throws core::Error if baseline.world_size != 1; if a world size is < 1; if a step, compute time or
/// tokens_per_step is not positive and finite; if a communication time is negative or not finite; if
/// all_reduce_count < 0, or == 0 while all_reduce_seconds > 0; or if the token counts contradict `mode`
/// (weak: sample tokens = N × baseline tokens; strong: equal; relative tolerance 1e-6), which catches
/// weak-scaling data judged as strong or the reverse, an error of a factor N in speedup.
ScalingMetrics scaling_metrics(ScalingMode mode, const ScalingSample& baseline, const ScalingSample& sample);

/// "weak" / "strong".
void to_json(nlohmann::json& j, ScalingMode mode);
/// JSON object with one key per field, named as the fields.
void to_json(nlohmann::json& j, const ScalingSample& s);
/// JSON object with one key per field, named as the fields.
void to_json(nlohmann::json& j, const ScalingMetrics& m);

}  // namespace scalescope::core
