#pragma once
// Owned CUDA memory for the models: a device array and a page-locked host array, both movable, freed in the
// destructor (errors there are ignored: a destructor must not throw). Allocation failures throw core::Error.

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

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

}  // namespace scalescope::train::cuda
