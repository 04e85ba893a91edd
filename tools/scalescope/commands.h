#pragma once
// Subcommands of the `scalescope` CLI. Each registers its flags and returns the action to run after parsing.

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "readers/input_list.h"
#include "readers/trace/trace_reader.h"

namespace scalescope::cli {

/// Returns the exit status (0 success, 1 a failed run).
using Action = std::function<int()>;

Action add_train_command(CLI::App& app);
Action add_doctor_command(CLI::App& app);
Action add_comm_command(CLI::App& app);
Action add_topo_command(CLI::App& app);
Action add_analyze_command(CLI::App& app);
Action add_profile_command(CLI::App& app);
Action add_predict_command(CLI::App& app);
Action add_knowledge_command(CLI::App& app);

/// The job's command of `scalescope profile … -- COMMAND…`: main() takes everything after the first `--` that follows
/// `profile` off the command line before parsing, and hands it here.
void set_profile_command_tail(std::vector<std::string> tail);
const std::vector<std::string>& profile_command_tail();

/// What `scalescope analyze` is asked: its flags. `profile` analyses its job directory through the same run.
struct AnalyzeFlags {
  std::vector<std::string> files;    ///< files, or directories standing for the files in them
  std::string out;
  std::string baseline;              ///< a 1-rank profiler trace of the same job
  bool strong = false;
  std::string timeline;              ///< merged Perfetto timeline of the traces
  std::string html;                  ///< one self-contained HTML page of the results
  std::string step_windows = "gpu";  ///< analyze::StepWindows
  bool causes = false;               ///< print the cause catalogue and stop
  analyze::InputLimits limits;       ///< --max-files, --max-input-bytes
  analyze::TraceReadOptions trace_read;  ///< --max-trace-bytes, --max-trace-events
  std::string command = "analyze";   ///< the command whose answer this is ("profile" for a job's analysis)
  std::string subject;               ///< what the HTML page's title names after the command ("" : the file count)
};

/// Runs `scalescope analyze` (terminal report, --out JSON, --timeline); returns its exit status (1 when a file
/// failed). Throws core::UsageError / core::Error for bad arguments or outputs, as the command does.
int run_analyze(const AnalyzeFlags& flags);

/// The command line scalescope was started with (main sets it), for the HTML report's provenance.
void set_command_line(std::vector<std::string> argv);
const std::vector<std::string>& command_line();

/// "wrote PATH" (and `note`) on stderr, after what stdout holds so far, so that the two do not interleave mid-line
/// when both go to one file.
inline void say_written(const std::string& path, const std::string& note = "") {
  std::fflush(stdout);
  std::fprintf(stderr, "wrote %s%s\n", path.c_str(), note.c_str());
}

/// "scalescope: error: WHAT" and, when there is one, "  what to do: REMEDY" on stderr: how every failed command says
/// why, whether it ends by an exception (main) or returns 1 after keeping what it measured (doctor).
inline void say_error(const std::string& what, const std::string& remedy) {
  std::fprintf(stderr, "scalescope: error: %s\n", what.c_str());
  if (!remedy.empty()) std::fprintf(stderr, "  what to do: %s\n", remedy.c_str());
}

}  // namespace scalescope::cli
