#pragma once
// The facts of the readers that came before the diagnosis engine, from their parsed records: NCCL debug logs,
// watchdog messages, collective sweeps (nccl-tests outputs, scalescope comm), topologies (`nvidia-smi topo -m`,
// live discovery), profiler-trace analyses and scalescope's own JSON results (train, doctor, comm, topo). Each
// function states a record's content as facts (facts/facts.h) with the record's provenance; none judges.

#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "readers/nccl/nccl_log.h"
#include "readers/nccl/nccl_profile.h"
#include "comm/sweep.h"
#include "analysis/sweep_analysis.h"
#include "analysis/trace_analysis.h"
#include "readers/job/watchdog.h"
#include "facts/facts.h"
#include "topo/topology.h"

namespace scalescope::diagnose {

/// Versions, NCCL_* settings NCCL reports, transports (connection lines counted per transport), the network chosen
/// and its devices, "No device found", GPUDirect RDMA per HCA, WARN lines sorted by what failed, result codes of
/// their unwinding, communicator shape (ranks, nodes, local ranks, hosts), graph-search path types, P2P support.
Reading facts_from_nccl_log(const analyze::NcclLog& log);

/// Sorts an NCCL WARN (or "Last error:") message into NcclWarning's categories: "shm-space", "shm-create", "socket",
/// "ib", "cuda", "p2p", "proxy", "other".
std::string nccl_warning_category(const std::string& message);

/// One WatchdogTimeout per timeout message, and the cross-rank summary.
Reading facts_from_watchdog(std::span<const analyze::WatchdogLog> logs, const analyze::WatchdogAnalysis& analysis);

/// The sweep's plateau (with its rank count, latency, nccl-tests' average footer and wrong rows) and NCCL version.
/// `source` names the file.
/// The collectives an NCCL profiler plugin record holds, each kind as a sweep (facts_from_sweep), and the
/// communicator's shape.
Reading facts_from_nccl_profile(const analyze::NcclProfile& p, const std::string& source);
Reading facts_from_sweep(const analyze::Sweep& sweep, const analyze::SweepAnalysis& analysis, const std::string& source);

/// Every matrix cell between two devices (LinkClass), affinities, named GPUs and NICs, and for live discovery the
/// GPU counts (NVML, CUDA), PCIe links and NVLinks.
Reading facts_from_topology(const topo::Topology& topology, const std::string& source);

/// Per rank the mean step breakdown (profiled), host syncs, launch gaps, GPU model, NCCL version; the straggler of
/// the cross-rank matching, the slowest rank per step (a straggler when always the same, imbalance when it varies),
/// the world size; with a baseline its step breakdown and the scaling point and verdict.
Reading facts_from_traces(const analyze::TraceAnalysis& analysis);

/// scalescope's own results: train/1 (step breakdown, device, model, buckets, per-rank compute spread), doctor/1 (the
/// same per world size, with its scaling points and verdicts), comm/1 (plateaus), topo/1 (the matrix). `source`
/// names the file ("doctor" / "train" for a live run). Unknown schemas give no facts. Throws nothing.
Reading facts_from_scalescope_json(const nlohmann::json& report, const std::string& source);

}  // namespace scalescope::diagnose
