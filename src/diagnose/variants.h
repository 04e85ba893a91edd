#pragma once
// What a table of measured variants says when its rows are compared: speedup and efficiency per GPU count, A/B
// differences between rows that differ in one condition (a feature on or off, DDP or DataParallel, an NCCL
// version, a topology description) and whether each exceeds run-to-run noise, how far one condition moves the
// figure, which node or GPU is common to the slow pairs of a pair list, and whether the GPU's own busy time
// stayed the same while the step grew (time spent outside compute). Pure functions over Measurement facts.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "facts/facts.h"

namespace scalescope::diagnose {

/// Relative difference below which two figures of one table are the same within run-to-run noise (5 %): step times
/// of a steady GPU job move 1–3 % between runs, a busy CPU machine's up to ±9 % (bench/RESULTS.md, the CPU
/// doctor's spread); 5 % separates the two without calling a GPU job's jitter a finding.
inline constexpr double kNoise = 0.05;
/// Rows of one table and quantity beyond which no pair of rows is compared (a series of trials or samples, not a set
/// of variants: its pairs would grow with the square of the rows).
inline constexpr std::size_t kMaxComparedRows = 160;

/// A row of a table: the measurement and where it was read.
struct Row {
  const Measurement* m = nullptr;
  const Provenance* where = nullptr;
};

/// How a multi-GPU row scales against the 1-GPU row of the same table and conditions.
struct ScalingRow {
  int gpus = 0;
  double speedup = 0;      ///< ideal = gpus
  double efficiency = 0;   ///< speedup / gpus
  Row row, base;
  /// How speedup was computed: "throughput ratio", "fixed work: time ratio", "per-step time, weak scaling assumed"
  std::string how;
  std::map<std::string, std::string> conditions;  ///< the row's dims other than "gpus"
};

/// Two rows of one table and quantity that differ in exactly one condition.
struct Comparison {
  std::string dim;          ///< "nvlink", "mode", "nccl_version" …
  std::string worse_value, better_value;  ///< the condition's value in each ("off" / "on", "DP" / "DDP")
  Row worse, better;
  double ratio = 1;         ///< how much worse, ≥ 1: time worse/better, or throughput better/worse
  bool beyond_noise = false;///< ratio − 1 > kNoise
  std::string quantity;
};

/// A pair list split into slow and fast pairs (the largest gap between sorted figures, at least 1.3×), and the
/// members that appear only in slow pairs.
struct PairSplit {
  std::vector<Row> slow, fast;
  double slow_median = 0, fast_median = 0;
  /// Members that appear in slow pairs and in no fast pair, most slow pairs first.
  std::vector<std::string> suspects;
  std::map<std::string, int> slow_pairs_of;   ///< member → slow pairs it is in
  std::map<std::string, int> fast_pairs_of;   ///< member → fast pairs it is in
  /// Slow pairs that contain none of the first suspect: another slow member must be among theirs.
  std::vector<Row> unexplained;
  bool higher_is_better = true;
};

/// A condition whose values move the figure by a large factor with the other conditions fixed.
struct Spread {
  std::string dim;
  double factor = 1;        ///< best / worst
  Row best, worst;
  std::map<std::string, std::string> fixed;   ///< the conditions held fixed
  int values = 0;           ///< distinct values of `dim` compared
};

/// Rows whose step time differs while the GPU's busy time (compute) stays the same: the difference is time the
/// GPU waits (communication, data, host).
struct ConstantCompute {
  Row slow_step, fast_step;
  Row slow_busy, fast_busy;
  double extra_s = 0;       ///< slow step − fast step
};

struct VariantAnalysis {
  std::vector<ScalingRow> scaling;
  std::vector<Comparison> comparisons;
  std::vector<PairSplit> pairs;
  std::vector<Spread> spreads;
  std::vector<ConstantCompute> constant_compute;
  std::vector<std::string> notes;
};

/// Analyses every Measurement of `facts`, table by table (rows group by source, table and quantity).
VariantAnalysis analyse_variants(const FactSet& facts);

/// The conditions of a row other than `except` and descriptive keys ("label", "note"), as one text.
std::string conditions_text(const std::map<std::string, std::string>& dims, const std::string& except = "");

}  // namespace scalescope::diagnose
