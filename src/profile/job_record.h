#pragma once
// The record of a profiled job in its directory (job.json, schema scalescope.job/1) and the plan it runs by: the
// command and environment as given (bytes that are not UTF-8 kept as \xNN), the variables profile sets and why,
// what will not be captured, the profiler window and timeout; then how the job ended and the processes it left
// running. `scalescope profile` writes it before and after the job; the analysis reads it back.

#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile/job_runner.h"

namespace scalescope::profile {

/// What `scalescope profile` was asked for beside the command.
struct ProfileSettings {
  int warmup = 10, steps = 5;  ///< the profiler window: optimizer steps before it, and in it
  double timeout = 0;          ///< seconds; 0: none
  bool no_nccl_plugin = false; ///< leave NCCL_PROFILER_PLUGIN unset
};

/// A job before it starts: how to run it and its record.
struct JobPlan {
  JobSpec spec;                           ///< the command, the variables profile sets, the log, the timeout
  nlohmann::json record;                  ///< job.json as written before the job starts
  std::vector<std::string> not_captured;  ///< what the job's analysis will lack, and why
  bool shim = false;     ///< the Python capture's directory was found (steps, DDP, profiler window; progress)
  bool escaped = false;  ///< some argument or environment value was not UTF-8: the record holds it as \xNN
};

/// The plan of running `command` with its log and record in `job_dir`, from the current environment, the shim and
/// NCCL profiler plugin found beside this executable. Throws nothing but std::bad_alloc.
JobPlan plan_job(const std::vector<std::string>& command, const std::string& job_dir, const ProfileSettings& settings);

/// Adds how the job ended to its record: "ended", exit status, timeout, stop signal, wall time, the time it finished,
/// and the processes it left running ("left_running"), if any.
void record_job_end(nlohmann::json& record, const JobResult& result, bool escaped);

/// `text` as JSON can hold it: as it is, or, when `escaped` (some string of the record holds a byte that is not
/// UTF-8), with every such byte as \xNN and each backslash doubled (core::utf8_or_escaped).
std::string json_text(const std::string& text, bool escaped);

/// Whether any of `texts` holds a byte that is not UTF-8.
bool any_not_utf8(std::initializer_list<const std::string*> texts);

}  // namespace scalescope::profile
