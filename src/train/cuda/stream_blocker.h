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

namespace scalescope::train::cuda {

/// Takes `sms` of the device's SMs away from other kernels, as a communication kernel does while it runs beside
/// compute (NCCL runs one block per channel, each holding its SM: its registers and shared memory leave no room
/// for a GEMM's block). Used by the GEMM autotuner to time a candidate with fewer SMs: a GEMM whose blocks each
/// own a fixed share of the tiles (a static, persistent schedule) waits for its last blocks until the SMs come
/// back, and so grows by about the overlap, while one with many waves or a dynamic tile scheduler grows by
/// about the share of SMs taken (measured on H200: bench/RESULTS.md, 2026-11-30, third session).
///
/// Each of the `sms` blocks takes an SM's whole opt-in shared memory (so one block per SM) and spins on a mapped
/// host flag, on the occupier's own stream. Not thread-safe.
class SmOccupier {
 public:
  /// Throws core::Error when `sms` is not in [1, SM count − 1] or a CUDA call fails (the current device).
  explicit SmOccupier(int sms);
  /// Ends a hold still running and waits for it.
  ~SmOccupier();
  SmOccupier(const SmOccupier&) = delete;
  SmOccupier& operator=(const SmOccupier&) = delete;

  /// Starts the hold and waits (host) until all its blocks run, so that work enqueued next on other streams finds
  /// the SMs taken. Returns false, with the hold ended, when they did not all start within kStartWaitMs (the
  /// device busy with other work); blocks still queued then exit when they start. Waits first for the previous
  /// hold's blocks. Throws core::Error on a CUDA failure.
  bool hold();
  /// Ends the hold (a host store to the mapped flag) and waits for its blocks to exit. Should it never come, the
  /// blocks exit by themselves after kTimeoutNs of GPU time; timed_out() then says so. Does not throw (it ends
  /// holds during unwinding): a failed wait leaves CUDA's error for the next checked call.
  void release() noexcept;
  /// Whether the last hold ended by its timeout rather than by release().
  bool timed_out() const { return flags_[2] != 0; }
  int sms() const { return sms_; }

  static constexpr long long kTimeoutNs = 500'000'000;  // 500 ms
  static constexpr int kStartWaitMs = 100;

 private:
  int sms_;
  int shared_bytes_ = 0;          // dynamic shared memory per block: the SM's opt-in maximum
  volatile int* flags_ = nullptr;  // host view: [0] released, [1] blocks running, [2] timed out
  int* device_flags_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace scalescope::train::cuda
