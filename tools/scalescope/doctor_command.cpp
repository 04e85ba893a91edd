// `scalescope doctor`: the scaling sweep, its table and the verdict.

#include <cstdio>
#include <memory>

#include <optional>

#include <fmt/format.h>

#include "commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "diagnose/engine.h"
#include "evidence/run.h"
#include "doctor/doctor.h"
#include "report/reports.h"
#include "report/topo_report.h"
#include "topo/analysis.h"
#include "topo/live.h"
#include "core/progress.h"
#include "probe/gpu_health.h"
#include "probe/platform.h"
#include "runtime/nccl_probe.h"
#include "core/json_file.h"
#include "report/probe_report.h"
#include "report/answer.h"
#include "report/html_builders.h"
#include "train/backend.h"
#include "train/job.h"
#include "workload_options.h"

namespace scalescope::cli {
namespace {

struct DoctorFlags {
  WorkloadFlags workload;
  std::vector<int> world_sizes;
  int max_world_size = 0;
  std::string out, html;
  std::optional<std::string> world_size;  // train's -n/--world-size, accepted only to say what doctor takes instead
  std::optional<std::string> kernel_trace;
  bool no_nccl_probe = false;
};

int run(const DoctorFlags& f) {
  if (f.world_size) {
    const std::string& n = *f.world_size;
    const bool positive = !n.empty() && n.size() < 7 && n.find_first_not_of("0123456789") == std::string::npos && n != "0" &&
                          n.find_first_not_of('0') != std::string::npos;
    throw core::UsageError("doctor sweeps several world sizes, so it has no -n/--world-size",
                           positive ? fmt::format("use --world-sizes 1,{0} (those sizes) or --max-world-size {0} (1, 2, "
                                                  "4 … up to it); 'scalescope train -n {0}' runs one world size", n)
                                    : std::string("use --world-sizes 1,2,4 (those sizes) or --max-world-size N (1, 2, "
                                                  "4 … up to N); 'scalescope train -n N' runs one world size"));
  }
  if (!f.world_sizes.empty()) doctor::check_world_sizes(f.world_sizes);  // before any probe prints a line
  doctor::DoctorConfig config;
  config.job = f.workload.resolve(1);
  if (f.kernel_trace) {
    check_kernel_trace_dir(*f.kernel_trace, config.job);
    config.kernel_trace_dir = *f.kernel_trace;
  }
  if (config.job.progress) std::fprintf(stderr, "%s\n", model_summary(config.job).c_str());
  check_outputs({{"--out", f.out}, {"--html", f.html}, {"--kernel-trace", f.kernel_trace.value_or(""), true}}, config.job);
  const core::OutputFile out_file(f.out);
  const bool gpu = config.job.backend == train::BackendKind::gpu;
  std::string why;
  int devices = gpu ? train::visible_gpu_count(&why) : train::cpu_core_count();
  if (gpu && devices == 0) train::require_devices(config.job.backend, 1);  // no GPU usable: the machine's fault, exit 1
  const int max_world_size = f.max_world_size > 0 ? std::min(devices, f.max_world_size) : devices;
  config.world_sizes = f.world_sizes;
  if (!config.world_sizes.empty() && gpu && config.world_sizes.back() > devices)
    throw core::UsageError(fmt::format("world size {} needs more GPUs than the {} visible", config.world_sizes.back(), devices),
                           "drop it from --world-sizes");
  // CPU ranks: an absurd world size is refused before anything runs, not after the smaller ones were measured.
  if (!config.world_sizes.empty()) train::require_devices(config.job.backend, config.world_sizes.back());
  // The topology first (issue #3): whether NCCL can reach the GPUs over a fast path explains much of what follows.
  const auto topology = topo::analyse(topo::discover_live());
  std::fputs((report::render_topo_summary(topology) + "\n").c_str(), stdout);
  // The platform under the GPUs (issue #31): its findings go to the diagnosis as facts.
  const auto platform = probe::read_platform();
  std::fputs((report::render_platform(platform) + "\n").c_str(), stdout);
  // Each GPU on its own before training (issue #31): copies over its PCIe link and one GEMM, NVML read under load.
  std::optional<probe::GpuProbes> gpu_probes;
  if (gpu) {  // GPU ranks: the GPU module is loaded (visible_gpu_count found devices through it)
    gpu_probes = probe::run_gpu_probes(max_world_size);
    std::fputs((probe::render_gpu_probes(*gpu_probes) + "\n").c_str(), stdout);
  }
  // What NCCL itself sees over the GPUs the sweep will use (issue #31): its log read as analyze reads one.
  std::optional<runtime::NcclProbe> nccl_probe;
  if (gpu && !f.no_nccl_probe) {
    core::TemporaryDirectory logs;
    // The slowest expected GPU pair among the GPUs the probe uses (topo's bandwidth model), for the A/B trigger.
    std::optional<double> slowest;
    const auto gpus = topology.topology.gpus();
    for (std::size_t i = 0; i < gpus.size() && static_cast<int>(i) < max_world_size; ++i)
      for (std::size_t k = i + 1; k < gpus.size() && static_cast<int>(k) < max_world_size; ++k) {
        const auto& bw = topology.bandwidth.gbps;
        const auto a = static_cast<std::size_t>(gpus[i]), b = static_cast<std::size_t>(gpus[k]);
        if (a < bw.size() && b < bw[a].size() && bw[a][b] > 0) slowest = std::min(slowest.value_or(bw[a][b]), bw[a][b]);
      }
    nccl_probe = runtime::run_nccl_probe(max_world_size, logs.path(), slowest);
    std::fputs((report::render_nccl_probe(*nccl_probe) + "\n").c_str(), stdout);
  }
  std::fflush(stdout);
  std::fflush(stdout);
  // One plain line per world size with the time left (the ranks' own progress is drawn below it).
  std::optional<core::Progress> sweep;
  auto progress = [&](std::size_t index, std::size_t count, const std::string& what) {
    if (!config.job.progress) return;
    if (!sweep) sweep.emplace("doctor", static_cast<double>(count), core::ProgressStyle::lines);
    sweep->update(static_cast<double>(index), what);
  };
  const auto report = doctor::run_doctor(config, devices, max_world_size, progress);
  std::fputs(report::render_doctor_report(report).c_str(), stdout);
  // The diagnosis over what was measured and the machine's topology: the verdict and the waterfall become facts.
  nlohmann::json j = report;
  evidence::Measured measured;
  measured.source = "doctor";
  measured.report = j;
  measured.report["topology"] = topology;  // the links' figures of the fixes' gains
  measured.topology = topology.topology;
  // The platform's findings concern NCCL's paths between GPUs: CPU ranks (MPI) leave them out of the diagnosis.
  if (gpu) measured.facts.append(probe::platform_facts(platform));
  if (gpu_probes) measured.facts.append(probe::gpu_probe_facts(*gpu_probes));
  if (nccl_probe) measured.facts.append(runtime::nccl_probe_facts(*nccl_probe));
  const auto diagnosis = evidence::run({}, {}, {std::move(measured)}).diagnosis;
  // The answer (report/answer.h): the verdict and the primary cause in one sentence, then the diagnosis behind it.
  nlohmann::json judged = j;
  judged["diagnosis"] = diagnosis;
  const auto answer = report::answer_of_doctor(judged);
  if (!report.points.empty()) std::fputs(("\n" + report::render_answer(answer) + diagnose::render(diagnosis)).c_str(), stdout);
  if (!f.html.empty() && !report.points.empty()) {
    report::HtmlPage page;
    page.title = fmt::format("scalescope doctor — {} ({})", report.backend, report.complete() ? "complete" : "incomplete: " + report.failure);
    page.answer = answer;
    page.provenance = report::default_provenance(command_line());
    nlohmann::json with = j;
    with["topology"] = topology;
    with["diagnosis"] = diagnosis;
    report::add_doctor(page, with);
    // What doctor's probes measured before training (each GPU's copies, GEMM and clocks; what NCCL saw), after the
    // figures of the sweep, before the provenance.
    if (gpu_probes) page.tables.emplace_back("Each GPU alone (doctor's probes)", probe::render_gpu_probes(*gpu_probes));
    if (nccl_probe) page.tables.emplace_back("What NCCL saw (doctor's probe)", report::render_nccl_probe(*nccl_probe));
    page.tables.emplace_back("The platform", report::render_platform(platform));
    try {
      core::write_file_atomically(f.html, report::render_html(page));
      say_written(f.html);
    } catch (const core::Error& e) {
      say_error(std::string("--html: ") + e.what(), e.remedy());
    }
  }
  if (!f.out.empty() && report.points.empty()) {  // nothing measured (e.g. bad data): leave --out alone
    std::fprintf(stderr, "nothing was measured, so nothing was written to %s\n", f.out.c_str());
  } else if (!f.out.empty()) {  // written even when a later world size failed: what was measured is kept
    j["topology"] = topology;
    j["platform"] = platform;
    if (gpu_probes) j["gpu_probes"] = *gpu_probes;
    if (nccl_probe) j["nccl_probe"] = *nccl_probe;
    j["diagnosis"] = diagnosis;
    j["answer"] = report::answer_json(answer);
    out_file.write(j.dump(1) + "\n");
    say_written(f.out, report.complete() ? "" : " (incomplete)");
  }
  if (!report.complete()) {  // on stderr too, as every failed run says it, so that -q or a redirected stdout keeps it
    say_error("doctor: " + report.failure,
              report.points.empty() ? "fix the cause above and rerun"
                                    : "the world sizes measured before it are reported (and in --out, marked "
                                      "incomplete); fix the cause above and rerun, or pass --world-sizes up to the "
                                      "last that ran");
  }
  return report.complete() ? 0 : 1;
}

}  // namespace

Action add_doctor_command(CLI::App& app) {
  auto flags = std::make_shared<DoctorFlags>();
  auto* cmd = app.add_subcommand(
      "doctor", "Measure data-parallel scaling at world size 1, 2, 4 … and give the verdict (healthy/watch/investigate)");
  add_workload_options(*cmd, flags->workload);
  cmd->add_option("--world-sizes", flags->world_sizes, "world sizes to run, ascending from 1 (default: 1, 2, 4 … all)")
      ->delimiter(',')->check(number_check(false));
  cmd->add_option("--max-world-size", flags->max_world_size, "largest world size of the default sweep")
      ->check(number_check(false))->excludes("--world-sizes");  // it would be silently ignored
  cmd->add_flag("--no-nccl-probe", flags->no_nccl_probe,
               "GPU ranks: skip the short all-reduce with NCCL's INFO log that shows NCCL's transports and settings");
  cmd->add_option("--html", flags->html, "write one self-contained HTML page of the report (diagnosis, scaling, waterfall, topology)")
      ->check(output_file_check());
  cmd->add_option("-o,--out", flags->out, "write the report as JSON to this file (atomically)")
      ->check(output_file_check());
  cmd->add_option("--kernel-trace", flags->kernel_trace,
                  "GPU: each world size also records one round kernel by kernel (CUPTI) into DIR/n<N>/rank<R>.json, "
                  "and doctor says which kernels and how much idle time between them make the compute loss, and how much "
                  "longer compute kernels ran beside NCCL's")
      ->type_name("DIR");
  cmd->add_option("-n,--world-size", flags->world_size, "train's option; doctor answers it with --world-sizes")
      ->group("");  // hidden; named so that CLI11's own errors about it say which option
  return [cmd, flags] { return cmd->parsed() ? run(*flags) : -1; };
}

}  // namespace scalescope::cli
