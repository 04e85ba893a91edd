// The CUDA runtime's view of the GPUs for live discovery (in the GPU module; topo::discover_cuda calls it).

#include <cuda_runtime.h>

#include <fmt/format.h>

#include "gpu/cuda_facts.h"

namespace scalescope::gpu {

using topo::CudaDevice;
using topo::CudaFacts;

CudaFacts discover_cuda() {
  CudaFacts f;
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  const std::string version = fmt::format("CUDA runtime {}.{}", runtime / 1000, (runtime % 1000) / 10);
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    f.message = fmt::format("{}: {} ({})", version, cudaGetErrorString(err), cudaGetErrorName(err));
    cudaGetLastError();  // leave no error behind for later CUDA calls in this process
    return f;
  }
  f.count = n;
  f.message = fmt::format("{}: {} device{}", version, n, n == 1 ? "" : "s");
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    CudaDevice c;
    c.ordinal = d;
    c.name = p.name;
    c.bus_id = topo::format_bus_id(static_cast<unsigned>(p.pciDomainID), static_cast<unsigned>(p.pciBusID),
                             static_cast<unsigned>(p.pciDeviceID), 0);
    c.major = p.major;
    c.minor = p.minor;
    c.sm_count = p.multiProcessorCount;
    c.memory_bytes = static_cast<double>(p.totalGlobalMem);
    f.devices.push_back(std::move(c));
  }
  f.p2p.assign(n, std::vector<bool>(n, false));
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      int can = 0;
      if (cudaDeviceCanAccessPeer(&can, a, b) == cudaSuccess) f.p2p[a][b] = can != 0;
      else cudaGetLastError();
    }
  return f;
}

}  // namespace scalescope::gpu
