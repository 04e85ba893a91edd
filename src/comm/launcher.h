#pragma once
// Starting rank processes on one node, so that a user needs no launcher:
//  - GPU ranks: one process per GPU, as PyTorch DDP (torchrun) does; scalescope forks them itself and gives
//    each its rank through SCALESCOPE_* environment variables (plus the NCCL unique id);
//  - CPU ranks: scalescope runs Open MPI's `mpirun` itself.
// Across nodes the user starts the ranks with mpirun or srun instead (see docs/measuring.md, "Ranks and launchers"), and MPI tells each its rank.
// The supervisor stops every rank as soon as one fails: a rank that dies inside a collective would
// otherwise leave the others waiting forever.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "comm/communicator.h"

namespace scalescope::comm {

inline constexpr const char* kEnvRank = "SCALESCOPE_RANK";
inline constexpr const char* kEnvWorldSize = "SCALESCOPE_WORLD_SIZE";
inline constexpr const char* kEnvLocalRank = "SCALESCOPE_LOCAL_RANK";

/// The rank given by scalescope's own launcher through SCALESCOPE_RANK / _WORLD_SIZE / _LOCAL_RANK, or
/// nothing when they are absent. Throws core::Error when they are present but malformed or inconsistent.
std::optional<RankInfo> rank_from_launcher_environment();

/// One process to start: its argument vector (argv[0] is the executable path) and extra environment.
struct ProcessSpec {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> environment;
  std::string label;  ///< how errors name it, e.g. "rank 1"
  /// Its stderr passes through a pipe to this process's stderr, and the last 16 KiB are kept, so that a failure
  /// can name the rank that mpirun's own message names (mpirun_failed_rank) instead of pointing "above".
  bool keep_stderr_tail = false;
};

/// The failed rank that Open MPI's mpirun names in its stderr `text`, in the first of these wordings found
/// (Open MPI 4.1's), with the node when mpirun gives one:
///   "mpirun noticed that process rank 1 with PID … on node N exited on signal 9 (Killed)"
///       → "rank 1 (on node N) was killed by signal 9 (Killed)";
///   "Process name: [[26451,1],0]" then "Exit code: 3"  → "rank 0 exited with status 3";
///   "MPI_ABORT was invoked on rank 1 in communicator … with errorcode 7" → "rank 1 called MPI_Abort with error code 7";
///   "mpirun has exited due to process rank 1 with PID … on node N exiting improperly"
///       → "rank 1 (on node N) exited without finishing MPI (no MPI_Finalize)".
/// nullopt when the text names none (mpirun itself failed or was killed, or another wording).
std::optional<std::string> mpirun_failed_rank(std::string_view text);

/// For its lifetime, SIGINT, SIGTERM and SIGHUP only set a flag (received_stop_signal) instead of killing this
/// process, so that a run can stop its ranks and keep what it measured. Scopes nest: an inner one (run_processes')
/// keeps the outer one's handlers and flag, so a signal that came between two runs of a sweep is still seen. The
/// outermost one clears the flag when it starts and puts the earlier handlers back when it ends. Main thread only.
/// A second stop signal ends the process (the user insists), unless it comes within kSameStopSignalNs of the first:
/// GNU timeout, and kill(0, …), deliver one signal to the process and again to its process group.
class StopSignalScope {
 public:
  StopSignalScope();
  ~StopSignalScope();
  StopSignalScope(const StopSignalScope&) = delete;
  StopSignalScope& operator=(const StopSignalScope&) = delete;
};

/// How close a second stop signal must follow the first to be taken as the same one: 0.5 s.
inline constexpr long long kSameStopSignalNs = 500'000'000;

/// The signal number received since the outermost StopSignalScope began, or 0 (also when no scope is alive).
int received_stop_signal();

/// "interrupted by signal 2 (Interrupt)": how a stopped run is named in errors.
std::string interrupted_message(int signal_number);

/// Starts every process (they inherit stdout/stderr), waits for all of them and returns when all exited
/// with status 0. When one exits non-zero or is killed, the others are sent SIGTERM (SIGKILL 5 s later)
/// and core::Error names the first failure: "rank 1 was killed by signal 9 (Killed)". When
/// `timeout_seconds` > 0 elapses first, all are killed and core::Error says so. SIGINT, SIGTERM or SIGHUP
/// received meanwhile (or before, within an enclosing StopSignalScope) stops them the same way and core::Error
/// names the signal, also when a process ended of the same signal first (a terminal's Ctrl-C reaches them all).
void run_processes(const std::vector<ProcessSpec>& processes, double timeout_seconds);

/// The `mpirun` command line that starts `argv` as `world_size` CPU ranks on this node: oversubscription
/// allowed (ranks may outnumber cores), no core binding (each rank manages its own threads), shared-memory
/// transport; `--allow-run-as-root` when running as root (CI machines do). Throws core::Error when mpirun
/// is not on PATH. With `session_directory`, Open MPI keeps its session files there (orte_tmpdir_base) instead of
/// $TMPDIR/ompi.HOST.UID, so that they go with that directory: about 8 MB that an interrupted run left behind.
ProcessSpec mpirun_command(int world_size, const std::vector<std::string>& argv,
                           const std::string& session_directory = "");

/// Absolute path of the running executable (/proc/self/exe).
std::string self_executable();

}  // namespace scalescope::comm
