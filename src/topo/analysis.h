#pragma once
// One `scalescope topo` result: the topology, its expected bandwidth matrix, the findings and what could not
// be read; its JSON form (schema scalescope.topo/1) and the check of one topology's link classes against another's.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "topo/bandwidth.h"
#include "topo/findings.h"
#include "topo/topology.h"

namespace scalescope::topo {

struct TopoReport {
  static constexpr const char* kSchema = "scalescope.topo/1";
  Topology topology;
  BandwidthModel bandwidth;
  std::vector<Finding> findings;
  std::vector<std::string> warnings;  ///< what could not be read or discovered
  std::vector<std::string> notes;     ///< how things were read
};

/// Bandwidth model and findings for a reading (parsed file or live discovery).
TopoReport analyse(TopologyReading reading);

/// One pair whose link class differs between two topologies.
struct LinkMismatch {
  std::string a, b;          ///< device labels (GPUs by label, NICs by name when both have one)
  std::string first, second; ///< nvidia-smi tokens in the first and second topology ("NV18", "?" when absent)
};

/// Compares the link classes of every pair of devices present in both topologies. GPUs are matched by label
/// (GPU0 = GPU0: both number GPUs in PCI bus order); NICs by name (mlx5_0) when both have names, else by label.
/// `compared` receives the number of pairs compared. Devices of one topology missing from the other are
/// reported as a mismatch with "absent".
std::vector<LinkMismatch> compare_link_classes(const Topology& first, const Topology& second, int* compared = nullptr);

void to_json(nlohmann::json& j, const TopoReport& report);

}  // namespace scalescope::topo
