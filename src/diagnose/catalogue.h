#pragma once
// The cause catalogue: one entry per cause of ../shared/diagnosis-causes.md (the shared vocabulary; ids are
// never renamed), plus the ids scalescope added where its own runs needed one (docs/diagnosis.md lists them).
// Each entry says what the cause is and how it works, which facts support it and which rule it out, how its cost
// is estimated, the fix, the one command that would confirm it, and where the knowledge comes from; and holds the
// function that assesses it on a Context (diagnose/causes_*.cpp).

#include <optional>
#include <span>
#include <string_view>

#include "diagnose/context.h"
#include "diagnose/engine.h"

namespace scalescope::diagnose {

/// Assesses one cause: nullopt when no fact bears on it; else the assessment (possibly ruled out).
using Assessor = std::optional<Assessment> (*)(const Context&);

struct CauseInfo {
  std::string_view id;
  std::string_view category;   ///< "hardware and topology", "environment and configuration", "workload and code"
  std::string_view title;      ///< one line
  std::string_view mechanism;  ///< how it costs time
  std::string_view supports;   ///< the facts that support it
  std::string_view rules_out;  ///< the facts that rule it out
  std::string_view cost;       ///< how its cost is estimated
  std::string_view fix;
  std::string_view confirm;    ///< one command that would confirm it
  std::string_view source;     ///< where the knowledge comes from
  Assessor assess = nullptr;
  /// For a job whose ranks compute on CPUs (a gloo job's traces): the fix and confirming command in CPU words, where
  /// the GPU's would not apply; empty: the above serve.
  std::string_view cpu_fix = {};
  std::string_view cpu_confirm = {};
};

/// Every cause, in the order of ../shared/diagnosis-causes.md, then scalescope's additions.
std::span<const CauseInfo> cause_catalogue();

/// The entry of `id`, nullptr when unknown.
const CauseInfo* find_cause(std::string_view id);

/// A new assessment of `id` with the catalogue's fix and confirm filled in.
Assessment start(std::string_view id);

// The assessors (diagnose/causes_hardware.cpp, causes_config.cpp, causes_workload.cpp).
std::optional<Assessment> assess_nvlink_degraded(const Context&);
std::optional<Assessment> assess_pcie_link_degraded(const Context&);
std::optional<Assessment> assess_pcie_host_bridge_path(const Context&);
std::optional<Assessment> assess_cross_socket_path(const Context&);
std::optional<Assessment> assess_p2p_blocked_acs_iommu(const Context&);
std::optional<Assessment> assess_virtualised_topology(const Context&);
std::optional<Assessment> assess_gpu_hidden(const Context&);
std::optional<Assessment> assess_gdr_unavailable(const Context&);
std::optional<Assessment> assess_nccl_env_override(const Context&);
std::optional<Assessment> assess_net_socket_fallback(const Context&);
std::optional<Assessment> assess_container_ipc_shm(const Context&);
std::optional<Assessment> assess_collective_mismatch(const Context&);
std::optional<Assessment> assess_comm_bound_small_model(const Context&);
std::optional<Assessment> assess_bandwidth_bound_gradients(const Context&);
std::optional<Assessment> assess_no_overlap(const Context&);
std::optional<Assessment> assess_ddp_unused_parameters(const Context&);
std::optional<Assessment> assess_dataparallel_not_ddp(const Context&);
std::optional<Assessment> assess_host_sync(const Context&);
std::optional<Assessment> assess_input_bound(const Context&);
std::optional<Assessment> assess_launch_bound(const Context&);
std::optional<Assessment> assess_straggler(const Context&);
std::optional<Assessment> assess_load_imbalance(const Context&);
std::optional<Assessment> assess_compile_ddp_interaction(const Context&);
std::optional<Assessment> assess_compute_contention(const Context&);

}  // namespace scalescope::diagnose
