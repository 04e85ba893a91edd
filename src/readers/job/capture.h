#pragma once
// The facts of what `scalescope profile` captured inside the user's job (python/shim/_scalescope_capture.py writes
// scalescope.capture/1 per rank; profile writes scalescope.job/1 for the job): the job's own step time outside the
// profiler window, DDP's configuration and its logging data, and how the job ended. None judges.

#include <string>

#include <nlohmann/json.hpp>

#include "facts/facts.h"

namespace scalescope::diagnose {

/// The step times of one capture that are the job's own: after the first min(warmup, n/3) intervals, without the
/// profiled window and the interval that wrote the trace. Milliseconds, in order. Empty when none remain.
std::vector<double> unprofiled_step_ms(const nlohmann::json& capture);

/// scalescope.capture/1 → Measurement "step time" (median of unprofiled_step_ms, ms, dims rank and "outside the
/// profiler window"), DdpConfig (configuration; bucket sizes, DDP's averages in ms from its logging data),
/// WorldShape, ProcessFailure for notes on what was not captured.
Reading facts_from_capture(const nlohmann::json& capture, const std::string& source);

/// scalescope.job/1 → Launch (the command), ProcessFailure when the job failed, Stall when it was stopped by the
/// timeout.
Reading facts_from_job(const nlohmann::json& job, const std::string& source);

}  // namespace scalescope::diagnose
