#include "core/stats.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"

namespace scalescope::core {
namespace {

// Sorted copy after checking that every value is a finite number (a NaN would make sorting meaningless).
std::vector<double> sorted_finite(std::span<const double> samples, const char* what) {
  if (samples.empty()) throw Error(fmt::format("cannot compute {} of an empty sample", what));
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (!std::isfinite(samples[i]))
      throw Error(fmt::format("cannot compute {}: sample {} is {} (not a finite number)", what, i, samples[i]));
  }
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

// Hyndman & Fan type 7 on an already sorted, non-empty sample.
double quantile_sorted(const std::vector<double>& x, double q) {
  const double h = static_cast<double>(x.size() - 1) * q;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  if (lo + 1 >= x.size()) return x.back();
  return x[lo] + (h - static_cast<double>(lo)) * (x[lo + 1] - x[lo]);
}

double mean_of(std::span<const double> x) {
  double sum = 0;
  for (double v : x) sum += v;
  return sum / static_cast<double>(x.size());
}

}  // namespace

void MeasurementProtocol::validate() const {
  if (warmup_rounds < 0)
    throw UsageError(fmt::format("warm-up rounds must be ≥ 0, got {}", warmup_rounds),
                     "pass 0 or more warm-up rounds (the seed protocol uses 3)");
  if (timed_rounds < 1)
    throw UsageError(fmt::format("timed rounds must be ≥ 1, got {}", timed_rounds),
                     "pass 1 or more timed rounds (the seed protocol uses 5)");
  if (steps_per_round < 1)
    throw UsageError(fmt::format("steps per round must be ≥ 1, got {}", steps_per_round),
                     "pass 1 or more steps per round");
  if (warmup_rounds > kMaxRounds || timed_rounds > kMaxRounds || steps_per_round > kMaxStepsPerRound)
    throw UsageError(fmt::format("{} warm-up rounds, {} timed rounds and {} steps per round: at most {} rounds of each "
                                 "kind and {} steps per round",
                                 warmup_rounds, timed_rounds, steps_per_round, kMaxRounds, kMaxStepsPerRound),
                     "pass fewer rounds or steps (the seed protocol: 3 warm-up and 5 timed rounds)");
}

bool MeasurementProtocol::is_seed_compliant() const noexcept { return warmup_rounds >= 3 && timed_rounds >= 5; }

double quantile(std::span<const double> samples, double q) {
  if (!(q >= 0.0 && q <= 1.0)) throw Error(fmt::format("quantile level must be in [0, 1], got {}", q));
  return quantile_sorted(sorted_finite(samples, "a quantile"), q);
}

Summary summarize(std::span<const double> samples) {
  const std::vector<double> x = sorted_finite(samples, "summary statistics");
  const std::size_t n = x.size();
  Summary s;
  s.count = n;
  s.mean = mean_of(x);
  // Dropping the extremes discards one outlier round on each side (a late warm-up, a background hiccup).
  s.trimmed_mean = n >= 3 ? mean_of(std::span<const double>(x).subspan(1, n - 2)) : s.mean;
  s.median = quantile_sorted(x, 0.5);
  s.min = x.front();
  s.max = x.back();
  s.p95 = quantile_sorted(x, 0.95);
  if (n > 1) {
    // Two-pass: summing squared deviations from the mean avoids the cancellation of E[x²] − E[x]².
    double ss = 0;
    for (double v : x) ss += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(ss / static_cast<double>(n - 1));
  }
  s.cv = s.mean == 0.0 ? 0.0 : s.stddev / s.mean;
  return s;
}

void to_json(nlohmann::json& j, const Summary& s) {
  j = nlohmann::json{{"count", s.count}, {"trimmed_mean", s.trimmed_mean}, {"mean", s.mean},
                     {"median", s.median}, {"min", s.min},                   {"max", s.max},
                     {"p95", s.p95},       {"stddev", s.stddev},             {"cv", s.cv}};
}

void to_json(nlohmann::json& j, const MeasurementProtocol& p) {
  j = nlohmann::json{
      {"warmup_rounds", p.warmup_rounds}, {"timed_rounds", p.timed_rounds}, {"steps_per_round", p.steps_per_round}};
}

}  // namespace scalescope::core
