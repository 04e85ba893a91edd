// The nccl-tests parser on small inline fixtures, one format feature each (a user's clone has no corpus).

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "readers/nccl/nccl_tests_parser.h"
#include "core/error.h"

using namespace scalescope;
using analyze::parse_nccl_tests;
using comm::Collective;

namespace {

analyze::NcclTestsParseOptions hint(comm::Collective c) {
  analyze::NcclTestsParseOptions o;
  o.hint = c;
  return o;
}

bool has_warning(const analyze::Sweep& s, const std::string& part) {
  return std::any_of(s.warnings.begin(), s.warnings.end(), [&](const std::string& w) { return w.find(part) != std::string::npos; });
}

/// "WHAT | REMEDY" of the core::Error that parsing `text` throws, or "" when it parses.
std::string refusal_of(const char* text, const std::string& name, const analyze::NcclTestsParseOptions& options = {}) {
  try {
    parse_nccl_tests(text, name, options);
  } catch (const core::Error& e) {
    return std::string(e.what()) + " | " + e.remedy();
  }
  return "";
}

std::string all_warnings(const analyze::Sweep& s) {
  std::string out;
  for (const auto& w : s.warnings) out += w + "\n";
  return out;
}

// Current layout (nccl-tests 2.17+), two ranks, with the footer.
const char* kCurrent =
    "# nccl-tests version 2.17.8 nccl-headers=23004 nccl-library=22803\n"
    "# Collective test starting: all_reduce_perf\n"
    "# nThread 1 nGpus 2 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
    "#\n"
    "# Using devices\n"
    "#  Rank  0 Group  0 Pid  31706 on     host-a device  0 [0000:b4:00] NVIDIA H100\n"
    "#  Rank  1 Group  0 Pid  31706 on     host-a device  1 [0000:b5:00] NVIDIA H100\n"
    "#\n"
    "#                                                              out-of-place                       in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
    "           8             2     float     sum      -1    12.25    0.00    0.00      0    12.00    0.00    0.00      0\n"
    "        1024           256     float     sum      -1    12.10    0.08    0.08      0    11.64    0.09    0.09      2\n"
    "# Out of bounds values : 1 FAILED\n"
    "# Avg bus bandwidth    : 0.0425 \n"
    "#\n"
    "# Collective test concluded: all_reduce_perf\n";

}  // namespace

TEST(NcclTestsParser, CurrentLayout) {
  auto s = parse_nccl_tests(kCurrent, "run.log");
  EXPECT_EQ(s.collective, Collective::all_reduce);
  EXPECT_EQ(s.ranks, 2);
  EXPECT_EQ(s.source, "nccl-tests 2.17.8 (run.log)");
  EXPECT_EQ(s.nccl_version, "2.28.3");  // nccl-library=22803
  ASSERT_EQ(s.devices.size(), 2u);
  EXPECT_EQ(s.devices[1], "Rank 1 Group 0 Pid 31706 on host-a device 1 [0000:b5:00] NVIDIA H100");
  ASSERT_EQ(s.rows.size(), 2u);
  const auto& r = s.rows[1];
  EXPECT_EQ(r.size_bytes, 1024u);
  EXPECT_EQ(r.count, 256u);
  EXPECT_EQ(r.type, comm::DataType::f32);
  EXPECT_EQ(r.redop, comm::RedOp::sum);
  EXPECT_FALSE(r.root);  // -1: no root
  EXPECT_DOUBLE_EQ(*r.out_of_place.time_us, 12.10);
  EXPECT_DOUBLE_EQ(*r.out_of_place.algbw_gbps, 0.08);
  EXPECT_DOUBLE_EQ(*r.in_place.busbw_gbps, 0.09);
  EXPECT_DOUBLE_EQ(*r.in_place.wrong, 2);
  EXPECT_DOUBLE_EQ(*s.reported_avg_busbw_gbps, 0.0425);
  // The in-place #wrong 2 of the second row is the run's failed data check: said, and counted for `comm --from`.
  EXPECT_EQ(s.rows_with_wrong_elements, 1u);
  ASSERT_EQ(s.warnings.size(), 1u) << all_warnings(s);
  EXPECT_NE(s.warnings[0].find("size 1024: #wrong 2"), std::string::npos) << s.warnings[0];
}

// Without a header, the last column may be an old output's maximum error: a fraction is no count of elements.
TEST(NcclTestsParser, AHeaderlessFractionIsNoCountOfWrongElements) {
  const char* text =
      "        1024           256     float     sum      -1    12.10    0.08    0.08  1e-07    11.64    0.09    0.09  2e-07\n"
      "        2048           512     float     sum      -1    12.20    0.17    0.17      0    11.70    0.18    0.18      3\n";
  auto s = parse_nccl_tests(text, "old.log");
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.rows_with_wrong_elements, 1u) << all_warnings(s);  // the 3, not the 1e-07
}

TEST(NcclTestsParser, NegativeValuesAreNotUsed) {
  const char* text =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "        1024           256     float     sum      -1  -268588    0.08    0.08      0    11.64    0.09    0.09      0\n";
  auto s = parse_nccl_tests(text, "neg.log");
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_FALSE(s.rows[0].out_of_place.time_us);
  EXPECT_DOUBLE_EQ(*s.rows[0].in_place.time_us, 11.64);
  EXPECT_EQ(s.rows_with_wrong_elements, 0u);
  ASSERT_FALSE(s.warnings.empty());  // then what the table without a program name leaves open
  EXPECT_NE(s.warnings[0].find("time '-268588' is negative; not used"), std::string::npos) << all_warnings(s);
}

TEST(NcclTestsParser, OldLayoutWithoutRootAndErrorColumnNA) {
  const char* text =
      "#                                                     out-of-place                       in-place\n"
      "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "    33554432       8388608   float     sum   1464.2   22.92   45.65    N/A   1458.1   23.01   45.84    N/A\n"
      "    67108864      16777216   float     sum   2659.1   25.24   50.28    N/A   3014.6   22.26   44.35    N/A\n";
  auto s = parse_nccl_tests(text, "x", hint(Collective::all_reduce));
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.rows[0].redop, comm::RedOp::sum);
  EXPECT_FALSE(s.rows[0].root);
  EXPECT_DOUBLE_EQ(*s.rows[0].out_of_place.time_us, 1464.2);
  EXPECT_FALSE(s.rows[0].out_of_place.wrong);  // N/A: checking was off, not a defect
  EXPECT_DOUBLE_EQ(*s.rows[1].in_place.busbw_gbps, 44.35);
  // busbw/algbw = 1.99 leaves the rank count open (n ≈ 200 … 300): said, not guessed.
  EXPECT_FALSE(s.ranks);
  EXPECT_TRUE(has_warning(s, "ranks: unknown")) << all_warnings(s);
}

TEST(NcclTestsParser, OldLayoutWithoutRedopOrRootAndExponentErrors) {
  const char* text =
      "#       size         count      type     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "    37748744      37748744     uint8    11732    3.22    3.22  0e+00    11698    3.23    3.23  3e+02\n";
  auto s = parse_nccl_tests(text, "x", hint(Collective::send_recv));
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_EQ(s.collective, Collective::send_recv);
  EXPECT_FALSE(s.rows[0].type);
  EXPECT_EQ(s.rows[0].type_name, "uint8");
  EXPECT_FALSE(s.rows[0].redop);
  EXPECT_DOUBLE_EQ(*s.rows[0].out_of_place.wrong, 0);
  EXPECT_DOUBLE_EQ(*s.rows[0].in_place.wrong, 300);
  EXPECT_DOUBLE_EQ(*s.rows[0].in_place.time_us, 11698);
}

TEST(NcclTestsParser, RootColumnWithoutRedop) {
  const char* text =
      "(base) user@host-a:~$ mpirun -np 2 ./build/broadcast_perf -b 8 -e 2G -g 1 -c 0\n"
      "#       size         count    type    root     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "           8             2   float       0    45.82    0.00    0.00    N/A    38.17    0.00    0.00    N/A\n"
      "          16             4   float       0    44.10    0.00    0.00    N/A    38.00    0.00    0.00    N/A\n";
  auto s = parse_nccl_tests(text, "x");
  EXPECT_EQ(s.collective, Collective::broadcast);
  EXPECT_EQ(s.ranks, 2);  // from the command line, with a warning saying so
  EXPECT_TRUE(has_warning(s, "line 1: ranks: no device list; 2 taken from this command line"));
  EXPECT_EQ(s.rows[1].root, 0);
  EXPECT_FALSE(s.rows[1].redop);
  EXPECT_DOUBLE_EQ(*s.rows[1].in_place.time_us, 38.00);
}

TEST(NcclTestsParser, ZeroByteRowsAreKept) {
  const char* text =
      "./build/all_gather_perf -b 8 -e 64 -g 2\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "           0             0     float    none      -1     0.33    0.00    0.00      0     0.36    0.00    0.00      0\n"
      "           0             0     float    none      -1     0.33    0.00    0.00      0     0.33    0.00    0.00      0\n"
      "          32             4     float    none      -1    10.52    0.00    0.00      0    10.01    0.00    0.00      0\n"
      "          64             8     float    none      -1    10.01    0.01    0.00      0    10.07    0.01    0.00      0\n";
  auto s = parse_nccl_tests(text, "x");
  EXPECT_EQ(s.collective, Collective::all_gather);
  EXPECT_EQ(s.ranks, 2);
  ASSERT_EQ(s.rows.size(), 4u);
  EXPECT_EQ(s.rows[0].size_bytes, 0u);
  EXPECT_EQ(s.rows[0].count, 0u);
  EXPECT_FALSE(s.rows[0].redop);
  EXPECT_TRUE(s.rows[0].redop_name.empty());
  EXPECT_FALSE(has_warning(s, "more than once")) << all_warnings(s);  // 0-byte rows repeat by design
}

TEST(NcclTestsParser, LauncherPrefixesAreStripped) {
  std::string rows;
  for (const char* prefix : {"[1,0]<stdout>:", "0: ", "[default0]:"}) {
    std::string text = std::string(prefix) +
                       "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw  #wrong\n" +
                       prefix + "     1048576        262144     float     sum      -1    28.56   36.71   64.24      0    28.37   36.96   64.68      0\n" +
                       prefix + "     2097152        524288     float     sum      -1    43.45   48.27   84.47      0    43.39   48.34   84.59      0\n" +
                       prefix + "# Avg bus bandwidth    : 74.49 \n";
    auto s = parse_nccl_tests(text, "x");
    ASSERT_EQ(s.rows.size(), 2u) << prefix;
    EXPECT_DOUBLE_EQ(*s.rows[1].out_of_place.busbw_gbps, 84.47) << prefix;
    EXPECT_DOUBLE_EQ(*s.reported_avg_busbw_gbps, 74.49) << prefix;
    EXPECT_EQ(s.collective, Collective::all_reduce) << prefix;  // sum, -1, count = size/4, busbw/algbw = 1.75
    EXPECT_EQ(s.ranks, 8) << prefix;
    EXPECT_FALSE(has_warning(s, "before the row")) << prefix << "\n" << all_warnings(s);
  }
}

TEST(NcclTestsParser, UnknownPrefixIsIgnoredWithAWarning) {
  const char* text =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "host-a: 1048576 262144 float sum -1 28.56 36.71 64.24 0 28.37 36.96 64.68 0\n";
  auto s = parse_nccl_tests(text, "x", hint(Collective::all_reduce));
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_TRUE(has_warning(s, "line 2: text before the row ('host-a:') ignored")) << all_warnings(s);
}

TEST(NcclTestsParser, NcclLogLinesAndCollapsedWhitespace) {
  const char* text =
      "root@node:~/nccl-tests/build#_ NCCL_DEBUG=INFO ./alltoall_perf\n"
      "#nThread 1 nGpus 1 minBytes 33554432 maxBytes 33554432 step: 1048576(bytes) warmup iters: 5 iters: 20\n"
      "#Using devices\n"
      "#Rank 0 Group 0 Pid 12225 on node device 0 [0000:16:00] NVIDIA GeForce RTX 5090\n"
      "node:12225:12225 [0] NCCL INFO NCCL version 2.25.1+cuda12.4\n"
      "node:12225:12255 [0] NCCL INFO ncclCommInitAll comm 0x55 rank 0 nranks 1 cudaDev 0 - Init START\n"
      "# size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
      "node:12225:12255 [0] NCCL INFO Connected all rings\n"
      "33554432 8388608 float none -1 19.56 1715.44 0.00 0 0.78 43046.10 0.00 N/A\n"
      "# Avg bus bandwidth : 0\n";
  auto s = parse_nccl_tests(text, "x");
  EXPECT_EQ(s.collective, Collective::all_to_all);
  EXPECT_EQ(s.ranks, 1);
  EXPECT_EQ(s.nccl_version, "2.25.1");
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(*s.rows[0].in_place.algbw_gbps, 43046.10);
  EXPECT_FALSE(s.rows[0].in_place.wrong);
  EXPECT_TRUE(s.warnings.empty()) << all_warnings(s);
}

TEST(NcclTestsParser, HeaderThatLostItsHash) {
  const char* text =
      "nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20\n"
      "Using devices\n"
      "  Rank  0 Group  0 Pid   6899 on host-a device  0 [0000:04:00] NVIDIA H100 80GB HBM3\n"
      "#  Rank  1 Group  0 Pid   6900 on host-a device  1 [0000:05:00] NVIDIA H100 80GB HBM3\n"
      "       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "           8             2     float     sum      -1    135.8    0.00    0.00      0    123.5    0.00    0.00      0\n"
      "          16             4     float     sum      -1    123.2    0.00    0.00      0    122.3    0.00    0.00      0\n";
  auto s = parse_nccl_tests(text, "x", hint(Collective::all_reduce));
  EXPECT_EQ(s.ranks, 2);
  EXPECT_EQ(s.rows.size(), 2u);
  EXPECT_TRUE(s.warnings.empty()) << all_warnings(s);
}

TEST(NcclTestsParser, CutOffMidNumberIsNotUsed) {
  const char* text =
      "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "  1073741824     268435456   float     sum    29896   35.92   71.55    N/A    29411   36.51   72.73    N/A\n"
      "  2147483648     536870912   float     sum    54309   39.54   78.7";
  auto s = parse_nccl_tests(text, "x", hint(Collective::all_reduce));
  ASSERT_EQ(s.rows.size(), 2u);
  const auto& r = s.rows[1];
  EXPECT_DOUBLE_EQ(*r.out_of_place.algbw_gbps, 39.54);
  EXPECT_FALSE(r.out_of_place.busbw_gbps);
  EXPECT_FALSE(r.in_place.time_us);
  EXPECT_TRUE(has_warning(s, "line 3: the text ends inside this row; its last value '78.7' (out-of-place busbw)"))
      << all_warnings(s);
  EXPECT_TRUE(has_warning(s, "line 3: row for size 2147483648 is cut off: no out-of-place busbw"));
  // With a final newline the same row is complete as far as it goes: 78.7 is read.
  auto s2 = parse_nccl_tests(std::string(text) + "\n", "x", hint(Collective::all_reduce));
  EXPECT_DOUBLE_EQ(*s2.rows[1].out_of_place.busbw_gbps, 78.7);
  EXPECT_TRUE(has_warning(s2, "line 3: row for size 2147483648 is cut off: no out-of-place error"));
}

TEST(NcclTestsParser, CutOffRowBeforeItsType) {
  const char* text =
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n"
      "        8192          2048     float     sum      -1    35.15    0.23    0.23       0    30.33    0.27    0.27       0\n"
      "      131072";
  auto s = parse_nccl_tests(text, "x", hint(Collective::all_reduce));
  EXPECT_EQ(s.rows.size(), 1u);
  EXPECT_TRUE(has_warning(s, "line 3: the text ends inside a row before its type: '131072' skipped")) << all_warnings(s);
}

TEST(NcclTestsParser, Nccl1xTestFormatInMilliseconds) {
  const char* text =
      "    #  bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res\n"
      "    10000000      10000000    char     sum    0.064  157.38   0.00    0e+00    0.005  2083.77   0.00    0e+00\n"
      "    10000000       2500000     int    prod    0.068  147.13   0.00    0e+00    0.005  1972.39   0.00    0e+00\n";
  auto s = parse_nccl_tests(text, "x", hint(Collective::all_reduce));
  EXPECT_EQ(s.source, "NCCL 1.x test (x)");
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(*s.rows[0].out_of_place.time_us, 64.0);  // 0.064 ms
  EXPECT_DOUBLE_EQ(*s.rows[0].in_place.time_us, 5.0);
  EXPECT_EQ(s.rows[0].type, comm::DataType::i8);
  EXPECT_EQ(s.rows[1].type, comm::DataType::i32);
  EXPECT_EQ(s.rows[1].redop, comm::RedOp::prod);
  EXPECT_DOUBLE_EQ(*s.rows[1].in_place.wrong, 0);
  EXPECT_EQ(s.ranks, 1);  // busbw 0 with algbw 150: the all-reduce factor 2(n−1)/n is 0 only for n = 1
}

TEST(NcclTestsParser, RcclVersionLineInsideHeader) {
  const char* text =
      "# nThread 1 nGpus 8 minBytes 8388608 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20\n"
      "#\n"
      "rccl-tests: Version develop:83d38d9\n"
      "# Using devices\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "     8388608       2097152     float     sum      -1    91.10   92.08  161.14      0    94.94   88.36  154.63      0\n";
  auto s = parse_nccl_tests(text, "mi300x.log");
  EXPECT_EQ(s.source, "rccl-tests develop:83d38d9 (mi300x.log)");
  EXPECT_EQ(s.collective, Collective::all_reduce);  // sum, -1, count = size/4, busbw/algbw = 1.75
  EXPECT_EQ(s.ranks, 8);
}

// A paste cut inside the device list: the preamble says one process drives 8 GPUs, one "Rank" line survived. The
// listed count (1) is no rank count; the rows' busbw/algbw (1.75 = 2·7/8) give 8.
TEST(NcclTestsParser, ADeviceListCutShorterThanThePreambleIsNotTheRankCount) {
  const char* text =
      "# nThread 1 nGpus 8 minBytes 8 maxBytes 8388608 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
      "#\n"
      "# Using devices\n"
      "#  Rank  0 Group  0 Pid  4242 on     node-1 device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "     8388608       2097152     float     sum      -1    91.10   92.08  161.14      0    94.94   88.36  154.63      0\n";
  auto s = parse_nccl_tests(text, "paste.txt");
  EXPECT_EQ(s.ranks, 8) << all_warnings(s);
  EXPECT_TRUE(has_warning(s, "the device list shows 1 rank(s), but the preamble (line 1) says each process drives 8"))
      << all_warnings(s);
  EXPECT_TRUE(has_warning(s, "ranks: the device list was cut; 8 derived from the rows")) << all_warnings(s);
}

// No device list and rows too small to pin the rank count (bandwidths of 0.00): the preamble's nThread × nGpus.
TEST(NcclTestsParser, WithoutADeviceListThePreambleGivesTheRanksOfOneProcess) {
  const char* text =
      "# nThread 2 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "           8             2     float     sum      -1    20.25    0.00    0.00      0    20.00    0.00    0.00      0\n"
      "          16             4     float     sum      -1    20.10    0.00    0.00      0    20.64    0.00    0.00      0\n";
  auto s = parse_nccl_tests(text, "paste.txt", hint(Collective::all_reduce));
  EXPECT_EQ(s.ranks, 4) << all_warnings(s);
  EXPECT_TRUE(has_warning(s, "line 1: ranks: no device list; 4 taken from the preamble")) << all_warnings(s);
  // A whole list gives the ranks without a word about the preamble.
  auto whole = parse_nccl_tests(kCurrent, "run.log");
  EXPECT_EQ(whole.ranks, 2);
  EXPECT_FALSE(has_warning(whole, "preamble")) << all_warnings(whole);
}

// Two processes of 4 GPUs each, the list cut inside the second one's block: 6 is no multiple of the 4 each
// process drives, so the command line's 2 × 4 gives the rank count (broadcast's busbw/algbw of 1 says nothing).
TEST(NcclTestsParser, ADeviceListCutInsideAProcesssBlockGivesWayToTheCommandLine) {
  std::string text =
      "$ mpirun -np 2 ./build/broadcast_perf -b 64M -e 128M -f 2 -g 4\n"
      "# nThread 1 nGpus 4 minBytes 67108864 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
      "# Using devices\n";
  for (int r = 0; r < 6; ++r)
    text += fmt::format("#  Rank  {} Group  0 Pid   {} on      node{} device  {} [0x07] NVIDIA H100\n", r, 1000 + r / 4,
                        r / 4, r % 4);
  text +=
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "    67108864      16777216     float    none       0   345.54  194.21  194.21      0   345.54  194.21  194.21      0\n";
  auto s = parse_nccl_tests(text, "paste.txt");
  EXPECT_EQ(s.collective, Collective::broadcast);
  EXPECT_EQ(s.ranks, 8) << all_warnings(s);
  EXPECT_TRUE(has_warning(s, "so a whole list holds a multiple of 4: the list was cut")) << all_warnings(s);
  EXPECT_TRUE(has_warning(s, "ranks: the device list was cut; 8 taken from this command line")) << all_warnings(s);
  // A whole list that disagrees with the command line keeps its count, and says so.
  std::string whole = text;
  whole.replace(whole.find("-np 2"), 5, "-np 4");
  for (int r = 6; r < 8; ++r)
    whole.insert(whole.find("#       size"), fmt::format("#  Rank  {} Group  0 Pid   1001 on      node1 device  {} [0x07] "
                                                        "NVIDIA H100\n", r, r % 4));
  auto w = parse_nccl_tests(whole, "paste.txt");
  EXPECT_EQ(w.ranks, 8) << all_warnings(w);
  EXPECT_TRUE(has_warning(w, "line 1: ranks: this command line makes 16 (4 processes × 4 GPU(s) × 1 thread(s)), but "
                             "the device list shows 8"))
      << all_warnings(w);
}

// No program named, no hint, and columns that rule out the all-reduce fallback (redop none, count = size / (4 × 8),
// busbw/algbw = 7/8): read as a collective that fits, whose bus factor then gives the ranks.
TEST(NcclTestsParser, AFallbackTheColumnsRuleOutIsNotRead) {
  const char* text =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "    67108864       2097152     float    none      -1   345.54  194.21  169.93      0   345.54  194.21  169.93      0\n"
      "   134217728       4194304     float    none      -1   681.09  197.06  172.43      0   681.09  197.06  172.43      0\n";
  auto s = parse_nccl_tests(text, "paste.txt");
  EXPECT_TRUE(s.collective == Collective::all_gather || s.collective == Collective::all_to_all)
      << comm::to_string(s.collective);
  EXPECT_EQ(s.ranks, 8) << all_warnings(s);
  EXPECT_TRUE(has_warning(s, "cannot tell the collective")) << all_warnings(s);
}

// A launcher and its program on lines joined by '\\' (as pasted from a script, here quoted in markdown): one
// command line, numbered by its first line.
TEST(NcclTestsParser, ACommandContinuedOverLinesIsReadWhole) {
  const char* text =
      "> mpirun --hostfile ~/hostfile \\\n"
      ">    -np 16 \\\n"
      ">    /opt/nccl-tests/build/broadcast_perf -b 64M -e 64M -g 1\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "    67108864      16777216     float    none       0   345.54  194.21  194.21      0   345.54  194.21  194.21      0\n";
  auto s = parse_nccl_tests(text, "paste.md");
  EXPECT_EQ(s.collective, Collective::broadcast);
  EXPECT_EQ(s.ranks, 16) << all_warnings(s);
  EXPECT_TRUE(has_warning(s, "line 1: ranks: no device list; 16 taken from this command line (16 processes × 1 GPU(s)"))
      << all_warnings(s);
}

TEST(NcclTestsParser, DuplicatedPreambleOfNonMpiBuild) {
  const char* text =
      "mpirun -np 2 ./all_reduce_perf -b 1250M -e 1250M -g 1\n"
      "# nThread 1 nGpus 1 minBytes 1310720000 maxBytes 1310720000 step: 1048576(bytes) warmup iters: 5 iters: 20\n"
      "# Using devices\n"
      "# nThread 1 nGpus 1 minBytes 1310720000 maxBytes 1310720000 step: 1048576(bytes) warmup iters: 5 iters: 20\n"
      "# Using devices\n"
      "#   Rank  0 Pid   1320 on host-b device  0 [0x00] Tesla V100-SXM2-16GB\n"
      "#   Rank  0 Pid   2066 on host-a device  0 [0x00] Tesla V100-SXM2-16GB\n"
      "#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "  1310720000     327680000     float     sum   1046.3  1252.7    0.00  0e+00   1040.1  1260.2    0.00  0e+00\n"
      "#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "  1310720000     327680000     float     sum   1047.0  1251.9    0.00  0e+00   1041.0  1259.1    0.00  0e+00\n";
  // Each process ran alone (busbw 0, "Rank 0" twice) and printed its own table: pooled, the two would read as one
  // run. Refused, naming the second table and the MPI build.
  const auto refusal = refusal_of(text, "x");
  EXPECT_NE(refusal.find("'x': a second results table starts at line 10"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("| split the text"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("make MPI=1"), std::string::npos) << refusal;
}

TEST(NcclTestsParser, TwoCollectivesInOneTextAreNotPooled) {
  // all_reduce_perf then all_gather_perf, as `cat ar.log ag.log`: one plateau of both would belong to neither.
  const char* text =
      "# Collective test starting: all_reduce_perf\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "   134217728      33554432     float     sum      -1    600.0  223.70  391.47      0    600.0  223.70  391.47      0\n"
      "# Collective test starting: all_gather_perf\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "   134217728       4194304     float    none      -1    580.0  231.41  202.48      0    580.0  231.41  202.48      0\n";
  const auto refusal = refusal_of(text, "mixed.log");
  EXPECT_NE(refusal.find("a second results table starts at line 5"), std::string::npos) << refusal;

  // Read table by table instead: each its own collective, rows and summary; sources name the lines.
  const auto tables = analyze::parse_nccl_tests_tables(text, "mixed.log");
  ASSERT_EQ(tables.size(), 2u);
  EXPECT_EQ(tables[0].collective, Collective::all_reduce);
  EXPECT_EQ(tables[1].collective, Collective::all_gather);
  EXPECT_EQ(tables[0].rows.size(), 1u);
  EXPECT_EQ(tables[1].rows.size(), 1u);
  EXPECT_EQ(tables[0].source, "nccl-tests (mixed.log, lines 1–3)");  // the next test starts at line 4
  EXPECT_EQ(tables[1].source, "nccl-tests (mixed.log, lines 4–6)");
  EXPECT_EQ(tables[0].ranks, 8);  // busbw / algbw = 1.75 = 2(n − 1)/n
  EXPECT_EQ(tables[1].ranks, 8);  // 202.48 / 231.41 = 0.875 = (n − 1)/n
}

TEST(NcclTestsParser, TablesAreCutAfterTheFooterOrBeforeTheNextTestsFirstLine) {
  // Two whole nccl-tests outputs, as a script running two programs prints them: the footer stays with its table,
  // the next test's version line starts the next part, and warnings keep the whole text's line numbers.
  std::string text = kCurrent;
  text += "# Collective test concluded: all_reduce_perf\n";
  const std::string second =
      "# nccl-tests version 2.17.8 nccl-headers=23004 nccl-library=22803\n"
      "# Collective test starting: all_gather_perf\n"
      "# nThread 1 nGpus 2 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "           8             1     float    none      -1    10.00    0.00    0.00      0    10.00    0.00    0.00      0\n"
      "        1024           128     float    none      -1    11.00    0.09    0.05      0    11.00    0.09    0.05      0\n"
      "        1024           128     float    none      -1    11.00    0.09    0.05      0    11.00    0.09    0.05      0\n"
      "# Avg bus bandwidth    : 0.03 \n";
  const int first_lines = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  text += second;
  const auto tables = analyze::parse_nccl_tests_tables(text, "two.log");
  ASSERT_EQ(tables.size(), 2u);
  EXPECT_EQ(tables[0].collective, Collective::all_reduce);
  EXPECT_EQ(tables[1].collective, Collective::all_gather);
  EXPECT_EQ(tables[0].rows.size(), 2u);
  EXPECT_EQ(tables[0].reported_avg_busbw_gbps, 0.0425);  // its own footer, not the second one's
  EXPECT_EQ(tables[1].reported_avg_busbw_gbps, 0.03);
  EXPECT_EQ(tables[0].source, fmt::format("nccl-tests 2.17.8 (two.log, lines 1–{})", first_lines));
  EXPECT_EQ(tables[0].devices.size(), 2u);  // the second test lists none of its own
  EXPECT_TRUE(tables[1].devices.empty());
  // The repeated 1024-byte rows of the second table are lines first_lines + 6 and + 7 of the whole text.
  EXPECT_TRUE(has_warning(tables[1], fmt::format("on lines {} and {}", first_lines + 6, first_lines + 7)))
      << all_warnings(tables[1]);
}

TEST(NcclTestsParser, OneTableReadsAsParseNcclTestsReadsIt) {
  const auto tables = analyze::parse_nccl_tests_tables(kCurrent, "one.log");
  ASSERT_EQ(tables.size(), 1u);
  const auto one = parse_nccl_tests(kCurrent, "one.log");
  EXPECT_EQ(tables[0].source, one.source);
  EXPECT_EQ(tables[0].rows.size(), one.rows.size());
  EXPECT_EQ(tables[0].warnings, one.warnings);
  EXPECT_EQ(tables[0].ranks, one.ranks);
}

TEST(NcclTestsParser, ATestCutBeforeItsFirstRowIsNotReadAndSaysSo) {
  const std::string ag_start = "# Collective test starting: all_gather_perf\n";
  const std::string header =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
  const std::string bc =
      "# Collective test starting: broadcast_perf\n" + header +
      "        1024           256     float    none       0    10.00    0.10    0.10      0    10.00    0.10    0.10      0\n";
  // Last: all_reduce, then all_gather cut after its header. One table, and it says the rest was not read.
  auto tables = analyze::parse_nccl_tests_tables(std::string(kCurrent) + ag_start + header + header, "cut.log");
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].rows.size(), 2u);
  EXPECT_TRUE(has_warning(tables[0], "ends before its first result row; it is not read")) << all_warnings(tables[0]);
  // In the middle: all_reduce, all_gather dead after its header, broadcast. all_gather's lines are not pooled into
  // broadcast's table (no "names all_gather_perf" conflict, no false no-MPI note).
  tables = analyze::parse_nccl_tests_tables(std::string(kCurrent) + ag_start + header + bc, "mid.log");
  ASSERT_EQ(tables.size(), 2u);
  EXPECT_EQ(tables[0].collective, Collective::all_reduce);
  EXPECT_EQ(tables[1].collective, Collective::broadcast);
  EXPECT_TRUE(has_warning(tables[0], "a test whose text ends before its first result row is not read"))
      << all_warnings(tables[0]);
  EXPECT_FALSE(has_warning(tables[1], "all_gather")) << all_warnings(tables[1]);
  // First: the dead one, then broadcast: the note goes to the first table read.
  tables = analyze::parse_nccl_tests_tables(ag_start + header + bc, "first.log");
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].collective, Collective::broadcast);
  EXPECT_TRUE(has_warning(tables[0], "lines 1–2: a test whose text ends")) << all_warnings(tables[0]);
}

TEST(NcclTestsParser, TablesOfProcessesThatEachRanAloneAreNamed) {
  // An nccl-tests build without MPI under mpirun: each process prints a whole 1-rank test of its own.
  const char* one =
      "# nThread 1 nGpus 1 minBytes 1024 maxBytes 2048 step: 2(factor) warmup iters: 5 iters: 20\n"
      "#  Rank  0 Group  0 Pid   1320 on host-a device  0 [0x00] NVIDIA H100\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "        1024           256     float     sum      -1     5.00    0.20    0.00      0     5.00    0.20    0.00      0\n"
      "        2048           512     float     sum      -1     5.00    0.41    0.00      0     5.00    0.41    0.00      0\n"
      "# Avg bus bandwidth    : 0 \n";
  const std::string text = std::string("mpirun -np 2 ./all_reduce_perf -b 1K -e 2K -f 2\n") + one + one;
  const auto tables = analyze::parse_nccl_tests_tables(text, "np2.log");
  ASSERT_EQ(tables.size(), 2u);
  EXPECT_FALSE(has_warning(tables[0], "make MPI=1")) << all_warnings(tables[0]);
  EXPECT_TRUE(has_warning(tables[1], "make MPI=1")) << all_warnings(tables[1]);
  EXPECT_TRUE(has_warning(tables[1], "(np2.log, lines 1–7)")) << all_warnings(tables[1]);
}

TEST(NcclTestsParser, RowSplitByInterleavedLogOutput) {
  const char* text =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "         512           128     float     sum      -1\n"
      "h100-1:497888:497888 [0] NCCL INFO 512 Bytes -> Algo 0 proto 0 time 25.229528\n"
      "    62.05    0.01    0.01      0    61.90    0.01    0.01      0\n";
  auto s = parse_nccl_tests(text, "x", hint(Collective::all_reduce));
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(*s.rows[0].out_of_place.time_us, 62.05);
  EXPECT_DOUBLE_EQ(*s.rows[0].in_place.time_us, 61.90);
  EXPECT_TRUE(has_warning(s, "line 4: continues the row for size 512 (line 2)")) << all_warnings(s);
}

TEST(NcclTestsParser, PerIterationColumns) {
  const char* text =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw #wrong    i_min    i_max    i_p99    i_cv%\n"
      "     1048576        262144     float     sum      -1    28.56   36.71   64.24      0    27.00    31.00    30.90     2.50    28.37   36.96   64.68      0    27.10    30.00    29.90     1.50\n";
  auto s = parse_nccl_tests(text, "x", hint(Collective::all_reduce));
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(*s.rows[0].out_of_place.min_us, 27.0);
  EXPECT_DOUBLE_EQ(*s.rows[0].out_of_place.max_us, 31.0);
  EXPECT_DOUBLE_EQ(*s.rows[0].out_of_place.cv, 0.025);
  EXPECT_DOUBLE_EQ(*s.rows[0].in_place.busbw_gbps, 64.68);
  ASSERT_EQ(s.warnings.size(), 1u) << all_warnings(s);
  EXPECT_TRUE(has_warning(s, "ranks: no device list; 8 derived from the rows"));  // 64.24 / 36.71 = 1.75
}

TEST(NcclTestsParser, UnreadableCellsAreAbsentWithAWarning) {
  const char* text =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "        1024           256     float     sum      -1      N/A    0.08    0.08      0    11.64    x.yz    0.09      0\n";
  auto s = parse_nccl_tests(text, "x", hint(Collective::all_reduce));
  EXPECT_FALSE(s.rows[0].out_of_place.time_us);
  EXPECT_FALSE(s.rows[0].in_place.algbw_gbps);
  EXPECT_TRUE(has_warning(s, "line 2: out-of-place time 'N/A' is not a number")) << all_warnings(s);
  EXPECT_TRUE(has_warning(s, "line 2: in-place algbw 'x.yz' is not a number"));
}

TEST(NcclTestsParser, CollectiveFromHintFallbackAndConflicts) {
  const char* rows =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "           8             2     float     sum      -1    97.98    0.00    0.00      0    190.2    0.00    0.00      0\n";
  // sum, root -1, count = size/4 and no usable busbw: all-reduce or send/recv.
  analyze::NcclTestsParseOptions fallback_send_recv;
  fallback_send_recv.fallback = Collective::send_recv;
  auto fallback = parse_nccl_tests(rows, "x", fallback_send_recv);
  EXPECT_EQ(fallback.collective, Collective::send_recv);
  EXPECT_TRUE(has_warning(fallback, "cannot tell the collective")) << all_warnings(fallback);
  EXPECT_TRUE(has_warning(fallback, "all_reduce, reduce_scatter, send_recv"));  // a 1-rank reduce-scatter too
  auto hinted = parse_nccl_tests(rows, "x", hint(Collective::all_reduce));
  EXPECT_EQ(hinted.collective, Collective::all_reduce);
  EXPECT_FALSE(has_warning(hinted, "collective")) << all_warnings(hinted);
  auto contradicted = parse_nccl_tests(rows, "x", hint(Collective::broadcast));
  EXPECT_EQ(contradicted.collective, Collective::broadcast);
  EXPECT_TRUE(has_warning(contradicted, "read as broadcast as the caller said, but the columns fit all_reduce, reduce_scatter, send_recv"));
  auto named = parse_nccl_tests(std::string("./build/all_reduce_perf -g 3\n") + rows, "x", hint(Collective::send_recv));
  EXPECT_EQ(named.collective, Collective::all_reduce);
  EXPECT_TRUE(has_warning(named, "the caller said send_recv but the text names all_reduce_perf"));
}

TEST(NcclTestsParser, ForeignOrEmptyInputIsAnError) {
  for (const char* text : {"", "\n\n", "hello world\n1 2 3\n", "{\"traceEvents\": []}", "| GPU0 | X | NV18 |\n"}) {
    try {
      parse_nccl_tests(text, "notes.txt");
      ADD_FAILURE() << "no error for: " << text;
    } catch (const core::Error& e) {
      EXPECT_NE(std::string(e.what()).find("'notes.txt' is not an nccl-tests output"), std::string::npos) << e.what();
      EXPECT_FALSE(e.remedy().empty());
    }
  }
  try {
    parse_nccl_tests("# nThread 1 nGpus 2 minBytes 8\n#\n# Using devices\n#  Rank  0 Group  0 Pid 1 on h device 0 [0x01] GPU\n",
                     "cut.txt");
    ADD_FAILURE();
  } catch (const core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'cut.txt' is an nccl-tests output without any result row"), std::string::npos) << e.what();
  }
}

TEST(NcclTestsParser, InvalidUtf8IsReplacedSoJsonCanBeWritten) {
  std::string text = "#  Rank  0 Group  0 Pid 1 on h\xA0st device 0 [0x01] GPU \xC3\n";
  text += "           8             2     float     sum      -1    12.25    0.00    0.00      0    12.00    0.00    0.00      0\n";
  auto s = parse_nccl_tests(text, "bad\xFFname", hint(Collective::all_reduce));
  ASSERT_EQ(s.devices.size(), 1u);
  EXPECT_EQ(s.devices[0], "Rank 0 Group 0 Pid 1 on h\xEF\xBF\xBDst device 0 [0x01] GPU \xEF\xBF\xBD");
  EXPECT_NO_THROW(nlohmann::json(s).dump());
}

TEST(NcclTestsParser, ReadFileNamesAMissingPath) {
  try {
    analyze::read_nccl_tests_file("/nonexistent/dir/out.txt");
    ADD_FAILURE();
  } catch (const core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/out.txt"), std::string::npos);
  }
}

// scalescope comm's own output reads back: its header line names the program and the rank count, which its
// table (no device list) does not.
TEST(NcclTestsParser, ScalescopeCommsOwnHeaderNamesTheCollectiveAndRanks) {
  const std::string text =
      "# scalescope comm: mpi backend, 2 rank(s), Open MPI v4.1.4, rank 0 on cpu (host memory)\n"
      "# scalescope comm (mpi): all_reduce_perf, 2 rank(s)\n"
      "#\n"
      "#                                                              out-of-place                       in-place\n"
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)\n"
      "        1024           256     float     sum      -1     2.49    0.41    0.41       0     1.00    1.02    1.02       0\n"
      "        2048           512     float     sum      -1     1.07    1.92    1.92       0     1.10    1.86    1.86       0\n";
  auto s = parse_nccl_tests(text, "ar.log");
  EXPECT_EQ(s.collective, Collective::all_reduce);
  EXPECT_EQ(s.ranks, 2);
  EXPECT_EQ(s.source, "scalescope comm (mpi) (ar.log)");
  // Read back, scalescope's own table is read without a guess to warn about (its header states the ranks).
  EXPECT_TRUE(s.warnings.empty()) << all_warnings(s);
  // The header decides between the collectives whose columns look alike (all-reduce and send/recv at n = 2).
  std::string sendrecv = text;
  sendrecv.replace(sendrecv.find("all_reduce_perf"), 15, "sendrecv_perf");
  EXPECT_EQ(parse_nccl_tests(sendrecv, "sr.log").collective, Collective::send_recv);
  // Re-reported nccl-tests files carry the same header; an unknown rank count names the collective only.
  std::string unknown = text;
  unknown.replace(unknown.find("scalescope comm (mpi)"), 21, "nccl-tests (x.log)");
  unknown.replace(unknown.find("_perf, 2 rank(s)"), 16, "_perf, unknown rank(s)");
  const auto re_reported = parse_nccl_tests(unknown, "x");
  EXPECT_EQ(re_reported.collective, Collective::all_reduce);
  EXPECT_EQ(re_reported.source, "nccl-tests (x)");
  // With the NCCL version known the header goes on after the rank count ("2 rank(s), NCCL 2.28.3").
  std::string versioned = sendrecv;
  versioned.replace(versioned.find("2 rank(s)\n#\n"), 10, "2 rank(s), NCCL 2.28.3\n");
  const auto v = parse_nccl_tests(versioned, "v");
  EXPECT_EQ(v.collective, Collective::send_recv);
  EXPECT_EQ(v.ranks, 2);
}

TEST(NcclTestsParser, AHeaderInAnotherColumnOrderIsRefused) {
  // busbw before algbw: read by nccl-tests' fixed order, each would have been reported as the other, silently.
  const char* text =
      "#       size         count      type   redop    root     time   busbw   algbw #wrong     time   busbw   algbw #wrong\n"
      "   134217728      33554432     float     sum      -1    600.0  391.47  223.70      0    600.0  391.47  223.70      0\n";
  const auto refusal = refusal_of(text, "swap.log", hint(Collective::all_reduce));
  EXPECT_NE(refusal.find("orders its columns otherwise than nccl-tests"), std::string::npos) << refusal;
}

TEST(NcclTestsParser, ARowWhoseTimeContradictsItsAlgbwIsNotUsed) {
  // 128 MiB in 6000 µs is 22.37 GB/s, not the 223.70 printed; a time of 0 is no measurement.
  const char* text =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "    67108864      16777216     float     sum      -1    301.0  222.95  390.17      0    301.0  222.95  390.17      0\n"
      "   134217728      33554432     float     sum      -1   6000.0  223.70  391.47      0    600.0  223.70  391.47      0\n"
      "   268435456      67108864     float     sum      -1      0.0    0.00    0.00      0   1200.0  223.70  391.47      0\n";
  const auto s = parse_nccl_tests(text, "x", hint(Collective::all_reduce));
  ASSERT_EQ(s.rows.size(), 3u);
  EXPECT_TRUE(s.rows[0].out_of_place.time_us.has_value());
  EXPECT_FALSE(s.rows[1].out_of_place.time_us.has_value());
  EXPECT_FALSE(s.rows[1].out_of_place.busbw_gbps.has_value());
  EXPECT_TRUE(s.rows[1].in_place.time_us.has_value());  // its other half agrees with itself
  EXPECT_FALSE(s.rows[2].out_of_place.time_us.has_value());
  EXPECT_TRUE(has_warning(s, "time 6000 µs gives algbw 22.37 GB/s, but the row says 223.7")) << all_warnings(s);
  EXPECT_TRUE(has_warning(s, "time 0 for 268435456 bytes is no measurement")) << all_warnings(s);
}
