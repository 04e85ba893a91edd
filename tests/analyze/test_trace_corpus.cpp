// The trace reader and analysis over the shared corpus of real Kineto traces (../shared/corpus/traces; see its
// SOURCES.md). Every file must give a result or a clean error; figures of two traces are checked against numbers
// derived independently with tests/tools/trace_figures.py (Python stdlib only), which, per ProfilerStep#N window, took
// the kernels of the busiest device, split them into NCCL kernels (name starts with "nccl") and the rest,
// merged each set into a union of intervals, clipped them to the window and measured the unions, their
// intersection (overlap) and comm minus compute (exposed); for the 8-rank set it also matched the k-th NCCL
// kernel of every rank, took each rank's clock offset as the median of (rank 0's end − its end) and summed
// start − earliest start (lateness) and min(latest start − start, duration) (wait) per rank.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "analysis/trace_analysis.h"
#include "core/error.h"

using namespace scalescope;
using namespace scalescope::analyze;
namespace fs = std::filesystem;

namespace {

fs::path corpus() { return fs::path(SCALESCOPE_SHARED_CORPUS_DIR) / "traces"; }

#define REQUIRE_CORPUS()                                                                            \
  if (!fs::is_directory(corpus())) GTEST_SKIP() << "shared corpus not found at " << corpus().string()

std::vector<std::string> dlrm_files() {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(corpus() / "param_dlrm_8rank_v100")) v.push_back(e.path().string());
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

TEST(TraceCorpus, EveryFileGivesAResultOrACleanError) {
  REQUIRE_CORPUS();
  int files = 0, results = 0;
  for (const auto& e : fs::recursive_directory_iterator(corpus())) {
    if (!e.is_regular_file() || e.path().extension() == ".md") continue;
    ++files;
    const TraceAnalysis a = analyze_trace_files({e.path().string()}, {});
    if (a.ranks.size() == 1) {  // a result
      ++results;
      const RankAnalysis& r = a.ranks[0];
      EXPECT_FALSE(r.steps.empty()) << e.path();
      if (r.has_gpu) {
        EXPECT_NEAR(r.waterfall.parts_ms(), r.waterfall.loss_ms(), 1e-6) << e.path();
      }
      if (r.interference) {  // compute beside communication: each call's slowdown is at most its overlap
        const CommInterference& c = *r.interference;
        EXPECT_LE(std::abs(c.slowdown_ms), c.overlap_ms + 1e-9) << e.path();
        double overlap = 0;
        for (const auto& k : c.kernels) {
          EXPECT_LE(std::abs(k.slowdown_per_overlap()), 1.0 + 1e-9) << e.path() << " " << k.name;
          EXPECT_GT(k.reference_us, 0) << e.path() << " " << k.name;
          overlap += k.overlap_ms;
        }
        EXPECT_NEAR(overlap, c.overlap_ms, 1e-6) << e.path();
      }
      const nlohmann::json j = a;  // serialisable
      EXPECT_EQ(j["schema"], "scalescope.trace/1");
    } else {
      ASSERT_EQ(a.errors.size(), 1u) << e.path();
      EXPECT_FALSE(a.errors[0].cause.empty());
      EXPECT_FALSE(a.errors[0].remedy.empty());
    }
  }
  EXPECT_GE(files, 17);
  EXPECT_EQ(results, files - 1);  // all but the NCCL profiler-plugin dump
}

TEST(TraceCorpus, HtaA100ComputeBesideCommunication) {
  // HTA's A100 test trace (rank 3 of 8) records grid and block: its compute kernels beside NCCL's are judged by
  // launch configuration. The figures are this analysis' own, read once (2026-11-30) and kept to notice changes.
  REQUIRE_CORPUS();
  const TraceAnalysis a = analyze_trace_files({(corpus() / "hta" / "hta_trace_diff_control_a100_ws8.json.gz").string()}, {});
  ASSERT_EQ(a.ranks.size(), 1u);
  ASSERT_TRUE(a.ranks[0].interference.has_value());
  const CommInterference& c = *a.ranks[0].interference;
  EXPECT_EQ(c.kernels.size(), 102u);
  EXPECT_NEAR(c.calls_with_reference, 290.7, 0.05);
  EXPECT_NEAR(c.overlap_ms, 5.184, 0.0005);
  EXPECT_NEAR(c.slowdown_ms, 1.899, 0.0005);
  ASSERT_FALSE(c.kernels.empty());
  EXPECT_NE(c.kernels[0].launch.find("grid [1024,1,1] block [128,1,1]"), std::string::npos) << c.kernels[0].launch;
  EXPECT_FALSE(c.kernels[0].slowed_by_about_its_overlap());  // a 6 µs kernel: latency, not a wait for SMs
}

TEST(TraceCorpus, NcclProfilerPluginDumpIsRefusedWithTheByte) {
  REQUIRE_CORPUS();
  const std::string p = (corpus() / "nccl_ext_profiler_example_plugin_p2p_trace_invalid_json_unquoted_hex.json").string();
  try {
    read_trace_file(p);
    FAIL() << "no error";
  } catch (const core::Error& e) {
    // Byte, line and column checked with Python: data.index(b'0x262ca50') == 304, line 7, column 145.
    EXPECT_NE(std::string(e.what()).find("unquoted hex value 0x262ca50 at byte 304 (line 7, column 145) in event 2 of "
                                         "the event array: not a Kineto trace (an NCCL profiler-plugin dump?)"),
              std::string::npos)
        << e.what();
  }
}

TraceOptions annotation_windows() {
  TraceOptions o;
  o.step_windows = StepWindows::annotation;
  return o;
}

// Steps as the ProfilerStep#N CPU ranges (trace_figures.py without --gpu-windows).
TEST(TraceCorpus, HtaNcclDataFiguresByHand) {
  REQUIRE_CORPUS();
  const TraceAnalysis a =
      analyze_trace_files({(corpus() / "hta/hta_nccl_parser_config_nccl_data.json.gz").string()}, annotation_windows());
  ASSERT_EQ(a.ranks.size(), 1u);
  const RankAnalysis& r = a.ranks[0];
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(r.world_size, 2);
  EXPECT_EQ(r.nccl_version, "2.17.1");
  EXPECT_EQ(r.device_name, "NVIDIA A100-PG509-200");
  EXPECT_EQ(r.compute_stream, 7);
  // 21 NCCL kernels (15 all-reduce, 6 broadcast) of 46 876.493 µs in all (Python: sum of their "dur").
  std::int64_t count = 0;
  double total_us = 0;
  for (const auto& g : r.collectives) {
    count += g.count;
    total_us += g.total_us;
  }
  EXPECT_EQ(count, 21);
  EXPECT_NEAR(total_us, 46876.493, 1e-6);
  // Per step (Python, µs): step, compute, comm, overlap, exposed.
  struct Expect {
    const char* name;
    double step, compute, comm, overlap, exposed;
  };
  // Python read the numbers as decimal.Decimal (json.load(parse_float=Decimal)): with floats, ts ≈ 4.46e12 µs
  // keeps only ~0.5 ns and the sums drifted by up to 10 ns (compute of step 4: 38506.396 instead of 38506.406).
  const Expect expect[] = {{"ProfilerStep#4", 222442.191, 38506.406, 11989.021, 1825.259, 10163.762},
                           {"ProfilerStep#5", 219726.905, 38429.422, 12300.029, 1760.420, 10539.609},
                           {"ProfilerStep#6", 224936.243, 38720.019, 22587.443, 3731.346, 18856.097}};
  ASSERT_EQ(r.steps.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const StepMetrics& s = r.steps[i];
    EXPECT_EQ(s.name, expect[i].name);
    EXPECT_NEAR(s.step_ms, expect[i].step / 1e3, 1e-9);
    EXPECT_NEAR(s.compute_ms, expect[i].compute / 1e3, 1e-9);
    EXPECT_NEAR(s.comm_ms, expect[i].comm / 1e3, 1e-9);
    EXPECT_NEAR(s.overlap_ms, expect[i].overlap / 1e3, 1e-9);
    EXPECT_NEAR(s.exposed_comm_ms, expect[i].exposed / 1e3, 1e-9);
  }
  // busbw of the largest group (Python: 3 all-reduces of 6 637 568 floats in 7 214.656 µs, n = 2, factor 1):
  // 3 × 26 550 272 B / 7 214 656 ns = 11.0401 GB/s; and of the 2 049 000-float group: 2.0800 GB/s.
  std::map<std::int64_t, const CollectiveGroup*> by_bytes;
  for (const auto& g : r.collectives) by_bytes[g.bytes.value_or(-1)] = &g;
  ASSERT_TRUE(by_bytes.count(26550272));
  EXPECT_EQ(by_bytes[26550272]->count, 3);
  EXPECT_EQ(by_bytes[26550272]->size_source, "NCCL metadata");
  EXPECT_NEAR(*by_bytes[26550272]->busbw_gbps, 11.040140513975995, 1e-9);
  ASSERT_TRUE(by_bytes.count(8196000));
  EXPECT_NEAR(*by_bytes[8196000]->busbw_gbps, 2.080033756981877, 1e-9);
  EXPECT_EQ(r.collectives.front().collective, "all_reduce");
  EXPECT_NEAR(r.collectives.front().total_us, 11820.962, 1e-6);  // the group with the most time
}

TEST(TraceCorpus, ParamDlrmEightRanksByHand) {
  REQUIRE_CORPUS();
  const TraceAnalysis a = analyze_trace_files(dlrm_files(), annotation_windows());
  EXPECT_EQ(a.ranks[0].step_windows, "ProfilerStep#N CPU ranges");
  ASSERT_EQ(a.ranks.size(), 8u);
  EXPECT_TRUE(a.errors.empty());
  EXPECT_EQ(a.world_size, 8);
  // Python, ProfilerStep#10 of each rank (µs): step, compute, comm, overlap, exposed; 8 NCCL kernels each
  // (5 SendRecv under nccl:all_to_all, 3 AllReduce).
  const double expect[8][5] = {{14455, 1034, 5798, 261, 5537},   {19901, 1246, 11336, 280, 11056},
                               {13017, 1068, 3492, 275, 3217},   {19313, 1240, 9774, 324, 9450},
                               {17979, 1126, 6587, 37, 6550},    {17797, 1041, 6251, 40, 6211},
                               {13091, 1051, 3558, 269, 3289},   {12509, 1059, 1746, 166, 1580}};
  // Python, cross-rank (ms per step): lateness and wait.
  const double late[8] = {5.659, 0.118, 7.963, 1.680, 4.877, 5.206, 7.905, 9.713};
  const double wait[8] = {5.588, 11.129, 3.284, 9.567, 6.370, 6.041, 3.342, 1.534};
  for (int i = 0; i < 8; ++i) {
    const RankAnalysis& r = a.ranks[static_cast<std::size_t>(i)];
    EXPECT_EQ(r.rank, i);
    ASSERT_EQ(r.steps.size(), 1u);
    EXPECT_EQ(r.steps[0].name, "ProfilerStep#10");
    EXPECT_NEAR(r.mean.step_ms, expect[i][0] / 1e3, 1e-9) << i;
    EXPECT_NEAR(r.mean.compute_ms, expect[i][1] / 1e3, 1e-9) << i;
    EXPECT_NEAR(r.mean.comm_ms, expect[i][2] / 1e3, 1e-9) << i;
    EXPECT_NEAR(r.mean.overlap_ms, expect[i][3] / 1e3, 1e-9) << i;
    EXPECT_NEAR(r.mean.exposed_comm_ms, expect[i][4] / 1e3, 1e-9) << i;
    EXPECT_NEAR(r.mean.collectives, 8, 1e-9) << i;
    EXPECT_NEAR(r.mean.comm_late_ms, late[i], 1e-9) << i;
    EXPECT_NEAR(r.mean.comm_wait_ms, wait[i], 1e-9) << i;
    EXPECT_LE(std::abs(r.clock_offset_us), 1.5) << i;  // one host: the clocks agree within 1.5 µs
    EXPECT_NEAR(r.waterfall.parts_ms(), r.waterfall.loss_ms(), 1e-9) << i;
  }
  EXPECT_EQ(a.cross.matched, 8);
  EXPECT_EQ(a.cross.matching, "step order");
  ASSERT_TRUE(a.cross.straggler.has_value());
  EXPECT_EQ(*a.cross.straggler, 7);
  EXPECT_NEAR(a.cross.straggler_late_ms_per_step, 9.713, 1e-9);
  ASSERT_FALSE(a.findings.empty());
  EXPECT_NE(a.findings[0].text.find("rank 1 waits 11.13 ms per step for the others: rank 7 is the straggler"),
            std::string::npos)
      << a.findings[0].text;
  // The all-to-alls run as SendRecv kernels but are named by their nccl:all_to_all annotation.
  std::map<std::string, std::int64_t> kinds;
  for (const auto& g : a.ranks[0].collectives) kinds[g.collective] += g.count;
  EXPECT_EQ(kinds, (std::map<std::string, std::int64_t>{{"all_reduce", 3}, {"all_to_all", 5}}));
}

// The default, GPU-side step windows (trace_figures.py --gpu-windows: from the first GPU activity whose launch lies
// in ProfilerStep#N to the first of the next step; the last step ends with its last activity).
TEST(TraceCorpus, HtaNcclDataGpuWindowsByHand) {
  REQUIRE_CORPUS();
  const TraceAnalysis a = analyze_trace_files({(corpus() / "hta/hta_nccl_parser_config_nccl_data.json.gz").string()}, {});
  ASSERT_EQ(a.ranks.size(), 1u);
  const RankAnalysis& r = a.ranks[0];
  EXPECT_EQ(r.step_windows, "GPU work launched in each step");
  // Python (µs): window start, step, compute, comm, overlap, exposed. The GPU runs 4.4–6.1 ms behind the CPU.
  const double expect[3][6] = {{4458676422880.181, 222054.811, 38506.406, 11989.021, 1825.259, 10163.762},
                               {4458676644934.992, 219732.155, 38429.422, 12300.029, 1760.420, 10539.609},
                               {4458676864667.147, 218764.039, 38720.019, 22587.443, 3731.346, 18856.097}};
  ASSERT_EQ(r.steps.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const StepMetrics& s = r.steps[i];
    EXPECT_NEAR(s.start_ms, expect[i][0] / 1e3, 1e-6) << i;
    EXPECT_NEAR(s.step_ms, expect[i][1] / 1e3, 1e-9) << i;
    EXPECT_NEAR(s.compute_ms, expect[i][2] / 1e3, 1e-9) << i;
    EXPECT_NEAR(s.comm_ms, expect[i][3] / 1e3, 1e-9) << i;
    EXPECT_NEAR(s.overlap_ms, expect[i][4] / 1e3, 1e-9) << i;
    EXPECT_NEAR(s.exposed_comm_ms, expect[i][5] / 1e3, 1e-9) << i;
  }
}

TEST(TraceCorpus, ParamDlrmGpuWindowsByHand) {
  REQUIRE_CORPUS();
  const TraceAnalysis a = analyze_trace_files(dlrm_files(), {});
  ASSERT_EQ(a.ranks.size(), 8u);
  // Python --gpu-windows, ProfilerStep#10 (µs): step, compute, comm, overlap, exposed. The ranks whose CPU range
  // began earliest lose the GPU work launched before the step (rank 1's compute: 1246 → 1050 µs).
  const double expect[8][5] = {{13009, 1034, 5798, 261, 5537},  {18467, 1050, 11336, 280, 11056},
                               {11350, 1068, 3492, 275, 3217},  {17511, 1064, 9774, 324, 9450},
                               {16589, 1126, 6587, 37, 6550},   {16392, 1041, 6251, 40, 6211},
                               {11410, 1051, 3558, 269, 3289},  {10967, 1059, 1746, 166, 1580}};
  for (int i = 0; i < 8; ++i) {
    const RankAnalysis& r = a.ranks[static_cast<std::size_t>(i)];
    EXPECT_EQ(r.step_windows, "GPU work launched in each step") << i;
    EXPECT_NEAR(r.mean.step_ms, expect[i][0] / 1e3, 1e-9) << i;
    EXPECT_NEAR(r.mean.compute_ms, expect[i][1] / 1e3, 1e-9) << i;
    EXPECT_NEAR(r.mean.comm_ms, expect[i][2] / 1e3, 1e-9) << i;
    EXPECT_NEAR(r.mean.overlap_ms, expect[i][3] / 1e3, 1e-9) << i;
    EXPECT_NEAR(r.mean.exposed_comm_ms, expect[i][4] / 1e3, 1e-9) << i;
  }
  ASSERT_TRUE(a.cross.straggler.has_value());
  EXPECT_EQ(*a.cross.straggler, 7);  // matching and waits do not depend on the windows
}

TEST(TraceCorpus, CpuOnlyAndSampledRanks) {
  REQUIRE_CORPUS();
  const TraceAnalysis cpu = analyze_trace_files({(corpus() / "hta/hta_cpu_only_gloo_rank34_ws300.json.gz").string()}, {});
  ASSERT_EQ(cpu.ranks.size(), 1u);
  EXPECT_EQ(cpu.ranks[0].rank, 34);
  // No GPU: a CPU rank, its gloo collectives (on their worker threads) taken for communication.
  EXPECT_TRUE(cpu.ranks[0].cpu_ranks);
  EXPECT_TRUE(cpu.ranks[0].has_gpu);
  EXPECT_GT(cpu.ranks[0].mean.comm_ms, 100.0);
  EXPECT_EQ(cpu.ranks[0].backend, "gloo");
  EXPECT_EQ(cpu.world_size, 300);
  ASSERT_EQ(cpu.ranks[0].steps.size(), 1u);
  EXPECT_EQ(cpu.ranks[0].steps[0].name, "ProfilerStep#551");
  // Two of 128 sampled ranks: analysed together, the rest is said to be missing.
  const TraceAnalysis two = analyze_trace_files({(corpus() / "hta/hta_trace_filter_sampled_rank-0_ws128.json.gz").string(),
                                                 (corpus() / "hta/hta_trace_filter_sampled_rank-1_ws128.json.gz").string()},
                                                {});
  ASSERT_EQ(two.ranks.size(), 2u);
  EXPECT_EQ(two.world_size, 128);
  EXPECT_GT(two.cross.matched, 0);
  bool missing = false;
  for (const auto& f : two.findings) missing |= f.text.find("2 of 128 ranks analysed") != std::string::npos;
  EXPECT_TRUE(missing);
  // deviceProperties absent in the sampled traces: no device name, still a GPU rank.
  EXPECT_TRUE(two.ranks[0].has_gpu);
  EXPECT_TRUE(two.ranks[0].device_name.empty());
}
