// `scalescope comm`: a collective benchmark sweep, its nccl-tests table and what it says (plateau busbw,
// small-message latency, α–β fit, grade) — measured live on GPU ranks (NCCL) or CPU ranks (MPI) with
// nccl-tests' flags, or read from a saved nccl-tests output (`--from FILE`).

#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "readers/nccl/nccl_tests_parser.h"
#include "analysis/sweep_analysis.h"
#include "commands.h"
#include "core/atomic_file.h"
#include "comm/bench_backend.h"
#include "comm/launcher.h"
#include "comm/mpi_communicator.h"
#include "core/error.h"
#include "core/output_guard.h"
#include "core/json_file.h"
#include "runtime/comm_job.h"
#include "report/nccl_tests_table.h"
#include "workload_options.h"

namespace scalescope::cli {
namespace {

struct CommFlags {
  std::string from;        // saved nccl-tests output to read instead of measuring
  std::string collective;  // --from: what the sweep measured (a hint); live: what to measure ("all" = every one)
  double expect_gbps = 0;  // expected bus bandwidth for the grade; 0: no grade
  std::string out;         // JSON report path
  // Live benchmark, nccl-tests' flags.
  std::string backend = "auto";
  int world_size = 1;              // -g (nccl-tests: GPUs per thread; here: ranks, one per GPU or core)
  std::string min_bytes = "32M", max_bytes = "32M", step_bytes = "1M";
  std::uint64_t step_factor = 1;
  int iters = 20, warmup_iters = 1, check = 1;
  std::string datatype = "float", op = "sum", root = "0";
  bool no_per_iteration = false;
  double timeout_seconds = 1800;
  bool quiet = false;
  std::string internal_job;
};

/// nccl-tests' size syntax: a number with an optional K, M or G suffix (powers of 1024). Throws UsageError.
std::uint64_t parse_size(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  std::uint64_t unit = 1;
  std::string suffix(end ? end : "");
  if (suffix == "K" || suffix == "k") unit = 1ull << 10;
  else if (suffix == "M" || suffix == "m") unit = 1ull << 20;
  else if (suffix == "G" || suffix == "g") unit = 1ull << 30;
  else if (!suffix.empty()) unit = 0;
  if (errno != 0 || end == text.c_str() || unit == 0 || !(value >= 0) || value * unit > 1.8e19)
    throw core::UsageError(fmt::format("{} '{}' is not a size", flag, text), "use bytes with an optional K, M or G suffix, e.g. 8, 64K, 4G");
  return static_cast<std::uint64_t>(std::llround(value * static_cast<double>(unit)));
}

template <class T, class Parse, class All>
std::vector<T> parse_list(const std::string& flag, const std::string& text, Parse parse, All all, const char* valid) {
  if (text == "all") return all();
  auto v = parse(text);
  if (!v) throw core::UsageError(fmt::format("unknown {} '{}'", flag, text), std::string("use one of: ") + valid + ", or all");
  return {*v};
}

/// Whether an -o value is a file name rather than an op ("r.json", "out/r"): `-o` is --out in analyze and doctor,
/// but the reduction op in `comm`, as in nccl-tests.
bool op_looks_like_a_file_name(const std::string& op) {
  return op.find('.') != std::string::npos || op.find('/') != std::string::npos;
}

runtime::CommJobConfig resolve(const CommFlags& f) {
  runtime::CommJobConfig c;
  c.backend = f.backend == "auto" ? (train::visible_gpu_count() > 0 ? train::BackendKind::gpu : train::BackendKind::cpu)
                                  : train::parse_backend_kind(f.backend);
  if (f.backend == "auto" && c.backend == train::BackendKind::cpu && !f.quiet && f.internal_job.empty())
    std::fprintf(stderr, "scalescope comm: no GPU is visible, so the ranks are CPU processes over MPI (host memory); "
                         "pass --backend gpu on a GPU machine\n");
  c.world_size = f.world_size;
  auto& s = c.sweep;
  s.min_bytes = parse_size("-b", f.min_bytes);
  s.max_bytes = parse_size("-e", f.max_bytes);
  s.step_bytes = parse_size("-i", f.step_bytes);
  s.step_factor = f.step_factor;
  s.iters = f.iters;
  s.warmup_iters = f.warmup_iters;
  s.check = f.check;
  s.per_iteration_stats = !f.no_per_iteration;
  s.collectives = parse_list<comm::Collective>("collective", f.collective.empty() ? "all_reduce" : f.collective,
                                               comm::parse_collective, comm::all_collectives,
                                               "all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all, send_recv");
  s.types = parse_list<comm::DataType>(
      "data type", f.datatype, comm::parse_data_type,
      [] { return std::vector<comm::DataType>{comm::DataType::f32, comm::DataType::f16, comm::DataType::bf16,
                                              comm::DataType::f64, comm::DataType::i32, comm::DataType::i8}; },
      "float, half, bfloat16, double, int32, int8");
  if (op_looks_like_a_file_name(f.op))  // meant for --out
    throw core::UsageError(fmt::format("unknown op '{}': in `comm`, -o is the reduction op, as in nccl-tests", f.op),
                           "write the result with --out FILE; -o takes sum, prod, max, min, avg or all");
  s.ops = parse_list<comm::RedOp>(
      "op", f.op, comm::parse_red_op,
      [] { return std::vector<comm::RedOp>{comm::RedOp::sum, comm::RedOp::prod, comm::RedOp::max, comm::RedOp::min,
                                           comm::RedOp::avg}; },
      "sum, prod, max, min, avg");
  if (f.root == "all") {
    s.roots.clear();
    for (int r = 0; r < f.world_size; ++r) s.roots.push_back(r);
  } else {
    char* end = nullptr;
    const long r = std::strtol(f.root.c_str(), &end, 10);
    if (end == f.root.c_str() || *end != '\0')
      throw core::UsageError(fmt::format("root '{}' is not a rank number", f.root), "use -r 0 or -r all");
    s.roots = {static_cast<int>(r)};
  }
  c.timeout_seconds = f.timeout_seconds;
  c.progress = !f.quiet;
  c.validate();
  return c;
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
    runtime::CommJobConfig config;
    std::string result_path;
    try {
      auto job = core::read_json_file(f.internal_job, "the comm job file");
      config = job.at("config").get<runtime::CommJobConfig>();
      result_path = job.at("result").get<std::string>();
    } catch (const core::Error&) {
      throw;
    } catch (const std::exception& e) {  // not JSON, a missing or mistyped field, an unknown name
      throw core::Error("job file '" + f.internal_job + "' is not a scalescope comm job: " + e.what(),
                        "--internal-job is how scalescope starts its own ranks; run 'scalescope comm' without it");
    }
    if (auto run = runtime::run_comm_rank(config)) core::write_file_atomically(result_path, nlohmann::json(*run).dump() + "\n");
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
  if (!f.collective.empty()) {
    auto c = comm::parse_collective(f.collective);
    if (!c)
      throw core::UsageError("unknown collective '" + f.collective + "'",
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
      cmd.count("-o") > 0 && op_looks_like_a_file_name(op) ? "write the report with --out FILE: in `comm`, -o is the reduction op, as in nccl-tests"
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
  cmd->add_option("--collective", flags->collective,
                  "live: the collective to measure, or all (default all_reduce); --from: the collective the output "
                  "measured, when the text does not name its program");
  cmd->add_option("--backend", flags->backend, "cpu (MPI ranks), gpu (NCCL, one process per GPU) or auto")
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}))->capture_default_str();
  cmd->add_option("-g,--ngpus,--world-size", flags->world_size, "ranks: GPUs (or CPU cores) to run over")
      ->check(number_check(false))->capture_default_str();
  cmd->add_option("-b,--minbytes", flags->min_bytes, "smallest size (K/M/G suffixes)")->capture_default_str();
  cmd->add_option("-e,--maxbytes", flags->max_bytes, "largest size")->capture_default_str();
  cmd->add_option("-i,--stepbytes", flags->step_bytes, "size increment when -f is 1")->capture_default_str();
  cmd->add_option("-f,--stepfactor", flags->step_factor, "size multiplication factor")->check(number_check(false))->capture_default_str();
  cmd->add_option("-n,--iters", flags->iters, "timed iterations per size")->check(number_check(false))->capture_default_str();
  cmd->add_option("-w,--warmup_iters", flags->warmup_iters, "warm-up iterations (before the sweep and before each size)")
      ->check(number_check(true))->capture_default_str();
  cmd->add_option("-c,--check", flags->check, "data-check iterations per size (0: no check)")
      ->check(number_check(true))->capture_default_str();
  cmd->add_option("-d,--datatype", flags->datatype, "float, half, bfloat16, double, int32, int8 or all")->capture_default_str();
  cmd->add_option("-o,--op", flags->op, "sum, prod, max, min, avg or all")->capture_default_str();
  cmd->add_option("-r,--root", flags->root, "root rank of broadcast/reduce, or all")->capture_default_str();
  cmd->add_flag("--no-per-iteration", flags->no_per_iteration, "skip the second pass that times every iteration");
  cmd->add_option("--timeout", flags->timeout_seconds, "stop a run whose ranks take longer than this, seconds (0: never)")
      ->check(number_check(true))->capture_default_str();
  cmd->add_flag("-q,--quiet", flags->quiet, "no progress messages on stderr");
  cmd->add_option("--internal-job", flags->internal_job, "")->group("");
  cmd->add_option("--expect", flags->expect_gbps, "expected bus bandwidth in GB/s (1e9 B/s) to grade the plateau against")
      ->check(number_check(false));
  cmd->add_option("--out", flags->out, "write the report as JSON (schema scalescope.comm/1) to this file (atomically)")
      ->check(output_file_check());
  return [cmd, flags] {
    if (!cmd->parsed()) return -1;
    if (!flags->from.empty()) refuse_live_flags_with_from(*cmd, flags->op);
    return run(*flags);
  };
}

}  // namespace scalescope::cli
