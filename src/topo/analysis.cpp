#include "topo/analysis.h"

#include <map>

namespace scalescope::topo {
namespace {

// The key a device is matched by across two topologies.
std::string match_key(const Device& d) {
  if (d.kind == DeviceKind::nic && !d.name.empty()) return "nic:" + d.name;
  return d.label;
}

}  // namespace

TopoReport analyse(TopologyReading reading) {
  TopoReport r;
  r.topology = std::move(reading.topology);
  r.warnings = std::move(reading.warnings);
  r.notes = std::move(reading.notes);
  r.bandwidth = expected_bandwidth(r.topology);
  r.findings = find_issues(r.topology, r.bandwidth);
  return r;
}

std::vector<LinkMismatch> compare_link_classes(const Topology& first, const Topology& second, int* compared) {
  std::map<std::string, int> in_second;
  for (std::size_t i = 0; i < second.devices.size(); ++i) in_second[match_key(second.devices[i])] = static_cast<int>(i);
  std::vector<LinkMismatch> out;
  std::vector<std::pair<int, int>> common;  // positions in first, second
  std::map<std::string, bool> seen;
  for (std::size_t i = 0; i < first.devices.size(); ++i) {
    const auto key = match_key(first.devices[i]);
    seen[key] = true;
    auto it = in_second.find(key);
    if (it == in_second.end())
      out.push_back({first.devices[i].label, "", "present", "absent"});
    else
      common.emplace_back(static_cast<int>(i), it->second);
  }
  for (const auto& d : second.devices)
    if (!seen.count(match_key(d))) out.push_back({d.label, "", "absent", "present"});
  int n = 0;
  for (std::size_t a = 0; a < common.size(); ++a)
    for (std::size_t b = a + 1; b < common.size(); ++b) {
      const Link& x = first.links[common[a].first][common[b].first];
      const Link& y = second.links[common[a].second][common[b].second];
      ++n;
      if (!(x == y))
        out.push_back({first.devices[common[a].first].label, first.devices[common[b].first].label, to_string(x), to_string(y)});
    }
  if (compared) *compared = n;
  return out;
}

void to_json(nlohmann::json& j, const TopoReport& r) {
  j = {{"schema", TopoReport::kSchema}, {"topology", r.topology}};
  // null where there is no figure (self, an unknown link, a pair that is not two GPUs): a 0 would read as a link
  // that moves nothing.
  auto& bw = j["expected_gbps"] = nlohmann::json::array();
  for (const auto& row : r.bandwidth.gbps) {
    auto& out = bw.emplace_back(nlohmann::json::array());
    for (double g : row) out.push_back(g > 0 ? nlohmann::json(g) : nlohmann::json(nullptr));
  }
  j["bandwidth_assumptions"] = r.bandwidth.assumptions;
  j["findings"] = r.findings;
  j["warnings"] = r.warnings;
  j["notes"] = r.notes;
}

}  // namespace scalescope::topo
