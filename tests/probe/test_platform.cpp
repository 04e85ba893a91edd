// The platform probe over fixture trees written by the tests (a bridge's config space with ACS, IOMMU groups, CPU
// flags and DMI of a VM, a small /dev/shm, RDMA without the peer-memory module, network interfaces), the facts it
// gives, and the causes the engine then names. Also once on this machine's own /sys and /proc: it must not fail.

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "diagnose/engine.h"
#include "probe/platform.h"
#include "support/scratch_dir.h"

namespace {

using namespace scalescope;
namespace fs = std::filesystem;

void write(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << s;
}

// 4096 bytes of config space: the standard header, then extended capabilities — AER at 0x100 pointing to ACS at
// 0x148 with control `acs`.
std::string config_with_acs(std::uint16_t acs) {
  std::string c(4096, '\0');
  auto put32 = [&](std::size_t off, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) c[off + i] = static_cast<char>((v >> (8 * i)) & 0xff);
  };
  put32(0x100, 0x0001u | (1u << 16) | (0x148u << 20));  // AER, version 1, next 0x148
  put32(0x148, 0x000du | (1u << 16));                   // ACS, version 1, last
  c[0x148 + 4] = 0x5f;                                  // capability register
  c[0x148 + 6] = static_cast<char>(acs & 0xff);
  c[0x148 + 7] = static_cast<char>(acs >> 8);
  return c;
}

fs::path vm_in_a_container(const std::string& name) {
  const auto root = scalescope::testing::scratch_dir(name);
  write(root / "sys/bus/pci/devices/0000:00:01.0/class", "0x060400\n");
  write(root / "sys/bus/pci/devices/0000:00:01.0/config", config_with_acs(0x001d));  // SV RR CR UF: redirect on
  write(root / "sys/bus/pci/devices/0000:00:02.0/class", "0x060400\n");
  write(root / "sys/bus/pci/devices/0000:00:02.0/config", config_with_acs(0x0000));
  write(root / "sys/bus/pci/devices/0000:00:03.0/class", "0x060400\n");
  write(root / "sys/bus/pci/devices/0000:00:03.0/config", std::string(64, '\0'));  // not root: header only
  write(root / "sys/bus/pci/devices/0000:3b:00.0/class", "0x030200\n");  // a GPU: not a bridge
  write(root / "sys/kernel/iommu_groups/0/type", "DMA-FQ\n");
  write(root / "sys/kernel/iommu_groups/1/type", "identity\n");
  write(root / "proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu vme sse2 hypervisor avx\n");
  write(root / "sys/class/dmi/id/sys_vendor", "QEMU\n");
  write(root / "dev-shm-bytes", "67108864\n");
  write(root / "ipc-private", "1\n");
  write(root / ".dockerenv", "");
  write(root / "sys/class/infiniband/mlx5_0/node_type", "1: CA\n");
  write(root / "proc/modules", "nvidia_uvm 1 0 - Live 0x0\nnvidia 1 0 - Live 0x0\n");
  write(root / "sys/class/net/eth0/operstate", "up\n");
  write(root / "sys/class/net/eth0/speed", "25000\n");
  write(root / "sys/class/net/lo/operstate", "unknown\n");
  write(root / "sys/class/net/docker0/operstate", "up\n");
  return root;
}

TEST(PlatformProbe, ReadsAcsIommuVmShmRdmaAndNics) {
  const auto root = vm_in_a_container("probe_vm");
  const auto r = probe::read_platform({root.string(), ""});
  ASSERT_EQ(r.bridges.size(), 2u);
  EXPECT_EQ(r.bridges[0].bdf, "0000:00:01.0");
  EXPECT_EQ(r.bridges[0].control, 0x001d);
  EXPECT_TRUE(r.bridges[0].redirect());
  EXPECT_FALSE(r.bridges[1].redirect());
  EXPECT_EQ(r.bridges_unreadable, 1);
  EXPECT_EQ(r.iommu, "translated");  // one DMA group is enough for peer traffic to be translated
  EXPECT_NE(r.hypervisor.find("hypervisor"), std::string::npos);
  EXPECT_NE(r.hypervisor.find("QEMU"), std::string::npos);
  ASSERT_TRUE(r.shm_bytes);
  EXPECT_EQ(*r.shm_bytes, 64u * 1024 * 1024);
  EXPECT_TRUE(r.private_ipc && *r.private_ipc);
  EXPECT_TRUE(r.in_container);
  ASSERT_EQ(r.rdma_devices.size(), 1u);
  EXPECT_TRUE(r.peermem_loaded && !*r.peermem_loaded);
  ASSERT_EQ(r.nics.size(), 1u);  // lo and docker0 are not NICs NCCL would use
  EXPECT_EQ(r.nics[0].name, "eth0");
  EXPECT_DOUBLE_EQ(*r.nics[0].speed_gbit, 25.0);
  EXPECT_FALSE(r.notes.empty());  // the unreadable bridge is said

  const auto facts = probe::platform_facts(r);
  EXPECT_EQ(facts.of<diagnose::AcsControl>().size(), 2u);
  EXPECT_EQ(facts.of<diagnose::IommuMode>().size(), 1u);
  EXPECT_EQ(facts.of<diagnose::HypervisorSeen>().size(), 1u);
  EXPECT_EQ(facts.of<diagnose::GdrState>().size(), 1u);
  const auto d = diagnose::diagnose(facts);
  // What the machine alone shows: a VM, ACS redirection, and a small /dev/shm in a container — each a cause.
  std::vector<std::string> named;
  if (d.primary) named.push_back(d.primary->cause);
  for (const auto& c : d.contributing) named.push_back(c.cause);
  auto has = [&](const std::string& id) { return std::find(named.begin(), named.end(), id) != named.end(); };
  EXPECT_TRUE(has("container-ipc-shm")) << ::testing::PrintToString(named);
  EXPECT_TRUE(has("virtualised-topology")) << ::testing::PrintToString(named);
  fs::remove_all(root);
}

TEST(PlatformProbe, AHealthyBareMetalHostGivesNoCause) {
  const auto root = scalescope::testing::scratch_dir("probe_bare");
  write(root / "sys/bus/pci/devices/0000:00:01.0/class", "0x060400\n");
  write(root / "sys/bus/pci/devices/0000:00:01.0/config", config_with_acs(0x0000));
  write(root / "proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 iommu=pt\n");
  write(root / "proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu vme sse2 avx\n");
  write(root / "sys/class/dmi/id/sys_vendor", "Supermicro\n");
  write(root / "dev-shm-bytes", "68719476736\n");
  write(root / "ipc-private", "0\n");
  write(root / "proc/modules", "nvidia_peermem 1 0 - Live 0x0\n");
  write(root / "sys/class/infiniband/mlx5_0/node_type", "1: CA\n");
  const auto r = probe::read_platform({root.string(), ""});
  EXPECT_EQ(r.iommu, "passthrough");
  EXPECT_TRUE(r.hypervisor.empty());
  EXPECT_FALSE(r.in_container);
  EXPECT_TRUE(r.peermem_loaded && *r.peermem_loaded);
  const auto facts = probe::platform_facts(r);
  EXPECT_TRUE(facts.of<diagnose::GdrState>().empty());
  EXPECT_TRUE(facts.of<diagnose::HypervisorSeen>().empty());
  const auto d = diagnose::diagnose(facts);
  for (const auto& c : d.contributing) EXPECT_NE(c.cause, "container-ipc-shm");
  if (d.primary) {
    EXPECT_NE(d.primary->cause, "container-ipc-shm");
    EXPECT_NE(d.primary->cause, "virtualised-topology");
    EXPECT_NE(d.primary->cause, "p2p-blocked-acs-iommu");
  }
  fs::remove_all(root);
}

TEST(PlatformProbe, ThisMachineIsReadWithoutFailing) {
  const auto r = probe::read_platform();
  nlohmann::json j = r;
  EXPECT_TRUE(j.contains("bridges"));
  EXPECT_TRUE(j.contains("notes"));
  (void)probe::platform_facts(r);
}

}  // namespace

#include "probe/gpu_health.h"

namespace {

probe::GpuProbes four_gpus_one_slow() {
  probe::GpuProbes p;
  for (int i = 0; i < 4; ++i) {
    probe::CopyProbe c;
    c.device = i;
    c.bus_id = "0000:0" + std::to_string(i) + ":00.0";
    c.name = "NVIDIA H100 80GB HBM3";
    c.h2d_gbps = i == 2 ? 13.1 : 53.0;
    c.nvml.pcie_gen = i == 2 ? 4 : 5;  // GPU2's link trained down to Gen4 x8 under load
    c.nvml.pcie_width = i == 2 ? 8 : 16;
    c.nvml.pcie_max_gen = 5;
    c.nvml.pcie_max_width = 16;
    p.copies.push_back(c);
    probe::GemmProbe g;
    g.device = i;
    g.bus_id = c.bus_id;
    g.tflops = i == 3 ? 520 : 640;  // GPU3 power-capped
    g.nvml.sm_mhz = i == 3 ? 1410 : 1980;
    g.nvml.max_sm_mhz = 1980;
    g.nvml.clock_event_reasons = i == 3 ? 0x4 : 0x0;
    p.gemms.push_back(g);
  }
  return p;
}

TEST(GpuProbes, ThrottleReasonsAreNamedAsNvidiaSmiDoes) {
  EXPECT_EQ(probe::clock_event_reason_names(0x4 | 0x40), (std::vector<std::string>{"SW Power Cap", "HW Thermal Slowdown"}));
  EXPECT_TRUE(probe::clock_event_reason_names(0).empty());
}

TEST(GpuProbes, ASlowGpuIsAStragglerAndADownTrainedLinkIsDegraded) {
  const auto p = four_gpus_one_slow();
  const auto facts = probe::gpu_probe_facts(p);
  const auto stragglers = facts.of<diagnose::Straggler>();
  ASSERT_EQ(stragglers.size(), 1u);
  EXPECT_NE(stragglers[0].fact.who.find("GPU3"), std::string::npos);
  EXPECT_NEAR(*stragglers[0].fact.compute_skew, 640.0 / 520 - 1, 1e-9);
  const auto clocks = facts.of<diagnose::GpuClocks>();
  ASSERT_EQ(clocks.size(), 4u);
  EXPECT_EQ(clocks[3].fact.active_throttle_reasons, std::vector<std::string>{"SW Power Cap"});
  EXPECT_EQ(facts.of<diagnose::PcieLinkState>().size(), 4u);
  const auto d = diagnose::diagnose(facts);
  std::vector<std::string> named;
  if (d.primary) named.push_back(d.primary->cause);
  for (const auto& c : d.contributing) named.push_back(c.cause);
  auto has = [&](const std::string& id) { return std::find(named.begin(), named.end(), id) != named.end(); };
  EXPECT_TRUE(has("pcie-link-degraded")) << ::testing::PrintToString(named);
  EXPECT_TRUE(has("straggler")) << ::testing::PrintToString(named);
  nlohmann::json j = p;
  EXPECT_EQ(j["gemms"][3]["nvml"]["clock_event_reasons"][0], "SW Power Cap");
  EXPECT_NE(probe::render_gpu_probes(p).find("SW Power Cap"), std::string::npos);
}

TEST(GpuProbes, EvenGpusGiveNoStraggler) {
  auto p = four_gpus_one_slow();
  for (auto& g : p.gemms) g.tflops = 640 - g.device;  // within noise
  EXPECT_TRUE(probe::gpu_probe_facts(p).of<diagnose::Straggler>().empty());
}

}  // namespace

namespace {

TEST(PlatformProbe, CountsNvidiaGpusOnTheBusAndUnderTheDriverWithoutNamingACause) {
  // Eight H100s on the bus and under the driver, one NVIDIA audio function and one other vendor's GPU: the census
  // is information (a scheduler hands out some GPUs on purpose), never a cause by itself.
  const auto root = scalescope::testing::scratch_dir("platform_gpus");
  for (int i = 0; i < 8; ++i) {
    const auto d = root / "sys/bus/pci/devices" / fmt::format("0000:{:02x}:00.0", 0x18 + i);
    write(d / "vendor", "0x10de\n");
    write(d / "class", "0x030200\n");
    write(root / "proc/driver/nvidia/gpus" / fmt::format("0000:{:02x}:00.0", 0x18 + i) / "information", "Model: H100\n");
  }
  write(root / "sys/bus/pci/devices/0000:18:00.1/vendor", "0x10de\n");
  write(root / "sys/bus/pci/devices/0000:18:00.1/class", "0x040300\n");
  write(root / "sys/bus/pci/devices/0000:c1:00.0/vendor", "0x1002\n");
  write(root / "sys/bus/pci/devices/0000:c1:00.0/class", "0x030000\n");
  const auto r = probe::read_platform({root.string(), (root / "no-shm").string()});
  EXPECT_EQ(r.nvidia_gpus.size(), 8u);
  ASSERT_TRUE(r.driver_gpus);
  EXPECT_EQ(*r.driver_gpus, 8);
  const auto facts = probe::platform_facts(r);
  int pci = 0, driver = 0;
  for (const auto& c : facts.of<diagnose::GpuCount>()) {
    pci += c.fact.scope == "pci" ? c.fact.count : 0;
    driver += c.fact.scope == "driver" ? c.fact.count : 0;
  }
  EXPECT_EQ(pci, 8);
  EXPECT_EQ(driver, 8);
  const auto d = diagnose::diagnose(facts);
  EXPECT_FALSE(d.primary && d.primary->cause == "gpu-hidden");
  fs::remove_all(root);
}

}  // namespace

namespace {

std::vector<std::string> named_causes(const diagnose::FactSet& facts) {
  const auto d = diagnose::diagnose(facts);
  std::vector<std::string> named;
  if (d.primary) named.push_back(d.primary->cause);
  for (const auto& c : d.contributing) named.push_back(c.cause);
  return named;
}

TEST(GpuPairProbe, PeerCopiesSlowerThanStagingThroughTheHostNameTheBlockedP2pPath) {
  probe::GpuProbes p;
  probe::PairProbe q;  // p2pBandwidthLatencyTest's signature of ACS redirection: P2P on slower than off
  q.a = 0;
  q.b = 1;
  q.can_access = true;
  q.works = true;
  q.p2p_gbps = 2.1;
  q.p2p_latency_us = 48;
  q.staged_gbps = 9.8;
  q.staged_latency_us = 14;
  p.pairs.push_back(q);
  const auto facts = probe::gpu_probe_facts(p);
  EXPECT_EQ(facts.of<diagnose::P2pMeasurement>().size(), 2u);
  const auto named = named_causes(facts);
  EXPECT_NE(std::find(named.begin(), named.end(), "p2p-blocked-acs-iommu"), named.end()) << ::testing::PrintToString(named);
  EXPECT_NE(probe::render_gpu_probes(p).find("GPU0 → GPU1: peer 2.1 GB/s"), std::string::npos);
}

TEST(GpuPairProbe, PeerAccessThatMovesWrongBytesIsNamed) {
  probe::GpuProbes p;
  probe::PairProbe q;
  q.a = 0;
  q.b = 2;
  q.can_access = true;
  q.works = false;
  q.staged_gbps = 20;
  q.staged_latency_us = 10;
  p.pairs.push_back(q);
  const auto facts = probe::gpu_probe_facts(p);
  EXPECT_EQ(facts.of<diagnose::P2pStatus>().size(), 1u);
  const auto named = named_causes(facts);
  ASSERT_FALSE(named.empty());
  EXPECT_EQ(named.front(), "p2p-blocked-acs-iommu");
}

TEST(GpuPairProbe, HealthyNvlinkPairsNameNothing) {
  probe::GpuProbes p;
  for (int b = 1; b < 4; ++b) {
    probe::PairProbe q;
    q.a = 0;
    q.b = b;
    q.can_access = true;
    q.works = true;
    q.p2p_gbps = 390;
    q.p2p_latency_us = 2.5;
    q.staged_gbps = 40;
    q.staged_latency_us = 12;
    p.pairs.push_back(q);
  }
  const auto named = named_causes(probe::gpu_probe_facts(p));
  EXPECT_EQ(std::find(named.begin(), named.end(), "p2p-blocked-acs-iommu"), named.end()) << ::testing::PrintToString(named);
}

}  // namespace

namespace {

TEST(GpuHealthProbe, MemoryTroubleIsShownAndACleanGpuSaysNothing) {
  probe::GpuProbes p;
  probe::GemmProbe g;
  g.device = 3;
  g.tflops = 650;
  g.nvml.remapped_correctable = 2;
  g.nvml.remapped_uncorrectable = 0;
  g.nvml.remap_pending = false;
  g.nvml.remap_failed = false;
  p.gemms.push_back(g);
  EXPECT_EQ(probe::render_gpu_probes(p).find("memory:"), std::string::npos);  // correctable remaps are routine
  p.gemms[0].nvml.remapped_uncorrectable = 1;
  p.gemms[0].nvml.remap_pending = true;
  const std::string text = probe::render_gpu_probes(p);
  EXPECT_NE(text.find("GPU3: memory: 1 rows remapped for uncorrectable errors; a row remap pending"), std::string::npos) << text;
  const nlohmann::json j = p;
  EXPECT_EQ(j["gemms"][0]["nvml"]["remapped_rows"]["pending"], true);
}

}  // namespace

namespace {

TEST(PlatformProbe, XidEventsInTheKernelLogNameTheirCause) {
  // /dev/kmsg's record format ("PRI,SEQ,USEC,FLAGS;TEXT"), as root reads it: one GPU fell off the bus.
  const auto root = scalescope::testing::scratch_dir("platform_kmsg");
  write(root / "dev/kmsg", "6,1001,5000,-;usb 1-1: new device\n"
                           "3,1002,6000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=python3, GPU has fallen off the bus.\n"
                           " SUBSYSTEM=pci\n");
  const auto r = probe::read_platform({root.string(), (root / "no-shm").string()});
  ASSERT_TRUE(r.xid_lines);
  ASSERT_EQ(r.xid_lines->size(), 1u);
  EXPECT_EQ(r.xid_lines->front().rfind("NVRM: Xid (PCI:0000:3b:00): 79", 0), 0u) << r.xid_lines->front();
  const auto facts = probe::platform_facts(r);
  ASSERT_EQ(facts.of<diagnose::XidEvent>().size(), 1u);
  EXPECT_EQ(facts.of<diagnose::XidEvent>().front().fact.code, 79);
  const auto named = named_causes(facts);
  EXPECT_NE(std::find(named.begin(), named.end(), "gpu-hidden"), named.end()) << ::testing::PrintToString(named);
  // Without the file (not root), a note says so and nothing is invented.
  fs::remove(root / "dev/kmsg");
  const auto none = probe::read_platform({root.string(), (root / "no-shm").string()});
  EXPECT_FALSE(none.xid_lines);
  bool noted = false;
  for (const auto& n : none.notes) noted |= n.find("/dev/kmsg") != std::string::npos;
  EXPECT_TRUE(noted);
  fs::remove_all(root);
}

}  // namespace
