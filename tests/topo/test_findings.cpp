// Findings rules on hand-built topologies: each rule fires on its evidence, stays quiet without it.

#include <gtest/gtest.h>

#include "topo/analysis.h"
#include "topo/findings.h"

using namespace scalescope::topo;

namespace {

Topology gpus(int n, Link link) {
  Topology t;
  for (int i = 0; i < n; ++i) {
    Device d;
    d.index = i;
    d.label = "GPU" + std::to_string(i);
    t.devices.push_back(d);
  }
  t.links.assign(n, std::vector<Link>(n, link));
  for (int i = 0; i < n; ++i) t.links[i][i] = {LinkClass::self, 0};
  return t;
}

void add_nic(Topology& t, const std::vector<Link>& to_gpus) {
  Device d;
  d.kind = DeviceKind::nic;
  d.label = "NIC" + std::to_string(t.nics().size());
  t.devices.push_back(d);
  const std::size_t n = t.devices.size();
  for (auto& row : t.links) row.resize(n);
  t.links.emplace_back(n);
  for (std::size_t g = 0; g < to_gpus.size(); ++g) t.links[n - 1][g] = t.links[g][n - 1] = to_gpus[g];
  t.links[n - 1][n - 1] = {LinkClass::self, 0};
}

std::vector<Finding> of(const std::vector<Finding>& all, const std::string& code) {
  std::vector<Finding> out;
  for (const auto& f : all)
    if (f.code == code) out.push_back(f);
  return out;
}

std::vector<Finding> findings(const Topology& t) { return find_issues(t, expected_bandwidth(t)); }

}  // namespace

TEST(Findings, HostPathsBySeverityWithPairsAndBandwidth) {
  auto t = gpus(4, {LinkClass::nvlink, 4});
  t.links[0][2] = t.links[2][0] = {LinkClass::phb, 0};
  t.links[1][3] = t.links[3][1] = {LinkClass::sys, 0};
  auto f = of(findings(t), "host-path");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].severity, Severity::critical);  // SYS first
  EXPECT_NE(f[0].evidence.find("GPU1-GPU3"), std::string::npos) << f[0].evidence;
  EXPECT_NE(f[0].evidence.find("15.8 GB/s"), std::string::npos) << f[0].evidence;  // Gen4 x16 / 2, assumed
  EXPECT_EQ(f[1].severity, Severity::warning);
  EXPECT_NE(f[1].evidence.find("GPU0-GPU2"), std::string::npos);
  EXPECT_NE(f[1].evidence.find("4 of 6 pairs have NVLink"), std::string::npos) << f[1].evidence;
  EXPECT_TRUE(of(findings(gpus(4, {LinkClass::nvlink, 18})), "host-path").empty());
}

TEST(Findings, PcieLinksBelowTheirMaximum) {
  auto t = gpus(2, {LinkClass::nvlink, 2});
  t.devices[0].pcie = {.current_gen = 4, .max_gen = 4, .gpu_max_gen = 4, .current_width = 16, .max_width = 16};
  EXPECT_TRUE(of(findings(t), "pcie-downtrained").empty());
  EXPECT_TRUE(of(findings(t), "pcie-gen-low").empty());
  t.devices[1].pcie = {.current_gen = 4, .max_gen = 4, .gpu_max_gen = 4, .current_width = 4, .max_width = 4};  // x4 slot
  auto f = of(findings(t), "pcie-downtrained");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].evidence.find("GPU1 x4"), std::string::npos) << f[0].evidence;
  t.devices[1].pcie = {.current_gen = 3, .max_gen = 4, .gpu_max_gen = 5, .current_width = 8, .max_width = 16};
  f = of(findings(t), "pcie-downtrained");
  ASSERT_EQ(f.size(), 2u);  // x8 of x16, and Gen4 slot for a Gen5 GPU
  EXPECT_NE(f[0].evidence.find("GPU1 x8 of x16"), std::string::npos) << f[0].evidence;
  EXPECT_NE(f[1].evidence.find("GPU1 Gen4 (the GPU supports Gen5)"), std::string::npos) << f[1].evidence;
  auto idle = of(findings(t), "pcie-gen-low");
  ASSERT_EQ(idle.size(), 1u);
  EXPECT_EQ(idle[0].severity, Severity::info);  // idle GPUs lower the generation
}

TEST(Findings, NvlinksDown) {
  auto t = gpus(2, {LinkClass::nvlink, 3});
  for (int l = 0; l < 4; ++l) {
    NvLinkLane lane;
    lane.link = l;
    lane.active = l != 2;
    t.devices[0].nvlinks.push_back(lane);
  }
  auto f = of(findings(t), "nvlink-down");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::warning);
  EXPECT_NE(f[0].evidence.find("GPU0: link 2 inactive (3 of 4 active)"), std::string::npos) << f[0].evidence;
  t.devices[0].nvlinks[2].active = true;
  EXPECT_TRUE(of(findings(t), "nvlink-down").empty());
}

TEST(Findings, P2pUnsupportedAndHiddenGpus) {
  auto t = gpus(3, {LinkClass::pix, 0});
  t.live = LiveFacts{};
  t.live->nvml_gpu_count = 3;
  t.live->cuda_gpu_count = 3;
  t.live->p2p_devices = {0, 1, 2};
  t.live->p2p = {{true, true, false}, {true, true, true}, {false, true, true}};
  auto f = findings(t);
  ASSERT_EQ(of(f, "p2p-unsupported").size(), 1u);
  EXPECT_NE(of(f, "p2p-unsupported")[0].evidence.find("GPU0-GPU2 (PIX)"), std::string::npos);
  EXPECT_TRUE(of(f, "gpus-hidden").empty());

  t.live->cuda_gpu_count = 2;
  t.live->cuda_visible_devices_set = true;
  t.live->cuda_visible_devices = "0,1";
  auto hidden = of(findings(t), "gpus-hidden");
  ASSERT_EQ(hidden.size(), 1u);
  EXPECT_EQ(hidden[0].severity, Severity::warning);
  EXPECT_NE(hidden[0].evidence.find("'0,1'"), std::string::npos) << hidden[0].evidence;
  t.live->cuda_gpu_count = 0;
  EXPECT_EQ(of(findings(t), "gpus-hidden")[0].severity, Severity::critical);
  t.live->cuda_built = false;  // a CPU-only build sees no GPU by construction: nothing to judge
  EXPECT_TRUE(of(findings(t), "gpus-hidden").empty());
}

TEST(Findings, NearestNicOnAnotherNumaNode) {
  auto t = gpus(2, {LinkClass::sys, 0});
  add_nic(t, {{LinkClass::pix, 0}, {LinkClass::sys, 0}});
  auto f = of(findings(t), "nic-numa");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].evidence.find("GPU1 → nearest NIC NIC0 (SYS)"), std::string::npos) << f[0].evidence;
  EXPECT_EQ(f[0].evidence.find("GPU0"), std::string::npos);
  add_nic(t, {{LinkClass::sys, 0}, {LinkClass::node, 0}});  // a NIC on GPU1's node
  EXPECT_TRUE(of(findings(t), "nic-numa").empty());
  // Live NUMA lists decide even when the class is not SYS.
  t.devices[0].numa = std::vector<int>{0};
  t.devices[2].numa = std::vector<int>{1};
  f = of(findings(t), "nic-numa");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].evidence.find("GPU0"), std::string::npos);
}

TEST(Findings, CpuBindingSplitsEachAffinityRange) {
  auto t = gpus(4, {LinkClass::nvlink, 18});
  for (int g = 0; g < 4; ++g) t.devices[g].cpu_affinity = *CpuSet::parse(g < 2 ? "0-47,96-143" : "48-95,144-191");
  t.devices[3].cpu_affinity = *CpuSet::parse("48-95,144-191");
  auto cpus = recommended_cpus(t);
  ASSERT_EQ(cpus.size(), 4u);
  EXPECT_EQ(cpus[0].second.to_string(), "0-23,96-119");
  EXPECT_EQ(cpus[1].second.to_string(), "24-47,120-143");
  EXPECT_EQ(cpus[3].second.to_string(), "72-95,168-191");
  // Three GPUs on 0-7: 3, 3, 2 CPUs; a range too small to split falls back to the whole list.
  auto u = gpus(3, {LinkClass::pix, 0});
  for (auto& d : u.devices) d.cpu_affinity = *CpuSet::parse("0-7");
  EXPECT_EQ(recommended_cpus(u)[2].second.to_string(), "6-7");
  for (auto& d : u.devices) d.cpu_affinity = *CpuSet::parse("0-1,4-9");
  EXPECT_EQ(recommended_cpus(u)[0].second.to_string(), "0-1,4");
  EXPECT_EQ(recommended_cpus(u)[2].second.to_string(), "8-9");
  EXPECT_EQ(of(findings(t), "cpu-binding").size(), 1u);
  EXPECT_TRUE(of(findings(gpus(2, {LinkClass::pix, 0})), "cpu-binding").empty());  // no affinity known
}

TEST(Findings, CompareLinkClassesFindsDifferences) {
  auto a = gpus(3, {LinkClass::nvlink, 18});
  auto b = a;
  int compared = 0;
  EXPECT_TRUE(compare_link_classes(a, b, &compared).empty());
  EXPECT_EQ(compared, 3);
  b.links[0][2] = b.links[2][0] = {LinkClass::nvlink, 16};
  auto m = compare_link_classes(a, b, &compared);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].a + "-" + m[0].b + " " + m[0].first + "/" + m[0].second, "GPU0-GPU2 NV18/NV16");
  b = gpus(2, {LinkClass::nvlink, 18});
  m = compare_link_classes(a, b, &compared);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].a + " " + m[0].second, "GPU2 absent");
}
