#include "readers/job/capture.h"

#include <algorithm>

#include <fmt/format.h>

namespace scalescope::diagnose {

namespace {

std::optional<double> number(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

std::optional<bool> boolean(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_boolean()) return std::nullopt;
  return j[key].get<bool>();
}

/// "4223016" or "1071144, 3151872" (DDP's logging data joins them with ", ").
std::vector<std::uint64_t> sizes_of(const nlohmann::json& v) {
  std::vector<std::uint64_t> out;
  if (!v.is_string()) return out;
  const std::string s = v.get<std::string>();
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] < '0' || s[i] > '9')) ++i;
    std::uint64_t n = 0;
    bool any = false;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && n < (UINT64_MAX / 10 - 9)) n = n * 10 + static_cast<unsigned>(s[i++] - '0'), any = true;
    if (any) out.push_back(n);
  }
  return out;
}

}  // namespace

std::vector<double> unprofiled_step_ms(const nlohmann::json& c) {
  std::vector<double> out;
  if (!c.is_object() || !c.contains("step_ms") || !c["step_ms"].is_array()) return out;
  const auto& steps = c["step_ms"];
  const std::size_t n = steps.size();
  const std::size_t warmup = std::min<std::size_t>(static_cast<std::size_t>(std::max(0.0, number(c, "warmup").value_or(10))), n / 3);
  std::optional<std::size_t> first, export_index;
  std::size_t count = 0;
  if (c.contains("window") && c["window"].is_object()) {
    const auto& w = c["window"];
    if (auto f = number(w, "first"); f && *f >= 0) first = static_cast<std::size_t>(*f);
    if (auto k = number(w, "count"); k && *k >= 0) count = static_cast<std::size_t>(*k);
    if (auto e = number(w, "export"); e && *e >= 0) export_index = static_cast<std::size_t>(*e);
  }
  for (std::size_t i = warmup; i < n; ++i) {
    if (first && i >= *first && i < *first + count) continue;
    if (export_index && i == *export_index) continue;
    if (steps[i].is_number() && steps[i].get<double>() > 0) out.push_back(steps[i].get<double>());
  }
  return out;
}

Reading facts_from_capture(const nlohmann::json& c, const std::string& source) {
  Reading r;
  const auto rank = number(c, "rank");
  const auto world = number(c, "world_size");
  const std::string who = rank ? fmt::format("rank {}", static_cast<int>(*rank)) : std::string("a rank");
  auto steps = unprofiled_step_ms(c);
  if (!steps.empty()) {
    std::vector<double> sorted = steps;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                            : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
    Measurement m;
    m.quantity = "step time";
    m.unit = "ms";
    m.value = median;
    m.dims["basis"] = "outside the profiler window";
    if (rank) m.dims["rank"] = std::to_string(static_cast<int>(*rank));
    m.row = who;
    m.table = "scalescope profile";
    r.facts.add(std::move(m), {source, 0, fmt::format("{}: median of {} optimizer steps outside the profiler window, {:.3f} ms", who,
                                                      steps.size(), median)});
  }
  if (c.contains("ddp") && c["ddp"].is_object()) {
    const auto& d = c["ddp"];
    DdpConfig f;
    f.find_unused_parameters = boolean(d, "find_unused_parameters");
    f.static_graph = boolean(d, "static_graph");
    f.gradient_as_bucket_view = boolean(d, "gradient_as_bucket_view");
    f.bucket_cap_mb = number(d, "bucket_cap_mb");
    f.overlap = true;  // DDP's reducer all-reduces buckets during backward
    if (world) f.world_size = static_cast<int>(*world);
    if (d.contains("dtype") && d["dtype"].is_string()) f.dtype = d["dtype"].get<std::string>();
    if (c.contains("ddp_logging") && c["ddp_logging"].is_object()) {
      const auto& l = c["ddp_logging"];
      if (l.contains("rebuilt_bucket_sizes")) f.bucket_bytes = sizes_of(l["rebuilt_bucket_sizes"]);
      if (f.bucket_bytes.empty() && l.contains("bucket_sizes")) f.bucket_bytes = sizes_of(l["bucket_sizes"]);
      auto ms = [&](const char* key) -> std::optional<double> {  // DDP logs ns
        if (auto v = number(l, key); v && *v > 0) return *v / 1e6;
        return std::nullopt;
      };
      f.forward_ms = ms("avg_forward_compute_time");
      f.backward_compute_ms = ms("avg_backward_compute_time");
      f.backward_comm_ms = ms("avg_backward_comm_time");
      f.backward_comm_compute_overlap_ms = ms("avg_backward_compute_comm_overlap_time");
    }
    r.facts.add(std::move(f), {source, 0, who + ": DistributedDataParallel as constructed"});
  }
  if (world && *world >= 1 && rank && *rank == 0) {
    WorldShape w;
    w.ranks = static_cast<int>(*world);
    w.basis = "scalescope profile (the process group)";
    r.facts.add(std::move(w), {source, 0, fmt::format("world size {}", static_cast<int>(*world))});
  }
  if (c.contains("notes") && c["notes"].is_array())
    for (const auto& n : c["notes"])
      if (n.is_string()) r.notes.push_back(who + ": not captured: " + n.get<std::string>());
  return r;
}

Reading facts_from_job(const nlohmann::json& j, const std::string& source) {
  Reading r;
  if (j.contains("command") && j["command"].is_array()) {
    Launch l;
    std::vector<std::string> argv;
    for (const auto& a : j["command"])
      if (a.is_string()) argv.push_back(a.get<std::string>());
    if (!argv.empty()) {
      l.launcher = argv.front().substr(argv.front().find_last_of('/') == std::string::npos ? 0 : argv.front().find_last_of('/') + 1);
      l.args.assign(argv.begin() + 1, argv.end());
      for (std::size_t i = 1; i < argv.size(); ++i)
        if (argv[i].size() > 3 && argv[i].substr(argv[i].size() - 3) == ".py") {
          l.program = argv[i];
          break;
        }
      r.facts.add(std::move(l), {source, 0, fmt::format("{}", fmt::join(argv, " "))});
    }
  }
  // The CPUs the job could run on (profile's own affinity, which the job inherits): what CPU ranks share.
  if (j.contains("host_cpus") && j["host_cpus"].is_number_integer() && j["host_cpus"].get<int>() >= 1)
    r.facts.add(Claim{"cpus", std::to_string(j["host_cpus"].get<int>())},
                {source, 0, fmt::format("host_cpus {} (the CPUs the job could run on)", j["host_cpus"].get<int>())});
  const std::string ended = j.value("ended", std::string());
  if (j.value("timed_out", false)) r.facts.add(Stall{"the job did not end before profile's --timeout: " + ended}, {source, 0, ended});
  else if (j.contains("exit_status") && j["exit_status"].is_number_integer() && j["exit_status"].get<int>() != 0) {
    r.facts.add(ProcessFailure{"the job " + ended}, {source, 0, ended});
    // What profile read of the failure from the job's output (its first exception, the rank, the launcher's part).
    JobFailed f;
    f.ended = ended;
    if (j.contains("failure") && j["failure"].is_object()) {
      const auto& fj = j["failure"];
      f.exception = fj.value("first_exception", nlohmann::json()).is_string() ? fj["first_exception"].get<std::string>() : "";
      if (fj.contains("rank") && fj["rank"].is_number_integer()) f.rank = fj["rank"].get<int>();
      if (fj.contains("failed_ranks") && fj["failed_ranks"].is_array())
        for (const auto& x : fj["failed_ranks"])
          if (x.is_number_integer()) f.failed_ranks.push_back(x.get<int>());
      f.frame = fj.value("frame", nlohmann::json()).is_string() ? fj["frame"].get<std::string>() : "";
      f.launcher_crash = fj.contains("launcher_crash") && fj["launcher_crash"].is_boolean() && fj["launcher_crash"].get<bool>();
    }
    r.facts.add(std::move(f), {source, 0, ended});
  }
  return r;
}

}  // namespace scalescope::diagnose
