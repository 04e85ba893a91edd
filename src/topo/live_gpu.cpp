// The CUDA runtime's view of the GPUs, through the GPU module (runtime/gpu_module.h; gpu/cuda_facts.cpp).

#include "runtime/gpu_module.h"
#include "topo/live.h"

namespace scalescope::topo {

CudaFacts discover_cuda() {
  std::string why;
  if (const runtime::GpuModule* m = runtime::gpu_module(&why)) {
    CudaFacts f = m->discover_cuda();
    f.message += " [GPU module " + runtime::loaded_gpu_module_path() + "]";  // which file answered
    return f;
  }
  CudaFacts f;
  f.built = false;
  f.message = "no CUDA runtime (" + why + "): GPUs are listed from NVML only, and P2P access is not checked";
  return f;
}

}  // namespace scalescope::topo
