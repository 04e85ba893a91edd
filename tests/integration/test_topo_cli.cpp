// `scalescope topo` as a user runs it: offline from a saved table, live, JSON output, comparison, bad input.

#include <gtest/gtest.h>

#include "cli_runner.h"

using scalescope::testing::read_json;
using scalescope::testing::run_cli;
using scalescope::testing::scratch_dir;
namespace fs = std::filesystem;

namespace {

const char* kTable =
    "\tGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tNV4\tSYS\t0-7\t0\t\tN/A\n"
    "GPU1\tNV4\t X \tSYS\t0-7\t0\t\tN/A\n"
    "GPU2\tSYS\tSYS\t X \t8-15\t1\t\tN/A\n";

void expect_mentions(const std::string& output, const std::string& what) {
  EXPECT_NE(output.find(what), std::string::npos) << "expected '" << what << "' in:\n" << output;
}

fs::path write(const fs::path& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir / name, std::ios::binary) << text;
  return dir / name;
}

}  // namespace

TEST(TopoCli, FromFilePrintsMatrixBandwidthAndFindings) {
  auto dir = scratch_dir("topo_from");
  auto table = write(dir, "topo.txt", kTable);
  auto r = run_cli("topo --from " + table.string() + " --out " + (dir / "topo.json").string());
  EXPECT_EQ(r.status, 0) << r.output;
  expect_mentions(r.output, "NV4");
  expect_mentions(r.output, "100.0");  // 4 links × 25 GB/s
  expect_mentions(r.output, "[critical] 2 GPU pairs with no NVLink cross the CPU interconnect");
  expect_mentions(r.output, "GPU2 → CPUs 8-15 (NUMA 1)");
  auto j = read_json(dir / "topo.json");
  EXPECT_EQ(j["schema"], "scalescope.topo/1");
  EXPECT_EQ(j["topology"]["matrix"][0][1], "NV4");
  EXPECT_EQ(j["topology"]["devices"].size(), 3u);
  EXPECT_DOUBLE_EQ(j["expected_gbps"][0][1].get<double>(), 100.0);
  EXPECT_TRUE(j["expected_gbps"][0][0].is_null()) << "self has no figure, not 0 GB/s";
  EXPECT_EQ(j["findings"][0]["severity"], "critical");
  fs::remove_all(dir);
}

TEST(TopoCli, BadOrForeignFilesFailWithAClearMessage) {
  auto r = run_cli("topo --from /nonexistent/topo.txt");
  EXPECT_EQ(r.status, 1);
  expect_mentions(r.output, "cannot read '/nonexistent/topo.txt'");
  auto dir = scratch_dir("topo_foreign");
  auto foreign = write(dir, "notes.txt", "this is a shopping list\neggs\nmilk\n");
  r = run_cli("topo --from " + foreign.string() + " --out " + (dir / "x.json").string());
  EXPECT_EQ(r.status, 1);
  expect_mentions(r.output, "no `nvidia-smi topo -m` GPU matrix found in file notes.txt");
  expect_mentions(r.output, "what to do");
  EXPECT_FALSE(fs::exists(dir / "x.json"));
  fs::remove_all(dir);
}

TEST(TopoCli, CompareSaysWhetherLinkClassesMatch) {
  auto dir = scratch_dir("topo_compare");
  auto a = write(dir, "a.txt", kTable);
  std::string other = kTable;
  other.replace(other.find("GPU1\tNV4"), 8, "GPU1\tNV2");
  other.replace(other.find("GPU0\t X \tNV4"), 12, "GPU0\t X \tNV2");
  auto b = write(dir, "b.txt", other);
  auto r = run_cli("topo --from " + a.string() + " --compare " + a.string());
  EXPECT_EQ(r.status, 0) << r.output;
  expect_mentions(r.output, "all 3 pairs match");
  r = run_cli("topo --from " + a.string() + " --compare " + b.string());
  EXPECT_EQ(r.status, 1) << r.output;
  expect_mentions(r.output, "1 difference over 3 pairs");
  fs::remove_all(dir);
}

TEST(TopoCli, LiveAlwaysAnswers) {
  // With GPUs it shows them; without (CI) it says so. Either way it is a valid answer: exit 0.
  auto dir = scratch_dir("topo_live");
  auto r = run_cli("topo --out " + (dir / "live.json").string());
  EXPECT_EQ(r.status, 0) << r.output;
  expect_mentions(r.output, "scalescope topo: live");
  expect_mentions(r.output, "hwloc");
  auto j = read_json(dir / "live.json");
  EXPECT_EQ(j["topology"]["source"], "live");
  EXPECT_TRUE(j["topology"]["live"]["numa_nodes"].size() >= 1u);
  if (j["topology"]["live"]["cuda_gpu_count"].get<int>() == 0) expect_mentions(r.output, "no GPU is visible");
  fs::remove_all(dir);
}

TEST(TopoCli, DoctorShowsTheTopologyFirst) {
  auto dir = scratch_dir("topo_doctor");
  auto r = run_cli("doctor --backend cpu --world-sizes 1 --model mlp-1m --batch 4 --warmup-rounds 0 --rounds 1 "
                   "--steps-per-round 2 -q --out " + (dir / "d.json").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.rfind("topology: ", 0), 0u) << r.output;  // the very first line
  auto j = read_json(dir / "d.json");
  EXPECT_EQ(j["schema"], "scalescope.doctor/1");
  EXPECT_EQ(j["topology"]["schema"], "scalescope.topo/1");
  EXPECT_EQ(j["topology"]["topology"]["source"], "live");
  fs::remove_all(dir);
}
