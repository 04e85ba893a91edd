// The GPU probes through the GPU module: the binary has no CUDA of its own (runtime/gpu_module.h).

#include "probe/gpu_health.h"
#include "runtime/gpu_module.h"

namespace scalescope::probe {

GpuProbes run_gpu_probes(int devices) { return runtime::require_gpu_module().run_gpu_probes(devices); }

}  // namespace scalescope::probe
