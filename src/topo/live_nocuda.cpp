// CPU-only builds: live discovery has no CUDA runtime; GPUs are still listed through NVML when it loads.

#include "topo/live.h"

namespace scalescope::topo {

CudaFacts discover_cuda() {
  CudaFacts f;
  f.built = false;
  f.message = "scalescope was built without CUDA: GPUs are listed from NVML only, and P2P access is not checked";
  return f;
}

}  // namespace scalescope::topo
