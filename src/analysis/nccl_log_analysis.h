#pragma once
// Findings over one or several parsed NCCL logs of the same run (readers/nccl/nccl_log.h reads each): counts per
// transport, ranks and hosts, and what they show — SHM instead of P2P, socket fallback, P2P disabled, IB errors,
// version mismatches, slow init. Pure; throws nothing.

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "readers/nccl/nccl_log.h"
#include "text/log_text.h"

namespace scalescope::analyze {

/// Thresholds of the findings.
struct NcclFindingOptions {
  /// Communicator init slower than this (seconds, "Init timings … total") is a warning. 30 s: NCCL's init
  /// takes well under 10 s on healthy clusters of thousands of GPUs; beyond 30 s, bootstrap over a slow
  /// or filtered interface, a slow topology detection or a rank that arrived late is the usual cause.
  double slow_init_seconds = 30.0;
};

/// What the logs show together: counts per transport, ranks and hosts, and the findings.
struct NcclLogAnalysis {
  std::vector<std::string> sources;
  std::vector<std::string> versions;               ///< distinct versions, "2.18.3"
  std::vector<std::string> hosts;                  ///< distinct hosts, in order of appearance
  std::size_t processes = 0;
  std::optional<int> nranks;                       ///< the largest communicator size seen
  std::vector<int> ranks;                          ///< ranks seen in communicator lines, ascending
  std::map<std::string, std::size_t> transports;   ///< connection lines per transport ("P2P/IPC": 12)
  std::size_t gdrdma_connections = 0;
  std::optional<int> channels;                     ///< most channels seen ("Channel 00/24" or coll channels)
  std::size_t warnings = 0;                        ///< WARN lines
  std::vector<std::string> networks;               ///< "IB", "Socket"… from "Using network" and NET/ lines
  std::vector<LogFinding> findings;                ///< errors first, then warnings, then info
};

/// Findings over one or several logs of the same run (e.g. one per rank). Throws nothing.
///   * P2P disabled by the environment (NCCL_P2P_DISABLE=1, NCCL_P2P_LEVEL=LOC) — warning
///   * SHM between ranks of one node: P2P not used (disabled at line N / not available between those GPUs;
///     "although the GPUs have NVLink" only when the log shows an NVL path) — warning
///   * NCCL fell back to sockets (NET/Socket connections, or "Using network Socket") — warning / info
///   * IB without GPUDirect RDMA (NET/IB connections without /GDRDMA) — warning
///   * IB completion errors (error 12 retry exceeded, 13 RNR, 5 flush …) — error
///   * socket connect/recv failures, CUDA failures, proxy failures, other WARN lines — error / warning
///   * NCCL version mismatch between processes — error
///   * communicator init slower than options.slow_init_seconds — warning
///   * P2P unsupported inside the node ("intraNodeP2pSupport 0") — warning
///   * processes stopped at different collectives (COLL lines, last opCount per process) — info
NcclLogAnalysis analyze_nccl_logs(std::span<const NcclLog> logs, const NcclFindingOptions& options = {});

void to_json(nlohmann::json& j, const NcclLogAnalysis& a);

}  // namespace scalescope::analyze
