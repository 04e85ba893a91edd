#include "runtime/nccl_probe.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "core/error.h"
#include "evidence/record_facts.h"
#include "runtime/comm_job.h"

namespace scalescope::runtime {
namespace {

/// The probe's own NCCL variables: set for it, restored after, and not reported as the user's settings.
constexpr const char* kProbeVariables[] = {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"};

bool probe_variable(const std::string& name) {
  for (const char* v : kProbeVariables)
    if (name == v) return true;
  return false;
}

/// Sets variables for the probe and puts back what was there (or nothing) when it ends.
class ScopedEnvironment {
 public:
  void set(const char* name, const std::string& value) {
    const char* old = std::getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnvironment() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) setenv(it->first.c_str(), it->second->c_str(), 1);
      else unsetenv(it->first.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace

void summarise_nccl_probe(NcclProbe& p) {
  std::map<std::string, int> transports;
  std::map<std::string, std::string> settings;
  for (const auto& log : p.logs) {
    if (p.nccl_version.empty() && !log.versions.empty()) p.nccl_version = log.versions.front().version;
    for (const auto& c : log.connections)
      ++transports[fmt::format("{}{}→{}{} {}", c.from_rank, c.from_tag.empty() ? "" : "[" + c.from_tag + "]", c.to_rank,
                               c.to_tag.empty() ? "" : "[" + c.to_tag + "]", c.transport)];
    for (const auto& s : log.settings)
      if (s.by_environment && !probe_variable(s.name)) settings[s.name] = s.value;
    for (const auto& w : log.warnings)
      if (p.warnings.size() < 8) p.warnings.push_back(w.message);
  }
  p.transports.clear();
  for (const auto& [t, n] : transports) p.transports.push_back(fmt::format("{} ({} channel{})", t, n, n == 1 ? "" : "s"));
  p.settings.clear();
  for (const auto& [k, v] : settings) p.settings.push_back(k + "=" + v);
}

namespace {

/// The largest size's out-of-place busbw of the all-reduce sweep, if measured.
std::optional<double> largest_busbw(const CommRun& run) {
  for (const auto& sweep : run.sweeps)
    if (!sweep.rows.empty()) return sweep.rows.back().out_of_place.busbw_gbps;
  return std::nullopt;
}

CommJobConfig probe_config(int world_size) {
  CommJobConfig config;
  config.backend = train::BackendKind::gpu;
  config.world_size = world_size;
  config.sweep.min_bytes = 8;
  config.sweep.max_bytes = 128u << 20;
  config.sweep.step_factor = 8;
  config.sweep.iters = 5;
  config.sweep.check = 0;
  config.timeout_seconds = 120;
  config.progress = false;
  return config;
}

}  // namespace

NcclProbe run_nccl_probe(int world_size, const std::string& log_dir, std::optional<double> expected_pair_gbps) {
  NcclProbe p;
  p.world_size = world_size;
  p.expected_pair_gbps = expected_pair_gbps;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    ScopedEnvironment env;
    env.set("NCCL_DEBUG", "INFO");
    env.set("NCCL_DEBUG_SUBSYS", "INIT,ENV,GRAPH,P2P,SHM,NET");
    env.set("NCCL_DEBUG_FILE", log_dir + "/nccl-probe.%h.%p.log");
    const CommRun run = launch_comm_job(probe_config(world_size));
    if (world_size >= 2) p.busbw_gbps = largest_busbw(run);
    p.ran = true;
  } catch (const core::Error& e) {
    p.error = e.what();
  } catch (const std::exception& e) {
    p.error = std::string("NCCL probe: ") + e.what();
  }
  std::error_code ec;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(log_dir, ec))
    if (e.path().filename().string().rfind("nccl-probe.", 0) == 0) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    try {
      p.logs.push_back(analyze::read_nccl_log_file(f));
    } catch (const core::Error& e) {
      if (p.error.empty()) p.error = e.what();
    }
  }
  if (p.ran && p.logs.empty()) p.error = "NCCL wrote no log (NCCL_DEBUG_FILE was not honoured)";
  summarise_nccl_probe(p);

  // The A/B: only where the figure is low and P2P is what NCCL used (a user's NCCL_P2P_DISABLE=1 is left alone).
  bool p2p_used = false;
  for (const auto& t : p.transports) p2p_used |= t.find(" P2P") != std::string::npos;
  if (world_size < 2) p.ab_reason = "one rank: nothing to compare";
  else if (!p.busbw_gbps || !expected_pair_gbps || *expected_pair_gbps <= 0) p.ab_reason = "no busbw or no expected bandwidth";
  else if (*p.busbw_gbps >= kAbTrigger * *expected_pair_gbps)
    p.ab_reason = fmt::format("busbw {:.1f} GB/s is at least {:.0f} % of the slowest pair's expected {:.1f} GB/s", *p.busbw_gbps,
                              100 * kAbTrigger, *expected_pair_gbps);
  else if (!p2p_used) p.ab_reason = "busbw is low, but NCCL did not use P2P: there is no P2P path to turn off";
  else {
    p.ab_reason = fmt::format("busbw {:.1f} GB/s is under {:.0f} % of the slowest pair's expected {:.1f} GB/s: measured again "
                              "with NCCL_P2P_DISABLE=1", *p.busbw_gbps, 100 * kAbTrigger, *expected_pair_gbps);
    try {
      ScopedEnvironment env;
      env.set("NCCL_P2P_DISABLE", "1");
      p.p2p_off_busbw_gbps = largest_busbw(launch_comm_job(probe_config(world_size)));
    } catch (const std::exception& e) {
      p.ab_reason += std::string(" (that run failed: ") + e.what() + ")";
    }
  }
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

diagnose::FactSet nccl_probe_facts(const NcclProbe& p) {
  diagnose::FactSet f;
  for (const auto& log : p.logs) {
    // The probe set NCCL_DEBUG* itself: those lines are not the user's configuration.
    analyze::NcclLog mine = log;
    std::erase_if(mine.settings, [](const analyze::NcclSetting& s) { return probe_variable(s.name); });
    f.append(diagnose::facts_from_nccl_log(mine).facts);
  }
  if (p.busbw_gbps && p.p2p_off_busbw_gbps) {
    const auto add = [&](const char* p2p, double gbps) {
      diagnose::Measurement m;
      m.quantity = "busbw";
      m.unit = "GB/s";
      m.value = gbps;
      m.higher_is_better = true;
      m.dims["p2p_probe"] = p2p;
      m.row = fmt::format("all-reduce 128 MiB, {} ranks, P2P {}", p.world_size, p2p);
      m.table = "doctor NCCL probe A/B";
      f.add(std::move(m), {"doctor's NCCL probe (A/B)", 0, fmt::format("all-reduce 128 MiB busbw {:.1f} GB/s with P2P {}", gbps, p2p)});
    };
    add("on", *p.busbw_gbps);
    add("off", *p.p2p_off_busbw_gbps);
  }
  return f;
}

void to_json(nlohmann::json& j, const NcclProbe& p) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  j = {{"world_size", p.world_size}, {"ran", p.ran},          {"error", p.error},
       {"seconds", p.seconds},       {"nccl", p.nccl_version}, {"transports", p.transports},
       {"settings", p.settings},     {"warnings", p.warnings}, {"logs", p.logs.size()},
       {"busbw_gbps", opt(p.busbw_gbps)}, {"expected_pair_gbps", opt(p.expected_pair_gbps)},
       {"p2p_off_busbw_gbps", opt(p.p2p_off_busbw_gbps)}, {"ab", p.ab_reason}};
}

}  // namespace scalescope::runtime
