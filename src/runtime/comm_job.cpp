#include "runtime/comm_job.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "comm/launcher.h"
#include "comm/mpi_bench_backend.h"
#include "comm/mpi_communicator.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_file.h"
#include "core/progress.h"
#include "train/job.h"

namespace scalescope::runtime {

void CommJobConfig::validate() const {
  if (world_size < 1) throw core::UsageError(fmt::format("world size {} must be at least 1", world_size));
  if (timeout_seconds < 0) throw core::UsageError("timeout must be ≥ 0 seconds (0 = none)");
  sweep.validate(world_size);
}

void to_json(nlohmann::json& j, const CommJobConfig& c) {
  auto names = [](const auto& values) {
    std::vector<std::string> out;
    for (auto v : values) out.emplace_back(comm::to_string(v));
    return out;
  };
  const auto& s = c.sweep;
  j = {{"backend", train::to_string(c.backend)},
       {"world_size", c.world_size},
       {"min_bytes", s.min_bytes},
       {"max_bytes", s.max_bytes},
       {"step_bytes", s.step_bytes},
       {"step_factor", s.step_factor},
       {"iters", s.iters},
       {"warmup_iters", s.warmup_iters},
       {"check", s.check},
       {"collectives", names(s.collectives)},
       {"types", names(s.types)},
       {"ops", names(s.ops)},
       {"roots", s.roots},
       {"per_iteration_stats", s.per_iteration_stats},
       {"timeout_s", c.timeout_seconds},
       {"progress", c.progress}};
}

void from_json(const nlohmann::json& j, CommJobConfig& c) {
  c.backend = train::parse_backend_kind(j.at("backend"));
  c.world_size = j.at("world_size");
  auto& s = c.sweep;
  s.min_bytes = j.at("min_bytes");
  s.max_bytes = j.at("max_bytes");
  s.step_bytes = j.at("step_bytes");
  s.step_factor = j.at("step_factor");
  s.iters = j.at("iters");
  s.warmup_iters = j.at("warmup_iters");
  s.check = j.at("check");
  s.collectives.clear();
  for (const std::string x : j.at("collectives")) s.collectives.push_back(comm::parse_collective(x).value());
  s.types.clear();
  for (const std::string x : j.at("types")) s.types.push_back(comm::parse_data_type(x).value());
  s.ops.clear();
  for (const std::string x : j.at("ops")) s.ops.push_back(comm::parse_red_op(x).value());
  s.roots = j.at("roots").get<std::vector<int>>();
  s.per_iteration_stats = j.at("per_iteration_stats");
  c.timeout_seconds = j.at("timeout_s");
  c.progress = j.at("progress");
}

void to_json(nlohmann::json& j, const CommRun& r) {
  j = {{"backend", r.backend}, {"device", r.device}, {"library_version", r.library_version},
       {"world_size", r.world_size}, {"sweeps", r.sweeps}};
}

void from_json(const nlohmann::json& j, CommRun& r) {
  r.backend = j.at("backend");
  r.device = j.at("device");
  r.library_version = j.at("library_version");
  r.world_size = j.at("world_size");
  r.sweeps = j.at("sweeps").get<std::vector<analyze::Sweep>>();
}

std::unique_ptr<comm::BenchBackend> make_bench_backend(train::BackendKind kind) {
  if (kind == train::BackendKind::cpu) return std::make_unique<comm::MpiBenchBackend>();
  return train::make_gpu_bench_backend();
}

std::optional<CommRun> run_comm_rank(const CommJobConfig& config) {
  config.validate();
  auto backend = make_bench_backend(config.backend);
  const auto& info = backend->rank_info();
  if (info.world_size != config.world_size)
    throw core::Error(fmt::format("{} ranks were started but the sweep asks for world size {}", info.world_size,
                                  config.world_size),
                      comm::rank_count_remedy("-g/--world-size"));
  // Rank 0 shows the sweep's progress: a line redrawn in place on a terminal, one line per size in a log.
  std::optional<core::Progress> bar;
  auto progress = [&](const comm::SweepProgress& p) {
    if (!config.progress) return;
    if (!bar) bar.emplace(fmt::format("comm ws={}", info.world_size), p.total);
    bar->update(p.done, p.item + ": " + p.result);
  };
  auto sweeps = comm::run_sweeps(*backend, config.sweep, progress);
  if (bar) bar->finish();
  if (info.rank != 0) return std::nullopt;
  CommRun run;
  run.backend = backend->name();
  run.device = backend->device();
  run.library_version = backend->library_version();
  run.world_size = info.world_size;
  run.sweeps = std::move(sweeps);
  return run;
}

CommRun launch_comm_job(const CommJobConfig& config) {
  config.validate();
  train::require_devices(config.backend, config.world_size);
  if (config.backend == train::BackendKind::cpu) {  // CPU ranks share this machine's memory: check before starting
    const auto [send, result] = comm::sweep_buffer_bytes(config.sweep, config.world_size);
    const double need = static_cast<double>(send + result) * config.world_size;
    const double physical = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
    if (physical > 0 && need > 0.8 * physical)
      throw core::UsageError(fmt::format("{} CPU ranks need about {:.1f} GiB of buffers for -e {} bytes; this machine has "
                                         "{:.1f} GiB",
                                         config.world_size, need / (1u << 30), config.sweep.max_bytes,
                                         physical / (1u << 30)),
                             "use a smaller -e (or fewer ranks) on CPU ranks; large sizes are for GPU ranks (--backend gpu)");
  }
  core::TemporaryDirectory dir;
  const std::string job_path = dir.path() + "/comm-job.json";
  const std::string result_path = dir.path() + "/comm-result.json";
  core::write_file_atomically(job_path, nlohmann::json{{"config", config}, {"result", result_path}}.dump());
  train::launch_rank_processes(config.backend, config.world_size,
                               {comm::self_executable(), "comm", "--internal-job", job_path}, config.timeout_seconds,
                               dir.path());
  if (!std::filesystem::exists(result_path))
    throw core::Error("the ranks finished but rank 0 wrote no result", "this is a bug; rerun with -g 1");
  return core::read_json_file(result_path, "rank 0's comm result").get<CommRun>();
}

void run_comm_job_file(const std::string& job_path) {
  CommJobConfig config;
  std::string result_path;
  try {
    auto job = core::read_json_file(job_path, "the comm job file");
    config = job.at("config").get<CommJobConfig>();
    result_path = job.at("result").get<std::string>();
  } catch (const core::Error&) {
    throw;
  } catch (const std::exception& e) {  // not JSON, a missing or mistyped field, an unknown name
    throw core::Error("job file '" + job_path + "' is not a scalescope comm job: " + e.what(),
                      "--internal-job is how scalescope starts its own ranks; run 'scalescope comm' without it");
  }
  if (auto run = run_comm_rank(config)) core::write_file_atomically(result_path, nlohmann::json(*run).dump() + "\n");
}

}  // namespace scalescope::runtime
