#pragma once
// The CUDA runtime's view of the GPUs (cudaGetDeviceCount, properties, cudaDeviceCanAccessPeer), for topo's
// live discovery. Part of the GPU module; callers outside it use topo::discover_cuda.

#include "topo/live.h"

namespace scalescope::gpu {

/// Never throws: CUDA errors become `message`, with count 0.
topo::CudaFacts discover_cuda();

}  // namespace scalescope::gpu
