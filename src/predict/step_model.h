#pragma once
// The data-parallel step at N ranks predicted from one rank's step (pure C++, no CUDA): DDP's schedule rather than a
// formula. Gradient buckets become ready during backward, in order; each bucket's all-reduce starts when it is
// ready and the previous one has finished (one communication stream, as NCCL needs); while an all-reduce runs
// beside backward, backward's kernels are slowed by `contention` × the overlapped time (NCCL's kernels take SMs and
// memory bandwidth: measured on 2 × H200 as +1.3 to +1.9 ms of compute per step, bench/RESULTS.md 2026-11-29);
// what is left after backward is exposed communication; then the optimizer; ranks wait for the slowest
// (`sync_s` per step, the rank-to-rank spread). Weak scaling keeps each rank's batch, strong scaling divides it.
//
// Verdict as the seed defines it: comm ratio = the all-reduce time of a step / one rank's compute time; healthy if
// < 15 % and the 2-rank speedup > 1.7 (scaled with N), investigate if > 30 % or < 1.2 (diagnose/verdict.h).

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "predict/link_model.h"

namespace scalescope::predict {

/// One gradient bucket: bytes all-reduced, and when its last gradient is ready, seconds after backward starts.
/// When the head part of a tied embedding's gradient is ready, as a share of backward: the LM head's backward is
/// the first thing backward does. An assumption (not measured per model), printed with the what-if.
inline constexpr double kHeadReadyShare = 0.1;

struct Bucket {
  double bytes = 0;
  double ready_s = 0;
};

/// One rank's step, seconds. other_s: the rest of the step (data, host work) that scaling does not change.
struct StepProfile {
  double forward_s = 0, backward_s = 0, optimizer_s = 0, other_s = 0;
  std::vector<Bucket> buckets;  ///< in the order DDP all-reduces them (the last layers' first)
  int grad_element_bytes = 4;   ///< bytes per gradient element as measured (fp32 4, bf16 2)
  /// A tied embedding (scalescope's GPT): its tables' gradient bytes, in the last bucket when all-reduced, and
  /// the bytes one rank all-gathers instead (TrainResult's fields; 0: no such model, e.g. a DDP capture).
  double embedding_table_bytes = 0, embedding_gather_bytes = 0;
  std::string embedding_exchange = "all-reduce";  ///< the run's setting: "auto", "all-reduce" or "all-gather"
  /// The measured step's spread: its median absolute deviation over its median (≈ half the inter-quartile range,
  /// unmoved by a few slow steps; a train report: its rounds' coefficient of variation). 0 with fewer than three. Widens the band (predict_band).
  double step_spread = 0;
  std::string basis;            ///< where the figures come from
  std::vector<std::string> assumptions;
  double compute_s() const { return forward_s + backward_s + optimizer_s; }
  double step_s() const { return compute_s() + other_s; }
  double gradient_bytes() const;
};

/// Buckets for `total_bytes` of gradients produced at an even rate over `backward_s`: a first bucket of
/// `first_cap_bytes` (DDP: 1 MiB), then `cap_bytes` each, the last holding the rest; each ready when its last byte
/// is (DDP's bucket_cap_mb / first bucket). Throws core::UsageError for a cap ≤ 0.
std::vector<Bucket> even_buckets(double total_bytes, double backward_s, double cap_bytes, double first_cap_bytes);

/// What is changed against the measured run.
struct Scenario {
  int ranks = 2;
  bool strong = false;           ///< strong scaling: the global batch of the one-rank run split over the ranks
  bool overlap = true;           ///< false: every all-reduce after backward (DDP's no_sync + one all-reduce; --no-overlap)
  std::optional<double> bucket_cap_bytes;  ///< re-bucket (first bucket 1 MiB as DDP) when set
  std::optional<int> grad_element_bytes;   ///< all-reduce gradients of this size (2: bf16) instead of the measured
  double batch_factor = 1;       ///< per-rank batch × this (compute scales with it)
  /// The tied embedding's exchange at these ranks: "auto" (all-gather when one rank's gather bytes are under
  /// 2 × table bytes / ranks, the DP engine's rule), "all-reduce", "all-gather"; unset: the run's setting.
  std::optional<std::string> embedding_exchange;
  std::string label;             ///< "2 ranks", "bucket 100 MiB" …
};

/// The model's constants, with the source of their defaults.
struct ModelConstants {
  /// Backward slowdown per second of all-reduce beside it. Default 0.50: fitted by bench/predict_validation.cpp
  /// on 81 measured 2- and 4-GPU H200 steps (bench/RESULTS.md 2026-12-03; the grid 0–0.8). On 2 × H200, gpt2-124m,
  /// NCCL's kernels beside backward added +1.3 ms to 23.8 ms of backward while 3.9–5.9 ms of all-reduce ran
  /// (RESULTS.md 2026-11-29: 0.22–0.33 per second with the all-reduce at its alone speed).
  double contention = 0.50;
  /// All-reduce slowdown while it runs beside backward (its time there × (1 + this)): NCCL's kernels share the
  /// SMs and memory with backward's (an MLP's buckets reached 70 GB/s busbw beside backward against 316 GB/s
  /// alone on 2 × H200, RESULTS.md 2026-11-29). Default 0: the fit (bench/predict_validation.cpp, grid 0–4) chose
  /// 0 with contention 0.50 — the two trade against each other on NVLink, where little is exposed.
  double comm_beside = 0;
  /// Rank-to-rank spread per step at 2 ranks, seconds, growing as log2(N). Default 0.
  double sync_s = 0;
  /// The model's own error, relative, that predict_band adds to the band: the 80th percentile of |predicted step /
  /// measured − 1| over the rows the constants were fitted on (bench/predict_validation.cpp, printed as "model
  /// error"; bench/RESULTS.md 2026-12-07). Checked on the rows kept out of the fit.
  double model_error = 0.04;
};

struct Prediction {
  std::string label;
  int ranks = 0;
  bool strong = false;
  double step_s = 0, compute_s = 0, all_reduce_s = 0, exposed_s = 0, overlap = 0;
  double speedup = 0, efficiency = 0, comm_ratio = 0;
  std::string verdict;  ///< "healthy", "watch", "investigate"
  double tokens_factor = 1;  ///< samples per second against one rank (= speedup for weak scaling)
  /// The band (predict_band; 0 when not computed): the step and the efficiency the measured inputs allow.
  double step_lo_s = 0, step_hi_s = 0, efficiency_lo = 0, efficiency_hi = 0;
};

/// The step of `profile` under `s` over `link`. Throws core::UsageError for ranks < 1 or a batch factor ≤ 0.
Prediction predict_step(const StepProfile& profile, const LinkModel& link, const Scenario& s, const ModelConstants& k = {});

/// The contention the band spans: the fitted 0.50 ± 0.25 (the fit's grid gave errors within 1 % of its best from
/// 0.3 to 0.7 on NVLink rows, where little is exposed; bench/RESULTS.md 2026-12-03). An assumption, printed.
inline constexpr double kBandContentionLo = 0.25, kBandContentionHi = 0.75;

/// predict_step with its band: the step predicted at the corners of what the inputs allow — the link's all-reduce
/// times × (1 ∓ link.spread()), the contention from kBandContentionLo to kBandContentionHi — widened by the
/// measured step's own spread and by the model's error, each as a factor (the low end ÷ (1 + spread), the high end ×
/// (1 + spread), so the band stays above 0 and holds its centre whatever the spread);
/// the efficiency's band from the step's band, widened
/// again by the one-rank step's spread (the measured efficiency divides two noisy steps). The centre is
/// predict_step's with `k`. Throws as predict_step.
Prediction predict_band(const StepProfile& profile, const LinkModel& link, const Scenario& s, const ModelConstants& k = {});

void to_json(nlohmann::json& j, const Prediction& p);

}  // namespace scalescope::predict
