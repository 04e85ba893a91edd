// `scalescope train --kernel-trace` writes Kineto-style traces (train/kernel_trace.h) that `scalescope analyze`
// must read like a PyTorch profiler trace: the writer's output goes through the trace reader and analysis here,
// with every figure worked out by hand.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "analysis/trace_analysis.h"
#include "readers/trace/trace_reader.h"
#include "report/trace_report.h"
#include "train/kernel_trace.h"

using namespace scalescope;

namespace {

constexpr double kTol = 1e-9;
constexpr std::int64_t kUs = 1000;  // ns per µs

// Rank 1 of 2, two steps issued on host thread 42 (µs):
//   step 0 = [0, 1000):  launches at 10 (compute A, stream 7), 20 (all-reduce, stream 13), 30 (compute B, stream 7);
//     A [100, 400), all-reduce [300, 600), B [650, 700);
//   step 1 = [1000, 2000): launches at 1010 (compute C), 1020 (all-reduce); C [1100, 1500), all-reduce [1450, 1600).
train::KernelTrace two_steps() {
  train::KernelTrace t;
  t.rank = 1;
  t.world_size = 2;
  t.process_id = 777;
  t.steps = {{0, 1000 * kUs, 42}, {1000 * kUs, 2000 * kUs, 42}};
  const std::string nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  auto call = [&](std::int64_t at, std::int64_t corr) {
    t.api_calls.push_back({"cudaLaunchKernel", false, 42, at * kUs, (at + 5) * kUs, corr});
  };
  auto kernel = [&](const std::string& name, int stream, std::int64_t a, std::int64_t b, std::int64_t corr) {
    t.kernels.push_back({name, 0, stream, a * kUs, b * kUs, corr});
  };
  call(10, 1), call(20, 2), call(30, 3), call(1010, 4), call(1020, 5);
  kernel("gemm_A", 7, 100, 400, 1);
  kernel(nccl, 13, 300, 600, 2);
  kernel("layernorm_B", 7, 650, 700, 3);
  kernel("gemm_C", 7, 1100, 1500, 4);
  kernel(nccl, 13, 1450, 1600, 5);
  return t;
}

}  // namespace

TEST(KernelTraceFile, AnalyzeReadsItLikeAProfilerTrace) {
  std::vector<analyze::Trace> traces;
  traces.push_back(analyze::read_trace_bytes(train::kernel_trace_json(two_steps()), "rank1.json"));
  const analyze::TraceAnalysis a = analyze::analyze_traces(std::move(traces), nullptr, {});
  ASSERT_EQ(a.ranks.size(), 1u);
  const analyze::RankAnalysis& r = a.ranks[0];
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.rank_source, "distributedInfo");
  EXPECT_TRUE(r.has_gpu);
  EXPECT_TRUE(r.steps_from_annotations);
  EXPECT_EQ(r.compute_stream, 7);
  ASSERT_EQ(r.steps.size(), 2u);
  // Step 0 is the GPU window from its first kernel (100) to the next step's first (1100): 1.0 ms.
  const analyze::StepMetrics& s = r.steps[0];
  EXPECT_EQ(s.name, "ProfilerStep#0");
  EXPECT_NEAR(s.step_ms, 1.0, kTol);
  EXPECT_NEAR(s.compute_ms, 0.350, kTol);        // A 300 + B 50
  EXPECT_NEAR(s.comm_ms, 0.300, kTol);
  EXPECT_NEAR(s.overlap_ms, 0.100, kTol);        // [300, 400)
  EXPECT_NEAR(s.exposed_comm_ms, 0.200, kTol);   // [400, 600)
  EXPECT_NEAR(s.gpu_busy_ms, 0.550, kTol);       // [100, 600) ∪ [650, 700)
  EXPECT_NEAR(s.collectives, 1, kTol);
  EXPECT_NEAR(s.launch_gaps, 1, kTol);           // B starts 250 µs after A ends on stream 7
  EXPECT_NEAR(s.launch_gap_ms, 0.250, kTol);
  EXPECT_NEAR(s.launch_gap_idle_ms, 0.050, kTol);  // [400, 600) the all-reduce runs: only [600, 650) is idle

  // The kernel summary over both steps: 1200 µs of kernels, the NCCL kernel's two instances first.
  ASSERT_EQ(r.kernels.size(), 4u);
  const analyze::KernelGroup& nccl = r.kernels[0];
  EXPECT_EQ(nccl.name, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  EXPECT_TRUE(nccl.comm);
  EXPECT_EQ(nccl.count, 2);
  EXPECT_NEAR(nccl.total_ms, 0.450, kTol);
  EXPECT_NEAR(nccl.per_step_ms, 0.225, kTol);
  EXPECT_NEAR(nccl.mean_us, 225, kTol);
  EXPECT_NEAR(nccl.share, 0.375, kTol);
  EXPECT_EQ(r.kernels[1].name, "gemm_C");
  EXPECT_FALSE(r.kernels[1].comm);
  EXPECT_NEAR(r.kernels[1].share, 400.0 / 1200.0, kTol);
  EXPECT_EQ(r.kernels[2].name, "gemm_A");
  EXPECT_EQ(r.kernels[3].name, "layernorm_B");
}

TEST(KernelTraceFile, KernelsBesideTheBaselineSayWhatGrew) {
  // Baseline: the same two steps on one rank, without the all-reduce, and gemm_A 100 µs shorter.
  train::KernelTrace base = two_steps();
  base.rank = 0;
  base.world_size = 1;
  std::erase_if(base.kernels, [](const train::TracedKernel& k) { return k.stream == 13; });
  base.kernels[0].end_ns -= 100 * kUs;  // gemm_A [100, 300)
  const analyze::Trace baseline = analyze::read_trace_bytes(train::kernel_trace_json(base), "base.json");
  std::vector<analyze::Trace> traces;
  traces.push_back(analyze::read_trace_bytes(train::kernel_trace_json(two_steps()), "rank1.json"));
  const analyze::TraceAnalysis a = analyze::analyze_traces(std::move(traces), &baseline, {});
  ASSERT_TRUE(a.baseline.has_value());
  ASSERT_EQ(a.ranks.size(), 1u);
  const auto deltas = analyze::kernel_deltas(a.ranks[0], *a.baseline);
  ASSERT_EQ(deltas.size(), 4u);
  EXPECT_EQ(deltas[0].name, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");  // new: +0.225 ms per step
  EXPECT_TRUE(deltas[0].comm);
  EXPECT_NEAR(deltas[0].baseline_ms, 0.0, kTol);
  EXPECT_NEAR(deltas[0].delta_ms(), 0.225, kTol);
  EXPECT_EQ(deltas[1].name, "gemm_A");                                   // +100 µs over 2 steps
  EXPECT_NEAR(deltas[1].delta_ms(), 0.050, kTol);
  EXPECT_NEAR(deltas[2].delta_ms(), 0.0, kTol);
  EXPECT_NEAR(deltas[3].delta_ms(), 0.0, kTol);
  // The report counts the boundaries and their median: baseline gap 300 → 650 µs, rank 1's 400 → 650 µs, one in
  // two steps each.
  const std::string text = report::render_trace_report(a);
  EXPECT_NE(text.find("kernel boundaries: 0.5 gaps per step in the baseline, median 350.00 µs; 0.5 on rank 1, median "
                      "250.00 µs (-100.00)"),
            std::string::npos)
      << text;
  const nlohmann::json j = a;  // the JSON output carries the same, per rank
  EXPECT_EQ(j.at("kernel_deltas_vs_baseline").at(0).at("rank"), 1);
  EXPECT_NEAR(j["kernel_deltas_vs_baseline"][0]["kernels"][1]["delta_ms_per_step"].get<double>(), 0.050, kTol);
}

TEST(KernelTraceFile, KernelNamesAreShortAndDistinct) {
  EXPECT_EQ(train::readable_kernel_name(
                "void scalescope::train::gpt_kernels::(anonymous namespace)::layernorm_forward_kernel(const "
                "__nv_bfloat16*, const float*, const float*, unsigned long, int, __nv_bfloat16*, float*, float*)"),
            "scalescope::train::gpt_kernels::layernorm_forward_kernel");
  EXPECT_EQ(train::readable_kernel_name("void ns::(anonymous namespace)::add<(int)8, float>(float*)"),
            "ns::add<(int)8, float>");  // a '(' inside template arguments is not the parameter list
  EXPECT_EQ(train::readable_kernel_name("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"),
            "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT");
  EXPECT_EQ(train::readable_kernel_name("(anonymous namespace)::k()"), "k");
}

TEST(KernelTraceFile, LaunchShapesGoThroughTheReader) {
  train::KernelTrace t = two_steps();
  t.kernels[0].grid = {128, 1, 1};
  t.kernels[0].block = {384, 1, 1};
  const auto trace = analyze::read_trace_bytes(train::kernel_trace_json(t), "shapes.json");
  std::vector<std::string> launches;
  for (const auto& e : trace.events)
    if (e.kind == analyze::EventKind::kernel) launches.push_back(trace.names[e.launch]);
  ASSERT_EQ(launches.size(), 5u);
  EXPECT_EQ(launches[0], "grid [128,1,1] block [384,1,1]");  // gemm_A
  EXPECT_EQ(launches[1], "");                                // unknown shapes are not written
}

TEST(KernelTraceFile, EmptyTraceIsStillAValidDocument) {
  train::KernelTrace t;
  const auto trace = analyze::read_trace_bytes(train::kernel_trace_json(t), "empty.json");
  EXPECT_TRUE(trace.events.empty());
}
