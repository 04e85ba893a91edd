#pragma once
// Summary statistics over repeated timing rounds, and the measurement protocol that produces them.
// Pure functions: no clocks here, only numbers that were already measured.

#include <cstddef>
#include <span>

#include <nlohmann/json.hpp>

namespace scalescope::core {

/// How one configuration is timed. Seed protocol (scalescope brief): at least 3 warm-up rounds that are
/// discarded, then 5 timed rounds of `steps_per_round` training steps each; the headline figure is the mean
/// of the middle 3 timed rounds (Summary::trimmed_mean of the 5 round means).
struct MeasurementProtocol {
  /// Rounds run and discarded before timing (allocator, cuBLAS heuristics and NCCL rings warm up). ≥ 0.
  int warmup_rounds = 3;
  /// Rounds whose times are kept. ≥ 1.
  int timed_rounds = 5;
  /// Training steps per round; a round's time is the mean step time over these steps. ≥ 1.
  int steps_per_round = 10;

  /// The most rounds of either kind and steps per round: (warm-up + timed rounds) × steps per round, the steps
  /// of a run, stays within int (2e4 × 1e5 = 2e9 < 2^31).
  static constexpr int kMaxRounds = 10000;
  static constexpr int kMaxStepsPerRound = 100000;

  /// Throws core::UsageError naming the field and value if warmup_rounds < 0, timed_rounds < 1,
  /// steps_per_round < 1, or one is beyond kMaxRounds / kMaxStepsPerRound. Fewer warm-up or timed rounds than
  /// the seed asks for are accepted (quick runs); is_seed_compliant() reports them.
  void validate() const;

  /// True when the protocol is at least as strict as the seed's: warmup_rounds ≥ 3 and timed_rounds ≥ 5.
  /// More than 5 timed rounds is accepted as compliant: the trimmed mean still drops the extreme rounds.
  /// Does not validate; call validate() first.
  bool is_seed_compliant() const noexcept;
};

/// Statistics of one sample (e.g. the per-round step times of one configuration, in seconds; the fields
/// have the unit of the samples, cv is dimensionless).
struct Summary {
  std::size_t count = 0;     ///< number of samples, ≥ 1
  double trimmed_mean = 0;   ///< mean without one minimum and one maximum when count ≥ 3, else the mean
  double mean = 0;           ///< arithmetic mean
  double median = 0;         ///< 50th percentile (mean of the two middle values for an even count)
  double min = 0;
  double max = 0;
  double p95 = 0;            ///< 95th percentile, Hyndman & Fan type 7 (see quantile())
  double stddev = 0;         ///< sample standard deviation (divisor n − 1); 0 when count == 1
  double cv = 0;             ///< coefficient of variation stddev / mean (signed); 0 when mean == 0
};

/// The q-quantile of `samples` (any order) by linear interpolation between closest ranks: with the sorted
/// values x[0..n−1] and h = (n − 1)·q, returns x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋]).
/// Source: Hyndman & Fan (1996), "Sample quantiles in statistical packages", definition 7; numpy's default.
/// Throws core::Error if `samples` is empty, holds a NaN or infinity, or q is not in [0, 1].
double quantile(std::span<const double> samples, double q);

/// Summarises `samples` (any order, any unit). With the seed's 5 timed rounds, trimmed_mean is the mean
/// of the middle 3, the headline figure. Throws core::Error if `samples` is empty or holds a NaN or
/// infinity (naming its index).
Summary summarize(std::span<const double> samples);

/// JSON object with one key per field, named as the fields.
void to_json(nlohmann::json& j, const Summary& s);
/// JSON object {"warmup_rounds", "timed_rounds", "steps_per_round"}.
void to_json(nlohmann::json& j, const MeasurementProtocol& p);

}  // namespace scalescope::core
