#pragma once
// How far a profiled job is, from what the Python shim writes while it runs (capture.rank0.json, rewritten about
// every 3 s, atomically): the optimizer steps rank 0 has taken against the warm-up and the profiled window.

#include <optional>
#include <string>

namespace scalescope::profile {

struct CaptureProgress {
  int steps = 0;          ///< optimizer steps rank 0 has taken
  int warmup = 0;         ///< steps before the profiled window
  int window = 0;         ///< the window's steps (0: no window)
  int window_done = 0;    ///< steps profiled so far (the profiler's own warm-up step included)
  bool trace_written = false;
  /// Steps until the window is captured (warm-up, the profiler's warm-up step, the window).
  int target() const { return window > 0 ? warmup + 1 + window : warmup; }
  /// "warm-up", "profiled window", "window captured", or "running" when there is no window.
  std::string stage() const;
};

/// Reads <job_dir>/capture.rank0.json (`window_steps`: profile's --steps, which the record does not hold); nullopt when it is not there yet or cannot be read (the job is starting,
/// or its rank 0 is not a Python optimizer loop). Never throws.
std::optional<CaptureProgress> read_capture_progress(const std::string& job_dir, int window_steps);

}  // namespace scalescope::profile
