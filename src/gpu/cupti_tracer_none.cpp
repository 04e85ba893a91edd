// make_cupti_tracer for CUDA installs without CUPTI (CMake found no CUDA::cupti): no tracer.
#include "gpu/cupti_tracer.h"

namespace scalescope::gpu {

std::unique_ptr<train::KernelTracer> make_cupti_tracer() { return nullptr; }

}  // namespace scalescope::gpu
