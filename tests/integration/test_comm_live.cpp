// `scalescope comm` live on CPU ranks (MPI): every collective, type, operation and root verified exactly;
// the check catches corruption; bandwidths follow nccl-tests' definitions; bad flags are usage errors.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include "cli_runner.h"

using scalescope::testing::read_json;
using scalescope::testing::run_cli;
using scalescope::testing::scratch_dir;

namespace {

nlohmann::json sweep_all(int ranks, const std::string& extra = "") {
  auto dir = scratch_dir("comm" + std::to_string(ranks));
  auto out = dir / "c.json";
  auto r = run_cli("comm --backend cpu -g " + std::to_string(ranks) +
                   " --collective all -d all -o all -r all -b 8 -e 64K -f 8 -n 2 -w 0 -c 1 -q --out " + out.string() +
                   " " + extra);
  EXPECT_EQ(r.status, 0) << r.output.substr(0, 4000);
  if (r.status != 0) return {};
  auto j = read_json(out);
  std::filesystem::remove_all(dir);
  return j;
}

}  // namespace

TEST(CommLive, EveryCollectiveTypeOpAndRootIsExactOnTwoAndThreeRanks) {
  for (int ranks : {2, 3}) {
    auto j = sweep_all(ranks, "--no-per-iteration");
    ASSERT_FALSE(j.is_null());
    EXPECT_EQ(j["schema"], "scalescope.comm/1");
    // 2 × 6 types × 5 ops × n roots for reduce; 6 × 5 all-reduce and reduce-scatter; 6 × n broadcast; 6 × 3 others.
    const std::size_t expected = 6 * 5 * 2 + 6 * 5 * ranks + 6 * ranks + 6 * 3;
    EXPECT_EQ(j["reports"].size(), expected) << ranks;
    std::size_t checked = 0;
    for (const auto& rep : j["reports"]) {
      const auto& s = rep["sweep"];
      ASSERT_EQ(s["rows"].size(), 5u) << s["collective"];  // 8 B, 64 B, 512 B, 4 KiB, 32 KiB (×8 up to 64 KiB)
      for (const auto& row : s["rows"])
        for (const char* dir : {"out_of_place", "in_place"}) {
          const auto& w = row[dir]["wrong"];
          if (w.is_null()) continue;  // in-place all-to-all / send-recv: undefined, not checked (as nccl-tests)
          EXPECT_EQ(w.get<double>(), 0.0) << s["collective"] << " " << row["type"] << " " << row["redop"] << " root "
                                          << row["root"] << " " << row["size_bytes"] << " " << dir;
          ++checked;
        }
    }
    EXPECT_GT(checked, expected * 4);  // most cells were checked, both directions
  }
}

TEST(CommLive, ItsOwnOutputOfEveryCollectiveReadsBackTableByTable) {
  // What `comm --collective all` prints, saved and read again with --from (and by analyze): one report per table,
  // each naming its collective, none pooled with another.
  auto dir = scratch_dir("commback");
  auto r = run_cli("comm --backend cpu -g 2 --collective all -b 8 -e 4K -f 8 -n 2 -w 0 -q --no-per-iteration");
  ASSERT_EQ(r.status, 0) << r.output.substr(0, 4000);
  std::ofstream(dir / "all.txt") << r.output;
  auto back = run_cli("comm --from " + (dir / "all.txt").string() + " --out " + (dir / "back.json").string());
  ASSERT_EQ(back.status, 0) << back.output.substr(0, 4000);
  // Every table reads as what it is: send_recv prints an op, as nccl-tests' sendrecv_perf does, or its columns would
  // fit none of the seven collectives.
  EXPECT_EQ(back.output.find("fit none of the seven"), std::string::npos) << back.output.substr(0, 4000);
  EXPECT_EQ(back.output.find("but the columns fit"), std::string::npos) << back.output.substr(0, 4000);
  const auto j = read_json(dir / "back.json");
  EXPECT_EQ(j["schema"], "scalescope.comm/1");
  ASSERT_EQ(j["reports"].size(), 7u);  // all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all, send_recv
  std::set<std::string> collectives;
  for (const auto& rep : j["reports"]) {
    collectives.insert(rep["sweep"]["collective"].get<std::string>());
    EXPECT_EQ(rep["sweep"]["rows"].size(), 4u) << rep["sweep"]["collective"];  // 8 B, 64 B, 512 B, 4 KiB
    EXPECT_EQ(rep["sweep"]["ranks"], 2) << rep["sweep"]["collective"];
  }
  EXPECT_EQ(collectives.size(), 7u);
  auto analyzed = run_cli("analyze " + (dir / "all.txt").string() + " --out " + (dir / "a.json").string());
  EXPECT_EQ(analyzed.status, 0) << analyzed.output.substr(0, 4000);
  EXPECT_NE(analyzed.output.find("nccl-tests: sendrecv_perf"), std::string::npos) << analyzed.output.substr(0, 4000);
  std::filesystem::remove_all(dir);
}

TEST(CommLive, BusBandwidthFollowsNcclTestsFactors) {
  auto dir = scratch_dir("commbw");
  auto out = dir / "c.json";
  auto r = run_cli("comm --backend cpu -g 3 --collective all -b 1M -e 1M -n 3 -w 1 -q --out " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  auto j = read_json(out);
  for (const auto& rep : j["reports"]) {
    const std::string coll = rep["sweep"]["collective"];
    const auto& t = rep["sweep"]["rows"][0]["out_of_place"];
    const double algbw = t["algbw_gbps"], busbw = t["busbw_gbps"];
    const double factor = coll == "all_reduce" ? 4.0 / 3 : (coll == "all_gather" || coll == "reduce_scatter" ||
                                                            coll == "all_to_all") ? 2.0 / 3 : 1.0;
    EXPECT_NEAR(busbw, algbw * factor, 1e-9 + 1e-9 * busbw) << coll;
    EXPECT_NEAR(algbw, rep["sweep"]["rows"][0]["size_bytes"].get<double>() / t["time_us"].get<double>() / 1e3,
                1e-6 * algbw) << coll;
    EXPECT_FALSE(t["median_us"].is_null()) << "per-iteration statistics";
    EXPECT_FALSE(t["rank_skew_us"].is_null());
  }
  std::filesystem::remove_all(dir);
}

TEST(CommLive, CorruptionIsCountedAndFailsTheRun) {
  auto dir = scratch_dir("commbad");
  auto out = dir / "c.json";
  auto r = run_cli("comm --backend cpu -g 2 -b 8 -e 64 -f 2 -q --no-per-iteration --out " + out.string(),
                   {{"SCALESCOPE_TEST_CORRUPT_RESULT", "1"}});
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("wrong element"), std::string::npos) << r.output;
  // The hook is named as the cause, not a broken link, GPU or library.
  EXPECT_NE(r.output.find("SCALESCOPE_TEST_CORRUPT_RESULT is set"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("broken link"), std::string::npos) << r.output;
  auto j = read_json(out);  // the measurement is kept
  EXPECT_EQ(j["reports"][0]["sweep"]["rows"][0]["out_of_place"]["wrong"].get<double>(), 2.0);  // one per rank
  std::filesystem::remove_all(dir);
}

TEST(CommLive, BadFlagsAreUsageErrors) {
  EXPECT_EQ(run_cli("comm --backend cpu -b 1X").status, 2);
  EXPECT_EQ(run_cli("comm --backend cpu -g 2 -r 5").status, 2);
  EXPECT_EQ(run_cli("comm --backend cpu -d float17").status, 2);
  EXPECT_EQ(run_cli("comm --backend cpu --collective allreduce2").status, 2);
  EXPECT_EQ(run_cli("comm --backend cpu -b 1M -e 8").status, 2);
  const auto file_as_op = run_cli("comm --backend cpu -o result.json");  // -o is nccl-tests' op, not --out
  EXPECT_EQ(file_as_op.status, 2);
  EXPECT_NE(file_as_op.output.find("--out FILE"), std::string::npos) << file_as_op.output;
  const auto zero = run_cli("comm --backend cpu -f 0");  // not CLI11's "not in range 0.000000 to 1797…" (309 digits)
  EXPECT_EQ(zero.status, 2);
  EXPECT_NE(zero.output.find("--stepfactor: 0 must be positive"), std::string::npos) << zero.output;
  EXPECT_LT(zero.output.size(), 200u) << zero.output;
  const auto many = run_cli("comm --backend gpu -g 64");  // exit 1 when no GPU at all, 2 when too few
  const bool none = many.output.find("no GPU is usable here") != std::string::npos ||
                    many.output.find("built without CUDA") != std::string::npos;  // a CPU-only build
  EXPECT_EQ(many.status, none ? 1 : 2) << many.output;
  // 4 CPU ranks × 2 buffers of 1 TiB cannot fit in host memory: refused before any rank starts.
  auto r = run_cli("comm --backend cpu -g 4 -b 1024G -e 1024G");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("GiB of buffers"), std::string::npos) << r.output;
}
