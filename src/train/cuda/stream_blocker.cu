#include "train/cuda/stream_blocker.h"

#include "gpu/cuda_check.h"

namespace scalescope::train::cuda {
namespace {

// One thread reads the mapped host flag until it is set or the cycle budget is spent.
__global__ void spin_until_released(const volatile int* flag, long long timeout_cycles) {
  const long long start = clock64();
  while (*flag == 0 && clock64() - start < timeout_cycles) {
  }
}

}  // namespace

StreamBlocker::StreamBlocker() {
  void* host = nullptr;
  SCALESCOPE_CUDA_CHECK(cudaHostAlloc(&host, sizeof(int), cudaHostAllocMapped));
  host_flag_ = static_cast<volatile int*>(host);
  *host_flag_ = 1;
  SCALESCOPE_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_flag_), host, 0));
}

StreamBlocker::~StreamBlocker() {
  if (host_flag_ != nullptr) {
    *host_flag_ = 1;  // a block still queued ends at once
    cudaFreeHost(const_cast<int*>(host_flag_));
  }
}

void StreamBlocker::block(cudaStream_t stream) {
  *host_flag_ = 0;
  spin_until_released<<<1, 1, 0, stream>>>(device_flag_, kTimeoutCycles);
  SCALESCOPE_CUDA_CHECK(cudaGetLastError());
}

void StreamBlocker::release() { *host_flag_ = 1; }

}  // namespace scalescope::train::cuda
