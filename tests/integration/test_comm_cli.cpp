// `scalescope comm --from FILE` as a user runs it: table on stdout, warnings on stderr, JSON written
// atomically, exit 1 with a clear message for a file that is not an nccl-tests output.

#include <gtest/gtest.h>

#include "cli_runner.h"

using scalescope::testing::read_json;
using scalescope::testing::run_cli;
using scalescope::testing::scratch_dir;
namespace fs = std::filesystem;

namespace {

const char* kOutput =
    "mpirun -np 8 ./build/all_reduce_perf -b 8 -e 128M -f 16 -g 1\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
    "           8             2     float     sum      -1    12.90    0.00    0.00      0    12.87    0.00    0.00      0\n"
    "         128            32     float     sum      -1    15.47    0.01    0.01      0    15.27    0.01    0.01      0\n"
    "        2048           512     float     sum      -1    16.62    0.12    0.22      0    15.90    0.13    0.23      0\n"
    "       32768          8192     float     sum      -1    18.78    1.74    3.05      0    18.09    1.81    3.17      0\n"
    "      524288        131072     float     sum      -1    21.17   24.77   43.35      0    20.96   25.01   43.77      0\n"
    "     8388608       2097152     float     sum      -1    84.29   99.52  174.16      0    83.22  100.80  176.40      0\n"
    "   134217728      33554432     float     sum      -1    592.8  226.39  396.19      0    592.1  226.69  396.71      0\n"
    "# Out of bounds values : 0 OK\n"
    "# Avg bus bandwidth    : 89.6\n";

void expect_mentions(const std::string& output, const std::string& what) {
  EXPECT_NE(output.find(what), std::string::npos) << "expected '" << what << "' in:\n" << output;
}

}  // namespace

TEST(CommCli, ReadsAnNcclTestsOutputAndWritesJson) {
  auto dir = scratch_dir("comm");
  std::ofstream(dir / "ar.txt") << kOutput;
  auto r = run_cli("comm --from " + (dir / "ar.txt").string() + " --expect 450 --out " + (dir / "r.json").string());
  EXPECT_EQ(r.status, 0) << r.output;
  expect_mentions(r.output, "#       size         count      type   redop    root     time   algbw   busbw  #wrong");
  // nccl-tests 2.19+ layout: a time fills its 7 columns with 2 decimals (older versions printed "592.8").
  expect_mentions(r.output, "   134217728      33554432     float     sum      -1   592.80  226.39  396.19       0");
  expect_mentions(r.output, "# Avg bus bandwidth    : 89.6");
  expect_mentions(r.output, "busbw plateau  : 396.19 GB/s");
  expect_mentions(r.output, "grade          : good");
  auto j = read_json(dir / "r.json");
  EXPECT_EQ(j["schema"], "scalescope.comm/1");
  EXPECT_EQ(j["sweep"]["collective"], "all_reduce");
  EXPECT_EQ(j["sweep"]["ranks"], 8);
  EXPECT_EQ(j["sweep"]["rows"].size(), 7u);
  EXPECT_EQ(j["analysis"]["grade"]["label"], "good");
  EXPECT_GT(j["analysis"]["fit"]["beta_bus_gbps"].get<double>(), 300);
  fs::remove_all(dir);
}

// A saved run whose data check failed (#wrong > 0) is a failed run, as a live one is: exit 1, the JSON still written.
TEST(CommCli, WrongElementsInTheFileFailTheRun) {
  auto dir = scratch_dir("comm_wrong");
  std::string text = kOutput;
  const std::string row = "   8388608       2097152     float     sum      -1    84.29   99.52  174.16      0";
  const auto at = text.find(row);
  ASSERT_NE(at, std::string::npos);
  text.replace(at + row.size() - 1, 1, "7");
  std::ofstream(dir / "ar.txt") << text;
  auto r = run_cli("comm --from " + (dir / "ar.txt").string() + " --out " + (dir / "r.json").string());
  EXPECT_EQ(r.status, 1) << r.output;
  expect_mentions(r.output, "size 8388608: #wrong 7");
  expect_mentions(r.output, "1 row(s) of '" + (dir / "ar.txt").string() + "' report wrong elements");
  EXPECT_EQ(read_json(dir / "r.json")["sweep"]["rows_with_wrong_elements"], 1);
  // analyze reads it through the same parser and says the same.
  r = run_cli("analyze " + (dir / "ar.txt").string());
  EXPECT_EQ(r.status, 1) << r.output;
  expect_mentions(r.output, "1 row(s) report wrong elements");
  fs::remove_all(dir);
}

TEST(CommCli, ForeignOrMissingFilesFailWithTheReason) {
  auto dir = scratch_dir("comm_bad");
  std::ofstream(dir / "notes.txt") << "GPU0 X NV18\nsome text\n";
  auto r = run_cli("comm --from " + (dir / "notes.txt").string() + " --out " + (dir / "r.json").string());
  EXPECT_EQ(r.status, 1);
  expect_mentions(r.output, "is not an nccl-tests output");
  expect_mentions(r.output, "what to do:");
  EXPECT_FALSE(fs::exists(dir / "r.json"));
  r = run_cli("comm --from " + (dir / "missing.txt").string());
  EXPECT_EQ(r.status, 1);
  expect_mentions(r.output, "missing.txt");
  r = run_cli("comm --from " + (dir / "notes.txt").string() + " --collective allgatherv");
  EXPECT_EQ(r.status, 2);
  expect_mentions(r.output, "unknown collective 'allgatherv'");
  EXPECT_EQ(run_cli("comm --from x --expect -3").status, 2);
  fs::remove_all(dir);
}

// Flags that shape a live run mean nothing to a saved output: refused (exit 2) rather than ignored, and `-o r.json`
// (the reduction op in `comm`, --out in `analyze`) points at --out.
TEST(CommCli, LiveFlagsWithFromAreRefused) {
  auto dir = scratch_dir("comm_live_flags");
  std::ofstream(dir / "ar.txt") << kOutput;
  auto r = run_cli("comm --from " + (dir / "ar.txt").string() + " -o " + (dir / "r.json").string() + " -g 8 -b 1M");
  EXPECT_EQ(r.status, 2) << r.output;
  expect_mentions(r.output, "--from reads a saved output, so flags that shape a live run would be ignored: -g, -b, -o");
  expect_mentions(r.output, "write the report with --out FILE");
  EXPECT_FALSE(fs::exists(dir / "r.json"));
  r = run_cli("comm --from " + (dir / "ar.txt").string() + " -d half");
  EXPECT_EQ(r.status, 2) << r.output;
  expect_mentions(r.output, "would be ignored: -d\n");
  // --collective and --expect do apply to a saved output.
  r = run_cli("comm --from " + (dir / "ar.txt").string() + " --collective all_reduce --expect 400 -q");
  EXPECT_EQ(r.status, 0) << r.output;
  fs::remove_all(dir);
}

// Two tables in one text: each warning names the table it is about (the source with its lines).
TEST(CommCli, WarningsOfSeveralTablesNameTheirTable) {
  auto dir = scratch_dir("comm_two_tables");
  std::ofstream(dir / "ar.txt") << kOutput << kOutput;
  auto r = run_cli("comm --from " + (dir / "ar.txt").string());
  EXPECT_EQ(r.status, 0) << r.output;
  expect_mentions(r.output, "scalescope: warning: nccl-tests (ar.txt, lines 1–12): line 1: ranks: "
                            "no device list; 8 taken from this command line");
  expect_mentions(r.output, "scalescope: warning: nccl-tests (ar.txt, lines 13–24): line 13: ");
  fs::remove_all(dir);
}
