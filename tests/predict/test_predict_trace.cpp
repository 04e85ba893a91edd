// The predictor's input from a PyTorch profiler trace alone (issue #38): the step, its parts and DDP's buckets read
// from the trace of a one-rank DDP job profiled on an H200 (tests/fixtures/profile-h200/none), the same prediction
// as its job directory where their steps agree, and the band beside every prediction.

#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "predict/inputs.h"
#include "predict/link_model.h"
#include "predict/step_model.h"
#include "predict/trace_step.h"
#include "readers/trace/trace_reader.h"

namespace {

using namespace scalescope;
namespace fs = std::filesystem;

const std::string kJob = std::string(SCALESCOPE_SOURCE_DIR) + "/tests/fixtures/profile-h200/none/";

TEST(PredictTrace, TheStepItsPartsAndTheBucketsComeFromTheTrace) {
  predict::TraceStep ts;
  std::string why;
  ASSERT_TRUE(predict::step_from_trace(analyze::read_trace_file(kJob + "trace.rank0.json.gz"), ts, &why)) << why;
  EXPECT_EQ(ts.steps, 5);
  // GPU-paced: the host's ProfilerStep ranges (7.9–10.8 ms) are shorter than the GPU's period (10.2–10.9 ms).
  EXPECT_TRUE(ts.gpu_bound);
  EXPECT_NEAR(ts.step_s * 1e3, 10.16, 0.05);
  EXPECT_GT(ts.backward_s, ts.forward_s);  // backward ~2x forward for an MLP
  EXPECT_GT(ts.forward_s, 0);
  EXPECT_NEAR(ts.forward_s + ts.backward_s + ts.optimizer_s, ts.step_s, 0.02 * ts.step_s);
  // DDP's 8 buckets as the capture's rebuilt_bucket_sizes give them (bytes: bf16 elements x 2).
  ASSERT_EQ(ts.bucket_bytes.size(), 8u);
  EXPECT_DOUBLE_EQ(ts.bucket_bytes[0], 33693728);
  double total = 0;
  for (double b : ts.bucket_bytes) total += b;
  EXPECT_DOUBLE_EQ(total, 268632096);  // the capture's ddp.gradient_bytes
  EXPECT_EQ(ts.dtype, "BFloat16");
  EXPECT_EQ(ts.element_bytes, 2);
  ASSERT_EQ(ts.ready_before_end_s.size(), 8u);
  EXPECT_DOUBLE_EQ(ts.ready_before_end_s.back(), 0);
  for (std::size_t i = 1; i < 8; ++i) EXPECT_LE(ts.ready_before_end_s[i], ts.ready_before_end_s[i - 1]) << i;
  EXPECT_EQ(ts.bucket_steps, 5);
}

TEST(PredictTrace, ATraceAloneGivesTheSamePredictionAsItsJobDirectory) {
  const auto link = predict::LinkModel::named("H200:NV18");
  const auto alone = predict::run_from_path(kJob + "trace.rank0.json.gz");
  const auto job = predict::run_from_path(kJob);
  // The job directory's step is the median of 182 steps outside the profiled window (10.98 ms); the trace's, its
  // 5 profiled steps (10.16 ms). The scaling, which divides the two, agrees within 1 %.
  for (int n : {2, 4}) {
    predict::Scenario s;
    s.ranks = n;
    const auto a = predict::predict_step(alone.profile, link, s), b = predict::predict_step(job.profile, link, s);
    EXPECT_NEAR(a.efficiency / b.efficiency, 1, 0.01) << n;
    EXPECT_NEAR(a.all_reduce_s / b.all_reduce_s, 1, 1e-9) << n;  // the same buckets
  }
  // With the capture's steps set to the trace's own period, the two inputs are the same step: within 1 % at every
  // rank count, the step itself included.
  const auto dir = fs::temp_directory_path() / "scalescope_predict_trace_same_step";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(kJob + "trace.rank0.json.gz", dir / "trace.rank0.json.gz");
  std::ifstream in(kJob + "capture.rank0.json");
  auto capture = nlohmann::json::parse(in);
  for (auto& v : capture["step_ms"]) v = alone.profile.step_s() * 1e3;
  std::ofstream(dir / "capture.rank0.json") << capture.dump();
  const auto same = predict::run_from_path(dir.string());
  for (int n : {2, 4, 8}) {
    predict::Scenario s;
    s.ranks = n;
    const auto a = predict::predict_step(alone.profile, link, s), b = predict::predict_step(same.profile, link, s);
    EXPECT_NEAR(a.step_s / b.step_s, 1, 0.01) << n;
    EXPECT_NEAR(a.efficiency / b.efficiency, 1, 0.01) << n;
  }
  fs::remove_all(dir);
}

TEST(PredictTrace, ADirectoryHoldingOnlyTheTraceIsReadAsTheTrace) {
  const auto dir = fs::temp_directory_path() / "scalescope_predict_trace_only";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(kJob + "trace.rank0.json.gz", dir / "trace.rank0.json.gz");
  const auto run = predict::run_from_path(dir.string());
  EXPECT_NE(run.profile.basis.find("PyTorch profiler trace"), std::string::npos) << run.profile.basis;
  EXPECT_EQ(run.profile.buckets.size(), 8u);
  EXPECT_EQ(predict::run_input_files(dir.string()), std::vector<std::string>{(dir / "trace.rank0.json.gz").string()});
  bool cap = false;  // what the trace cannot give is said
  for (const auto& a : run.profile.assumptions) cap |= a.find("bucket_cap_mb") != std::string::npos;
  EXPECT_TRUE(cap);
  fs::remove_all(dir);
}

TEST(PredictTrace, WhatATraceLacksIsNamed) {
  const std::string cpu = std::string(SCALESCOPE_SOURCE_DIR) + "/tests/fixtures/profile-cpu/even/trace.rank0.json.gz";
  try {
    predict::run_from_path(cpu);
    FAIL() << "a CPU rank's trace has no GPU step";
  } catch (const core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no GPU work"), std::string::npos) << e.what();
  }
  const auto empty = fs::temp_directory_path() / "scalescope_predict_trace_none";
  fs::create_directories(empty);
  try {
    predict::run_from_path(empty.string());
    FAIL() << "an empty directory";
  } catch (const core::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("profiler trace"), std::string::npos) << e.what();
  }
  fs::remove_all(empty);
}

TEST(PredictBand, TheBandHoldsTheCentreAndWidensWithWhatIsLessKnown) {
  const auto job = predict::run_from_path(kJob);
  predict::Scenario s;
  s.ranks = 4;
  const auto named = predict::LinkModel::named("H200:NV18");
  const auto p = predict::predict_band(job.profile, named, s);
  EXPECT_LT(p.step_lo_s, p.step_s);
  EXPECT_GT(p.step_hi_s, p.step_s);
  EXPECT_LT(p.efficiency_lo, p.efficiency);
  EXPECT_GE(p.efficiency_hi, p.efficiency);
  EXPECT_LE(p.efficiency_hi, 1.0);  // no efficiency above 100 % from noise alone
  EXPECT_DOUBLE_EQ(p.step_s, predict::predict_step(job.profile, named, s).step_s);  // the centre is unchanged
  // A measured busbw (±3 %) is better known than a named link's (±15 %): a narrower band.
  const auto measured = predict::LinkModel::alpha_beta(360, "360 GB/s measured");
  const auto q = predict::predict_band(job.profile, measured, s);
  EXPECT_LT(q.step_hi_s - q.step_lo_s, p.step_hi_s - p.step_lo_s);
  // A noisier step, a wider band.
  auto noisy = job.profile;
  noisy.step_spread = job.profile.step_spread + 0.05;
  const auto r = predict::predict_band(noisy, named, s);
  EXPECT_GT(r.step_hi_s - r.step_lo_s, p.step_hi_s - p.step_lo_s);
  // However large the spread (one profiled step 3x the others), the step stays above 0 and the efficiency's band
  // holds the prediction.
  auto wild = job.profile;
  wild.step_spread = 1.33;
  const auto w = predict::predict_band(wild, named, s);
  EXPECT_GT(w.step_lo_s, 0);
  EXPECT_LE(w.efficiency_lo, w.efficiency);
  EXPECT_GE(w.efficiency_hi, w.efficiency);
  EXPECT_GE(w.efficiency_lo, 0);
  nlohmann::json j = p;
  ASSERT_TRUE(j.contains("step_ms_band"));
  EXPECT_NEAR(j["step_ms_band"][0].get<double>(), p.step_lo_s * 1e3, 1e-9);
  ASSERT_TRUE(j.contains("efficiency_band"));
}

TEST(PredictBand, AMeasuredSweepsSpreadComesFromItsTwoTimings) {
  analyze::Sweep sw;
  sw.ranks = 2;
  sw.source = "test";
  for (std::uint64_t b : {1u << 20, 1u << 24, 1u << 28}) {
    analyze::SweepRow r;
    r.size_bytes = b;
    r.out_of_place.time_us = static_cast<double>(b) / 1e5 * 1.10;  // out-of-place 10 % slower than in-place
    r.in_place.time_us = static_cast<double>(b) / 1e5;
    sw.rows.push_back(r);
  }
  const auto m = predict::LinkModel::from_sweeps({sw}, "test");
  EXPECT_NEAR(m.spread(), 2 * 0.1 / 2.1, 1e-9);
  sw.rows.resize(1);
  sw.rows[0].in_place.time_us = sw.rows[0].out_of_place.time_us;  // agreeing timings: the floor
  EXPECT_DOUBLE_EQ(predict::LinkModel::from_sweeps({sw}, "test").spread(), predict::kMinLinkSpread);
  EXPECT_DOUBLE_EQ(predict::LinkModel::named("H200:NV18").spread(), predict::kNamedLinkSpread);
  EXPECT_DOUBLE_EQ(m.scaled(2).all_reduce_s(1 << 24, 2), 2 * m.all_reduce_s(1 << 24, 2));
  EXPECT_THROW(m.scaled(0), core::UsageError);
}

}  // namespace
