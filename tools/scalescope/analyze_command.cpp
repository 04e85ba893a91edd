// `scalescope analyze FILE…`: reads the evidence users already have — NCCL debug logs, PyTorch watchdog
// timeouts, nccl-tests outputs, `nvidia-smi topo -m`, scalescope's own JSON, profiler traces, training logs, prose —
// and prints what each file shows, the views across files and the diagnosis. The reading and the diagnosis are
// evidence::run(); the rendering report/analysis_report.h; this file checks the outputs, calls and prints.

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "workload_options.h"
#include "analysis/trace_analysis.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/output_guard.h"
#include "diagnose/engine.h"
#include "evidence/run.h"
#include "readers/input_list.h"
#include "report/analysis_report.h"
#include "report/answer.h"
#include "report/chrome_trace_writer.h"
#include "report/html_builders.h"

namespace scalescope::cli {
namespace {

/// Says each problem on stderr as scalescope says errors.
void say_problems(const std::vector<evidence::Problem>& problems) {
  for (const auto& p : problems) {
    std::fflush(stdout);
    say_error(p.cause, p.remedy);
  }
}

}  // namespace

int run_analyze(const AnalyzeFlags& f) {
  if (f.causes) {
    std::fputs(report::render_catalogue().c_str(), stdout);
    return 0;
  }
  if (f.files.empty())
    throw core::UsageError("analyze needs the files to read", "pass them: scalescope analyze FILE… (or --causes for the catalogue)");
  // A directory stands for the files in it (a job directory of `scalescope profile`): those no reader recognises
  // are counted as skipped, not as errors.
  std::vector<core::RunInput> given;
  for (const auto& p : f.files) given.push_back({p, "an input"});
  if (!f.baseline.empty()) given.push_back({f.baseline, "the --baseline trace"});
  // Before anything is read: the analysis must not be lost to a bad output path, nor an input to an output.
  core::check_run_outputs({{"--out", f.out}, {"--timeline", f.timeline}, {"--html", f.html}}, given);
  auto listed = analyze::list_inputs(f.files, f.limits);
  for (const auto& note : listed.notes) std::fprintf(stderr, "analyze: %s\n", note.c_str());
  // A directory's file may be a link to a file outside it: the outputs are checked against every file read too.
  for (const auto& [flag, path] : {std::pair{"--out", &f.out}, std::pair{"--timeline", &f.timeline}, std::pair{"--html", &f.html}})
    core::check_output_is_not_input(*path, flag, listed.files);
  for (const auto& d : listed.directories)
    if (d.omitted > 0)
      std::fprintf(stderr,
                   "analyze: '%s' holds %zu files; the first %zu in name order were read, %zu were not (from '%s' on): "
                   "raise --max-files to read more\n",
                   d.path.c_str(), d.files, d.files - d.omitted, d.omitted, d.first_omitted.c_str());
  const core::OutputFile out_file(f.out);

  evidence::RunOptions options;
  options.limits = f.limits;
  options.trace_read = f.trace_read;
  options.baseline = f.baseline;
  options.strong = f.strong;
  options.step_windows = f.step_windows == "annotation" ? analyze::StepWindows::annotation : analyze::StepWindows::gpu_launches;
  options.keep_timeline = !f.timeline.empty();
  const auto a = evidence::run(std::move(listed), options);

  // The answer first (report/answer.h), from the same document --out writes; the HTML page leads with it too.
  nlohmann::json brief = {{"diagnosis", a.diagnosis}};  // what the answer reads of the document --out writes
  if (a.traces) brief["combined"]["trace"] = *a.traces;
  const auto answer = report::answer_of_analysis(brief, f.command);
  if (a.anything_read()) std::fputs(report::render_answer(answer).c_str(), stdout);
  std::size_t skipped = 0;
  for (const auto& r : a.files) {
    if (!r.skipped.empty()) {
      if (++skipped <= report::kSkippedListed) std::fputs(report::render_file(r).c_str(), stdout);
      continue;
    }
    std::fputs(report::render_file(r).c_str(), stdout);
    say_problems(r.errors);
    std::fflush(stderr);
  }
  std::fputs(report::render_skipped_summary(a).c_str(), stdout);

  std::vector<evidence::Problem> timeline_errors;
  std::string traces_text = report::render_traces_together(a);
  if (!f.timeline.empty()) {
    const bool any_trace = std::any_of(a.files.begin(), a.files.end(), [](const evidence::FileResult& r) {
      return r.detection.has(analyze::InputKind::kineto_trace);
    });
    if (!any_trace) {
      timeline_errors.push_back({"--timeline '" + f.timeline + "': none of the inputs is a profiler trace, so no timeline was written",
                                 "pass the ranks' profiler traces (PyTorch profiler or scalescope --kernel-trace) with it"});
    } else if (a.traces && !a.traces->ranks.empty()) {
      try {
        analyze::write_merged_timeline_file(*a.traces, f.timeline);
        traces_text += "merged timeline of every rank (open in https://ui.perfetto.dev): " + f.timeline + "\n";
      } catch (const core::Error& e) {  // a full disk: the traces' analysis is still reported
        timeline_errors.push_back({"--timeline '" + f.timeline + "': " + e.what(), e.remedy()});
      }
    }
  }
  std::fputs((traces_text + report::render_logs_together(a)).c_str(), stdout);
  // When no file could be read, the errors above are the answer: a diagnosis of nothing would only bury them.
  if (a.anything_read()) std::fputs(("\n" + diagnose::render(a.diagnosis)).c_str(), stdout);
  int status = a.any_error() || !timeline_errors.empty() ? 1 : 0;
  say_problems(a.baseline_errors);
  say_problems(timeline_errors);
  if (!f.html.empty()) {
    report::HtmlPage page;
    page.title = fmt::format("scalescope {} — {}", f.command,
                             f.subject.empty() ? fmt::format("{} file(s)", a.inputs.files.size()) : f.subject);
    if (a.anything_read()) page.answer = answer;
    report::add_analysis(page, a);
    const auto first = report::default_provenance(command_line());
    page.provenance.insert(page.provenance.begin(), first.begin(), first.end());
    for (const auto& path : a.inputs.files) page.provenance.emplace_back("input", path);
    try {
      core::write_file_atomically(f.html, report::render_html(page));
      say_written(f.html);
    } catch (const core::Error& e) {
      say_error(std::string("--html: ") + e.what(), e.remedy());
      status = 1;
    }
  }
  if (!f.out.empty()) {
    nlohmann::json document = report::analysis_json(a, timeline_errors);
    document["answer"] = report::answer_json(answer);
    out_file.write(document.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    say_written(f.out);
  }
  return status;
}

Action add_analyze_command(CLI::App& app) {
  auto flags = std::make_shared<AnalyzeFlags>();
  auto* cmd = app.add_subcommand(
      "analyze", "Read what a run left behind — NCCL debug logs, PyTorch watchdog timeouts, nccl-tests outputs, "
                 "`nvidia-smi topo -m`, scalescope JSON, profiler traces, training logs, launch commands, environments, "
                 "timing tables, Python profiles, lspci / nvidia-smi / kernel-log output — say what each shows, and "
                 "diagnose them together: the root cause, its cost, its fix");
  // No CLI::ExistingFile: a missing file is that file's error (exit 1) while the others are still analysed.
  cmd->add_option("files", flags->files, "files to analyse (each is detected on its own)");
  cmd->add_flag("--causes", flags->causes, "print the causes the diagnosis knows (evidence, cost, fix, confirming command) and stop");
  cmd->add_option("-o,--out", flags->out, "write the results as JSON (schema scalescope.analyze/1) to this file (atomically)")
      ->check(output_file_check());
  cmd->add_option("--baseline", flags->baseline,
                  "a profiler trace of the same job on one rank: gives speedup, comm ratio, the seed's verdict, each kernel's time "
                  "beside it, and references for kernels that never run without communication beside them");
  cmd->add_flag("--strong", flags->strong, "the traces are strong scaling (fixed global batch); default weak");
  cmd->add_option("--step-windows", flags->step_windows,
                  "what a step is: gpu (from the first GPU work launched in ProfilerStep#N to the next step's, so a "
                  "CPU running ahead does not shorten it) or annotation (the ProfilerStep#N CPU range, as HTA)")
      ->check(CLI::IsMember({"gpu", "annotation"}))->capture_default_str();
  cmd->add_option("--timeline", flags->timeline,
                  "write the ranks' traces merged into one Chrome-trace JSON (compute and communication on separate "
                  "tracks; opens in Perfetto)")
      ->check(output_file_check());
  cmd->add_option("--html", flags->html, "write one self-contained HTML page: diagnosis, scaling, waterfall, busbw, "
                                         "swimlanes, topology, provenance (opens offline)")
      ->check(output_file_check());
  cmd->add_option("--max-files", flags->limits.files_per_directory,
                  "read at most this many files of a directory given as input (the first in name order; the rest are "
                  "counted and named in one line)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{100'000'000}))->capture_default_str();
  cmd->add_option("--max-input-bytes", flags->limits.total_bytes,
                  "read at most this many bytes of input files in one run, as stored (a file past it is not read, with "
                  "an error)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 50))->capture_default_str();
  cmd->add_option("--max-trace-bytes", flags->trace_read.max_json_bytes,
                  "read at most this many bytes of JSON from one profiler trace (decompressed): a larger one is an error")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 50))->capture_default_str();
  cmd->add_option("--max-trace-events", flags->trace_read.max_events,
                  "read at most this many events from one profiler trace: a larger one is an error")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40))->capture_default_str();
  return [cmd, flags] { return cmd->parsed() ? run_analyze(*flags) : -1; };
}

}  // namespace scalescope::cli
