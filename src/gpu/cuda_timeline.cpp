#include "gpu/cuda_timeline.h"

#include "gpu/cuda_check.h"
#include "gpu/step_graph.h"

namespace scalescope::gpu {

CudaTimeline::CudaTimeline(cudaStream_t stream, StepGraph* graph) : stream_(stream), graph_(graph) {}

CudaTimeline::~CudaTimeline() {
  for (auto e : events_) cudaEventDestroy(e);  // no throw from a destructor
}

train::Marker CudaTimeline::record() {
  if (used_ == events_.size()) {
    cudaEvent_t e;
    SCALESCOPE_CUDA_CHECK(cudaEventCreate(&e));
    events_.push_back(e);
  }
  record_timing(graph_, events_[used_], stream_);
  return static_cast<train::Marker>(used_++);
}

double CudaTimeline::seconds_between(train::Marker from, train::Marker to) {
  SCALESCOPE_CUDA_CHECK(cudaEventSynchronize(events_.at(to)));
  float ms = 0.0f;
  SCALESCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, events_.at(from), events_.at(to)));
  return static_cast<double>(ms) * 1e-3;
}

void CudaTimeline::synchronize() { SCALESCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

void CudaTimeline::clear() { used_ = 0; }

}  // namespace scalescope::gpu
