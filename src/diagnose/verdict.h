#pragma once
// The verdict: is data-parallel scaling healthy, worth watching, or worth investigating?
// Thresholds come from the project seed; the rule for more than 2 ranks is scalescope's own extension.

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace scalescope::diagnose {

/// Healthy needs comm ratio below this (15 %). Source: scalescope brief, "healthy if comm ratio < 15 % and
/// 2-GPU speedup > 1.7; investigate if comm ratio > 30 % or speedup < 1.2".
inline constexpr double kHealthyMaxCommRatio = 0.15;
/// Healthy needs a 2-rank speedup above this. Source: scalescope brief (as kHealthyMaxCommRatio).
inline constexpr double kHealthyMinSpeedupAt2 = 1.7;
/// Investigate when comm ratio is above this (30 %). Source: scalescope brief (as kHealthyMaxCommRatio).
inline constexpr double kInvestigateMinCommRatio = 0.30;
/// Investigate when the 2-rank speedup is below this. Source: scalescope brief (as kHealthyMaxCommRatio).
inline constexpr double kInvestigateMaxSpeedupAt2 = 1.2;

/// Ordered by severity: a larger value is worse, so the overall verdict is the maximum.
enum class Verdict { healthy, watch, investigate };

/// "healthy", "watch" or "investigate".
std::string_view to_string(Verdict v) noexcept;

/// A verdict and why: short sentences quoting the figure and the threshold, e.g. "comm ratio 34.1 % > 30 %".
struct VerdictFinding {
  Verdict verdict = Verdict::healthy;
  std::vector<std::string> reasons;
};

/// Speedup a run at `world_size` ranks must exceed to be healthy: kHealthyMinSpeedupAt2 · N/2 = 0.85·N
/// (exactly 1.7 at N = 2). The seed only gives the 2-GPU number; scaling it by N/2 keeps the same
/// per-rank efficiency (85 %) and is scalescope's extension. Throws core::Error if world_size < 2.
double healthy_min_speedup(int world_size);

/// Speedup below which a run at `world_size` ranks is investigated: kInvestigateMaxSpeedupAt2 · N/2 = 0.6·N
/// (exactly 1.2 at N = 2); scalescope's extension as for healthy_min_speedup(). Throws core::Error if
/// world_size < 2.
double investigate_max_speedup(int world_size);

/// Judges one world size N ≥ 2 from its speedup (dimensionless, ideal N) and comm ratio (all-reduce time /
/// single-rank compute time, a fraction, not a percentage). At N = 2 this is the seed's rule, literally and
/// with strict comparisons as the seed writes them:
///  - investigate if comm_ratio > 0.30 or speedup < 1.2;
///  - else healthy if comm_ratio < 0.15 and speedup > 1.7;
///  - else watch (so comm ratio exactly 0.15 or 0.30, speedup exactly 1.7 or 1.2, are all "watch").
/// For N > 2 the comm-ratio thresholds stay and the speedup thresholds scale by N/2 (healthy needs
/// speedup > 0.85·N, investigate if speedup < 0.6·N); see healthy_min_speedup().
/// Reasons: for investigate, every condition that triggered it; for healthy, both conditions met; for
/// watch, each figure that missed the healthy threshold.
/// Throws core::Error if world_size < 2 (a single rank has no scaling to judge), if speedup is not
/// positive and finite, or if comm_ratio is negative or not finite.
VerdictFinding judge(int world_size, double speedup, double comm_ratio);

/// Relative distance from a threshold within which near_thresholds() warns (10 %): a judgement from repeated
/// runs of one configuration on the project's 2-core machine, whose 2-rank comm ratio moved between 31.0 % and
/// 36.8 % in one hour (±9 % around its mean; bench/RESULTS.md, "the CPU doctor's run-to-run spread").
inline constexpr double kNearThresholdMargin = 0.10;

/// The figures of one world size N ≥ 2 that lie within kNearThresholdMargin (relative) of one of judge()'s
/// thresholds where crossing it would change the verdict (the figure mirrored to the other side, the other
/// figure kept), so that ordinary run-to-run variation could; one sentence each, e.g. "comm ratio 31.0 % is
/// within 10 % of the 30 % threshold". Empty when no such figure.
/// Throws as judge() for bad input.
std::vector<std::string> near_thresholds(int world_size, double speedup, double comm_ratio);

/// Combines the findings of several world sizes (pairs of N and judge()'s finding for it, any order): the
/// verdict is the worst one; the reasons are those of the world sizes that have that worst verdict, in
/// increasing N, each prefixed with "N=<world size>: ". Throws core::Error if the list is empty, a world
/// size is < 2, or a world size appears twice.
VerdictFinding judge_overall(std::span<const std::pair<int, VerdictFinding>> per_world_size);

/// "healthy" / "watch" / "investigate".
void to_json(nlohmann::json& j, Verdict v);
/// {"verdict": "...", "reasons": ["...", ...]}.
void to_json(nlohmann::json& j, const VerdictFinding& f);

}  // namespace scalescope::diagnose
