#pragma once
// What is wrong with the interconnect, each with its severity, the evidence and what to do. Rules marked
// "live" need data only live discovery has (NVML, CUDA); the rest also work on a saved `topo -m`.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "topo/bandwidth.h"
#include "topo/topology.h"

namespace scalescope::topo {

enum class Severity { info, warning, critical };
std::string to_string(Severity s);

struct Finding {
  Severity severity = Severity::info;
  std::string code;      ///< stable id: "pcie-downtrained", "host-path", "nvlink-down", ...
  std::string title;     ///< one line
  std::string evidence;  ///< the facts it rests on
  std::string action;    ///< what to do
};

/// The CPUs each GPU's rank should be bound to: the GPU's CPU affinity split evenly among the GPUs that share
/// it (in GPU order), each range of the list split the same way, so with SMT numbering ("0-47,96-143") every
/// rank gets cores and their hyperthread siblings. Returns one entry per GPU position in Topology::devices;
/// an empty set where the affinity is not known. Ranges too small to split fall back to splitting the whole list.
std::vector<std::pair<int, CpuSet>> recommended_cpus(const Topology& topology);

/// All findings, most severe first:
///  pcie-downtrained (live, warning): current width below the maximum, or a GPU limited by its slot to fewer
///    than 16 lanes or to a lower generation than the GPU supports;
///  pcie-gen-low (live, info): current generation below the maximum (GPUs lower it when idle);
///  host-path (critical for SYS, warning for PHB/NODE): GPU pairs with no NVLink whose path crosses the host;
///  pcie-only (info): GPU pairs joined only through PCIe switches (PIX/PXB);
///  nvlink-down (live, warning): inactive NVLinks on a GPU whose other links are active;
///  p2p-unsupported (live, warning): cudaDeviceCanAccessPeer false for a pair;
///  gpus-hidden (live, warning; critical when CUDA sees none): CUDA (so NCCL) sees fewer GPUs than NVML (not
///    judged in CPU-only builds, where CUDA sees none by construction);
///  nic-numa (warning): a GPU's nearest NIC is on another NUMA node (SYS path, or disjoint NUMA lists);
///  cpu-binding (info): the CPUs each rank should be bound to (recommended_cpus).
std::vector<Finding> find_issues(const Topology& topology, const BandwidthModel& bandwidth);

void to_json(nlohmann::json& j, const Finding& f);

}  // namespace scalescope::topo
