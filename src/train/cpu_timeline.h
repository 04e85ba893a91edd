#pragma once
// The CPU compute timeline: markers are steady_clock readings taken when recorded (CPU work is synchronous).

#include <chrono>
#include <vector>

#include "train/timeline.h"

namespace scalescope::train {

class CpuTimeline final : public Timeline {
 public:
  Marker record() override {
    stamps_.push_back(std::chrono::steady_clock::now());
    return static_cast<Marker>(stamps_.size() - 1);
  }
  double seconds_between(Marker from, Marker to) override {
    return std::chrono::duration<double>(stamps_.at(to) - stamps_.at(from)).count();
  }
  void synchronize() override {}
  void clear() override { stamps_.clear(); }
  bool is_device_time() const override { return false; }

 private:
  std::vector<std::chrono::steady_clock::time_point> stamps_;
};

}  // namespace scalescope::train
