// The nccl-tests-compatible table: same columns and widths as nccl-tests 2.20, read back by our own parser
// (round trip), scalescope's statistics and summary on '#' lines only.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "readers/nccl/nccl_tests_parser.h"
#include "analysis/sweep_analysis.h"
#include "core/error.h"
#include "report/nccl_tests_table.h"

using namespace scalescope;
namespace fs = std::filesystem;

namespace {

analyze::NcclTestsParseOptions hint(comm::Collective c) {
  analyze::NcclTestsParseOptions o;
  o.hint = c;
  return o;
}

std::string rstrip(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.pop_back();
  return s;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  return out;
}

analyze::SweepRow spark_row() {  // nccl-tests 2.20.0, dgx-spark playbooks PR 103, first row
  analyze::SweepRow r;
  r.size_bytes = 8192;
  r.count = 2048;
  r.type = comm::DataType::f32;
  r.redop = comm::RedOp::sum;
  r.out_of_place.time_us = 35.15;
  r.out_of_place.algbw_gbps = 0.23;
  r.out_of_place.busbw_gbps = 0.23;
  r.out_of_place.wrong = 0;
  r.in_place.time_us = 30.33;
  r.in_place.algbw_gbps = 0.27;
  r.in_place.busbw_gbps = 0.27;
  r.in_place.wrong = 0;
  return r;
}

void expect_same_rows(const analyze::Sweep& a, const analyze::Sweep& b, const std::string& what) {
  ASSERT_EQ(a.rows.size(), b.rows.size()) << what;
  auto close = [](std::optional<double> x, std::optional<double> y) {
    if (!x || !y) return !x && !y;
    // A 6-wide column drops decimals as values grow, and shows 1 399 737 as "1e+06": what nccl-tests prints too.
    const double ax = std::abs(*x);
    const double tolerance = ax < 99999.5 ? 5e-4 * std::max(1.0, ax) : 0.5 * std::pow(10.0, std::floor(std::log10(ax)));
    return std::abs(*x - *y) <= tolerance;
  };
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    const auto &x = a.rows[i], &y = b.rows[i];
    SCOPED_TRACE(what + " row " + std::to_string(i));
    EXPECT_EQ(x.size_bytes, y.size_bytes);
    EXPECT_EQ(x.count, y.count);
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.type_name, y.type_name);
    EXPECT_EQ(x.redop, y.redop);
    EXPECT_EQ(x.root, y.root);
    for (auto [p, q] : {std::pair{&x.out_of_place, &y.out_of_place}, std::pair{&x.in_place, &y.in_place}}) {
      EXPECT_TRUE(close(p->time_us, q->time_us));
      EXPECT_TRUE(close(p->algbw_gbps, q->algbw_gbps));
      EXPECT_TRUE(close(p->busbw_gbps, q->busbw_gbps));
      EXPECT_TRUE(close(p->wrong, q->wrong));
    }
  }
}

}  // namespace

TEST(NcclTestsTable, SameLayoutAsNcclTests) {
  analyze::Sweep s;
  s.rows = {spark_row()};
  const auto out = lines_of(report::render_nccl_tests_table(s));
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0], "#");
  EXPECT_EQ(rstrip(out[1]), "#                                                              out-of-place                       in-place");
  EXPECT_EQ(rstrip(out[2]),
            "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong");
  EXPECT_EQ(rstrip(out[3]),
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)");
  EXPECT_EQ(out[4],
            "        8192          2048     float     sum      -1    35.15    0.23    0.23       0    30.33    0.27    0.27       0");
}

TEST(NcclTestsTable, NumbersKeepTheirWidth) {
  analyze::Sweep s;
  auto r = spark_row();
  r.out_of_place.time_us = 158070.4;   // 7 wide: "158070" (0 decimals)
  r.out_of_place.algbw_gbps = 43046.1;  // 6 wide: " 43046"
  r.out_of_place.busbw_gbps = 5706839.35;  // too wide for 6: exponent
  r.in_place.time_us = std::nullopt;   // absent
  r.in_place.wrong = 1e6;              // %g
  r.redop.reset();
  r.root = 0;
  s.rows = {r};
  const auto row = lines_of(report::render_nccl_tests_table(s))[4];
  EXPECT_EQ(row, "        8192          2048     float    none       0   158070   43046   6e+06       0      N/A    0.27    0.27   1e+06");
}

TEST(NcclTestsTable, RoundTripThroughTheParser) {
  analyze::Sweep s;
  s.collective = comm::Collective::all_reduce;
  s.ranks = 2;
  auto a = spark_row();
  auto b = spark_row();
  b.size_bytes = 1ull << 34;
  b.count = 1ull << 32;
  b.out_of_place.time_us = 62239;
  b.out_of_place.algbw_gbps = 276.03;
  b.out_of_place.busbw_gbps = 276.03;
  b.in_place.wrong.reset();
  auto c = spark_row();
  c.size_bytes = 0;
  c.count = 0;
  c.type.reset();
  c.type_name = "uint8";
  s.rows = {a, b, c};
  analyze::AnalysisOptions o;
  o.expected_busbw_gbps = 300;
  const auto text = report::render_comm_report(s, analyze::analyze_sweep(s, o));
  const auto back = analyze::parse_nccl_tests(text, "rendered", hint(comm::Collective::all_reduce));
  expect_same_rows(s, back, "inline");
  ASSERT_TRUE(back.reported_avg_busbw_gbps);  // our footer line reads as nccl-tests' footer
}

TEST(NcclTestsTable, CorpusRoundTrip) {
  const fs::path dir = fs::path(SCALESCOPE_SHARED_CORPUS_DIR) / "nccl-tests";
  if (!fs::is_directory(dir)) GTEST_SKIP() << "no shared corpus at " << dir;
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    analyze::Sweep original;
    try {
      original = analyze::read_nccl_tests_file(e.path().string());
    } catch (const core::Error&) {
      continue;  // the two files cut off before their table
    }
    ++files;
    const auto text = report::render_comm_report(original, analyze::analyze_sweep(original));
    const auto back = analyze::parse_nccl_tests(text, "rendered", hint(original.collective));
    expect_same_rows(original, back, e.path().filename().string());
    EXPECT_EQ(back.collective, original.collective) << e.path();
  }
  EXPECT_GE(files, 20u);
}

TEST(NcclTestsTable, LiveStatisticsGoToASeparateCommentTable) {
  analyze::Sweep s;
  s.collective = comm::Collective::all_reduce;
  s.ranks = 8;
  auto r = spark_row();
  EXPECT_EQ(report::render_sweep_statistics(s), "");  // none yet
  r.out_of_place.median_us = 35.0;
  r.out_of_place.p95_us = 39.5;
  r.out_of_place.cv = 0.031;
  r.out_of_place.rank_skew_us = 1.25;
  s.rows = {r};
  const auto stats = report::render_sweep_statistics(s);
  ASSERT_FALSE(stats.empty());
  for (const auto& l : lines_of(stats)) EXPECT_EQ(l.rfind("#", 0), 0u) << l;
  EXPECT_NE(stats.find("39.50"), std::string::npos);
  EXPECT_NE(stats.find("3.1"), std::string::npos);
  // The full report still parses as one nccl-tests table with no complaint.
  const auto text = report::render_comm_report(s, analyze::analyze_sweep(s));
  const auto back = analyze::parse_nccl_tests(text, "r", hint(comm::Collective::all_reduce));
  EXPECT_EQ(back.rows.size(), 1u);
  for (const auto& w : back.warnings) EXPECT_EQ(w.find("line"), std::string::npos) << w;
}

TEST(NcclTestsTable, SummaryNamesEveryResult) {
  analyze::Sweep s;
  s.collective = comm::Collective::all_reduce;
  s.ranks = 2;
  for (std::uint64_t size = 8; size <= (1u << 30); size *= 4) {
    auto r = spark_row();
    r.size_bytes = size;
    r.count = size / 4;
    const double t = 10 + static_cast<double>(size) / 20e3;
    r.out_of_place.time_us = t;
    r.out_of_place.algbw_gbps = static_cast<double>(size) / t / 1e3;
    r.out_of_place.busbw_gbps = r.out_of_place.algbw_gbps;
    s.rows.push_back(r);
  }
  analyze::AnalysisOptions o;
  o.expected_busbw_gbps = 24;  // plateau 19.88 GB/s: 82.8 %
  const auto text = report::render_comm_summary(s, analyze::analyze_sweep(s, o));
  for (const char* part : {"# Out of bounds values : 0 OK", "# Avg bus bandwidth    :", "busbw plateau  :", "latency        :",
                           "α–β fit        : time = 10.00 µs + size / 20.00 GB/s", "grade          : good", "nccl-tests avg :"})
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
}
