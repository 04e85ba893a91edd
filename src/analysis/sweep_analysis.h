#pragma once
// What a collective sweep says: the sustained bus bandwidth (plateau), the small-message latency, an α–β
// model of time versus size, and a grade against the bandwidth the caller expects. Pure functions.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/sweep.h"

namespace scalescope::analyze {

/// Which half of each row the analysis reads. Out-of-place is the default: in-place results of a 1-rank
/// reduce or all-to-all are no-ops with meaningless bandwidths (e.g. 43 046 GB/s on one RTX 5090).
enum class Direction { out_of_place, in_place };

/// Scalescope's definitions, with their defaults (see the struct fields of the results for their meaning).
struct AnalysisOptions {
  Direction direction = Direction::out_of_place;
  /// Plateau: the largest sizes whose busbw stay within this fraction of the run's maximum. 0.10 = 10 %.
  double plateau_tolerance = 0.10;
  /// Plateau: fewer sizes than this in the run means the sweep ends before bandwidth saturates.
  std::size_t plateau_min_sizes = 3;
  /// Latency window: sizes from 1 byte to this many bytes (8 KiB). At 8 KiB even a 10 GB/s bus adds
  /// < 1 µs to the typical 5–30 µs launch-and-handshake time, so time there is latency; nccl-tests' default
  /// -b 8 puts 11 sizes (8 B … 8 KiB) in the window.
  std::uint64_t latency_max_bytes = 8192;
  /// Bandwidth the caller expects from the hardware (GB/s, bus bandwidth), for the grade; none: no grade.
  std::optional<double> expected_busbw_gbps;
};

/// One size of the sweep as the analysis sees it: rows of equal size (several types, ops, cycles -N)
/// combined by their median. Bytes, µs, GB/s.
struct SizePoint {
  std::uint64_t size_bytes = 0;
  std::optional<double> time_us;
  std::optional<double> busbw_gbps;
  std::size_t rows = 0;  ///< rows combined into this point
};

/// The sweep's sizes in ascending order, 0-byte rows left out, for one direction.
std::vector<SizePoint> size_points(const Sweep& sweep, Direction direction);

/// The sustained large-message bus bandwidth. Scalescope's definition: walking down from the largest size,
/// the longest run of sizes whose busbw all lie within `tolerance` (10 %) of the run's maximum; the plateau
/// is the median busbw of that run. The median ignores one outlier size; the run being anchored at the
/// largest sizes reports what big gradient buckets get, not a mid-size peak (a cache or NVLS effect that
/// the largest sizes do not keep). Not nccl-tests' "Avg bus bandwidth", which averages every row.
struct Plateau {
  double busbw_gbps = 0;          ///< median busbw over the run, GB/s
  std::uint64_t from_bytes = 0;   ///< smallest size in the run
  std::uint64_t to_bytes = 0;     ///< largest size in the run (the sweep's largest with a busbw)
  std::size_t sizes = 0;          ///< sizes in the run
  /// sizes ≥ AnalysisOptions::plateau_min_sizes (3): the bandwidth has levelled off. False: the sweep may
  /// end before saturation (a tail of one or two sizes), so the plateau is a lower bound.
  bool saturated = false;
  double peak_busbw_gbps = 0;     ///< the highest busbw of any size, GB/s
  std::uint64_t peak_bytes = 0;   ///< its size
};

/// Small-message latency: the mean time of the sizes in [1 B, latency_max_bytes], µs.
struct Latency {
  double mean_time_us = 0;
  double min_time_us = 0;
  std::uint64_t from_bytes = 0;
  std::uint64_t to_bytes = 0;
  std::size_t sizes = 0;
};

/// Hockney's α–β model time = α + size/β_alg (R. W. Hockney, "The communication challenge for MPP: Intel
/// Paragon and Meiko CS-2", Parallel Computing 20(3), 1994), with size as nccl-tests' "size" column. Written
/// in bus terms time = α + size·factor/β_bus, β_bus = β_alg·factor is the busbw the model tends to for large
/// sizes. Fitted by weighted least squares with weights 1/time², i.e. minimising the sum of squared
/// *relative* errors, so 8-byte and 8-GB points count alike (plain least squares would fit the largest sizes
/// only and leave α meaningless). Closed form: centred weighted normal equations.
struct AlphaBetaFit {
  double alpha_us = 0;                      ///< fixed cost per call, µs (≥ 0: refitted with α = 0 if negative)
  double beta_alg_gbps = 0;                 ///< asymptotic algbw, GB/s
  std::optional<double> beta_bus_gbps;      ///< β_alg × bus factor, GB/s; none when the rank count is unknown
  std::optional<double> bus_factor;         ///< comm::bus_bandwidth_factor(collective, ranks)
  bool alpha_clamped = false;               ///< the unconstrained fit gave α < 0; α = 0 was imposed
  std::size_t points = 0;                   ///< sizes fitted
  double rms_relative_error = 0;            ///< sqrt(mean(((model − measured)/measured)²)), 0.05 = 5 %
  double max_relative_error = 0;            ///< largest |model − measured|/measured
  std::uint64_t max_error_bytes = 0;        ///< the size where it occurs
  /// Weighted R² = 1 − Σw(t−model)²/Σw(t−t̄_w)², w = 1/t²: the share of the (relative) variation of time
  /// over the sweep that the model explains.
  double r2 = 0;
};

/// The model's time for `bytes` (nccl-tests "size", bytes): α + bytes/β_alg, in µs (β in GB/s = 1e3 B/µs).
/// Throws core::Error when bytes is negative or not finite, or the fit has β_alg ≤ 0.
double predict_time_us(const AlphaBetaFit& fit, double bytes);

/// Scalescope's grade thresholds for plateau busbw as a share of the expected bandwidth: ≥ 80 % good,
/// ≥ 50 % fair, below poor. Why: tuned systems reach 80–95 % of the link's nominal per-direction rate in
/// nccl-tests busbw (protocol headers and synchronisation take the rest); below half usually means a wrong
/// path (PCIe or host memory instead of NVLink, TCP instead of RDMA, P2P disabled). A judgement, not a standard.
enum class GradeLabel { good, fair, poor };
constexpr double kGoodPercent = 80.0;
constexpr double kFairPercent = 50.0;
std::string_view to_string(GradeLabel g);

struct Grade {
  double expected_gbps = 0;   ///< as given, GB/s
  double percent = 0;         ///< plateau / expected × 100
  GradeLabel label = GradeLabel::poor;
};

/// Grades `plateau_gbps` against `expected_gbps`. Throws core::Error when expected_gbps is not a positive
/// finite number or plateau_gbps is negative or not finite.
Grade grade_bandwidth(double plateau_gbps, double expected_gbps);

struct SweepAnalysis {
  Direction direction = Direction::out_of_place;
  std::optional<Plateau> plateau;
  std::optional<Latency> latency;
  std::optional<AlphaBetaFit> fit;
  std::optional<Grade> grade;
  /// nccl-tests' "Avg bus bandwidth" recomputed: the mean busbw over every row, out-of-place and in-place,
  /// 0-byte rows included (nccl-tests src/common.cu adds each busbw to bw[0] and divides by their count).
  /// It depends on where the sweep starts and ends (a sweep from 8 B averages dozens of latency-bound
  /// near-zero values: 70.7 GB/s for a run whose plateau is 330 GB/s) and on in-place no-ops, so it is
  /// kept only for comparison with nccl-tests' footer.
  std::optional<double> nccl_tests_avg_busbw_gbps;
  /// Why a part is missing (no small sizes, single rank …) or worth a second look.
  std::vector<std::string> notes;
};

/// Runs all of the above over `sweep`. Throws core::Error only for invalid options (tolerance not in
/// [0, 1), min sizes 0, expected bandwidth ≤ 0); a sweep too short for a part leaves it empty with a note.
SweepAnalysis analyze_sweep(const Sweep& sweep, const AnalysisOptions& options = {});

/// Schema key of `scalescope comm`'s JSON report.
inline constexpr const char* kCommSchema = "scalescope.comm/1";
/// {"schema": "scalescope.comm/1", "sweep": …, "analysis": …}.
nlohmann::json comm_report_json(const Sweep& sweep, const SweepAnalysis& analysis);
/// {"schema": "scalescope.comm/1", "reports": [comm_report_json…]}: several sweeps in one document, as a live
/// `scalescope comm --collective all` run (with its "run") and `comm --from` on a text of several tables write it.
nlohmann::json comm_reports_json(nlohmann::json reports);

void to_json(nlohmann::json& j, const Plateau& p);
void to_json(nlohmann::json& j, const Latency& l);
void to_json(nlohmann::json& j, const AlphaBetaFit& f);
void to_json(nlohmann::json& j, const Grade& g);
void to_json(nlohmann::json& j, const SweepAnalysis& a);

}  // namespace scalescope::analyze
