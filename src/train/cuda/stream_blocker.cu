#include "train/cuda/stream_blocker.h"

#include "gpu/cuda_check.h"

namespace scalescope::train::cuda {
namespace {

__device__ long long global_time_ns() {
  long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One thread reads the mapped host flag flags[0] until it is set or `timeout_ns` have passed (then flags[1] = 1).
__global__ void spin_until_released(volatile int* flags, long long timeout_ns) {
  const long long start = global_time_ns();
  while (flags[0] == 0) {
    if (global_time_ns() - start > timeout_ns) {
      flags[1] = 1;
      return;
    }
  }
}

}  // namespace

StreamBlocker::StreamBlocker() {
  void* host = nullptr;
  SCALESCOPE_CUDA_CHECK(cudaHostAlloc(&host, 2 * sizeof(int), cudaHostAllocMapped));
  flags_ = static_cast<volatile int*>(host);
  flags_[0] = 1;
  flags_[1] = 0;
  timed_out_ = &flags_[1];
  cudaError_t e = cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_flags_), host, 0);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&passed_, cudaEventDisableTiming);
  if (e != cudaSuccess) {
    cudaFreeHost(host);
    flags_ = nullptr;
    SCALESCOPE_CUDA_CHECK(e);
  }
}

StreamBlocker::~StreamBlocker() {
  if (flags_ == nullptr) return;
  flags_[0] = 1;  // a hold still queued ends at once
  cudaEventSynchronize(passed_);  // before its flags are unmapped (an event outlives its stream)
  cudaEventDestroy(passed_);
  cudaFreeHost(const_cast<int*>(flags_));
}

void StreamBlocker::block(cudaStream_t stream) {
  flags_[0] = 0;
  flags_[1] = 0;
  spin_until_released<<<1, 1, 0, stream>>>(device_flags_, kTimeoutNs);
  SCALESCOPE_CUDA_CHECK(cudaGetLastError());
  SCALESCOPE_CUDA_CHECK(cudaEventRecord(passed_, stream));
}

void StreamBlocker::release() { flags_[0] = 1; }

}  // namespace scalescope::train::cuda
