// The NCCL probe's logs turned into facts and a summary (issue #31, item 1): what NCCL saw — its transports and the
// variables in force — names the cause, and the probe's own NCCL_DEBUG* variables are not taken for the user's.

#include <gtest/gtest.h>

#include <algorithm>

#include "diagnose/engine.h"
#include "runtime/nccl_probe.h"

namespace {

using namespace scalescope;

runtime::NcclProbe probe_of(const std::string& text) {
  runtime::NcclProbe p;
  p.world_size = 2;
  p.ran = true;
  p.logs.push_back(analyze::parse_nccl_log(text, "nccl-probe.host.100.log"));
  runtime::summarise_nccl_probe(p);
  return p;
}

std::vector<std::string> causes(const diagnose::Diagnosis& d) {
  std::vector<std::string> named;
  if (d.primary) named.push_back(d.primary->cause);
  for (const auto& c : d.contributing) named.push_back(c.cause);
  return named;
}

const char* kHeader =
    "box:100:100 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n"
    "box:100:100 [0] NCCL INFO NCCL_DEBUG set by environment to INFO\n"
    "box:100:100 [0] NCCL INFO NCCL_DEBUG_SUBSYS set by environment to INIT,ENV,GRAPH,P2P,SHM,NET\n";

TEST(NcclProbe, P2pTurnedOffByTheEnvironmentIsNamedFromWhatNcclSaw) {
  const auto p = probe_of(std::string(kHeader) +
                          "box:100:100 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1\n"
                          "box:100:120 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct\n"
                          "box:100:120 [0] NCCL INFO Channel 01 : 0[0] -> 1[1] via SHM/direct/direct\n");
  EXPECT_EQ(p.nccl_version.substr(0, 6), "2.28.9");
  ASSERT_EQ(p.settings.size(), 1u);  // the probe's own NCCL_DEBUG* are left out
  EXPECT_EQ(p.settings[0], "NCCL_P2P_DISABLE=1");
  ASSERT_EQ(p.transports.size(), 1u);
  EXPECT_NE(p.transports[0].find("SHM"), std::string::npos);
  EXPECT_NE(p.transports[0].find("2 channels"), std::string::npos);
  const auto named = causes(diagnose::diagnose(runtime::nccl_probe_facts(p)));
  EXPECT_NE(std::find(named.begin(), named.end(), "nccl-env-override"), named.end()) << ::testing::PrintToString(named);
}

TEST(NcclProbe, AHealthyNvlinkLogNamesNoConfigurationCause) {
  const auto p = probe_of(std::string(kHeader) +
                          "box:100:120 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n"
                          "box:100:120 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM\n");
  EXPECT_TRUE(p.settings.empty());
  const auto named = causes(diagnose::diagnose(runtime::nccl_probe_facts(p)));
  for (const char* id : {"nccl-env-override", "net-socket-fallback", "pcie-host-bridge-path"})
    EXPECT_EQ(std::find(named.begin(), named.end(), id), named.end()) << id << ": " << ::testing::PrintToString(named);
}

TEST(NcclProbe, NothingToReadIsNotAFinding) {
  runtime::NcclProbe p;
  p.world_size = 1;
  p.error = "NCCL wrote no log";
  runtime::summarise_nccl_probe(p);
  EXPECT_TRUE(runtime::nccl_probe_facts(p).empty());
}

}  // namespace

namespace {

TEST(NcclProbe, AnAbFasterWithoutP2pNamesTheBlockedP2pPathAndNoSettingCause) {
  auto p = probe_of(std::string(kHeader) + "box:100:120 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n");
  p.busbw_gbps = 3.1;             // P2P over PCIe through a redirecting switch
  p.expected_pair_gbps = 25.0;
  p.p2p_off_busbw_gbps = 9.4;     // through host memory
  const auto named = causes(diagnose::diagnose(runtime::nccl_probe_facts(p)));
  EXPECT_NE(std::find(named.begin(), named.end(), "p2p-blocked-acs-iommu"), named.end()) << ::testing::PrintToString(named);
  EXPECT_EQ(std::find(named.begin(), named.end(), "nccl-env-override"), named.end()) << ::testing::PrintToString(named);
}

TEST(NcclProbe, AnAbWhereP2pIsFasterBlamesNeitherP2pNorASetting) {
  auto p = probe_of(std::string(kHeader) + "box:100:120 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n");
  p.busbw_gbps = 9.0;
  p.expected_pair_gbps = 25.0;
  p.p2p_off_busbw_gbps = 6.0;
  const auto named = causes(diagnose::diagnose(runtime::nccl_probe_facts(p)));
  for (const char* id : {"p2p-blocked-acs-iommu", "nccl-env-override"})
    EXPECT_EQ(std::find(named.begin(), named.end(), id), named.end()) << id << ": " << ::testing::PrintToString(named);
}

}  // namespace
