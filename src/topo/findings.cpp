#include "topo/findings.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace scalescope::topo {
namespace {

std::string pair_name(const Topology& t, int a, int b) { return t.devices[a].label + "-" + t.devices[b].label; }

// "a, b, c" with at most `max` items, then "and N more".
std::string list(const std::vector<std::string>& items, std::size_t max = 8) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i == max) return out + fmt::format(" and {} more", items.size() - max);
    out += (i ? ", " : "") + items[i];
  }
  return out;
}

std::string numa_text(const Device& d) {
  if (!d.numa || d.numa->empty()) return "";
  std::vector<std::pair<int, int>> r;
  for (int n : *d.numa) r.emplace_back(n, n);
  return CpuSet(r).to_string();  // the list form: "0,3-9,11-17"
}

std::vector<int> split_sizes(int total, int parts) {
  std::vector<int> sizes(parts, total / parts);
  for (int i = 0; i < total % parts; ++i) ++sizes[i];
  return sizes;
}

void pcie_findings(const Topology& t, std::vector<Finding>& out) {
  std::vector<std::string> narrow, slot, gen_limited, idle;
  for (int g : t.gpus()) {
    const Device& d = t.devices[g];
    const PcieLink& p = d.pcie;
    if (p.current_width > 0 && p.max_width > 0 && p.current_width < p.max_width)
      narrow.push_back(fmt::format("{} x{} of x{}", d.label, p.current_width, p.max_width));
    if (p.max_width > 0 && p.max_width < 16) slot.push_back(fmt::format("{} x{}", d.label, p.max_width));
    if (p.gpu_max_gen > 0 && p.max_gen > 0 && p.max_gen < p.gpu_max_gen)
      gen_limited.push_back(fmt::format("{} Gen{} (the GPU supports Gen{})", d.label, p.max_gen, p.gpu_max_gen));
    if (p.current_gen > 0 && p.max_gen > 0 && p.current_gen < p.max_gen)
      idle.push_back(fmt::format("{} Gen{} of Gen{}", d.label, p.current_gen, p.max_gen));
  }
  if (!narrow.empty())
    out.push_back({Severity::warning, "pcie-downtrained",
                   fmt::format("{} GPU PCIe link{} narrower than {} maximum", narrow.size(), narrow.size() == 1 ? " runs" : "s run",
                               narrow.size() == 1 ? "its" : "their"),
                   "NVML current vs maximum link width: " + list(narrow),
                   "a link that trains below its width is a seating, riser or signal problem: reseat the GPU or riser, "
                   "check `lspci -vv` (LnkSta vs LnkCap) and the BIOS slot settings"});
  if (!slot.empty())
    out.push_back({Severity::warning, "pcie-downtrained",
                   fmt::format("{} GPU{} in a slot with fewer than 16 lanes", slot.size(), slot.size() == 1 ? "" : "s"),
                   "NVML maximum link width with this slot: " + list(slot),
                   "move the GPU to an x16 slot (slots that share lanes with M.2 drives or other slots drop to x8/x4; see "
                   "the board manual); unless the card itself is an x8 card, its PCIe bandwidth is cut to the slot's"});
  if (!gen_limited.empty())
    out.push_back({Severity::warning, "pcie-downtrained",
                   fmt::format("{} GPU{} limited to an older PCIe generation by the slot or link", gen_limited.size(),
                               gen_limited.size() == 1 ? "" : "s"),
                   "NVML maximum generation with this system: " + list(gen_limited),
                   "check the BIOS PCIe speed setting (set to Auto/the highest generation), risers and retimers; a Gen4 "
                   "slot halves a Gen5 GPU's host bandwidth"});
  if (!idle.empty())
    out.push_back({Severity::info, "pcie-gen-low",
                   fmt::format("{} GPU PCIe link{} below {} maximum generation right now", idle.size(),
                               idle.size() == 1 ? " runs" : "s run", idle.size() == 1 ? "its" : "their"),
                   "NVML current generation: " + list(idle),
                   "GPUs lower the PCIe generation when idle to save power: this is normal at rest; if it stays low while "
                   "a job runs (watch `nvidia-smi -q -d PERFORMANCE`), treat it as a downtrained link"});
}

void path_findings(const Topology& t, const BandwidthModel& bw, std::vector<Finding>& out) {
  const auto gpus = t.gpus();
  std::map<LinkClass, std::vector<std::string>> by_class;
  std::map<LinkClass, double> worst;  // lowest expected GB/s per class
  int pairs = 0, nvlink_pairs = 0;
  double best_nvlink = 0;
  for (std::size_t a = 0; a < gpus.size(); ++a)
    for (std::size_t b = a + 1; b < gpus.size(); ++b) {
      const int i = gpus[a], j = gpus[b];
      const Link& l = t.links[i][j];
      ++pairs;
      if (l.cls == LinkClass::nvlink) {
        ++nvlink_pairs;
        best_nvlink = std::max(best_nvlink, bw.gbps[i][j]);
        continue;
      }
      if (l.cls == LinkClass::unknown) continue;
      by_class[l.cls].push_back(pair_name(t, i, j));
      double g = bw.gbps[i][j];
      if (!worst.count(l.cls) || g < worst[l.cls]) worst[l.cls] = g;
    }
  const std::string nv = nvlink_pairs > 0 ? fmt::format("; {} of {} pairs {} NVLink (up to {:.0f} GB/s): a ring over all "
                                                        "GPUs runs at its slowest hop",
                                                        nvlink_pairs, pairs, nvlink_pairs == 1 ? "has" : "have", best_nvlink)
                                          : fmt::format("; none of the {} pairs has NVLink", pairs);
  struct Rule {
    LinkClass cls;
    Severity severity;
    const char* what;
    const char* action;
  };
  const Rule rules[] = {
      {LinkClass::sys, Severity::critical, "cross the CPU interconnect between NUMA nodes (SYS)",
       "peer-to-peer across sockets is usually unavailable, so NCCL copies through host memory: keep a job's ranks "
       "on one NUMA node when it fits (CUDA_VISIBLE_DEVICES=the GPUs of one node), bind each rank to its GPU's CPUs "
       "(cpu-binding below), or use GPUs joined by NVLink or one PCIe switch"},
      {LinkClass::node, Severity::warning, "cross PCIe host bridges within a NUMA node (NODE)",
       "traffic goes through the CPU's root complexes: prefer GPUs behind one PCIe switch (PIX/PXB) or NVLink for the "
       "ranks that talk most; check that peer-to-peer is allowed (IOMMU/ACS off or passthrough, the p2p matrix)"},
      {LinkClass::phb, Severity::warning, "go through the PCIe host bridge (PHB)",
       "peer-to-peer goes through the CPU's root complex: GPUs behind one PCIe switch (PIX/PXB) or an NVLink bridge "
       "avoid it; check that peer-to-peer is allowed (IOMMU/ACS off or passthrough, the p2p matrix)"},
  };
  for (const auto& r : rules) {
    auto it = by_class.find(r.cls);
    if (it == by_class.end()) continue;
    out.push_back({r.severity, "host-path",
                   fmt::format("{} GPU pair{} with no NVLink {}", it->second.size(), it->second.size() == 1 ? "" : "s", r.what),
                   fmt::format("{}; expected ≤ {:.1f} GB/s per direction{}", list(it->second), worst[r.cls], nv), r.action});
  }
  std::vector<std::string> pcie;
  for (auto cls : {LinkClass::pix, LinkClass::pxb})
    if (by_class.count(cls)) pcie.insert(pcie.end(), by_class[cls].begin(), by_class[cls].end());
  if (!pcie.empty()) {
    double g = std::min(worst.count(LinkClass::pix) ? worst[LinkClass::pix] : 1e9,
                        worst.count(LinkClass::pxb) ? worst[LinkClass::pxb] : 1e9);
    out.push_back({Severity::info, "pcie-only",
                   fmt::format("{} GPU pair{} joined through PCIe switches only (PIX/PXB)", pcie.size(), pcie.size() == 1 ? "" : "s"),
                   fmt::format("{}; expected ≤ {:.1f} GB/s per direction{}", list(pcie), g, nv),
                   "the best a PCIe-only path gives; gradient all-reduce of large models will be bandwidth-bound here "
                   "(`scalescope doctor` measures how much)"});
  }
}

void nvlink_findings(const Topology& t, std::vector<Finding>& out) {
  std::vector<std::string> down, none;
  for (int g : t.gpus()) {
    const Device& d = t.devices[g];
    if (d.nvlinks.empty()) continue;
    std::vector<std::string> inactive;
    for (const auto& l : d.nvlinks)
      if (!l.active) inactive.push_back(std::to_string(l.link));
    const std::size_t active = d.nvlinks.size() - inactive.size();
    if (!inactive.empty() && active > 0)
      down.push_back(fmt::format("{}: link{} {} inactive ({} of {} active)", d.label, inactive.size() == 1 ? "" : "s",
                                 list(inactive, 18), active, d.nvlinks.size()));
    else if (active == 0)
      none.push_back(d.label);
  }
  if (!down.empty())
    out.push_back({Severity::warning, "nvlink-down", fmt::format("NVLinks down on {} GPU{}", down.size(), down.size() == 1 ? "" : "s"),
                   "NVML link state: " + list(down),
                   "a down link cuts that GPU's NVLink bandwidth: check `nvidia-smi nvlink -s` and -e (errors), reseat "
                   "bridges, and on NVSwitch systems that nvidia-fabricmanager runs; a GPU reset or reboot retrains links"});
  if (!none.empty())
    out.push_back({Severity::info, "nvlink-down", "GPUs with NVLink ports but no active link",
                   "NVML reports NVLinks but none active on " + list(none),
                   "normal for PCIe cards without a bridge; on SXM/NVSwitch systems check nvidia-fabricmanager"});
}

void live_findings(const Topology& t, std::vector<Finding>& out) {
  if (!t.live) return;
  const LiveFacts& l = *t.live;
  std::vector<std::string> no_p2p;
  for (std::size_t a = 0; a < l.p2p.size(); ++a)
    for (std::size_t b = a + 1; b < l.p2p.size(); ++b)
      if (!l.p2p[a][b] || !l.p2p[b][a]) {
        const int i = l.p2p_devices[a], j = l.p2p_devices[b];
        no_p2p.push_back(fmt::format("{} ({})", pair_name(t, i, j), to_string(t.links[i][j])));
      }
  if (!no_p2p.empty())
    out.push_back({Severity::warning, "p2p-unsupported",
                   fmt::format("peer-to-peer access unsupported for {} GPU pair{}", no_p2p.size(), no_p2p.size() == 1 ? "" : "s"),
                   "cudaDeviceCanAccessPeer is false for " + list(no_p2p),
                   "NCCL then copies through host memory (SHM): expect a fraction of the PCIe rate; on PCIe paths check "
                   "IOMMU/ACS settings (iommu=pt, ACS off on the switches), in VMs the hypervisor's P2P support"});
  if (l.cuda_built && l.nvml_gpu_count > l.cuda_gpu_count) {
    const bool none = l.cuda_gpu_count == 0;
    out.push_back({none ? Severity::critical : Severity::warning, "gpus-hidden",
                   fmt::format("CUDA (so NCCL) sees {} of the {} GPUs that exist", l.cuda_gpu_count, l.nvml_gpu_count),
                   fmt::format("NVML counts {} GPUs, the CUDA runtime {}; CUDA_VISIBLE_DEVICES {}", l.nvml_gpu_count,
                               l.cuda_gpu_count,
                               l.cuda_visible_devices_set ? "= '" + l.cuda_visible_devices + "'" : std::string("is not set")),
                   l.cuda_visible_devices_set
                       ? "a communicator can only span the GPUs CUDA_VISIBLE_DEVICES lists: unset or widen it (a scheduler "
                         "such as Slurm may set it for the allocation)"
                       : "check `nvidia-smi` for GPUs in an error state or MIG mode, and that the driver supports this "
                         "CUDA version (" + l.cuda_message + ")"});
  }
}

void nic_findings(const Topology& t, std::vector<Finding>& out) {
  const auto nics = t.nics();
  if (nics.empty()) return;
  std::vector<std::string> far;
  for (int g : t.gpus()) {
    int best = -1;
    bool unknown = false;
    for (int n : nics) {
      unknown |= t.links[g][n].cls == LinkClass::unknown;
      if (best < 0 || quality(t.links[g][n]) > quality(t.links[g][best])) best = n;
    }
    // With NIC links unread (a cut-off table) a nearer NIC may exist: no conclusion.
    if (best < 0 || t.links[g][best].cls == LinkClass::unknown || (unknown && t.links[g][best].cls == LinkClass::sys)) continue;
    const Device& gpu = t.devices[g];
    const Device& nic = t.devices[best];
    bool other_node = t.links[g][best].cls == LinkClass::sys;
    if (!other_node && gpu.numa && nic.numa && !gpu.numa->empty() && !nic.numa->empty())
      other_node = std::none_of(gpu.numa->begin(), gpu.numa->end(), [&](int n) {
        return std::find(nic.numa->begin(), nic.numa->end(), n) != nic.numa->end();
      });
    if (other_node) {
      std::string name = nic.name.empty() || nic.name == nic.label ? nic.label : nic.label + " " + nic.name;
      far.push_back(fmt::format("{} → nearest NIC {} ({})", gpu.label, name, to_string(t.links[g][best])));
    }
  }
  if (!far.empty())
    out.push_back({Severity::warning, "nic-numa",
                   fmt::format("{} GPU{} whose nearest NIC is on another NUMA node", far.size(), far.size() == 1 ? "" : "s"),
                   list(far),
                   "multi-node traffic of these GPUs crosses the CPU interconnect and GPUDirect RDMA is normally not used "
                   "across it: expect lower inter-node bandwidth for their ranks; place a NIC on each GPU's socket, or "
                   "accept it for single-node jobs (NICs do not matter there)"});
}

void binding_finding(const Topology& t, std::vector<Finding>& out) {
  std::vector<std::string> lines;
  for (const auto& [g, cpus] : recommended_cpus(t)) {
    if (cpus.empty()) continue;
    const std::string numa = numa_text(t.devices[g]);
    lines.push_back(fmt::format("{} → CPUs {}{}", t.devices[g].label, cpus.to_string(), numa.empty() ? "" : " (NUMA " + numa + ")"));
  }
  if (lines.empty()) return;
  out.push_back({Severity::info, "cpu-binding", "CPU cores each rank should be bound to",
                 list(lines, 64) + " — the GPU's CPU affinity split among the GPUs that share it",
                 "bind rank r (GPU r) to its CPUs and memory node, e.g. `numactl --physcpubind=CPUS --membind=NODE` or "
                 "`taskset -c CPUS`, so data loading and the NCCL proxy thread stay next to the GPU"});
}

}  // namespace

std::string to_string(Severity s) {
  switch (s) {
    case Severity::info: return "info";
    case Severity::warning: return "warning";
    case Severity::critical: return "critical";
  }
  return "info";
}

std::vector<std::pair<int, CpuSet>> recommended_cpus(const Topology& t) {
  std::vector<std::pair<int, CpuSet>> out;
  std::map<std::string, std::vector<int>> groups;  // affinity text -> GPUs sharing it, in order
  for (int g : t.gpus()) {
    out.emplace_back(g, CpuSet{});
    if (t.devices[g].cpu_affinity && !t.devices[g].cpu_affinity->empty())
      groups[t.devices[g].cpu_affinity->to_string()].push_back(g);
  }
  for (const auto& [text, members] : groups) {
    const CpuSet& set = *t.devices[members.front()].cpu_affinity;
    const int k = static_cast<int>(members.size());
    const auto& ranges = set.ranges();
    const bool per_range = std::all_of(ranges.begin(), ranges.end(), [&](const auto& r) { return r.second - r.first + 1 >= k; });
    std::vector<std::vector<std::pair<int, int>>> parts(k);
    if (per_range) {
      for (const auto& r : ranges) {
        auto sizes = split_sizes(r.second - r.first + 1, k);
        int start = r.first;
        for (int m = 0; m < k; ++m) {
          parts[m].emplace_back(start, start + sizes[m] - 1);
          start += sizes[m];
        }
      }
    } else {
      std::vector<int> cpus;
      for (const auto& r : ranges)
        for (int c = r.first; c <= r.second; ++c) cpus.push_back(c);
      auto sizes = split_sizes(static_cast<int>(cpus.size()), k);
      std::size_t pos = 0;
      for (int m = 0; m < k; ++m)
        for (int s = 0; s < sizes[m]; ++s, ++pos) parts[m].emplace_back(cpus[pos], cpus[pos]);
    }
    for (int m = 0; m < k; ++m)
      for (auto& [g, cpus] : out)
        if (g == members[m]) cpus = CpuSet(parts[m]);
  }
  return out;
}

std::vector<Finding> find_issues(const Topology& t, const BandwidthModel& bw) {
  std::vector<Finding> out;
  pcie_findings(t, out);
  path_findings(t, bw, out);
  nvlink_findings(t, out);
  live_findings(t, out);
  nic_findings(t, out);
  binding_finding(t, out);
  std::stable_sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  return out;
}

void to_json(nlohmann::json& j, const Finding& f) {
  j = {{"severity", to_string(f.severity)}, {"code", f.code}, {"title", f.title}, {"evidence", f.evidence}, {"action", f.action}};
}

}  // namespace scalescope::topo
