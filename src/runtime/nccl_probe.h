#pragma once
// What NCCL itself sees on this machine (issue #31, item 1): a short all-reduce over every GPU the job will use,
// run with NCCL's INFO log on, and the log read by analyze's own reader. Its transports per GPU pair (P2P/NVLink,
// P2P/PCIe, SHM, NET), channels, the NCCL_* variables in force and NCCL's warnings go to the diagnosis as facts,
// before training says whether it scales.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyze/nccl_log.h"
#include "diagnose/facts.h"

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
};

/// Runs an all-reduce sweep of 8 B – 1 MiB on `world_size` GPU ranks of this node (scalescope's own comm job),
/// with NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,ENV,GRAPH,P2P,SHM,NET and NCCL_DEBUG_FILE into `log_dir` (which
/// must exist), for this probe only (the variables are restored after), then reads the logs. Never throws: a
/// failure is `error`.
NcclProbe run_nccl_probe(int world_size, const std::string& log_dir);

/// The probe's logs as diagnosis facts (analyze's NCCL-log reader), minus the probe's own debug variables.
diagnose::FactSet nccl_probe_facts(const NcclProbe& p);

/// Summarises the logs (transports, settings, warnings, version) into `p`.
void summarise_nccl_probe(NcclProbe& p);

void to_json(nlohmann::json& j, const NcclProbe& p);

}  // namespace scalescope::runtime
