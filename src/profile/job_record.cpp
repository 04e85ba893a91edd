// The record of a profiled job and the plan it runs by (job_record.h).

#include "profile/job_record.h"

#include <sched.h>

#include <ctime>

#include "comm/launcher.h"
#include "core/terminal_text.h"
#include "profile/job_env.h"

namespace scalescope::profile {
namespace {

std::string now_iso() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

std::string json_text(const std::string& text, bool escaped) { return core::utf8_or_escaped(text, nullptr, escaped); }

bool any_not_utf8(std::initializer_list<const std::string*> texts) {
  bool any = false;
  for (const auto* t : texts) {
    bool e = false;
    core::utf8_or_escaped(*t, &e);
    any |= e;
  }
  return any;
}

JobPlan plan_job(const std::vector<std::string>& command, const std::string& job_dir, const ProfileSettings& f) {
  JobPlan plan;
  const auto env_now = current_environment();
  const auto shim = find_shim_dir(comm::self_executable(), env_now);
  const auto nccl_plugin = f.no_nccl_plugin ? std::nullopt : find_nccl_plugin(comm::self_executable(), env_now);
  JobSpec& spec = plan.spec;
  spec.argv = command;
  spec.log_path = job_dir + "/job.log";
  spec.timeout_seconds = f.timeout;
  // Arguments and environment values are bytes (POSIX), JSON strings are UTF-8: what is not is kept escaped (\xNN).
  bool escaped = false;
  for (const auto& a : command) escaped |= any_not_utf8({&a});
  for (const auto& [k, v] : env_now) escaped |= any_not_utf8({&k, &v});
  nlohmann::json command_json = nlohmann::json::array();
  for (const auto& a : command) command_json.push_back(json_text(a, escaped));
  nlohmann::json env_json = nlohmann::json::array();
  std::vector<std::string>& not_captured = plan.not_captured;
  // Without the shim, only NCCL's and PyTorch's own variables: they need no Python package.
  for (const auto& c : job_environment(env_now, job_dir, shim.value_or(""), {f.warmup, f.steps}, nccl_plugin.value_or(""))) {
    if (!shim && c.name.rfind("NCCL_", 0) != 0 && c.name.rfind("TORCH_", 0) != 0 && c.name != "SCALESCOPE_NCCL_PROFILE_DIR") continue;
    if (c.set_by_scalescope) spec.environment.emplace_back(c.name, c.value);
    env_json.push_back({{"name", json_text(c.name, escaped)}, {"value", json_text(c.value, escaped)},
                        {"set_by", c.set_by_scalescope ? "scalescope" : "user"}, {"why", c.why}});
  }
  if (!shim) {
    not_captured.push_back("the Python capture (step times, DDP configuration, profiler window): the shim's directory was "
                           "not found (set SCALESCOPE_SHIM_DIR to the python/shim directory of scalescope's source or "
                           "share/scalescope/python of its installation)");
  }
  if (!nccl_plugin && !f.no_nccl_plugin)
    not_captured.push_back("each collective's GPU time (NCCL profiler plugin): libscalescope-nccl-profiler.so was not found "
                           "(set SCALESCOPE_NCCL_PLUGIN to its path)");
  plan.record = {{"schema", "scalescope.job/1"}, {"command", command_json}, {"started", now_iso()},
                 {"environment", env_json}, {"warmup", f.warmup}, {"steps", f.steps},
                 {"timeout_s", f.timeout}, {"not_captured", not_captured}};
  // The CPUs the job may run on: profile's own affinity, which the job inherits (what CPU ranks share).
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) plan.record["host_cpus"] = CPU_COUNT(&set);
  if (escaped) plan.record["command_escaped"] = true;  // some argument or value held bytes that are not UTF-8: written as \xNN
  plan.shim = shim.has_value();
  plan.escaped = escaped;
  return plan;
}

void record_job_end(nlohmann::json& job, const JobResult& result, bool escaped) {
  job["ended"] = result.describe();
  job["exit_status"] = result.exit_status;
  job["timed_out"] = result.timed_out;
  job["stop_signal"] = result.stop_signal;
  job["wall_s"] = result.wall_seconds;
  job["finished"] = now_iso();
  if (result.left_running.empty()) return;
  nlohmann::json left = nlohmann::json::array();
  for (const auto& p : result.left_running)
    left.push_back({{"pid", p.pid}, {"command", core::utf8_or_escaped(p.command, nullptr, escaped || any_not_utf8({&p.command}))},
                    {"stopped", p.stopped}});
  job["left_running"] = left;
}

}  // namespace scalescope::profile
