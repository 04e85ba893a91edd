#include "diagnose/verdict.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace scalescope::diagnose {
namespace {

using core::Error;

void require_scaled(int world_size) {
  if (world_size < 2)
    throw Error(fmt::format("world size {} has no scaling to judge: a verdict needs 2 or more ranks", world_size));
}

std::string percent(double ratio) { return fmt::format("{:.1f} %", ratio * 100.0); }
std::string threshold_percent(double ratio) { return fmt::format("{:g} %", ratio * 100.0); }

// The speedup threshold as quoted in a reason; beyond N = 2 it says how it was derived.
std::string speedup_threshold(double value, double per_rank, int world_size) {
  if (world_size == 2) return fmt::format("{:g}", value);
  return fmt::format("{:g} ({:g}·N)", value, per_rank);
}

}  // namespace

std::string_view to_string(Verdict v) noexcept {
  switch (v) {
    case Verdict::healthy: return "healthy";
    case Verdict::watch: return "watch";
    case Verdict::investigate: return "investigate";
  }
  return "unknown";
}

double healthy_min_speedup(int world_size) {
  require_scaled(world_size);
  return kHealthyMinSpeedupAt2 * (world_size / 2.0);  // at N = 2 the factor is exactly 1
}

double investigate_max_speedup(int world_size) {
  require_scaled(world_size);
  return kInvestigateMaxSpeedupAt2 * (world_size / 2.0);
}

std::vector<std::string> near_thresholds(int world_size, double speedup, double comm_ratio) {
  const Verdict now = judge(world_size, speedup, comm_ratio).verdict;  // also the same validation
  std::vector<std::string> out;
  // Near a threshold, and would the same figure mirrored to the threshold's other side change the verdict?
  auto matters = [](double x, double t, auto verdict_at) {
    return std::abs(x - t) <= kNearThresholdMargin * t && verdict_at(std::max(2 * t - x, 0.0));
  };
  const std::string margin = threshold_percent(kNearThresholdMargin);
  for (double t : {kHealthyMaxCommRatio, kInvestigateMinCommRatio})
    if (matters(comm_ratio, t, [&](double c) { return judge(world_size, speedup, c).verdict != now; }))
      out.push_back(fmt::format("comm ratio {} is within {} of the {} threshold", percent(comm_ratio), margin,
                                threshold_percent(t)));
  for (double t : {investigate_max_speedup(world_size), healthy_min_speedup(world_size)})
    if (matters(speedup, t, [&](double sp) { return sp > 0 && judge(world_size, sp, comm_ratio).verdict != now; }))
      out.push_back(fmt::format("speedup {:.2f} is within {} of the {:g} threshold", speedup, margin, t));
  return out;
}

VerdictFinding judge(int world_size, double speedup, double comm_ratio) {
  require_scaled(world_size);
  if (!std::isfinite(speedup) || speedup <= 0.0)
    throw Error(fmt::format("speedup must be positive and finite, got {}", speedup));
  if (!std::isfinite(comm_ratio) || comm_ratio < 0.0)
    throw Error(fmt::format("comm ratio must be non-negative and finite, got {}", comm_ratio));

  const double healthy_speedup = healthy_min_speedup(world_size);
  const double investigate_speedup = investigate_max_speedup(world_size);
  const std::string healthy_s = speedup_threshold(healthy_speedup, kHealthyMinSpeedupAt2 / 2, world_size);
  const std::string investigate_s = speedup_threshold(investigate_speedup, kInvestigateMaxSpeedupAt2 / 2, world_size);
  const std::string ratio = percent(comm_ratio);
  const std::string sp = fmt::format("{:.2f}", speedup);

  VerdictFinding f;
  const bool comm_bad = comm_ratio > kInvestigateMinCommRatio;
  const bool speedup_bad = speedup < investigate_speedup;
  if (comm_bad || speedup_bad) {
    f.verdict = Verdict::investigate;
    if (comm_bad)
      f.reasons.push_back(fmt::format("comm ratio {} > {}", ratio, threshold_percent(kInvestigateMinCommRatio)));
    if (speedup_bad) f.reasons.push_back(fmt::format("speedup {} < {}", sp, investigate_s));
    return f;
  }
  const bool comm_good = comm_ratio < kHealthyMaxCommRatio;
  const bool speedup_good = speedup > healthy_speedup;
  if (comm_good && speedup_good) {
    f.verdict = Verdict::healthy;
    f.reasons.push_back(fmt::format("comm ratio {} < {}", ratio, threshold_percent(kHealthyMaxCommRatio)));
    f.reasons.push_back(fmt::format("speedup {} > {}", sp, healthy_s));
    return f;
  }
  f.verdict = Verdict::watch;
  if (!comm_good)
    f.reasons.push_back(fmt::format("comm ratio {} is between {} and {}", ratio,
                                    threshold_percent(kHealthyMaxCommRatio),
                                    threshold_percent(kInvestigateMinCommRatio)));
  if (!speedup_good)
    f.reasons.push_back(fmt::format("speedup {} is between {} and {}", sp, investigate_s, healthy_s));
  return f;
}

VerdictFinding judge_overall(std::span<const std::pair<int, VerdictFinding>> per_world_size) {
  if (per_world_size.empty()) throw Error("no world sizes to judge: the list of findings is empty");
  std::vector<const std::pair<int, VerdictFinding>*> sorted;
  for (const auto& entry : per_world_size) {
    require_scaled(entry.first);
    sorted.push_back(&entry);
  }
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->first < b->first; });
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i]->first == sorted[i - 1]->first)
      throw Error(fmt::format("world size {} is judged twice", sorted[i]->first));
  }

  VerdictFinding overall;
  for (const auto* entry : sorted) overall.verdict = std::max(overall.verdict, entry->second.verdict);
  for (const auto* entry : sorted) {
    if (entry->second.verdict != overall.verdict) continue;
    for (const auto& reason : entry->second.reasons)
      overall.reasons.push_back(fmt::format("N={}: {}", entry->first, reason));
  }
  return overall;
}

void to_json(nlohmann::json& j, Verdict v) { j = std::string(to_string(v)); }

void to_json(nlohmann::json& j, const VerdictFinding& f) {
  j = nlohmann::json{{"verdict", f.verdict}, {"reasons", f.reasons}};
}

}  // namespace scalescope::diagnose
