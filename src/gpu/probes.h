#pragma once
// doctor's per-GPU probes on the device (issue #31, items 2 and 4): pinned host↔device copies and one bf16 GEMM on
// every visible GPU in turn, with NVML (dlopen'd, as topo does) read while each runs. The results and their facts
// are probe/gpu_health.h. CUDA builds only.

#include "probe/gpu_health.h"

namespace scalescope::gpu {

/// Runs both probes on GPUs 0 … devices−1, one at a time (a few seconds in all). A GPU or an NVML call that fails
/// is a note in the result, never an exception.
probe::GpuProbes run_gpu_probes(int devices);

}  // namespace scalescope::gpu
