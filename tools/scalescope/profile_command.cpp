// `scalescope profile [OPTIONS] -- COMMAND…`: runs the user's own training job as given, captures what explains
// its scaling (step times per rank, DDP's configuration, a profiler window, NCCL's logs, the job's output) without
// a change to its code, and diagnoses it through `analyze`. Logic: src/profile (environment, runner, the job's
// record) and the Python shim in python/shim; docs/profile.md says what is captured and how.

#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "comm/launcher.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/output_guard.h"
#include "core/terminal_text.h"
#include "readers/input_kind.h"
#include "profile/job_directory.h"
#include "profile/job_failure.h"
#include "profile/job_record.h"
#include "profile/job_runner.h"
#include "profile/job_progress.h"
#include "core/progress.h"
#include "workload_options.h"

namespace scalescope::cli {

namespace {

namespace fs = std::filesystem;

struct ProfileFlags {
  std::vector<std::string> command;  // after --
  std::string out, keep, timeline, html;
  int warmup = 10, steps = 5;
  double timeout = 0;
  bool no_nccl_plugin = false;
};

/// How much of a text input larger than this profile's analysis reads: its first and last half (the job's log: NCCL's
/// and the launcher's start-up lines, the step lines, and the error that ended a crash). A job that prints 100 MB is
/// then analysed in about the time of a 1 MB log.
constexpr std::uint64_t kJobLogExcerptBytes = 1u << 20;

std::vector<std::string>& tail_storage() {
  static std::vector<std::string> tail;
  return tail;
}

int run_profile(const ProfileFlags& f, std::vector<std::string> command) {
  // `profile … | head`: a closed reader must not kill profile before the job directory is analysed and cleaned up.
  ::signal(SIGPIPE, SIG_IGN);
  if (!command.empty() && command.front() == "--") command.erase(command.begin());
  if (command.empty())
    throw core::UsageError("profile needs the job's command", "give it after --: scalescope profile -- torchrun --nproc_per_node 2 train.py");
  // The job directory is read back by the analysis (and by a later `analyze DIR`): no output goes inside it.
  core::check_run_outputs({{"--out", f.out}, {"--timeline", f.timeline}, {"--html", f.html}},
                          {{f.keep, "the job directory (--keep)", true}});
  profile::JobDirectory dir(f.keep);
  const std::string& job_dir = dir.path();

  profile::JobPlan plan = profile::plan_job(command, job_dir, {f.warmup, f.steps, f.timeout, f.no_nccl_plugin});
  profile::JobSpec& spec = plan.spec;
  nlohmann::json& job = plan.record;
  const bool escaped = plan.escaped;
  core::write_file_atomically(job_dir + "/job.json", job.dump(1) + "\n");
  std::fprintf(stderr, "profile: job directory %s; profiler window: %d steps after %d warm-up steps\n", job_dir.c_str(), f.steps, f.warmup);
  for (const auto& n : plan.not_captured) std::fprintf(stderr, "profile: not captured: %s\n", n.c_str());
  std::fflush(stderr);

  // Progress: rank 0's optimizer steps against the warm-up and the window (from the shim's record), with the time
  // left until the window is captured; redrawn below the job's own output on a terminal, a line per stage in a log.
  core::Progress bar("profile", f.steps > 0 ? f.warmup + 1 + f.steps : f.warmup);
  std::string last_stage;
  auto last_poll = std::chrono::steady_clock::now();
  if (plan.shim) {
    spec.on_tick = [&] {
      const auto now = std::chrono::steady_clock::now();
      if (now - last_poll < std::chrono::milliseconds(500)) return;
      last_poll = now;
      const auto p = profile::read_capture_progress(job_dir, f.steps);
      const std::string stage = p ? p->stage() : "starting";
      const std::string what = p ? fmt::format("{} (rank 0: step {})", stage, p->steps) : "job starting";
      if (bar.style() == core::ProgressStyle::terminal || stage != last_stage)
        bar.update(p ? std::min(p->steps, p->target()) : 0, what);
      last_stage = stage;
    };
    spec.before_output = [&] { bar.hide(); };
    spec.after_output = [&](bool line_ended) {
      if (line_ended) bar.show();
    };
  }
  const auto result = profile::run_job(spec);
  bar.finish();
  profile::record_job_end(job, result, escaped);
  std::fflush(stdout);
  if (!result.start_error.empty()) {  // nothing ran: nothing to analyse, and nothing is left behind
    dir.remove();
    std::fprintf(stderr, "profile: the job %s; check the command's name and PATH\n", result.describe().c_str());
    return result.exit_status;
  }
  if (!result.left_running.empty()) {
    std::string running, stopped;
    for (const auto& p : result.left_running)
      (p.stopped ? stopped : running) += fmt::format("\n  pid {}: {}", p.pid, core::terminal_text(p.command, 200));
    if (!running.empty())
      std::fprintf(stderr, "\nprofile: process(es) the job started, still running after the job ended (not stopped by "
                   "scalescope; `kill PID` ends one):%s\n", running.c_str());
    if (!stopped.empty())
      std::fprintf(stderr, "\nprofile: process(es) of the job that kept its output open %.0f s after it ended, stopped "
                   "(SIGKILL) so that profile could finish:%s\n", spec.grace_seconds, stopped.c_str());
  }
  // A job that failed by itself: its first exception is the first finding, before any analysis of its scaling.
  std::string failed;
  if (result.exit_status != 0 && !result.timed_out && result.stop_signal == 0) {
    try {
      const auto log = analyze::read_input_file(job_dir + "/job.log", kJobLogExcerptBytes);
      const auto failure = profile::read_job_failure(log.text);
      nlohmann::json fj = {{"failed_ranks", failure.failed_ranks}};
      if (const auto* e = failure.first_cause()) {
        fj["first_exception"] = profile::json_text(e->line, escaped || profile::any_not_utf8({&e->line}));
        if (e->rank) fj["rank"] = *e->rank;
        if (!e->frame.empty()) fj["frame"] = profile::json_text(e->frame, escaped || profile::any_not_utf8({&e->frame}));
        fj["launcher_crash"] = failure.launcher_crash();
        failed = fmt::format("{}{}", e->rank ? fmt::format("rank {}: ", *e->rank) : "", core::terminal_text(e->line, 300));
      }
      job["failure"] = fj;
      if (!failure.failed_ranks.empty())
        failed += fmt::format("{}ranks the launcher lists as failed: {}", failed.empty() ? "" : "; ",
                              fmt::join(failure.failed_ranks, ", "));
    } catch (const core::Error&) {  // no log to read: the exit status says what there is
    }
  }
  core::write_file_atomically(job_dir + "/job.json", job.dump(1) + "\n");
  if (!failed.empty())
    std::fprintf(stderr, "\nprofile: the job FAILED (%s): %s\n  (the first exception in its output; what follows it in "
                 "job.log is mostly its consequence)\n", result.describe().c_str(), failed.c_str());
  std::fprintf(stderr, "\nprofile: the job %s after %.1f s; analysing %s\n\n", result.describe().c_str(), result.wall_seconds,
               job_dir.c_str());
  std::fflush(stderr);

  AnalyzeFlags a;
  a.files = {job_dir};
  a.out = f.out;
  a.timeline = f.timeline;
  a.html = f.html;
  a.step_windows = "gpu";
  a.command = "profile";
  {
    std::string cmd;  // the job's command, as the page's title names it
    for (const auto& w : command) cmd += (cmd.empty() ? "" : " ") + w;
    a.subject = cmd.size() > 80 ? cmd.substr(0, 77) + "…" : cmd;
  }
  a.limits.text_excerpt_bytes = kJobLogExcerptBytes;  // the job's own output: its head and its end
  int analysis = 0;
  try {
    analysis = run_analyze(a);
  } catch (const core::Error& e) {
    say_error(std::string("analysing the job directory: ") + e.what(), e.remedy());
    analysis = 1;
  }
  if (!dir.kept()) {
    dir.remove();
    std::fprintf(stderr, "profile: the job directory was removed (--keep DIR keeps it for scalescope analyze DIR)\n");
  } else {
    std::fprintf(stderr, "profile: the job directory is kept: scalescope analyze %s\n", job_dir.c_str());
  }
  if (analysis != 0) std::fprintf(stderr, "profile: the analysis reported errors (above); the exit status is the job's\n");
  return result.exit_status;
}

}  // namespace

void set_profile_command_tail(std::vector<std::string> tail) { tail_storage() = std::move(tail); }
const std::vector<std::string>& profile_command_tail() { return tail_storage(); }

Action add_profile_command(CLI::App& app) {
  auto flags = std::make_shared<ProfileFlags>();
  auto* cmd = app.add_subcommand(
      "profile", "Run your training job as given (scalescope profile -- torchrun … train.py …), capture its step times, "
                 "DDP configuration, a profiler window and NCCL's logs without changing its code, and diagnose it");
  cmd->add_option("-o,--out", flags->out, "write the analysis as JSON (schema scalescope.analyze/1, with \"diagnosis\")")
      ->check(output_file_check());
  cmd->add_option("--keep", flags->keep, "keep the job directory here (a new or empty directory) for a later scalescope analyze DIR");
  cmd->add_option("--warmup", flags->warmup, "optimizer steps before the profiled window")->check(CLI::Range(0, 1000000))->capture_default_str();
  cmd->add_option("--steps", flags->steps, "optimizer steps profiled (torch.profiler); 0: none")->check(CLI::Range(0, 1000))->capture_default_str();
  cmd->add_option("--timeout", flags->timeout, "stop the job after this many seconds (SIGTERM, then SIGKILL); 0: none")
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_flag("--no-nccl-plugin", flags->no_nccl_plugin,
                "leave NCCL_PROFILER_PLUGIN unset: no per-collective record (NCCL's logs are still kept)");
  cmd->add_option("--timeline", flags->timeline, "write the ranks' traces merged into one Perfetto timeline")->check(output_file_check());
  cmd->add_option("--html", flags->html, "write one self-contained HTML page of the job's analysis")->check(output_file_check());
  // The job's command is what follows `--` (main() takes it off before parsing, so that the job's own flags are never
  // read as scalescope's). A command given without `--` lands here and is refused with the remedy.
  cmd->add_option("command", flags->command, "the job's command and its arguments, after --");
  return [cmd, flags] {
    if (!cmd->parsed()) return -1;
    if (!flags->command.empty())
      throw core::UsageError(fmt::format("'{}': the job's command must follow --", flags->command.front()),
                             "scalescope profile [OPTIONS] -- torchrun --nproc_per_node 2 train.py …");
    return run_profile(*flags, profile_command_tail());
  };
}

}  // namespace scalescope::cli
