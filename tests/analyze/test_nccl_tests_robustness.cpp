// Damaged input never crashes the parser and never escapes as anything but core::Error: truncation at every
// k-th byte, flipped bytes, deleted spaces, over inline fixtures and every corpus file. What parses is then
// analysed and rendered, which must not throw either.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "readers/nccl/nccl_tests_parser.h"
#include "analysis/sweep_analysis.h"
#include "core/error.h"
#include "report/nccl_tests_table.h"

using namespace scalescope;
namespace fs = std::filesystem;

namespace {

const char* kFixture =
    "[1,0]<stdout>:# nccl-tests version 2.17.8 nccl-headers=23004 nccl-library=23004\n"
    "mpirun -np 4 ./build/all_reduce_perf -b 8 -e 1G -g 1\n"
    "# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20\n"
    "#  Rank  0 Group  0 Pid 2380523 on   host-a device  0 [0000:4e:00] NVIDIA H100 80GB HBM3\n"
    "host-a:1:1 [0] NCCL INFO NCCL version 2.19.3+cuda12.3\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    "           0             0     float     sum      -1     0.33    0.00    0.00      0     0.36    0.00    0.00    N/A\n"
    "           8             2     float     sum      -1    12.25    0.00    0.00      0    12.00    0.00    0.00      0\n"
    "     1048576        262144     float     sum      -1    28.56   36.71   55.07      0    28.37   36.96   55.44  3e+02\n"
    "  1073741824     268435456     float     sum      -1   9805.7  109.50  164.25      0   9819.6  109.35  164.02      0\n"
    "    #  bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res\n"
    "    10000000       2500000     int    prod    0.068  147.13   0.00    0e+00    0.005  1972.39   0.00    0e+00\n"
    "# Avg bus bandwidth    : 70.742 \n";

// Parses, analyses and renders; returns false when the parser rejected the text (core::Error).
bool exercise(const std::string& text) {
  try {
    auto sweep = analyze::parse_nccl_tests(text, "mutant");
    analyze::AnalysisOptions o;
    o.expected_busbw_gbps = 100;
    auto a = analyze::analyze_sweep(sweep, o);
    auto out = report::render_comm_report(sweep, a);
    auto json = analyze::comm_report_json(sweep, a).dump();
    EXPECT_FALSE(out.empty());
    EXPECT_FALSE(json.empty());
    return true;
  } catch (const core::Error&) {
    return false;
  }
  // Anything else propagates and fails the test with its type and message.
}

std::vector<std::string> inputs() {
  std::vector<std::string> out = {kFixture};
  const fs::path dir = fs::path(SCALESCOPE_SHARED_CORPUS_DIR) / "nccl-tests";
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir)) {
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      out.push_back(ss.str());
    }
  return out;
}

}  // namespace

TEST(NcclTestsRobustness, TruncationAtEveryKthByte) {
  std::size_t parsed = 0, rejected = 0;
  for (const auto& text : inputs())
    for (std::size_t cut = 0; cut <= text.size(); cut += 7) (exercise(text.substr(0, cut)) ? parsed : rejected)++;
  EXPECT_GT(parsed, 0u);
  EXPECT_GT(rejected, 0u);  // the first bytes of any file hold no row
}

TEST(NcclTestsRobustness, ByteFlipsAndDeletedSpaces) {
  std::mt19937 rng(20240604);
  for (const auto& text : inputs()) {
    if (text.empty()) continue;
    for (int trial = 0; trial < 60; ++trial) {
      std::string m = text;
      std::uniform_int_distribution<std::size_t> pos(0, m.size() - 1);
      const int flips = 1 + trial % 8;
      for (int f = 0; f < flips; ++f) {
        const std::size_t p = pos(rng);
        switch (trial % 4) {
          case 0: m[p] = static_cast<char>(rng() & 0xFF); break;            // any byte, NUL and 0xFF included
          case 1: m[p] = "0123456789.-e+N/A# \t\n"[rng() % 21]; break;      // plausible but wrong characters
          case 2: m[p] = static_cast<char>(m[p] ^ (1 << (rng() % 8))); break;
          default: break;
        }
      }
      if (trial % 4 == 3) {  // delete every space in a random stretch, gluing columns together
        const std::size_t a = pos(rng), b = std::min(m.size(), a + 200);
        std::string glued;
        for (std::size_t i = 0; i < m.size(); ++i)
          if (!(i >= a && i < b && m[i] == ' ')) glued += m[i];
        m = glued;
      }
      exercise(m);
    }
  }
}

TEST(NcclTestsRobustness, ExtremeValues) {
  const std::string header =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
  for (const char* row : {"99999999999999999999999 2 float sum -1 1 1 1 0 1 1 1 0\n",
                          "18446744073709551615 18446744073709551615 double sum -1 1e308 1e308 1e308 1e308 inf nan -0 -5\n",
                          "8 0 float sum 2147483648 0 0 0 0 0 0 0 0\n", "8 2 float sum -1 -1 -1 -1 -1 -1 -1 -1 -1\n",
                          "8 2 float sum -1 1e-320 1e-320 1e-320 0 0 0 0 0\n"})
    exercise(header + row);
  exercise(std::string(100000, '8') + " 2 float\n");
  exercise(std::string(50000, '\n'));
}
