#include "report/topo_report.h"

#include <map>

#include <fmt/format.h>

#include "report/table.h"

namespace scalescope::report {
namespace {

using topo::Device;
using topo::DeviceKind;

std::string numa_list(const std::optional<std::vector<int>>& nodes) {
  if (!nodes || nodes->empty()) return "N/A";
  std::vector<std::pair<int, int>> r;
  for (int n : *nodes) r.emplace_back(n, n);
  return topo::CpuSet(r).to_string();
}

std::string gpu_line(const Device& d) {
  std::string s = d.label + "  " + (d.name.empty() ? std::string("(name unknown)") : d.name);
  if (!d.bus_id.empty()) s += "  " + d.bus_id;
  if (d.cuda_index) s += fmt::format("  cuda:{}", *d.cuda_index);
  else if (!d.bus_id.empty()) s += "  (not visible to CUDA)";
  if (d.sm_count > 0) s += fmt::format("  sm_{}{}, {} SMs, {:.0f} GB", d.compute_major, d.compute_minor, d.sm_count, d.memory_bytes / 1e9);
  const auto& p = d.pcie;
  if (p.current_gen > 0 || p.max_gen > 0)
    s += fmt::format("  PCIe Gen{} x{} now, max Gen{} x{}", p.current_gen, p.current_width, p.max_gen, p.max_width);
  if (!d.nvlinks.empty()) {
    int active = 0;
    for (const auto& l : d.nvlinks) active += l.active;
    s += fmt::format("  NVLink {}/{} active", active, d.nvlinks.size());
    if (active > 0) {
      std::map<std::string, int> remotes;
      for (const auto& l : d.nvlinks)
        if (l.active) ++remotes[l.remote_is_switch ? "NVSwitch" : l.remote_bus_id];
      std::string r;
      for (const auto& [bus, count] : remotes) r += fmt::format("{}{}×{}", r.empty() ? "" : ", ", count, bus);
      s += fmt::format(" (nvml version {} to {})", d.nvlinks.front().version, r);
    }
  }
  return s;
}

}  // namespace

std::string render_topo_report(const topo::TopoReport& r) {
  const auto& t = r.topology;
  const auto gpus = t.gpus();
  const auto nics = t.nics();
  std::string out = fmt::format("scalescope topo: {}, {} GPU{}, {} NIC{}\n", t.source, gpus.size(), gpus.size() == 1 ? "" : "s",
                                nics.size(), nics.size() == 1 ? "" : "s");
  if (t.live) {
    const auto& l = *t.live;
    out += fmt::format("NVML: {}\nCUDA: {}; CUDA_VISIBLE_DEVICES {}\nhwloc: {}\n", l.nvml_message, l.cuda_message,
                       l.cuda_visible_devices_set ? "= '" + l.cuda_visible_devices + "'" : std::string("not set"),
                       l.hwloc_message);
    for (const auto& n : l.numa_nodes)
      out += fmt::format("  NUMA node {}: CPUs {}, {:.1f} GB\n", n.os_index, n.cpus.to_string(), n.memory_bytes / 1e9);
  }
  if (gpus.empty()) {
    out += "no GPU is visible on this machine: there is no GPU topology to show\n";
  } else {
    out += "\n";
    for (int g : gpus)
      if (!t.devices[g].name.empty() || !t.devices[g].bus_id.empty()) out += gpu_line(t.devices[g]) + "\n";
    for (int n : nics)
      if (!t.devices[n].name.empty() && t.devices[n].name != t.devices[n].label)
        out += fmt::format("{}  {}{}\n", t.devices[n].label, t.devices[n].name,
                           t.devices[n].bus_id.empty() ? "" : "  " + t.devices[n].bus_id);

    // The matrix in nvidia-smi's form.
    std::vector<std::string> head{""};
    for (const auto& d : t.devices) head.push_back(d.label);
    if (t.has_cpu_affinity) head.push_back("CPU Affinity");
    if (t.has_numa_affinity) head.push_back("NUMA Affinity");
    if (t.has_gpu_numa_id) head.push_back("GPU NUMA ID");
    TextTable m(head);
    for (std::size_t i = 0; i < t.devices.size(); ++i) {
      const Device& d = t.devices[i];
      std::vector<std::string> row{d.label};
      for (std::size_t j = 0; j < t.devices.size(); ++j) row.push_back(topo::to_string(t.links[i][j]));
      const bool gpu = d.kind == DeviceKind::gpu;
      if (t.has_cpu_affinity) row.push_back(gpu && d.cpu_affinity ? d.cpu_affinity->to_string() : (gpu ? "N/A" : ""));
      if (t.has_numa_affinity) row.push_back(gpu ? numa_list(d.numa) : "");
      if (t.has_gpu_numa_id) row.push_back(gpu ? (d.gpu_numa_id ? std::to_string(*d.gpu_numa_id) : "N/A") : "");
      m.add_row(std::move(row));
    }
    out += "\nlink classes (nvidia-smi topo -m; X self, NV# bonded NVLinks, PIX/PXB PCIe switches, PHB host bridge, "
           "NODE host bridges of one NUMA node, SYS across NUMA nodes, ? not read)\n";
    out += m.render();

    if (gpus.size() >= 2) {
      std::vector<std::string> bh{"GB/s"};
      for (int g : gpus) bh.push_back(t.devices[g].label);
      TextTable b(bh);
      for (int i : gpus) {
        std::vector<std::string> row{t.devices[i].label};
        for (int j : gpus)
          row.push_back(i == j ? "-" : r.bandwidth.gbps[i][j] > 0 ? fmt::format("{:.1f}", r.bandwidth.gbps[i][j]) : "?");
        b.add_row(std::move(row));
      }
      out += "\nexpected unidirectional bandwidth per GPU pair, GB/s (line rate; NCCL reaches roughly 75-80 % of it)\n";
      out += b.render();
      for (const auto& a : r.bandwidth.assumptions) out += "  " + a + "\n";
    }
    if (t.live && !t.live->p2p.empty()) {
      const auto& l = *t.live;
      std::vector<std::string> ph{"P2P"};
      for (int p : l.p2p_devices) ph.push_back(t.devices[p].label);
      TextTable p(ph);
      for (std::size_t a = 0; a < l.p2p.size(); ++a) {
        std::vector<std::string> row{t.devices[l.p2p_devices[a]].label};
        for (std::size_t b = 0; b < l.p2p.size(); ++b) row.push_back(a == b ? "X" : l.p2p[a][b] ? "OK" : "NS");
        p.add_row(std::move(row));
      }
      out += "\npeer-to-peer access (cudaDeviceCanAccessPeer; OK supported, NS not supported)\n" + p.render();
    }
  }
  out += "\nfindings:\n";
  if (r.findings.empty()) out += "  none\n";
  for (const auto& f : r.findings)
    out += fmt::format("  [{}] {}\n      evidence: {}\n      what to do: {}\n", topo::to_string(f.severity), f.title,
                       f.evidence, f.action);
  // Live messages already shown in the header (NVML, CUDA, hwloc) are not repeated here.
  std::vector<std::string> warnings;
  for (const auto& w : r.warnings) {
    const bool in_header = r.topology.live && (w == r.topology.live->nvml_message || w == r.topology.live->cuda_message ||
                                               w == r.topology.live->hwloc_message);
    if (!in_header) warnings.push_back(w);
  }
  if (!warnings.empty()) {
    out += "\ncould not read or discover:\n";
    for (const auto& w : warnings) out += "  - " + w + "\n";
  }
  if (!r.notes.empty()) {
    out += "\nnotes:\n";
    for (const auto& n : r.notes) out += "  - " + n + "\n";
  }
  return out;
}

std::string render_topo_summary(const topo::TopoReport& r) {
  const auto& t = r.topology;
  const auto gpus = t.gpus();
  if (gpus.empty()) {
    std::string why = r.warnings.empty() ? std::string("no GPU is visible") : r.warnings.back();
    std::string cpus;
    if (t.live && !t.live->numa_nodes.empty())
      cpus = fmt::format("; {} NUMA node{}, {} logical CPUs", t.live->numa_nodes.size(),
                         t.live->numa_nodes.size() == 1 ? "" : "s", t.live->logical_cpus);
    return "topology: " + why + cpus + "\n";
  }
  std::map<std::string, int> classes;
  for (std::size_t a = 0; a < gpus.size(); ++a)
    for (std::size_t b = a + 1; b < gpus.size(); ++b) ++classes[topo::to_string(t.links[gpus[a]][gpus[b]])];
  std::string pairs;
  for (const auto& [cls, count] : classes) pairs += fmt::format("{}{} {}", pairs.empty() ? "" : ", ", count, cls);
  std::string out = fmt::format("topology: {} GPU{} ({}), {} NIC{}; GPU pairs: {}\n", gpus.size(), gpus.size() == 1 ? "" : "s",
                                t.devices[gpus[0]].name.empty() ? "name unknown" : t.devices[gpus[0]].name, t.nics().size(),
                                t.nics().size() == 1 ? "" : "s", pairs.empty() ? "none (one GPU)" : pairs);
  int infos = 0;
  for (const auto& f : r.findings) {
    if (f.severity == topo::Severity::info) {
      ++infos;
      continue;
    }
    out += fmt::format("  [{}] {}: {}\n", topo::to_string(f.severity), f.title, f.evidence);
  }
  if (infos > 0) {
    // A saved table's findings are the file's, not this machine's: name the command that shows them.
    const std::string file = t.source.rfind("file ", 0) == 0 ? t.source.substr(5) : "";
    out += fmt::format("  {} more finding{} at info level: run `scalescope topo{}` for all\n", infos, infos == 1 ? "" : "s",
                       file.empty() ? "" : " --from " + file);
  }
  return out;
}

std::string render_link_comparison(const std::vector<topo::LinkMismatch>& mismatches, int compared,
                                   const std::string& first_name, const std::string& second_name) {
  if (mismatches.empty()) return fmt::format("link classes: all {} pairs match between {} and {}\n", compared, first_name, second_name);
  if (compared == 0)  // nothing in common: e.g. no GPU here while the file lists some
    return fmt::format("link classes: nothing to compare — {} and {} have no GPU pair in common ({} device{} on one "
                       "side only)\n",
                       first_name, second_name, mismatches.size(), mismatches.size() == 1 ? "" : "s");
  TextTable t({"pair", first_name, second_name});
  for (const auto& m : mismatches) t.add_row({m.b.empty() ? m.a : m.a + "-" + m.b, m.first, m.second});
  return fmt::format("link classes: {} difference{} over {} pairs compared\n", mismatches.size(),
                     mismatches.size() == 1 ? "" : "s", compared) + t.render();
}

}  // namespace scalescope::report
