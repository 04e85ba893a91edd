#pragma once
// The expectation engine: from what is known of a job — GPU model and count, the link between the GPUs, the model,
// its batch and precision — the figures an expert would expect before looking at a measurement, each as a band
// (low, high) with the assumptions it rests on:
//  - busbw of a large all-reduce over the link: the path's line rate (knowledge/hardware.h) × the share band NCCL
//    reaches on that transport in public nccl-tests results (data/nccl.json, checked against
//    data/busbw_observations.json by tests/knowledge);
//  - the gradient all-reduce per step: bytes = parameters × bytes per gradient value, time = bytes × 2(N−1)/N / busbw
//    (the ring all-reduce's traffic per rank: nccl-tests' PERFORMANCE.md, "busbw = algbw × 2(n−1)/n");
//  - compute per step: 3 × forward FLOPs per unit × units per GPU (backward ≈ 2 × forward, Kaplan et al. 2020) over
//    the GPU's dense 16-bit (or FP32) peak × a model-FLOPs-utilisation band kMfuLow–kMfuHigh (what well-run training
//    reaches: PaLM's 46 % MFU, Chowdhery et al. 2022, Table 3; smaller models and consumer cards reach less);
//  - the comm ratio (all-reduce time / compute time, the seed's verdict figure) and the data-parallel efficiency at
//    N between no overlap (compute / (compute + comm)) and full overlap (compute / max(compute, comm)).
// Units: seconds, bytes, GB/s (1e9 B/s), FLOP/s. Pure: no I/O; throws nothing.

#include <optional>
#include <string>
#include <vector>

#include "knowledge/hardware.h"
#include "knowledge/models.h"

namespace scalescope::knowledge {

/// A range a figure is expected to fall in, and why. `low` ≤ `high`; both 0 when unknown (then `basis` says why).
struct Band {
  double low = 0, high = 0;
  std::string basis;
  bool known() const { return high > 0; }
  double mid() const { return (low + high) / 2; }
};

/// Model-FLOPs utilisation band of training steps (share of the dense peak the model's own FLOPs use).
inline constexpr double kMfuLow = 0.25, kMfuHigh = 0.55;

/// How the GPUs of the job are linked, as far as it is known.
struct LinkAssumption {
  enum class Kind { unknown, nvlink, pcie, network } kind = Kind::unknown;
  topo::Link path{};            ///< for nvlink and pcie: the path class (NV#, PIX, PHB, SYS …)
  double network_gbit = 0;      ///< for network: the port rate, Gb/s
  int nics = 1;                 ///< for network: ports per node the job's GPUs use
  std::string said;             ///< how it is known ("the post says no NVLink", "nvidia-smi topo -m: NV12")
  bool nvswitch = false;        ///< nvlink: through NVSwitch (else point to point: a bridge or a mesh)
  bool socket = false;          ///< network: TCP sockets (NCCL's NET/Socket), not InfiniBand / RoCE
  int nodes = 1;                ///< network: nodes of the job (on exactly 2, NCCL's tree can exceed the ring's figure)
  /// pcie: whether peer-to-peer is in use, when known (a log's P2P/SHM transport, patched drivers, NCCL_P2P_DISABLE);
  /// absent: the GPU's default (GpuSpec::pcie_p2p).
  std::optional<bool> p2p;
};

/// One row of data/nccl.json: the share of a path's per-direction line rate NCCL's all-reduce reaches at large
/// sizes on that transport and algorithm in public nccl-tests results, and NCCL's own latency per step.
struct TransportSpec {
  std::string key;              ///< "nvlink-switch", "nvlink-direct", "nvls", "pcie-switch", "pcie-host-bridge", "shm", "ib-gdr", "socket" …
  std::string transport, algorithm;
  std::optional<double> share_low, share_high;
  std::optional<double> latency_us;
  std::string source;
};
/// Every row of data/nccl.json. Throws core::Error naming the row when the compiled data is malformed.
const std::vector<TransportSpec>& transport_table();
/// The row of `key`, nullptr when none.
const TransportSpec* find_transport(std::string_view key);

/// Whether the GPUs of this board meet through NVSwitch: SXM modules and superchips since NVLink 3 (HGX/DGX A100 and
/// later); older SXM boards (V100's hybrid cube mesh) and bridged PCIe cards join their GPUs point to point. False for
/// nullptr (an unknown board).
bool through_nvswitch(const topo::GpuSpec* gpu);

/// The all-reduce busbw band of a large message over `link` between GPUs of model `gpu` (nullptr: unknown model,
/// PCIe Gen4 x16 and 25 GB/s NVLinks assumed): the path's per-direction line rate × the share band of its transport
/// (data/nccl.json). NVLink through NVSwitch on NVLink 4 and later (Hopper, Blackwell) reaches up to the NVLS row's
/// share (the switch reduces in place). Unknown link: an unknown band.
Band expected_busbw(const topo::GpuSpec* gpu, const LinkAssumption& link);

/// Precision of the gradients and of the compute.
enum class Precision { unknown, fp32, mixed16 };

/// What one data-parallel step is expected to cost.
struct StepExpectation {
  Band gradient_bytes;       ///< bytes all-reduced per step
  Band allreduce_s;          ///< its time at the busbw band
  Band compute_s;            ///< one GPU's forward + backward per step
  Band comm_ratio;           ///< allreduce_s / compute_s (low: fast link and slow compute; high: the reverse)
  Band efficiency;           ///< data-parallel efficiency at N: low no overlap at the high ratio, high full overlap at the low one
  std::vector<std::string> assumptions;  ///< what was assumed, one sentence each
};

/// Inputs of expect_step. `units_per_gpu`: samples (or tokens, for per-token models) per GPU per step; absent: a
/// typical band for the model's kind is assumed and said (images 32–256 per GPU; tokens 2 048–16 384).
struct StepInputs {
  const ModelSpec* model = nullptr;
  const topo::GpuSpec* gpu = nullptr;
  int gpus = 2;
  Band busbw;                            ///< expected_busbw of the link, or a measured one
  std::optional<double> units_per_gpu;
  std::optional<double> measured_compute_s;  ///< one GPU's measured step, when known: replaces the FLOP estimate
  Precision precision = Precision::unknown;
};

/// The expectation of one step. Needs a model (or measured_compute_s and a gradient size from the model) and a
/// known busbw band; returns bands of 0 with the reason in assumptions otherwise.
StepExpectation expect_step(const StepInputs& in);

/// The dense peak used for compute, FLOP/s, and its basis: the table's dense 16-bit tensor rate for mixed or
/// unknown precision, FP32 for fp32 (the 16-bit rate / 4 where the table has no FP32 figure, said in the basis).
/// 0 when the GPU is unknown.
double peak_flops(const topo::GpuSpec* gpu, Precision p, std::string* basis = nullptr);

}  // namespace scalescope::knowledge
