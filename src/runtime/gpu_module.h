#pragma once
// The GPU backend as a module loaded at run time (issue #29). Everything that needs CUDA, cuBLASLt, NCCL or
// CUPTI — GPU ranks, the NCCL collective benchmark, the CUDA runtime's view of the devices, the GPU probes —
// is built into libscalescope-gpu.so (src/gpu/module_entry.cpp). The scalescope binary does not link any of
// those libraries: `analyze`, `predict`, `topo --from` and `comm --from` run on a machine without CUDA, and a
// command starts without loading hundreds of megabytes of GPU libraries. GPU commands load the module on first
// use and, when it or a library under it is missing, stop with an error naming the file and what to install.
//
// The table below crosses the module boundary with C++ types (std::string, std::unique_ptr, the project's
// structs): the module and the binary must come from one build, which the build stamp checks.

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace scalescope {
namespace train {
struct RankBackend;
struct ModelSpec;
enum class StreamPriority;
}  // namespace train
namespace comm {
class BenchBackend;
}
namespace topo {
struct CudaFacts;
}
namespace probe {
struct GpuProbes;
}

namespace runtime {

/// Version of the table below; a module with another number is refused.
inline constexpr int kGpuModuleAbi = 1;

/// What the GPU module offers. Every function may throw core::Error, as its direct implementation does.
struct GpuModule {
  int abi = 0;
  const char* build_stamp = nullptr;  ///< "<version> <commit> <compiler>": must equal the binary's
  const char* libraries = nullptr;    ///< "CUDA runtime 13.0 (static), NCCL 2.28.9, cuBLASLt 13.0, CUPTI": linked
  std::unique_ptr<train::RankBackend> (*make_rank_backend)(const train::ModelSpec&, train::StreamPriority, bool) = nullptr;
  std::unique_ptr<comm::BenchBackend> (*make_bench_backend)() = nullptr;
  int (*visible_gpu_count)(std::string* why_none) = nullptr;
  std::vector<std::pair<std::string, std::string>> (*launch_environment)() = nullptr;
  topo::CudaFacts (*discover_cuda)() = nullptr;
  probe::GpuProbes (*run_gpu_probes)(int devices) = nullptr;
};

/// This build's stamp (version, configure-time commit, compiler), compiled into binary and module alike.
const char* build_stamp() noexcept;

/// True when this build made a GPU module (nvcc and NCCL were found at configure time).
bool gpu_module_built() noexcept;

/// The file names the loader tries, in order: $SCALESCOPE_GPU_MODULE when set (and then only it);
/// <dir of this executable>/libscalescope-gpu.so (the build tree); <dir>/../lib/scalescope/libscalescope-gpu.so
/// (an install); the build tree's module as configured (for tests whose executables live elsewhere).
std::vector<std::string> gpu_module_candidates();

/// The GPU module, loaded once (thread-safe) with dlopen(RTLD_NOW | RTLD_LOCAL). Null when this build has none,
/// no candidate file exists, dlopen fails (a library under it is missing: dlerror names it), or the module comes
/// from another build; `why` then gets the cause and what to do, in one sentence each ("cause: remedy").
const GpuModule* gpu_module(std::string* why = nullptr);

/// gpu_module(), or core::Error with the cause and the remedy apart.
const GpuModule& require_gpu_module();

/// Where the loaded module came from (its path), or "" when none is loaded. Does not load it.
std::string loaded_gpu_module_path();

}  // namespace runtime
}  // namespace scalescope

/// The module's one exported symbol (C linkage so dlsym finds it by this name).
extern "C" const scalescope::runtime::GpuModule* scalescope_gpu_module_v1();
