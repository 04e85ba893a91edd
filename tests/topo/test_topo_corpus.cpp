// Every saved `nvidia-smi topo -m` in ../shared/corpus/topo/ (real pastes from issues and docs) against link
// classes, device counts, affinity and warnings read off each file by hand. A new corpus file fails the test
// until its expectations are written here.

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>

#include "topo/analysis.h"
#include "topo/smi_topo_parser.h"
#include "topo_test_util.h"

namespace fs = std::filesystem;
using namespace scalescope::topo;
using scalescope::topo::testing::cpus;
using scalescope::topo::testing::joined;
using scalescope::topo::testing::link;
using scalescope::topo::testing::mentions;

namespace {

const fs::path kDir = fs::path(SCALESCOPE_SHARED_CORPUS_DIR) / "topo";

int count(const Topology& t, DeviceKind k) {
  int n = 0;
  for (const auto& d : t.devices) n += d.kind == k;
  return n;
}

std::vector<int> numa(const Topology& t, const std::string& label) {
  int i = t.find(label);
  return i >= 0 && t.devices[i].numa ? *t.devices[i].numa : std::vector<int>{};
}

bool all_gpu_pairs(const Topology& t, const std::string& token) {
  for (int a : t.gpus())
    for (int b : t.gpus())
      if (a != b && to_string(t.links[a][b]) != token) return false;
  return true;
}

bool has_finding(const TopoReport& r, const std::string& code, Severity s) {
  for (const auto& f : r.findings)
    if (f.code == code && f.severity == s) return true;
  return false;
}

using Check = std::function<void(const TopologyReading&, const TopoReport&)>;

const std::map<std::string, Check>& expectations() {
  static const std::map<std::string, Check> m = {
      {"autodl_2x2080ti_pix_with_p2p_matrix.txt",
       [](const TopologyReading& p, const TopoReport& r) {
         const auto& t = p.topology;  // the topo -p2p matrix after it must not be read
         EXPECT_EQ(count(t, DeviceKind::gpu), 2);
         EXPECT_EQ(count(t, DeviceKind::nic), 0);
         EXPECT_EQ(link(t, "GPU0", "GPU1"), "PIX");
         EXPECT_EQ(cpus(t, "GPU1"), "24-47,72-95");
         EXPECT_EQ(numa(t, "GPU0"), std::vector<int>{1});
         EXPECT_TRUE(t.has_gpu_numa_id);
         EXPECT_FALSE(t.devices[0].gpu_numa_id);  // N/A
         EXPECT_TRUE(p.warnings.empty()) << joined(p.warnings);
         EXPECT_TRUE(has_finding(r, "pcie-only", Severity::info));
       }},
      {"club-3090-1125_2gpu_NODE_markdown_indented_wrapped_legend_with_p2p.txt",
       [](const TopologyReading& p, const TopoReport& r) {
         const auto& t = p.topology;
         EXPECT_EQ(count(t, DeviceKind::gpu), 2);
         EXPECT_EQ(link(t, "GPU1", "GPU0"), "NODE");
         EXPECT_EQ(cpus(t, "GPU0"), "0-15");
         EXPECT_EQ(numa(t, "GPU1"), std::vector<int>{0});
         EXPECT_TRUE(p.warnings.empty()) << joined(p.warnings);
         EXPECT_TRUE(has_finding(r, "host-path", Severity::warning));
       }},
      {"club-3090-1229_2xRTX5090_PHB_tabs_legend.txt",
       [](const TopologyReading& p, const TopoReport& r) {
         const auto& t = p.topology;
         EXPECT_EQ(count(t, DeviceKind::gpu), 2);
         EXPECT_EQ(link(t, "GPU0", "GPU1"), "PHB");
         EXPECT_EQ(cpus(t, "GPU1"), "0-63");
         EXPECT_EQ(numa(t, "GPU1"), std::vector<int>{0});
         EXPECT_TRUE(p.warnings.empty()) << joined(p.warnings);
         EXPECT_TRUE(has_finding(r, "host-path", Severity::warning));
       }},
      {"club-3090-46_5gpu_mixed_5090_4090_SYS_PHB_NODE_2numa.txt",
       [](const TopologyReading& p, const TopoReport& r) {
         const auto& t = p.topology;
         EXPECT_EQ(count(t, DeviceKind::gpu), 5);
         EXPECT_EQ(link(t, "GPU0", "GPU3"), "SYS");
         EXPECT_EQ(link(t, "GPU1", "GPU2"), "PHB");
         EXPECT_EQ(link(t, "GPU2", "GPU4"), "NODE");
         EXPECT_EQ(link(t, "GPU4", "GPU3"), "PHB");
         EXPECT_EQ(cpus(t, "GPU0"), "8-15,24-31");
         EXPECT_EQ(cpus(t, "GPU4"), "0-7,16-23");
         EXPECT_EQ(numa(t, "GPU0"), std::vector<int>{1});
         EXPECT_TRUE(p.warnings.empty()) << joined(p.warnings);
         EXPECT_TRUE(has_finding(r, "host-path", Severity::critical));  // GPU0 alone on NUMA node 1
       }},
      {"dask-cuda-1358_slurm_2gpu_NV12_10NIC_nic_rows_header_off_by_one_truncated.txt",
       [](const TopologyReading& p, const TopoReport&) {
         const auto& t = p.topology;
         EXPECT_EQ(count(t, DeviceKind::gpu), 2);
         EXPECT_EQ(count(t, DeviceKind::nic), 10);
         EXPECT_EQ(link(t, "GPU0", "GPU1"), "NV12");
         EXPECT_EQ(link(t, "GPU1", "NIC1"), "PXB");
         EXPECT_EQ(link(t, "GPU0", "NIC9"), "SYS");
         EXPECT_EQ(link(t, "NIC0", "NIC1"), "PXB");
         EXPECT_EQ(link(t, "NIC3", "NIC2"), "PXB");  // NIC3's row stops after its first cell
         EXPECT_EQ(link(t, "NIC4", "NIC5"), "?");
         EXPECT_EQ(cpus(t, "GPU0"), "48-63,176-191");
         EXPECT_EQ(numa(t, "GPU1"), std::vector<int>{3});
         EXPECT_TRUE(mentions(p.warnings, "row NIC3 cut off after 1 of 12 cells")) << joined(p.warnings);
         EXPECT_TRUE(mentions(p.warnings, "no row for NIC4")) << joined(p.warnings);
       }},
      {"deepep-128_8xPCIe_all_SYS_10NIC_PIX_per_gpu_truncated.txt",
       [](const TopologyReading& p, const TopoReport& r) {
         const auto& t = p.topology;
         EXPECT_EQ(count(t, DeviceKind::gpu), 8);
         EXPECT_EQ(count(t, DeviceKind::nic), 10);
         EXPECT_EQ(link(t, "GPU0", "GPU7"), "SYS");
         EXPECT_EQ(link(t, "GPU6", "GPU7"), "?");  // GPU6's row is cut after 3 cells, GPU7 has none
         EXPECT_EQ(link(t, "GPU0", "NIC0"), "PIX");
         EXPECT_EQ(link(t, "GPU5", "NIC5"), "PIX");
         EXPECT_EQ(link(t, "GPU5", "NIC6"), "SYS");
         EXPECT_EQ(cpus(t, "GPU4"), "56-111,168-223");
         EXPECT_EQ(cpus(t, "GPU6"), "none");
         EXPECT_TRUE(mentions(p.warnings, "row GPU6 cut off after 3 of 21 cells")) << joined(p.warnings);
         EXPECT_TRUE(mentions(p.warnings, "no row for GPU7")) << joined(p.warnings);
         EXPECT_TRUE(has_finding(r, "host-path", Severity::critical));
       }},
      {"go-gpuallocator-17_8xRTX4090_all_SYS_tabs_2NIC.txt",
       [](const TopologyReading& p, const TopoReport& r) {
         const auto& t = p.topology;
         EXPECT_EQ(count(t, DeviceKind::gpu), 8);
         EXPECT_EQ(count(t, DeviceKind::nic), 2);
         EXPECT_TRUE(all_gpu_pairs(t, "SYS"));
         EXPECT_EQ(link(t, "GPU6", "NIC1"), "PHB");
         EXPECT_EQ(link(t, "NIC0", "NIC1"), "PIX");
         EXPECT_EQ(cpus(t, "GPU3"), "0-55,112-167");
         EXPECT_EQ(numa(t, "GPU7"), std::vector<int>{1});
         EXPECT_TRUE(p.warnings.empty()) << joined(p.warnings);
         EXPECT_TRUE(has_finding(r, "nic-numa", Severity::warning));  // only GPU6 has a NIC on its side
       }},
      {"mlengineering_2gpu_nv2_no_legend.txt",
       [](const TopologyReading& p, const TopoReport&) {
         const auto& t = p.topology;
         EXPECT_EQ(count(t, DeviceKind::gpu), 2);
         EXPECT_EQ(link(t, "GPU0", "GPU1"), "NV2");
         EXPECT_EQ(cpus(t, "GPU0"), "0-23");
         EXPECT_FALSE(t.devices[0].numa);  // N/A
         EXPECT_FALSE(t.has_gpu_numa_id);
         EXPECT_TRUE(p.warnings.empty()) << joined(p.warnings);
       }},
      {"mlengineering_8xA100_nv12_hand_respaced.txt",
       [](const TopologyReading& p, const TopoReport&) {
         const auto& t = p.topology;
         EXPECT_EQ(count(t, DeviceKind::gpu), 8);
         EXPECT_TRUE(all_gpu_pairs(t, "NV12"));
         EXPECT_EQ(cpus(t, "GPU4"), "24-47");
         EXPECT_EQ(numa(t, "GPU3"), std::vector<int>{0});
         EXPECT_TRUE(p.warnings.empty()) << joined(p.warnings);
       }},
      {"mlengineering_8xH100_nv18_cpu_numa_affinity.txt",
       [](const TopologyReading& p, const TopoReport& r) {
         const auto& t = p.topology;
         EXPECT_EQ(count(t, DeviceKind::gpu), 8);
         EXPECT_TRUE(all_gpu_pairs(t, "NV18"));
         EXPECT_EQ(cpus(t, "GPU7"), "52-103,156-207");
         EXPECT_EQ(numa(t, "GPU7"), std::vector<int>{1});
         EXPECT_TRUE(p.warnings.empty()) << joined(p.warnings);
         EXPECT_DOUBLE_EQ(r.bandwidth.gbps[0][1], 18 * 25.0);
       }},
      {"nccl-707_A100_NV12_18xmlx5_named_columns_old_header_truncated.txt",
       [](const TopologyReading& p, const TopoReport& r) {
         const auto& t = p.topology;
         EXPECT_EQ(count(t, DeviceKind::gpu), 8);
         EXPECT_EQ(count(t, DeviceKind::nic), 18);
         EXPECT_EQ(t.devices[t.find("mlx5_17")].name, "mlx5_17");
         EXPECT_EQ(link(t, "GPU0", "GPU7"), "NV12");
         EXPECT_EQ(link(t, "GPU0", "mlx5_0"), "NODE");
         EXPECT_EQ(link(t, "GPU1", "mlx5_4"), "PXB");
         EXPECT_EQ(link(t, "GPU2", "mlx5_0"), "PXB");
         EXPECT_EQ(link(t, "GPU3", "mlx5_17"), "SYS");
         EXPECT_EQ(link(t, "GPU4", "mlx5_7"), "SYS");
         EXPECT_EQ(link(t, "GPU4", "mlx5_8"), "?");  // cut at "N"
         EXPECT_EQ(cpus(t, "GPU3"), "0-47,96-143");
         EXPECT_FALSE(t.has_gpu_numa_id);
         EXPECT_TRUE(mentions(p.warnings, "row GPU4 cut off after 16 of 28 cells")) << joined(p.warnings);
         EXPECT_TRUE(mentions(p.warnings, "'N'")) << joined(p.warnings);
         // GPU4's known NICs are all SYS but ten are unread: no NIC/NUMA conclusion for it.
         for (const auto& f : r.findings) EXPECT_NE(f.code, "nic-numa") << f.evidence;
       }},
      {"nccl-933_8x_NV8_9NIC_numa_affinity_no_gpu_numa_id_truncated.txt",
       [](const TopologyReading& p, const TopoReport&) {
         const auto& t = p.topology;
         EXPECT_EQ(count(t, DeviceKind::gpu), 8);
         EXPECT_EQ(count(t, DeviceKind::nic), 9);
         EXPECT_TRUE(all_gpu_pairs(t, "NV8"));  // GPU7's cut row ends on a whole "NV8"
         EXPECT_EQ(link(t, "GPU0", "NIC2"), "PIX");
         EXPECT_EQ(link(t, "GPU0", "NIC1"), "SYS");
         EXPECT_EQ(link(t, "GPU3", "NIC8"), "PIX");
         EXPECT_EQ(link(t, "GPU4", "NIC1"), "PIX");
         EXPECT_EQ(link(t, "GPU6", "NIC8"), "SYS");
         EXPECT_EQ(cpus(t, "GPU4"), "48-95,144-191");
         EXPECT_EQ(cpus(t, "GPU7"), "none");
         EXPECT_TRUE(t.has_numa_affinity);
         EXPECT_FALSE(t.has_gpu_numa_id);
         EXPECT_TRUE(mentions(p.warnings, "row GPU7 cut off after 4 of 19 cells")) << joined(p.warnings);
       }},
      {"nccl-tests-78_DGX-2_16xV100_NV6_10xmlx5_cpu_affinity_only_truncated.txt",
       [](const TopologyReading& p, const TopoReport&) {
         const auto& t = p.topology;
         EXPECT_EQ(count(t, DeviceKind::gpu), 16);
         EXPECT_EQ(count(t, DeviceKind::nic), 10);
         EXPECT_EQ(link(t, "GPU0", "GPU15"), "NV6");
         EXPECT_EQ(link(t, "GPU4", "GPU15"), "NV6");
         EXPECT_EQ(link(t, "GPU5", "GPU6"), "?");
         EXPECT_EQ(link(t, "GPU0", "mlx5_0"), "PIX");
         EXPECT_EQ(link(t, "GPU2", "mlx5_1"), "PIX");
         EXPECT_EQ(link(t, "GPU4", "mlx5_2"), "PIX");
         EXPECT_EQ(link(t, "GPU4", "mlx5_9"), "SYS");
         EXPECT_TRUE(t.has_cpu_affinity);
         EXPECT_FALSE(t.has_numa_affinity);
         EXPECT_EQ(cpus(t, "GPU0"), "0-23,48-71");
         EXPECT_EQ(cpus(t, "GPU4"), "none");  // "0-23,4" at the end of the input is not trusted
         EXPECT_TRUE(mentions(p.warnings, "row GPU4 cut off after 26 of 27 cells")) << joined(p.warnings);
         EXPECT_TRUE(mentions(p.warnings, "no NUMA Affinity column")) << joined(p.warnings);
       }},
      {"sglang-11208_4xGB200_NV18_numa_affinity_list_gpu_numa_id_2_10_18_envdump_truncated.txt",
       [](const TopologyReading& p, const TopoReport& r) {
         const auto& t = p.topology;
         EXPECT_EQ(count(t, DeviceKind::gpu), 4);
         EXPECT_EQ(count(t, DeviceKind::nic), 6);
         EXPECT_EQ(t.devices[0].name, "NVIDIA GB200");  // from the dump's "GPU 0,1,2,3: NVIDIA GB200"
         EXPECT_TRUE(all_gpu_pairs(t, "NV18"));
         EXPECT_EQ(link(t, "GPU3", "NIC0"), "SYS");
         EXPECT_EQ(link(t, "GPU3", "NIC1"), "?");
         EXPECT_EQ(numa(t, "GPU0"), (std::vector<int>{0, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17}));
         EXPECT_EQ(cpus(t, "GPU2"), "72-143");
         EXPECT_EQ(t.devices[t.find("GPU1")].gpu_numa_id, 10);
         EXPECT_EQ(t.devices[t.find("GPU2")].gpu_numa_id, 18);
         EXPECT_FALSE(t.devices[t.find("GPU3")].gpu_numa_id);
         EXPECT_TRUE(mentions(p.warnings, "row GPU3 cut off after 5 of 13 cells")) << joined(p.warnings);
         EXPECT_DOUBLE_EQ(r.bandwidth.gbps[0][1], 18 * 50.0);  // GB200: NVLink 5
       }},
      {"thunderkittens-167_8xH100_NV18_gpu_numa_id_legend_truncated.txt",
       [](const TopologyReading& p, const TopoReport&) {
         const auto& t = p.topology;
         EXPECT_EQ(count(t, DeviceKind::gpu), 8);
         EXPECT_TRUE(all_gpu_pairs(t, "NV18"));
         EXPECT_EQ(cpus(t, "GPU5"), "48-95,144-191");
         EXPECT_TRUE(t.has_gpu_numa_id);
         EXPECT_TRUE(p.warnings.empty()) << joined(p.warnings);  // only the legend is cut
       }},
      {"vllm-31594_8xB200_NV18_13NIC_merged_NIC11NIC12_header_collectenv_truncated.txt",
       [](const TopologyReading& p, const TopoReport&) {
         const auto& t = p.topology;
         EXPECT_EQ(count(t, DeviceKind::gpu), 8);
         EXPECT_EQ(count(t, DeviceKind::nic), 13);  // NIC11NIC12 is two columns
         EXPECT_EQ(link(t, "GPU0", "GPU7"), "NV18");
         EXPECT_EQ(link(t, "GPU7", "GPU4"), "NV18");
         EXPECT_EQ(link(t, "GPU5", "GPU6"), "?");  // the text stops in GPU4's row
         EXPECT_EQ(link(t, "GPU0", "NIC11"), "PIX");
         EXPECT_EQ(link(t, "GPU0", "NIC12"), "NODE");
         EXPECT_EQ(link(t, "GPU1", "NIC10"), "PIX");
         EXPECT_EQ(link(t, "GPU3", "NIC8"), "PIX");
         EXPECT_EQ(link(t, "GPU4", "NIC7"), "PIX");
         EXPECT_EQ(link(t, "GPU4", "NIC12"), "SYS");
         EXPECT_EQ(cpus(t, "GPU0"), "0-15");
         EXPECT_EQ(cpus(t, "GPU4"), "none");
         EXPECT_TRUE(mentions(p.warnings, "row GPU4 cut off after 21 of 24 cells")) << joined(p.warnings);
       }},
  };
  return m;
}

}  // namespace

TEST(TopoCorpus, EveryFileMatchesItsHandCheckedExpectations) {
  if (!fs::is_directory(kDir)) GTEST_SKIP() << "no shared corpus at " << kDir << " (only in the project's own checkout)";
  int files = 0;
  for (const auto& entry : fs::directory_iterator(kDir)) {
    if (!entry.is_regular_file()) continue;
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    ++files;
    auto it = expectations().find(name);
    ASSERT_NE(it, expectations().end()) << "corpus file without expectations: read it and add them to this test";
    TopologyReading reading;
    ASSERT_NO_THROW(reading = parse_smi_topo_file(entry.path().string()));
    const TopoReport report = analyse(reading);
    it->second(reading, report);
  }
  EXPECT_EQ(files, static_cast<int>(expectations().size())) << "an expected corpus file is missing";
}
