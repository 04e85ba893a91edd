// The system-tools reader (readers/system/system_tools.h): the project's own fixtures of every tool and format it reads —
// written in the tools' real output formats as found in public threads and repositories (see the comment of each
// fixture) — with every fact field checked; device association; detection; damaged input; then the files of
// ../shared/corpus (the nccl304 lspci line, the two topo files with a -p2p matrix, and no spurious fact from any
// other file).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "readers/system/system_tools.h"

using namespace scalescope;
using scalescope::analyze::detect_system_tools;
using scalescope::analyze::read_system_tools;
namespace fs = std::filesystem;

namespace {

diagnose::Reading read(std::string_view text) { return read_system_tools(text, "t.txt"); }

template <class T>
std::vector<T> all(const diagnose::Reading& r) {
  std::vector<T> out;
  for (const auto& s : r.facts.of<T>()) out.push_back(s.fact);
  return out;
}

template <class T>
std::vector<diagnose::Provenance> where(const diagnose::Reading& r) {
  std::vector<diagnose::Provenance> out;
  for (const auto& s : r.facts.of<T>()) out.push_back(s.where);
  return out;
}

std::string dump(const diagnose::Reading& r) {
  nlohmann::json j = r.facts;
  j["notes"] = r.notes;
  return j.dump(1);
}

std::string join(std::initializer_list<std::string_view> lines) {
  std::string s;
  for (auto l : lines) {
    s += l;
    s += '\n';
  }
  return s;
}

using Tools = std::vector<std::string>;

}  // namespace

// ───────────────────────────── lspci ─────────────────────────────

// lspci -vvv as pciutils 3.7+ prints it: a PLX PEX 8747 switch (upstream port with ACS off, a downstream port with
// ACS redirection on, as in NVIDIA/nccl#304) and a V100 under it whose link trained down. LnkSta's "(ok)" /
// "(downgraded)" markers and the LnkCap2/LnkCtl2/LnkSta2 lines are as newer pciutils print them.
const std::string kLspciVvv = join({
    "03:00.0 PCI bridge: PLX Technology, Inc. PEX 8747 48-Lane, 5-Lane, 5-Port PCI Express Gen 3 (8.0 GT/s) Switch "
    "(rev ca) (prog-if 00 [Normal decode])",
    "\tControl: I/O+ Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- DisINTx-",
    "\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- INTx-",
    "\tLatency: 0, Cache Line Size: 32 bytes",
    "\tBus: primary=03, secondary=04, subordinate=0a, sec-latency=0",
    "\tCapabilities: [68] Express (v2) Upstream Port, MSI 00",
    "\t\tDevCap:\tMaxPayload 2048 bytes, PhantFunc 0",
    "\t\t\tExtTag- RBE+",
    "\t\tLnkCap:\tPort #0, Speed 8GT/s, Width x16, ASPM L1, Exit Latency L1 <4us",
    "\t\t\tClockPM- Surprise- LLActRep- BwNot- ASPMOptComp+",
    "\t\tLnkCtl:\tASPM Disabled; Disabled- CommClk+",
    "\t\t\tExtSynch- ClockPM- AutWidDis- BWInt- AutBWInt-",
    "\t\tLnkSta:\tSpeed 8GT/s (ok), Width x16 (ok)",
    "\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-",
    "\t\tLnkCap2: Supported Link Speeds: 2.5-8GT/s, Crosslink- Retimer- 2Retimers- DRS-",
    "\t\tLnkCtl2: Target Link Speed: 8GT/s, EnterCompliance- SpeedDis-",
    "\t\tLnkSta2: Current De-emphasis Level: -6dB, EqualizationComplete+ EqualizationPhase1+",
    "\tCapabilities: [f24 v1] Access Control Services",
    "\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl+ DirectTrans+",
    "\t\tACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-",
    "\tKernel driver in use: pcieport",
    "",
    "04:08.0 PCI bridge: PLX Technology, Inc. PEX 8747 48-Lane, 5-Lane, 5-Port PCI Express Gen 3 (8.0 GT/s) Switch "
    "(rev ca) (prog-if 00 [Normal decode])",
    "\tCapabilities: [68] Express (v2) Downstream Port (Slot+), MSI 00",
    "\t\tLnkCap:\tPort #8, Speed 8GT/s, Width x16, ASPM L1, Exit Latency L1 <4us",
    "\t\tLnkSta:\tSpeed 8GT/s (ok), Width x16 (ok)",
    "\tCapabilities: [f24 v1] Access Control Services",
    "\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl+ DirectTrans+",
    "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-",
    "\tKernel driver in use: pcieport",
    "",
    "05:00.0 3D controller: NVIDIA Corporation GV100GL [Tesla V100 PCIe 32GB] (rev a1)",
    "\tSubsystem: NVIDIA Corporation GV100GL [Tesla V100 PCIe 32GB]",
    "\tPhysical Slot: 2",
    "\tCapabilities: [78] Express (v2) Endpoint, MSI 00",
    "\t\tLnkCap:\tPort #0, Speed 8GT/s, Width x16, ASPM not supported",
    "\t\t\tClockPM+ Surprise- LLActRep- BwNot- ASPMOptComp+",
    "\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x8 (downgraded)",
    "\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-",
    "\tKernel driver in use: nvidia",
    "\tKernel modules: nvidiafb, nouveau, nvidia_drm, nvidia",
});

TEST(SystemToolsLspci, VvvDevicesCarryTheirLinkAndAcsLines) {
  const auto r = read(kLspciVvv);
  SCOPED_TRACE(dump(r));
  EXPECT_TRUE(r.notes.empty());
  const std::string plx = "PLX Technology, Inc. PEX 8747 48-Lane, 5-Lane, 5-Port PCI Express Gen 3 (8.0 GT/s) Switch";

  const auto links = all<diagnose::PcieLinkState>(r);
  ASSERT_EQ(links.size(), 3u);
  EXPECT_EQ(links[0].device, "03:00.0");
  EXPECT_EQ(links[0].device_name, plx);
  EXPECT_EQ(links[0].device_max_gen, 3);
  EXPECT_EQ(links[0].device_max_width, 16);
  EXPECT_EQ(links[0].current_gen, 3);
  EXPECT_EQ(links[0].current_width, 16);
  EXPECT_EQ(links[0].downgraded, false);
  EXPECT_FALSE(links[0].max_gen);      // lspci has no host+device maximum
  EXPECT_FALSE(links[0].max_width);
  EXPECT_FALSE(links[0].under_load);   // unknown from lspci

  EXPECT_EQ(links[1].device, "04:08.0");
  EXPECT_EQ(links[1].downgraded, false);

  EXPECT_EQ(links[2].device, "05:00.0");
  EXPECT_EQ(links[2].device_name, "NVIDIA Corporation GV100GL [Tesla V100 PCIe 32GB]");
  EXPECT_EQ(links[2].device_max_gen, 3);
  EXPECT_EQ(links[2].device_max_width, 16);
  EXPECT_EQ(links[2].current_gen, 1);
  EXPECT_EQ(links[2].current_width, 8);
  EXPECT_EQ(links[2].downgraded, true);
  const auto link_lines = where<diagnose::PcieLinkState>(r);
  EXPECT_EQ(link_lines[2].line, 38u);  // the LnkSta line
  EXPECT_EQ(link_lines[2].excerpt, "LnkSta:\tSpeed 2.5GT/s (downgraded), Width x8 (downgraded)");
  EXPECT_EQ(link_lines[2].source, "t.txt");

  const auto acs = all<diagnose::AcsControl>(r);
  ASSERT_EQ(acs.size(), 2u);  // ACSCap lines are capabilities, not the control register
  EXPECT_EQ(acs[0].device, "03:00.0");
  EXPECT_EQ(acs[0].device_name, plx);
  EXPECT_FALSE(acs[0].src_valid || acs[0].trans_blk || acs[0].req_redir || acs[0].cmplt_redir ||
               acs[0].upstream_fwd || acs[0].egress_ctrl || acs[0].direct_trans);
  EXPECT_EQ(acs[1].device, "04:08.0");
  EXPECT_TRUE(acs[1].src_valid);
  EXPECT_FALSE(acs[1].trans_blk);
  EXPECT_TRUE(acs[1].req_redir);
  EXPECT_TRUE(acs[1].cmplt_redir);
  EXPECT_TRUE(acs[1].upstream_fwd);
  EXPECT_FALSE(acs[1].egress_ctrl);
  EXPECT_FALSE(acs[1].direct_trans);
  EXPECT_EQ(where<diagnose::AcsControl>(r)[1].line, 29u);

  const auto gpus = all<diagnose::GpuSeen>(r);
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].name, "NVIDIA Corporation GV100GL [Tesla V100 PCIe 32GB]");
  EXPECT_EQ(gpus[0].bus_id, "05:00.0");
  EXPECT_FALSE(gpus[0].index);
  EXPECT_EQ(r.facts.size(), 6u);
  EXPECT_EQ(detect_system_tools(kLspciVvv), Tools{"lspci"});
}

// Older pciutils (3.2–3.5) print LnkSta without "(ok)" / "(downgraded)" and with the status bits on the same line.
TEST(SystemToolsLspci, OlderLnkStaWithoutMarkersLeavesDowngradedUnknown) {
  const std::string text = join({
      "82:00.0 3D controller: NVIDIA Corporation GK210GL [Tesla K80] (rev a1)",
      "\tCapabilities: [78] Express (v2) Endpoint, MSI 00",
      "\t\tLnkCap:\tPort #8, Speed 8GT/s, Width x16, ASPM not supported, Exit Latency L0s <1us, L1 <4us",
      "\t\tLnkSta:\tSpeed 5GT/s, Width x16, TrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-",
  });
  const auto r = read(text);
  SCOPED_TRACE(dump(r));
  const auto links = all<diagnose::PcieLinkState>(r);
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].device, "82:00.0");
  EXPECT_EQ(links[0].current_gen, 2);
  EXPECT_EQ(links[0].current_width, 16);
  EXPECT_EQ(links[0].device_max_gen, 3);
  EXPECT_FALSE(links[0].downgraded.has_value());
}

// `lspci -vvv | grep -e '^[0-9a-f]' -e LnkCap: -e LnkSta:` with bare addresses (as in a MI50 forum post), and a
// grep of one device's Lnk lines without any header (lspci -s 1f:00.0 -vv | grep Lnk); every generation 1–6.
TEST(SystemToolsLspci, GrepOutputWithBareAddressesAndWithoutHeaders) {
  const std::string bare = join({
      "$ sudo lspci -vvv | grep -e '^[0-9a-f]' -e 'LnkCap:' -e 'LnkSta:'",
      "31:00.0",
      "                LnkCap: Port #0, Speed 16GT/s, Width x16, ASPM L1, Exit Latency L1 <64us",
      "                LnkSta: Speed 2.5GT/s (downgraded), Width x8 (downgraded)",
      "34:00.0",
      "                LnkCap: Port #2, Speed 16GT/s, Width x16, ASPM L1, Exit Latency L1 <64us",
      "                LnkSta: Speed 5GT/s (downgraded), Width x8 (downgraded)",
  });
  auto r = read(bare);
  SCOPED_TRACE(dump(r));
  auto links = all<diagnose::PcieLinkState>(r);
  ASSERT_EQ(links.size(), 2u);
  EXPECT_EQ(links[0].device, "31:00.0");
  EXPECT_FALSE(links[0].device_name);
  EXPECT_EQ(links[0].device_max_gen, 4);
  EXPECT_EQ(links[0].current_gen, 1);
  EXPECT_EQ(links[1].device, "34:00.0");
  EXPECT_EQ(links[1].current_gen, 2);
  EXPECT_EQ(detect_system_tools(bare), Tools{"lspci"});

  const std::string headerless = join({
      "$ lspci -s 1f:00.0 -vv | grep Lnk",
      "    LnkCap: Speed 32GT/s, Width x16",
      "    LnkCtl: ASPM Disabled; RCB 64 bytes, Disabled- CommClk+",
      "    LnkSta: Speed 32GT/s, Width x8 (downgraded)",
      "    LnkCap2: Supported Link Speeds: 2.5-32GT/s, Crosslink- Retimer+ 2Retimers+ DRS-",
      "    LnkCap: Speed 64GT/s, Width x16",
      "    LnkSta: Speed 64GT/s (ok), Width x16 (ok)",
      "    LnkSta: Speed 8GT/s (ok), Width x4 (ok)",
  });
  r = read(headerless);
  links = all<diagnose::PcieLinkState>(r);
  ASSERT_EQ(links.size(), 3u);
  EXPECT_EQ(links[0].device, "");
  EXPECT_EQ(links[0].device_max_gen, 5);
  EXPECT_EQ(links[0].current_gen, 5);
  EXPECT_EQ(links[0].current_width, 8);
  EXPECT_EQ(links[0].downgraded, true);
  EXPECT_EQ(links[1].device_max_gen, 6);
  EXPECT_EQ(links[1].current_gen, 6);
  EXPECT_EQ(links[1].downgraded, false);
  EXPECT_FALSE(links[2].device_max_gen);  // a second LnkSta starts a new record
  EXPECT_EQ(links[2].current_gen, 3);
  EXPECT_EQ(links[2].current_width, 4);
}

// A link that did not train: pciutils prints "Speed unknown" and "Width x0", which are no values.
TEST(SystemToolsLspci, UntrainedLinkHasNoCurrentValues) {
  const auto r = read(join({"41:00.0 Infiniband controller: Mellanox Technologies MT28908 Family [ConnectX-6]",
                            "\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16, ASPM not supported",
                            "\t\tLnkSta:\tSpeed unknown (downgraded), Width x0 (downgraded)"}));
  SCOPED_TRACE(dump(r));
  EXPECT_TRUE(r.notes.empty());
  const auto links = all<diagnose::PcieLinkState>(r);
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].device_name, "Mellanox Technologies MT28908 Family [ConnectX-6]");
  EXPECT_FALSE(links[0].current_gen);
  EXPECT_FALSE(links[0].current_width);
  EXPECT_EQ(links[0].device_max_gen, 4);
  EXPECT_EQ(links[0].downgraded, true);
  EXPECT_EQ(r.facts.count<diagnose::GpuSeen>(), 0u);  // not a GPU
}

// The IOMMU-group listing script many VFIO guides print (lspci -nns per device, tab-indented headers with class codes
// and vendor:device ids), as in a linux-pci thread on Raptor Lake root ports.
TEST(SystemToolsLspci, IndentedHeadersWithClassCodesOwnTheirAcsLines) {
  const std::string text = join({
      "IOMMU Group 12:",
      "\t0000:00:1c.0 PCI bridge [0604]: Intel Corporation Raptor Lake PCI Express Root Port #1 [8086:7a38] (rev 11)",
      "\t\tExpress Root Port (Slot+)",
      "\t0000:00:1c.1 PCI bridge [0604]: Intel Corporation Device [8086:7a39] (rev 11)",
      "\t\tExpress Root Port (Slot+)",
      "\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-",
      "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-",
  });
  const auto r = read(text);
  SCOPED_TRACE(dump(r));
  const auto acs = all<diagnose::AcsControl>(r);
  ASSERT_EQ(acs.size(), 1u);
  EXPECT_EQ(acs[0].device, "0000:00:1c.1");
  EXPECT_EQ(acs[0].device_name, "Intel Corporation Device");
  EXPECT_TRUE(acs[0].req_redir);
}

// A mail client wrapped each ACS line after UpstreamFwd and quoted the paste with "> " (linux-pci list style).
TEST(SystemToolsLspci, QuotedAndWrappedAcsLineIsJoined) {
  const std::string text = join({
      "> 00:01.2 PCI bridge: Advanced Micro Devices, Inc. [AMD] Raphael/Granite Ridge GPP Bridge (prog-if 00 [Normal "
      "decode])",
      "> \tCapabilities: [2a0 v1] Access Control Services",
      "> \t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ ",
      "EgressCtrl- DirectTrans+",
      "> \t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ ",
      "EgressCtrl+ DirectTrans-",
  });
  const auto r = read(text);
  SCOPED_TRACE(dump(r));
  EXPECT_TRUE(r.notes.empty());
  const auto acs = all<diagnose::AcsControl>(r);
  ASSERT_EQ(acs.size(), 1u);
  EXPECT_EQ(acs[0].device, "00:01.2");
  EXPECT_EQ(acs[0].device_name, "Advanced Micro Devices, Inc. [AMD] Raphael/Granite Ridge GPP Bridge");
  EXPECT_TRUE(acs[0].upstream_fwd);
  EXPECT_TRUE(acs[0].egress_ctrl);  // from the continuation line
  EXPECT_FALSE(acs[0].direct_trans);
}

// A cut ACSCtl line: the bits present are read, the rest read as '-', and a note names the line.
TEST(SystemToolsLspci, CutAcsLineIsReadWithANote) {
  const auto r = read("\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ Cmplt");
  const auto acs = all<diagnose::AcsControl>(r);
  ASSERT_EQ(acs.size(), 1u);
  EXPECT_TRUE(acs[0].src_valid);
  EXPECT_TRUE(acs[0].req_redir);
  EXPECT_FALSE(acs[0].cmplt_redir);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("line 1:"), std::string::npos);
  EXPECT_NE(r.notes[0].find("CmpltRedir"), std::string::npos);
}

// A device's lines end at a blank line or a prompt: an ACSCtl grep after a device list belongs to no device.
TEST(SystemToolsLspci, AssociationEndsAtBlankLineAndPrompt) {
  const std::string text = join({
      "$ lspci | grep -i plx",
      "02:10.0 PCI bridge: PLX Technology, Inc. PEX 8747 48-Lane, 5-Port PCI Express Gen 3 (8.0 GT/s) Switch (rev ca)",
      "$ sudo lspci -vvv | grep ACSCtl",
      "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-",
      "",
      "05:00.0 3D controller: NVIDIA Corporation GA100 [A100 PCIe 40GB] (rev a1)",
      "",
      "\t\tLnkSta:\tSpeed 16GT/s (ok), Width x16 (ok)",
  });
  const auto r = read(text);
  SCOPED_TRACE(dump(r));
  const auto acs = all<diagnose::AcsControl>(r);
  ASSERT_EQ(acs.size(), 1u);
  EXPECT_EQ(acs[0].device, "");
  EXPECT_FALSE(acs[0].device_name);
  const auto links = all<diagnose::PcieLinkState>(r);
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].device, "");
  EXPECT_EQ(links[0].current_gen, 4);
}

// lspci -tv inside a KVM guest: virtio devices are a sign of a hypervisor (one fact per kind of device).
TEST(SystemToolsLspci, TreeOfAVirtualMachineShowsVirtio) {
  const std::string text = join({
      "$ lspci -tv",
      "-[0000:00]-+-00.0  Intel Corporation 440FX - 82441FX PMC [Natoma]",
      "           +-01.0  Intel Corporation 82371SB PIIX3 ISA [Natoma/Triton II]",
      "           +-01.1  Intel Corporation 82371SB PIIX3 IDE [Natoma/Triton II]",
      "           +-02.0  Device 1234:1111",
      "           +-03.0  Red Hat, Inc. Virtio network device",
      "           +-04.0  Red Hat, Inc. Virtio block device",
      "           \\-05.0  NVIDIA Corporation GA100 [A100 PCIe 40GB]",
  });
  const auto r = read(text);
  SCOPED_TRACE(dump(r));
  const auto h = all<diagnose::HypervisorSeen>(r);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].what, "virtual PCI device (virtio): Red Hat, Inc. Virtio network device");
  EXPECT_EQ(where<diagnose::HypervisorSeen>(r)[0].line, 6u);
  // The tree names the GPU too.
  const auto g = all<diagnose::GpuSeen>(r);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].name, "NVIDIA Corporation GA100 [A100 PCIe 40GB]");
  EXPECT_EQ(r.facts.size(), 2u);
  EXPECT_EQ(detect_system_tools(text), (Tools{"lspci", "hypervisor"}));
}

// ───────────────────────────── nvidia-smi -q ─────────────────────────────

// nvidia-smi -q of driver 535 on an HGX H100 node (format of the 535/550 outputs in public repositories: "GPU Link
// Info" with Device Current / Device Max / Host Max, "Clocks Event Reasons", "GPU Power Readings" with "Power Draw"
// and "Current Power Limit"). GPU 1 trained to Gen4 x8 and is thermally slowed.
const std::string kQuery535 = join({
    "",
    "==============NVSMI LOG==============",
    "",
    "Timestamp                                 : Tue Mar 12 09:14:02 2024",
    "Driver Version                            : 535.129.03",
    "CUDA Version                              : 12.2",
    "",
    "Attached GPUs                             : 2",
    "GPU 00000000:18:00.0",
    "    Product Name                          : NVIDIA H100 80GB HBM3",
    "    Product Brand                         : NVIDIA",
    "    Product Architecture                  : Hopper",
    "    Persistence Mode                      : Enabled",
    "    MIG Mode",
    "        Current                           : Disabled",
    "        Pending                           : Disabled",
    "    GPU Virtualization Mode",
    "        Virtualization Mode               : None",
    "        Host VGPU Mode                    : N/A",
    "    PCI",
    "        Bus                               : 0x18",
    "        Device                            : 0x00",
    "        Domain                            : 0x0000",
    "        Device Id                         : 0x233010DE",
    "        Bus Id                            : 00000000:18:00.0",
    "        Sub System Id                     : 0x16C110DE",
    "        GPU Link Info",
    "            PCIe Generation",
    "                Max                       : 5",
    "                Current                   : 5",
    "                Device Current            : 5",
    "                Device Max                : 5",
    "                Host Max                  : 5",
    "            Link Width",
    "                Max                       : 16x",
    "                Current                   : 16x",
    "        Bridge Chip",
    "            Type                          : N/A",
    "            Firmware                      : N/A",
    "        Replays Since Reset               : 0",
    "        Replay Number Rollovers           : 0",
    "        Tx Throughput                     : 4096 KB/s",
    "        Rx Throughput                     : 1024 KB/s",
    "    Fan Speed                             : N/A",
    "    Performance State                     : P0",
    "    Clocks Event Reasons",
    "        Idle                              : Not Active",
    "        Applications Clocks Setting       : Not Active",
    "        SW Power Cap                      : Not Active",
    "        HW Slowdown                       : Not Active",
    "            HW Thermal Slowdown           : Not Active",
    "            HW Power Brake Slowdown       : Not Active",
    "        Sync Boost                        : Not Active",
    "        SW Thermal Slowdown               : Not Active",
    "        Display Clock Setting             : Not Active",
    "    FB Memory Usage",
    "        Total                             : 81559 MiB",
    "        Reserved                          : 328 MiB",
    "        Used                              : 71234 MiB",
    "        Free                              : 9996 MiB",
    "    Utilization",
    "        Gpu                               : 100 %",
    "        Memory                            : 62 %",
    "    Temperature",
    "        GPU Current Temp                  : 52 C",
    "        GPU T.Limit Temp                  : 33 C",
    "        GPU Shutdown Temp                 : 92 C",
    "    GPU Power Readings",
    "        Power Draw                        : 612.45 W",
    "        Current Power Limit               : 700.00 W",
    "        Requested Power Limit             : 700.00 W",
    "        Default Power Limit               : 700.00 W",
    "        Min Power Limit                   : 200.00 W",
    "        Max Power Limit                   : 700.00 W",
    "    GPU Memory Power Readings ",
    "        Power Draw                        : 41.20 W",
    "    Module Power Readings",
    "        Power Draw                        : N/A",
    "        Current Power Limit               : N/A",
    "    Clocks",
    "        Graphics                          : 1980 MHz",
    "        SM                                : 1980 MHz",
    "        Memory                            : 2619 MHz",
    "        Video                             : 1545 MHz",
    "    Applications Clocks",
    "        Graphics                          : 1980 MHz",
    "        Memory                            : 2619 MHz",
    "    Max Clocks",
    "        Graphics                          : 1980 MHz",
    "        SM                                : 1980 MHz",
    "        Memory                            : 2619 MHz",
    "        Video                             : 1545 MHz",
    "",
    "GPU 00000000:2A:00.0",
    "    Product Name                          : NVIDIA H100 80GB HBM3",
    "[...]",
    "    PCI",
    "        Bus Id                            : 00000000:2A:00.0",
    "        GPU Link Info",
    "            PCIe Generation",
    "                Max                       : 5",
    "                Current                   : 4",
    "                Device Current            : 4",
    "                Device Max                : 5",
    "                Host Max                  : 5",
    "            Link Width",
    "                Max                       : 16x",
    "                Current                   : 8x",
    "    Performance State                     : P0",
    "    Clocks Event Reasons",
    "        Idle                              : Not Active",
    "        SW Power Cap                      : Not Active",
    "        HW Slowdown                       : Active",
    "            HW Thermal Slowdown           : Active",
    "            HW Power Brake Slowdown       : Not Active",
    "        Sync Boost                        : Not Active",
    "        SW Thermal Slowdown               : Active",
    "    Clocks Event Reasons Counters",
    "        SW Power Capping                  : 0 us",
    "        HW Thermal Slowdown               : 91234567 us",
    "    Utilization",
    "        Gpu                               : 100 %",
    "    Temperature",
    "        GPU Current Temp                  : 87 C",
    "    GPU Power Readings",
    "        Power Draw                        : 402.10 W",
    "        Current Power Limit               : 700.00 W",
    "    Clocks",
    "        SM                                : 1410 MHz",
    "    Max Clocks",
    "        SM                                : 1980 MHz",
});

TEST(SystemToolsSmiQuery, Driver535LinkInfoClocksPowerAndEventReasons) {
  const auto r = read(kQuery535);
  SCOPED_TRACE(dump(r));
  EXPECT_TRUE(r.notes.empty());

  const auto counts = all<diagnose::GpuCount>(r);
  ASSERT_EQ(counts.size(), 1u);
  EXPECT_EQ(counts[0].count, 2);
  EXPECT_EQ(counts[0].scope, "exist");
  EXPECT_FALSE(counts[0].host);
  EXPECT_EQ(where<diagnose::GpuCount>(r)[0].line, 8u);

  const auto gpus = all<diagnose::GpuSeen>(r);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpus[0].bus_id, "00000000:18:00.0");
  EXPECT_FALSE(gpus[0].index);
  EXPECT_EQ(gpus[1].bus_id, "00000000:2A:00.0");

  const auto links = all<diagnose::PcieLinkState>(r);
  ASSERT_EQ(links.size(), 2u);
  EXPECT_EQ(links[0].device, "GPU 00000000:18:00.0");
  EXPECT_EQ(links[0].device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(links[0].current_gen, 5);
  EXPECT_EQ(links[0].max_gen, 5);
  EXPECT_EQ(links[0].device_max_gen, 5);
  EXPECT_EQ(links[0].current_width, 16);
  EXPECT_EQ(links[0].max_width, 16);
  EXPECT_FALSE(links[0].device_max_width);
  EXPECT_EQ(links[0].under_load, true);  // Idle: Not Active
  EXPECT_FALSE(links[0].downgraded);     // lspci's marker only
  EXPECT_EQ(where<diagnose::PcieLinkState>(r)[0].line, 27u);  // "GPU Link Info"
  EXPECT_EQ(links[1].device, "GPU 00000000:2A:00.0");
  EXPECT_EQ(links[1].current_gen, 4);
  EXPECT_EQ(links[1].max_gen, 5);
  EXPECT_EQ(links[1].device_max_gen, 5);
  EXPECT_EQ(links[1].current_width, 8);
  EXPECT_EQ(links[1].max_width, 16);

  const auto clocks = all<diagnose::GpuClocks>(r);
  ASSERT_EQ(clocks.size(), 2u);
  EXPECT_EQ(clocks[0].gpu, "GPU 00000000:18:00.0");
  EXPECT_EQ(clocks[0].sm_mhz, 1980);
  EXPECT_EQ(clocks[0].max_sm_mhz, 1980);
  EXPECT_DOUBLE_EQ(*clocks[0].power_w, 612.45);  // not the memory's 41.20 W
  EXPECT_EQ(clocks[0].power_limit_w, 700);
  EXPECT_EQ(clocks[0].temperature_c, 52);
  EXPECT_TRUE(clocks[0].active_throttle_reasons.empty());
  EXPECT_EQ(where<diagnose::GpuClocks>(r)[0].line, 9u);  // the GPU line
  EXPECT_EQ(clocks[1].gpu, "GPU 00000000:2A:00.0");
  EXPECT_EQ(clocks[1].sm_mhz, 1410);
  EXPECT_EQ(clocks[1].max_sm_mhz, 1980);
  EXPECT_DOUBLE_EQ(*clocks[1].power_w, 402.10);
  EXPECT_EQ(clocks[1].temperature_c, 87);
  EXPECT_EQ(clocks[1].active_throttle_reasons,
            (std::vector<std::string>{"HW Slowdown", "HW Thermal Slowdown", "SW Thermal Slowdown"}));
  EXPECT_EQ(where<diagnose::GpuClocks>(r)[1].excerpt, "HW Slowdown                       : Active");
  EXPECT_EQ(r.facts.count<diagnose::HypervisorSeen>(), 0u);  // Virtualization Mode: None
  EXPECT_EQ(detect_system_tools(kQuery535), Tools{"nvidia-smi -q"});
}

// Driver 450 (`nvidia-smi -a` of a GTX 1650, as in a public OpenCV build thread): "Clocks Throttle Reasons", "Power
// Readings" with "Power Limit" and "Enforced Power Limit", an idle GPU at Gen1.
TEST(SystemToolsSmiQuery, Driver450ThrottleReasonsAndEnforcedPowerLimit) {
  const std::string text = join({
      "(opencv_cuda) user@host-a:~$ nvidia-smi -a",
      "",
      "==============NVSMI LOG==============",
      "",
      "Timestamp                                 : Sat Jul 25 17:42:45 2020",
      "Driver Version                            : 450.51.05",
      "CUDA Version                              : 11.0",
      "",
      "Attached GPUs                             : 1",
      "GPU 00000000:01:00.0",
      "    Product Name                          : GeForce GTX 1650",
      "    Product Brand                         : GeForce",
      "    PCI",
      "        Bus                               : 0x01",
      "        Bus Id                            : 00000000:01:00.0",
      "        GPU Link Info",
      "            PCIe Generation",
      "                Max                       : 3",
      "                Current                   : 1",
      "            Link Width",
      "                Max                       : 16x",
      "                Current                   : 16x",
      "    Fan Speed                             : 0 %",
      "    Performance State                     : P8",
      "    Clocks Throttle Reasons",
      "        Idle                              : Active",
      "        Applications Clocks Setting       : Not Active",
      "        SW Power Cap                      : Not Active",
      "        HW Slowdown                       : Not Active",
      "            HW Thermal Slowdown           : Not Active",
      "            HW Power Brake Slowdown       : Not Active",
      "        Sync Boost                        : Not Active",
      "        SW Thermal Slowdown               : Not Active",
      "        Display Clock Setting             : Not Active",
      "    Utilization",
      "        Gpu                               : 14 %",
      "    Temperature",
      "        GPU Current Temp                  : 48 C",
      "    Power Readings",
      "        Power Management                  : Supported",
      "        Power Draw                        : 7.37 W",
      "        Power Limit                       : 80.00 W",
      "        Default Power Limit               : 75.00 W",
      "        Enforced Power Limit              : 75.00 W",
      "        Min Power Limit                   : 45.00 W",
      "        Max Power Limit                   : 75.00 W",
      "    Clocks",
      "        Graphics                          : 300 MHz",
      "        SM                                : 300 MHz",
      "    Max Clocks",
      "        Graphics                          : 2145 MHz",
      "        SM                                : 2145 MHz",
      "    Processes",
      "        GPU instance ID             : N/A",
      "        Process ID                  : 1741",
      "            Name                    : /usr/lib/xorg/Xorg",
      "",
      "(opencv_cuda) user@host-a:~$ ",
  });
  const auto r = read(text);
  SCOPED_TRACE(dump(r));
  EXPECT_TRUE(r.notes.empty());
  const auto links = all<diagnose::PcieLinkState>(r);
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].current_gen, 1);
  EXPECT_EQ(links[0].max_gen, 3);
  EXPECT_FALSE(links[0].device_max_gen);  // driver 450 prints no Device Max
  EXPECT_EQ(links[0].under_load, false);  // Idle: Active, whatever the utilisation says
  const auto clocks = all<diagnose::GpuClocks>(r);
  ASSERT_EQ(clocks.size(), 1u);
  EXPECT_EQ(clocks[0].sm_mhz, 300);
  EXPECT_EQ(clocks[0].max_sm_mhz, 2145);
  EXPECT_DOUBLE_EQ(*clocks[0].power_w, 7.37);
  EXPECT_EQ(clocks[0].power_limit_w, 75);  // the enforced limit, not "Power Limit"
  EXPECT_EQ(clocks[0].temperature_c, 48);
  EXPECT_EQ(clocks[0].active_throttle_reasons, std::vector<std::string>{"Idle"});
  ASSERT_EQ(all<diagnose::GpuSeen>(r).size(), 1u);
  EXPECT_EQ(all<diagnose::GpuSeen>(r)[0].name, "GeForce GTX 1650");
}

// Driver 550+ in a VM with the GPU passed through (format of leptonai/gpud's 550.127.05 fixture): "Average Power
// Draw : N/A", "Instantaneous Power Draw", "Virtualization Mode : Pass-Through", Host Max N/A.
TEST(SystemToolsSmiQuery, Driver550PassThroughAndInstantaneousPower) {
  const std::string text = join({
      "GPU 00000000:06:00.0",
      "    Product Name                          : NVIDIA A10",
      "    GPU Virtualization Mode",
      "        Virtualization Mode               : Pass-Through",
      "        Host VGPU Mode                    : N/A",
      "        vGPU Heterogeneous Mode           : N/A",
      "    PCI",
      "        Bus Id                            : 00000000:06:00.0",
      "        GPU Link Info",
      "            PCIe Generation",
      "                Max                       : 4",
      "                Current                   : 4",
      "                Device Current            : 4",
      "                Device Max                : 4",
      "                Host Max                  : N/A",
      "            Link Width",
      "                Max                       : 16x",
      "                Current                   : 16x",
      "    Performance State                     : P0",
      "    Clocks Event Reasons",
      "        Idle                              : Not Active",
      "        SW Power Cap                      : Active",
      "    GPU Power Readings",
      "        Average Power Draw                : N/A",
      "        Instantaneous Power Draw          : 149.27 W",
      "        Current Power Limit               : 150.00 W",
      "        Requested Power Limit             : 150.00 W",
  });
  const auto r = read(text);
  SCOPED_TRACE(dump(r));
  EXPECT_TRUE(r.notes.empty());
  const auto clocks = all<diagnose::GpuClocks>(r);
  ASSERT_EQ(clocks.size(), 1u);
  EXPECT_DOUBLE_EQ(*clocks[0].power_w, 149.27);
  EXPECT_EQ(clocks[0].power_limit_w, 150);
  EXPECT_EQ(clocks[0].active_throttle_reasons, std::vector<std::string>{"SW Power Cap"});
  EXPECT_FALSE(clocks[0].sm_mhz);
  EXPECT_FALSE(clocks[0].temperature_c);
  const auto h = all<diagnose::HypervisorSeen>(r);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].what, "GPU virtualization mode Pass-Through (nvidia-smi -q)");
  EXPECT_EQ(where<diagnose::HypervisorSeen>(r)[0].line, 4u);
  EXPECT_EQ(detect_system_tools(text), (Tools{"nvidia-smi -q", "hypervisor"}));
}

// `nvidia-smi -q | grep -A8 'Clocks Throttle'` (a kubeflow issue): the section alone, without its GPU line.
TEST(SystemToolsSmiQuery, GrepOfOneSectionWithoutItsGpu) {
  const std::string text = join({
      "$ nvidia-smi -q | grep -A8 'Clocks Throttle'",
      "    Clocks Throttle Reasons",
      "        Idle                        : Active",
      "        Applications Clocks Setting : Not Active",
      "        SW Power Cap                : Not Active",
      "        HW Slowdown                 : Not Active",
      "            HW Thermal Slowdown     : Not Active",
      "            HW Power Brake Slowdown : Not Active",
      "        Sync Boost                  : Not Active",
      "        SW Thermal Slowdown         : Not Active",
  });
  const auto r = read(text);
  SCOPED_TRACE(dump(r));
  const auto clocks = all<diagnose::GpuClocks>(r);
  ASSERT_EQ(clocks.size(), 1u);
  EXPECT_EQ(clocks[0].gpu, "");
  EXPECT_EQ(clocks[0].active_throttle_reasons, std::vector<std::string>{"Idle"});
  EXPECT_EQ(where<diagnose::GpuClocks>(r)[0].line, 3u);
  EXPECT_EQ(r.facts.count<diagnose::GpuSeen>(), 0u);
  EXPECT_EQ(detect_system_tools(text), Tools{"nvidia-smi -q"});
}

// A paste that lost its indentation reads the same (sections by the nearest name above); CRLF line ends.
TEST(SystemToolsSmiQuery, StrippedIndentationAndCrlf) {
  std::string text;
  for (const char* l : {"GPU 00000000:3B:00.0", "Product Name : Tesla V100-SXM2-32GB", "GPU Link Info",
                        "PCIe Generation", "Max : 3", "Current : 3", "Link Width", "Max : 16x", "Current : 4x",
                        "Clocks Throttle Reasons", "Idle : Not Active", "SW Power Cap : Active", "FB Memory Usage",
                        "Total : 32768 MiB", "Clocks", "SM : 1290 MHz", "Max Clocks", "SM : 1530 MHz"}) {
    text += l;
    text += "\r\n";
  }
  const auto r = read(text);
  SCOPED_TRACE(dump(r));
  const auto links = all<diagnose::PcieLinkState>(r);
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].device, "GPU 00000000:3B:00.0");
  EXPECT_EQ(links[0].device_name, "Tesla V100-SXM2-32GB");
  EXPECT_EQ(links[0].max_gen, 3);
  EXPECT_EQ(links[0].current_width, 4);
  EXPECT_EQ(links[0].max_width, 16);
  EXPECT_EQ(links[0].under_load, true);
  const auto clocks = all<diagnose::GpuClocks>(r);
  ASSERT_EQ(clocks.size(), 1u);
  EXPECT_EQ(clocks[0].active_throttle_reasons, std::vector<std::string>{"SW Power Cap"});
  EXPECT_EQ(clocks[0].sm_mhz, 1290);
  EXPECT_EQ(clocks[0].max_sm_mhz, 1530);
}

// dmidecode's "Product Name:" is not a GPU; nor is a -q value that is not a number (a note names it).
TEST(SystemToolsSmiQuery, ForeignProductNameAndGarbledValues) {
  const auto dmi = read(join({"System Information", "\tManufacturer: Dell Inc.", "\tProduct Name: PowerEdge R750xa"}));
  EXPECT_TRUE(dmi.facts.empty()) << dump(dmi);
  const auto r = read(join({"GPU 00000000:3B:00.0", "    GPU Link Info", "        PCIe Generation",
                            "            Max                   : three", "            Current               : 3"}));
  SCOPED_TRACE(dump(r));
  const auto links = all<diagnose::PcieLinkState>(r);
  ASSERT_EQ(links.size(), 1u);
  EXPECT_FALSE(links[0].max_gen);
  EXPECT_EQ(links[0].current_gen, 3);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("line 4:"), std::string::npos);
}

// ───────────────────────────── nvidia-smi -L ─────────────────────────────

TEST(SystemToolsSmiList, GpusAndTheirCountWithMigLinesSkipped) {
  const std::string text = join({
      "$ nvidia-smi -L",
      "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5d9f1a2b-3c4d-5e6f-7a8b-9c0d1e2f3a4b)",
      "  MIG 3g.40gb     Device  0: (UUID: MIG-1a2b3c4d-5e6f-5a7b-8c9d-0e1f2a3b4c5d)",
      "  MIG 3g.40gb     Device  1: (UUID: MIG-2b3c4d5e-6f7a-5b8c-9d0e-1f2a3b4c5d6e)",
      "GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-6e0a2b3c-4d5e-6f7a-8b9c-0d1e2f3a4b5c)",
      "GPU 2: NVIDIA A100-SXM4-80GB (UUID: GPU-7f1b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d)",
      "$ ssh host-b nvidia-smi -L",
      "GPU 0: Tesla V100-SXM2-16GB (UUID: GPU-09101d09-2345-0823-9f93-c9f49b9aebac)",
  });
  const auto r = read(text);
  SCOPED_TRACE(dump(r));
  const auto gpus = all<diagnose::GpuSeen>(r);
  ASSERT_EQ(gpus.size(), 4u);
  EXPECT_EQ(gpus[0].name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(gpus[0].index, 0);
  EXPECT_FALSE(gpus[0].bus_id);
  EXPECT_EQ(gpus[2].index, 2);
  EXPECT_EQ(gpus[3].name, "Tesla V100-SXM2-16GB");
  const auto counts = all<diagnose::GpuCount>(r);
  ASSERT_EQ(counts.size(), 2u);
  EXPECT_EQ(counts[0].count, 3);
  EXPECT_EQ(counts[0].scope, "exist");
  EXPECT_EQ(counts[1].count, 1);
  const auto w = where<diagnose::GpuCount>(r);
  EXPECT_EQ(w[0].line, 0u);  // derived from several lines
  EXPECT_EQ(w[0].excerpt, "nvidia-smi -L lists 3 GPUs (lines 2-6)");
  EXPECT_EQ(detect_system_tools(text), Tools{"nvidia-smi -L"});
}

// PyTorch's collect_env and sglang's env dump name GPUs without UUIDs: not nvidia-smi -L.
TEST(SystemToolsSmiList, CollectEnvGpuLinesAreNotAList) {
  const std::string text = join({"GPU models and configuration:", "GPU 0: NVIDIA H100 80GB HBM3",
                                 "GPU 1: NVIDIA H100 80GB HBM3", "GPU 0,1,2,3: NVIDIA GB200"});
  EXPECT_TRUE(read(text).facts.empty());
  EXPECT_TRUE(detect_system_tools(text).empty());
}

// ───────────────────────────── nvidia-smi nvlink ─────────────────────────────

// nvlink --status of a DGX-1 class node (tab + space indentation as nvidia-smi prints it), one link down.
TEST(SystemToolsNvlink, StatusPerLinkWithInactiveLink) {
  const std::string text = join({
      "$ nvidia-smi nvlink --status -i 0,1",
      "GPU 0: Tesla V100-SXM2-16GB (UUID: GPU-09101d09-2345-0823-9f93-c9f49b9aebac)",
      "\t Link 0: 25.781 GB/s",
      "\t Link 1: 25.781 GB/s",
      "\t Link 2: <inactive>",
      "GPU 1: Tesla V100-SXM2-16GB (UUID: GPU-2f472f47-2093-5eb6-6eb1-a2cce2e0c5ee)",
      "\t Link 0: 25.781 GB/s",
  });
  const auto r = read(text);
  SCOPED_TRACE(dump(r));
  const auto s = all<diagnose::NvlinkState>(r);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].gpu, "GPU 0");
  EXPECT_EQ(s[0].gpu_name, "Tesla V100-SXM2-16GB");
  EXPECT_EQ(s[0].link, 0);
  EXPECT_TRUE(s[0].active);
  EXPECT_DOUBLE_EQ(*s[0].gbps, 25.781);
  EXPECT_FALSE(s[0].version);
  EXPECT_EQ(s[2].link, 2);
  EXPECT_FALSE(s[2].active);
  EXPECT_FALSE(s[2].gbps);
  EXPECT_EQ(s[3].gpu, "GPU 1");
  EXPECT_EQ(where<diagnose::NvlinkState>(r)[2].line, 5u);
  // the GPU lines are nvlink's headers, not an nvidia-smi -L list
  EXPECT_EQ(r.facts.count<diagnose::GpuSeen>(), 0u);
  EXPECT_EQ(r.facts.count<diagnose::GpuCount>(), 0u);
  EXPECT_EQ(detect_system_tools(text), Tools{"nvidia-smi nvlink"});
}

// nvlink -e of an H100 node as stas00/ml-engineering shows it (blank lines between links, "[...]" elisions), and a
// one-line variant of several counters; a PCIe card's "Unable to retrieve NVLink information" is noted.
TEST(SystemToolsNvlink, ErrorCountersAndNoNvlinkNote) {
  const std::string text = join({
      "$ nvidia-smi nvlink -e",
      "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-abcdefab-cdef-abdc-abcd-abababababab)",
      "         Link 0: Replay Errors: 0",
      "         Link 0: Recovery Errors: 0",
      "         Link 0: CRC Errors: 0",
      "",
      "         Link 1: Replay Errors: 12",
      "         Link 1: Recovery Errors: 1",
      "         Link 1: CRC Errors: 4567",
      "",
      "         [...]",
      "",
      "         Link 17: Replay Errors: 142, Recovery Errors: 3, CRC Errors: 891",
      "GPU 1: NVIDIA GeForce RTX 4090 (UUID: GPU-00000000-0000-0000-0000-000000000000)",
      "\t NVML: Unable to retrieve NVLink information as all links are inActive",
  });
  const auto r = read(text);
  SCOPED_TRACE(dump(r));
  const auto c = all<diagnose::NvlinkCounter>(r);
  ASSERT_EQ(c.size(), 9u);
  EXPECT_EQ(c[0].gpu, "GPU 0");
  EXPECT_EQ(c[0].link, 0);
  EXPECT_EQ(c[0].counter, "Replay Errors");
  EXPECT_EQ(c[0].value, 0u);
  EXPECT_EQ(c[5].link, 1);
  EXPECT_EQ(c[5].counter, "CRC Errors");
  EXPECT_EQ(c[5].value, 4567u);
  EXPECT_EQ(c[8].link, 17);
  EXPECT_EQ(c[8].counter, "CRC Errors");
  EXPECT_EQ(c[8].value, 891u);
  EXPECT_EQ(where<diagnose::NvlinkCounter>(r)[8].line, 13u);
  EXPECT_EQ(r.facts.count<diagnose::NvlinkState>(), 0u);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("line 15: nvidia-smi reports no NVLink information for GPU 1"), std::string::npos);
  EXPECT_EQ(r.facts.count<diagnose::GpuSeen>(), 0u);
  EXPECT_EQ(detect_system_tools(text), Tools{"nvidia-smi nvlink"});
}

// ───────────────────────────── nvidia-smi topo -p2p ─────────────────────────────

TEST(SystemToolsSmiP2p, ReadMatrixWithCommandAndLegendAfterTopoM) {
  const std::string text = join({
      "$ nvidia-smi topo -m",
      "        GPU0    GPU1    GPU2    GPU3    CPU Affinity    NUMA Affinity   GPU NUMA ID",
      "GPU0     X      PIX     SYS     SYS     0-15    0               N/A",
      "GPU1    PIX      X      SYS     SYS     0-15    0               N/A",
      "GPU2    SYS     SYS      X      PIX     16-31   1               N/A",
      "GPU3    SYS     SYS     PIX      X      16-31   1               N/A",
      "",
      "$ nvidia-smi topo -p2p r",
      "        GPU0    GPU1    GPU2    GPU3",
      " GPU0   X       OK      CNS     CNS",
      " GPU1   OK      X       CNS     CNS",
      " GPU2   CNS     CNS     X       OK",
      " GPU3   CNS     CNS     OK      X",
      "",
      "Legend:",
      "",
      "  X    = Self",
      "  OK   = Status Ok",
      "  CNS  = Chipset not supported",
      "  GNS  = GPU not supported",
      "  TNS  = Topology not supported",
      "  NS   = Not supported",
      "  U    = Unknown",
  });
  const auto r = read(text);
  SCOPED_TRACE(dump(r));
  const auto p = all<diagnose::P2pStatus>(r);
  ASSERT_EQ(p.size(), 12u);  // ordered pairs, the diagonal left out
  EXPECT_EQ(p[0].a, "GPU0");
  EXPECT_EQ(p[0].b, "GPU1");
  EXPECT_EQ(p[0].status, "OK");
  EXPECT_EQ(p[0].access, "read");
  EXPECT_EQ(p[1].b, "GPU2");
  EXPECT_EQ(p[1].status, "CNS");
  EXPECT_EQ(p[11].a, "GPU3");
  EXPECT_EQ(p[11].b, "GPU2");
  EXPECT_EQ(p[11].status, "OK");
  EXPECT_EQ(where<diagnose::P2pStatus>(r)[11].line, 13u);
  EXPECT_EQ(r.facts.size(), 12u);  // nothing from the topo -m matrix
  EXPECT_EQ(detect_system_tools(text), Tools{"nvidia-smi topo -p2p"});
}

// Two matrices, each with its command (long option), a markdown-table paste, a cut row, a new legend token.
TEST(SystemToolsSmiP2p, SeveralMatricesMarkdownAndCutRows) {
  const std::string text = join({
      "root@host-a:~# nvidia-smi topo --p2pstatus=n",
      "        GPU0    GPU1",
      " GPU0   X       NS",
      " GPU1   NS      X",
      "root@host-a:~# nvidia-smi topo -p2p w",
      "| | GPU0 | GPU1 | GPU2 |",
      "| GPU0 | X | DR | OK |",
      "| GPU1 | DR | X | OK |",
      "| GPU2 | OK | OK |",
      "  DR   = Disabled by regkey",
  });
  const auto r = read(text);
  SCOPED_TRACE(dump(r));
  const auto p = all<diagnose::P2pStatus>(r);
  ASSERT_EQ(p.size(), 8u);
  EXPECT_EQ(p[0].access, "nvlink");
  EXPECT_EQ(p[0].status, "NS");
  EXPECT_EQ(p[2].access, "write");
  EXPECT_EQ(p[2].a, "GPU0");
  EXPECT_EQ(p[2].b, "GPU1");
  EXPECT_EQ(p[2].status, "DR");
  EXPECT_EQ(p[7].a, "GPU2");
  EXPECT_EQ(p[7].b, "GPU1");
  ASSERT_EQ(r.notes.size(), 1u);  // GPU2's row lost its last cell
  EXPECT_NE(r.notes[0].find("line 9:"), std::string::npos);
}

// ───────────────────────────── kernel log ─────────────────────────────

TEST(SystemToolsKernelLog, XidLinesInEveryLogPrefix) {
  const std::string text = join({
      "[ 1399.140323] NVRM: Xid (PCI:0000:01:00): 32, Channel ID 00000009 intr 00800000",
      "Mar 12 09:14:02 host-a kernel: [81234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU "
      "has fallen off the bus.",
      "2024-01-15T03:00:00,000000+00:00 NVRM: Xid (PCI:0000:86:00): 48, pid='<unknown>', name=<unknown>, An "
      "uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.",
      "[Tue Mar 12 09:20:11 2024] NVRM: Xid (PCI:0000:b1:00): 74, pid=2101, name=pt_main_thread, NVLink: fatal error "
      "detected on link 4(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
      "[   12.000001] NVRM: Xid (PCI:0000:01:00): 79",
      "    return \"NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus\", nil",
      "grep -iE 'Xid|NVRM: .*error'",
  });
  const auto r = read(text);
  SCOPED_TRACE(dump(r));
  const auto x = all<diagnose::XidEvent>(r);
  ASSERT_EQ(x.size(), 5u);  // the Go string literal and the grep pattern are not log lines
  EXPECT_EQ(x[0].bus_id, "0000:01:00");
  EXPECT_EQ(x[0].code, 32);
  EXPECT_EQ(x[0].text, "Channel ID 00000009 intr 00800000");
  EXPECT_EQ(x[1].bus_id, "0000:3b:00");
  EXPECT_EQ(x[1].code, 79);
  EXPECT_EQ(x[1].text, "GPU has fallen off the bus.");
  EXPECT_EQ(x[2].code, 48);
  EXPECT_EQ(x[2].text.substr(0, 29), "An uncorrectable double bit e");
  EXPECT_EQ(x[3].code, 74);
  EXPECT_EQ(x[3].text.substr(0, 41), "NVLink: fatal error detected on link 4(0x");
  EXPECT_EQ(x[4].text, "");
  EXPECT_EQ(where<diagnose::XidEvent>(r)[1].line, 2u);
  EXPECT_EQ(detect_system_tools(text), Tools{"kernel log"});
}

// `dmesg | grep -i -e DMAR -e IOMMU` (format of public VFIO-setup threads): the default domain line decides over the
// command line, which decides over "DMAR: IOMMU enabled".
TEST(SystemToolsKernelLog, IommuModeFromTheMostSpecificLine) {
  const std::string pt = join({
      "$ sudo dmesg | grep -i -e DMAR -e IOMMU",
      "[    0.000000] Command line: BOOT_IMAGE=/boot/vmlinuz-6.8.0-40-generic root=UUID=xxx ro quiet splash "
      "intel_iommu=on iommu=pt",
      "[    0.049343] DMAR: IOMMU enabled",
      "[    0.804932] iommu: Default domain type: Passthrough (set via kernel command line)",
      "[    0.870141] pci 0000:00:02.0: Adding to iommu group 0",
  });
  auto r = read(pt);
  auto m = all<diagnose::IommuMode>(r);
  ASSERT_EQ(m.size(), 1u) << dump(r);
  EXPECT_EQ(m[0].mode, "passthrough");
  EXPECT_EQ(where<diagnose::IommuMode>(r)[0].line, 4u);
  EXPECT_EQ(detect_system_tools(pt), Tools{"kernel log"});

  r = read(join({"[    0.000000] Kernel command line: BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro intel_iommu=on",
                 "[    0.049343] DMAR: IOMMU enabled"}));
  m = all<diagnose::IommuMode>(r);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].mode, "translated");
  EXPECT_EQ(where<diagnose::IommuMode>(r)[0].line, 1u);

  r = read("[    0.495931] iommu: Default domain type: Translated");
  ASSERT_EQ(all<diagnose::IommuMode>(r).size(), 1u);
  EXPECT_EQ(all<diagnose::IommuMode>(r)[0].mode, "translated");

  r = read("GRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash amd_iommu=off\"");
  ASSERT_EQ(all<diagnose::IommuMode>(r).size(), 1u);
  EXPECT_EQ(all<diagnose::IommuMode>(r)[0].mode, "off");

  r = read("BOOT_IMAGE=/boot/vmlinuz-5.15.0-91-generic root=UUID=abc ro iommu=pt");
  ASSERT_EQ(all<diagnose::IommuMode>(r).size(), 1u);
  EXPECT_EQ(all<diagnose::IommuMode>(r)[0].mode, "passthrough");

  // prose quoting the line, and a command line without IOMMU options
  r = read(join({"Expected: `iommu: Default domain type: Passthrough`",
                 "[    0.000000] Command line: BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet"}));
  EXPECT_TRUE(r.facts.empty()) << dump(r);
}

// A KVM guest's boot log, lscpu and dmidecode: each sign once per kind of evidence.
TEST(SystemToolsKernelLog, HypervisorSigns) {
  const std::string text = join({
      "[    0.000000] DMI: QEMU Standard PC (Q35 + ICH9, 2009), BIOS 1.16.3-debian-1.16.3-2 04/01/2014",
      "[    0.000000] Hypervisor detected: KVM",
      "[    0.000000] Hypervisor detected: KVM",
      "[    0.012345] Booting paravirtualized kernel on KVM",
      "$ lscpu",
      "Architecture:                    x86_64",
      "Hypervisor vendor:               KVM",
      "Virtualization type:             full",
      "Flags:                           fpu vme de pse tsc msr pae mce cx8 apic sep hypervisor lahf_lm",
      "$ sudo dmidecode -t system",
      "System Information",
      "\tManufacturer: QEMU",
      "\tProduct Name: Standard PC (Q35 + ICH9, 2009)",
  });
  const auto r = read(text);
  SCOPED_TRACE(dump(r));
  const auto h = all<diagnose::HypervisorSeen>(r);
  ASSERT_EQ(h.size(), 6u);
  EXPECT_EQ(h[0].what, "DMI: QEMU Standard PC (Q35 + ICH9, 2009)");
  EXPECT_EQ(h[1].what, "Hypervisor detected: KVM");
  EXPECT_EQ(h[2].what, "Booting paravirtualized kernel on KVM");
  EXPECT_EQ(h[3].what, "Hypervisor vendor: KVM");
  EXPECT_EQ(h[4].what, "CPU flag 'hypervisor' (lscpu / cpuinfo)");
  EXPECT_EQ(h[5].what, "Manufacturer: QEMU");
  EXPECT_EQ(where<diagnose::HypervisorSeen>(r)[5].line, 12u);
  EXPECT_EQ(detect_system_tools(text), Tools{"hypervisor"});

  // bare metal says so; an EC2 metal instance is no VM; prose about KVM is no sign
  const std::string metal = join({"[    0.000000] DMI: Amazon EC2 p4d.metal/Not Specified, BIOS 1.0 10/16/2017",
                                  "[    0.000000] Booting paravirtualized kernel on bare hardware",
                                  "8x H100 inside KVM VMs: all-reduce swings from ~365 to ~40 GB/s",
                                  "the guest kernel booted (`Hypervisor detected: KVM`, kvm-clock, virtio-mmio)"});
  EXPECT_TRUE(read(metal).facts.empty()) << dump(read(metal));
  EXPECT_TRUE(detect_system_tools(metal).empty());
}

// ───────────────────────────── p2pBandwidthLatencyTest ─────────────────────────────

// The CUDA sample's output on a 3-GPU PCIe box where GPU 2 sits behind another root complex (format of the
// cuda-samples output pasted in public repositories; values are this fixture's own).
const std::string kP2pTest = join({
    "$ ./p2pBandwidthLatencyTest",
    "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]",
    "Device: 0, NVIDIA RTX A6000, pciBusID: 1, pciDeviceID: 0, pciDomainID:0",
    "Device: 1, NVIDIA RTX A6000, pciBusID: 21, pciDeviceID: 0, pciDomainID:0",
    "Device: 2, NVIDIA RTX A6000, pciBusID: c1, pciDeviceID: 0, pciDomainID:0",
    "Device=0 CAN Access Peer Device=1",
    "Device=0 CANNOT Access Peer Device=2",
    "Device=1 CAN Access Peer Device=0",
    "Device=1 CANNOT Access Peer Device=2",
    "Device=2 CANNOT Access Peer Device=0",
    "Device=2 CANNOT Access Peer Device=1",
    "",
    "***NOTE: In case a device doesn't have P2P access to other one, it falls back to normal memcopy procedure.",
    "So you can see lesser Bandwidth (GB/s) and unstable Latency (us) in those cases.",
    "",
    "P2P Connectivity Matrix",
    "     D\\D     0     1     2",
    "     0\t     1     1     0",
    "     1\t     1     1     0",
    "     2\t     0     0     1",
    "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)",
    "   D\\D     0      1      2 ",
    "     0 672.41  11.48  11.02 ",
    "     1  11.52 674.03  11.05 ",
    "     2  11.01  11.04 673.18 ",
    "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)",
    "   D\\D     0      1      2 ",
    "     0 671.10  25.23  11.01 ",
    "     1  25.24 672.88  11.03 ",
    "     2  11.02  11.05 674.46 ",
    "Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)",
    "   D\\D     0      1      2 ",
    "     0 676.25  15.92  15.71 ",
    "     1  15.90 677.41  15.63 ",
    "     2  15.68  15.70 676.80 ",
    "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)",
    "   D\\D     0      1      2 ",
    "     0 675.93  50.31  15.69 ",
    "     1  50.35 676.12  15.66 ",
    "     2  15.70  15.72 677.04 ",
    "P2P=Disabled Latency Matrix (us)",
    "   GPU     0      1      2 ",
    "     0   1.61  13.40  14.12 ",
    "     1  13.52   1.58  14.30 ",
    "     2  14.05  14.21   1.63 ",
    "",
    "   CPU     0      1      2 ",
    "     0   2.95   8.11   8.20 ",
    "     1   8.04   2.87   8.15 ",
    "     2   8.31   8.26   2.99 ",
    "P2P=Enabled Latency (P2P Writes) Matrix (us)",
    "   GPU     0      1      2 ",
    "     0   1.60   1.21  14.10 ",
    "     1   1.19   1.57  14.27 ",
    "     2  14.07  14.19   1.62 ",
    "",
    "   CPU     0      1      2 ",
    "     0   2.97   2.31   8.18 ",
    "     1   2.29   2.90   8.17 ",
    "     2   8.30   8.28   3.01 ",
    "",
    "NOTE: The CUDA Samples are not meant for performance measurements. Results may vary when GPU Boost is enabled.",
});

TEST(SystemToolsP2pTest, DevicesPeerChecksAndEveryMatrix) {
  const auto r = read(kP2pTest);
  SCOPED_TRACE(dump(r));
  EXPECT_TRUE(r.notes.empty());
  const auto gpus = all<diagnose::GpuSeen>(r);
  ASSERT_EQ(gpus.size(), 3u);
  EXPECT_EQ(gpus[0].name, "NVIDIA RTX A6000");
  EXPECT_EQ(gpus[0].index, 0);
  EXPECT_EQ(gpus[0].bus_id, "1");
  EXPECT_EQ(gpus[2].bus_id, "c1");

  const auto peers = all<diagnose::P2pStatus>(r);
  ASSERT_EQ(peers.size(), 6u);  // the connectivity matrix says the same as the CAN / CANNOT lines
  std::map<std::pair<std::string, std::string>, std::string> status;
  for (const auto& p : peers) {
    EXPECT_EQ(p.access, "cuda");
    status[{p.a, p.b}] = p.status;
  }
  EXPECT_EQ((status[{"GPU0", "GPU1"}]), "OK");
  EXPECT_EQ((status[{"GPU1", "GPU0"}]), "OK");
  EXPECT_EQ((status[{"GPU0", "GPU2"}]), "NS");
  EXPECT_EQ((status[{"GPU2", "GPU1"}]), "NS");

  const auto m = all<diagnose::P2pMeasurement>(r);
  ASSERT_EQ(m.size(), 6u * 6u);  // 4 bandwidth + 2 latency matrices, 6 ordered pairs each; CPU halves not read
  auto find = [&](int a, int b, bool peer, bool bi, bool latency) -> const diagnose::P2pMeasurement* {
    for (const auto& x : m)
      if (x.a == a && x.b == b && x.peer_access == peer && x.bidirectional == bi && x.latency_us.has_value() == latency)
        return &x;
    return nullptr;
  };
  const auto* uni_off = find(0, 1, false, false, false);
  ASSERT_NE(uni_off, nullptr);
  EXPECT_DOUBLE_EQ(*uni_off->gbps, 11.48);
  EXPECT_FALSE(uni_off->latency_us);
  const auto* uni_on = find(1, 0, true, false, false);
  ASSERT_NE(uni_on, nullptr);
  EXPECT_DOUBLE_EQ(*uni_on->gbps, 25.24);
  const auto* bi_on = find(0, 1, true, true, false);
  ASSERT_NE(bi_on, nullptr);
  EXPECT_DOUBLE_EQ(*bi_on->gbps, 50.31);
  const auto* bi_off = find(2, 0, false, true, false);
  ASSERT_NE(bi_off, nullptr);
  EXPECT_DOUBLE_EQ(*bi_off->gbps, 15.68);
  const auto* lat_on = find(0, 1, true, false, true);
  ASSERT_NE(lat_on, nullptr);
  EXPECT_DOUBLE_EQ(*lat_on->latency_us, 1.21);
  EXPECT_FALSE(lat_on->gbps);
  const auto* lat_off = find(1, 2, false, false, true);
  ASSERT_NE(lat_off, nullptr);
  EXPECT_DOUBLE_EQ(*lat_off->latency_us, 14.30);  // the GPU half, not the CPU's 8.15
  EXPECT_EQ(detect_system_tools(kP2pTest), Tools{"p2pBandwidthLatencyTest"});
}

// The older sample's headings (no "(P2P Writes)") and a matrix cut mid-row.
TEST(SystemToolsP2pTest, OlderHeadingsAndCutRow) {
  const std::string text = join({
      "Unidirectional P2P=Enabled Bandwidth Matrix (GB/s)",
      "   D\\D     0      1      2      3 ",
      "     0 752.60  68.46  29.10  28.97 ",
      "     1  68.51 735.64  28.9",
  });
  const auto r = read(text);
  SCOPED_TRACE(dump(r));
  const auto m = all<diagnose::P2pMeasurement>(r);
  ASSERT_EQ(m.size(), 5u);  // 3 of row 0; 68.51 and the cut "28.9" of row 1 (its last column missing)
  EXPECT_TRUE(m[0].peer_access);
  EXPECT_FALSE(m[0].bidirectional);
  EXPECT_EQ(m[3].a, 1);
  EXPECT_EQ(m[3].b, 0);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("line 4:"), std::string::npos);
}

// ───────────────────────────── ibstat / ibstatus / ibv_devinfo ─────────────────────────────

TEST(SystemToolsIb, IbstatPortsAsNics) {
  const std::string text = join({
      "$ ibstat",
      "CA 'mlx5_0'",
      "\tCA type: MT4123",
      "\tNumber of ports: 1",
      "\tFirmware version: 20.31.1014",
      "\tHardware version: 0",
      "\tNode GUID: 0xb83fd203005682a2",
      "\tSystem image GUID: 0xb83fd203005682a2",
      "\tPort 1:",
      "\t\tState: Active",
      "\t\tPhysical state: LinkUp",
      "\t\tRate: 200",
      "\t\tBase lid: 12",
      "\t\tLMC: 0",
      "\t\tSM lid: 5",
      "\t\tCapability mask: 0x2651e848",
      "\t\tPort GUID: 0xb83fd203005682a2",
      "\t\tLink layer: InfiniBand",
      "CA 'mlx5_1'",
      "\tCA type: MT4125",
      "\tNumber of ports: 2",
      "\tPort 1:",
      "\t\tState: Down",
      "\t\tPhysical state: Disabled",
      "\t\tRate: 40",
      "\t\tLink layer: Ethernet",
      "\tPort 2:",
      "\t\tState: Active",
      "\t\tPhysical state: LinkUp",
      "\t\tRate: 100 Gb/sec (4X EDR)",
      "\t\tLink layer: Ethernet",
  });
  const auto r = read(text);
  SCOPED_TRACE(dump(r));
  const auto n = all<diagnose::NicSeen>(r);
  ASSERT_EQ(n.size(), 3u);
  EXPECT_EQ(n[0].name, "mlx5_0");
  EXPECT_EQ(n[0].line_gbit, 200);
  EXPECT_EQ(n[0].link_layer, "IB");
  EXPECT_EQ(n[0].state, "Active");
  EXPECT_FALSE(n[0].used_by);
  EXPECT_EQ(where<diagnose::NicSeen>(r)[0].line, 10u);
  EXPECT_EQ(n[1].name, "mlx5_1");
  EXPECT_EQ(n[1].state, "Down");
  EXPECT_EQ(n[1].link_layer, "RoCE");
  EXPECT_EQ(n[2].name, "mlx5_1:2");
  EXPECT_EQ(n[2].line_gbit, 100);
  EXPECT_EQ(detect_system_tools(text), Tools{"ibstat"});
}

TEST(SystemToolsIb, IbvDevinfoVerboseAndIbstatus) {
  const std::string text = join({
      "$ ibv_devinfo -v",
      "hca_id:\tmlx5_2",
      "\ttransport:\t\t\tInfiniBand (0)",
      "\tfw_ver:\t\t\t\t16.27.1016",
      "\tvendor_part_id:\t\t\t4119",
      "\tphys_port_cnt:\t\t\t1",
      "\t\tport:\t1",
      "\t\t\tstate:\t\t\tPORT_ACTIVE (4)",
      "\t\t\tmax_mtu:\t\t4096 (5)",
      "\t\t\tactive_mtu:\t\t1024 (3)",
      "\t\t\tlink_layer:\t\tEthernet",
      "\t\t\tactive_width:\t\t4X (2)",
      "\t\t\tactive_speed:\t\t25.0 Gbps (32)",
      "\t\t\tphys_state:\t\tLINK_UP (5)",
      "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0ac0:ebff:feda:e2e6",
      "",
      "$ ibstatus",
      "Infiniband device 'mlx5_0' port 1 status:",
      "\tdefault gid:\t fe80:0000:0000:0000:c470:bd03:00cf:4964",
      "\tbase lid:\t 0x30",
      "\tsm lid:\t\t 0x30",
      "\tstate:\t\t 4: ACTIVE",
      "\tphys state:\t 5: LinkUp",
      "\trate:\t\t 200 Gb/sec (4X HDR)",
      "\tlink_layer:\t InfiniBand",
  });
  const auto r = read(text);
  SCOPED_TRACE(dump(r));
  const auto n = all<diagnose::NicSeen>(r);
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0].name, "mlx5_2");
  EXPECT_EQ(n[0].state, "Active");
  EXPECT_EQ(n[0].link_layer, "RoCE");
  EXPECT_EQ(n[0].line_gbit, 100);  // 4X × 25 Gb/s
  EXPECT_EQ(n[1].name, "mlx5_0");
  EXPECT_EQ(n[1].state, "Active");
  EXPECT_EQ(n[1].line_gbit, 200);
  EXPECT_EQ(n[1].link_layer, "IB");
  EXPECT_EQ(detect_system_tools(text), Tools{"ibstat"});
}

// `ibstat | grep mlx5` (as in stas00/ml-engineering's network debug chapter): the devices alone.
TEST(SystemToolsIb, DeviceNamesWithoutPorts) {
  const std::string text = join({"$ ibstat | grep mlx5", "CA 'mlx5_0'", "CA 'mlx5_1'", "CA 'mlx5_bond_0'"});
  const auto r = read(text);
  SCOPED_TRACE(dump(r));
  const auto n = all<diagnose::NicSeen>(r);
  ASSERT_EQ(n.size(), 3u);
  EXPECT_EQ(n[0].name, "mlx5_0");
  EXPECT_FALSE(n[0].state);
  EXPECT_FALSE(n[0].line_gbit);
  EXPECT_FALSE(n[0].link_layer);
  EXPECT_EQ(n[2].name, "mlx5_bond_0");
  EXPECT_EQ(where<diagnose::NicSeen>(r)[1].line, 3u);
}

// ───────────────────────────── detection ─────────────────────────────

TEST(SystemToolsDetect, SeveralToolsInOneFileInCanonicalOrder) {
  const std::string text = kP2pTest + "$ dmesg | grep Xid\n[ 12.0] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off "
                           "the bus.\n" + kQuery535 + "\n$ lspci -vvv\n" + kLspciVvv;
  EXPECT_EQ(detect_system_tools(text), (Tools{"lspci", "nvidia-smi -q", "kernel log", "p2pBandwidthLatencyTest"}));
  const auto r = read(text);
  // facts come in line order whatever tool read them
  std::size_t last = 0;
  for (const auto& f : r.facts.all()) {
    EXPECT_GE(f.where.line, last);
    last = f.where.line;
  }
}

TEST(SystemToolsDetect, NothingInOtherEvidence) {
  const std::vector<std::string> others = {
      // an NCCL debug log
      join({"host-a:13313:13988 [0] NCCL INFO NCCL version 2.18.3+cuda12.1",
            "host-a:13313:13988 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE ; OOB eth0:192.0.2.1<0>",
            "host-a:13313:13988 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
            "host-a:13313:13988 [0] NCCL INFO Connected all rings"}),
      // an nccl-tests output
      join({"# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
            "validation: 1 graph: 0",
            "#",
            "# Using devices",
            "#  Rank  0 Group  0 Pid  12345 on     host-a device  0 [0x3b] NVIDIA A100-SXM4-80GB",
            "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
            "busbw #wrong",
            "   134217728      33554432     float     sum      -1   1104.3  121.54  121.54      0   1102.9  121.70  "
            "121.70      0",
            "# Avg bus bandwidth    : 98.1234"}),
      // nvidia-smi topo -m alone
      join({"        GPU0    GPU1    NIC0    CPU Affinity    NUMA Affinity   GPU NUMA ID",
            "GPU0     X      NV12    PXB     0-63    0               N/A", "GPU1    NV12     X      PXB     0-63    0    "
                                                                         "           N/A",
            "NIC0    PXB     PXB      X", "", "Legend:", "", "  X    = Self",
            "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)",
            "  NV#  = Connection traversing a bonded set of # NVLinks", "", "NIC Legend:", "", "  NIC0: mlx5_0"}),
      // a training log
      join({"[rank0]:[W reducer.cpp:1360] Warning: find_unused_parameters=True was specified in DDP constructor",
            "{'loss': 2.3412, 'learning_rate': 4.9e-05, 'epoch': 0.02}",
            " 12%|█▏        | 120/1000 [01:02<07:38,  1.92it/s]",
            "Epoch: [0][ 10/5005]\tTime  0.512 ( 0.873)\tData  0.002 ( 0.301)\tLoss 6.9127e+00 (6.9239e+00)"}),
      // a shell session with a PyTorch watchdog error
      join({"$ torchrun --nproc_per_node 8 train.py",
            "[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800411 "
            "milliseconds before timing out."}),
  };
  for (const auto& text : others) {
    SCOPED_TRACE(text.substr(0, 80));
    EXPECT_TRUE(detect_system_tools(text).empty());
    const auto r = read(text);
    EXPECT_TRUE(r.facts.empty()) << dump(r);
  }
}

// ───────────────────────────── damaged input ─────────────────────────────

TEST(SystemToolsDamaged, CutLinesJunkAndEmptyTextNeverThrow) {
  std::vector<std::string> inputs = {
      "",
      "\n\n\r\n",
      "LnkSta:",
      "LnkCap:\tPort #0, Speed ",
      "ACSCtl:",
      "NVRM: Xid (PCI:0000:3b",
      "NVRM: Xid (PCI:0000:3b:00): ",
      "GPU 0: ",
      "Link 99999999999999999999: 1e999 GB/s",
      "Device=0 CAN Access Peer Device=",
      "Device: 0, , pciBusID:",
      "CA '",
      "hca_id:",
      "Attached GPUs : lots",
      "GPU 00000000:3B:00.0\n    GPU Link Info\n        PCIe Generation\n            Max : \n",
      "P2P=Enabled Latency Matrix (us)\n   GPU\n     0\n",
      " GPU0 X OK OK OK OK OK OK OK OK OK",
      std::string(100000, 'x'),
      std::string("\0\xff\xfe\x01NVRM: Xid (\x80\x81): 1, \xc3", 24),
      std::string(5000, '\n') + "\tACSCtl:\tSrcValid+",
  };
  std::string binary;
  for (int i = 0; i < 4096; ++i) binary += static_cast<char>((i * 131) & 0xff);
  inputs.push_back(binary);
  // every fixture cut at every 97th byte
  for (const std::string* f : {&kLspciVvv, &kQuery535, &kP2pTest})
    for (std::size_t cut = 0; cut < f->size(); cut += 97) inputs.push_back(f->substr(0, cut));
  for (const auto& text : inputs) {
    EXPECT_NO_THROW({
      const auto r = read(text);
      const auto tools = detect_system_tools(text);
      nlohmann::json j = r.facts;
      (void)j.dump();
      (void)tools;
    });
  }
  EXPECT_TRUE(read("ACSCtl:").facts.empty());
  EXPECT_EQ(read("ACSCtl:").notes.size(), 1u);
  EXPECT_TRUE(read("NVRM: Xid (PCI:0000:3b").facts.empty());
  EXPECT_EQ(read("NVRM: Xid (PCI:0000:3b").notes.size(), 1u);
}

TEST(SystemToolsDamaged, PromptsAndCrlfAroundAcsLines) {
  const std::string text =
      "root@host-a:~# lspci -vvv -s 03:00.0\r\n"
      "03:00.0 PCI bridge: PLX Technology, Inc. PEX 8747 48-Lane, 5-Port PCI Express Gen 3 (8.0 GT/s) Switch (rev ca)\r\n"
      "\tCapabilities: [f24 v1] Access Control Services\r\n"
      "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\r\n"
      "root@host-a:~# \r\n";
  const auto r = read(text);
  SCOPED_TRACE(dump(r));
  const auto acs = all<diagnose::AcsControl>(r);
  ASSERT_EQ(acs.size(), 1u);
  EXPECT_EQ(acs[0].device, "03:00.0");
  EXPECT_TRUE(acs[0].cmplt_redir);
  EXPECT_FALSE(acs[0].direct_trans);
  EXPECT_TRUE(r.notes.empty());
}

// ───────────────────────────── the shared corpus ─────────────────────────────

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST(SystemToolsCorpus, ExpectedFactsAndNoSpuriousOnes) {
  const fs::path dir = SCALESCOPE_SHARED_CORPUS_DIR;
  if (!fs::is_directory(dir)) GTEST_SKIP() << "shared corpus not found at " << dir;

  const fs::path acs = dir / "cases/nccl304-acs-enabled-plx-gdr-crash/lspci.txt";
  const fs::path autodl = dir / "topo/autodl_2x2080ti_pix_with_p2p_matrix.txt";
  const fs::path club = dir / "topo/club-3090-1125_2gpu_NODE_markdown_indented_wrapped_legend_with_p2p.txt";

  {
    const std::string text = slurp(acs);
    const auto r = read_system_tools(text, acs.filename().string());
    SCOPED_TRACE(dump(r));
    ASSERT_EQ(r.facts.size(), 1u);
    const auto a = all<diagnose::AcsControl>(r);
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].device, "");
    EXPECT_FALSE(a[0].device_name);
    EXPECT_TRUE(a[0].src_valid);
    EXPECT_FALSE(a[0].trans_blk);
    EXPECT_TRUE(a[0].req_redir);
    EXPECT_TRUE(a[0].cmplt_redir);
    EXPECT_TRUE(a[0].upstream_fwd);
    EXPECT_FALSE(a[0].egress_ctrl);
    EXPECT_FALSE(a[0].direct_trans);
    EXPECT_EQ(r.facts.all()[0].where.line, 1u);
    EXPECT_EQ(r.facts.all()[0].where.source, "lspci.txt");
    EXPECT_TRUE(r.notes.empty());
    EXPECT_EQ(detect_system_tools(text), Tools{"lspci"});
  }
  for (const auto& [path, access, first_row] :
       {std::tuple{autodl, std::string("prop"), std::size_t{18}}, std::tuple{club, std::string(""), std::size_t{20}}}) {
    const std::string text = slurp(path);
    const auto r = read_system_tools(text, path.filename().string());
    SCOPED_TRACE(path.string() + "\n" + dump(r));
    const auto p = all<diagnose::P2pStatus>(r);
    ASSERT_EQ(p.size(), 2u);
    EXPECT_EQ(r.facts.size(), 2u);  // nothing from the topo -m matrix before it
    EXPECT_EQ(p[0].a, "GPU0");
    EXPECT_EQ(p[0].b, "GPU1");
    EXPECT_EQ(p[1].a, "GPU1");
    EXPECT_EQ(p[1].b, "GPU0");
    for (const auto& s : p) {
      EXPECT_EQ(s.status, "NS");
      EXPECT_EQ(s.access, access);
    }
    EXPECT_EQ(where<diagnose::P2pStatus>(r)[0].line, first_row);
    EXPECT_TRUE(r.notes.empty());
    EXPECT_EQ(detect_system_tools(text), Tools{"nvidia-smi topo -p2p"});
  }

  std::size_t others = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const fs::path& p = entry.path();
    if (p == acs || p == autodl || p == club) continue;
    ++others;
    const std::string text = slurp(p);
    const auto r = read_system_tools(text, p.filename().string());
    EXPECT_TRUE(r.facts.empty()) << p << "\n" << dump(r);
    EXPECT_TRUE(r.notes.empty()) << p << "\n" << dump(r);
    EXPECT_TRUE(detect_system_tools(text).empty()) << p;
  }
  EXPECT_GE(others, 100u);  // the corpus was read, not an empty folder
}

// nvidia-smi's default table and iperf's client output (issue #36: files a user pastes that were refused before).
TEST(SystemTools, NvidiaSmiTableGivesGpusTheirCountAndUtilisation) {
  const std::string text =
      "$ nvidia-smi\n"
      "+-----------------------------------------------------------------------------+\n"
      "| NVIDIA-SMI 535.54.03    Driver Version: 535.54.03    CUDA Version: 12.2     |\n"
      "|-------------------------------+----------------------+----------------------+\n"
      "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
      "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n"
      "|===============================+======================+======================|\n"
      "|   0  Tesla T4            Off  | 00000000:00:04.0 Off |                    0 |\n"
      "| N/A   60C    P0    70W /  70W |  14000MiB / 15360MiB |     97%      Default |\n"
      "+-------------------------------+----------------------+----------------------+\n"
      "|   1  Tesla T4            Off  | 00000000:00:05.0 Off |                    0 |\n"
      "| N/A   45C    P8    10W /  70W |      3MiB / 15360MiB |      0%      Default |\n"
      "+-------------------------------+----------------------+----------------------+\n";
  const auto r = read(text);
  const auto gpus = all<diagnose::GpuSeen>(r);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].name, "Tesla T4");
  EXPECT_EQ(gpus[1].index, 1);
  EXPECT_EQ(gpus[1].bus_id, "00000000:00:05.0");
  const auto count = all<diagnose::GpuCount>(r);
  ASSERT_EQ(count.size(), 1u);
  EXPECT_EQ(count[0].count, 2);
  EXPECT_EQ(count[0].scope, "exist");
  const auto util = all<diagnose::Measurement>(r);
  ASSERT_EQ(util.size(), 2u);
  EXPECT_DOUBLE_EQ(util[0].value, 97);
  EXPECT_DOUBLE_EQ(util[1].value, 0);
  EXPECT_NE(std::find(detect_system_tools(text).begin(), detect_system_tools(text).end(), "nvidia-smi"),
            detect_system_tools(text).end());
}

TEST(SystemTools, IperfGivesTheMeasuredNetworkRate) {
  const auto r = read("[ ID] Interval       Transfer     Bandwidth\n"
                      "[  3]  0.0-10.0 sec  1.09 GBytes   937 Mbits/sec\n"
                      "[  3] 10.0-20.0 sec  1.09 GBytes   938 Mbits/sec\n"
                      "[  3] 20.0-30.0 sec  1.08 GBytes   930 Mbits/sec\n");
  const auto nics = all<diagnose::NicSeen>(r);
  ASSERT_EQ(nics.size(), 1u);
  EXPECT_NEAR(*nics[0].line_gbit, 0.937, 1e-9);
  EXPECT_TRUE(read("[1] the first reference, 3 sec of reading\n").facts.empty());
}

TEST(SystemTools, FailedNodeHealthChecksNameTheNodeAndTheFigure) {
  const std::string text =
      "## host-a\n"
      "ERROR:  nhc:  Health check failed:  check_ib_bw_gdr: ib_write_bw, IB=mlx5_ib0,\n"
      "  IB BW (expected > 380 Gbps, but measured 351.09 Gbps. FaultCode: NHC2003\n"
      "## host-b\n"
      "ERROR:  nhc:  Health check failed:  check_ecc: GPU id 3: SRAM Uncorrectable ECC error count detected, (0,1).\n";
  const auto r = read(text);
  const auto c = all<diagnose::Claim>(r);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].kind, "health-check-failed");
  EXPECT_EQ(c[0].detail.rfind("host-a: check_ib_bw_gdr", 0), 0u) << c[0].detail;
  EXPECT_EQ(c[1].detail.rfind("host-b: check_ecc", 0), 0u) << c[1].detail;
  const auto m = all<diagnose::Measurement>(r);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_DOUBLE_EQ(m[0].value, 351.09);
  EXPECT_EQ(m[0].unit, "Gbps");
  EXPECT_EQ(m[0].dims.at("host"), "host-a");
  EXPECT_EQ(m[0].dims.at("expected"), "> 380 Gbps");
  EXPECT_TRUE(read("The health check passed on every node.\n").facts.empty());
}
