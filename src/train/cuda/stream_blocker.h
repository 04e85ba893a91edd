#pragma once
// Holding a stream while the host enqueues the work to be timed, so that the work then runs back to back on the
// device and its CUDA-event time excludes the host's launch calls: nvbench's "blocking kernel" (NVIDIA/nvbench,
// docs/benchmarks.md, "Blocking kernel"). Used by the GEMM autotuner (lt_matmul.h), whose candidates take 30–120 µs
// per call on H200, where a few µs of host time per launch would otherwise count.

#include <cuda_runtime.h>

namespace scalescope::train::cuda {

/// A page-locked host flag mapped into the device, and a one-thread kernel that spins on it.
/// Not thread-safe; one per stream at a time.
class StreamBlocker {
 public:
  /// Throws core::Error when the mapped host memory cannot be allocated.
  StreamBlocker();
  ~StreamBlocker();
  StreamBlocker(const StreamBlocker&) = delete;
  StreamBlocker& operator=(const StreamBlocker&) = delete;

  /// Enqueues on `stream` a kernel that holds it until release() or, should release() never come, for about
  /// kTimeoutCycles GPU clock cycles (~10 ms at 2 GHz: a forgotten release slows, never hangs). The previous
  /// block on any stream must have completed (its stream synchronised). Throws core::Error on a launch failure.
  void block(cudaStream_t stream);
  /// Lets the blocked stream go on (a host store to the mapped flag). No-op without a block.
  void release();

  static constexpr long long kTimeoutCycles = 20'000'000;

 private:
  volatile int* host_flag_ = nullptr;
  int* device_flag_ = nullptr;
};

}  // namespace scalescope::train::cuda
