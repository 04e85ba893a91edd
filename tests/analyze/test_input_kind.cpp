// Input detection for `scalescope analyze`: each kind from an inline fixture, combinations, foreign text.

#include <gtest/gtest.h>

#include <string>

#include "readers/input_kind.h"
#include "core/error.h"

using namespace scalescope::analyze;

TEST(InputKind, TraceFromItsHeadAlone) {
  auto d = detect_input("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [", "w0.pt.trace.json", false);
  EXPECT_EQ(d.kinds, std::vector<InputKind>{InputKind::kineto_trace});
  d = detect_input("{\"distributedInfo\": {\"rank\": 3}, \"traceEvents\": [", "x.json", false);
  EXPECT_TRUE(d.has(InputKind::kineto_trace));
  d = detect_input("[\n{\"name\": \"Group API\", \"ph\": \"b\", \"ts\": 1.5}", "p2p.json", false);
  EXPECT_TRUE(d.has(InputKind::kineto_trace));
}

// The merged timeline `analyze --timeline` writes holds every rank: as one rank's trace it would be a rank that
// idles 100 % of the step. Refused by name, as written and as re-saved with blanks around the colon.
TEST(InputKind, OwnMergedTimelineIsNoRankTrace) {
  for (const char* text :
       {R"({"displayTimeUnit":"ms","otherData":{"generator":"scalescope analyze","clock":"x"},
"traceEvents":[]})",
        R"({ "displayTimeUnit": "ms", "otherData": { "generator" :  "scalescope analyze" }, "traceEvents": [] })"}) {
    const auto d = detect_input(text, "merged.json", true);
    EXPECT_TRUE(d.kinds.empty()) << text;
    EXPECT_NE(d.reason.find("merged timeline of all ranks"), std::string::npos) << d.reason;
  }
  // Another tool's generator is a trace as before.
  const auto other = detect_input(R"({"otherData": {"generator": "other"}, "traceEvents": []})", "t.json", true);
  EXPECT_TRUE(other.has(InputKind::kineto_trace)) << other.reason;
}

TEST(InputKind, GzipIsATraceOnlyByName) {
  const std::string gz("\x1f\x8b\x08\x00rest", 8);
  auto d = detect_input(gz, "rank0.json.gz", false);
  EXPECT_TRUE(d.gzip);
  EXPECT_TRUE(d.has(InputKind::kineto_trace));
  d = detect_input(gz, "nccl.log.gz", false);
  EXPECT_TRUE(d.kinds.empty());
  EXPECT_NE(d.reason.find("decompress"), std::string::npos);
}

TEST(InputKind, EmptyBinaryAndForeign) {
  EXPECT_EQ(detect_input("", "x", true).reason, "the file is empty");
  EXPECT_NE(detect_input(std::string("ab\0cd", 5), "x", true).reason.find("binary"), std::string::npos);
  auto d = detect_input("| GPUs | img/s |\n|---|---|\n| 1 | 230 |\n", "table.md", true);
  EXPECT_TRUE(d.kinds.empty());
  EXPECT_NE(d.reason.find("not a recognised input"), std::string::npos);
  EXPECT_NE(d.reason.find("NCCL debug log"), std::string::npos);
  // Documentation quoting log lines in a table is not a log.
  d = detect_input("| f | \"[E ProcessGroupNCCL.cpp:737] [Rank 1] WorkNCCL(SeqNum=1, OpType=X)\", x NCCL WARN y |\n", "SOURCES.md", true);
  EXPECT_TRUE(d.kinds.empty()) << d.reason;
}

TEST(InputKind, HeadOfATextAsksForTheWholeText) {
  auto d = detect_input("host:1:1 [0] NCCL INFO Using network IB\n", "x.log", false);
  EXPECT_TRUE(d.kinds.empty());
  EXPECT_EQ(d.reason, "need the whole text");
}

TEST(InputKind, NcclLogWatchdogAndBoth) {
  const std::string nccl = "host:1:1 [0] NCCL INFO Using network IB\n";
  const std::string wd =
      "[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
      "OpType=ALLREDUCE, Timeout(ms)=10) ran for 20 milliseconds before timing out.\n";
  EXPECT_EQ(detect_input(nccl, "a", true).kinds, std::vector<InputKind>{InputKind::nccl_log});
  EXPECT_EQ(detect_input(wd, "a", true).kinds, std::vector<InputKind>{InputKind::watchdog});
  EXPECT_EQ(detect_input(nccl + wd, "a", true).kinds, (std::vector<InputKind>{InputKind::nccl_log, InputKind::watchdog}));
  EXPECT_EQ(detect_input("NCCL INFO NET/IB : Using [0]mlx5_0:1/IB\n", "a", true).kinds, std::vector<InputKind>{InputKind::nccl_log});
}

TEST(InputKind, NcclTestsTopoAndScalescopeJson) {
  const std::string tests =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "     1048576        262144     float     sum      -1    20.00   52.43   91.75      0    19.90   52.69   92.21      0\n";
  auto d = detect_input(tests, "t.txt", true);
  EXPECT_EQ(d.kinds, std::vector<InputKind>{InputKind::nccl_tests});
  const std::string topo = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV12\t0-23\t0\nGPU1\tNV12\t X \t0-23\t0\n";
  d = detect_input(topo, "topo.txt", true);
  EXPECT_EQ(d.kinds, std::vector<InputKind>{InputKind::smi_topo}) << d.reason;
  d = detect_input("{\"schema\": \"scalescope.doctor/1\", \"points\": []}", "r.json", true);
  EXPECT_EQ(d.kinds, std::vector<InputKind>{InputKind::scalescope_json});
  EXPECT_EQ(d.schema, "scalescope.doctor/1");
  d = detect_input("{\"schema\": \"scalescope.doctor/1\", \"points\": [", "r.json", true);
  EXPECT_TRUE(d.kinds.empty());
  EXPECT_NE(d.reason.find("does not parse"), std::string::npos);
}

TEST(InputKind, ReadInputFileErrorsNameThePath) {
  try {
    (void)read_input_file("/nonexistent/scalescope/file.log");
    FAIL() << "no error";
  } catch (const scalescope::core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/scalescope/file.log"), std::string::npos);
  }
  EXPECT_THROW((void)read_input_file("/"), scalescope::core::Error);
}
