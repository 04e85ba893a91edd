// The predictor's parts on the CPU: the link model from a measured sweep and from a named link, DDP's bucket
// schedule (overlap, exposed communication, contention), the what-if levers, and the reports it starts from.

#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "predict/inputs.h"
#include "predict/link_model.h"
#include "predict/step_model.h"

namespace {

using namespace scalescope;

analyze::Sweep sweep(int ranks, std::vector<std::pair<std::uint64_t, double>> rows) {
  analyze::Sweep s;
  s.ranks = ranks;
  s.source = "test";
  for (auto [b, us] : rows) {
    analyze::SweepRow r;
    r.size_bytes = b;
    r.out_of_place.time_us = us;
    s.rows.push_back(r);
  }
  return s;
}

TEST(LinkModel, InterpolatesTheMeasuredSweepAndScalesToOtherRankCounts) {
  // 2 ranks: 20 µs floor, then 1 GB/s·… : 1 MB in 120 µs, 100 MB in 10'020 µs (busbw 10 GB/s at 2 ranks).
  const auto m = predict::LinkModel::from_sweeps({sweep(2, {{8, 20}, {1000000, 120}, {100000000, 10020}})}, "t");
  EXPECT_NEAR(m.all_reduce_s(8, 2), 20e-6, 1e-12);
  EXPECT_NEAR(m.all_reduce_s(1, 2), 20e-6, 1e-12);               // below the smallest size: the floor
  EXPECT_NEAR(m.all_reduce_s(1000000, 2), 120e-6, 1e-12);         // a measured size exactly
  EXPECT_GT(m.all_reduce_s(10000000, 2), 120e-6);                 // between: log–log
  EXPECT_LT(m.all_reduce_s(10000000, 2), 10020e-6);
  EXPECT_NEAR(m.all_reduce_s(200000000, 2), 2 * 10020e-6, 1e-9);  // above: the largest size's bandwidth
  // 4 ranks from 2: latency × 3, bandwidth part × f(4)/f(2) = 1.5 / 1.
  EXPECT_NEAR(m.all_reduce_s(100000000, 4), 60e-6 + 10000e-6 * 1.5, 1e-9);
  EXPECT_EQ(m.all_reduce_s(100, 1), 0);
}

TEST(LinkModel, RefusesSweepsItCannotUse) {
  EXPECT_THROW(predict::LinkModel::from_sweeps({sweep(1, {{8, 20}})}, "one-rank"), core::Error);
  auto ag = sweep(2, {{8, 20}});
  ag.collective = comm::Collective::all_gather;
  EXPECT_THROW(predict::LinkModel::from_sweeps({ag}, "all-gather"), core::Error);
}

TEST(LinkModel, NamedLinksComeFromTheHardwareTable) {
  const auto nv = predict::LinkModel::named("H200:NV18");
  EXPECT_NE(nv.description().find("NV18"), std::string::npos);
  EXPECT_FALSE(nv.assumptions().empty());
  const auto net = predict::LinkModel::named("net:100");
  // 100 Gb/s → 12 GB/s busbw: 1 GB over 2 ranks ≈ 1e9 / 12e9 s plus one ring step.
  EXPECT_NEAR(net.all_reduce_s(1e9, 2), 1e9 / (100 / 8.0 * 0.96 * 1e9) + 20.7e-6, 1e-6);
  EXPECT_GT(net.all_reduce_s(1e9, 2), nv.all_reduce_s(1e9, 2) * 10);
  for (const char* bad : {"nvlink", "H200:", "net:abc", "net:-1", "NoSuchGPU:NV4", "H200:QQ"})
    EXPECT_THROW(predict::LinkModel::named(bad), core::UsageError) << bad;
}

predict::StepProfile profile(double grad_bytes) {
  predict::StepProfile p;
  p.forward_s = 0.010, p.backward_s = 0.020, p.optimizer_s = 0.002;
  p.buckets = predict::even_buckets(grad_bytes, p.backward_s, 25.0 * 1024 * 1024, 1024.0 * 1024);
  return p;
}

TEST(StepModel, EvenBucketsFollowDdpsCaps) {
  const auto b = predict::even_buckets(60.0 * 1024 * 1024, 1.0, 25.0 * 1024 * 1024, 1024.0 * 1024);
  ASSERT_EQ(b.size(), 4u);  // 1 + 25 + 25 + 9 MiB
  EXPECT_DOUBLE_EQ(b[0].bytes, 1024.0 * 1024);
  EXPECT_DOUBLE_EQ(b[3].bytes, 9.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(b[3].ready_s, 1.0);  // the last bucket at backward's end
  EXPECT_THROW(predict::even_buckets(1, 1, 0, 1), core::UsageError);
}

TEST(StepModel, OverlapHidesWhatBackwardCoversAndNoOverlapExposesEverything) {
  // 1 GB/s busbw at 2 ranks: 10 MB takes 10 ms.
  const auto link = predict::LinkModel::from_sweeps({sweep(2, {{1, 1e-3}, {10000000, 10000}})}, "t");
  const auto p = profile(10e6);
  predict::ModelConstants k;
  k.contention = 0;
  predict::Scenario s;
  s.ranks = 2;
  const auto on = predict::predict_step(p, link, s, k);
  EXPECT_NEAR(on.all_reduce_s, 0.010, 1e-4);
  // The last bucket (≈ 9 MB) is ready only at backward's end: most of the time is exposed.
  EXPECT_GT(on.exposed_s, 0.005);
  EXPECT_LT(on.exposed_s, on.all_reduce_s);
  s.overlap = false;
  const auto off = predict::predict_step(p, link, s, k);
  EXPECT_NEAR(off.exposed_s, off.all_reduce_s, 1e-9);
  EXPECT_GT(off.step_s, on.step_s);
  EXPECT_NEAR(off.step_s, 0.032 + off.all_reduce_s, 1e-6);
  EXPECT_NEAR(off.comm_ratio, off.all_reduce_s / 0.032, 1e-6);
  // Contention slows backward by the overlapped time.
  k.contention = 0.5;
  s.overlap = true;
  const auto slowed = predict::predict_step(p, link, s, k);
  EXPECT_GT(slowed.compute_s, on.compute_s);
}

TEST(StepModel, WhatIfLeversMoveTheStepTheRightWay) {
  const auto link = predict::LinkModel::named("net:25");
  const auto p = profile(100e6);
  predict::Scenario base;
  base.ranks = 4;
  const auto b = predict::predict_step(p, link, base);
  auto half = base;
  half.grad_element_bytes = 2;  // measured fp32 (4): bf16 halves the bytes
  EXPECT_NEAR(predict::predict_step(p, link, half).all_reduce_s, b.all_reduce_s / 2, b.all_reduce_s * 0.01);
  auto batch = base;
  batch.batch_factor = 2;
  EXPECT_GT(predict::predict_step(p, link, batch).efficiency, b.efficiency);  // more compute hides more
  auto strong = base;
  strong.strong = true;
  EXPECT_LT(predict::predict_step(p, link, strong).efficiency, b.efficiency);
  EXPECT_EQ(b.verdict, "investigate");  // 100 MB over 25 Gb/s against 32 ms of compute
  auto none = base;
  none.ranks = 0;
  EXPECT_THROW(predict::predict_step(p, link, none), core::UsageError);
}

TEST(Inputs, TrainReportAtOneRankBecomesAProfile) {
  nlohmann::json r = {{"schema", "scalescope.train/1"},
                      {"config", {{"world_size", 1}, {"model", {{"name", "tiny-14m"}}}}},
                      {"phases", {{"forward_s", 0.010}, {"backward_s", 0.020}, {"optimizer_s", 0.002}, {"total_s", 0.033}}},
                      {"step_s", {{"trimmed_mean", 0.034}, {"mean", 0.035}}},
                      {"bucket_bytes", {1048576, 55000000}},
                      {"parameters", 14012144}};
  const auto in = predict::run_from_report(r, "t.json");
  EXPECT_NEAR(in.profile.other_s, 0.002, 1e-12);  // the trimmed mean less the phases
  ASSERT_EQ(in.profile.buckets.size(), 2u);
  EXPECT_DOUBLE_EQ(in.profile.buckets[1].ready_s, 0.020);
  EXPECT_EQ(in.profile.grad_element_bytes, 4);
  EXPECT_EQ(in.model, "tiny-14m");
  r["config"]["world_size"] = 2;
  EXPECT_THROW(predict::run_from_report(r, "t.json"), core::Error);
  EXPECT_THROW(predict::run_from_report(nlohmann::json{{"schema", "scalescope.comm/1"}}, "c.json"), core::Error);
  r["config"]["world_size"] = 1;
  r.erase("bucket_bytes");
  EXPECT_THROW(predict::run_from_report(r, "t.json"), core::Error);
}

}  // namespace

#include <fstream>

#include "evidence/record_facts.h"
#include "predict/fix_gain.h"

namespace {

TEST(FixGain, TheNoOverlapFixCarriesThePredictedStep) {
  std::ifstream in(std::string(SCALESCOPE_SOURCE_DIR) + "/tests/fixtures/diagnosis/no-overlap/train.json");
  ASSERT_TRUE(in);
  const auto j = nlohmann::json::parse(in);
  auto d = diagnose::diagnose(diagnose::facts_from_scalescope_json(j, "train.json").facts);
  ASSERT_TRUE(d.primary);
  ASSERT_EQ(d.primary->cause, "no-overlap");
  EXPECT_TRUE(d.primary->predicted.empty());
  predict::attach_fix_gains(d, j);
  const auto& text = d.primary->predicted;
  ASSERT_FALSE(text.empty());
  // "bucketed overlap on: 3999.26 → X ms per step at 2 ranks, efficiency A → B %": the step falls, the efficiency rises.
  double before = 0, after = 0;
  ASSERT_EQ(std::sscanf(text.c_str(), "bucketed overlap on: %lf → %lf ms", &before, &after), 2) << text;
  EXPECT_NEAR(before, 3999.26, 0.01);
  EXPECT_LT(after, before);
  EXPECT_GT(after, before - 303.7);  // it cannot win back more than the exposed communication
  // A report without what the model needs leaves the diagnosis as it was.
  auto d2 = d;
  d2.primary->predicted.clear();
  predict::attach_fix_gains(d2, nlohmann::json{{"schema", "scalescope.train/1"}});
  EXPECT_TRUE(d2.primary->predicted.empty());
}

}  // namespace

namespace {

using namespace scalescope;

TEST(PredictInputs, BucketReadyTimesComeFromTheOneRankTraceOfAProfiledDdpJob) {
  // A one-rank DDP job profiled on an H200 (tests/fixtures/profile-h200/none): 8 buckets, 5 profiled steps.
  const std::string dir = std::string(SCALESCOPE_SOURCE_DIR) + "/tests/fixtures/profile-h200/none/";
  std::ifstream in(dir + "capture.rank0.json");
  ASSERT_TRUE(in) << dir;
  auto run = predict::run_from_report(nlohmann::json::parse(in), dir + "capture.rank0.json");
  const auto even = run.profile.buckets;
  std::string why;
  ASSERT_TRUE(predict::ready_times_from_trace(run, dir + "trace.rank0.json.gz", &why)) << why;
  const auto& b = run.profile.buckets;
  ASSERT_EQ(b.size(), 8u);
  for (std::size_t i = 1; i < b.size(); ++i) EXPECT_GE(b[i].ready_s, b[i - 1].ready_s) << i;  // in bucket order
  EXPECT_NEAR(b.back().ready_s, run.profile.backward_s, 1e-12);  // the last at backward's end
  EXPECT_GE(b.front().ready_s, 0.0);
  bool differs = false;  // measured, not the even-rate guess
  for (std::size_t i = 0; i + 1 < b.size(); ++i) differs |= std::abs(b[i].ready_s - even[i].ready_s) > 1e-5;
  EXPECT_TRUE(differs);
  bool said = false;
  for (const auto& a : run.profile.assumptions) {
    EXPECT_EQ(a.rfind("buckets become ready at an even rate", 0), std::string::npos) << a;
    said |= a.find("measured in the trace") != std::string::npos;
  }
  EXPECT_TRUE(said);
}

TEST(PredictInputs, ATraceThatCannotTimeTheBucketsLeavesTheInputAsItWas) {
  const std::string dir = std::string(SCALESCOPE_SOURCE_DIR) + "/tests/fixtures/profile-h200/none/";
  std::ifstream in(dir + "capture.rank0.json");
  auto run = predict::run_from_report(nlohmann::json::parse(in), dir + "capture.rank0.json");
  const auto before = run.profile.buckets;
  std::string why;
  EXPECT_FALSE(predict::ready_times_from_trace(run, dir + "job.log", &why));  // not a trace
  EXPECT_FALSE(why.empty());
  run.profile.buckets.push_back({1e6, 0});  // one bucket more than the trace has calls per step
  EXPECT_FALSE(predict::ready_times_from_trace(run, dir + "trace.rank0.json.gz", &why));
  EXPECT_NE(why.find("calls per step"), std::string::npos) << why;
  for (std::size_t i = 0; i < before.size(); ++i) EXPECT_EQ(run.profile.buckets[i].ready_s, before[i].ready_s);
}

}  // namespace

namespace {

TEST(LinkModelAlgorithms, BetweenNodesSmallMessagesTakeTheTreeAndLargeOnesTheRing) {
  // 8 H200s per node over NVLink, 8 × 400 Gb/s per node between nodes.
  const auto m = predict::LinkModel::named("H200:NV18").with_network(8, 400, 8);
  // 1024 ranks, 1 MiB: a ring of 1023 steps of ~20 µs is ~21 ms of latency; a tree over 128 nodes ~0.4 ms.
  const auto small = m.costs(1 << 20, 1024);
  EXPECT_LT(small.tree_s, small.ring_s / 10);
  EXPECT_EQ(m.algorithm(1 << 20, 1024), "tree");
  EXPECT_DOUBLE_EQ(m.all_reduce_s(1 << 20, 1024), small.tree_s);
  // 16 ranks (2 nodes), 4 GB: bandwidth decides, and the ring has more of it.
  const auto large = m.costs(4e9, 16);
  EXPECT_LT(large.ring_s, large.tree_s);
  EXPECT_EQ(m.algorithm(4e9, 16), "ring");
  // Inside one node there is only the ring.
  EXPECT_EQ(m.algorithm(1 << 20, 8), "ring");
  const auto inside = m.costs(1 << 20, 8);
  EXPECT_DOUBLE_EQ(inside.ring_s, inside.tree_s);
  // More nodes never make the tree's latency smaller.
  EXPECT_LE(m.costs(8, 64).tree_s, m.costs(8, 1024).tree_s);
}

}  // namespace

namespace {

nlohmann::json train_report(bool with_ready) {
  nlohmann::json r = {{"schema", "scalescope.train/1"}, {"config", {{"world_size", 1}}},
                      {"phases", {{"forward_s", 0.010}, {"backward_s", 0.020}, {"optimizer_s", 0.002}, {"total_s", 0.033}}},
                      {"bucket_bytes", {1000000, 26000000, 26000000}},
                      {"parameters", 13250000}};
  if (with_ready) r["bucket_ready_s"] = {0.001, 0.004, 0.019};
  return r;
}

TEST(PredictInputs, TheDpEnginesOwnBucketReadyTimesReplaceTheEvenRate) {
  const auto even = predict::run_from_report(train_report(false), "even.json");
  const auto measured = predict::run_from_report(train_report(true), "ready.json");
  ASSERT_EQ(measured.profile.buckets.size(), 3u);
  EXPECT_DOUBLE_EQ(measured.profile.buckets[0].ready_s, 0.001);
  EXPECT_DOUBLE_EQ(measured.profile.buckets[1].ready_s, 0.004);
  EXPECT_DOUBLE_EQ(measured.profile.buckets[2].ready_s, 0.019);
  EXPECT_NE(even.profile.buckets[1].ready_s, 0.004);  // the even rate put it elsewhere
  bool said = false;
  for (const auto& a : measured.profile.assumptions) said |= a.find("measured by the DP engine") != std::string::npos;
  EXPECT_TRUE(said);
  // A list that does not match the buckets is not used.
  auto odd = train_report(true);
  odd["bucket_ready_s"] = {0.001};
  const auto fallback = predict::run_from_report(odd, "odd.json");
  EXPECT_DOUBLE_EQ(fallback.profile.buckets[1].ready_s, even.profile.buckets[1].ready_s);
}

}  // namespace

namespace {

TEST(StepModelEmbedding, AllGatheringTheTiedEmbeddingTakesItsTableOutOfTheLastBucket) {
  predict::StepProfile p;
  p.forward_s = 0.010;
  p.backward_s = 0.020;
  p.optimizer_s = 0.002;
  p.buckets = {{26e6, 0.006}, {26e6, 0.013}, {160e6, 0.020}};  // the last holds a 154 MB tied table
  p.embedding_table_bytes = 154e6;
  p.embedding_gather_bytes = 25e6;
  p.embedding_exchange = "auto";
  const auto link = predict::LinkModel::named("H200:NV18");
  predict::Scenario s;
  s.ranks = 2;
  predict::ModelConstants k;
  s.embedding_exchange = "all-reduce";
  const auto reduce = predict::predict_step(p, link, s, k);
  s.embedding_exchange = "all-gather";
  const auto gather = predict::predict_step(p, link, s, k);
  s.embedding_exchange.reset();  // the run's "auto": 25 MB < 2 × 154 MB / 2, so all-gather
  const auto automatic = predict::predict_step(p, link, s, k);
  EXPECT_LT(gather.exposed_s, reduce.exposed_s);  // 154 MB after backward against 25 MB gathered
  EXPECT_DOUBLE_EQ(automatic.step_s, gather.step_s);
  // A gather larger than the table's share: auto keeps the all-reduce.
  p.embedding_gather_bytes = 400e6;
  const auto big = predict::predict_step(p, link, s, k);
  s.embedding_exchange = "all-reduce";
  EXPECT_DOUBLE_EQ(big.step_s, predict::predict_step(p, link, s, k).step_s);
  // A DDP capture has no embedding figures: the setting changes nothing.
  p.embedding_table_bytes = p.embedding_gather_bytes = 0;
  s.embedding_exchange = "all-gather";
  const auto ddp = predict::predict_step(p, link, s, k);
  s.embedding_exchange = "all-reduce";
  EXPECT_DOUBLE_EQ(ddp.step_s, predict::predict_step(p, link, s, k).step_s);
}

}  // namespace
