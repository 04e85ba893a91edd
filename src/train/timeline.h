#pragma once
// A rank's compute timeline: markers recorded in issue order and read back after the work completed.
// CPU: steady_clock at the moment of recording. GPU: CUDA events on the compute stream, so that phases are
// timed by the device (the seed asks for GPU-event time beside wall-clock time).

#include <cstdint>

namespace scalescope::train {

/// Index of a recorded marker; valid until the next Timeline::clear().
using Marker = std::uint32_t;

class Timeline {
 public:
  virtual ~Timeline() = default;
  /// Records a marker after all compute issued so far. Cheap (no host-device synchronisation).
  virtual Marker record() = 0;
  /// Seconds from `from` to `to` (to ≥ from in issue order). Blocks until `to` has completed.
  virtual double seconds_between(Marker from, Marker to) = 0;
  /// Blocks until all compute issued so far has completed.
  virtual void synchronize() = 0;
  /// Forgets all markers so their storage is reused (call between rounds, after synchronize()).
  virtual void clear() = 0;
  /// True for device timelines (CUDA events), false for the host steady clock.
  virtual bool is_device_time() const = 0;
};

}  // namespace scalescope::train
