// `scalescope train --kernel-trace` writes Kineto-style traces (train/kernel_trace.h) that `scalescope analyze`
// must read like a PyTorch profiler trace: the writer's output goes through the trace reader and analysis here,
// with every figure worked out by hand.

#include <gtest/gtest.h>

#include "analyze/trace_analysis.h"
#include "analyze/trace_reader.h"
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
}

TEST(KernelTraceFile, EmptyTraceIsStillAValidDocument) {
  train::KernelTrace t;
  const auto trace = analyze::read_trace_bytes(train::kernel_trace_json(t), "empty.json");
  EXPECT_TRUE(trace.events.empty());
}
