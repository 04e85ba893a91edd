#include "train/cuda/stream_blocker.h"

#include <chrono>
#include <string>
#include <thread>

#include "core/error.h"
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

// Thread 0 of each block counts itself in flags[1] (a system-scope atomic on mapped host memory), then waits for
// flags[0] or the timeout (then flags[2] = 1). The dynamic shared memory is never touched: it only keeps other
// kernels' blocks off the SM.
__global__ void occupy_sm(volatile int* flags, long long timeout_ns) {
  extern __shared__ unsigned char unused[];
  (void)unused;
  atomicAdd_system(const_cast<int*>(&flags[1]), 1);
  const long long start = global_time_ns();
  while (flags[0] == 0) {
    if (global_time_ns() - start > timeout_ns) {
      flags[2] = 1;
      return;
    }
    __nanosleep(1000);  // a read of host memory per µs per block, not a stream of them over PCIe
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

SmOccupier::SmOccupier(int sms) : sms_(sms) {
  int device = 0, sm_count = 0;
  SCALESCOPE_CUDA_CHECK(cudaGetDevice(&device));
  SCALESCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
  SCALESCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&shared_bytes_, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (sms < 1 || sms >= sm_count)
    throw core::Error("cannot hold " + std::to_string(sms) + " SMs of a device with " + std::to_string(sm_count),
                      "give between 1 and " + std::to_string(sm_count - 1) + " SMs");
  SCALESCOPE_CUDA_CHECK(cudaFuncSetAttribute(occupy_sm, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes_));
  void* host = nullptr;
  SCALESCOPE_CUDA_CHECK(cudaHostAlloc(&host, 3 * sizeof(int), cudaHostAllocMapped));
  flags_ = static_cast<volatile int*>(host);
  flags_[0] = 1;
  flags_[1] = 0;
  flags_[2] = 0;
  cudaError_t e = cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_flags_), host, 0);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    cudaFreeHost(host);
    flags_ = nullptr;
    SCALESCOPE_CUDA_CHECK(e);
  }
}

SmOccupier::~SmOccupier() {
  if (flags_ == nullptr) return;
  flags_[0] = 1;
  cudaStreamSynchronize(stream_);  // before the flags are unmapped
  cudaStreamDestroy(stream_);
  cudaFreeHost(const_cast<int*>(flags_));
}

bool SmOccupier::hold() {
  // Blocks of a hold that failed to start may still be queued behind other work: they exit as soon as they run
  // (the flag says released), and must have before the flags are reset for this hold.
  SCALESCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  flags_[0] = 0;
  flags_[1] = 0;
  flags_[2] = 0;
  occupy_sm<<<sms_, 1, static_cast<std::size_t>(shared_bytes_), stream_>>>(device_flags_, kTimeoutNs);
  SCALESCOPE_CUDA_CHECK(cudaGetLastError());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kStartWaitMs);
  while (flags_[1] < sms_) {
    if (std::chrono::steady_clock::now() > deadline) {
      flags_[0] = 1;  // those running exit; the rest exit when they get an SM (not waited for here)
      return false;
    }
    std::this_thread::yield();
  }
  return true;
}

void SmOccupier::release() noexcept {
  flags_[0] = 1;
  (void)cudaStreamSynchronize(stream_);
}

}  // namespace scalescope::train::cuda
