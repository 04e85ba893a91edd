// `scalescope comm`: a collective benchmark sweep, its nccl-tests table and what it says (plateau busbw,
// small-message latency, α–β fit, grade). Now: `--from FILE` reads a saved nccl-tests output. The live
// benchmark (NCCL/MPI timing loop) produces the same analyze::Sweep and joins run() below.

#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "analyze/nccl_tests_parser.h"
#include "analyze/sweep_analysis.h"
#include "commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "report/nccl_tests_table.h"

namespace scalescope::cli {
namespace {

struct CommFlags {
  std::string from;        // saved nccl-tests output to read instead of measuring
  std::string collective;  // what the sweep measured (a hint for --from)
  double expect_gbps = 0;  // expected bus bandwidth for the grade; 0: no grade
  std::string out;         // JSON report path
};

analyze::Sweep sweep_from_file(const CommFlags& f) {
  analyze::NcclTestsParseOptions options;
  if (!f.collective.empty()) {
    auto c = comm::parse_collective(f.collective);
    if (!c)
      throw core::UsageError("unknown collective '" + f.collective + "'",
                             "use all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all or send_recv");
    options.hint = c;
  }
  return analyze::read_nccl_tests_file(f.from, options);
}

int run(const CommFlags& f) {
  if (!f.out.empty()) core::check_output_path_writable(f.out);
  analyze::Sweep sweep;
  if (!f.from.empty()) {
    sweep = sweep_from_file(f);
  } else {
    throw core::UsageError("scalescope comm needs --from FILE in this build: the live benchmark is not part of it yet",
                           "run nccl-tests (e.g. all_reduce_perf -b 8 -e 8G -f 2 -g N) and pass its output with --from");
  }
  analyze::AnalysisOptions options;
  if (f.expect_gbps > 0) options.expected_busbw_gbps = f.expect_gbps;
  const auto analysis = analyze::analyze_sweep(sweep, options);

  // Warnings to stderr so stdout stays a table that nccl-tests parsers can read.
  for (const auto& w : sweep.warnings) std::fprintf(stderr, "scalescope: warning: %s\n", w.c_str());
  std::printf("# scalescope comm: %s, %s, %s rank(s)%s\n", sweep.source.c_str(), std::string(comm::perf_program_name(sweep.collective)).c_str(),
              sweep.ranks ? std::to_string(*sweep.ranks).c_str() : "unknown",
              sweep.nccl_version ? (", NCCL " + *sweep.nccl_version).c_str() : "");
  std::fputs(report::render_comm_report(sweep, analysis).c_str(), stdout);
  if (!f.out.empty()) {
    core::write_file_atomically(f.out, analyze::comm_report_json(sweep, analysis).dump(1) + "\n");
    std::fprintf(stderr, "wrote %s\n", f.out.c_str());
  }
  return 0;
}

}  // namespace

Action add_comm_command(CLI::App& app) {
  auto flags = std::make_shared<CommFlags>();
  auto* cmd = app.add_subcommand(
      "comm", "Collective bandwidth and latency: read an nccl-tests output (--from) and report plateau busbw, latency, "
              "an α–β fit and a grade");
  // No CLI::ExistingFile: a missing or unreadable file is a failed run (exit 1) naming the path, like bad content.
  cmd->add_option("--from", flags->from, "nccl-tests output to read (all_reduce_perf & co., rccl-tests, NCCL 1.x tests)");
  cmd->add_option("--collective", flags->collective,
                  "the collective the output measured, when the text does not name its program (e.g. all_reduce)");
  cmd->add_option("--expect", flags->expect_gbps, "expected bus bandwidth in GB/s (1e9 B/s) to grade the plateau against")
      ->check(CLI::PositiveNumber);
  cmd->add_option("-o,--out", flags->out, "write the report as JSON (schema scalescope.comm/1) to this file (atomically)");
  return [cmd, flags] { return cmd->parsed() ? run(*flags) : -1; };
}

}  // namespace scalescope::cli
