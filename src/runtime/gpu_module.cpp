#include "runtime/gpu_module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>

#include "core/error.h"

#ifndef SCALESCOPE_BUILD_STAMP
#error "SCALESCOPE_BUILD_STAMP must be defined by the build (src/CMakeLists.txt)"
#endif

namespace scalescope::runtime {
namespace {

constexpr const char* kModuleFile = "libscalescope-gpu.so";

struct Loaded {
  const GpuModule* module = nullptr;
  std::string path;
  std::string why_cause, why_remedy;
};

std::string executable_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

Loaded load_once() {
  Loaded l;
  if (!gpu_module_built() && !std::getenv("SCALESCOPE_GPU_MODULE")) {
    l.why_cause = "this scalescope was built without CUDA, so it has no GPU backend";
    l.why_remedy = "rebuild on a machine with nvcc and NCCL (scripts/setup.sh), or use --backend cpu";
    return l;
  }
  std::string tried;
  for (const auto& path : gpu_module_candidates()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* e = dlerror();
      l.why_cause = fmt::format("the GPU module {} could not be loaded: {}", path, e ? e : "unknown dlopen error");
      l.why_remedy = "install the libraries it names (the CUDA toolkit's cuBLASLt and CUPTI, NCCL) or put their "
                     "directory on LD_LIBRARY_PATH; analyze, predict, topo --from and comm --from need none of them";
      return l;
    }
    using Entry = const GpuModule* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(handle, "scalescope_gpu_module_v1"));
    const GpuModule* m = entry ? entry() : nullptr;
    if (!m || m->abi != kGpuModuleAbi || !m->build_stamp || std::strcmp(m->build_stamp, build_stamp()) != 0) {
      l.why_cause = fmt::format("{} is not this scalescope's GPU module (it was built {}; this binary is {})", path,
                                m && m->build_stamp ? fmt::format("as '{}'", m->build_stamp)
                                                    : std::string("without the expected entry point"),
                                build_stamp());
      l.why_remedy = "install the binary and its module from one build (cmake --install, or the same .deb), or "
                     "point SCALESCOPE_GPU_MODULE at the module built with this binary";
      dlclose(handle);
      return l;
    }
    l.module = m;
    l.path = path;
    return l;  // the handle stays open for the life of the process
  }
  l.why_cause = fmt::format("this scalescope's GPU module ({}) is missing (looked for {})", kModuleFile, tried);
  l.why_remedy = "install it beside the binary (cmake --install puts it in <prefix>/lib/scalescope), or set "
                 "SCALESCOPE_GPU_MODULE to its path";
  return l;
}

std::atomic<bool> load_attempted{false};

const Loaded& loaded() {
  static std::once_flag once;
  static Loaded l;
  std::call_once(once, [] {
    l = load_once();
    load_attempted.store(true, std::memory_order_release);
  });
  return l;
}

}  // namespace

const char* build_stamp() noexcept { return SCALESCOPE_BUILD_STAMP; }

bool gpu_module_built() noexcept {
#ifdef SCALESCOPE_GPU_MODULE_BUILT
  return true;
#else
  return false;
#endif
}

std::vector<std::string> gpu_module_candidates() {
  if (const char* env = std::getenv("SCALESCOPE_GPU_MODULE"); env && *env) return {env};
  std::vector<std::string> out;
  const std::string dir = executable_dir();
  if (!dir.empty()) {
    out.push_back(dir + "/" + kModuleFile);
    out.push_back((std::filesystem::path(dir) / ".." / "lib" / "scalescope" / kModuleFile).lexically_normal().string());
  }
#ifdef SCALESCOPE_GPU_MODULE_BUILT
  out.push_back(SCALESCOPE_GPU_MODULE_BUILT);
#endif
  return out;
}

const GpuModule* gpu_module(std::string* why) {
  const Loaded& l = loaded();
  if (!l.module && why) *why = l.why_cause + ": " + l.why_remedy;
  return l.module;
}

const GpuModule& require_gpu_module() {
  const Loaded& l = loaded();
  if (!l.module) throw core::Error(l.why_cause, l.why_remedy);
  return *l.module;
}

std::string loaded_gpu_module_path() {
  // Only answers after a load: asking must not load the module (--version stays fast).
  return load_attempted.load(std::memory_order_acquire) ? loaded().path : std::string();
}

}  // namespace scalescope::runtime
