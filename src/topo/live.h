#pragma once
// Live discovery of this machine's topology: CUDA devices (CUDA runtime), PCIe and NVLink state and the GPU
// pair levels (NVML, loaded at run time with dlopen so the build needs no nvml.h and the program runs without a
// driver), NUMA nodes, CPU sets, NICs and the PCI tree (hwloc), the P2P matrix (cudaDeviceCanAccessPeer).

#include <string>
#include <vector>

#include "topo/topology.h"

namespace scalescope::topo {

/// One CUDA device as this process sees it (CUDA_VISIBLE_DEVICES applies).
struct CudaDevice {
  int ordinal = 0;
  std::string name;
  std::string bus_id;  ///< "0000:18:00.0", lower-case hex, 4-digit domain
  int major = 0, minor = 0, sm_count = 0;
  double memory_bytes = 0;
};

struct CudaFacts {
  bool built = true;     ///< false when the GPU module is not there (CPU-only build, module or its libraries missing)
  int count = 0;
  std::string message;  ///< "CUDA runtime 13.0: 4 devices", or why none ("built without CUDA", "no driver")
  std::vector<CudaDevice> devices;
  std::vector<std::vector<bool>> p2p;  ///< by ordinal; cudaDeviceCanAccessPeer(i, j)
};

/// The CUDA runtime's view, from the GPU module (gpu/cuda_facts.cpp); without the module, count 0, built false
/// and the loader's reason in `message`. Never throws: CUDA errors become `message`.
CudaFacts discover_cuda();

/// PCI bus id in one form for matching across CUDA, NVML and hwloc: "dddd:bb:dd.f" in lower-case hex.
std::string format_bus_id(unsigned domain, unsigned bus, unsigned device, unsigned function);

/// Discovers the topology of this machine. GPUs are numbered as nvidia-smi does (NVML order, which is PCI bus
/// order) when NVML loads, else in PCI bus order of the CUDA devices. GPU pair classes come from NVML
/// (nvmlDeviceGetTopologyCommonAncestor, NVLink counts from the per-link remote PCI ids); without NVML, and for
/// GPU-NIC pairs always, from hwloc's PCI tree. NICs are hwloc's OpenFabrics devices (mlx5_0 ...), as nvidia-smi
/// lists them. On a machine with no GPU, no driver or no NVML the result has no GPUs and its warnings and
/// LiveFacts messages say why; nothing throws for a missing component.
TopologyReading discover_live();

}  // namespace scalescope::topo
