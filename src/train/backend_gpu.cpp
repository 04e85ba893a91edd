// GPU rank backends through the GPU module (runtime/gpu_module.h): this file is what the binary and the
// libraries link; the CUDA code behind it lives in libscalescope-gpu.so (gpu/backend_cuda.cpp).

#include "comm/bench_backend.h"
#include "core/error.h"
#include "runtime/gpu_module.h"
#include "train/backend.h"

namespace scalescope::train {

bool built_with_cuda() noexcept { return runtime::gpu_module_built(); }

int visible_gpu_count(std::string* why_none) {
  std::string why;
  const runtime::GpuModule* m = runtime::gpu_module(&why);
  if (!m) {
    if (why_none) *why_none = why;
    return 0;
  }
  return m->visible_gpu_count(why_none);
}

std::vector<std::pair<std::string, std::string>> gpu_launch_environment() {
  return runtime::require_gpu_module().launch_environment();
}

std::unique_ptr<comm::BenchBackend> make_gpu_bench_backend() { return runtime::require_gpu_module().make_bench_backend(); }

std::unique_ptr<RankBackend> make_gpu_rank_backend(const ModelSpec& model, StreamPriority priority, bool cuda_graph) {
  return runtime::require_gpu_module().make_rank_backend(model, priority, cuda_graph);
}

}  // namespace scalescope::train
