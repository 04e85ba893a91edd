#include <gtest/gtest.h>

#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "doctor/doctor.h"
#include "train/kernel_trace.h"

using namespace scalescope;

namespace {
train::TrainResult result(int world_size, double step, double compute_forward, double exposed, double data_wait,
                          double all_reduce, double backward = 0) {
  train::TrainResult r;
  r.config.world_size = world_size;
  r.step_seconds.trimmed_mean = step;
  r.phases.forward = compute_forward;
  r.phases.backward = backward;
  r.phases.exposed_comm = exposed;
  r.phases.data_wait = data_wait;
  r.phases.all_reduce_seconds = all_reduce;
  return r;
}
}  // namespace

TEST(Doctor, DefaultWorldSizesArePowersOfTwoThenAll) {
  EXPECT_EQ(doctor::default_world_sizes(1), (std::vector<int>{1}));
  EXPECT_EQ(doctor::default_world_sizes(2), (std::vector<int>{1, 2}));
  EXPECT_EQ(doctor::default_world_sizes(6), (std::vector<int>{1, 2, 4, 6}));
  EXPECT_EQ(doctor::default_world_sizes(8), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_THROW(doctor::default_world_sizes(0), core::Error);
}

TEST(Doctor, WeakScalingLossAddsUpToTheMeasuredLoss) {
  auto base = result(1, 0.100, 0.090, 0.001, 0.002, 0.0);
  auto four = result(4, 0.130, 0.105, 0.011, 0.004, 0.030);
  auto l = doctor::scaling_loss(core::ScalingMode::weak, base, four);
  EXPECT_DOUBLE_EQ(l.ideal, 0.100);
  EXPECT_NEAR(l.total(), 0.030, 1e-12);
  EXPECT_NEAR(l.exposed_comm, 0.010, 1e-12);
  EXPECT_NEAR(l.compute, 0.015, 1e-12);
  EXPECT_NEAR(l.data_wait, 0.002, 1e-12);
  EXPECT_NEAR(l.other, 0.003, 1e-12);
  EXPECT_NEAR(l.exposed_comm + l.compute + l.data_wait + l.other, l.total(), 1e-12);
}

TEST(Doctor, StrongScalingIdealIsTheShareOfOneRank) {
  auto base = result(1, 0.100, 0.090, 0.0, 0.004, 0.0);
  auto two = result(2, 0.060, 0.046, 0.004, 0.002, 0.010);
  auto l = doctor::scaling_loss(core::ScalingMode::strong, base, two);
  EXPECT_DOUBLE_EQ(l.ideal, 0.050);
  EXPECT_NEAR(l.compute, 0.001, 1e-12);
  EXPECT_NEAR(l.data_wait, 0.0, 1e-12);
  EXPECT_THROW(doctor::scaling_loss(core::ScalingMode::weak, two, base), core::Error);
}

TEST(Doctor, OverlapNoteOnlyWhenBackwardIsAtLeastTwiceTheAllReduce) {
  EXPECT_FALSE(doctor::overlap_note(result(2, 0.1, 0.0, 0.001, 0, 0.010, 0.015)).has_value());
  auto ok = doctor::overlap_note(result(2, 0.1, 0.0, 0.0009, 0, 0.010, 0.020));
  ASSERT_TRUE(ok.has_value());
  EXPECT_NE(ok->find("overlap OK"), std::string::npos) << *ok;
  auto weak = doctor::overlap_note(result(2, 0.1, 0.0, 0.002, 0, 0.010, 0.030));
  ASSERT_TRUE(weak.has_value());
  EXPECT_NE(weak->find("WEAKER"), std::string::npos) << *weak;
  EXPECT_FALSE(doctor::overlap_note(result(1, 0.1, 0.0, 0.0, 0, 0.010, 0.030)).has_value());
}

TEST(Doctor, OverlapNoteNamesTheLastBucketWhenItIsTheExposedTime) {
  // gpt2-124m on 2 × H200: 13 buckets, the last one the tied 154 MB token embedding, exposed 0.62 of 3.93 ms.
  auto r = result(2, 0.041, 0.0, 0.00062, 0, 0.00393, 0.0238);
  r.bucket_bytes = {1u << 20, 28u << 20, 154'533'888};
  r.phases.last_all_reduce_seconds = 0.00051;
  auto note = doctor::overlap_note(r);
  ASSERT_TRUE(note.has_value());
  EXPECT_NE(note->find("0.51 ms of it is the last bucket (155 MB, 84 % of the gradient)"), std::string::npos) << *note;
  EXPECT_NE(note->find("--overlap-optimizer"), std::string::npos) << *note;
  EXPECT_EQ(note->find("--embedding-exchange"), std::string::npos) << "an MLP has no tied embedding: " << *note;
  // Already overlapped: no suggestion to do it.
  r.config.engine.overlap_optimizer = true;
  EXPECT_EQ(doctor::overlap_note(r)->find("--overlap-optimizer"), std::string::npos);
  r.config.engine.overlap_optimizer = false;
  // A short last bucket is not the explanation: no such clause.
  r.phases.last_all_reduce_seconds = 0.0001;
  EXPECT_EQ(doctor::overlap_note(r)->find("last bucket"), std::string::npos);
  // Overlap within the goal: nothing to explain.
  r.phases.exposed_comm = 0.0002;
  r.phases.last_all_reduce_seconds = 0.0002;
  EXPECT_EQ(doctor::overlap_note(r)->find("last bucket"), std::string::npos);
}

TEST(Doctor, OverlapNoteWithTheEmbeddingAllGathered) {
  // gpt2-124m on 2 × H200 with --embedding-exchange all-gather: 4.06 ms of all-reduces and 0.16 ms of all-gathers,
  // 0.35 ms exposed; the token table is the first bucket, so the tied-embedding advice must not appear.
  auto r = result(2, 0.0437, 0.0, 0.00035, 0, 0.00406, 0.0266);
  r.config.model.family = train::ModelFamily::gpt;
  r.embedding_all_gathered = true;
  r.bucket_bytes = {154'533'888, 28u << 20, 28u << 20};
  r.phases.all_gather_seconds = 0.00016;
  r.phases.all_gather_count = 2;
  r.phases.last_all_reduce_seconds = 0.0003;
  auto note = doctor::overlap_note(r);
  ASSERT_TRUE(note.has_value());
  // 0.35 / (4.06 + 0.16) ms = 8.3 %: within the goal, the all-gathers counted.
  EXPECT_NE(note->find("all-reduce + all-gather 4.22 ms, exposed 0.35 ms = 8.3 %"), std::string::npos) << *note;
  EXPECT_NE(note->find("overlap OK"), std::string::npos) << *note;
  r.phases.exposed_comm = 0.0009;  // weaker than expected: say what the exposed time holds, advise nothing tied
  note = doctor::overlap_note(r);
  ASSERT_TRUE(note.has_value());
  EXPECT_NE(note->find("the tied embedding's all-gather after backward"), std::string::npos) << *note;
  EXPECT_EQ(note->find("last bucket"), std::string::npos) << *note;
  EXPECT_EQ(note->find("--overlap-optimizer"), std::string::npos) << *note;
  EXPECT_EQ(note->find("--embedding-exchange"), std::string::npos) << *note;
  // The same GPT with its embedding all-reduced in the last bucket: the all-gather is suggested.
  r.embedding_all_gathered = false;
  r.phases.all_gather_seconds = 0;
  r.phases.all_gather_count = 0;
  r.bucket_bytes = {1u << 20, 28u << 20, 154'533'888};
  r.phases.last_all_reduce_seconds = 0.0006;
  note = doctor::overlap_note(r);
  ASSERT_TRUE(note.has_value());
  EXPECT_NE(note->find("last bucket"), std::string::npos) << *note;
  EXPECT_NE(note->find("--embedding-exchange all-gather"), std::string::npos) << *note;
}

TEST(Doctor, StallingStepsAreNoted) {
  train::TrainResult r;
  r.config.world_size = 2;
  r.step_event_seconds.count = 50;
  r.step_event_seconds.median = 0.04145;  // gpt2-124m on 2 × H200 before the round barrier
  r.step_event_seconds.p95 = 0.15177;
  r.step_event_seconds.max = 0.2104;
  auto note = doctor::step_stall_note(r);
  ASSERT_TRUE(note.has_value());
  EXPECT_NE(note->find("N=2: some steps stall — per-step time p95 151.77 ms vs median 41.45 ms (max 210.40 ms, 50 steps)"),
            std::string::npos)
      << *note;
  r.step_event_seconds.p95 = 0.0417;  // steady: p95 within 1 % of the median
  EXPECT_FALSE(doctor::step_stall_note(r).has_value());
  r.step_event_seconds.p95 = 0.15;
  r.step_event_seconds.count = 5;  // too few steps to say
  EXPECT_FALSE(doctor::step_stall_note(r).has_value());
}

namespace {

/// One rank-0 kernel trace of two 1000 µs steps, as `train --kernel-trace` writes it: per step a GEMM of
/// `gemm_us` then a LayerNorm 5 µs later (at world size 2 also an all-reduce of 200 µs on stream 13).
std::string two_step_trace(int world_size, std::int64_t gemm_us, std::int64_t gap_us) {
  train::KernelTrace t;
  t.world_size = world_size;
  t.process_id = 1;
  std::int64_t corr = 0;
  for (int s = 0; s < 2; ++s) {
    const std::int64_t base = 1000 * s;
    t.steps.push_back({base * 1000, (base + 1000) * 1000, 1});
    auto launch = [&](const std::string& name, int stream, std::int64_t at, std::int64_t from, std::int64_t to) {
      t.api_calls.push_back({"cudaLaunchKernel", false, 1, (base + at) * 1000, (base + at + 2) * 1000, ++corr});
      t.kernels.push_back({name, 0, stream, (base + from) * 1000, (base + to) * 1000, corr});
    };
    launch("gemm", 7, 1, 10, 10 + gemm_us);
    launch("layernorm", 7, 2, 10 + gemm_us + gap_us, 10 + gemm_us + gap_us + 50);
    if (world_size > 1) launch("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 13, 3, 20, 220);
  }
  return train::kernel_trace_json(t);
}

}  // namespace

TEST(Doctor, LongerKernelBoundariesGetANote) {
  doctor::KernelBreakdown k;
  k.world_size = 2;
  k.boundaries_baseline = 764;
  k.boundaries = 765;
  k.boundary_median_baseline_us = 2.66;
  k.boundary_median_us = 4.0;  // +1.34 µs × 765 ≈ 1.03 ms
  const auto note = doctor::boundary_note(k);
  ASSERT_TRUE(note.has_value());
  EXPECT_NE(note->find("N=2: every kernel boundary got longer: median gap between compute kernels 2.66 → 4.00 µs at "
                       "765 boundaries per step, ≈1.03 ms per step"),
            std::string::npos)
      << *note;
  k.boundary_median_us = 3.0;  // +0.34 µs: below kBoundaryGrowthUs
  EXPECT_FALSE(doctor::boundary_note(k).has_value());
  k.boundary_median_us = 4.0;
  k.boundaries = 20;  // a few boundaries: nothing to gain from fewer kernels
  EXPECT_FALSE(doctor::boundary_note(k).has_value());
}

TEST(Doctor, ComputeSlowedBesideNcclGetsANote) {
  doctor::KernelBreakdown k;
  k.world_size = 2;
  k.step_ms = 44.0;
  EXPECT_FALSE(doctor::interference_note(k).has_value());  // no NCCL kernel traced
  analyze::CommInterference c;
  c.overlap_ms = 2.0;
  c.slowdown_ms = 0.6;  // 1.4 % of the step
  analyze::KernelInterference gemm;
  gemm.name = "nvjet_sm90_tss_192x96_64x5_1x2_h_bz_NTT";
  gemm.calls_per_step = 12;
  gemm.reference_us = 100;
  gemm.overlap_ms = 0.5;   // 42 µs per 100 µs call
  gemm.slowdown_ms = 0.4;  // 0.80 of its overlap
  c.kernels.push_back(gemm);
  k.interference = c;
  auto note = doctor::interference_note(k);
  ASSERT_TRUE(note.has_value());
  EXPECT_NE(note->find("N=2, rank 0's kernel trace: compute kernels ran 0.60 ms per step longer while communication "
                       "kernels ran beside them (1 % of the step, 0.30 ms per ms of overlap"),
            std::string::npos)
      << *note;
  EXPECT_NE(note->find("most in nvjet_sm90_tss_192x96_64x5_1x2_h_bz_NTT (+0.40 ms per step, 0.80 of its overlap: about "
                       "its whole overlap"),
            std::string::npos)
      << *note;
  // The same ratio over a few µs per call says nothing about waiting for SMs.
  k.interference->kernels[0].overlap_ms = 0.06;  // 5 µs per call
  k.interference->kernels[0].slowdown_ms = 0.05;
  note = doctor::interference_note(k);
  ASSERT_TRUE(note.has_value());
  EXPECT_EQ(note->find("about its whole overlap"), std::string::npos) << *note;
  k.interference->slowdown_ms = 0.3;  // 0.7 % of the step: below kFindingShare
  EXPECT_FALSE(doctor::interference_note(k).has_value());
}

TEST(Doctor, KernelBreakdownNamesTheKernelsAndGapsThatGrew) {
  const auto dir = std::filesystem::temp_directory_path() / "scalescope_doctor_kernels";
  std::filesystem::remove_all(dir);
  for (int n : {1, 2}) std::filesystem::create_directories(dir / ("n" + std::to_string(n)));
  core::write_file_atomically((dir / "n1" / "rank0.json").string(), two_step_trace(1, 300, 5));
  core::write_file_atomically((dir / "n2" / "rank0.json").string(), two_step_trace(2, 400, 25));
  const doctor::KernelBreakdown k = doctor::kernel_breakdown(dir.string(), 2);
  EXPECT_EQ(k.world_size, 2);
  EXPECT_NEAR(k.compute_kernels_delta_ms, 0.100, 1e-9);  // the GEMM: 300 → 400 µs per step
  EXPECT_NEAR(k.comm_kernels_ms, 0.200, 1e-9);
  ASSERT_FALSE(k.top.empty());
  EXPECT_EQ(k.top.front().name, "gemm");
  EXPECT_NEAR(k.top.front().delta_ms(), 0.100, 1e-9);
  EXPECT_NEAR(k.gaps_baseline_ms, 0.005, 1e-9);  // the 5 µs gap became 25 µs, with nothing else running in it
  EXPECT_NEAR(k.gaps_ms, 0.025, 1e-9);
  EXPECT_NEAR(k.gaps_idle_baseline_ms, 0.005, 1e-9);
  EXPECT_NEAR(k.gaps_idle_ms, 0.025, 1e-9);
  EXPECT_NEAR(k.boundaries_baseline, 1, 1e-9);  // one boundary per step, 5 µs then 25 µs
  EXPECT_NEAR(k.boundaries, 1, 1e-9);
  EXPECT_NEAR(k.boundary_median_baseline_us, 5, 1e-9);
  EXPECT_NEAR(k.boundary_median_us, 25, 1e-9);
  const nlohmann::json j = k;
  EXPECT_NEAR(j.at("boundary_median_us").get<double>(), 25, 1e-9);
  EXPECT_EQ(j.at("top").at(0).at("name"), "gemm");
  // A kernel name that is not UTF-8 still gives a report that can be written.
  doctor::KernelBreakdown odd;
  odd.top = {{"bad\xff", false, 1.0, 2.0}};
  EXPECT_NO_THROW(nlohmann::json(odd).dump());
  // A missing trace is an error naming the file.
  try {
    doctor::kernel_breakdown(dir.string(), 4);
    ADD_FAILURE() << "no error for a missing n4 trace";
  } catch (const core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("n4"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}
