#pragma once
// What `scalescope profile` adds to the environment of the user's job (pure; no I/O): the capture shim first on
// PYTHONPATH, where the job directory is and which steps to profile, NCCL's own logging per process, and PyTorch's
// flight recorder. Anything the user already set wins: only variables absent from the job's environment are set,
// except PYTHONPATH, which keeps the user's entries after the shim's directory. docs/profile.md lists them.

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace scalescope::profile {

/// What the profiler window is: `warmup` optimizer steps, then `steps` profiled ones.
struct CaptureOptions {
  int warmup = 10;
  int steps = 5;
};

/// One variable of the job's environment as profile left it.
struct EnvChoice {
  std::string name;
  std::string value;       ///< the value the job gets
  bool set_by_scalescope;  ///< false: the user's value was kept (or, for PYTHONPATH, extended)
  std::string why;         ///< what it is for
};

/// The variables to give the job, from the current environment `current` (name → value), the job directory
/// (absolute), the shim's directory (absolute) and scalescope's NCCL profiler plugin (absolute path of
/// libscalescope-nccl-profiler.so; empty: none, NCCL_PROFILER_PLUGIN is not set). Throws nothing.
std::vector<EnvChoice> job_environment(const std::map<std::string, std::string>& current, const std::string& job_dir,
                                       const std::string& shim_dir, const CaptureOptions& options,
                                       const std::string& nccl_plugin = "");

/// The current process's environment (environ) as a map.
std::map<std::string, std::string> current_environment();

/// The directory holding the shim's sitecustomize.py: $SCALESCOPE_SHIM_DIR when set, else the installed
/// <prefix>/share/scalescope/python beside the executable's bin/, else the source tree's python/shim (a build
/// tree). nullopt when none holds sitecustomize.py and _scalescope_capture.py.
std::optional<std::string> find_shim_dir(const std::string& executable, const std::map<std::string, std::string>& env);

/// scalescope's NCCL profiler plugin: $SCALESCOPE_NCCL_PLUGIN when set, else <prefix>/lib/scalescope/
/// libscalescope-nccl-profiler.so beside the executable's bin/, else the build tree's. nullopt when none exists.
std::optional<std::string> find_nccl_plugin(const std::string& executable, const std::map<std::string, std::string>& env);

}  // namespace scalescope::profile
