// The trace analysis over small synthetic traces whose every figure is worked out by hand in the comments.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "report/chrome_trace_writer.h"
#include "analysis/trace_analysis.h"
#include "core/error.h"
#include "report/trace_report.h"
#include "trace_test_util.h"

using namespace scalescope;
using namespace scalescope::analyze;
using namespace scalescope::analyze::testing;

namespace {

constexpr double kTol = 1e-9;

// Two ranks, two steps each, all-reduces of 1e6 floats over PG "0" (times in µs).
//
// Rank 0, ProfilerStep#1 = [0, 1000):
//   data loading (CPU) [0, 20); H2D copy [20, 80) on stream 7; compute A [100, 400) and B [450, 600) on stream 7;
//   all-reduce [500, 800) on stream 20; aten::item [810, 905) holding cudaStreamSynchronize [820, 900).
// Rank 0, ProfilerStep#2 = [1000, 2000): compute C [1100, 1500); all-reduce [1500, 1700).
// Rank 1 writes its clock 10 000 µs ahead: ProfilerStep#1 = [10000, 11000): compute [10100, 10640), all-reduce
//   [10650, 10800); ProfilerStep#2 = [11000, 12000): compute [11050, 11540), all-reduce [11550, 11700).
// No baseTimeNanoseconds: the collectives' ends (800/10800, 1700/11700) give rank 1 the offset −10 000 µs.
std::string rank0() {
  const std::string ar = nccl_args("allreduce", 1000000, "Float", 2);
  return trace({cpu("user_annotation", "ProfilerStep#1", 0, 1000), cpu("user_annotation", "ProfilerStep#2", 1000, 1000),
                cpu("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 20),
                x_event("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", "0", "7", 20, 60, R"("device": 0, "stream": 7)"),
                kernel("sgemm_a", 100, 300, 7), kernel("sgemm_b", 450, 150, 7),
                kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 500, 300, 20, ar),
                cpu("cpu_op", "aten::item", 810, 95), cpu("cuda_runtime", "cudaStreamSynchronize", 820, 80),
                kernel("sgemm_c", 1100, 400, 7),
                kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 1500, 200, 20, ar)},
               dist_info(0, 2));
}

std::string rank1() {
  const std::string ar = nccl_args("allreduce", 1000000, "Float", 2);
  return trace({cpu("user_annotation", "ProfilerStep#1", 10000, 1000), cpu("user_annotation", "ProfilerStep#2", 11000, 1000),
                kernel("sgemm_a", 10100, 540, 7),
                kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 10650, 150, 20, ar),
                kernel("sgemm_c", 11050, 490, 7),
                kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 11550, 150, 20, ar)},
               dist_info(1, 2));
}

// One rank alone: ProfilerStep#1 = [0, 800) with compute [0, 700): step 0.8 ms, compute 0.7 ms, other 0.1 ms.
std::string baseline() {
  return trace({cpu("user_annotation", "ProfilerStep#1", 0, 800), kernel("sgemm_a", 0, 700, 7)}, dist_info(0, 1));
}

std::vector<Trace> two_ranks() {
  std::vector<Trace> v;
  v.push_back(read_trace_bytes(rank1(), "rank1.json"));  // any order: ranks are sorted by distributedInfo.rank
  v.push_back(read_trace_bytes(rank0(), "rank0.json"));
  return v;
}

}  // namespace

TEST(TraceAnalysis, StepFiguresOfRankZeroByHand) {
  const TraceAnalysis a = analyze_traces(two_ranks(), nullptr, {});
  ASSERT_EQ(a.ranks.size(), 2u);
  const RankAnalysis& r = a.ranks[0];
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(r.rank_source, "distributedInfo");
  EXPECT_TRUE(r.has_gpu);
  EXPECT_TRUE(r.steps_from_annotations);
  EXPECT_EQ(r.compute_stream, 7);
  ASSERT_EQ(r.steps.size(), 2u);
  const StepMetrics& s1 = r.steps[0];
  EXPECT_EQ(s1.name, "ProfilerStep#1");
  EXPECT_EQ(s1.number, 1);
  EXPECT_NEAR(s1.step_ms, 1.0, kTol);
  // busy = [20,80) ∪ [100,400) ∪ [450,800) = 60 + 300 + 350 = 710 µs; idle = 290.
  EXPECT_NEAR(s1.gpu_busy_ms, 0.710, kTol);
  EXPECT_NEAR(s1.gpu_idle_ms, 0.290, kTol);
  EXPECT_NEAR(s1.compute_ms, 0.450, kTol);   // 300 + 150
  EXPECT_NEAR(s1.comm_ms, 0.300, kTol);
  EXPECT_NEAR(s1.memcpy_ms, 0.060, kTol);
  EXPECT_NEAR(s1.overlap_ms, 0.100, kTol);   // [500,600)
  EXPECT_NEAR(*s1.overlap_fraction(), 1.0 / 3.0, kTol);
  EXPECT_NEAR(s1.exposed_comm_ms, 0.200, kTol);  // [600,800)
  // Rank 1 starts this all-reduce at 650 (aligned): rank 0 waits [500,650); the exposed part is [600,650).
  EXPECT_NEAR(s1.straggler_wait_ms, 0.050, kTol);
  EXPECT_NEAR(s1.comm_wait_ms, 0.150, kTol);
  EXPECT_NEAR(s1.comm_late_ms, 0.0, kTol);
  // Data wait: the exposed H2D copy [20,80) plus GPU idle during data loading [0,20).
  EXPECT_NEAR(s1.data_wait_ms, 0.080, kTol);
  // The sync returned at 900 inside the GPU idle gap [800, 1100): its part in this step, [800,1000), is host sync.
  EXPECT_NEAR(s1.host_sync_ms, 0.200, kTol);
  EXPECT_NEAR(s1.host_syncs, 1, kTol);
  EXPECT_NEAR(s1.host_sync_blocked_ms, 0.080, kTol);
  // Other: idle [80,100) and [400,450).
  EXPECT_NEAR(s1.other_ms, 0.070, kTol);
  EXPECT_NEAR(s1.launch_gaps, 1, kTol);       // B starts 50 µs after A ends on stream 7
  EXPECT_NEAR(s1.launch_gap_ms, 0.050, kTol);
  EXPECT_NEAR(s1.collectives, 1, kTol);
  // The partition of the step: compute + exposed comm + data + host sync + other = 450+200+80+200+70 = 1000.
  EXPECT_NEAR(s1.compute_ms + s1.exposed_comm_ms + s1.data_wait_ms + s1.host_sync_ms + s1.other_ms, s1.step_ms, kTol);

  const StepMetrics& s2 = r.steps[1];
  EXPECT_NEAR(s2.gpu_busy_ms, 0.600, kTol);
  EXPECT_NEAR(s2.compute_ms, 0.400, kTol);
  EXPECT_NEAR(s2.comm_ms, 0.200, kTol);
  EXPECT_NEAR(s2.overlap_ms, 0.0, kTol);
  EXPECT_NEAR(s2.exposed_comm_ms, 0.200, kTol);
  EXPECT_NEAR(s2.straggler_wait_ms, 0.050, kTol);  // rank 1 starts at 1550: [1500,1550)
  EXPECT_NEAR(s2.host_sync_ms, 0.100, kTol);       // the rest of the gap after the sync: [1000,1100)
  EXPECT_NEAR(s2.host_syncs, 0, kTol);
  EXPECT_NEAR(s2.data_wait_ms, 0.0, kTol);
  EXPECT_NEAR(s2.other_ms, 0.300, kTol);           // [1700,2000)
  EXPECT_NEAR(s2.launch_gaps, 0, kTol);

  // Means per step and the waterfall (ideal = compute, no baseline).
  EXPECT_NEAR(r.mean.step_ms, 1.0, kTol);
  EXPECT_NEAR(r.mean.gpu_busy_ms, 0.655, kTol);
  EXPECT_NEAR(r.mean.compute_ms, 0.425, kTol);
  EXPECT_NEAR(r.mean.comm_ms, 0.250, kTol);
  EXPECT_NEAR(r.mean.exposed_comm_ms, 0.200, kTol);
  EXPECT_NEAR(r.mean.host_syncs, 0.5, kTol);
  const Waterfall& w = r.waterfall;
  EXPECT_NEAR(w.measured_ms, 1.0, kTol);
  EXPECT_NEAR(w.ideal_ms, 0.425, kTol);
  EXPECT_NEAR(w.compute_ms, 0.0, kTol);
  EXPECT_NEAR(w.exposed_comm_ms, 0.150, kTol);   // 0.200 exposed − 0.050 straggler
  EXPECT_NEAR(w.straggler_wait_ms, 0.050, kTol);
  EXPECT_NEAR(w.data_wait_ms, 0.040, kTol);
  EXPECT_NEAR(w.host_sync_ms, 0.150, kTol);
  EXPECT_NEAR(w.other_ms, 0.185, kTol);
  EXPECT_NEAR(w.loss_ms(), 0.575, kTol);
  EXPECT_NEAR(w.parts_ms(), w.loss_ms(), kTol);

  ASSERT_EQ(r.host_syncs.size(), 1u);
  EXPECT_EQ(r.host_syncs[0].label, "aten::item");
  EXPECT_EQ(r.host_syncs[0].count, 1);
  EXPECT_NEAR(r.host_syncs[0].blocked_ms, 0.080, kTol);
  EXPECT_NEAR(r.host_syncs[0].gpu_idle_ms, 0.300, kTol);
  EXPECT_EQ(r.launch_gaps.count, 1);
  EXPECT_NEAR(r.launch_gaps.max_us, 50, kTol);
}

TEST(TraceAnalysis, RankOneAndCrossRankByHand) {
  const TraceAnalysis a = analyze_traces(two_ranks(), nullptr, {});
  const RankAnalysis& r = a.ranks[1];
  EXPECT_EQ(r.rank, 1);
  EXPECT_NEAR(r.clock_offset_us, -10000, kTol);
  EXPECT_NEAR(r.mean.compute_ms, 0.515, kTol);    // (540 + 490) / 2
  EXPECT_NEAR(r.mean.comm_ms, 0.150, kTol);
  EXPECT_NEAR(r.mean.exposed_comm_ms, 0.150, kTol);
  EXPECT_NEAR(r.mean.straggler_wait_ms, 0.0, kTol);  // it is always last: it never waits
  EXPECT_NEAR(r.mean.comm_late_ms, 0.100, kTol);      // (150 + 50) / 2
  EXPECT_NEAR(r.mean.other_ms, 0.335, kTol);          // (310 + 360) / 2
  EXPECT_NEAR(r.waterfall.parts_ms(), r.waterfall.loss_ms(), kTol);
  EXPECT_NEAR(r.waterfall.loss_ms(), 0.485, kTol);

  EXPECT_EQ(a.cross.matched, 2);
  EXPECT_EQ(a.cross.unmatched, 0);
  EXPECT_EQ(a.cross.matching, "step order");
  ASSERT_TRUE(a.cross.straggler.has_value());
  EXPECT_EQ(*a.cross.straggler, 1);
  EXPECT_NEAR(a.cross.straggler_late_ms_per_step, 0.100, kTol);
  ASSERT_EQ(a.cross.worst.size(), 2u);
  EXPECT_NEAR(a.cross.worst[0].spread_us, 150, kTol);
  EXPECT_EQ(a.cross.worst[0].key, "ProfilerStep#1 #1");
  EXPECT_EQ(a.cross.worst[0].earliest_rank, 0);
  EXPECT_EQ(a.cross.worst[0].latest_rank, 1);
  EXPECT_NE(a.cross.alignment.find("collective ends"), std::string::npos);

  // busbw: 4e6 bytes per all-reduce, factor 2(n−1)/n = 1 at n = 2. Rank 0: 8e6 B over 500 µs = 16 GB/s; after
  // the waits (150 and 50 µs) 8e6 B over 300 µs = 26.67 GB/s, which is rank 1's (it never waits).
  const CollectiveGroup& g0 = a.ranks[0].collectives.at(0);
  EXPECT_EQ(g0.collective, "all_reduce");
  EXPECT_EQ(g0.process_group, "pg 0");
  EXPECT_EQ(g0.bytes, 4000000);
  EXPECT_EQ(g0.ranks, 2);
  EXPECT_EQ(g0.count, 2);
  EXPECT_NEAR(g0.total_us, 500, kTol);
  EXPECT_NEAR(*g0.busbw_gbps, 16.0, 1e-9);
  EXPECT_NEAR(*g0.busbw_after_wait_gbps, 8e6 / 300e3, 1e-9);
  const CollectiveGroup& g1 = a.ranks[1].collectives.at(0);
  EXPECT_NEAR(*g1.busbw_gbps, 8e6 / 300e3, 1e-9);
  EXPECT_NEAR(*g1.busbw_after_wait_gbps, 8e6 / 300e3, 1e-9);

  // Findings name the waiting rank and the straggler.
  bool straggler_finding = false;
  for (const auto& f : a.findings)
    if (f.text.find("rank 0 waits 0.10 ms per step for the others: rank 1 is the straggler") != std::string::npos)
      straggler_finding = true;
  EXPECT_TRUE(straggler_finding);
  EXPECT_FALSE(a.verdict.has_value());
  EXPECT_NE(a.verdict_note.find("no 1-rank baseline"), std::string::npos);
}

TEST(TraceAnalysis, BaselineGivesVerdictAndBaselineWaterfall) {
  const Trace base = read_trace_bytes(baseline(), "base.json");
  const TraceAnalysis a = analyze_traces(two_ranks(), &base, {});
  ASSERT_TRUE(a.baseline.has_value());
  EXPECT_NEAR(a.baseline->mean.step_ms, 0.8, kTol);
  EXPECT_NEAR(a.baseline->mean.compute_ms, 0.7, kTol);
  // Rank 0 against the baseline: ideal 0.8, loss 0.2 = compute (0.425 − 0.7) + exposed 0.15 + straggler 0.05
  // + data 0.04 + host sync 0.15 + other (0.185 − 0.1).
  const Waterfall& w = a.ranks[0].waterfall;
  EXPECT_EQ(w.ideal_source, "1-rank baseline step");
  EXPECT_NEAR(w.ideal_ms, 0.8, kTol);
  EXPECT_NEAR(w.compute_ms, -0.275, kTol);
  EXPECT_NEAR(w.exposed_comm_ms, 0.150, kTol);
  EXPECT_NEAR(w.straggler_wait_ms, 0.050, kTol);
  EXPECT_NEAR(w.data_wait_ms, 0.040, kTol);
  EXPECT_NEAR(w.host_sync_ms, 0.150, kTol);
  EXPECT_NEAR(w.other_ms, 0.085, kTol);
  EXPECT_NEAR(w.parts_ms(), 0.2, kTol);
  EXPECT_NEAR(a.ranks[1].waterfall.parts_ms(), 0.2, kTol);
  // Weak scaling: speedup = N·T1/TN = 2 × 0.8 / 1.0 = 1.6; comm ratio = mean comm (0.25 + 0.15)/2 over the
  // baseline's compute 0.7 = 0.2857: both between the thresholds, so "watch".
  ASSERT_TRUE(a.metrics.has_value());
  EXPECT_NEAR(a.metrics->speedup, 1.6, 1e-12);
  EXPECT_NEAR(a.metrics->efficiency, 0.8, 1e-12);
  EXPECT_NEAR(a.metrics->comm_ratio, 0.2 / 0.7, 1e-12);
  ASSERT_TRUE(a.verdict.has_value());
  EXPECT_EQ(a.verdict->verdict, diagnose::Verdict::watch);
  // 28.6 % is within 10 % of the 30 % line (crossing it would make it "investigate"); the speedup 1.6 near 1.7
  // is not named: crossing it alone would leave "watch".
  std::vector<std::string> near;
  for (const auto& f : a.findings)
    if (f.text.find("within 10 %") != std::string::npos) near.push_back(f.text);
  ASSERT_EQ(near.size(), 1u);
  EXPECT_EQ(near[0].rfind("comm ratio 28.6 % is within 10 % of the 30 % threshold: another run", 0), 0u) << near[0];
}

TEST(TraceAnalysis, SeqMatchesAcrossProcessGroupsWhateverTheOrder) {
  // Three ranks on one clock (same baseTimeNanoseconds). PG "0" (all ranks) and PG "1" (ranks 1, 2) interleave
  // differently on each rank; Seq pairs them. PG 0 starts at 100, 200, 250 → lateness 0, 100, 150; PG 1 starts at
  // 50 (rank 1) and 400 (rank 2) → rank 2 is 350 late. Waits (clipped to the kernel): rank 0 150; rank 1
  // 50 (PG 0) + min(350, 100) (PG 1) = 150; rank 2 0.
  auto make = [](int rank, std::vector<std::string> kernels) {
    std::vector<std::string> ev{cpu("user_annotation", "ProfilerStep#1", 0, 1000)};
    ev.insert(ev.end(), kernels.begin(), kernels.end());
    return read_trace_bytes(
        trace(ev, dist_info(rank, 3) + R"(, "baseTimeNanoseconds": 1700000000000000000)"), fmt::format("r{}.json", rank));
  };
  auto ar = [](const char* pg, int seq) {
    return nccl_args("allreduce", 256, "BFloat16", pg[0] == '0' ? 3 : 2, pg) + fmt::format(R"(, "Seq": {})", seq);
  };
  const std::string k = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL";
  for (const bool with_seq : {true, false}) {
    auto args = [&](const char* pg) {
      return with_seq ? ar(pg, 1) : nccl_args("allreduce", 256, "BFloat16", pg[0] == '0' ? 3 : 2, pg);
    };
    std::vector<Trace> v;
    v.push_back(make(0, {kernel(k, 100, 200, 20, args("0"))}));
    v.push_back(make(1, {kernel(k, 50, 100, 21, args("1")), kernel(k, 200, 100, 20, args("0"))}));
    v.push_back(make(2, {kernel(k, 250, 50, 20, args("0")), kernel(k, 400, 100, 21, args("1"))}));
    TraceOptions o;
    o.alignment = ClockAlignment::base_time;
    const TraceAnalysis a = analyze_traces(std::move(v), nullptr, o);
    EXPECT_EQ(a.cross.matching, with_seq ? "seq" : "step order");
    EXPECT_EQ(a.cross.matched, 2);
    EXPECT_EQ(a.cross.alignment, "baseTimeNanoseconds");
    ASSERT_EQ(a.ranks.size(), 3u);
    EXPECT_NEAR(a.ranks[0].mean.comm_late_ms, 0.0, kTol);
    EXPECT_NEAR(a.ranks[1].mean.comm_late_ms, 0.100, kTol);
    EXPECT_NEAR(a.ranks[2].mean.comm_late_ms, 0.500, kTol);
    EXPECT_NEAR(a.ranks[0].mean.comm_wait_ms, 0.150, kTol);
    EXPECT_NEAR(a.ranks[1].mean.comm_wait_ms, 0.150, kTol);
    EXPECT_NEAR(a.ranks[2].mean.comm_wait_ms, 0.0, kTol);
    ASSERT_TRUE(a.cross.straggler.has_value());
    EXPECT_EQ(*a.cross.straggler, 2);
    // 256 bf16 = 512 B; PG 0 has 3 ranks: busbw factor 2(3−1)/3.
    const CollectiveGroup& g = a.ranks[0].collectives.at(0);
    EXPECT_EQ(g.bytes, 512);
    EXPECT_NEAR(*g.busbw_gbps, 512.0 / 200e3 * 4.0 / 3.0, 1e-12);
  }
}

TEST(TraceAnalysis, OldTracesLinkKernelsToAnnotationsAndCpuOps) {
  // PyTorch 1.x: the NCCL kernel has no metadata; its launch (correlation 77) lies inside "nccl:all_to_all" with
  // Input Dims [[1000]] float. Newer traces: record_param_comms carries the metadata under the kernel's External id.
  const std::string json = trace({
      cpu("user_annotation", "nccl:all_to_all", 90, 20, 100, R"("Input Dims": [[1000]], "Input type": ["float"])"),
      cpu("cuda_runtime", "cudaLaunchKernel", 95, 3, 100, R"("correlation": 77)"),
      kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)", 120, 40, 84, R"("correlation": 77)"),
      cpu("cpu_op", "record_param_comms", 200, 10, 100, R"("External id": 5, )" + nccl_args("_allgather_base", 64, "Half", 4)),
      kernel("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", 220, 10, 84, R"("External id": 5)"),
      kernel("ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", 300, 5, 84),
  }, dist_info(0, 4));
  std::vector<Trace> v;
  v.push_back(read_trace_bytes(json, "old.json"));
  const TraceAnalysis a = analyze_traces(std::move(v), nullptr, {});
  ASSERT_EQ(a.ranks.size(), 1u);
  const RankAnalysis& r = a.ranks[0];
  EXPECT_FALSE(r.steps_from_annotations);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].name, "whole trace");
  std::map<std::string, const CollectiveGroup*> by;
  for (const auto& g : r.collectives) by[g.collective] = &g;
  ASSERT_TRUE(by.count("all_to_all"));
  EXPECT_EQ(by["all_to_all"]->bytes, 4000);
  EXPECT_EQ(by["all_to_all"]->size_source, "annotation Input Dims");
  EXPECT_EQ(by["all_to_all"]->ranks, 4);  // world size: the kernel carries no group size
  EXPECT_NEAR(*by["all_to_all"]->busbw_gbps, 4000.0 / 40e3 * 0.75, 1e-12);
  ASSERT_TRUE(by.count("all_gather"));
  EXPECT_EQ(by["all_gather"]->bytes, 128);   // Out msg nelems (64) × 2 bytes
  EXPECT_EQ(by["all_gather"]->size_source, "NCCL metadata");
  ASSERT_TRUE(by.count("broadcast"));        // from the kernel name alone: no size, no busbw
  EXPECT_FALSE(by["broadcast"]->bytes.has_value());
  EXPECT_FALSE(by["broadcast"]->busbw_gbps.has_value());
  bool whole = false;
  for (const auto& w : r.warnings) whole |= w.find("the whole trace is analysed as one step") != std::string::npos;
  EXPECT_TRUE(whole);
}

TEST(TraceAnalysis, CpuOnlyRankHasNoGpuFigures) {
  std::vector<Trace> v;
  v.push_back(read_trace_bytes(trace({cpu("user_annotation", "ProfilerStep#551", 0, 500)},
                                     R"("deviceProperties": [], "distributedInfo": {"backend": "gloo", "rank": 34, "world_size": 300})"),
                               "cpu.json"));
  const TraceAnalysis a = analyze_traces(std::move(v), nullptr, {});
  ASSERT_EQ(a.ranks.size(), 1u);
  EXPECT_FALSE(a.ranks[0].has_gpu);
  EXPECT_EQ(a.ranks[0].rank, 34);
  EXPECT_NEAR(a.ranks[0].mean.step_ms, 0.5, kTol);
  nlohmann::json j = a;
  EXPECT_TRUE(j["ranks"][0]["waterfall"].is_null());
  EXPECT_TRUE(j["ranks"][0]["mean"]["gpu_busy_ms"].is_null());
  bool cpu_only = false, missing = false;
  for (const auto& f : a.findings) {
    cpu_only |= f.text.find("rank 34 has no GPU activity (backend gloo)") != std::string::npos;
    missing |= f.text.find("1 of 300 ranks analysed") != std::string::npos;
  }
  EXPECT_TRUE(cpu_only);
  EXPECT_TRUE(missing);
}

TEST(TraceAnalysis, ABaselineFromAMultiRankJobIsRefused) {
  // Rank 1 of a 2-rank job passed as the baseline would give a speedup against itself: an error, no verdict.
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("scalescope_baseline_test_{}", getpid());
  std::filesystem::create_directories(dir);
  const std::string r0 = (dir / "rank0.json").string(), r1 = (dir / "rank1.json").string();
  std::ofstream(r0) << rank0();
  std::ofstream(r1) << rank1();
  TraceOptions o;
  o.baseline_path = r1;
  const TraceAnalysis a = analyze_trace_files({r0}, o);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(a.ranks.size(), 1u);
  EXPECT_FALSE(a.baseline.has_value());
  EXPECT_FALSE(a.verdict.has_value());
  ASSERT_EQ(a.errors.size(), 1u);
  EXPECT_NE(a.errors[0].cause.find("is rank 1 of a 2-rank job"), std::string::npos) << a.errors[0].cause;
  EXPECT_NE(a.errors[0].remedy.find("world size 1"), std::string::npos);
}

TEST(TraceAnalysis, FilesWithErrorsDoNotLoseTheOthers) {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("scalescope_trace_test_{}", getpid());
  std::filesystem::create_directories(dir);
  const std::string good = (dir / "rank0.json.gz").string(), bad = (dir / "rank1.json").string();
  std::ofstream(good, std::ios::binary) << gzip(rank0());
  std::ofstream(bad, std::ios::binary) << "[{\"ph\": \"b\", \"args\": {\"Stream\": 0x262ca50}}]";
  TraceOptions o;
  o.baseline_path = (dir / "missing.json").string();
  const TraceAnalysis a = analyze_trace_files({good, bad, (dir / "none.json").string()}, o);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(a.ranks.size(), 1u);
  EXPECT_EQ(a.ranks[0].rank, 0);
  ASSERT_EQ(a.errors.size(), 3u);
  EXPECT_EQ(a.errors[0].path, bad);
  EXPECT_NE(a.errors[0].cause.find("unquoted hex value 0x262ca50"), std::string::npos);
  EXPECT_NE(a.errors[1].cause.find("cannot open trace"), std::string::npos);
  EXPECT_NE(a.errors[2].cause.find("baseline: cannot open trace"), std::string::npos);
  EXPECT_FALSE(a.errors[2].remedy.empty());
}

TEST(TraceAnalysis, NamesOfCollectivesAndTypes) {
  EXPECT_EQ(collective_from_name("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"),
            comm::Collective::all_reduce);
  EXPECT_EQ(collective_from_name("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), comm::Collective::all_reduce);
  EXPECT_EQ(collective_from_name("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"), comm::Collective::reduce_scatter);
  EXPECT_EQ(collective_from_name("ncclKernel_Reduce_RING_LL_Sum_float"), comm::Collective::reduce);
  EXPECT_EQ(collective_from_name("ncclDevKernel_AllGather_RING_LL(x)"), comm::Collective::all_gather);
  EXPECT_EQ(collective_from_name("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"), comm::Collective::send_recv);
  EXPECT_EQ(collective_from_name("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)"), std::nullopt);
  EXPECT_EQ(collective_from_name("allreduce"), comm::Collective::all_reduce);
  EXPECT_EQ(collective_from_name("_allgather_base"), comm::Collective::all_gather);
  EXPECT_EQ(collective_from_name("reduce_scatter_tensor_coalesced"), comm::Collective::reduce_scatter);
  EXPECT_EQ(collective_from_name("all_to_allv"), comm::Collective::all_to_all);
  EXPECT_EQ(collective_from_name("broadcast"), comm::Collective::broadcast);
  EXPECT_EQ(collective_from_name("send"), comm::Collective::send_recv);
  EXPECT_EQ(collective_from_name("barrier"), std::nullopt);
  EXPECT_TRUE(is_nccl_kernel_name("ncclDevKernel_Generic"));
  EXPECT_TRUE(is_nccl_kernel_name("rcclKernel_x"));
  EXPECT_FALSE(is_nccl_kernel_name("sgemm"));
  // NCCL 2.28's world-size-1 all-reduce kernel, as CUPTI names it.
  EXPECT_TRUE(is_nccl_kernel_name("__nv_static_32__b4148644_10_onerank_cu_fdf47990__ZN43_GLOBAL__N__b4148644_10_onerank_"
                                  "cu_fdf4799013oneRankReduceI13FuncPreMulSumIfEEEvPvS3_mmb"));
  EXPECT_EQ(dtype_size("Float"), 4);
  EXPECT_EQ(dtype_size("BFloat16"), 2);
  EXPECT_EQ(dtype_size("c10::Half"), 2);
  EXPECT_EQ(dtype_size("long int"), 8);
  EXPECT_EQ(dtype_size("Float8_e4m3fn"), 1);
  EXPECT_EQ(dtype_size("Quaternion"), std::nullopt);
}

TEST(ChromeTraceWriter, MergedTimelineOnTheAlignedClock) {
  TraceOptions o;
  o.keep_timeline = true;
  const TraceAnalysis a = analyze_traces(two_ranks(), nullptr, o);
  std::ostringstream os;
  write_merged_timeline(a, os);
  const nlohmann::json j = nlohmann::json::parse(os.str());
  std::map<int, std::string> processes;
  std::map<std::pair<int, int>, std::string> tracks;
  std::vector<nlohmann::json> slices;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") processes[e["pid"]] = e["args"]["name"];
    if (e["ph"] == "M" && e["name"] == "thread_name") tracks[{e["pid"], e["tid"]}] = e["args"]["name"];
    if (e["ph"] == "X") slices.push_back(e);
  }
  EXPECT_EQ(processes, (std::map<int, std::string>{{0, "rank 0"}, {1, "rank 1"}}));
  std::set<std::string> names0;
  for (const auto& [k, v] : tracks)
    if (k.first == 0) names0.insert(v);
  EXPECT_EQ(names0, (std::set<std::string>{"steps", "compute stream 7", "communication stream 20", "memcpy stream 7",
                                           "host syncs"}));
  // Rank 1's first all-reduce ends where rank 0's does once aligned: 800 µs after the start of the timeline.
  auto end_of = [&](int pid, const std::string& name_prefix, std::size_t nth) {
    std::vector<double> ends;
    for (const auto& s : slices)
      if (s["pid"] == pid && s["name"].get<std::string>().rfind(name_prefix, 0) == 0)
        ends.push_back(s["ts"].get<double>() + s["dur"].get<double>());
    std::sort(ends.begin(), ends.end());
    return ends.at(nth);
  };
  EXPECT_NEAR(end_of(0, "ncclDevKernel_AllReduce", 0), 800.0, 1e-6);
  EXPECT_NEAR(end_of(1, "ncclDevKernel_AllReduce", 0), 800.0, 1e-6);
  EXPECT_NEAR(end_of(1, "ncclDevKernel_AllReduce", 1), 1700.0, 1e-6);
  // Rank 0's wait for rank 1 is a nested slice at the start of its all-reduce: [500, 650).
  bool wait = false;
  for (const auto& s : slices)
    if (s["pid"] == 0 && s["name"] == "waiting for the last rank" && std::abs(s["ts"].get<double>() - 500) < 1e-6 &&
        std::abs(s["dur"].get<double>() - 150) < 1e-6)
      wait = true;
  EXPECT_TRUE(wait);

  // Atomically to a file; without a kept timeline it is an error and nothing is written.
  const auto path = std::filesystem::temp_directory_path() / fmt::format("scalescope_timeline_{}.json", getpid());
  write_merged_timeline_file(a, path.string());
  std::ifstream in(path);
  EXPECT_EQ(nlohmann::json::parse(in)["traceEvents"].size(), j["traceEvents"].size());
  std::filesystem::remove(path);
  const TraceAnalysis no_timeline = analyze_traces(two_ranks(), nullptr, {});
  EXPECT_THROW(write_merged_timeline_file(no_timeline, path.string()), core::Error);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(TraceAnalysis, JsonHasTheSchemaAndEveryRank) {
  const Trace base = read_trace_bytes(baseline(), "base.json");
  const TraceAnalysis a = analyze_traces(two_ranks(), &base, {});
  const nlohmann::json j = a;
  EXPECT_EQ(j["schema"], "scalescope.trace/1");
  ASSERT_EQ(j["ranks"].size(), 2u);
  EXPECT_NEAR(j["ranks"][0]["waterfall"]["loss_ms"].get<double>(), 0.2, kTol);
  EXPECT_EQ(j["ranks"][0]["steps"].size(), 2u);
  EXPECT_EQ(j["cross_rank"]["straggler"], 1);
  EXPECT_EQ(j["verdict"]["verdict"], "watch");
  EXPECT_NEAR(j["metrics"]["speedup"].get<double>(), 1.6, 1e-12);
  EXPECT_TRUE(j["errors"].empty());
}

TEST(TraceAnalysis, ExtremeClocksStayFinite) {
  // Base times and timestamps at the reader's bounds (ts ≤ 2^62 ns, ≥ −2^60 ns; base ≤ 2^62): alignment, sums
  // and the timeline saturate instead of overflowing.
  auto make = [](int rank, const char* base, double t0) {
    const std::string ar = nccl_args("allreduce", 1024, "Float", 2);
    return read_trace_bytes(trace({cpu("user_annotation", "ProfilerStep#1", t0, 1e3), kernel("k", t0 + 1, 100, 7),
                                   kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", t0 + 200, 100, 20, ar)},
                                  dist_info(rank, 2) + R"(, "baseTimeNanoseconds": )" + base),
                            "x.json");
  };
  std::vector<Trace> v;
  v.push_back(make(0, "4611686018427387904", 4.6e15));
  v.push_back(make(1, "0", -1.1e15));
  TraceOptions o;
  o.keep_timeline = true;
  const TraceAnalysis a = analyze_traces(std::move(v), nullptr, o);
  ASSERT_EQ(a.ranks.size(), 2u);
  EXPECT_EQ(a.cross.matched, 1);
  for (const auto& r : a.ranks) {
    EXPECT_NEAR(r.mean.step_ms, 1.0, kTol);
    EXPECT_TRUE(std::isfinite(r.clock_offset_us));
  }
  std::ostringstream os;
  write_merged_timeline(a, os);
  const nlohmann::json j = nlohmann::json::parse(os.str(), nullptr, false);
  EXPECT_FALSE(j.is_discarded());
  EXPECT_GT(j["traceEvents"].size(), 6u);
}

TEST(TraceAnalysis, JsonOfNonUtf8PathsAndKeysDumps) {
  // A path with a byte that is not UTF-8 (an error), and a readable trace under a name that is not UTF-8 (with a
  // reader warning and a key that is not UTF-8 either): the JSON must still dump.
  TraceAnalysis a = analyze_trace_files({"/nonexistent/rank\xff.json"}, {});
  std::vector<Trace> v;
  v.push_back(read_trace_bytes(trace({kernel("k", 1, 2, 7)}, "\"traceEvents\": 5, \"k\xfe\": 1"), "x\xc3.json"));
  const TraceAnalysis b = analyze_traces(std::move(v), nullptr, {});
  ASSERT_EQ(a.errors.size(), 1u);
  std::string dumped;
  EXPECT_NO_THROW(dumped = nlohmann::json(a).dump());
  EXPECT_NE(dumped.find("rank\xEF\xBF\xBD.json"), std::string::npos);
  EXPECT_NO_THROW(dumped = nlohmann::json(b).dump());
  EXPECT_NE(dumped.find("x\xEF\xBF\xBD.json"), std::string::npos);
  EXPECT_NE(dumped.find("\\\"traceEvents\\\" is not an array"), std::string::npos) << dumped;
}

namespace {
// A loop without host synchronisation: the CPU launches each step in 1 ms while the GPU runs it later, 3–6 ms
// into the trace. Step 1 launches a 1000 µs kernel and a 500 µs all-reduce, step 2 a 1000 µs kernel and a 400 µs
// all-reduce (µs; launches at 100, 200, 1100, 1200 with correlations 1–4).
std::string cpu_ahead_trace(bool step_two_launches = true) {

  std::vector<std::string> ev = {
      cpu("user_annotation", "ProfilerStep#1", 0, 1000), cpu("user_annotation", "ProfilerStep#2", 1000, 1000),
      cpu("cuda_runtime", "cudaLaunchKernel", 100, 5, 100, R"("correlation": 1)"),
      cpu("cuda_runtime", "cudaLaunchKernel", 200, 5, 100, R"("correlation": 2)"),
      kernel("gemm", 3000, 1000, 7, R"("correlation": 1)"),
      kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 4000, 500, 20, R"("correlation": 2)"),
      kernel("gemm", 4600, 1000, 7, R"("correlation": 3)"),
      kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 5600, 400, 20, R"("correlation": 4)")};
  if (step_two_launches) {
    ev.push_back(cpu("cuda_runtime", "cudaLaunchKernel", 1100, 5, 100, R"("correlation": 3)"));
    ev.push_back(cpu("cuda_runtime", "cudaLaunchKernel", 1200, 5, 100, R"("correlation": 4)"));
  }
  return trace(ev, dist_info(0, 2));
}
}  // namespace

TEST(TraceAnalysis, StepsFollowTheGpuWhenTheCpuRunsAhead) {
  std::vector<Trace> v;
  v.push_back(read_trace_bytes(cpu_ahead_trace(), "rank0.json"));
  const TraceAnalysis a = analyze_traces(std::move(v), nullptr, {});
  const RankAnalysis& r = a.ranks.at(0);
  EXPECT_EQ(r.step_windows, "GPU work launched in each step");
  ASSERT_EQ(r.steps.size(), 2u);
  // Step 1: [3000, 4600), the next step's first kernel; step 2: [4600, 6000), the end of its all-reduce.
  EXPECT_NEAR(r.steps[0].start_ms, 3.0, kTol);
  EXPECT_NEAR(r.steps[0].step_ms, 1.6, kTol);
  EXPECT_NEAR(r.steps[0].compute_ms, 1.0, kTol);
  EXPECT_NEAR(r.steps[0].exposed_comm_ms, 0.5, kTol);
  EXPECT_NEAR(r.steps[0].other_ms, 0.1, kTol);  // idle [4500, 4600)
  EXPECT_NEAR(r.steps[1].step_ms, 1.4, kTol);
  EXPECT_NEAR(r.steps[1].compute_ms, 1.0, kTol);
  EXPECT_NEAR(r.steps[1].exposed_comm_ms, 0.4, kTol);

  // The CPU ranges instead: 1 ms steps in which the GPU did nothing.
  TraceOptions o;
  o.step_windows = StepWindows::annotation;
  std::vector<Trace> w;
  w.push_back(read_trace_bytes(cpu_ahead_trace(), "rank0.json"));
  const TraceAnalysis b = analyze_traces(std::move(w), nullptr, o);
  EXPECT_EQ(b.ranks.at(0).step_windows, "ProfilerStep#N CPU ranges");
  EXPECT_NEAR(b.ranks.at(0).steps.at(0).step_ms, 1.0, kTol);
  EXPECT_NEAR(b.ranks.at(0).steps.at(0).compute_ms, 0.0, kTol);
}

TEST(TraceAnalysis, StepWithoutLinkedGpuWorkFallsBackToTheCpuRanges) {
  std::vector<Trace> v;
  v.push_back(read_trace_bytes(cpu_ahead_trace(false), "rank0.json"));
  const TraceAnalysis a = analyze_traces(std::move(v), nullptr, {});
  const RankAnalysis& r = a.ranks.at(0);
  EXPECT_EQ(r.step_windows, "ProfilerStep#N CPU ranges");
  EXPECT_NEAR(r.steps.at(0).step_ms, 1.0, kTol);
  bool said = false;
  for (const auto& w : r.warnings) said |= w.find("no GPU work is linked to a launch in ProfilerStep#2") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(TraceAnalysis, IdleBaselineIsCalledCpuBound) {
  // The baseline's GPU is busy 700 of 1000 µs: the speedup against it is flagged; the usual baseline (700 of 800,
  // 87.5 %) is not.
  auto flagged = [](const std::string& base_text) {
    const Trace base = read_trace_bytes(base_text, "base.json");
    const TraceAnalysis a = analyze_traces(two_ranks(), &base, {});
    for (const auto& f : a.findings)
      if (f.text.find("baseline's GPU was busy only") != std::string::npos) return f.text;
    return std::string();
  };
  const std::string idle = trace({cpu("user_annotation", "ProfilerStep#1", 0, 1000), kernel("sgemm_a", 0, 700, 7)},
                                 dist_info(0, 1));
  EXPECT_NE(flagged(idle).find("busy only 70 % of its steps: that run was CPU- or launch-bound"), std::string::npos) << flagged(idle);
  EXPECT_EQ(flagged(baseline()), "");
}

TEST(TraceAnalysis, StepAnnotationWithoutCategoryIsAStep) {
  const std::string t = trace({R"({"ph": "X", "name": "ProfilerStep#7", "pid": 100, "tid": 100, "ts": 0, "dur": 1000})",
                               kernel("sgemm_a", 100, 500, 7)},
                              dist_info(0, 1));
  std::vector<Trace> v;
  v.push_back(read_trace_bytes(t, "rank0.json"));
  const TraceAnalysis a = analyze_traces(std::move(v), nullptr, {});
  ASSERT_TRUE(a.ranks.at(0).steps_from_annotations);
  EXPECT_EQ(a.ranks.at(0).steps.at(0).name, "ProfilerStep#7");
}

TEST(TraceAnalysis, LaunchGapsMergeTheStreamsAGraphSpreadsKernelsOver) {
  // A CUDA graph ran one stream's kernels on two: A [100, 300) on stream 7, B [305, 500) on stream 9, C [505, 700)
  // on stream 7. Nothing but the two 5 µs boundaries separates the compute kernels; stream 7 alone would show
  // a 205 µs "gap" [300, 505) while B runs.
  const std::vector<Trace> one{read_trace_bytes(
      trace({cpu("user_annotation", "ProfilerStep#1", 0, 1000), kernel("gemm_a", 100, 200, 7),
             kernel("gemm_b", 305, 195, 9), kernel("gemm_c", 505, 195, 7)},
            dist_info(0, 1)),
      "graph.json")};
  const TraceAnalysis a = analyze_traces(one, nullptr, {});
  ASSERT_EQ(a.ranks.size(), 1u);
  ASSERT_EQ(a.ranks[0].steps.size(), 1u);
  const StepMetrics& s = a.ranks[0].steps[0];
  EXPECT_NEAR(s.launch_gaps, 2, kTol);
  EXPECT_NEAR(s.launch_gap_ms, 0.010, kTol);
  EXPECT_NEAR(s.launch_gap_idle_ms, 0.010, kTol);
  EXPECT_NEAR(a.ranks[0].launch_gaps.max_us, 5, kTol);
}

TEST(TraceAnalysis, ALaunchGapAfterABlockFromThePreviousStepIsCounted) {
  // Steps [0, 1000) and [1000, 2000). X [900, 1100) on stream 9 and Y [1050, 1080) on stream 7 merge into one
  // block that began in step 1; Z [1200, 1300) follows. Step 2 idles [1100, 1200) between compute kernels: one
  // gap of 100 µs; step 1 has none (its only block runs on past its end).
  const std::vector<Trace> one{read_trace_bytes(
      trace({cpu("user_annotation", "ProfilerStep#1", 0, 1000), cpu("user_annotation", "ProfilerStep#2", 1000, 1000),
             kernel("gemm_x", 900, 200, 9), kernel("gemm_y", 1050, 30, 7), kernel("gemm_z", 1200, 100, 7)},
            dist_info(0, 1)),
      "edge.json")};
  const TraceAnalysis a = analyze_traces(one, nullptr, {});
  ASSERT_EQ(a.ranks.size(), 1u);
  ASSERT_EQ(a.ranks[0].steps.size(), 2u);
  EXPECT_NEAR(a.ranks[0].steps[0].launch_gaps, 0, kTol);
  EXPECT_NEAR(a.ranks[0].steps[1].launch_gaps, 1, kTol);
  EXPECT_NEAR(a.ranks[0].steps[1].launch_gap_ms, 0.100, kTol);
}

TEST(TraceAnalysis, ComputeBesideCommunicationByHand) {
  // Two steps [0, 3000) and [3000, 6000) µs. Communication on stream 20: [1000, 1100), [1500, 1600), [2000, 2100),
  // [2500, 2600), and [4000, 4030) + [4100, 4130) in step 2. Compute on stream 7:
  //   gemm, grid [4,1,1]: alone 100, 100, 100, 100, 110 µs (median 100; their mean would be 102); [1030, 1160)
  //     overlaps 70 µs and slows 30;
  //   gemm, grid [8,1,1] (another shape under the same name): alone 3 × 50 µs; [1500, 1580) overlaps 80, slows 30;
  //     [3990, 4150) overlaps both step-2 kernels, 30 + 30 = 60, and slows 110, counted as 60 (at most the overlap);
  //   scatter: never alone on the rank; the baseline's 3 × 40 µs (grid [1,1,1]; the rank records none) are its
  //     reference; [2000, 2050) and [2500, 2560) overlap 50 + 60 and slow 10 + 20;
  //   mixed: alone 10, 50 and 100 µs (several shapes, no launch configuration): no reference; [2050, 2100) overlaps 50.
  // With a reference: 5 calls, overlap 70 + 80 + 60 + 110 = 320 µs, slowdown 30 + 30 + 60 + 30 = 150 µs, of which
  // 30 against the baseline; without: 1 call, 50 µs. Per step (2): halves. Largest slowdown: gemm [8,1,1] (90 µs).
  const std::string g4 = R"("grid": [4, 1, 1], "block": [128, 1, 1])", g8 = R"("grid": [8, 1, 1], "block": [128, 1, 1])";
  const std::string nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  const Trace rank = read_trace_bytes(
      trace({cpu("user_annotation", "ProfilerStep#1", 0, 3000), cpu("user_annotation", "ProfilerStep#2", 3000, 3000),
             kernel("gemm", 0, 100, 7, g4), kernel("gemm", 110, 100, 7, g4), kernel("gemm", 220, 100, 7, g4),
             kernel("gemm", 330, 100, 7, g4), kernel("gemm", 440, 110, 7, g4),
             kernel("gemm", 450, 50, 9, g8), kernel("gemm", 550, 50, 9, g8), kernel("gemm", 650, 50, 9, g8),
             kernel("mixed", 750, 10, 7), kernel("mixed", 800, 50, 7), kernel("mixed", 900, 100, 7),
             kernel(nccl, 1000, 100, 20), kernel("gemm", 1030, 130, 7, g4),
             kernel(nccl, 1500, 100, 20), kernel("gemm", 1500, 80, 7, g8),
             kernel(nccl, 2000, 100, 20), kernel("scatter", 2000, 50, 7), kernel("mixed", 2050, 50, 7),
             kernel(nccl, 2500, 100, 20), kernel("scatter", 2500, 60, 7),
             kernel(nccl, 4000, 30, 20), kernel(nccl, 4100, 30, 20), kernel("gemm", 3990, 160, 7, g8)},
            dist_info(0, 2)),
      "rank0.json");
  const std::string g1 = R"("grid": [1, 1, 1], "block": [32, 1, 1])";
  const Trace base = read_trace_bytes(trace({cpu("user_annotation", "ProfilerStep#1", 0, 1000),
                                             kernel("scatter", 0, 40, 7, g1), kernel("scatter", 100, 40, 7, g1),
                                             kernel("scatter", 200, 40, 7, g1)},
                                            dist_info(0, 1)),
                                      "base.json");
  const TraceAnalysis a = analyze_traces({rank}, &base, {});
  ASSERT_EQ(a.ranks.size(), 1u);
  ASSERT_TRUE(a.ranks[0].interference.has_value());
  const CommInterference& c = *a.ranks[0].interference;
  EXPECT_NEAR(c.calls_with_reference, 2.5, kTol);
  EXPECT_NEAR(c.calls_without_reference, 0.5, kTol);
  EXPECT_NEAR(c.overlap_ms, 0.160, kTol);
  EXPECT_NEAR(c.slowdown_ms, 0.075, kTol);
  EXPECT_NEAR(c.slowdown_vs_baseline_ms, 0.015, kTol);
  EXPECT_NEAR(c.overlap_without_reference_ms, 0.025, kTol);
  ASSERT_EQ(c.kernels.size(), 3u);
  EXPECT_EQ(c.kernels[0].launch, "grid [8,1,1] block [128,1,1]");  // largest slowdown first
  auto find = [&](const std::string& name, const std::string& launch) -> const KernelInterference& {
    for (const auto& k : c.kernels)
      if (k.name == name && k.launch == launch) return k;
    throw std::runtime_error("no " + name + " " + launch);
  };
  const auto& gemm4 = find("gemm", "grid [4,1,1] block [128,1,1]");
  EXPECT_NEAR(gemm4.overlap_ms, 0.035, kTol);
  EXPECT_NEAR(gemm4.slowdown_ms, 0.015, kTol);
  EXPECT_NEAR(gemm4.reference_us, 100, kTol);
  EXPECT_EQ(gemm4.reference, "rank");
  const auto& gemm8 = find("gemm", "grid [8,1,1] block [128,1,1]");
  EXPECT_NEAR(gemm8.reference_us, 50, kTol);
  EXPECT_NEAR(gemm8.calls_per_step, 1, kTol);
  EXPECT_NEAR(gemm8.slowdown_per_overlap(), 90.0 / 140.0, kTol);
  EXPECT_TRUE(gemm8.slowed_by_about_its_overlap());   // 0.64 of its overlap, 70 µs per call beside 50 µs calls
  EXPECT_FALSE(gemm4.slowed_by_about_its_overlap());  // 0.43
  const auto& scatter = find("scatter", "");
  EXPECT_EQ(scatter.reference, "baseline");
  EXPECT_NEAR(scatter.reference_us, 40, kTol);
  EXPECT_NEAR(scatter.calls_per_step, 1, kTol);
  EXPECT_NEAR(scatter.overlap_ms, 0.055, kTol);
  EXPECT_NEAR(scatter.slowdown_ms, 0.015, kTol);
  // 0.075 ms of a 3 ms step is 2.5 %: a warning naming the figure, the baseline's part and the largest kernel.
  bool found = false;
  for (const auto& f : a.findings)
    if (f.text.find("compute kernels ran 0.07 ms per step longer while communication kernels ran beside them") !=
        std::string::npos) {
      found = true;
      EXPECT_EQ(f.severity, "warning");
      EXPECT_NE(f.text.find("0.01 ms of it measured against the 1-rank baseline"), std::string::npos) << f.text;
      EXPECT_NE(f.text.find("most in gemm (+0.04 ms per step, 0.64 of its overlap: about its whole overlap"),
                std::string::npos)
          << f.text;
    }
  EXPECT_TRUE(found);
  const nlohmann::json j = a;
  const auto& ji = j["ranks"][0]["comm_interference"];
  EXPECT_NEAR(ji["slowdown_ms_per_step"].get<double>(), 0.075, kTol);
  EXPECT_EQ(ji["kernel_count"], 3);
  EXPECT_EQ(ji["kernels"].size(), 3u);
  EXPECT_TRUE(ji["kernels"][2]["launch"].is_null() || ji["kernels"][1]["launch"].is_null());  // scatter: unknown
  const std::string text = report::render_trace_report(a);
  EXPECT_NE(text.find("with a reference: 2.5 calls per step overlap communication for 0.160 ms and slow by +0.075 ms"),
            std::string::npos)
      << text;

  // Without a baseline, scatter has no reference either.
  const TraceAnalysis alone = analyze_traces({rank}, nullptr, {});
  ASSERT_TRUE(alone.ranks[0].interference.has_value());
  EXPECT_NEAR(alone.ranks[0].interference->overlap_without_reference_ms, 0.080, kTol);
  EXPECT_EQ(alone.ranks[0].interference->kernels.size(), 2u);
  // A trace without communication kernels has no such figure, in the JSON too.
  const TraceAnalysis quiet = analyze_traces({base}, nullptr, {});
  EXPECT_FALSE(quiet.ranks[0].interference.has_value());
  const nlohmann::json jq = quiet;
  EXPECT_TRUE(jq["ranks"][0]["comm_interference"].is_null());
}

TEST(TraceAnalysis, BesideCommunicationOnlyInsideStepsAndNotAgainstBusyBaselines) {
  // Steps [0, 1000) and [2000, 3000). gemm alone 3 × 100 µs. NCCL [500, 505) beside gemm [500, 900): 400 µs, but
  // only 5 µs beside communication, so its slowdown counts 5, not 300. Between the steps NCCL [1200, 1300) and gemm
  // [1200, 1350) count for nothing. Step 2: NCCL [1990, 2100), begun before the step, beside gemm [2050, 2160):
  // overlap 50, slowdown 10. Per step (2): overlap 55 / 2 µs, slowdown 15 / 2 µs. scatter overlaps NCCL only; the
  // baseline's three scatters all overlap its own NCCL kernel, so they are no reference either. A kernel without a
  // name is never compared with another.
  const std::string nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  const Trace rank = read_trace_bytes(
      trace({cpu("user_annotation", "ProfilerStep#1", 0, 1000), cpu("user_annotation", "ProfilerStep#2", 2000, 1000),
             kernel("gemm", 0, 100, 7), kernel("gemm", 150, 100, 7), kernel("gemm", 300, 100, 7),
             kernel("", 410, 10, 7), kernel("", 430, 10, 7), kernel("", 450, 10, 7),
             kernel(nccl, 500, 5, 20), kernel("gemm", 500, 400, 7), kernel("", 500, 30, 9),
             kernel(nccl, 1200, 100, 20), kernel("gemm", 1200, 150, 7),
             kernel(nccl, 1990, 110, 20), kernel("gemm", 2050, 110, 7), kernel("scatter", 2000, 40, 9)},
            dist_info(0, 2)),
      "rank0.json");
  const Trace base = read_trace_bytes(
      trace({cpu("user_annotation", "ProfilerStep#1", 0, 1000), kernel(nccl, 0, 1000, 20), kernel("scatter", 0, 40, 7),
             kernel("scatter", 100, 40, 7), kernel("scatter", 200, 40, 7)},
            dist_info(0, 1)),
      "base.json");
  const TraceAnalysis a = analyze_traces({rank}, &base, {});
  ASSERT_TRUE(a.ranks[0].interference.has_value());
  const CommInterference& c = *a.ranks[0].interference;
  ASSERT_EQ(c.kernels.size(), 1u);
  EXPECT_NEAR(c.calls_with_reference, 1.0, kTol);
  EXPECT_NEAR(c.overlap_ms, 0.0275, kTol);
  EXPECT_NEAR(c.slowdown_ms, 0.0075, kTol);
  EXPECT_FALSE(c.kernels[0].slowed_by_about_its_overlap());
  KernelInterference tiny;  // a 5 µs kernel slowed by 0.8 of a real overlap: latency, not a wait for SMs
  tiny.calls_per_step = 10;
  tiny.overlap_ms = 0.030;
  tiny.slowdown_ms = 0.024;
  tiny.reference_us = 5;
  EXPECT_FALSE(tiny.slowed_by_about_its_overlap());
  tiny.reference_us = 25;
  EXPECT_TRUE(tiny.slowed_by_about_its_overlap());
  EXPECT_NEAR(c.calls_without_reference, 1.0, kTol);      // scatter and the nameless kernel
  EXPECT_NEAR(c.overlap_without_reference_ms, 0.0225, kTol);  // scatter 40 µs and the nameless kernel 5, over 2 steps
}

TEST(TraceAnalysis, FindingsPrintKernelNamesSafely) {
  // One step of 1000 µs: "evil<ESC>]0;x<BEL>" alone 3 × 100 µs, then beside NCCL for 100 µs and 50 µs longer: 5 %
  // of the step. The finding names it without the control characters.
  const std::string nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  const std::string evil = "evil\\u001b]0;x\\u0007";  // JSON escapes of ESC and BEL
  const Trace rank = read_trace_bytes(
      trace({cpu("user_annotation", "ProfilerStep#1", 0, 1000), kernel(evil, 0, 100, 7), kernel(evil, 100, 100, 7),
             kernel(evil, 200, 100, 7), kernel(nccl, 400, 100, 20), kernel(evil, 400, 150, 7)},
            dist_info(0, 2)),
      "rank0.json");
  const TraceAnalysis a = analyze_traces({rank}, nullptr, {});
  bool found = false;
  for (const auto& f : a.findings)
    if (f.text.find("most in evil?]0;x? (+0.05 ms per step") != std::string::npos) {
      found = true;
      EXPECT_EQ(f.text.find('\x1b'), std::string::npos);
      EXPECT_EQ(f.severity, "problem");  // 5 % of the step
    }
  EXPECT_TRUE(found);
}
