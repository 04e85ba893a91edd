// CPU-only builds: live discovery has no CUDA runtime; GPUs are still listed through NVML when it loads.

#include "topo/live.h"

namespace scalescope::topo {

CudaFacts discover_cuda() {
  CudaFacts f;
  f.built = false;
  f.message = "built without CUDA: no CUDA device can be used (GPUs NVML lists are shown, P2P is not checked)";
  return f;
}

}  // namespace scalescope::topo
