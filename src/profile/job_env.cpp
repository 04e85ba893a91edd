#include "profile/job_env.h"

#include <filesystem>

extern char** environ;

namespace scalescope::profile {

namespace {

void set_default(std::vector<EnvChoice>& out, const std::map<std::string, std::string>& current, const std::string& name,
                 const std::string& value, const std::string& why) {
  if (auto it = current.find(name); it != current.end())
    out.push_back({name, it->second, false, why});
  else
    out.push_back({name, value, true, why});
}

}  // namespace

std::vector<EnvChoice> job_environment(const std::map<std::string, std::string>& current, const std::string& job_dir,
                                       const std::string& shim_dir, const CaptureOptions& options,
                                       const std::string& nccl_plugin) {
  std::vector<EnvChoice> out;
  std::string python_path = shim_dir;
  if (auto it = current.find("PYTHONPATH"); it != current.end() && !it->second.empty()) python_path += ":" + it->second;
  out.push_back({"PYTHONPATH", python_path, true, "the capture shim (sitecustomize) first, the job's own entries after"});
  out.push_back({"SCALESCOPE_JOB_DIR", job_dir, true, "where each rank writes its capture and trace"});
  set_default(out, current, "SCALESCOPE_WARMUP", std::to_string(options.warmup), "optimizer steps before the profiled window");
  set_default(out, current, "SCALESCOPE_STEPS", std::to_string(options.steps), "profiled optimizer steps");
  set_default(out, current, "TEARDOWN_CUPTI", "1",
              "CUPTI finalised when the profiler window ends: left on, it slows every later step (10-20 % measured on "
              "the H200; pytorch/pytorch#146604). Set TEARDOWN_CUPTI=0 for CUDA graphs before CUDA 12.6");
  set_default(out, current, "NCCL_DEBUG", "INFO", "NCCL's own log: versions, transports, network, settings");
  set_default(out, current, "NCCL_DEBUG_SUBSYS", "INIT,ENV,GRAPH,NET", "the parts of NCCL's log the diagnosis reads");
  set_default(out, current, "NCCL_DEBUG_FILE", job_dir + "/nccl.%h.%p.log", "one NCCL log per process");
  if (!nccl_plugin.empty()) {
    set_default(out, current, "NCCL_PROFILER_PLUGIN", nccl_plugin,
                "scalescope's NCCL profiler plugin (NCCL >= 2.26): each collective's size, algorithm and GPU time");
    set_default(out, current, "SCALESCOPE_NCCL_PROFILE_DIR", job_dir, "where the plugin writes nccl-profile.*.jsonl");
  }
  set_default(out, current, "TORCH_NCCL_TRACE_BUFFER_SIZE", "2000", "PyTorch's flight recorder: the last collectives of each rank");
  set_default(out, current, "TORCH_NCCL_DUMP_ON_TIMEOUT", "1", "a hang leaves the flight recorder's record");
  set_default(out, current, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", job_dir + "/flight_recorder.rank", "where that record goes");
  return out;
}

std::map<std::string, std::string> current_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry(*e);
    const auto eq = entry.find('=');
    if (eq != std::string::npos && eq > 0) env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

std::optional<std::string> find_shim_dir(const std::string& executable, const std::map<std::string, std::string>& env) {
  namespace fs = std::filesystem;
  auto holds_shim = [](const fs::path& dir) {
    std::error_code ec;
    return fs::is_regular_file(dir / "sitecustomize.py", ec) && fs::is_regular_file(dir / "_scalescope_capture.py", ec);
  };
  std::vector<fs::path> candidates;
  if (auto it = env.find("SCALESCOPE_SHIM_DIR"); it != env.end() && !it->second.empty()) candidates.emplace_back(it->second);
  const fs::path bin = fs::path(executable).parent_path();
  candidates.push_back(bin.parent_path() / "share" / "scalescope" / "python");
#ifdef SCALESCOPE_SOURCE_DIR
  candidates.push_back(fs::path(SCALESCOPE_SOURCE_DIR) / "python" / "shim");
#endif
  for (const auto& c : candidates) {
    std::error_code ec;
    if (holds_shim(c)) return fs::absolute(c, ec).lexically_normal().string();
  }
  return std::nullopt;
}

std::optional<std::string> find_nccl_plugin(const std::string& executable, const std::map<std::string, std::string>& env) {
  namespace fs = std::filesystem;
  constexpr const char* kName = "libscalescope-nccl-profiler.so";
  std::vector<fs::path> candidates;
  if (auto it = env.find("SCALESCOPE_NCCL_PLUGIN"); it != env.end() && !it->second.empty()) candidates.emplace_back(it->second);
  const fs::path prefix = fs::path(executable).parent_path().parent_path();
  candidates.push_back(prefix / "lib" / "scalescope" / kName);
#ifdef SCALESCOPE_NCCL_PLUGIN_BUILT
  candidates.emplace_back(SCALESCOPE_NCCL_PLUGIN_BUILT);
#endif
  for (const auto& c : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(c, ec)) return fs::absolute(c, ec).lexically_normal().string();
  }
  return std::nullopt;
}

}  // namespace scalescope::profile
