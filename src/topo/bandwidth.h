#pragma once
// Expected unidirectional bandwidth of every GPU pair from its path class: NVLink links × the per-link
// rate of the generation, or the PCIe link (generation × width × encoding) with a penalty for paths through
// the host bridge or across sockets. These are line-rate ceilings, not measurements: NCCL reaches about
// 75-80 % of them (e.g. ≈ 360 GB/s all-reduce busbw on H200 NV18, 450 GB/s line rate).
// GB = 1e9 bytes throughout.

#include <string>
#include <vector>

#include "topo/topology.h"

namespace scalescope::topo {

/// PCIe bandwidth per lane and direction after line encoding, GB/s, for generation 1..6; 0 otherwise.
/// Source: PCI-SIG base specifications: Gen1 2.5 GT/s and Gen2 5 GT/s with 8b/10b encoding (0.25, 0.5);
/// Gen3 8 GT/s, Gen4 16 GT/s, Gen5 32 GT/s with 128b/130b (0.985, 1.969, 3.938); Gen6 64 GT/s PAM4 in FLIT
/// mode, 242 of every 256 FLIT bytes carry data (7.5625).
double pcie_lane_gbps(int generation);

/// pcie_lane_gbps(generation) × width: e.g. Gen4 x16 = 31.5 GB/s, Gen5 x16 = 63.0 GB/s.
double pcie_link_gbps(int generation, int width);

/// NVLink bandwidth per link and direction, GB/s, by NVLink generation 1..5; 0 otherwise. Source: NVIDIA
/// datasheets, total bidirectional NVLink bandwidth / links / 2: P100 160 GB/s over 4 links (NVLink 1: 20),
/// V100 300 GB/s over 6 (NVLink 2: 25), A100 600 GB/s over 12 (NVLink 3: 25), H100/H200 SXM 900 GB/s over
/// 18 (NVLink 4: 25), B200 1.8 TB/s over 18 (NVLink 5: 50). (nvidia-smi nvlink -s shows 26.562 GB/s on
/// NVLink 4: the signalling rate before protocol overhead.)
double nvlink_link_gbps(int generation);

/// Per-link rate of the NVLink bridge of GA102 boards (RTX 3090, RTX A6000, A40), GB/s per direction:
/// 112.5 GB/s bidirectional over 4 links (NVIDIA RTX A6000 datasheet) = 14.0625.
inline constexpr double kGa102BridgeLinkGbps = 112.5 / 4 / 2;

/// Share of the PCIe line rate assumed for each path class (scalescope's documented assumptions):
/// PIX, PXB: 1 — a PCIe switch forwards peer-to-peer traffic at line rate without the host.
inline constexpr double kSwitchPathFactor = 1.0;
/// PHB: 5/6 — through the CPU's root complex; NCCL's topology model charges Intel root complexes 6/5 of
/// the bandwidth for GPU peer traffic split into 64-byte TLPs (INTEL_P2P_OVERHEAD, NCCL src/graph/topo.h).
inline constexpr double kHostBridgeFactor = 5.0 / 6.0;
/// NODE: 5/6 — between host bridges of one socket: the same root-complex forwarding as PHB; no separate
/// public figure, so no further penalty is assumed.
inline constexpr double kNodeFactor = 5.0 / 6.0;
/// SYS: 1/2 — across the CPU interconnect peer-to-peer is usually unavailable and NCCL stages through host
/// memory, crossing PCIe twice. Measured on this project's H200 machine with NCCL_P2P_DISABLE=1 (SHM through
/// host memory): 28.7 GB/s all-reduce busbw between 2 GPUs on Gen5 x16 (63 GB/s), 0.46 of line rate.
inline constexpr double kSysFactor = 0.5;

/// The path factor above for a PCIe class (pix, pxb, phb, node, sys); 0 for nvlink, self and unknown.
double path_factor(LinkClass cls);

/// PCIe and NVLink parameters used for one GPU, and whether they were measured (live) or assumed.
struct GpuLinkBasis {
  int pcie_gen = 0;
  int pcie_width = 0;
  bool pcie_assumed = true;
  double nvlink_link_gbps = 0;
  bool nvlink_assumed = true;
  std::string pcie_basis;    ///< "live: Gen5 x16 (maximum generation, current width)" or "assumed Gen4 x16 (...)"
  std::string nvlink_basis;  ///< "NVLink 4 (compute capability 9.0)" or "assumed 25 GB/s per link ..."
};

/// PCIe generation implied by a GPU product name (NVIDIA datasheets): Gen5 for H100/H200/H800/GH200/B100/
/// B200/GB200/RTX 50xx/RTX PRO 6000; Gen4 for A100/A800/A30/A40/A10/L40/L4/RTX 30xx/40xx/A6000/6000 Ada;
/// Gen3 for V100/T4/P100/RTX 20xx; 0 when the name says nothing.
int pcie_gen_from_name(const std::string& name);

/// NVLink generation from the CUDA compute capability (sm_60 1, sm_70 2, sm_80 3, sm_86 bridge (returns 3),
/// sm_90 4, sm_100/sm_103 5), or from the product name when major is 0; 0 when unknown.
int nvlink_gen_for(int compute_major, int compute_minor, const std::string& name);

/// The basis for one GPU: live PCIe figures (maximum generation, because GPUs lower the generation when idle,
/// and current width) when known, else the name's generation at x16, else Gen4 x16.
GpuLinkBasis link_basis(const Device& gpu);

struct BandwidthModel {
  /// Expected unidirectional GB/s for each pair of Topology::devices; 0 for self, unknown classes and pairs
  /// that are not two GPUs.
  std::vector<std::vector<double>> gbps;
  std::vector<GpuLinkBasis> basis;        ///< per device (GPU entries only are meaningful)
  std::vector<std::string> assumptions;   ///< sentences, one per distinct assumption used
};

/// The expected bandwidth of every GPU pair: NVLink pairs links × per-link rate (the lower of the two GPUs);
/// PCIe pairs the lower of the two GPUs' PCIe links × path_factor(class).
BandwidthModel expected_bandwidth(const Topology& topology);

}  // namespace scalescope::topo
