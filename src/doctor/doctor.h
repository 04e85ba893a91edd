#pragma once
// `scalescope doctor`: the expert's by-hand scaling check in one call. Trains the same workload at world
// size 1, 2, 4 … up to every GPU (or core), computes speedup, efficiency, comm ratio and overlap against
// the 1-rank run, and gives the seed's verdict.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/scaling.h"
#include "diagnose/verdict.h"
#include "train/job.h"

namespace scalescope::doctor {

struct DoctorConfig {
  /// The workload; its world_size is replaced by each entry of world_sizes.
  train::TrainJobConfig job;
  /// World sizes to run, ascending, starting at 1. Empty: default_world_sizes(devices).
  std::vector<int> world_sizes;
};

/// 1, 2, 4, … up to `devices`, plus `devices` itself when it is not a power of two. Throws core::Error
/// when devices < 1.
std::vector<int> default_world_sizes(int devices);

/// One world size: the measured result and its metrics against world size 1.
struct DoctorPoint {
  train::TrainResult result;
  core::ScalingMetrics metrics;
  std::optional<diagnose::VerdictFinding> verdict;  ///< none at world size 1
};

struct DoctorReport {
  static constexpr const char* kSchema = "scalescope.doctor/1";
  std::string backend;           ///< "cpu" or "gpu"
  int devices = 0;               ///< GPUs visible, or CPU cores
  core::ScalingMode mode = core::ScalingMode::weak;
  std::vector<DoctorPoint> points;
  std::optional<diagnose::VerdictFinding> verdict;  ///< worst over world sizes ≥ 2
  std::vector<std::string> notes;                   ///< observations worth a line each
  std::string failure;           ///< non-empty when a world size failed: the runs before it are kept
  bool complete() const { return failure.empty(); }
};

/// Runs every world size in order (each through train::launch_job). A failing world size stops the sweep:
/// its error goes to report.failure and the points measured so far are kept. `progress` receives one-line
/// messages for stderr. Throws core::Error only for a bad configuration (nothing measured).
DoctorReport run_doctor(const DoctorConfig& config, int devices,
                        const std::function<void(const std::string&)>& progress);

/// Overlap rule of issue #2, checked per world size ≥ 2: when backward compute takes at least twice the
/// all-reduce time, exposed communication should stay under 10 % of the all-reduce time. Returns a note
/// when the premise holds (passed or not), nothing otherwise.
std::optional<std::string> overlap_note(const train::TrainResult& result);

void to_json(nlohmann::json& j, const DoctorReport& report);

}  // namespace scalescope::doctor
