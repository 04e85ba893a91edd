#pragma once
// What NCCL itself sees on this machine (issue #31, item 1): a short all-reduce over every GPU the job will use,
// run with NCCL's INFO log on, and the log read by analyze's own reader. Its transports per GPU pair (P2P/NVLink,
// P2P/PCIe, SHM, NET), channels, the NCCL_* variables in force and NCCL's warnings go to the diagnosis as facts,
// before training says whether it scales.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "readers/nccl/nccl_log.h"
#include "facts/facts.h"

namespace scalescope::runtime {

struct NcclProbe {
  int world_size = 0;
  bool ran = false;
  std::string error;             ///< why it did not run or failed (never fails doctor)
  double seconds = 0;            ///< wall time of the probe
  std::string nccl_version;      ///< from the log
  std::vector<analyze::NcclLog> logs;  ///< one per rank process
  /// "GPU0→GPU1 P2P/CUMEM" …: each distinct transport once, with how many connections use it
  std::vector<std::string> transports;
  std::vector<std::string> settings;   ///< NCCL_* set by the environment, as "NAME=value"
  std::vector<std::string> warnings;   ///< NCCL's WARN lines
  // A/B (issue #31, item 5), two or more ranks:
  std::optional<double> busbw_gbps;           ///< all-reduce busbw at the largest size (128 MiB)
  std::optional<double> expected_pair_gbps;   ///< the slowest GPU pair's expected unidirectional GB/s (topo)
  std::optional<double> p2p_off_busbw_gbps;   ///< the same all-reduce again with NCCL_P2P_DISABLE=1, when measured
  std::string ab_reason;                      ///< why the A/B ran, or why not
};

/// busbw below this share of the slowest pair's expected bandwidth triggers the A/B: NCCL's ring reaches about
/// 0.8 of NVLink's line rate (knowledge/hardware.h) and 0.7–0.8 of a PCIe link's, so half is well below a healthy path.
inline constexpr double kAbTrigger = 0.5;

/// Runs an all-reduce sweep of 8 B – 128 MiB on `world_size` GPU ranks of this node (scalescope's own comm job),
/// with NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,ENV,GRAPH,P2P,SHM,NET and NCCL_DEBUG_FILE into `log_dir` (which
/// must exist), for this probe only (the variables are restored after), then reads the logs. With two or more
/// ranks, when the largest size's busbw is under kAbTrigger × `expected_pair_gbps` and NCCL used P2P, the sweep
/// runs once more with NCCL_P2P_DISABLE=1 (the seed engineer's A/B). Never throws: a failure is `error`.
NcclProbe run_nccl_probe(int world_size, const std::string& log_dir, std::optional<double> expected_pair_gbps = std::nullopt);

/// The probe's logs as diagnosis facts (analyze's NCCL-log reader), minus the probe's own debug variables; with an
/// A/B, both busbw figures as Measurements of one table (dimension "p2p_probe": on / off).
diagnose::FactSet nccl_probe_facts(const NcclProbe& p);

/// Summarises the logs (transports, settings, warnings, version) into `p`.
void summarise_nccl_probe(NcclProbe& p);

void to_json(nlohmann::json& j, const NcclProbe& p);

}  // namespace scalescope::runtime
