#include "topo/live.h"

#include <dlfcn.h>
#include <hwloc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

namespace scalescope::topo {

std::string format_bus_id(unsigned domain, unsigned bus, unsigned device, unsigned function) {
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain & 0xffffu, bus, device, function);
}

namespace {

// ---- NVML, declared here (no nvml.h on the build machines). Signatures, struct layout and enum values from
// NVIDIA's NVML API Reference Guide (docs.nvidia.com/deploy/nvml-api): "Initialization and Cleanup",
// "Device Queries", "NvLink Methods" and the nvmlPciInfo_t struct. NVML enums are C enums (int-sized).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr int NVML_FEATURE_ENABLED = 1;       // nvmlEnableState_t
constexpr unsigned NVML_NVLINK_MAX_LINKS = 18;  // current headers; older ones had 12 (queries past the last link fail)
constexpr int NVML_NVLINK_DEVICE_TYPE_SWITCH = 2;  // nvmlIntNvLinkDeviceType_t: GPU 0, IBMNPU 1, SWITCH 2, UNKNOWN 0xFF
// nvmlGpuTopologyLevel_t
constexpr int NVML_TOPOLOGY_INTERNAL = 0, NVML_TOPOLOGY_SINGLE = 10, NVML_TOPOLOGY_MULTIPLE = 20,
              NVML_TOPOLOGY_HOSTBRIDGE = 30, NVML_TOPOLOGY_NODE = 40, NVML_TOPOLOGY_SYSTEM = 50;
struct nvmlPciInfo_t {            // as filled by nvmlDeviceGetPciInfo_v3 / nvmlDeviceGetNvLinkRemotePciInfo_v2
  char busIdLegacy[16];           // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];                 // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE
};

class Nvml {
 public:
  using InitFn = nvmlReturn_t (*)();
  using ErrorStringFn = const char* (*)(nvmlReturn_t);
  using DriverVersionFn = nvmlReturn_t (*)(char*, unsigned int);
  using CountFn = nvmlReturn_t (*)(unsigned int*);
  using HandleByIndexFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
  using NameFn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
  using PciInfoFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*);
  using UintFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
  using LinkStateFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, int*);
  using LinkUintFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, unsigned int*);
  using LinkPciFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlPciInfo_t*);
  using CommonAncestorFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlDevice_t, int*);

  InitFn init = nullptr, shutdown = nullptr;
  ErrorStringFn error_string = nullptr;
  DriverVersionFn driver_version = nullptr;
  CountFn device_count = nullptr;
  HandleByIndexFn handle_by_index = nullptr;
  NameFn name = nullptr;
  PciInfoFn pci_info = nullptr;
  UintFn curr_gen = nullptr, max_gen = nullptr, gpu_max_gen = nullptr, curr_width = nullptr, max_width = nullptr;
  LinkStateFn link_state = nullptr;
  LinkUintFn link_version = nullptr, link_remote_type = nullptr;
  LinkPciFn link_remote_pci = nullptr;
  CommonAncestorFn common_ancestor = nullptr;
  // nvmlDeviceGetNvLinkErrorCounter(device, link, nvmlNvLinkErrorCounter_t, unsigned long long*): counters
  // NVML_NVLINK_ERROR_DL_REPLAY 0, _DL_RECOVERY 1, _DL_CRC_FLIT 2, _DL_CRC_DATA 3 (NVML API Reference, NvLink Methods).
  nvmlReturn_t (*link_error)(nvmlDevice_t, unsigned, int, unsigned long long*) = nullptr;

  /// Loads and initialises NVML; false with the reason in `why` when it cannot.
  bool load(std::string& why) {
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib_) {
      const char* e = dlerror();
      why = std::string("NVML not available (libnvidia-ml.so.1 could not be loaded: ") + (e ? e : "unknown") +
            "); no NVIDIA driver is installed on this machine or it is not visible in this container";
      return false;
    }
    bool ok = sym(init, "nvmlInit_v2") && sym(shutdown, "nvmlShutdown") && sym(error_string, "nvmlErrorString") &&
              sym(device_count, "nvmlDeviceGetCount_v2") && sym(handle_by_index, "nvmlDeviceGetHandleByIndex_v2") &&
              sym(name, "nvmlDeviceGetName") && sym(pci_info, "nvmlDeviceGetPciInfo_v3");
    if (!ok) {
      why = "NVML is too old: libnvidia-ml.so.1 lacks nvmlInit_v2/nvmlDeviceGetPciInfo_v3 (update the NVIDIA driver)";
      return false;
    }
    // Optional: each missing one only removes its facts.
    sym(driver_version, "nvmlSystemGetDriverVersion");
    sym(curr_gen, "nvmlDeviceGetCurrPcieLinkGeneration");
    sym(max_gen, "nvmlDeviceGetMaxPcieLinkGeneration");
    sym(gpu_max_gen, "nvmlDeviceGetGpuMaxPcieLinkGeneration");
    sym(curr_width, "nvmlDeviceGetCurrPcieLinkWidth");
    sym(max_width, "nvmlDeviceGetMaxPcieLinkWidth");
    sym(link_state, "nvmlDeviceGetNvLinkState");
    sym(link_version, "nvmlDeviceGetNvLinkVersion");
    sym(link_remote_type, "nvmlDeviceGetNvLinkRemoteDeviceType");
    sym(link_remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    sym(link_error, "nvmlDeviceGetNvLinkErrorCounter");
    sym(common_ancestor, "nvmlDeviceGetTopologyCommonAncestor");
    nvmlReturn_t r = init();
    if (r != NVML_SUCCESS) {
      why = fmt::format("NVML loaded but nvmlInit failed: {} (is the NVIDIA kernel driver loaded? see `nvidia-smi`)",
                        error_string(r));
      return false;
    }
    initialised_ = true;
    return true;
  }
  ~Nvml() {
    if (initialised_) shutdown();
    if (lib_) dlclose(lib_);
  }

 private:
  template <class F>
  bool sym(F& f, const char* symbol) {
    f = reinterpret_cast<F>(dlsym(lib_, symbol));
    return f != nullptr;
  }
  void* lib_ = nullptr;
  bool initialised_ = false;
};

std::string nvml_bus_id(const nvmlPciInfo_t& p) { return format_bus_id(p.domain, p.bus, p.device, 0); }

Link level_to_link(int level) {
  switch (level) {
    case NVML_TOPOLOGY_INTERNAL:
    case NVML_TOPOLOGY_SINGLE: return {LinkClass::pix, 0};
    case NVML_TOPOLOGY_MULTIPLE: return {LinkClass::pxb, 0};
    case NVML_TOPOLOGY_HOSTBRIDGE: return {LinkClass::phb, 0};
    case NVML_TOPOLOGY_NODE: return {LinkClass::node, 0};
    case NVML_TOPOLOGY_SYSTEM: return {LinkClass::sys, 0};
    default: return {LinkClass::unknown, 0};
  }
}

struct NvmlGpu {
  nvmlDevice_t handle = nullptr;
  Device device;
};

// ---- hwloc
class Hwloc {
 public:
  bool load(std::string& why) {
    if (hwloc_topology_init(&topo_) != 0) {
      why = "hwloc_topology_init failed";
      return false;
    }
    hwloc_topology_set_io_types_filter(topo_, HWLOC_TYPE_FILTER_KEEP_ALL);
    if (hwloc_topology_load(topo_) != 0) {
      why = "hwloc_topology_load failed";
      return false;
    }
    loaded_ = true;
    return true;
  }
  ~Hwloc() {
    if (topo_) hwloc_topology_destroy(topo_);
  }
  hwloc_topology_t get() const { return topo_; }

  hwloc_obj_t pci(const std::string& bus_id) const {
    unsigned dom = 0, bus = 0, dev = 0, fn = 0;
    if (std::sscanf(bus_id.c_str(), "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) return nullptr;
    return hwloc_get_pcidev_by_busid(topo_, dom, bus, dev, fn);
  }

  static CpuSet to_cpuset(hwloc_const_bitmap_t b) {
    std::vector<std::pair<int, int>> ranges;
    if (!b || hwloc_bitmap_iszero(b)) return {};
    int id = -1;
    while ((id = hwloc_bitmap_next(b, id)) != -1 && id <= CpuSet::kMaxCpu) ranges.emplace_back(id, id);
    return CpuSet(std::move(ranges));
  }
  static std::vector<int> to_list(hwloc_const_bitmap_t b) {
    std::vector<int> out;
    if (!b) return out;
    int id = -1;
    while ((id = hwloc_bitmap_next(b, id)) != -1 && out.size() < 4096) out.push_back(id);
    return out;
  }

  // Fills CPU and NUMA affinity from the device's nearest non-I/O ancestor (what nvidia-smi prints too).
  void locality(hwloc_obj_t obj, Device& d) const {
    if (!obj) return;
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo_, obj);
    if (!anc) return;
    d.cpu_affinity = to_cpuset(anc->cpuset);
    auto nodes = to_list(anc->nodeset);
    if (!nodes.empty()) d.numa = nodes;
  }

  // Path class between two PCI devices in hwloc's tree (nvidia-smi's legend): the common ancestor is a PCIe
  // switch (PIX when each device is at most one bridge below it, else PXB), a host bridge (PHB), a CPU-side object
  // of one NUMA node (NODE) or more (SYS).
  Link path(hwloc_obj_t a, hwloc_obj_t b) const {
    if (!a || !b) return {};
    std::vector<hwloc_obj_t> up_a;
    for (hwloc_obj_t o = a->parent; o; o = o->parent) up_a.push_back(o);
    int depth_b = 0;
    for (hwloc_obj_t o = b->parent; o; o = o->parent, ++depth_b) {
      auto it = std::find(up_a.begin(), up_a.end(), o);
      if (it == up_a.end()) continue;
      const int depth_a = static_cast<int>(it - up_a.begin());
      if (o->type == HWLOC_OBJ_BRIDGE) {
        if (o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) return {LinkClass::phb, 0};
        return {depth_a <= 1 && depth_b <= 1 ? LinkClass::pix : LinkClass::pxb, 0};
      }
      if (o->type == HWLOC_OBJ_PCI_DEVICE) return {LinkClass::pix, 0};
      hwloc_obj_t na = hwloc_get_non_io_ancestor_obj(topo_, a), nb = hwloc_get_non_io_ancestor_obj(topo_, b);
      if (na && nb && na->nodeset && nb->nodeset && hwloc_bitmap_isequal(na->nodeset, nb->nodeset) &&
          hwloc_bitmap_weight(na->nodeset) == 1)
        return {LinkClass::node, 0};
      return {LinkClass::sys, 0};
    }
    return {};
  }

 private:
  hwloc_topology_t topo_ = nullptr;
  bool loaded_ = false;
};

}  // namespace

TopologyReading discover_live() {
  TopologyReading out;
  Topology& t = out.topology;
  t.source = "live";
  t.live = LiveFacts{};
  LiveFacts& live = *t.live;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) {
    live.cuda_visible_devices_set = true;
    live.cuda_visible_devices = v;
  }

  Hwloc hw;
  std::string why;
  const bool have_hwloc = hw.load(why);
  if (have_hwloc) {
    hwloc_obj_t node = nullptr;
    while ((node = hwloc_get_next_obj_by_type(hw.get(), HWLOC_OBJ_NUMANODE, node)))
      live.numa_nodes.push_back({static_cast<int>(node->os_index), Hwloc::to_cpuset(node->cpuset),
                                 static_cast<double>(node->attr->numanode.local_memory)});
    live.logical_cpus = hwloc_get_nbobjs_by_type(hw.get(), HWLOC_OBJ_PU);
    int pci = 0;
    for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_pcidev(hw.get(), o));) ++pci;
    live.hwloc_message = fmt::format("hwloc {}: {} NUMA node{}, {} logical CPUs, {} PCI devices", HWLOC_VERSION,
                                     live.numa_nodes.size(), live.numa_nodes.size() == 1 ? "" : "s", live.logical_cpus, pci);
    if (pci == 0)
      out.warnings.push_back("hwloc sees no PCI devices (a container without /sys/bus/pci?): GPU and NIC locality "
                             "and the NIC paths are unknown");
  } else {
    live.hwloc_message = "hwloc failed: " + why;
    out.warnings.push_back(live.hwloc_message + "; CPU, NUMA and NIC information is missing");
  }

  const CudaFacts cuda = discover_cuda();
  live.cuda_message = cuda.message;
  live.cuda_gpu_count = cuda.count;
  live.cuda_built = cuda.built;

  // GPUs: NVML order (nvidia-smi's numbering) when NVML loads, else the CUDA devices in PCI bus order.
  Nvml nvml;
  std::vector<NvmlGpu> gpus;
  live.nvml = nvml.load(why);
  if (live.nvml) {
    char version[96] = {};
    if (nvml.driver_version && nvml.driver_version(version, sizeof version) == NVML_SUCCESS)
      live.nvml_message = std::string("NVML loaded, driver ") + version;
    else
      live.nvml_message = "NVML loaded";
    unsigned count = 0;
    if (nvml.device_count(&count) != NVML_SUCCESS) count = 0;
    live.nvml_gpu_count = static_cast<int>(count);
    for (unsigned i = 0; i < count && i < 1024; ++i) {
      NvmlGpu g;
      if (nvml.handle_by_index(i, &g.handle) != NVML_SUCCESS) {
        out.warnings.push_back(fmt::format("NVML could not open GPU {} (it may be in an error state: see nvidia-smi)", i));
        continue;
      }
      Device& d = g.device;
      d.kind = DeviceKind::gpu;
      d.index = static_cast<int>(i);
      d.label = "GPU" + std::to_string(i);
      char name[96] = {};
      if (nvml.name(g.handle, name, sizeof name) == NVML_SUCCESS) d.name = name;
      nvmlPciInfo_t pci{};
      if (nvml.pci_info(g.handle, &pci) == NVML_SUCCESS) d.bus_id = nvml_bus_id(pci);
      unsigned v = 0;
      if (nvml.curr_gen && nvml.curr_gen(g.handle, &v) == NVML_SUCCESS) d.pcie.current_gen = static_cast<int>(v);
      if (nvml.max_gen && nvml.max_gen(g.handle, &v) == NVML_SUCCESS) d.pcie.max_gen = static_cast<int>(v);
      if (nvml.gpu_max_gen && nvml.gpu_max_gen(g.handle, &v) == NVML_SUCCESS) d.pcie.gpu_max_gen = static_cast<int>(v);
      if (nvml.curr_width && nvml.curr_width(g.handle, &v) == NVML_SUCCESS) d.pcie.current_width = static_cast<int>(v);
      if (nvml.max_width && nvml.max_width(g.handle, &v) == NVML_SUCCESS) d.pcie.max_width = static_cast<int>(v);
      if (nvml.link_state) {
        for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; ++l) {
          int state = 0;
          if (nvml.link_state(g.handle, l, &state) != NVML_SUCCESS) continue;  // no such link
          NvLinkLane lane;
          lane.link = static_cast<int>(l);
          lane.active = state == NVML_FEATURE_ENABLED;
          if (nvml.link_version && nvml.link_version(g.handle, l, &v) == NVML_SUCCESS) lane.version = static_cast<int>(v);
          nvmlPciInfo_t remote{};
          if (lane.active && nvml.link_remote_pci && nvml.link_remote_pci(g.handle, l, &remote) == NVML_SUCCESS)
            lane.remote_bus_id = nvml_bus_id(remote);
          unsigned type = 0;
          if (lane.active && nvml.link_remote_type && nvml.link_remote_type(g.handle, l, &type) == NVML_SUCCESS)
            lane.remote_is_switch = static_cast<int>(type) == NVML_NVLINK_DEVICE_TYPE_SWITCH;
          if (lane.active && nvml.link_error) {  // cumulative since the driver loaded; NVLink 5 drops some (NOT_SUPPORTED)
            static constexpr std::pair<int, const char*> kCounters[] = {
                {0, "Replay Errors"}, {1, "Recovery Errors"}, {2, "CRC Flit Errors"}, {3, "CRC Data Errors"}};
            for (const auto& [counter, label] : kCounters) {
              unsigned long long value = 0;
              if (nvml.link_error(g.handle, l, counter, &value) == NVML_SUCCESS) lane.errors.emplace_back(label, value);
            }
          }
          d.nvlinks.push_back(std::move(lane));
        }
      }
      gpus.push_back(std::move(g));
    }
  } else {
    live.nvml_message = why;
    out.warnings.push_back(why);
    std::vector<CudaDevice> sorted = cuda.devices;
    std::sort(sorted.begin(), sorted.end(), [](const CudaDevice& a, const CudaDevice& b) { return a.bus_id < b.bus_id; });
    for (std::size_t i = 0; i < sorted.size(); ++i) {
      NvmlGpu g;
      g.device.kind = DeviceKind::gpu;
      g.device.index = static_cast<int>(i);
      g.device.label = "GPU" + std::to_string(i);
      g.device.name = sorted[i].name;
      g.device.bus_id = sorted[i].bus_id;
      gpus.push_back(std::move(g));
    }
  }
  // CUDA facts by bus id.
  for (auto& g : gpus)
    for (const auto& c : cuda.devices)
      if (c.bus_id == g.device.bus_id) {
        g.device.cuda_index = c.ordinal;
        g.device.compute_major = c.major;
        g.device.compute_minor = c.minor;
        g.device.sm_count = c.sm_count;
        g.device.memory_bytes = c.memory_bytes;
        if (g.device.name.empty()) g.device.name = c.name;
      }
  for (auto& g : gpus) {
    if (have_hwloc) hw.locality(hw.pci(g.device.bus_id), g.device);
    t.devices.push_back(g.device);
  }
  // NICs: hwloc's OpenFabrics OS devices (the RDMA devices nvidia-smi lists as NICn), under their PCI device.
  std::vector<hwloc_obj_t> pci_of;  // per device position
  for (const auto& g : gpus) pci_of.push_back(have_hwloc ? hw.pci(g.device.bus_id) : nullptr);
  if (have_hwloc) {
    int nic = 0;
    for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_osdev(hw.get(), o));) {
      if (o->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS || !o->name) continue;
      hwloc_obj_t p = o->parent;
      while (p && p->type != HWLOC_OBJ_PCI_DEVICE) p = p->parent;
      Device d;
      d.kind = DeviceKind::nic;
      d.index = nic;
      d.label = "NIC" + std::to_string(nic++);
      d.name = o->name;
      if (p) d.bus_id = format_bus_id(p->attr->pcidev.domain, p->attr->pcidev.bus, p->attr->pcidev.dev, p->attr->pcidev.func);
      hw.locality(p, d);
      t.devices.push_back(std::move(d));
      pci_of.push_back(p);
    }
  }
  const std::size_t n = t.devices.size();
  t.links.assign(n, std::vector<Link>(n));
  std::map<std::string, int> gpu_by_bus;
  for (std::size_t i = 0; i < gpus.size(); ++i) gpu_by_bus[gpus[i].device.bus_id] = static_cast<int>(i);
  // NVLink counts per pair: direct links by remote bus id; through NVSwitch every pair of switch-attached GPUs
  // gets the lesser of their switch link counts (nvidia-smi shows NV18 between any two H100s of an HGX board).
  std::vector<std::map<int, int>> direct(gpus.size());
  std::vector<int> via_switch(gpus.size(), 0);
  for (std::size_t i = 0; i < gpus.size(); ++i)
    for (const auto& l : gpus[i].device.nvlinks) {
      if (!l.active) continue;
      auto it = gpu_by_bus.find(l.remote_bus_id);
      if (it != gpu_by_bus.end() && !l.remote_is_switch) ++direct[i][it->second];
      else ++via_switch[i];
    }
  bool pairs_from_hwloc = false, pair_unknown = false;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) {
        t.links[i][j] = {LinkClass::self, 0};
        continue;
      }
      if (i < gpus.size() && j < gpus.size()) {
        int links = direct[i].count(static_cast<int>(j)) ? direct[i][static_cast<int>(j)] : 0;
        links += std::min(via_switch[i], via_switch[j]);
        if (links > 0) {
          t.links[i][j] = {LinkClass::nvlink, links};
          continue;
        }
        int level = -1;
        if (live.nvml && nvml.common_ancestor &&
            nvml.common_ancestor(gpus[i].handle, gpus[j].handle, &level) == NVML_SUCCESS) {
          t.links[i][j] = level_to_link(level);
          continue;
        }
      }
      t.links[i][j] = have_hwloc ? hw.path(pci_of[i], pci_of[j]) : Link{};
      if (i < gpus.size() && j < gpus.size()) pairs_from_hwloc = true;
      if (t.links[i][j].cls == LinkClass::unknown) pair_unknown = true;
    }
  t.has_cpu_affinity = have_hwloc;
  t.has_numa_affinity = have_hwloc;
  if (pairs_from_hwloc && !gpus.empty())
    out.notes.push_back("GPU pair classes from hwloc's PCI tree (NVML's common-ancestor query was not available)");
  if (pair_unknown)
    out.warnings.push_back("some device pairs could not be placed in the PCI tree (shown as ?)");
  if (!t.nics().empty()) out.notes.push_back("GPU-NIC classes from hwloc's PCI tree");

  // P2P among the CUDA-visible GPUs, by their position in devices.
  std::vector<int> pos_of_ordinal(cuda.count, -1);
  for (std::size_t i = 0; i < gpus.size(); ++i)
    if (t.devices[i].cuda_index && *t.devices[i].cuda_index < cuda.count) pos_of_ordinal[*t.devices[i].cuda_index] = static_cast<int>(i);
  if (cuda.count >= 2 && static_cast<int>(cuda.p2p.size()) == cuda.count) {
    for (int o = 0; o < cuda.count; ++o)
      if (pos_of_ordinal[o] >= 0) live.p2p_devices.push_back(pos_of_ordinal[o]);
    std::vector<int> ordinals;
    for (int o = 0; o < cuda.count; ++o)
      if (pos_of_ordinal[o] >= 0) ordinals.push_back(o);
    live.p2p.assign(ordinals.size(), std::vector<bool>(ordinals.size(), true));
    for (std::size_t a = 0; a < ordinals.size(); ++a)
      for (std::size_t b = 0; b < ordinals.size(); ++b)
        if (a != b) live.p2p[a][b] = cuda.p2p[ordinals[a]][ordinals[b]];
  }
  if (!live.nvml && !gpus.empty())
    out.warnings.push_back("without NVML the PCIe generation/width and NVLink state are unknown");
  if (gpus.empty())
    out.warnings.push_back(std::string("no GPU is visible") + (live.nvml ? " (NVML lists none)" : "") + ": " +
                           live.cuda_message);
  return out;
}

}  // namespace scalescope::topo
