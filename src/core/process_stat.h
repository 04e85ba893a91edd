#pragma once
// What /proc/PID/stat says of a process: the fields the launcher and the job directories need.

#include <sys/types.h>

#include <optional>
#include <string>

namespace scalescope::core {

/// Fields of /proc/PID/stat (proc(5)): the command name (field 2, without its parentheses), the state (field 3:
/// 'R', 'S', 'T' stopped, 't' stopped by a tracer …), the parent's id (field 4), the process group (field 5) and the
/// start time in clock ticks since boot (field 22).
struct ProcessStat {
  std::string command;
  char state = '?';
  pid_t parent = 0;
  pid_t group = 0;
  unsigned long long start_ticks = 0;

  /// True when the process is stopped (SIGSTOP, Ctrl-Z) or stopped by a tracer (a debugger).
  bool stopped() const noexcept { return state == 'T' || state == 't'; }
};

/// Reads /proc/PID/stat, or nullopt when it cannot (no such process, no /proc, a line of another shape). The
/// command name may hold spaces and ')', so the fields after it are counted from the last ')'. Throws nothing.
std::optional<ProcessStat> read_process_stat(pid_t pid);

}  // namespace scalescope::core
