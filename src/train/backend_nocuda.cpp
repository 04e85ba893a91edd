// CPU-only builds: GPU requests get a clear error instead of a missing symbol.

#include "core/error.h"
#include "train/backend.h"

namespace scalescope::train {

int visible_gpu_count(std::string* why_none) {
  if (why_none) *why_none = "scalescope was built without CUDA";
  return 0;
}

bool built_with_cuda() noexcept { return false; }

std::vector<std::pair<std::string, std::string>> gpu_launch_environment() {
  throw core::Error("scalescope was built without CUDA, so it cannot run GPU ranks",
                    "rebuild on a machine with nvcc and NCCL (scripts/setup.sh), or use --backend cpu");
}

std::unique_ptr<comm::BenchBackend> make_gpu_bench_backend() {
  gpu_launch_environment();
  return nullptr;
}

std::unique_ptr<RankBackend> make_gpu_rank_backend(const ModelSpec&, StreamPriority, bool) {
  gpu_launch_environment();
  return nullptr;
}

}  // namespace scalescope::train
