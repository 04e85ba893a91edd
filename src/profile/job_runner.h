#pragma once
// Runs the user's command for `scalescope profile`: as given (execvp, no shell), in its own process group, with
// extra environment; its stdout and stderr pass through to ours and are also written, in the order they came, to
// a log file. A stop signal (SIGINT, SIGTERM, SIGHUP) is forwarded to the job's process group; a timeout sends it
// SIGTERM; a job that does not end within `grace_seconds` after either gets SIGKILL. The runner returns in every
// case, so that what the job left can still be analysed.

#include <optional>
#include <string>
#include <functional>
#include <utility>
#include <vector>

namespace scalescope::profile {

struct JobSpec {
  std::vector<std::string> argv;                                  ///< argv[0] is looked up on PATH
  std::vector<std::pair<std::string, std::string>> environment;   ///< set (overriding) in the job's environment
  std::string log_path;                                           ///< stdout and stderr together
  double timeout_seconds = 0;                                     ///< 0: none
  double grace_seconds = 10;                                      ///< after SIGTERM/SIGINT, before SIGKILL
  /// Called about every 100 ms while the job runs (profile's progress line); may be empty.
  std::function<void()> on_tick;
  /// Called before the job's output is written to the terminal, and after (with whether it ended a line): a
  /// progress line is erased and drawn again around it. May be empty.
  std::function<void()> before_output;
  std::function<void(bool line_ended)> after_output;
};

struct JobResult {
  /// The status `profile` exits with: the job's exit code; 128 + N when a signal N ended it; 124 after the
  /// timeout (as GNU timeout); 127 when the command could not be started.
  int exit_status = 0;
  std::optional<int> signal;        ///< the signal that ended the job
  bool timed_out = false;
  int stop_signal = 0;              ///< the stop signal received and forwarded (0: none)
  std::string start_error;          ///< why the command could not be started ("" when it was)
  double wall_seconds = 0;  ///< from the start to the job's own end (its first process's exit)
  /// A process the job started that was still running when the job ended and its output closed (a daemon, a server,
  /// a rank that escaped its process group with setsid): the runner is their subreaper (prctl
  /// PR_SET_CHILD_SUBREAPER) while the job runs, so they become its children when their parents exit.
  struct LeftProcess {
    int pid = 0;
    std::string command;  ///< /proc/PID/cmdline, arguments joined by spaces (else the command name)
    /// It kept the job's output open past the grace period after the job ended, in the job's process group, so the
    /// runner killed the group (it would hold profile for ever); false: still running, untouched.
    bool stopped = false;
  };
  std::vector<LeftProcess> left_running;
  /// "exited with status 0", "killed by signal 9 (Killed) after the 60 s timeout", …
  std::string describe() const;
};

/// Runs the job to its end (see above) and lists what it left running (JobResult::left_running; they are not
/// stopped). The output is relayed in 64 KiB reads with a constant buffer, and the log written as it comes. Throws
/// core::Error only when the log file or the pipes cannot be made.
JobResult run_job(const JobSpec& spec);

}  // namespace scalescope::profile
