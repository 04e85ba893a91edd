#pragma once
// A kernel-level trace of a few training steps on one rank, in the format PyTorch's profiler writes (Kineto's
// Chrome-trace JSON), so `scalescope analyze` reads our own runs the way it reads a DDP job's: GPU busy time,
// overlap of NCCL kernels with compute, exposed communication, launch gaps.
//
// The recorder (KernelTracer) is backend-specific — CUPTI's activity API on GPU ranks (gpu/cupti_tracer.h);
// CPU ranks have none. The file writer here is pure logic.
//
// Format sources: the Trace Event Format (complete events ph "X", ts/dur in microseconds) and Kineto's
// ChromeTraceLogger conventions: GPU kernels as cat "kernel" with pid = device and tid = stream, CUDA API calls
// as cat "cuda_runtime"/"cuda_driver" on the host thread, linked to their kernel by args "correlation" (a
// kernel's args also carry its "grid" and "block", as Kineto writes them); each
// step a "ProfilerStep#N" user annotation on the host thread; the rank in the top-level "distributedInfo".

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace scalescope::train {

/// One GPU kernel as it ran. Times in ns on the tracer's clock (now_ns()).
struct TracedKernel {
  std::string name;            ///< demangled, without the parameter list
  int device = 0;              ///< CUDA device ordinal
  int stream = 0;              ///< CUDA stream id (CUPTI's)
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t correlation = -1;  ///< links the kernel to the API call that launched it
  /// Launch configuration: blocks and threads per block in x, y, z (Kineto's args "grid" and "block"); 0s when
  /// unknown (then not written).
  std::array<int, 3> grid{0, 0, 0}, block{0, 0, 0};
};

/// One CUDA runtime or driver API call on a host thread (the launches that the analysis links to kernels).
struct TracedApiCall {
  std::string name;            ///< e.g. "cudaLaunchKernel", "cuLaunchKernelEx"
  bool driver = false;         ///< driver API (cat "cuda_driver") rather than runtime (cat "cuda_runtime")
  std::uint32_t thread = 0;    ///< host thread id
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t correlation = -1;
};

/// The host's issue of one training step: from entering the engine's step to returning from it.
struct TracedStep {
  std::int64_t begin_ns = 0;
  std::int64_t end_ns = 0;
  std::uint32_t thread = 0;    ///< host thread id
};

/// What one rank recorded over its traced steps.
struct KernelTrace {
  int rank = 0;
  int world_size = 1;
  std::uint32_t process_id = 0;
  std::string backend = "nccl";  ///< the communicator, for distributedInfo
  std::vector<TracedKernel> kernels;
  std::vector<TracedApiCall> api_calls;
  std::vector<TracedStep> steps;
};

/// A demangled kernel signature made short and distinct: "(anonymous namespace)::" and a leading "void " are
/// dropped and the parameter list is cut, e.g. "void ns::(anonymous namespace)::layernorm_kernel<8>(float*, int)"
/// → "ns::layernorm_kernel<8>". Names that are not demangled signatures come back unchanged.
std::string readable_kernel_name(std::string demangled);

/// The trace as Kineto-style Chrome-trace JSON (object format; ts and dur in µs with ns precision). Steps are
/// numbered ProfilerStep#0, #1, … in order. Throws nothing.
std::string kernel_trace_json(const KernelTrace& trace);

/// Records the GPU kernels and CUDA API calls of this process between start() and stop(). One per process.
class KernelTracer {
 public:
  virtual ~KernelTracer() = default;
  /// Starts recording. Throws core::Error when the recorder cannot start (e.g. CUPTI refuses: another
  /// profiler holds it).
  virtual void start() = 0;
  /// The recorder's clock, ns: step boundaries are stamped with it so they line up with the kernels.
  virtual std::int64_t now_ns() const = 0;
  /// Stops recording and returns the kernels and API calls since start() (rank, world size and steps are the
  /// caller's to fill). Throws core::Error when records were dropped (the trace would be incomplete).
  virtual KernelTrace stop() = 0;
};

}  // namespace scalescope::train
