// `scalescope train`: one configuration, its per-phase breakdown.

#include <cstdio>
#include <optional>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "predict/fix_gain.h"
#include "commands.h"
#include "comm/launcher.h"
#include "comm/mpi_communicator.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "diagnose/engine.h"
#include "evidence/record_facts.h"
#include "report/reports.h"
#include "workload_options.h"

namespace scalescope::cli {
namespace {

struct TrainFlags {
  WorkloadFlags workload;
  int world_size = 1;
  std::string out;
  std::optional<std::string> kernel_trace;
  std::string internal_job;
};

void finish(const train::TrainResult& result, const core::OutputFile& out) {
  std::fputs(report::render_train_result(result).c_str(), stdout);
  nlohmann::json j = result;
  auto diagnosis = diagnose::diagnose(diagnose::facts_from_scalescope_json(j, "train").facts);
  predict::attach_fix_gains(diagnosis, j);
  std::fputs(("\n" + diagnose::render(diagnosis)).c_str(), stdout);
  if (!out.path().empty()) {
    j["diagnosis"] = diagnosis;
    out.write(j.dump(1) + "\n");
    say_written(out.path());
  }
}

int run(const TrainFlags& f) {
  if (!f.internal_job.empty()) {  // a rank started by launch_job: config and hand-over path come from the file
    const std::string remedy = "--internal-job is how scalescope starts its own ranks; run 'scalescope train' without it";
    train::TrainJobConfig config;
    std::string result_path;
    try {
      std::ifstream in(f.internal_job);
      if (!in) throw core::Error("cannot read the job file '" + f.internal_job + "'", remedy);
      auto job = nlohmann::json::parse(in);
      config = job.at("config").get<train::TrainJobConfig>();
      result_path = job.at("result").get<std::string>();
    } catch (const std::exception& e) {  // not JSON, a directory, a missing or mistyped field
      if (dynamic_cast<const core::Error*>(&e)) throw;
      throw core::Error("job file '" + f.internal_job + "' is not a scalescope job: " + e.what(), remedy);
    }
    if (auto result = train::run_rank(config)) train::write_result_file(result_path, *result);
    return 0;
  }
  train::TrainJobConfig config = f.workload.resolve(f.world_size);
  if (f.kernel_trace) {
    check_kernel_trace_dir(*f.kernel_trace, config);
    config.kernel_trace_dir = *f.kernel_trace;
  }
  if (config.progress) std::fprintf(stderr, "%s\n", model_summary(config).c_str());
  check_outputs({{"--out", f.out}, {"--kernel-trace", f.kernel_trace.value_or(""), true}}, config);
  const core::OutputFile out_file(f.out);
  if (comm::rank_from_launcher_environment() || comm::started_by_mpi_launcher()) {
    // Started by mpirun/srun (e.g. across nodes): this process is one rank; rank 0 reports.
    if (auto result = train::run_rank(config)) finish(*result, out_file);
    return 0;
  }
  std::optional<train::TrainResult> result;
  try {
    result = train::launch_job(config);
  } catch (const core::UsageError&) {
    throw;
  } catch (const core::Error& e) {  // a failed run measured nothing whole: say that --out was left alone
    if (f.out.empty() || e.remedy().find("nothing was written") != std::string::npos) throw;  // said already
    throw core::Error(e.what(), (e.remedy().empty() ? "" : e.remedy() + "; ") + "nothing was written to " + f.out);
  }
  finish(*result, out_file);  // outside the try: its own errors (the --out another run wrote) say what was kept
  return 0;
}

}  // namespace

Action add_train_command(CLI::App& app) {
  auto flags = std::make_shared<TrainFlags>();
  auto* cmd = app.add_subcommand("train", "Train one configuration and print its per-phase step breakdown");
  cmd->add_option("-n,--world-size", flags->world_size, "number of ranks (GPUs or CPU cores)")
      ->check(number_check(false))->capture_default_str();
  add_workload_options(*cmd, flags->workload);
  cmd->add_option("-o,--out", flags->out, "write the result as JSON to this file (atomically)")
      ->check(output_file_check());
  cmd->add_option("--kernel-trace", flags->kernel_trace,
                  "GPU: after the timed rounds, record one more round kernel by kernel (CUPTI) and write "
                  "DIR/rank<R>.json per rank, in PyTorch profiler's format: 'scalescope analyze DIR/rank*.json' "
                  "gives GPU busy time, overlap, launch gaps and compute slowed beside NCCL; the traced round is in no figure")
      ->type_name("DIR");
  cmd->add_option("--internal-job", flags->internal_job, "")->group("");
  return [cmd, flags] { return cmd->parsed() ? run(*flags) : -1; };
}

}  // namespace scalescope::cli
