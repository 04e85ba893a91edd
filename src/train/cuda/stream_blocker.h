#pragma once
// Holding a stream while the host enqueues the work to be timed, so that the work then runs back to back on the
// device and its CUDA-event time excludes the host's launch calls: the idea of nvbench's "blocking kernel"
// (NVIDIA/nvbench, docs/benchmarks.md). Used by the GEMM autotuner (lt_matmul.h), whose candidates take 30–120 µs
// per call on H200, where a few µs of host time per launch would otherwise count.

#include <cuda_runtime.h>

namespace scalescope::train::cuda {

/// Page-locked host flags mapped into the device, and a one-thread kernel that spins on one of them.
/// Not thread-safe; one stream held at a time.
class StreamBlocker {
 public:
  /// Throws core::Error when the mapped host memory cannot be allocated.
  StreamBlocker();
  /// Lets a hold still queued go and waits for its stream.
  ~StreamBlocker();
  StreamBlocker(const StreamBlocker&) = delete;
  StreamBlocker& operator=(const StreamBlocker&) = delete;

  /// Enqueues on `stream` a kernel that holds it until release() or, should release() not come, until
  /// kTimeoutNs of GPU time (%globaltimer) have passed: a missed release slows, never hangs. Anything that makes
  /// the host wait for the stream while it is held (an implicit synchronisation) also waits for the timeout,
  /// and the work behind an expired hold is timed with the host's launches again: timed_out() says so. The
  /// previous hold must have completed (its stream synchronised). Throws core::Error on a launch failure.
  void block(cudaStream_t stream);
  /// Lets the held stream go on (a host store to the mapped flag). No-op without a hold.
  void release();
  /// Whether the last hold ended by its timeout rather than by release(); valid once its stream has passed it
  /// (e.g. after synchronising an event recorded behind it).
  bool timed_out() const { return *timed_out_ != 0; }

  static constexpr long long kTimeoutNs = 50'000'000;  // 50 ms

 private:
  volatile int* flags_ = nullptr;      // host view: [0] released, [1] timed out
  volatile int* timed_out_ = nullptr;  // &flags_[1]
  int* device_flags_ = nullptr;        // device view of the same memory
  cudaEvent_t passed_ = nullptr;       // recorded behind each hold: the destructor waits for it
};

}  // namespace scalescope::train::cuda
