// Plateau, latency, α–β fit, grade and JSON of a sweep, on sweeps whose answers are known.

#include <gtest/gtest.h>

#include <cmath>

#include "analysis/sweep_analysis.h"
#include "core/error.h"

using namespace scalescope;
using namespace scalescope::analyze;

namespace {

// An all-reduce over 8 ranks that follows time = alpha + size/beta_alg exactly, 8 B … 1 GiB, nccl-tests' way.
Sweep model_sweep(double alpha_us, double beta_alg_gbps, int ranks = 8) {
  Sweep s;
  s.collective = comm::Collective::all_reduce;
  s.ranks = ranks;
  const double factor = comm::bus_bandwidth_factor(s.collective, ranks);
  for (std::uint64_t size = 8; size <= (1ull << 30); size *= 2) {
    SweepRow r;
    r.size_bytes = size;
    r.count = size / 4;
    r.type = comm::DataType::f32;
    const double t = alpha_us + static_cast<double>(size) / (beta_alg_gbps * 1e3);
    for (auto* d : {&r.out_of_place, &r.in_place}) {
      d->time_us = t;
      d->algbw_gbps = static_cast<double>(size) / t / 1e3;
      d->busbw_gbps = *d->algbw_gbps * factor;
      d->wrong = 0;
    }
    s.rows.push_back(r);
  }
  return s;
}

SweepRow row_with(std::uint64_t size, double time_us, double busbw) {
  SweepRow r;
  r.size_bytes = size;
  r.out_of_place.time_us = time_us;
  r.out_of_place.busbw_gbps = busbw;
  return r;
}

}  // namespace

TEST(SweepAnalysis, FitRecoversAnExactModel) {
  auto s = model_sweep(25.0, 180.0);
  auto a = analyze_sweep(s);
  ASSERT_TRUE(a.fit);
  EXPECT_NEAR(a.fit->alpha_us, 25.0, 1e-6);
  EXPECT_NEAR(a.fit->beta_alg_gbps, 180.0, 1e-6);
  EXPECT_NEAR(*a.fit->beta_bus_gbps, 180.0 * 1.75, 1e-6);
  EXPECT_DOUBLE_EQ(*a.fit->bus_factor, 1.75);
  EXPECT_LT(a.fit->rms_relative_error, 1e-9);
  EXPECT_NEAR(a.fit->r2, 1.0, 1e-9);
  EXPECT_EQ(a.fit->points, 28u);
  EXPECT_NEAR(predict_time_us(*a.fit, 1e9), 25.0 + 1e9 / 180e3, 1e-6);
  EXPECT_NEAR(predict_time_us(*a.fit, 0), 25.0, 1e-6);
  EXPECT_THROW(predict_time_us(*a.fit, -1), core::Error);
}

TEST(SweepAnalysis, BetaAsBusbwFollowsTheRowsWhenTheRankCountDisagrees) {
  // Rows with 4 ranks' busbw (1.5 × algbw) in a text whose device list says 8: the plateau is the rows' busbw, so
  // β as busbw must use 1.5 too, not 8 ranks' 1.75 beside it.
  auto s = model_sweep(25.0, 180.0, 4);
  s.ranks = 8;
  auto a = analyze_sweep(s);
  ASSERT_TRUE(a.fit);
  EXPECT_NEAR(*a.fit->bus_factor, 1.5, 1e-9);
  EXPECT_NEAR(*a.fit->beta_bus_gbps, 180.0 * 1.5, 1e-6);
  bool noted = false;
  for (const auto& n : a.notes) noted |= n.find("uses the rows' own busbw/algbw, 1.500, not 1.750") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(SweepAnalysis, FitWeighsSmallSizesLikeLargeOnes) {
  // Latency 10 µs; one 1 GiB outlier 30 % slow. Relative weighting keeps α at 10 µs; plain least squares
  // would bend α by the outlier's thousands of µs.
  auto s = model_sweep(10.0, 100.0);
  *s.rows.back().out_of_place.time_us *= 1.3;
  auto a = analyze_sweep(s);
  ASSERT_TRUE(a.fit);
  EXPECT_NEAR(a.fit->alpha_us, 10.0, 0.5);
  EXPECT_EQ(a.fit->max_error_bytes, 1ull << 30);
  EXPECT_GT(a.fit->max_relative_error, 0.15);
  EXPECT_GT(a.fit->rms_relative_error, 0.01);
}

TEST(SweepAnalysis, NegativeAlphaIsRefittedThroughZero) {
  Sweep s;
  s.rows = {row_with(1 << 20, 1.0, 1), row_with(2 << 20, 2.5, 1), row_with(4 << 20, 5.5, 1)};
  auto a = analyze_sweep(s);
  ASSERT_TRUE(a.fit);
  EXPECT_TRUE(a.fit->alpha_clamped);
  EXPECT_DOUBLE_EQ(a.fit->alpha_us, 0.0);
  EXPECT_FALSE(a.fit->beta_bus_gbps);  // no rank count
  EXPECT_GT(a.fit->beta_alg_gbps, 0);
}

TEST(SweepAnalysis, ASweepThatEndsUnderOneMebibyteFitsNoBandwidth) {
  // Below 1 MiB time is latency: no α–β bandwidth, and its "plateau" is no ceiling (not saturated), both said.
  Sweep s;
  for (std::uint64_t size = 8; size <= 512 * 1024; size *= 4) s.rows.push_back(row_with(size, 10 + size / 1e4, 1));
  const auto a = analyze_sweep(s);
  EXPECT_FALSE(a.fit);
  ASSERT_TRUE(a.plateau);
  EXPECT_FALSE(a.plateau->saturated);
  bool said = false;
  for (const auto& n : a.notes) said |= n.find("under 1 MiB") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(SweepAnalysis, PlateauIsTheStableTailNotThePeak) {
  Sweep s;
  // Rises, peaks at 64 MiB (mid-size effect), settles at ~400 for the four largest sizes.
  const double bw[] = {50, 150, 300, 520, 410, 400, 395, 405};
  std::uint64_t size = 1ull << 23;
  for (double b : bw) {
    s.rows.push_back(row_with(size, 100, b));
    size *= 2;
  }
  auto a = analyze_sweep(s);
  ASSERT_TRUE(a.plateau);
  EXPECT_EQ(a.plateau->sizes, 4u);  // 520 is more than 10 % above 395
  EXPECT_EQ(a.plateau->from_bytes, 1ull << 27);
  EXPECT_EQ(a.plateau->to_bytes, 1ull << 30);
  EXPECT_DOUBLE_EQ(a.plateau->busbw_gbps, 402.5);  // median of 410 400 395 405
  EXPECT_TRUE(a.plateau->saturated);
  EXPECT_DOUBLE_EQ(a.plateau->peak_busbw_gbps, 520);
  EXPECT_EQ(a.plateau->peak_bytes, 1ull << 26);
  EXPECT_FALSE(a.notes.empty());  // says that the peak is above the plateau
}

TEST(SweepAnalysis, PlateauOfARisingTailIsALowerBound) {
  Sweep s;
  s.rows = {row_with(1 << 20, 10, 100), row_with(1 << 21, 10, 200), row_with(1 << 22, 10, 300)};
  auto a = analyze_sweep(s);
  ASSERT_TRUE(a.plateau);
  EXPECT_EQ(a.plateau->sizes, 1u);
  EXPECT_FALSE(a.plateau->saturated);
  EXPECT_DOUBLE_EQ(a.plateau->busbw_gbps, 300);
}

TEST(SweepAnalysis, DuplicateSizesAreCombinedByMedian) {
  Sweep s;
  s.rows = {row_with(1024, 10, 1), row_with(1024, 12, 1), row_with(1024, 50, 1), row_with(0, 5, 0)};
  auto pts = size_points(s, Direction::out_of_place);
  ASSERT_EQ(pts.size(), 1u);  // 0-byte row left out
  EXPECT_EQ(pts[0].rows, 3u);
  EXPECT_DOUBLE_EQ(*pts[0].time_us, 12);
}

TEST(SweepAnalysis, LatencyWindowIsOneByteToEightKiB) {
  Sweep s;
  s.rows = {row_with(0, 1, 0), row_with(8, 10, 0), row_with(4096, 12, 0), row_with(8192, 14, 0), row_with(16384, 40, 0)};
  auto a = analyze_sweep(s);
  ASSERT_TRUE(a.latency);
  EXPECT_DOUBLE_EQ(a.latency->mean_time_us, 12.0);
  EXPECT_DOUBLE_EQ(a.latency->min_time_us, 10.0);
  EXPECT_EQ(a.latency->from_bytes, 8u);
  EXPECT_EQ(a.latency->to_bytes, 8192u);
  EXPECT_EQ(a.latency->sizes, 3u);
  Sweep big;
  big.rows = {row_with(1 << 29, 1000, 400), row_with(1u << 30, 2000, 410)};
  auto b = analyze_sweep(big);
  EXPECT_FALSE(b.latency);
  ASSERT_FALSE(b.notes.empty());
  bool said = false;
  for (const auto& n : b.notes) said = said || n.find("it starts at 512 MiB") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(SweepAnalysis, GradeThresholds) {
  EXPECT_EQ(grade_bandwidth(80, 100).label, GradeLabel::good);
  EXPECT_EQ(grade_bandwidth(79.9, 100).label, GradeLabel::fair);
  EXPECT_EQ(grade_bandwidth(50, 100).label, GradeLabel::fair);
  EXPECT_EQ(grade_bandwidth(49.9, 100).label, GradeLabel::poor);
  EXPECT_DOUBLE_EQ(grade_bandwidth(360, 450).percent, 80.0);
  EXPECT_THROW(grade_bandwidth(10, 0), core::Error);
  EXPECT_THROW(grade_bandwidth(10, -5), core::Error);
  EXPECT_THROW(grade_bandwidth(10, std::nan("")), core::Error);
  AnalysisOptions o;
  o.expected_busbw_gbps = 450;
  auto a = analyze_sweep(model_sweep(20, 200), o);
  ASSERT_TRUE(a.grade);
  // Plateau: 64 MiB … 1 GiB are within 10 % of 348.7 GB/s; their median (256 MiB) is 344.9 GB/s = 76.6 %.
  EXPECT_NEAR(a.plateau->busbw_gbps, 344.9, 0.1);
  EXPECT_EQ(a.plateau->sizes, 5u);
  EXPECT_EQ(a.grade->label, GradeLabel::fair);
  EXPECT_NEAR(a.grade->percent, a.plateau->busbw_gbps / 450 * 100, 1e-9);
  o.expected_busbw_gbps = 400;
  EXPECT_EQ(analyze_sweep(model_sweep(20, 200), o).grade->label, GradeLabel::good);
  o.expected_busbw_gbps = 0;
  EXPECT_THROW(analyze_sweep(model_sweep(20, 200), o), core::Error);
}

TEST(SweepAnalysis, NcclTestsAverageCountsEveryRowAndDirection) {
  Sweep s;
  s.rows = {row_with(0, 1, 0), row_with(8, 10, 2), row_with(16, 10, 4)};
  s.rows[2].in_place.busbw_gbps = 6;
  auto a = analyze_sweep(s);
  EXPECT_DOUBLE_EQ(*a.nccl_tests_avg_busbw_gbps, 3.0);  // (0 + 2 + 4 + 6) / 4
}

TEST(SweepAnalysis, EmptyOrTimelessSweepsLeaveNotes) {
  Sweep s;
  s.rows = {row_with(0, 1, 0)};
  auto a = analyze_sweep(s);
  EXPECT_FALSE(a.plateau);
  EXPECT_FALSE(a.latency);
  EXPECT_FALSE(a.fit);
  EXPECT_GE(a.notes.size(), 3u);
}

TEST(SweepAnalysis, JsonHasTheSchemaAndNulls) {
  auto s = model_sweep(25.0, 180.0);
  s.rows[0].in_place.wrong.reset();
  AnalysisOptions o;
  o.expected_busbw_gbps = 350;  // plateau ≈ 309 GB/s (β_bus 315): 88 %
  auto j = comm_report_json(s, analyze_sweep(s, o));
  EXPECT_EQ(j["schema"], "scalescope.comm/1");
  EXPECT_EQ(j["sweep"]["collective"], "all_reduce");
  EXPECT_EQ(j["sweep"]["ranks"], 8);
  EXPECT_TRUE(j["sweep"]["rows"][0]["in_place"]["wrong"].is_null());
  EXPECT_TRUE(j["sweep"]["rows"][0]["root"].is_null());
  EXPECT_EQ(j["sweep"]["rows"][0]["type"], "float");
  EXPECT_NEAR(j["analysis"]["fit"]["alpha_us"].get<double>(), 25.0, 1e-6);
  EXPECT_EQ(j["analysis"]["grade"]["label"], "good");
  EXPECT_EQ(j["analysis"]["direction"], "out_of_place");
  EXPECT_TRUE(j["analysis"]["plateau"].is_object());
}
