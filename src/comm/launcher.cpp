#include "comm/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <ctime>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/process_stat.h"

extern char** environ;

namespace scalescope::comm {
namespace {

int parse_int_env(const char* name) {
  const char* v = std::getenv(name);
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x < 0 || x > INT_MAX)
    throw core::Error(fmt::format("environment variable {}='{}' is not a rank number", name, v),
                      "unset the SCALESCOPE_* variables; scalescope sets them itself for the ranks it starts");
  return static_cast<int>(x);
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return fmt::format("ended with wait status {}", status);
}

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path) return {};
  std::string p(path);
  std::size_t start = 0;
  while (start <= p.size()) {
    std::size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return {};
}

/// Below this many open files a timeout names the limit: a CPU run of 2 ranks needed more than 32 (Open MPI 4.1).
constexpr rlim_t kFewOpenFiles = 256;

volatile sig_atomic_t g_stop_signal = 0;
std::atomic<long long> g_stop_signal_ns{0};  // CLOCK_MONOTONIC of the first; lock-free, so async-signal-safe
static_assert(std::atomic<long long>::is_always_lock_free);

long long monotonic_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);  // async-signal-safe (POSIX)
  return static_cast<long long>(t.tv_sec) * 1'000'000'000LL + t.tv_nsec;
}

/// The first stop signal is only noted; a second one (the user insists) ends this process as the signal would
/// have without the scope: default action, raised again. A second one within kSameStopSignalNs of the first is the
/// same stop, not insistence: GNU timeout and kill(0, …) deliver one signal to the process and again to its group.
/// Async-signal-safe: clock_gettime, sigaction and raise only.
extern "C" void on_stop_signal(int sig) {
  if (g_stop_signal != 0 && monotonic_ns() - g_stop_signal_ns.load() < kSameStopSignalNs) return;
  if (g_stop_signal != 0) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, nullptr);
    raise(sig);
    return;
  }
  g_stop_signal_ns.store(monotonic_ns());
  g_stop_signal = sig;
}

constexpr std::array<int, 3> kStopSignals = {SIGINT, SIGTERM, SIGHUP};
int g_stop_scope_depth = 0;
std::array<struct sigaction, 3> g_old_actions{};
/// Which stop signals this process was started with ignored (nohup's SIGHUP, a background job's SIGINT): they stay
/// ignored, here and in the children.
std::array<bool, 3> g_ignored{};

}  // namespace

StopSignalScope::StopSignalScope() {
  if (g_stop_scope_depth++ > 0) return;  // an outer scope's handlers and flag stay
  g_stop_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESTART;  // a write or fsync under way finishes instead of failing with EINTR
  sigemptyset(&sa.sa_mask);
  for (std::size_t i = 0; i < kStopSignals.size(); ++i) {
    sigaction(kStopSignals[i], nullptr, &g_old_actions[i]);
    g_ignored[i] = g_old_actions[i].sa_handler == SIG_IGN;
    if (!g_ignored[i]) sigaction(kStopSignals[i], &sa, nullptr);
  }
}

StopSignalScope::~StopSignalScope() {
  if (--g_stop_scope_depth > 0) return;
  for (std::size_t i = 0; i < kStopSignals.size(); ++i) sigaction(kStopSignals[i], &g_old_actions[i], nullptr);
}

int received_stop_signal() { return g_stop_scope_depth > 0 ? static_cast<int>(g_stop_signal) : 0; }

std::string interrupted_message(int sig) { return fmt::format("interrupted by signal {} ({})", sig, strsignal(sig)); }

std::optional<RankInfo> rank_from_launcher_environment() {
  const bool has_rank = std::getenv(kEnvRank), has_size = std::getenv(kEnvWorldSize);
  if (!has_rank && !has_size) return std::nullopt;
  if (!has_rank || !has_size)
    throw core::Error(fmt::format("only one of {} and {} is set", kEnvRank, kEnvWorldSize),
                      "unset the SCALESCOPE_* variables; scalescope sets them itself for the ranks it starts");
  RankInfo info;
  info.rank = parse_int_env(kEnvRank);
  info.world_size = parse_int_env(kEnvWorldSize);
  info.local_rank = std::getenv(kEnvLocalRank) ? parse_int_env(kEnvLocalRank) : info.rank;
  if (info.world_size < 1 || info.rank >= info.world_size)
    throw core::Error(fmt::format("{}={} is outside world size {}", kEnvRank, info.rank, info.world_size),
                      "unset the SCALESCOPE_* variables");
  return info;
}

std::string self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw core::Error("cannot find the scalescope executable (/proc/self/exe): " + ec.message());
  return p.string();
}

ProcessSpec mpirun_command(int world_size, const std::vector<std::string>& argv,
                           const std::string& session_directory) {
  std::string mpirun = find_on_path("mpirun");
  if (mpirun.empty())
    throw core::Error("Open MPI's mpirun is not on PATH: CPU ranks need it",
                      "install Open MPI (scripts/setup.sh, or apt-get install openmpi-bin libopenmpi-dev)");
  ProcessSpec spec;
  spec.label = "the MPI job of the CPU ranks (mpirun)";
  spec.keep_stderr_tail = true;
  spec.argv = {mpirun, "-np", std::to_string(world_size), "--oversubscribe", "--bind-to", "none",
               "--mca", "btl", "self,vader"};
  if (!session_directory.empty()) spec.argv.insert(spec.argv.end(), {"--mca", "orte_tmpdir_base", session_directory});
  if (geteuid() == 0) {
    // Open MPI refuses root unless told twice (flag and environment); CI and the lent machines run as root.
    spec.argv.push_back("--allow-run-as-root");
    spec.environment = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}};
  }
  spec.argv.insert(spec.argv.end(), argv.begin(), argv.end());
  return spec;
}

std::optional<std::string> mpirun_failed_rank(std::string_view text) {
  const std::string s(text);
  std::smatch m;
  static const std::regex signal_line(
      R"(mpirun noticed that process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+) \(([^)]*)\))");
  if (std::regex_search(s, m, signal_line))
    return fmt::format("rank {} (on node {}) was killed by signal {} ({})", m[1].str(), m[2].str(), m[3].str(),
                       m[4].str());
  static const std::regex exit_lines(R"(Process name: \[\[\d+,\d+\],(\d+)\]\s*\n\s*Exit code:\s*(-?\d+))");
  if (std::regex_search(s, m, exit_lines)) return fmt::format("rank {} exited with status {}", m[1].str(), m[2].str());
  static const std::regex abort_lines(R"(MPI_ABORT was invoked on rank (\d+) in communicator \S+\s+with errorcode (-?\d+))");
  if (std::regex_search(s, m, abort_lines))
    return fmt::format("rank {} called MPI_Abort with error code {}", m[1].str(), m[2].str());
  static const std::regex improper(
      R"(mpirun has exited due to process rank (\d+) with PID \d+ on\s+node (\S+) exiting improperly)");
  if (std::regex_search(s, m, improper))
    return fmt::format("rank {} (on node {}) exited without finishing MPI (no MPI_Finalize)", m[1].str(), m[2].str());
  return std::nullopt;
}

namespace {

/// Pipes a process's stderr through to this process's stderr and keeps its last bytes.
class StderrTail {
 public:
  static constexpr std::size_t kKeep = 16 * 1024;
  /// Makes the pipe; throws core::Error when it cannot.
  StderrTail() {
    if (pipe2(fds_, O_CLOEXEC) != 0)
      throw core::Error(fmt::format("cannot make a pipe for mpirun's messages: {}", std::strerror(errno)));
    fcntl(fds_[0], F_SETFL, fcntl(fds_[0], F_GETFL) | O_NONBLOCK);
  }
  ~StderrTail() {
    for (int fd : fds_)
      if (fd >= 0) close(fd);
  }
  StderrTail(const StderrTail&) = delete;
  StderrTail& operator=(const StderrTail&) = delete;
  int write_end() const { return fds_[1]; }
  /// In the parent after the fork: only the child writes.
  void close_write_end() {
    close(fds_[1]);
    fds_[1] = -1;
  }
  /// Forwards what is there (non-blocking); returns false once the writer is gone and all was read.
  bool pump() {
    char buf[4096];
    for (;;) {
      const ssize_t n = read(fds_[0], buf, sizeof buf);
      if (n > 0) {
        // All of it (a short write would cut mpirun's last lines); a closed stderr loses only the echo.
        (void)core::write_all(STDERR_FILENO, std::string_view(buf, static_cast<std::size_t>(n)));
        tail_.append(buf, static_cast<std::size_t>(n));
        if (tail_.size() > 2 * kKeep) tail_.erase(0, tail_.size() - kKeep);
        continue;
      }
      if (n == 0) return false;
      return errno == EAGAIN || errno == EINTR;
    }
  }
  const std::string& tail() const { return tail_; }

 private:
  int fds_[2] = {-1, -1};
  std::string tail_;
};

/// "rank 1 (pid 4242)" for every stopped process (state T or t in /proc/PID/stat) among `pids` and their
/// descendants (mpirun's ranks): a direct child by its label, a descendant by the rank in its environment
/// (SCALESCOPE_RANK, OMPI_COMM_WORLD_RANK or PMIX_RANK), else by its command name. Empty when /proc says nothing.
std::vector<std::string> stopped_processes(const std::vector<pid_t>& pids, const std::vector<ProcessSpec>& specs) {
  std::map<pid_t, core::ProcessStat> all;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto pid = static_cast<pid_t>(std::atol(name.c_str()));
    if (auto stat = core::read_process_stat(pid)) all[pid] = std::move(*stat);
  }
  const auto rank_in_environment = [](pid_t pid) -> std::string {
    std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
    std::string entry;
    while (std::getline(in, entry, '\0'))
      for (const char* key : {"SCALESCOPE_RANK=", "OMPI_COMM_WORLD_RANK=", "PMIX_RANK="})
        if (entry.rfind(key, 0) == 0) return "rank " + entry.substr(std::strlen(key));
    return {};
  };
  std::vector<std::string> out;
  std::vector<pid_t> frontier;
  for (std::size_t i = 0; i < pids.size(); ++i) {
    if (pids[i] <= 0) continue;
    frontier.push_back(pids[i]);
    if (auto it = all.find(pids[i]); it != all.end() && it->second.stopped())
      out.push_back(fmt::format("{} (pid {})", specs[i].label, pids[i]));
  }
  std::set<pid_t> seen(frontier.begin(), frontier.end());
  while (!frontier.empty()) {
    const pid_t parent = frontier.back();
    frontier.pop_back();
    for (const auto& [pid, p] : all) {
      if (p.parent != parent || !seen.insert(pid).second) continue;
      frontier.push_back(pid);
      if (!p.stopped()) continue;
      const std::string rank = rank_in_environment(pid);
      out.push_back(fmt::format("{} (pid {})", rank.empty() ? "process '" + p.command + "'" : rank, pid));
    }
  }
  return out;
}

}  // namespace

void run_processes(const std::vector<ProcessSpec>& processes, double timeout_seconds) {
  const StopSignalScope stop_signals;
  if (g_stop_signal != 0)  // came before (in an enclosing scope): start nothing
    throw core::Error(interrupted_message(g_stop_signal), "the run was stopped before it started");
  std::vector<pid_t> pids;
  std::vector<std::unique_ptr<StderrTail>> tails(processes.size());
  // Echoing a child's stderr into a closed stderr must not kill this process (SIGPIPE): the write fails instead.
  struct sigaction ignore {}, old_pipe {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &old_pipe);
  struct RestorePipe {
    const struct sigaction& old;
    ~RestorePipe() { sigaction(SIGPIPE, &old, nullptr); }
  } restore_pipe{old_pipe};
  auto stop_all = [&](int sig) {
    for (pid_t p : pids)
      if (p > 0) {
        kill(p, sig);
        if (sig != SIGKILL) kill(p, SIGCONT);  // a stopped process takes its SIGTERM only once continued
      }
  };
  for (std::size_t i = 0; i < processes.size(); ++i)  // all pipes before the first fork: a failure leaves no child
    if (processes[i].keep_stderr_tail) tails[i] = std::make_unique<StderrTail>();
  for (const auto& spec : processes) {
    auto& tail = tails[pids.size()];
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
    for (const auto& [k, v] : spec.environment) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp, argv;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = spec.argv;
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
      int err = errno;
      stop_all(SIGKILL);
      for (pid_t p : pids) waitpid(p, nullptr, 0);
      throw core::Error(fmt::format("cannot start {}: fork failed: {}", spec.label, std::strerror(err)));
    }
    if (pid == 0) {
      // Should this process die without stopping its ranks (SIGKILL, the OOM killer), they get SIGTERM instead of
      // running on with no timeout watching them; mpirun passes it on to its ranks. A parent gone already: stop.
      // Until execve the child has scalescope's handlers (StopSignalScope), which would swallow that SIGTERM: default.
      // What the process was started with: default, or ignored (nohup) for the stop signals; SIGPIPE default (its
      // SIG_IGN here is only for the echo, and an ignored signal would survive execve).
      for (std::size_t s = 0; s < kStopSignals.size(); ++s) signal(kStopSignals[s], g_ignored[s] ? SIG_IGN : SIG_DFL);
      signal(SIGPIPE, SIG_DFL);
      if (tail && dup2(tail->write_end(), STDERR_FILENO) < 0) _exit(127);
      prctl(PR_SET_PDEATHSIG, SIGTERM);  // follows the forking thread: run_processes waits in it for the ranks
      if (getppid() != parent) _exit(1);
      execve(argv[0], argv.data(), envp.data());
      std::fprintf(stderr, "scalescope: error: cannot execute %s: %s\n", argv[0], std::strerror(errno));
      _exit(127);
    }
    pids.push_back(pid);
    if (tail) tail->close_write_end();
  }
  const auto pump_all = [&] {
    for (auto& t : tails)
      if (t) t->pump();
  };

  const auto start = std::chrono::steady_clock::now();
  std::size_t running = pids.size();
  std::string failure, remedy;
  std::optional<std::size_t> failed;  // which process failed on its own (not stopped by a signal or the timeout)
  bool stopping = false;
  std::chrono::steady_clock::time_point kill_at{};
  while (running > 0) {
    pump_all();
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno != EINTR && errno != ECHILD) break;
    if (pid > 0) {
      for (std::size_t i = 0; i < pids.size(); ++i) {
        if (pids[i] != pid) continue;
        pids[i] = -1;
        --running;
        bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!ok && failure.empty() && !stopping) {
          if (g_stop_signal != 0) {
            // A terminal's Ctrl-C reaches the whole process group: mpirun may end of it before this loop looks at
            // the flag, which read as mpirun failing on its own.
            failure = interrupted_message(g_stop_signal);
            remedy = "the run was stopped before it finished";
          } else {
            double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            failure = fmt::format("{} {} after {:.1f} s", processes[i].label, describe_status(status), t);
            failed = i;
          }
        }
      }
      if (!failure.empty() && !stopping) {
        stopping = true;
        stop_all(SIGTERM);
        kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      }
      continue;
    }
    auto now = std::chrono::steady_clock::now();
    if (!stopping && g_stop_signal != 0) {
      failure = interrupted_message(g_stop_signal);
      remedy = "the run was stopped before it finished";
      stopping = true;
      stop_all(SIGTERM);
      kill_at = now + std::chrono::seconds(5);
    }
    if (!stopping && timeout_seconds > 0 &&
        std::chrono::duration<double>(now - start).count() > timeout_seconds) {
      failure = fmt::format("the ranks did not finish within the {:.15g} s timeout (a hang: a rank may be stuck in "
                            "a collective)", timeout_seconds);
      const auto stopped = stopped_processes(pids, processes);
      if (!stopped.empty())
        failure += fmt::format("; {} {} stopped (SIGSTOP, Ctrl-Z or a debugger), so the others wait for {}",
                               fmt::join(stopped, ", "), stopped.size() == 1 ? "is" : "are",
                               stopped.size() == 1 ? "it" : "them");
      remedy = "if the run is only slow, raise --timeout (0: never)";
      // Too few open files (a hard limit scalescope could not raise): mpirun then waits for pipes that never come.
      if (rlimit files{}; getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < kFewOpenFiles) {
        failure += fmt::format("; this process may open only {} files (ulimit -n), which can leave mpirun waiting "
                               "for pipes it cannot create",
                               static_cast<unsigned long long>(files.rlim_cur));
        remedy = "raise the limit on open files (ulimit -n 1024, or the hard limit with ulimit -Hn as root); then, "
                 "if the run is only slow, raise --timeout";
      }
      stopping = true;
      stop_all(SIGTERM);
      kill_at = now + std::chrono::seconds(5);
    }
    if (stopping && now > kill_at) stop_all(SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // What is still in the pipes (mpirun's last words). A grandchild that kept the write end open must not hold
  // this up: at most a second.
  const auto drain_until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (auto& t : tails)
    while (t && t->pump() && std::chrono::steady_clock::now() < drain_until)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (failed && tails[*failed]) {
    // mpirun's own message names the rank: say it here too, so the result's failure names it without the terminal.
    if (const auto rank = mpirun_failed_rank(tails[*failed]->tail())) {
      failure = fmt::format("{}, as {} reports ({})", *rank, processes[*failed].label, failure);
      remedy = "read that rank's own messages above";
    } else {
      remedy = "mpirun's message names no rank in a wording scalescope knows (or mpirun failed itself): see it "
               "above, if it printed one";
    }
  }
  if (!failure.empty())
    throw core::Error(failure + (processes.size() > 1 ? "; the other ranks were stopped" : ""),
                      !remedy.empty() ? remedy : "read the failed rank's own messages above");
}

}  // namespace scalescope::comm
