#include "probe/platform.h"

#include <unistd.h>

#include <fcntl.h>

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "readers/system/system_tools.h"

namespace scalescope::probe {

namespace {

namespace fs = std::filesystem;

std::optional<std::string> read_text(const fs::path& p, std::size_t max = 1 << 20) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::string s(max, '\0');
  in.read(s.data(), static_cast<std::streamsize>(max));
  s.resize(static_cast<std::size_t>(in.gcount()));
  return s;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

fs::path at(const PlatformRoots& r, const std::string& rel) { return fs::path(r.root) / rel; }

// PCIe extended capabilities start at 0x100: a 32-bit header (id 16 bits, version 4, next offset 12). ACS is 0x000D;
// its Control register is at +6 (PCIe Base Specification, "ACS Extended Capability").
std::optional<std::uint16_t> acs_control(const std::string& config) {
  if (config.size() < 0x104) return std::nullopt;
  std::size_t off = 0x100;
  for (int guard = 0; guard < 64 && off >= 0x100 && off + 8 <= config.size(); ++guard) {
    const auto b = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(config[i])); };
    const std::uint32_t header = b(off) | b(off + 1) << 8 | b(off + 2) << 16 | b(off + 3) << 24;
    if (header == 0 || header == 0xffffffff) return std::nullopt;
    if ((header & 0xffff) == 0x000d) return static_cast<std::uint16_t>(b(off + 6) | b(off + 7) << 8);
    off = (header >> 20) & 0xffc;
  }
  return std::nullopt;
}

void read_bridges(const PlatformRoots& roots, PlatformReading& r) {
  std::error_code ec;
  const auto dir = at(roots, "sys/bus/pci/devices");
  if (!fs::is_directory(dir, ec)) {
    r.notes.push_back("no " + dir.string() + ": PCIe bridges not read");
    return;
  }
  std::vector<fs::path> devs;
  for (const auto& e : fs::directory_iterator(dir, ec)) devs.push_back(e.path());
  std::sort(devs.begin(), devs.end());
  for (const auto& d : devs) {
    const auto cls = read_text(d / "class", 64);
    if (!cls || trim(*cls).rfind("0x0604", 0) != 0) continue;  // PCI-to-PCI bridges (ports of switches and root ports)
    const auto config = read_text(d / "config", 4096);
    if (!config) continue;
    if (config->size() <= 256) {  // only the standard header: extended space needs root
      ++r.bridges_unreadable;
      continue;
    }
    if (const auto c = acs_control(*config)) r.bridges.push_back({d.filename().string(), *c});
  }
  if (r.bridges_unreadable > 0)
    r.notes.push_back(fmt::format("{} PCIe bridge(s) whose extended configuration space was not readable (run as root to read "
                                  "their ACS bits)", r.bridges_unreadable));
}

void read_iommu(const PlatformRoots& roots, PlatformReading& r) {
  std::error_code ec;
  // The default domain type of the IOMMU groups: "identity" is passthrough, "DMA"/"DMA-FQ" translated.
  const auto groups = at(roots, "sys/kernel/iommu_groups");
  int identity = 0, dma = 0;
  if (fs::is_directory(groups, ec))
    for (const auto& g : fs::directory_iterator(groups, ec))
      if (const auto t = read_text(g.path() / "type", 64)) {
        const auto v = trim(*t);
        if (v == "identity") ++identity;
        else if (v.rfind("DMA", 0) == 0) ++dma;
      }
  if (identity + dma > 0) {
    r.iommu = dma > 0 ? "translated" : "passthrough";
    r.iommu_basis = fmt::format("{}: {} group(s) DMA (translated), {} identity (passthrough)", groups.string(), dma, identity);
    return;
  }
  if (const auto cmd = read_text(at(roots, "proc/cmdline"), 8192)) {
    const auto c = lower(*cmd);
    if (c.find("iommu=pt") != std::string::npos || c.find("iommu.passthrough=1") != std::string::npos) r.iommu = "passthrough";
    else if (c.find("intel_iommu=on") != std::string::npos || c.find("amd_iommu=on") != std::string::npos) r.iommu = "translated";
    else if (c.find("intel_iommu=off") != std::string::npos || c.find("amd_iommu=off") != std::string::npos) r.iommu = "off";
    if (!r.iommu.empty()) {
      r.iommu_basis = "kernel command line: " + trim(*cmd);
      return;
    }
  }
  if (fs::is_directory(groups, ec) && fs::is_empty(groups, ec)) {
    r.iommu = "off";
    r.iommu_basis = groups.string() + " is empty: no IOMMU groups";
  }
}

void read_hypervisor(const PlatformRoots& roots, PlatformReading& r) {
  if (const auto cpu = read_text(at(roots, "proc/cpuinfo"), 1 << 20)) {
    std::istringstream in(*cpu);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("flags", 0) == 0) {
        std::istringstream words(line.substr(line.find(':') == std::string::npos ? 0 : line.find(':') + 1));
        for (std::string w; words >> w;)
          if (w == "hypervisor") r.hypervisor = "the CPU's 'hypervisor' flag (/proc/cpuinfo)";
        break;
      }
  }
  for (const char* f : {"sys/class/dmi/id/sys_vendor", "sys/class/dmi/id/product_name"})
    if (const auto v = read_text(at(roots, f), 256)) {
      const auto s = lower(trim(*v));
      for (const char* vm : {"qemu", "kvm", "vmware", "virtualbox", "xen", "bochs", "microsoft corporation", "amazon ec2", "google compute engine", "openstack"})
        if (s.find(vm) != std::string::npos) {
          r.hypervisor = (r.hypervisor.empty() ? "" : r.hypervisor + "; ") + fmt::format("DMI {} '{}'", fs::path(f).filename().string(), trim(*v));
          break;
        }
    }
}

void read_container(const PlatformRoots& roots, PlatformReading& r) {
  std::error_code ec;
  // /dev/shm: statvfs on a live machine; a fixture tree gives the size in dev-shm-bytes.
  if (const auto v = read_text(at(roots, "dev-shm-bytes"), 64)) {
    try {
      r.shm_bytes = std::stoull(trim(*v));
    } catch (...) {
    }
  } else if (roots.root == "/") {
    struct statvfs st {};
    if (statvfs(roots.shm_path.c_str(), &st) == 0) r.shm_bytes = static_cast<std::uint64_t>(st.f_blocks) * st.f_frsize;
    else r.notes.push_back(roots.shm_path + " could not be read: its size is unknown");
  }
  // The IPC namespace of this process against PID 1's (readable as root, or in the same user namespace).
  struct stat self {}, init {};
  const auto ns_self = at(roots, "proc/self/ns/ipc"), ns_init = at(roots, "proc/1/ns/ipc");
  if (roots.root == "/") {
    if (stat(ns_self.c_str(), &self) == 0 && stat(ns_init.c_str(), &init) == 0) r.private_ipc = self.st_ino != init.st_ino;
  } else if (const auto v = read_text(at(roots, "ipc-private"), 16)) {
    r.private_ipc = trim(*v) == "1";
  }
  r.in_container = fs::exists(at(roots, ".dockerenv"), ec) || fs::exists(at(roots, "run/.containerenv"), ec);
  if (const auto cg = read_text(at(roots, "proc/1/cgroup"), 65536)) {
    const auto c = lower(*cg);
    for (const char* k : {"docker", "kubepods", "containerd", "libpod", "lxc"})
      if (c.find(k) != std::string::npos) r.in_container = true;
  }
}

void read_network(const PlatformRoots& roots, PlatformReading& r) {
  std::error_code ec;
  const auto ib = at(roots, "sys/class/infiniband");
  if (fs::is_directory(ib, ec))
    for (const auto& e : fs::directory_iterator(ib, ec)) r.rdma_devices.push_back(e.path().filename().string());
  std::sort(r.rdma_devices.begin(), r.rdma_devices.end());
  if (const auto mods = read_text(at(roots, "proc/modules"), 1 << 20)) {
    r.peermem_loaded = mods->find("nvidia_peermem ") != std::string::npos || mods->find("nv_peer_mem ") != std::string::npos;
  } else if (fs::is_directory(at(roots, "sys/module"), ec)) {
    r.peermem_loaded = fs::exists(at(roots, "sys/module/nvidia_peermem"), ec) || fs::exists(at(roots, "sys/module/nv_peer_mem"), ec);
  }
  const auto net = at(roots, "sys/class/net");
  if (fs::is_directory(net, ec)) {
    std::vector<fs::path> ifs;
    for (const auto& e : fs::directory_iterator(net, ec)) ifs.push_back(e.path());
    std::sort(ifs.begin(), ifs.end());
    for (const auto& p : ifs) {
      const std::string name = p.filename().string();
      bool virt = name == "lo";
      for (const char* v : {"docker", "veth", "br-", "virbr", "cni", "flannel", "cali", "tun", "tap", "ifb", "dummy"})
        if (name.rfind(v, 0) == 0) virt = true;
      if (virt) continue;
      NetInterface n;
      n.name = name;
      if (const auto s = read_text(p / "operstate", 64)) n.operstate = trim(*s);
      if (const auto s = read_text(p / "speed", 64)) {
        try {
          const double mbit = std::stod(trim(*s));
          if (mbit > 0) n.speed_gbit = mbit / 1000;
        } catch (...) {
        }
      }
      r.nics.push_back(std::move(n));
    }
  }
}

/// The GPUs that exist, below NVML and CUDA: NVIDIA display/3D functions on the PCI bus, and what the driver manages.
void read_gpus(const PlatformRoots& roots, PlatformReading& r) {
  std::error_code ec;
  const auto pci = at(roots, "sys/bus/pci/devices");
  if (fs::is_directory(pci, ec))
    for (const auto& e : fs::directory_iterator(pci, ec)) {
      const auto vendor = read_text(e.path() / "vendor", 64);
      const auto cls = read_text(e.path() / "class", 64);
      if (!vendor || !cls || trim(*vendor) != "0x10de") continue;
      const std::string c = trim(*cls);
      if (c.rfind("0x0300", 0) == 0 || c.rfind("0x0302", 0) == 0) r.nvidia_gpus.push_back(e.path().filename().string());
    }
  std::sort(r.nvidia_gpus.begin(), r.nvidia_gpus.end());
  const auto driver = at(roots, "proc/driver/nvidia/gpus");
  if (fs::is_directory(driver, ec)) {
    int n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(driver, ec)) ++n;
    r.driver_gpus = n;
  }
}

/// The kernel log's Xid lines: /dev/kmsg gives one record per read ("PRI,SEQ,USEC,FLAGS;TEXT"), a fixture file many
/// lines per read; both are split at newlines and the text after ';' kept.
void read_kernel_log(const PlatformRoots& roots, PlatformReading& r) {
  const int fd = ::open(at(roots, "dev/kmsg").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    r.notes.push_back(std::string("kernel log (/dev/kmsg) not readable: ") + std::strerror(errno) +
                      " — Xid events not read (root needed; dmesg's output can be given to analyze)");
    return;
  }
  std::vector<std::string> lines;
  std::string pending;
  char buffer[8192];
  for (int records = 0; records < 200000; ++records) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EPIPE) continue;  // records overwritten while reading: go on with the next
    if (n <= 0) break;                      // EAGAIN: the end of the log; 0: the end of a file
    pending.append(buffer, static_cast<std::size_t>(n));
    std::size_t start = 0, nl;
    while ((nl = pending.find('\n', start)) != std::string::npos) {
      std::string line = pending.substr(start, nl - start);
      start = nl + 1;
      if (line.find("NVRM: Xid") == std::string::npos) continue;
      if (const auto semi = line.find(';'); semi != std::string::npos && semi < line.find("NVRM")) line.erase(0, semi + 1);
      lines.push_back(std::move(line));
      if (lines.size() > 200) lines.erase(lines.begin());
    }
    pending.erase(0, start);
  }
  ::close(fd);
  r.xid_lines = std::move(lines);
}

}  // namespace

PlatformReading read_platform(const PlatformRoots& roots) {
  PlatformReading r;
  try {
    read_bridges(roots, r);
    read_iommu(roots, r);
    read_hypervisor(roots, r);
    read_container(roots, r);
    read_network(roots, r);
    read_gpus(roots, r);
    read_kernel_log(roots, r);
  } catch (const std::exception& e) {
    r.notes.push_back(std::string("platform probe stopped: ") + e.what());
  }
  return r;
}

diagnose::FactSet platform_facts(const PlatformReading& r) {
  using namespace diagnose;
  FactSet f;
  for (const auto& b : r.bridges) {
    AcsControl a;
    a.device = b.bdf;
    a.src_valid = b.control & 0x01;
    a.trans_blk = b.control & 0x02;
    a.req_redir = b.control & 0x04;
    a.cmplt_redir = b.control & 0x08;
    a.upstream_fwd = b.control & 0x10;
    a.egress_ctrl = b.control & 0x20;
    a.direct_trans = b.control & 0x40;
    f.add(std::move(a), {"platform probe (sysfs config space)", 0,
                         fmt::format("{}: ACS control 0x{:04x}{}", b.bdf, b.control, b.redirect() ? " (P2P requests redirected upstream)" : "")});
  }
  if (!r.iommu.empty()) f.add(IommuMode{r.iommu}, {"platform probe (IOMMU)", 0, r.iommu_basis});
  if (!r.hypervisor.empty()) f.add(HypervisorSeen{r.hypervisor}, {"platform probe (CPU flags, DMI)", 0, r.hypervisor});
  for (const auto& n : r.nics) {
    NicSeen s;
    s.name = n.name;
    s.line_gbit = n.speed_gbit;
    s.link_layer = "Ethernet";
    s.state = n.operstate;
    f.add(std::move(s), {"platform probe (/sys/class/net)", 0,
                         fmt::format("{}: {} {}", n.name, n.operstate, n.speed_gbit ? fmt::format("{:g} Gb/s", *n.speed_gbit) : "speed unknown")});
  }
  for (const auto& d : r.rdma_devices) {
    NicSeen s;
    s.name = d;
    f.add(std::move(s), {"platform probe (/sys/class/infiniband)", 0, d});
    if (r.peermem_loaded && !*r.peermem_loaded)
      f.add(GdrState{d, false}, {"platform probe (/proc/modules)", 0,
                                 d + ": RDMA device present, nvidia_peermem not loaded (no GPUDirect RDMA through it)"});
  }
  if (r.shm_bytes && *r.shm_bytes < kSmallShmBytes)
    f.add(Claim{"shm-small", fmt::format("/dev/shm is {:.0f} MiB", static_cast<double>(*r.shm_bytes) / (1024 * 1024))},
          {"platform probe (/dev/shm)", 0, fmt::format("/dev/shm: {} bytes", *r.shm_bytes)});
  if (r.private_ipc && *r.private_ipc)
    f.add(Claim{"ipc-private", "the process has its own IPC namespace (a container without --ipc=host)"},
          {"platform probe (/proc/self/ns/ipc)", 0, "IPC namespace differs from PID 1's"});
  if (r.in_container) f.add(Claim{"container", "detected from the platform (/.dockerenv, cgroup)"}, {"platform probe", 0, "container"});
  // GPUs on the bus and under the driver. Informational ("pci", "driver"): a container or a scheduler hands a job
  // some of a machine's GPUs on purpose, so only NVML's count against CUDA's and NCCL's names a hidden GPU.
  if (!r.nvidia_gpus.empty())
    f.add(GpuCount{static_cast<int>(r.nvidia_gpus.size()), "pci", std::nullopt},
          {"platform probe (/sys/bus/pci)", 0, fmt::format("{} NVIDIA display/3D function(s) on the PCI bus", r.nvidia_gpus.size())});
  if (r.xid_lines && !r.xid_lines->empty()) {  // read as analyze reads a pasted dmesg
    std::string text;
    for (const auto& l : *r.xid_lines) text += l + "\n";
    f.append(analyze::read_system_tools(text, "platform probe (/dev/kmsg)").facts);
  }
  if (r.driver_gpus)
    f.add(GpuCount{*r.driver_gpus, "driver", std::nullopt},
          {"platform probe (/proc/driver/nvidia/gpus)", 0, fmt::format("{} GPU(s) under the NVIDIA driver", *r.driver_gpus)});
  return f;
}

void to_json(nlohmann::json& j, const PlatformReading& r) {
  nlohmann::json bridges = nlohmann::json::array();
  for (const auto& b : r.bridges) bridges.push_back({{"bdf", b.bdf}, {"acs_control", b.control}, {"redirect", b.redirect()}});
  nlohmann::json nics = nlohmann::json::array();
  for (const auto& n : r.nics)
    nics.push_back({{"name", n.name}, {"operstate", n.operstate}, {"speed_gbit", n.speed_gbit ? nlohmann::json(*n.speed_gbit) : nlohmann::json()}});
  j = {{"bridges", bridges},
       {"bridges_unreadable", r.bridges_unreadable},
       {"iommu", r.iommu.empty() ? nlohmann::json() : nlohmann::json(r.iommu)},
       {"iommu_basis", r.iommu_basis},
       {"hypervisor", r.hypervisor.empty() ? nlohmann::json() : nlohmann::json(r.hypervisor)},
       {"shm_bytes", r.shm_bytes ? nlohmann::json(*r.shm_bytes) : nlohmann::json()},
       {"private_ipc", r.private_ipc ? nlohmann::json(*r.private_ipc) : nlohmann::json()},
       {"in_container", r.in_container},
       {"rdma_devices", r.rdma_devices},
       {"nvidia_gpus", r.nvidia_gpus},
       {"driver_gpus", r.driver_gpus ? nlohmann::json(*r.driver_gpus) : nlohmann::json()},
       {"xid_lines", r.xid_lines ? nlohmann::json(*r.xid_lines) : nlohmann::json()},
       {"peermem_loaded", r.peermem_loaded ? nlohmann::json(*r.peermem_loaded) : nlohmann::json()},
       {"nics", nics},
       {"notes", r.notes}};
}

}  // namespace scalescope::probe
