#include "core/scaling.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "core/error.h"

namespace scalescope::core {
namespace {

void require_positive(double v, std::string_view role, std::string_view field) {
  if (!std::isfinite(v) || v <= 0.0)
    throw Error(fmt::format("{} {} must be positive and finite, got {}", role, field, v));
}

void require_non_negative(double v, std::string_view role, std::string_view field) {
  if (!std::isfinite(v) || v < 0.0)
    throw Error(fmt::format("{} {} must be non-negative and finite, got {}", role, field, v));
}

void check_sample(const ScalingSample& s, std::string_view role) {
  if (s.world_size < 1) throw Error(fmt::format("{} world size must be ≥ 1, got {}", role, s.world_size));
  require_positive(s.step_seconds, role, "step_seconds");
  require_positive(s.compute_seconds, role, "compute_seconds");
  require_non_negative(s.all_reduce_seconds, role, "all_reduce_seconds");
  require_non_negative(s.exposed_comm_seconds, role, "exposed_comm_seconds");
  require_positive(s.tokens_per_step, role, "tokens_per_step");
  if (s.all_reduce_count < 0)
    throw Error(fmt::format("{} all_reduce_count must be ≥ 0, got {}", role, s.all_reduce_count));
  if (s.all_reduce_count == 0 && s.all_reduce_seconds > 0.0)
    throw Error(fmt::format("{} has {} s of all-reduce time but an all-reduce count of 0", role,
                            s.all_reduce_seconds));
}

}  // namespace

std::string_view to_string(ScalingMode mode) noexcept {
  switch (mode) {
    case ScalingMode::weak: return "weak";
    case ScalingMode::strong: return "strong";
  }
  return "unknown";
}

ScalingMode parse_scaling_mode(std::string_view text) {
  if (text == "weak") return ScalingMode::weak;
  if (text == "strong") return ScalingMode::strong;
  throw UsageError(fmt::format("unknown scaling mode '{}'", text),
                   "use 'weak' (fixed per-rank batch) or 'strong' (fixed global batch)");
}

ScalingMetrics scaling_metrics(ScalingMode mode, const ScalingSample& baseline, const ScalingSample& sample) {
  check_sample(baseline, "baseline");
  check_sample(sample, "sample");
  if (baseline.world_size != 1)
    throw Error(fmt::format("the baseline must be a single-rank run, got world size {}", baseline.world_size));

  const double n = sample.world_size;
  // Weak scaling grows the global batch with N; strong scaling keeps it. A mismatch means the mode is wrong.
  const double expected_tokens = mode == ScalingMode::weak ? n * baseline.tokens_per_step : baseline.tokens_per_step;
  if (std::abs(sample.tokens_per_step - expected_tokens) > 1e-6 * expected_tokens)
    throw Error(fmt::format("{} scaling expects {} tokens per step at world size {} (baseline {}), got {}",
                            to_string(mode), expected_tokens, sample.world_size, baseline.tokens_per_step,
                            sample.tokens_per_step),
                "check the scaling mode: weak keeps the per-rank batch, strong keeps the global batch");

  const double time_ratio = baseline.step_seconds / sample.step_seconds;  // T1 / TN
  ScalingMetrics m;
  if (mode == ScalingMode::weak) {
    m.efficiency = time_ratio;
    m.speedup = n * time_ratio;
  } else {
    m.speedup = time_ratio;
    m.efficiency = time_ratio / n;
  }
  m.comm_ratio = sample.all_reduce_seconds / baseline.compute_seconds;
  m.tokens_per_second = sample.tokens_per_step / sample.step_seconds;
  m.overlap_fraction = sample.all_reduce_seconds == 0.0
                           ? 1.0
                           : std::clamp(1.0 - sample.exposed_comm_seconds / sample.all_reduce_seconds, 0.0, 1.0);
  return m;
}

void to_json(nlohmann::json& j, ScalingMode mode) { j = std::string(to_string(mode)); }

void to_json(nlohmann::json& j, const ScalingSample& s) {
  j = nlohmann::json{{"world_size", s.world_size},
                     {"step_seconds", s.step_seconds},
                     {"compute_seconds", s.compute_seconds},
                     {"all_reduce_seconds", s.all_reduce_seconds},
                     {"all_reduce_count", s.all_reduce_count},
                     {"exposed_comm_seconds", s.exposed_comm_seconds},
                     {"tokens_per_step", s.tokens_per_step}};
}

void to_json(nlohmann::json& j, const ScalingMetrics& m) {
  j = nlohmann::json{{"speedup", m.speedup},
                     {"efficiency", m.efficiency},
                     {"comm_ratio", m.comm_ratio},
                     {"tokens_per_second", m.tokens_per_second},
                     {"overlap_fraction", m.overlap_fraction}};
}

}  // namespace scalescope::core
