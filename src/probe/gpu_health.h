#pragma once
// Per-GPU health probes of doctor (issue #31, items 2 and 4), the part without CUDA: what one probe measured and
// how it becomes facts. The measuring (pinned host↔device copies, one bf16 GEMM per GPU, NVML read while they run)
// is gpu/probes.h in CUDA builds.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "facts/facts.h"

namespace scalescope::probe {

/// NVML's readings of one GPU taken while a probe kept it busy (idle links train down and clocks drop on purpose).
struct NvmlUnderLoad {
  std::optional<int> pcie_gen, pcie_width, pcie_max_gen, pcie_max_width;
  std::optional<unsigned> sm_mhz, max_sm_mhz;
  std::optional<double> power_w, power_limit_w, temperature_c;
  std::optional<std::uint64_t> clock_event_reasons;  ///< nvmlClocksEventReasons bit mask (throttle reasons)
  /// Memory health where NVML has it: row remapping (A100 and later: rows remapped for correctable and
  /// uncorrectable errors, a remap pending until the next reset, a remap that failed) and, on older GPUs, pages
  /// retired for multiple single-bit and for double-bit ECC errors.
  std::optional<unsigned> remapped_correctable, remapped_uncorrectable;
  std::optional<bool> remap_pending, remap_failed;
  std::optional<unsigned> retired_sbe, retired_dbe;
};

/// Pinned host↔device copies of one GPU (256 MiB, CUDA events, after a warm-up copy).
struct CopyProbe {
  int device = 0;
  std::string bus_id, name;
  double h2d_gbps = 0, d2h_gbps = 0;  ///< GB/s (1e9 B/s)
  NvmlUnderLoad nvml;
};

/// The same bf16 GEMM (8192³ through cuBLASLt) on one GPU, with NVML read during it.
struct GemmProbe {
  int device = 0;
  std::string bus_id, name;
  double tflops = 0;
  NvmlUnderLoad nvml;
};

/// Copies between two GPUs as NVIDIA's p2pBandwidthLatencyTest makes them: 64 MiB one way with peer access
/// enabled (P2P over NVLink or PCIe) and disabled (the runtime stages through host memory), and 4-byte copies for
/// the latency, CUDA events after a warm-up. The peer copy's data is checked: peer access that CUDA reports but
/// that moves wrong bytes (an IOMMU or ACS in the way) is `works == false`.
struct PairProbe {
  int a = 0, b = 0;                    ///< CUDA ordinals
  bool can_access = false;             ///< cudaDeviceCanAccessPeer(a, b)
  std::optional<bool> works;           ///< the peer copy arrived intact (absent: no peer access to try)
  std::optional<double> p2p_gbps, p2p_latency_us;        ///< peer access enabled
  double staged_gbps = 0, staged_latency_us = 0;         ///< peer access disabled
  std::string error;                   ///< a CUDA error on the way ("" none)
};

struct GpuProbes {
  std::vector<CopyProbe> copies;
  std::vector<GemmProbe> gemms;
  std::vector<PairProbe> pairs;    ///< every pair of the GPUs probed (none with one GPU)
  double seconds = 0;              ///< how long the probes took
  std::vector<std::string> notes;  ///< what could not run and why (no NVML, a failing GPU …)
};

/// NVML's clock-event (throttle) reasons as nvidia-smi names them: "GPU Idle", "Applications Clocks Setting",
/// "SW Power Cap", "HW Slowdown", "Sync Boost", "SW Thermal Slowdown", "HW Thermal Slowdown", "HW Power Brake
/// Slowdown", "Display Clock Setting". Bits from NVML's nvmlClocksEventReasons (NVML API Reference).
std::vector<std::string> clock_event_reason_names(std::uint64_t mask);

/// Facts: PcieLinkState per GPU read under load; a Measurement "host-to-device copy" (GB/s, dims gpu) per GPU;
/// GpuClocks per GPU (SM clock, power, temperature, the active throttle reasons other than idle); and a Straggler
/// when one GPU's GEMM is ≥ 8 % slower than the median of the others (which rank will set the pace). Per GPU pair,
/// P2pMeasurement facts (peer access on and off: GB/s and latency, as p2pBandwidthLatencyTest's matrices give them)
/// and a P2pStatus "copy failed" when CUDA reported peer access that moved wrong bytes. Throws nothing.
diagnose::FactSet gpu_probe_facts(const GpuProbes& p);

/// One line per GPU: copies with the PCIe link under load, GEMM TFLOP/s with clocks, power and throttle reasons.
std::string render_gpu_probes(const GpuProbes& p);

/// Runs the probes on GPUs 0 … devices-1 (host↔device copies, one GEMM, NVML read under load) through the GPU
/// module (runtime/gpu_module.h; gpu/probes.cpp). Throws core::Error when the module cannot be loaded.
GpuProbes run_gpu_probes(int devices);

void to_json(nlohmann::json& j, const GpuProbes& p);

}  // namespace scalescope::probe
