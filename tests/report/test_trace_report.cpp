// The terminal rendering of a trace analysis: the table, the waterfall, collectives, verdict, findings, errors.

#include <gtest/gtest.h>

#include "../analyze/trace_test_util.h"
#include "report/table.h"
#include "report/reports.h"
#include "report/trace_report.h"

using namespace scalescope;
using namespace scalescope::analyze;
using namespace scalescope::analyze::testing;

namespace {

// Rank r: one step [0, 1000) µs with compute [0, 600) and an all-reduce of 1e6 floats [600 + 100·r, 900);
// rank 1 starts 100 µs after rank 0, so rank 0 waits 100 µs (exposed: there is no compute then).
Trace rank(int r) {
  return read_trace_bytes(
      trace({cpu("user_annotation", "ProfilerStep#1", 0, 1000), kernel("sgemm", 0, 600, 7),
             kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 600 + 100 * r, 300 - 100 * r, 20,
                    nccl_args("allreduce", 1000000, "Float", 2))},
            dist_info(r, 2)),
      fmt::format("rank{}.json", r));
}

}  // namespace

TEST(TraceReport, TableWaterfallCollectivesAndFindings) {
  std::vector<Trace> v;
  v.push_back(rank(0));
  v.push_back(rank(1));
  TraceAnalysis a = analyze_traces(std::move(v), nullptr, {});
  a.errors.push_back({"bad.json", "'bad.json': unquoted hex value 0x1 at byte 3", "pass the torch.profiler trace"});
  const std::string out = report::render_trace_report(a);
  EXPECT_NE(out.find("traces: 2 ranks analysed (2 with GPU activity), world size 2, 1 file failed"), std::string::npos) << out;
  EXPECT_NE(out.find("collectives matched across ranks: 1 (by step order), 0 unmatched"), std::string::npos) << out;
  EXPECT_NE(out.find("rank  steps  step ms  GPU busy  compute ms  comm ms  overlap  exposed comm ms  host syncs  straggler wait ms"),
            std::string::npos)
      << out;
  // Rank 0: step 1.00, busy 90 %, compute 0.60, comm 0.30, overlap 0 %, exposed 0.30, no syncs, wait 0.10.
  EXPECT_NE(out.find("0         1     1.00    90.0 %        0.60     0.30    0.0 %             0.30         0.0               0.10"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("rank 0: measured 1.00 vs ideal 0.60 = +0.40: exposed comm +0.20, straggler wait +0.10, data wait "
                     "+0.00, host sync +0.00, other +0.10"),
            std::string::npos)
      << out;
  // 4e6 B in 300 µs, factor 1: 13.33 GB/s; after the 100 µs wait, 4e6 B in 200 µs: 20 GB/s.
  EXPECT_NE(out.find("all_reduce   pg 0  4.00 MB  Float      1     0.300  13.33             20.00"), std::string::npos) << out;
  EXPECT_NE(out.find("verdict: - (no 1-rank baseline trace given"), std::string::npos) << out;
  EXPECT_NE(out.find("[problem] rank 0 waits 0.10 ms per step for the others: rank 1 is the straggler"), std::string::npos) << out;
  EXPECT_NE(out.find("files not analysed:\n  'bad.json': unquoted hex value 0x1 at byte 3\n    pass the torch.profiler trace"),
            std::string::npos)
      << out;
}

TEST(TraceReport, CpuOnlyRankPrintsDashes) {
  std::vector<Trace> v;
  v.push_back(read_trace_bytes(trace({cpu("user_annotation", "ProfilerStep#1", 0, 2000)},
                                     R"("distributedInfo": {"backend": "gloo", "rank": 3, "world_size": 4})"),
                               "cpu.json"));
  const std::string out = report::render_trace_report(analyze_traces(std::move(v), nullptr, {}));
  EXPECT_NE(out.find("3         1     2.00         -           -        -        -                -         0.0                  -"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("where the step time"), std::string::npos) << out;
  EXPECT_NE(out.find("rank 3 has no GPU activity (backend gloo)"), std::string::npos) << out;
}

TEST(TerminalText, ControlCharactersAndBadBytesCannotReachTheTerminal) {
  using scalescope::report::terminal_text;
  EXPECT_EQ(terminal_text(std::string("a\0b", 3), 60), "a?b");  // a NUL would end the C string of the report
  EXPECT_EQ(terminal_text("x\ny\rz\t\x1b[31m", 60), "x?y?z??[31m");
  EXPECT_EQ(terminal_text("\xe2\x80\xae" "evil", 60), "?evil");  // U+202E right-to-left override
  EXPECT_EQ(terminal_text("bad\xff\xc3", 60), "bad??");
  EXPECT_EQ(terminal_text("\xc2\x85" "c1", 60), "?c1");          // U+0085, a C1 control
  // Cut at a code point, never inside one: 56 'C' then "éééé" at 60 code points.
  const std::string name = std::string(56, 'C') + "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9";
  EXPECT_EQ(terminal_text(name, 60), name);
  EXPECT_EQ(terminal_text(name + "x", 60), std::string(56, 'C') + "\xc3\xa9...");
  EXPECT_EQ(terminal_text("kernel_name", 60), "kernel_name");
}

TEST(DoctorReportText, KernelBreakdownLineNamesKernelsAndIdleTime) {
  doctor::DoctorReport d;
  d.backend = "gpu";
  doctor::DoctorPoint one, two;
  one.result.config.world_size = 1;
  two.result.config.world_size = 2;
  doctor::KernelBreakdown k;
  k.world_size = 2;
  k.compute_kernels_delta_ms = 0.84;
  k.comm_kernels_ms = 2.72;
  k.gaps_baseline_ms = 2.03;
  k.gaps_ms = 3.61;
  k.boundaries_baseline = 764;
  k.boundaries = 765;
  k.boundary_median_baseline_us = 2.66;
  k.boundary_median_us = 4.0;
  k.top = {{"nvjet_splitK_NTN", false, 2.379, 2.777}, {"gemm\nwith newline", false, 1.0, 1.1}};
  two.kernels = k;
  d.points = {one, two};
  const std::string text = report::render_doctor_report(d);
  EXPECT_NE(text.find("compute beside one rank, kernel by kernel"), std::string::npos) << text;
  EXPECT_NE(text.find("N=2: compute kernels +0.84 (nvjet_splitK_NTN +0.40, gemm?with newline +0.10); idle between "
                      "them 2.03 → 3.61 (+1.58; with the whole GPU idle 0.00 → 0.00, +0.00; 764 → 765 boundaries per "
                      "step, median 2.66 → 4.00 µs); NCCL kernels 2.72"),
            std::string::npos)
      << text;
}

TEST(DoctorReportText, SaysWhereTheTiedEmbeddingWasAllGatheredAndCountsItsTime) {
  doctor::DoctorReport d;
  d.backend = "gpu";
  doctor::DoctorPoint one, two;
  one.result.config.world_size = 1;
  two.result.config.world_size = 2;
  two.result.config.model = train::ModelSpec::from_preset("gpt2-124m", {});
  one.result.config.model = two.result.config.model;
  two.result.embedding_all_gathered = true;
  two.result.phases.all_reduce_seconds = 0.00406;
  two.result.phases.all_gather_seconds = 0.00016;
  two.result.phases.all_gather_count = 2;
  d.points = {one, two};
  std::string text = report::render_doctor_report(d);
  EXPECT_NE(text.find("all-reduce + all-gather ms"), std::string::npos) << text;
  EXPECT_NE(text.find("4.22"), std::string::npos) << text;
  EXPECT_NE(text.find("comm ratio: all-reduce and all-gather time per step"), std::string::npos) << text;
  EXPECT_NE(text.find("tied embedding all-gathered at N=2 (--embedding-exchange auto)"), std::string::npos) << text;
  d.points[1].result.embedding_all_gathered = false;
  d.points[1].result.phases.all_gather_seconds = 0;
  text = report::render_doctor_report(d);
  EXPECT_EQ(text.find("all-gather"), std::string::npos) << text;
}
