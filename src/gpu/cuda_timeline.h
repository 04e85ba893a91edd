#pragma once
// The GPU compute timeline: markers are CUDA events recorded on the rank's compute stream.

#include <cuda_runtime.h>

#include <vector>

#include "train/timeline.h"

namespace scalescope::gpu {

class StepGraph;

/// Timeline over one CUDA stream. Events are created once and reused across rounds (clear()), so
/// recording costs one cudaEventRecord. Errors throw core::Error (see cuda_check.h).
class CudaTimeline final : public train::Timeline {
 public:
  /// `stream` is the compute stream; it is not owned. With `graph` (not owned, outlives this), markers are
  /// recorded through it so that they keep timing captured and replayed steps (gpu/step_graph.h).
  explicit CudaTimeline(cudaStream_t stream, StepGraph* graph = nullptr);
  ~CudaTimeline() override;
  CudaTimeline(const CudaTimeline&) = delete;
  CudaTimeline& operator=(const CudaTimeline&) = delete;

  train::Marker record() override;
  double seconds_between(train::Marker from, train::Marker to) override;
  void synchronize() override;
  void clear() override;
  bool is_device_time() const override { return true; }

  cudaStream_t stream() const { return stream_; }

 private:
  cudaStream_t stream_;
  StepGraph* graph_;
  std::vector<cudaEvent_t> events_;
  std::size_t used_ = 0;
};

}  // namespace scalescope::gpu
