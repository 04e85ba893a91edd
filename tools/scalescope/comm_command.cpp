// `scalescope comm`: a collective benchmark sweep, its nccl-tests table and what it says (plateau busbw,
// small-message latency, α–β fit, grade) — measured live on GPU ranks (NCCL) or CPU ranks (MPI) with
// nccl-tests' flags, or read from a saved nccl-tests output (`--from FILE`).

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "analysis/sweep_analysis.h"
#include "comm/bench_backend.h"
#include "comm/launcher.h"
#include "comm/mpi_communicator.h"
#include "commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/output_guard.h"
#include "readers/nccl/nccl_tests_parser.h"
#include "report/nccl_tests_table.h"
#include "runtime/comm_job.h"
#include "runtime/comm_job_options.h"
#include "workload_options.h"

namespace scalescope::cli {
namespace {

struct CommFlags {
  std::string from;        // saved nccl-tests output to read instead of measuring
  double expect_gbps = 0;  // expected bus bandwidth for the grade; 0: no grade
  std::string out;         // JSON report path
  // The live benchmark, nccl-tests' flags; `job.collective` is also --from's hint (what the sweep measured).
  runtime::CommJobOptions job;
  bool quiet = false;
  std::string internal_job;
};

runtime::CommJobConfig resolve(const CommFlags& f) {
  const train::BackendKind backend = runtime::comm_job_backend(f.job.backend);
  if (f.job.backend == "auto" && backend == train::BackendKind::cpu && !f.quiet && f.internal_job.empty())
    std::fprintf(stderr, "scalescope comm: no GPU is visible, so the ranks are CPU processes over MPI (host memory); "
                         "pass --backend gpu on a GPU machine\n");
  runtime::CommJobOptions options = f.job;
  options.progress = !f.quiet;
  return runtime::comm_job_config(options, backend);
}

/// Prints one sweep's report: a comment line naming it, the nccl-tests table, statistics and summary.
void print_report(const analyze::Sweep& sweep, const analyze::SweepAnalysis& analysis) {
  std::printf("# %s: %s, %s rank(s)%s\n", sweep.source.c_str(),
              std::string(comm::perf_program_name(sweep.collective)).c_str(),
              sweep.ranks ? std::to_string(*sweep.ranks).c_str() : "unknown",
              sweep.nccl_version ? (", NCCL " + *sweep.nccl_version).c_str() : "");
  std::fputs(report::render_comm_report(sweep, analysis).c_str(), stdout);
}

analyze::AnalysisOptions analysis_options(const CommFlags& f) {
  analyze::AnalysisOptions options;
  if (f.expect_gbps > 0) options.expected_busbw_gbps = f.expect_gbps;
  return options;
}

/// The live benchmark: launcher, rank started by the launcher, or rank under mpirun/srun.
int run_live(const CommFlags& f) {
  if (!f.internal_job.empty()) {  // a rank started by launch_comm_job
    runtime::run_comm_job_file(f.internal_job);
    return 0;
  }
  const auto config = resolve(f);
  core::check_run_outputs({{"--out", f.out}}, {});
  const core::OutputFile out_file(f.out);
  std::optional<runtime::CommRun> run;
  if (comm::rank_from_launcher_environment() || comm::started_by_mpi_launcher()) {
    run = runtime::run_comm_rank(config);  // across nodes: this process is one rank; rank 0 reports
    if (!run) return 0;
  } else {
    run = runtime::launch_comm_job(config);
  }
  nlohmann::json reports = nlohmann::json::array();
  double wrong = 0;
  std::printf("# scalescope comm: %s backend, %d rank(s), %s, rank 0 on %s\n", run->backend.c_str(), run->world_size,
              run->library_version.c_str(), run->device.c_str());
  for (analyze::Sweep sweep : run->sweeps) {
    for (const auto& w : sweep.warnings) std::fprintf(stderr, "scalescope: warning: %s\n", w.c_str());
    if (sweep.rows.empty()) continue;
    for (const auto& row : sweep.rows) {
      const double row_wrong = row.out_of_place.wrong.value_or(0) + row.in_place.wrong.value_or(0);
      wrong += row_wrong;
      if (row_wrong > 0) ++sweep.rows_with_wrong_elements;  // live #wrong always counts elements
    }
    const auto analysis = analyze::analyze_sweep(sweep, analysis_options(f));
    print_report(sweep, analysis);
    reports.push_back(analyze::comm_report_json(sweep, analysis));
  }
  if (!f.out.empty()) {
    nlohmann::json out = {{"schema", "scalescope.comm/1"},
                          {"run", {{"backend", run->backend}, {"device", run->device},
                                   {"library_version", run->library_version}, {"world_size", run->world_size},
                                   {"config", config}}},
                          {"reports", reports}};
    out_file.write(out.dump(1) + "\n");
    say_written(f.out);
  }
  if (wrong > 0) {  // as nccl-tests' "Out of bounds values : N FAILED": the collective computed wrong results
    // The test hook made them on purpose: say so, not "a broken link or GPU".
    const bool hook = std::getenv(comm::kEnvCorruptResult) != nullptr;
    const std::string cause =
        hook ? fmt::format(": {} is set, which corrupts one element of every result on purpose (a test hook)",
                           comm::kEnvCorruptResult)
             : std::string();
    const std::string remedy = hook ? fmt::format("unset {}", comm::kEnvCorruptResult)
                                    : "rerun that size with NCCL_DEBUG=INFO; wrong results point at a broken link, "
                                      "GPU or library, not a slow one";
    say_error(fmt::format("the data check found {:.0f} wrong element(s) (see the #wrong columns){}", wrong, cause), remedy);
    return 1;
  }
  return 0;
}

std::vector<analyze::Sweep> sweeps_from_file(const CommFlags& f) {
  analyze::NcclTestsParseOptions options;
  if (!f.job.collective.empty()) {
    auto c = comm::parse_collective(f.job.collective);
    if (!c)
      throw core::UsageError("unknown collective '" + f.job.collective + "'",
                             "use all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all or send_recv");
    options.hint = c;
  }
  return analyze::read_nccl_tests_tables(f.from, options);
}

int run(const CommFlags& f) {
  if (f.from.empty()) return run_live(f);
  core::check_run_outputs({{"--out", f.out}}, {{f.from, "the --from file"}});
  const core::OutputFile out_file(f.out);
  // One report per results table: a text of several tests (or of `comm --collective all`) is read table by table.
  const std::vector<analyze::Sweep> sweeps = sweeps_from_file(f);
  nlohmann::json reports = nlohmann::json::array();
  std::size_t wrong_rows = 0;
  for (const auto& sweep : sweeps) {
    const auto analysis = analyze::analyze_sweep(sweep, analysis_options(f));
    // Warnings to stderr so stdout stays a table that nccl-tests parsers can read. With several tables each warning
    // names its table (its source gives its lines), and stdout is flushed first so each comes before its table.
    std::fflush(stdout);
    const std::string table = sweeps.size() > 1 ? sweep.source + ": " : "";
    for (const auto& w : sweep.warnings) std::fprintf(stderr, "scalescope: warning: %s%s\n", table.c_str(), w.c_str());
    print_report(sweep, analysis);
    reports.push_back(analyze::comm_report_json(sweep, analysis));
    wrong_rows += sweep.rows_with_wrong_elements;
  }
  if (!f.out.empty()) {
    out_file.write((reports.size() == 1 ? reports[0] : analyze::comm_reports_json(reports)).dump(1) + "\n");
    say_written(f.out);
  }
  if (wrong_rows > 0) {  // as a live run that finds wrong elements: a failed run
    say_error(fmt::format("{} row(s) of '{}' report wrong elements (#wrong > 0): the run that wrote it failed its data "
                          "check",
                          wrong_rows, f.from),
              "rerun the test; wrong results point at a faulty GPU, link or NCCL build, not at slow communication");
    return 1;
  }
  return 0;
}

/// `comm --from` reads a saved output: the flags that shape a live run would be silently ignored (and `-o r.json`
/// there is the reduction op, not --out). Throws core::UsageError naming those given.
void refuse_live_flags_with_from(const CLI::App& cmd, const std::string& op) {
  std::string given;
  for (const char* name : {"--backend", "-g", "-b", "-e", "-i", "-f", "-n", "-w", "-c", "-d", "-o", "-r",
                           "--no-per-iteration", "--timeout"})
    if (cmd.count(name) > 0) given += (given.empty() ? "" : ", ") + std::string(name);
  if (given.empty()) return;
  throw core::UsageError(
      fmt::format("--from reads a saved output, so flags that shape a live run would be ignored: {}", given),
      cmd.count("-o") > 0 && runtime::op_looks_like_a_file_name(op) ? "write the report with --out FILE: in `comm`, -o is the reduction op, as in nccl-tests"
                           : "drop them; the sizes, type, op and rank count come from the text (name the collective "
                             "with --collective when it does not say)");
}

}  // namespace

Action add_comm_command(CLI::App& app) {
  auto flags = std::make_shared<CommFlags>();
  auto* cmd = app.add_subcommand(
      "comm", "Collective benchmark with nccl-tests' flags and table, measured on GPU (NCCL) or CPU (MPI) ranks, or read "
              "from an nccl-tests output (--from): plateau busbw, latency, α–β fit and grade");
  // No CLI::ExistingFile: a missing or unreadable file is a failed run (exit 1) naming the path, like bad content.
  cmd->add_option("--from", flags->from, "nccl-tests output to read (all_reduce_perf & co., rccl-tests, NCCL 1.x tests)");
  cmd->add_option("--collective", flags->job.collective,
                  "live: the collective to measure, or all (default all_reduce); --from: the collective the output "
                  "measured, when the text does not name its program");
  cmd->add_option("--backend", flags->job.backend, "cpu (MPI ranks), gpu (NCCL, one process per GPU) or auto")
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}))->capture_default_str();
  cmd->add_option("-g,--ngpus,--world-size", flags->job.world_size, "ranks: GPUs (or CPU cores) to run over")
      ->check(number_check(false))->capture_default_str();
  cmd->add_option("-b,--minbytes", flags->job.min_bytes, "smallest size (K/M/G suffixes)")->capture_default_str();
  cmd->add_option("-e,--maxbytes", flags->job.max_bytes, "largest size")->capture_default_str();
  cmd->add_option("-i,--stepbytes", flags->job.step_bytes, "size increment when -f is 1")->capture_default_str();
  cmd->add_option("-f,--stepfactor", flags->job.step_factor, "size multiplication factor")->check(number_check(false))->capture_default_str();
  cmd->add_option("-n,--iters", flags->job.iters, "timed iterations per size")->check(number_check(false))->capture_default_str();
  cmd->add_option("-w,--warmup_iters", flags->job.warmup_iters, "warm-up iterations (before the sweep and before each size)")
      ->check(number_check(true))->capture_default_str();
  cmd->add_option("-c,--check", flags->job.check, "data-check iterations per size (0: no check)")
      ->check(number_check(true))->capture_default_str();
  cmd->add_option("-d,--datatype", flags->job.datatype, "float, half, bfloat16, double, int32, int8 or all")->capture_default_str();
  cmd->add_option("-o,--op", flags->job.op, "sum, prod, max, min, avg or all")->capture_default_str();
  cmd->add_option("-r,--root", flags->job.root, "root rank of broadcast/reduce, or all")->capture_default_str();
  cmd->add_flag("--no-per-iteration", flags->job.no_per_iteration, "skip the second pass that times every iteration");
  cmd->add_option("--timeout", flags->job.timeout_seconds, "stop a run whose ranks take longer than this, seconds (0: never)")
      ->check(number_check(true))->capture_default_str();
  cmd->add_flag("-q,--quiet", flags->quiet, "no progress messages on stderr");
  cmd->add_option("--internal-job", flags->internal_job, "")->group("");
  cmd->add_option("--expect", flags->expect_gbps, "expected bus bandwidth in GB/s (1e9 B/s) to grade the plateau against")
      ->check(number_check(false));
  cmd->add_option("--out", flags->out, "write the report as JSON (schema scalescope.comm/1) to this file (atomically)")
      ->check(output_file_check());
  return [cmd, flags] {
    if (!cmd->parsed()) return -1;
    if (!flags->from.empty()) refuse_live_flags_with_from(*cmd, flags->job.op);
    return run(*flags);
  };
}

}  // namespace scalescope::cli
