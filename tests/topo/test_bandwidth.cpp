// The expected-bandwidth model against figures computed by hand from the cited rates.

#include <gtest/gtest.h>

#include "topo/bandwidth.h"

using namespace scalescope::topo;

namespace {

// n GPUs, every pair `link`, with the given name.
Topology uniform(int n, Link link, const std::string& name = "") {
  Topology t;
  for (int i = 0; i < n; ++i) {
    Device d;
    d.index = i;
    d.label = "GPU" + std::to_string(i);
    d.name = name;
    t.devices.push_back(d);
  }
  t.links.assign(n, std::vector<Link>(n, link));
  for (int i = 0; i < n; ++i) t.links[i][i] = {LinkClass::self, 0};
  return t;
}

}  // namespace

TEST(Bandwidth, PcieLaneRatesFollowTheSpecifications) {
  EXPECT_DOUBLE_EQ(pcie_lane_gbps(1), 0.25);                  // 2.5 GT/s × 8/10 / 8 bits
  EXPECT_DOUBLE_EQ(pcie_lane_gbps(3), 8.0 * 128 / 130 / 8);   // 0.9846
  EXPECT_NEAR(pcie_link_gbps(4, 16), 31.508, 1e-3);           // 16 GT/s × 16 lanes × 128/130 / 8
  EXPECT_NEAR(pcie_link_gbps(5, 16), 63.015, 1e-3);
  EXPECT_NEAR(pcie_link_gbps(4, 4), 7.877, 1e-3);             // the x4 slot of the issue
  EXPECT_DOUBLE_EQ(pcie_lane_gbps(0), 0);
  EXPECT_DOUBLE_EQ(pcie_lane_gbps(7), 0);
}

TEST(Bandwidth, NvlinkPerLinkRatesFromDatasheetTotals) {
  EXPECT_DOUBLE_EQ(nvlink_link_gbps(1), 20);   // P100: 160 GB/s / 4 links / 2 directions
  EXPECT_DOUBLE_EQ(nvlink_link_gbps(2), 25);   // V100: 300 / 6 / 2
  EXPECT_DOUBLE_EQ(nvlink_link_gbps(3), 25);   // A100: 600 / 12 / 2
  EXPECT_DOUBLE_EQ(nvlink_link_gbps(4), 25);   // H100: 900 / 18 / 2
  EXPECT_DOUBLE_EQ(nvlink_link_gbps(5), 50);   // B200: 1800 / 18 / 2
}

TEST(Bandwidth, NvlinkPairsAreLinksTimesRate) {
  auto t = uniform(2, {LinkClass::nvlink, 12}, "NVIDIA A100-SXM4-80GB");
  EXPECT_DOUBLE_EQ(expected_bandwidth(t).gbps[0][1], 300.0);
  t = uniform(2, {LinkClass::nvlink, 4}, "NVIDIA GeForce RTX 3090");  // 4-link bridge, 112.5 GB/s both ways
  EXPECT_DOUBLE_EQ(expected_bandwidth(t).gbps[1][0], 56.25);
  t = uniform(2, {LinkClass::nvlink, 18});  // no name: 25 GB/s per link assumed and said so
  auto m = expected_bandwidth(t);
  EXPECT_DOUBLE_EQ(m.gbps[0][1], 450.0);
  ASSERT_FALSE(m.assumptions.empty());
  EXPECT_NE(m.assumptions[0].find("assumed 25 GB/s"), std::string::npos) << m.assumptions[0];
}

TEST(Bandwidth, PciePathsApplyTheirFactors) {
  const double gen4 = 16.0 * 16 * 128 / 130 / 8;
  EXPECT_DOUBLE_EQ(expected_bandwidth(uniform(2, {LinkClass::pix, 0})).gbps[0][1], gen4);
  EXPECT_DOUBLE_EQ(expected_bandwidth(uniform(2, {LinkClass::phb, 0})).gbps[0][1], gen4 * 5 / 6);
  EXPECT_DOUBLE_EQ(expected_bandwidth(uniform(2, {LinkClass::sys, 0})).gbps[0][1], gen4 / 2);
  EXPECT_DOUBLE_EQ(expected_bandwidth(uniform(2, {LinkClass::unknown, 0})).gbps[0][1], 0);
  // The name implies Gen5; live data (Gen5 max, x8 now) overrides names, and the slower GPU sets the pair.
  auto t = uniform(2, {LinkClass::pxb, 0}, "NVIDIA H100 PCIe");
  EXPECT_NEAR(expected_bandwidth(t).gbps[0][1], 63.015, 1e-3);
  t.devices[1].pcie = {.current_gen = 1, .max_gen = 5, .gpu_max_gen = 5, .current_width = 8, .max_width = 16};
  auto m = expected_bandwidth(t);
  EXPECT_NEAR(m.gbps[0][1], 32.0 * 8 * 128 / 130 / 8, 1e-9);
  EXPECT_FALSE(m.basis[1].pcie_assumed);
  EXPECT_TRUE(m.basis[0].pcie_assumed);
}

TEST(Bandwidth, GenerationsFromNamesAndComputeCapability) {
  EXPECT_EQ(pcie_gen_from_name("NVIDIA H200"), 5);
  EXPECT_EQ(pcie_gen_from_name("NVIDIA GeForce RTX 4090"), 4);
  EXPECT_EQ(pcie_gen_from_name("Tesla V100-SXM2-32GB"), 3);
  EXPECT_EQ(pcie_gen_from_name("Mystery GPU"), 0);
  EXPECT_EQ(nvlink_gen_for(9, 0, ""), 4);
  EXPECT_EQ(nvlink_gen_for(10, 0, ""), 5);
  EXPECT_EQ(nvlink_gen_for(12, 0, "NVIDIA GeForce RTX 5090"), 0);  // consumer Blackwell: no NVLink
  EXPECT_EQ(nvlink_gen_for(0, 0, "NVIDIA B200"), 5);
}
