#include "topo/bandwidth.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace scalescope::topo {
namespace {

bool contains(const std::string& name, const char* what) { return name.find(what) != std::string::npos; }

bool any_of(const std::string& name, std::initializer_list<const char*> parts) {
  return std::any_of(parts.begin(), parts.end(), [&](const char* p) { return contains(name, p); });
}

// GA102 boards carry a 4-link NVLink bridge slower than the SXM parts of the same generation.
bool is_ga102_board(const std::string& name) { return any_of(name, {"RTX 3090", "RTX A6000", "A40"}); }

}  // namespace

double pcie_lane_gbps(int generation) {
  switch (generation) {
    case 1: return 2.5 * 8 / 10 / 8;
    case 2: return 5.0 * 8 / 10 / 8;
    case 3: return 8.0 * 128 / 130 / 8;
    case 4: return 16.0 * 128 / 130 / 8;
    case 5: return 32.0 * 128 / 130 / 8;
    case 6: return 64.0 * 242 / 256 / 8;
    default: return 0;
  }
}

double pcie_link_gbps(int generation, int width) { return width > 0 ? pcie_lane_gbps(generation) * width : 0; }

double nvlink_link_gbps(int generation) {
  switch (generation) {
    case 1: return 160.0 / 4 / 2;
    case 2: return 300.0 / 6 / 2;
    case 3: return 600.0 / 12 / 2;
    case 4: return 900.0 / 18 / 2;
    case 5: return 1800.0 / 18 / 2;
    default: return 0;
  }
}

double path_factor(LinkClass cls) {
  switch (cls) {
    case LinkClass::pix:
    case LinkClass::pxb: return kSwitchPathFactor;
    case LinkClass::phb: return kHostBridgeFactor;
    case LinkClass::node: return kNodeFactor;
    case LinkClass::sys: return kSysFactor;
    default: return 0;
  }
}

int pcie_gen_from_name(const std::string& name) {
  // Quadro RTX 4000/5000 (Turing, Gen3) and RTX 4000/5000 Ada (Gen4) before the GeForce RTX 40/50 prefixes they contain.
  if (contains(name, "Quadro RTX")) return 3;
  if (contains(name, "Ada Generation")) return 4;
  if (any_of(name, {"H100", "H200", "H800", "H20", "GH200", "B100", "B200", "GB200", "B300", "RTX 50", "RTX PRO 6000"}))
    return 5;
  if (any_of(name, {"A100", "A800", "A30", "A40", "A10", "A16", "A2 ", "L40", "L4", "L20", "RTX 30", "RTX 40", "RTX A",
                    "Ada Generation"}))
    return 4;
  if (any_of(name, {"V100", "T4", "P100", "P40", "RTX 20", "TITAN RTX", "Quadro RTX"})) return 3;
  return 0;
}

int nvlink_gen_for(int major, int minor, const std::string& name) {
  if (major == 6 && minor == 0) return 1;
  if (major == 7 && minor == 0) return 2;
  if (major == 8) return 3;
  if (major == 9) return 4;
  if (major == 10) return 5;
  if (major > 0) return 0;
  if (any_of(name, {"B100", "B200", "GB200", "B300"})) return 5;
  if (any_of(name, {"H100", "H200", "H800", "GH200", "H20"})) return 4;
  if (any_of(name, {"A100", "A800", "A30", "RTX 3090", "RTX A6000", "A40"})) return 3;
  if (contains(name, "V100")) return 2;
  if (contains(name, "P100")) return 1;
  return 0;
}

GpuLinkBasis link_basis(const Device& gpu) {
  GpuLinkBasis b;
  const PcieLink& p = gpu.pcie;
  if (p.max_gen > 0 && (p.current_width > 0 || p.max_width > 0)) {
    b.pcie_gen = p.max_gen;
    b.pcie_width = p.current_width > 0 ? p.current_width : p.max_width;
    b.pcie_assumed = false;
    b.pcie_basis = fmt::format("measured: Gen{} x{} (the maximum generation the link allows, since GPUs lower it "
                               "when idle, and the current width)", b.pcie_gen, b.pcie_width);
  } else if (int gen = pcie_gen_from_name(gpu.name); gen > 0) {
    b.pcie_gen = gen;
    b.pcie_width = 16;
    b.pcie_basis = fmt::format("assumed Gen{} x16 from the name '{}' (no PCIe link data)", gen, gpu.name);
  } else {
    b.pcie_gen = 4;
    b.pcie_width = 16;
    b.pcie_basis = "assumed Gen4 x16 (no PCIe link data and no GPU name that implies otherwise)";
  }
  const int gen = nvlink_gen_for(gpu.compute_major, gpu.compute_minor, gpu.name);
  if (gen > 0 && is_ga102_board(gpu.name)) {
    b.nvlink_link_gbps = kGa102BridgeLinkGbps;
    b.nvlink_assumed = gpu.compute_major == 0;
    b.nvlink_basis = fmt::format("{:.2f} GB/s per link (GA102 NVLink bridge, '{}')", kGa102BridgeLinkGbps, gpu.name);
  } else if (gen > 0) {
    b.nvlink_link_gbps = nvlink_link_gbps(gen);
    b.nvlink_assumed = gpu.compute_major == 0;
    b.nvlink_basis = gpu.compute_major > 0
                         ? fmt::format("NVLink {} ({} GB/s per link, compute capability {}.{})", gen,
                                       b.nvlink_link_gbps, gpu.compute_major, gpu.compute_minor)
                         : fmt::format("NVLink {} ({} GB/s per link) from the name '{}'", gen, b.nvlink_link_gbps, gpu.name);
  } else {
    b.nvlink_link_gbps = nvlink_link_gbps(4);
    b.nvlink_basis = "assumed 25 GB/s per link (NVLink 2, 3 and 4 all run 25 GB/s; NVLink 5 (Blackwell) 50)";
  }
  return b;
}

BandwidthModel expected_bandwidth(const Topology& t) {
  BandwidthModel m;
  const std::size_t n = t.devices.size();
  m.gbps.assign(n, std::vector<double>(n, 0.0));
  m.basis.resize(n);
  std::set<std::string> pcie_seen, nvlink_seen;
  bool any_nvlink = false, any_pcie = false;
  for (std::size_t i = 0; i < n; ++i)
    if (t.devices[i].kind == DeviceKind::gpu) m.basis[i] = link_basis(t.devices[i]);
  for (std::size_t i = 0; i < n; ++i) {
    if (t.devices[i].kind != DeviceKind::gpu) continue;
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j || t.devices[j].kind != DeviceKind::gpu) continue;
      const Link& l = t.links[i][j];
      const auto& a = m.basis[i];
      const auto& b = m.basis[j];
      if (l.cls == LinkClass::nvlink) {
        m.gbps[i][j] = l.nvlinks * std::min(a.nvlink_link_gbps, b.nvlink_link_gbps);
        any_nvlink = true;
      } else if (double f = path_factor(l.cls); f > 0) {
        m.gbps[i][j] = std::min(pcie_link_gbps(a.pcie_gen, a.pcie_width), pcie_link_gbps(b.pcie_gen, b.pcie_width)) * f;
        any_pcie = true;
      }
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (t.devices[i].kind != DeviceKind::gpu) continue;
    const auto& b = m.basis[i];
    if (any_pcie && pcie_seen.insert(b.pcie_basis).second)
      m.assumptions.push_back("PCIe per GPU: " + b.pcie_basis);
    if (any_nvlink && nvlink_seen.insert(b.nvlink_basis).second)
      m.assumptions.push_back("NVLink: " + b.nvlink_basis);
  }
  if (any_pcie)
    m.assumptions.push_back(fmt::format(
        "PCIe paths: PIX/PXB {:.2f}, PHB {:.2f}, NODE {:.2f}, SYS {:.2f} of the slower GPU's PCIe line rate "
        "(PHB/NODE: root-complex forwarding as NCCL models it; SYS: staging through host memory)",
        kSwitchPathFactor, kHostBridgeFactor, kNodeFactor, kSysFactor));
  return m;
}

}  // namespace scalescope::topo
