// libscalescope-gpu.so's entry point: the table of GPU functions the binary loads at run time
// (runtime/gpu_module.h). Nothing else in the module is exported (CMake: hidden visibility, --exclude-libs).

#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include <fmt/format.h>

#include "gpu/backend_cuda.h"
#include "gpu/bootstrap.h"
#include "gpu/cuda_facts.h"
#include "gpu/probes.h"
#include "probe/gpu_health.h"
#include "runtime/gpu_module.h"
#include "topo/live.h"

namespace {

const std::string& libraries() {
  static const std::string text = fmt::format("CUDA runtime {}.{} (static), NCCL {}.{}.{} (built against), cuBLASLt, CUPTI",
                                              CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10, NCCL_MAJOR,
                                              NCCL_MINOR, NCCL_PATCH);
  return text;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const scalescope::runtime::GpuModule* scalescope_gpu_module_v1() {
  namespace gpu = scalescope::gpu;
  static const scalescope::runtime::GpuModule table = [] {
    scalescope::runtime::GpuModule m;
    m.abi = scalescope::runtime::kGpuModuleAbi;
    m.build_stamp = scalescope::runtime::build_stamp();
    m.libraries = libraries().c_str();
    m.make_rank_backend = &gpu::make_rank_backend;
    m.make_bench_backend = &gpu::make_bench_backend;
    m.visible_gpu_count = &gpu::visible_device_count;
    m.launch_environment = &gpu::nccl_launch_environment;
    m.discover_cuda = &gpu::discover_cuda;
    m.run_gpu_probes = &gpu::run_gpu_probes;
    return m;
  }();
  return &table;
}
