#include "topo/topology.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace scalescope::topo {

std::string to_string(const Link& link) {
  switch (link.cls) {
    case LinkClass::self: return "X";
    case LinkClass::nvlink: return "NV" + std::to_string(link.nvlinks);
    case LinkClass::pix: return "PIX";
    case LinkClass::pxb: return "PXB";
    case LinkClass::phb: return "PHB";
    case LinkClass::node: return "NODE";
    case LinkClass::sys: return "SYS";
    case LinkClass::unknown: break;
  }
  return "?";
}

std::string to_string(LinkClass cls) {
  switch (cls) {
    case LinkClass::self: return "self";
    case LinkClass::nvlink: return "nvlink";
    case LinkClass::pix: return "pix";
    case LinkClass::pxb: return "pxb";
    case LinkClass::phb: return "phb";
    case LinkClass::node: return "node";
    case LinkClass::sys: return "sys";
    case LinkClass::unknown: break;
  }
  return "unknown";
}

int quality(const Link& link) {
  switch (link.cls) {
    case LinkClass::self: return 100;
    case LinkClass::nvlink: return 50 + link.nvlinks;
    case LinkClass::pix: return 5;
    case LinkClass::pxb: return 4;
    case LinkClass::phb: return 3;
    case LinkClass::node: return 2;
    case LinkClass::sys: return 1;
    case LinkClass::unknown: break;
  }
  return 0;
}

bool crosses_host(const Link& link) {
  return link.cls == LinkClass::phb || link.cls == LinkClass::node || link.cls == LinkClass::sys;
}

CpuSet::CpuSet(std::vector<std::pair<int, int>> ranges) {
  std::sort(ranges.begin(), ranges.end());
  for (const auto& r : ranges) {
    if (!ranges_.empty() && r.first <= ranges_.back().second + 1)
      ranges_.back().second = std::max(ranges_.back().second, r.second);
    else
      ranges_.push_back(r);
  }
}

namespace {

// A non-negative decimal number that is the whole of `text`, at most `max`.
std::optional<int> parse_uint(std::string_view text, int max) {
  int v = 0;
  if (text.empty() || text.size() > 9) return std::nullopt;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < 0 || v > max) return std::nullopt;
  return v;
}

std::optional<std::vector<std::pair<int, int>>> parse_ranges(std::string_view text, int max) {
  std::vector<std::pair<int, int>> out;
  if (text.empty()) return std::nullopt;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    std::size_t dash = item.find('-');
    auto lo = parse_uint(item.substr(0, dash), max);
    auto hi = dash == std::string_view::npos ? lo : parse_uint(item.substr(dash + 1), max);
    if (!lo || !hi || *hi < *lo) return std::nullopt;
    out.emplace_back(*lo, *hi);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::optional<CpuSet> CpuSet::parse(std::string_view text) {
  auto ranges = parse_ranges(text, kMaxCpu);
  if (!ranges) return std::nullopt;
  return CpuSet(std::move(*ranges));
}

int CpuSet::count() const {
  int n = 0;
  for (const auto& r : ranges_) n += r.second - r.first + 1;
  return n;
}

std::string CpuSet::to_string() const {
  std::string out;
  for (const auto& r : ranges_) {
    if (!out.empty()) out += ',';
    out += r.first == r.second ? std::to_string(r.first) : fmt::format("{}-{}", r.first, r.second);
  }
  return out;
}

std::optional<std::vector<int>> parse_numa_list(std::string_view text) {
  // Linux's MAX_NUMNODES is at most 1024 (CONFIG_NODES_SHIFT ≤ 10).
  auto ranges = parse_ranges(text, 1023);
  if (!ranges) return std::nullopt;
  std::vector<int> nodes;
  const CpuSet merged(std::move(*ranges));
  for (const auto& r : merged.ranges())
    for (int n = r.first; n <= r.second; ++n) nodes.push_back(n);
  return nodes;
}

std::vector<int> Topology::gpus() const {
  std::vector<int> out;
  for (std::size_t i = 0; i < devices.size(); ++i)
    if (devices[i].kind == DeviceKind::gpu) out.push_back(static_cast<int>(i));
  return out;
}

std::vector<int> Topology::nics() const {
  std::vector<int> out;
  for (std::size_t i = 0; i < devices.size(); ++i)
    if (devices[i].kind == DeviceKind::nic) out.push_back(static_cast<int>(i));
  return out;
}

int Topology::find(std::string_view label) const {
  for (std::size_t i = 0; i < devices.size(); ++i)
    if (devices[i].label == label) return static_cast<int>(i);
  return -1;
}

void to_json(nlohmann::json& j, const Link& link) {
  j = {{"class", to_string(link.cls)}, {"token", to_string(link)}};
  if (link.cls == LinkClass::nvlink) j["nvlinks"] = link.nvlinks;
}

void to_json(nlohmann::json& j, const CpuSet& cpus) { j = cpus.to_string(); }

void to_json(nlohmann::json& j, const Device& d) {
  j = {{"kind", d.kind == DeviceKind::gpu ? "gpu" : "nic"}, {"index", d.index}, {"label", d.label}, {"name", d.name}};
  if (!d.bus_id.empty()) j["bus_id"] = d.bus_id;
  j["cpu_affinity"] = d.cpu_affinity ? nlohmann::json(d.cpu_affinity->to_string()) : nlohmann::json(nullptr);
  j["numa_affinity"] = d.numa ? nlohmann::json(*d.numa) : nlohmann::json(nullptr);
  j["gpu_numa_id"] = d.gpu_numa_id ? nlohmann::json(*d.gpu_numa_id) : nlohmann::json(nullptr);
  if (d.cuda_index) j["cuda_index"] = *d.cuda_index;
  if (d.sm_count > 0) {
    j["compute_capability"] = fmt::format("{}.{}", d.compute_major, d.compute_minor);
    j["sm_count"] = d.sm_count;
    j["memory_bytes"] = d.memory_bytes;
  }
  if (d.pcie.max_gen > 0 || d.pcie.current_gen > 0)
    j["pcie"] = {{"current_gen", d.pcie.current_gen}, {"max_gen", d.pcie.max_gen}, {"gpu_max_gen", d.pcie.gpu_max_gen},
                 {"current_width", d.pcie.current_width}, {"max_width", d.pcie.max_width}};
  if (!d.nvlinks.empty()) {
    auto& lanes = j["nvlinks"] = nlohmann::json::array();
    for (const auto& l : d.nvlinks) {
      nlohmann::json errors = nlohmann::json::object();
      for (const auto& [name, value] : l.errors) errors[name] = value;
      lanes.push_back({{"link", l.link}, {"active", l.active}, {"nvml_version", l.version},
                       {"remote_bus_id", l.remote_bus_id}, {"remote_is_switch", l.remote_is_switch}, {"errors", errors}});
    }
  }
}

void to_json(nlohmann::json& j, const LiveFacts& l) {
  j = {{"nvml", l.nvml}, {"nvml_message", l.nvml_message}, {"cuda_message", l.cuda_message},
       {"hwloc_message", l.hwloc_message}, {"nvml_gpu_count", l.nvml_gpu_count}, {"cuda_gpu_count", l.cuda_gpu_count}, {"cuda_built", l.cuda_built},
       {"cuda_visible_devices", l.cuda_visible_devices_set ? nlohmann::json(l.cuda_visible_devices) : nlohmann::json(nullptr)},
       {"logical_cpus", l.logical_cpus}};
  auto& nodes = j["numa_nodes"] = nlohmann::json::array();
  for (const auto& n : l.numa_nodes)
    nodes.push_back({{"node", n.os_index}, {"cpus", n.cpus.to_string()}, {"memory_bytes", n.memory_bytes}});
  j["p2p_devices"] = l.p2p_devices;
  j["p2p"] = l.p2p;
}

void to_json(nlohmann::json& j, const Topology& t) {
  j = {{"source", t.source}, {"devices", t.devices}};
  auto& m = j["matrix"] = nlohmann::json::array();
  for (const auto& row : t.links) {
    auto r = nlohmann::json::array();
    for (const auto& l : row) r.push_back(to_string(l));
    m.push_back(std::move(r));
  }
  j["columns"] = {{"cpu_affinity", t.has_cpu_affinity}, {"numa_affinity", t.has_numa_affinity},
                  {"gpu_numa_id", t.has_gpu_numa_id}};
  if (t.live) j["live"] = *t.live;
}

}  // namespace scalescope::topo
