#pragma once
// Owned CUDA memory for the models: a device array and a page-locked host array, both movable, freed in the
// destructor (errors there are ignored: a destructor must not throw). Allocation failures throw core::Error.
// Also what both CUDA models do the same way: staging a token batch through pinned memory, reading results
// back, and keeping the per-step losses on the device.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "gpu/cuda_check.h"

namespace scalescope::train::cuda {

/// `size()` elements of T on the current device; resize() drops the contents.
template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(std::size_t n) { resize(n); }
  ~DeviceArray() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  DeviceArray(DeviceArray&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceArray& operator=(DeviceArray&& other) noexcept {
    std::swap(ptr_, other.ptr_);
    std::swap(size_, other.size_);
    return *this;
  }
  void resize(std::size_t n) {
    if (ptr_ != nullptr) SCALESCOPE_CUDA_CHECK(cudaFree(ptr_));
    ptr_ = nullptr;
    size_ = 0;
    if (n > 0) SCALESCOPE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), n * sizeof(T)));
    size_ = n;
  }
  T* get() const { return ptr_; }
  std::size_t size() const { return size_; }
  std::size_t bytes() const { return size_ * sizeof(T); }

 private:
  T* ptr_ = nullptr;
  std::size_t size_ = 0;
};

/// Page-locked host memory, so that host→device copies are truly asynchronous.
template <typename T>
class PinnedArray {
 public:
  PinnedArray() = default;
  ~PinnedArray() {
    if (ptr_ != nullptr) cudaFreeHost(ptr_);
  }
  PinnedArray(const PinnedArray&) = delete;
  PinnedArray& operator=(const PinnedArray&) = delete;
  void resize(std::size_t n) {
    if (ptr_ != nullptr) SCALESCOPE_CUDA_CHECK(cudaFreeHost(ptr_));
    ptr_ = nullptr;
    if (n > 0) SCALESCOPE_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&ptr_), n * sizeof(T)));
  }
  T* get() const { return ptr_; }

 private:
  T* ptr_ = nullptr;
};

/// Enqueues the copy of `count` tokens from host memory to `device` on `stream` through `staging` (pinned,
/// at least `count` elements): first waits for `staged`, the event recorded after the previous copy out of
/// `staging`, then fills it and records `staged` again. So the caller's memory is free on return, and only
/// that previous copy is waited for. Throws core::Error on CUDA errors.
inline void stage_tokens(const std::int32_t* tokens, std::size_t count, PinnedArray<std::int32_t>& staging,
                         std::int32_t* device, cudaEvent_t staged, cudaStream_t stream) {
  SCALESCOPE_CUDA_CHECK(cudaEventSynchronize(staged));
  const std::size_t bytes = count * sizeof(std::int32_t);
  std::memcpy(staging.get(), tokens, bytes);
  SCALESCOPE_CUDA_CHECK(cudaMemcpyAsync(device, staging.get(), bytes, cudaMemcpyHostToDevice, stream));
  SCALESCOPE_CUDA_CHECK(cudaEventRecord(staged, stream));
}

/// Copies `n` elements of device memory into a new host vector on `stream` and synchronises the stream,
/// also for n = 0: on return all work enqueued before has finished. Throws core::Error on CUDA errors.
template <typename T>
std::vector<T> copy_to_host(const T* device, std::size_t n, cudaStream_t stream) {
  std::vector<T> out(n);
  if (n > 0) SCALESCOPE_CUDA_CHECK(cudaMemcpyAsync(out.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost, stream));
  SCALESCOPE_CUDA_CHECK(cudaStreamSynchronize(stream));
  return out;
}

/// The per-step losses of a CUDA model, kept on the device until take() so the training loop never waits for
/// them: one fp32 slot per forward pass, kSlots at most between two take() calls.
class DeviceLossLog {
 public:
  static constexpr std::size_t kSlots = std::size_t{1} << 16;
  DeviceLossLog() { values_.resize(kSlots); }
  /// The slot the next forward pass writes its loss into. Throws std::logic_error naming `model` when all
  /// kSlots hold losses not yet taken.
  float* next_slot(const char* model) const {
    if (count_ == kSlots)
      throw std::logic_error(std::string(model) + "::forward: 65536 losses not taken; call take_losses()");
    return values_.get() + count_;
  }
  /// Counts the slot next_slot() returned as written (after the kernel writing it was enqueued).
  void commit() { ++count_; }
  /// The losses committed since the last take(), oldest first; synchronises `stream` (copy_to_host).
  std::vector<float> take(cudaStream_t stream) {
    std::vector<float> out = copy_to_host(values_.get(), count_, stream);
    count_ = 0;
    return out;
  }
  std::size_t bytes() const { return values_.bytes(); }

 private:
  DeviceArray<float> values_;
  std::size_t count_ = 0;
};

}  // namespace scalescope::train::cuda
