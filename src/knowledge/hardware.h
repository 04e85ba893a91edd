#pragma once
// The hardware table: what each GPU model and network adapter should give, so that a measured figure can be
// judged ("21 GB/s is one NVLink of two on this GPU", "PCIe Gen3 x16 at its ceiling on that one"). Per GPU model,
// Pascal to Blackwell, datacenter and consumer: architecture, form factor, PCIe generation and width, NVLink
// generation, links per GPU and per-link rate, the NVLink bridge of boards that take one, whether the driver
// allows peer-to-peer over PCIe, memory and dense tensor throughput. Per network: line rates of InfiniBand and
// Ethernet generations and the bus bandwidth NCCL reaches over them. Then the expected all-reduce bus bandwidth
// of each path class. Every figure names its source (datasheets, NCCL's topology model, the project's own
// measurements in bench/RESULTS.md). The GPU rows are data: data/gpus.json, compiled in (knowledge/embedded_data.h)
// and validated when first used; a malformed row is a build defect that the knowledge tests catch. GB = 1e9 bytes; Gb/s = 1e9 bits/s. Pure data:
// nothing here touches a GPU, a file or the network, and nothing throws.

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "topo/bandwidth.h"  // pcie_link_gbps, nvlink_link_gbps, path_factor and kSysFactor, which the ceilings use
#include "topo/topology.h"

namespace scalescope::topo {

/// How a GPU is built into a machine.
enum class GpuForm {
  sxm,          ///< SXM / OAM module on an HGX/DGX baseboard (NVLink to the other GPUs, often through NVSwitch)
  pcie,         ///< datacenter PCIe card (may take an NVLink bridge: A100 PCIe, H100 NVL, A30, A40 …)
  workstation,  ///< professional card (RTX A6000, RTX 6000 Ada, Quadro …)
  consumer,     ///< GeForce / TITAN
  superchip,    ///< Grace-Hopper / Grace-Blackwell modules (GH200, GB200), DGX Spark's GB10
};
std::string_view to_string(GpuForm form);

/// One GPU model. Rates are per direction. A figure that could not be sourced is 0 and the `source` says so.
struct GpuSpec {
  std::string_view model;         ///< canonical name: "A100 SXM4 40GB", "H100 PCIe", "GeForce RTX 4090"
  std::string_view architecture;  ///< "Kepler", "Maxwell", "Pascal", "Volta", "Turing", "Ampere", "Ada Lovelace", "Hopper", "Blackwell"
  int compute_major = 0, compute_minor = 0;
  GpuForm form = GpuForm::pcie;
  /// PCIe generation of the GPU's host link; 0 when the GPU has none of its own (GH200, GB200 and GB10 reach
  /// their CPU over NVLink-C2C).
  int pcie_gen = 0;
  int pcie_width = 16;            ///< lanes (0 together with pcie_gen 0)
  int nvlink_gen = 0;             ///< 0: no NVLink
  /// NVLinks per GPU in total (V100 SXM2 6, A100 SXM4 12, H100 SXM5 18 …); for bridged cards the links the
  /// bridge(s) carry, since the others are not wired out.
  int nvlink_links = 0;
  /// GB/s per link and direction, as the datasheet's total (bidirectional) NVLink bandwidth / links / 2:
  /// 20 (NVLink 1), 25 (NVLink 2–4), 50 (NVLink 5), 14.0625 (GA102's bridge). nvidia-smi nvlink -s prints the
  /// signalling rate instead (26.562 GB/s on NVLink 4), before protocol overhead.
  double nvlink_link_gbps = 0;
  /// NVLink bridge between two cards (PCIe and consumer boards that take one): links the bridge carries; 0 none.
  int bridge_links = 0;
  /// Whether the driver allows CUDA peer-to-peer over PCIe for this model. GeForce boards since Ampere (and the
  /// RTX 20 series without a bridge) report "NS" in `nvidia-smi topo -p2p`, so NCCL falls back to SHM.
  bool pcie_p2p = true;
  double memory_gb = 0;           ///< memory as the datasheet states it ("80 GB"); per GPU for multi-GPU boards
  /// Dense (not sparse) 16-bit tensor throughput, TFLOP/s: BF16 where the GPU has it, else FP16 (Volta, Turing),
  /// with FP32 accumulation (what mixed-precision training runs; GeForce boards run it at half their
  /// FP16-accumulate rate, and that half is what is stored). P100 has no tensor cores: its FP16 rate on the CUDA
  /// cores is stored. 0: unknown, or no fast 16-bit path (GP102/GP104 run FP16 at 1/64 rate).
  double dense_bf16_tflops = 0;
  /// FP32 on the CUDA cores (no tensor cores), TFLOP/s: what FP32 training without TF32 runs at. 0: unknown.
  double fp32_tflops = 0;
  /// Memory bandwidth, GB/s. 0: unknown.
  double memory_bw_gbps = 0;
  std::string_view source;        ///< datasheet or page the figures come from
  /// The name rule find_gpu uses (see there): alternatives split by ';', each a list of clauses split by ','
  /// that must all hold; a clause is a set of phrases split by '|' of which one must appear, or with a leading
  /// '!' none may appear. Phrases are compared as whole tokens ("a 10" does not match "A100").
  std::string_view match;
};

/// The whole table (for docs and tests): Kepler and Maxwell datacenter boards first, then Pascal on by architecture;
/// each model once.
std::span<const GpuSpec> gpu_table();

/// The entry for a product name as tools print it — nvidia-smi, nccl-tests device lists, PyTorch, NCCL:
/// "NVIDIA A100-SXM4-40GB", "Tesla V100-SXM2-16GB", "Tesla T4", "GeForce RTX 2080 Ti", "NVIDIA GeForce RTX 4090",
/// "NVIDIA H100 80GB HBM3" (SXM5), "NVIDIA H100 PCIe", "NVIDIA H200", "NVIDIA B200", "TITAN RTX", "Quadro RTX 8000"
/// … Case and spacing are ignored. nullptr when the name matches no entry (or is ambiguous between forms: then
/// the entry whose other figures agree is not guessed).
///
/// How: the name is lower-cased and cut into tokens at every character that is not a letter or digit and at
/// every change between letters and digits ("A100-SXM4-80GB" → a 100 sxm 4 80 gb, so "80 GB" and "80GB" read
/// alike). Each entry's `match` rule is tried; the answer is the entry when exactly one rule holds, else
/// nullptr. Rules compare whole tokens, so "A10" is not "A100", "L4" is not "L40"/"L40S", "B200" is not "GB200",
/// "A800" is not "A8000". A name that names no form, or no memory size where the table holds two ("NVIDIA
/// A100", "Tesla V100-16GB", "NVIDIA GH200", and "NVIDIA H100", which the driver prints for a variant whose form
/// is not sourced) gives nullptr; the bare names the driver prints for exactly one form match it ("NVIDIA
/// H200" is the SXM part, "NVIDIA H200 NVL" the NVL card). Laptop, Max-Q, mobile, embedded parts and MIG slices
/// ("… MIG 1g.5gb") give nullptr: their figures are not the board's.
const GpuSpec* find_gpu(std::string_view product_name);

/// A network link class.
struct NicSpec {
  std::string_view name;          ///< "InfiniBand HDR", "Ethernet 100G" …
  std::string_view kind;          ///< "InfiniBand", "Ethernet"
  double line_gbit = 0;           ///< per port, as ibstat's "Rate:" or the Ethernet speed names it
  /// Data rate per port after line encoding, Gb/s: 0.8 × line for InfiniBand SDR/DDR/QDR (8b/10b), 64/66 ×
  /// 56 for FDR; equal to line_gbit for the rest (whose nominal rate is already the data rate).
  double data_gbit = 0;
  std::string_view source;
};
std::span<const NicSpec> nic_table();

/// The entry whose line rate is `line_gbit` (ibstat's "Rate: 200" → InfiniBand HDR when `infiniband`, else the
/// Ethernet class of that speed); nullptr when none. Rates within 1 % match. Two InfiniBand generations share
/// a rate (EDR and HDR100 at 100, HDR and NDR200 at 200): the full-width generation (EDR, HDR) is returned.
const NicSpec* find_nic(double line_gbit, bool infiniband);

/// The all-reduce bus bandwidth NCCL reaches over a network port of `line_gbit`, GB/s: line / 8 × efficiency.
/// NCCL's maintainers' rule of thumb is about 12 GB/s per 100 Gb/s port (24 for HDR 200 Gb/s, 48 for NDR 400):
/// 0.96 of line rate (github.com/NVIDIA/nccl-tests/issues/119). 0 for a rate ≤ 0.
double nic_busbw_gbps(double line_gbit);
/// The efficiency used by nic_busbw_gbps (0.96).
inline constexpr double kNicBusbwEfficiency = 0.96;

/// Share of the NVLink line rate (links × the datasheet per-link rate) that NCCL's ring all-reduce reaches at
/// large sizes, taken as the ceiling: 0.80. Derived from ../shared/anchors.md (4 × H200, every pair NV18,
/// nccl-tests 2.19.6, bf16, NVLS off): at 2 GiB, 4 GPUs reach 359.4 GB/s busbw = 0.80 of 18 × 25 = 450 GB/s
/// (0.75 of the 478 GB/s signalling rate) and 2 GPUs 339.6 = 0.75 (0.71). The higher figure is the ceiling, so
/// the 2-GPU run reads as 94 % of it. NVLink SHARP (NVLS, NVSwitch multicast on H100 and later) reduces inside
/// the switch and can exceed this; the ceiling is for ring/tree algorithms.
inline constexpr double kNvlinkShare = 0.80;
/// Share of the modelled PCIe path (line rate × path_factor of bandwidth.h) that NCCL reaches at large sizes:
/// 0.91. Derived from ../shared/anchors.md: NCCL_P2P_DISABLE=1 (SHM through host memory) on the H200 machine
/// gave 28.7 GB/s all-reduce busbw between 2 GPUs on Gen5 x16 (63.0 GB/s): 28.7 / (63.0 × kSysFactor 0.5) =
/// 0.91, about what PCIe's per-packet overhead leaves of a 256-byte payload. The one measured share is applied to
/// every PCIe class (no P2P-through-a-switch figure was measured on these machines); with 4 GPUs the SHM path gave
/// 24.5 GB/s, 0.78, so the ceiling is the 2-GPU figure.
inline constexpr double kPcieShare = 0.91;
/// What is assumed for a GPU the table does not know (find_gpu gave nullptr): PCIe Gen4 x16 and 25 GB/s per
/// NVLink (NVLink 2, 3 and 4 all run 25), with peer-to-peer over PCIe allowed.
inline constexpr int kAssumedPcieGen = 4;
inline constexpr int kAssumedPcieWidth = 16;
inline constexpr double kAssumedNvlinkGbps = 25.0;

/// What one hop of a ring can carry, as all-reduce bus bandwidth, GB/s, with the reason.
struct PathCeiling {
  double gbps = 0;
  /// One sentence: "NV12 between A100 SXM4 80GB: 12 links × 25 GB/s × 0.80 (the share NCCL reaches on NVLink)
  /// ≈ 240 GB/s".
  std::string basis;
};

/// Expected all-reduce busbw of a ring whose slowest hop is the path `link` between two GPUs of model `gpu`
/// (nullptr: unknown model; then PCIe Gen4 x16 and 25 GB/s NVLinks are assumed, and `basis` says so), GB/s:
///  - NV#: # links × the model's per-link rate × kNvlinkShare (0.80: 4 × H200 NV18 reach 359.4 GB/s of 450,
///    ../shared/anchors.md); a model without NVLink in the table gets 25 GB/s per link, said in `basis`;
///  - PIX/PXB: the PCIe link × 1 (a switch forwards at line rate) × kPcieShare;
///  - PHB/NODE: the PCIe link × 5/6 (NCCL's Intel root-complex penalty) × kPcieShare;
///  - SYS: staged through host memory: the PCIe link × 1/2 × kPcieShare (anchors: 28.7 GB/s on Gen5 x16 with
///    NCCL_P2P_DISABLE=1).
/// The PCIe link is the model's generation × width (pcie_link_gbps of bandwidth.h); a model with no PCIe link
/// of its own (pcie_gen 0) gets the Gen4 x16 assumption, said in `basis`. Models without PCIe peer-to-peer
/// (GpuSpec::pcie_p2p false) get the host-memory (SHM) figure on every PCIe class. X (self) and unknown classes,
/// and NV# with no link count, give 0 with a basis saying why. The figures are ceilings for large messages
/// (≥ 128 MiB), not predictions for small ones.
PathCeiling expected_path_busbw(const GpuSpec* gpu, const Link& link);

/// Expected inter-node all-reduce busbw for `nics_per_node` ports of `line_gbit` each: nics × nic_busbw_gbps,
/// GB/s. 0 (with a basis saying why) when either is ≤ 0.
PathCeiling expected_network_busbw(int nics_per_node, double line_gbit);
/// The same for ports of a known class, from its data rate (so InfiniBand QDR counts 32 Gb/s, not 40).
PathCeiling expected_network_busbw(int nics_per_node, const NicSpec& nic);

}  // namespace scalescope::topo
