#pragma once
// The machine's interconnect as `nvidia-smi topo -m` shows it: GPUs and NICs, the path class of every pair
// (X, NV#, PIX, PXB, PHB, NODE, SYS), CPU and NUMA affinity. Filled by the offline parser (saved text) or by
// live discovery (CUDA, NVML, hwloc); the bandwidth model and the findings read only this.

#include <optional>
#include <string>
#include <string_view>
#include <cstdint>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace scalescope::topo {

/// Path class between two devices, as defined by the legend of `nvidia-smi topo -m` (best first):
/// nvlink  NV#  a bonded set of # NVLinks
/// pix     PIX  at most a single PCIe bridge
/// pxb     PXB  multiple PCIe bridges, without the PCIe host bridge
/// phb     PHB  PCIe and a PCIe host bridge (typically the CPU)
/// node    NODE PCIe and the interconnect between PCIe host bridges within a NUMA node
/// sys     SYS  PCIe and the SMP interconnect between NUMA nodes (QPI/UPI); old drivers print SOC
/// unknown      not read (a cut-off table, an N/A cell or a cell that is no link class)
/// self         the X on the diagonal
enum class LinkClass { self, nvlink, pix, pxb, phb, node, sys, unknown };

/// One cell of the matrix. `nvlinks` is the # of NV# (only for LinkClass::nvlink).
struct Link {
  LinkClass cls = LinkClass::unknown;
  int nvlinks = 0;
  friend bool operator==(const Link&, const Link&) = default;
};

/// "X", "NV12", "PIX", "PXB", "PHB", "NODE", "SYS" or "?" (unknown): nvidia-smi's own tokens.
std::string to_string(const Link& link);
/// "self", "nvlink", "pix", "pxb", "phb", "node", "sys", "unknown" (the JSON names).
std::string to_string(LinkClass cls);
/// Quality rank, higher is a faster path: self 100, NV# 50 + #, PIX 5, PXB 4, PHB 3, NODE 2, SYS 1,
/// unknown 0. Only the order is meaningful.
int quality(const Link& link);
/// True for the classes that cross a PCIe host bridge or the CPU interconnect (PHB, NODE, SYS).
bool crosses_host(const Link& link);

/// A set of logical CPU numbers kept as sorted, disjoint, inclusive ranges, as Linux cpulists and
/// nvidia-smi's CPU Affinity column write them ("0-51,104-155", "0,3-9,11-17").
class CpuSet {
 public:
  CpuSet() = default;
  /// From inclusive ranges in any order; overlapping or adjacent ranges merge.
  explicit CpuSet(std::vector<std::pair<int, int>> ranges);
  /// Parses a cpulist ("0-23", "0,3-9,11-17"); nothing for anything else (empty text, "N/A", "3-1",
  /// numbers above kMaxCpu). Never throws.
  static std::optional<CpuSet> parse(std::string_view text);
  /// Largest CPU number accepted by parse (Linux's NR_CPUS maximum is 8192, kernel/Kconfig CONFIG_NR_CPUS).
  static constexpr int kMaxCpu = 8191;

  const std::vector<std::pair<int, int>>& ranges() const { return ranges_; }
  int count() const;
  bool empty() const { return ranges_.empty(); }
  /// The cpulist form: "0-51,104-155"; "" when empty.
  std::string to_string() const;
  friend bool operator==(const CpuSet&, const CpuSet&) = default;

 private:
  std::vector<std::pair<int, int>> ranges_;
};

/// Parses a NUMA node list ("0", "0,3-9,11-17"); nothing for "N/A" or anything that is not a list.
std::optional<std::vector<int>> parse_numa_list(std::string_view text);

/// PCIe link of a device (live only): generation 1..6 and width in lanes; 0 = not known.
/// max_gen and max_width are what NVML calls possible "with this device and system" (the lesser of GPU and
/// slot); gpu_max_gen is what the GPU itself supports (nvmlDeviceGetGpuMaxPcieLinkGeneration).
struct PcieLink {
  int current_gen = 0, max_gen = 0, gpu_max_gen = 0;
  int current_width = 0, max_width = 0;
};

/// One NVLink of a GPU (live only). `version` is NVML's nvmlNvlinkVersion_t value as returned;
/// `remote_bus_id` the PCI bus id at the other end (a GPU or an NVSwitch).
struct NvLinkLane {
  int link = 0;
  bool active = false;
  int version = 0;
  std::string remote_bus_id;
  bool remote_is_switch = false;
  /// NVML's error counters of an active link ("Replay Errors", "Recovery Errors", "CRC Flit Errors", "CRC Data
  /// Errors"), cumulative since the driver loaded; those NVML does not support on the GPU are absent.
  std::vector<std::pair<std::string, std::uint64_t>> errors;
};

enum class DeviceKind { gpu, nic };

struct Device {
  DeviceKind kind = DeviceKind::gpu;
  int index = 0;                   ///< GPU n / NIC n as nvidia-smi numbers them (NVML order for GPUs)
  std::string label;               ///< column label: "GPU0", "NIC3", "mlx5_0"
  std::string name;                ///< "NVIDIA H100 80GB HBM3", NIC legend name "mlx5_0", or "" when not known
  std::string bus_id;              ///< "0000:18:00.0" (live only)
  std::optional<CpuSet> cpu_affinity;      ///< CPUs close to the device; none when not given
  std::optional<std::vector<int>> numa;    ///< NUMA node(s) close to the device; none when not given/N/A
  std::optional<int> gpu_numa_id;          ///< the GPU's own memory NUMA node (coherent Grace systems)
  // Live discovery only:
  std::optional<int> cuda_index;   ///< CUDA ordinal in this process (none: hidden by CUDA_VISIBLE_DEVICES)
  int compute_major = 0, compute_minor = 0;
  int sm_count = 0;
  double memory_bytes = 0;
  PcieLink pcie;
  std::vector<NvLinkLane> nvlinks;
};

/// What live discovery found beyond the matrix (absent for a saved file).
struct LiveFacts {
  bool nvml = false;               ///< libnvidia-ml.so.1 loaded and initialised
  std::string nvml_message;        ///< why not, or the driver version
  std::string cuda_message;        ///< CUDA runtime status ("3 devices", or why none)
  std::string hwloc_message;       ///< hwloc status
  std::string cuda_visible_devices;///< the variable's value; "" when unset
  bool cuda_visible_devices_set = false;
  int nvml_gpu_count = -1;         ///< GPUs that exist (NVML); -1 when NVML is absent
  int cuda_gpu_count = 0;          ///< GPUs this process (and NCCL in it) can use
  bool cuda_built = true;          ///< false when scalescope was built without CUDA (no count to compare)
  /// cudaDeviceCanAccessPeer between CUDA-visible GPUs, by position in Topology::devices; empty when
  /// fewer than 2 GPUs are visible. p2p[i][j] for i != j.
  std::vector<std::vector<bool>> p2p;
  std::vector<int> p2p_devices;    ///< the Topology::devices positions p2p rows/columns refer to
  struct NumaNode {
    int os_index = 0;
    CpuSet cpus;
    double memory_bytes = 0;
  };
  std::vector<NumaNode> numa_nodes;  ///< from hwloc
  int logical_cpus = 0;              ///< from hwloc
};

/// The topology. `links` is devices.size() squared, links[i][j] read in row i, column j.
struct Topology {
  static constexpr const char* kSchema = "scalescope.topo/1";
  std::string source;              ///< "live" or "file NAME"
  std::vector<Device> devices;     ///< GPUs first (by index), then NICs
  std::vector<std::vector<Link>> links;
  bool has_cpu_affinity = false, has_numa_affinity = false, has_gpu_numa_id = false;
  std::optional<LiveFacts> live;

  std::vector<int> gpus() const;   ///< positions of the GPUs in devices
  std::vector<int> nics() const;   ///< positions of the NICs
  int gpu_count() const { return static_cast<int>(gpus().size()); }
  const Link& link(int i, int j) const { return links.at(i).at(j); }
  /// Position of the device with this label, or -1.
  int find(std::string_view label) const;
};

/// A topology with what could not be read (warnings, one sentence each: "row GPU4 cut off after 9 of 21
/// cells") and how something was read that a reader may want to know (notes: "old SOC token read as SYS").
struct TopologyReading {
  Topology topology;
  std::vector<std::string> warnings;
  std::vector<std::string> notes;
};

void to_json(nlohmann::json& j, const Link& link);
void to_json(nlohmann::json& j, const CpuSet& cpus);
void to_json(nlohmann::json& j, const Device& device);
void to_json(nlohmann::json& j, const LiveFacts& live);
/// The JSON form of the topology alone (devices, matrix as nvidia-smi tokens, affinity, live facts).
void to_json(nlohmann::json& j, const Topology& topology);

}  // namespace scalescope::topo
