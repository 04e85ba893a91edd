#include "profile/job_runner.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "comm/launcher.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/process_stat.h"

namespace scalescope::profile {

namespace {

using Clock = std::chrono::steady_clock;

struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() {
    if (::pipe2(fd, O_CLOEXEC) != 0)
      throw core::Error(fmt::format("cannot create a pipe for the job's output: {}", std::strerror(errno)),
                        "the process may be out of file descriptors; raise `ulimit -n`");
  }
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
  void close_end(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
};

/// The living descendants of this process (the job's leader is reaped already): with the runner as subreaper, the
/// job's processes whose parents have exited are its children, and their children below them. Zombies among its
/// children are reaped first.
std::vector<JobResult::LeftProcess> living_descendants(long except_group = 0) {
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  std::vector<JobResult::LeftProcess> out;
  DIR* proc = ::opendir("/proc");
  if (!proc) return out;
  std::vector<std::pair<long, core::ProcessStat>> all;
  while (const dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    if (auto st = core::read_process_stat(static_cast<pid_t>(pid))) all.emplace_back(pid, std::move(*st));
  }
  ::closedir(proc);
  std::set<long> ours{static_cast<long>(::getpid())};
  for (bool grew = true; grew;) {  // parents before children, whatever order /proc lists them in
    grew = false;
    for (const auto& [pid, st] : all)
      if (!ours.count(pid) && ours.count(st.parent)) ours.insert(pid), grew = true;
  }
  for (const auto& [pid, st] : all) {
    if (pid == ::getpid() || !ours.count(pid) || st.state == 'Z' || st.state == 'X') continue;
    if (except_group > 0 && st.group == except_group) continue;  // killed with its group, still exiting
    std::string cmd;
    if (FILE* f = std::fopen(fmt::format("/proc/{}/cmdline", pid).c_str(), "rb")) {
      char buf[4096];
      const std::size_t n = std::fread(buf, 1, sizeof buf, f);
      std::fclose(f);
      cmd.assign(buf, n);
      while (!cmd.empty() && cmd.back() == '\0') cmd.pop_back();
      for (char& c : cmd)
        if (c == '\0') c = ' ';
    }
    out.push_back({static_cast<int>(pid), cmd.empty() ? st.command : cmd});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.pid < b.pid; });
  return out;
}

}  // namespace

std::string JobResult::describe() const {
  if (!start_error.empty()) return "could not be started (" + start_error + ")";
  std::string s = signal ? fmt::format("ended by signal {} ({})", *signal, ::strsignal(*signal))
                         : fmt::format("exited with status {}", exit_status);
  if (timed_out) s += " after the timeout";
  else if (stop_signal) s += fmt::format(", after scalescope received signal {} ({}) and passed it on", stop_signal, ::strsignal(stop_signal));
  return s;
}

JobResult run_job(const JobSpec& spec) {
  JobResult result;
  if (spec.argv.empty()) throw core::UsageError("no command to run", "give it after --: scalescope profile -- torchrun …");
  const int log = ::open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log < 0)
    throw core::Error(fmt::format("cannot write the job's log '{}': {}", spec.log_path, std::strerror(errno)),
                      "choose a job directory (--keep DIR) on a writable file system with free space");
  Pipe out, err, exec_status;
  // A closed reader of our own output (`profile … | head`) must not end profile, nor the job through it: the job's
  // output still goes to the log.
  struct sigaction ignore {}, old_pipe {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &old_pipe);
  struct RestorePipe {
    struct sigaction old;
    ~RestorePipe() { ::sigaction(SIGPIPE, &old, nullptr); }
  } restore_pipe{old_pipe};
  comm::StopSignalScope stop_scope;  // SIGINT/SIGTERM/SIGHUP only set a flag: we pass them on, then analyse
  // Orphans of the job become our children, so that what it leaves running can be named when it ends.
  int was_subreaper = 0;
  ::prctl(PR_GET_CHILD_SUBREAPER, &was_subreaper);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  struct RestoreSubreaper {
    int old;
    ~RestoreSubreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, old); }
  } restore_subreaper{was_subreaper};
  const auto start = Clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log);
    throw core::Error(fmt::format("cannot start the job: fork failed: {}", std::strerror(errno)),
                      "the machine may be out of processes or memory");
  }
  if (pid == 0) {  // the child: only async-signal-safe calls until exec
    ::setpgid(0, 0);
    // Its own process group is in the background of a terminal: reading the terminal would stop it (SIGTTIN) for
    // ever, so its input is /dev/null.
    if (const int null_in = ::open("/dev/null", O_RDONLY); null_in >= 0) ::dup2(null_in, STDIN_FILENO);
    ::dup2(out.fd[1], STDOUT_FILENO);
    ::dup2(err.fd[1], STDERR_FILENO);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::sigaction(s, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (const auto& [k, v] : spec.environment) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : spec.argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    const int e = errno;
    core::write_all(exec_status.fd[1], std::string_view(reinterpret_cast<const char*>(&e), sizeof e));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: whichever of the two runs first
  out.close_end(1);
  err.close_end(1);
  exec_status.close_end(1);
  int exec_errno = 0;
  if (::read(exec_status.fd[0], &exec_errno, sizeof exec_errno) == static_cast<ssize_t>(sizeof exec_errno))
    result.start_error = fmt::format("'{}': {}", spec.argv[0], std::strerror(exec_errno));

  std::optional<Clock::time_point> kill_at;  // SIGKILL after the grace period
  bool open_out = true, open_err = true, exited = false, terminal_ok = true;
  int kills = 0;  // SIGKILLs sent to the group
  std::optional<Clock::time_point> ended_at;           // the leader's exit
  std::vector<JobResult::LeftProcess> holding_output;  // descendants alive when the group was killed for the pipes
  int status = 0;
  char buffer[1 << 16];
  while (!exited || open_out || open_err) {
    pollfd fds[2];
    int n = 0;
    if (open_out) fds[n++] = {out.fd[0], POLLIN, 0};
    if (open_err) fds[n++] = {err.fd[0], POLLIN, 0};
    if (n > 0) ::poll(fds, static_cast<nfds_t>(n), 100);
    else ::usleep(50'000);
    for (int i = 0; i < n; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t r = ::read(fds[i].fd, buffer, sizeof buffer);
      if (r > 0) {
        const std::string_view chunk(buffer, static_cast<std::size_t>(r));
        if (terminal_ok && spec.before_output) spec.before_output();
        if (terminal_ok && !core::write_all(fds[i].fd == out.fd[0] ? STDOUT_FILENO : STDERR_FILENO, chunk))
          terminal_ok = false;  // our reader is gone: the log keeps everything
        if (terminal_ok && spec.after_output) spec.after_output(chunk.back() == '\n');
        core::write_all(log, chunk);  // a full disk must not stop the job: what fits is kept
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        (fds[i].fd == out.fd[0] ? open_out : open_err) = false;
      }
    }
    if (spec.on_tick && !exited) spec.on_tick();
    if (!exited) {
      const pid_t w = ::waitpid(pid, &status, WNOHANG | WUNTRACED);
      if (w == pid && WIFSTOPPED(status)) ::kill(-pid, SIGCONT);  // stopped (SIGSTOP, SIGTSTP): it must run to its end
      else if (w == pid) exited = true, ended_at = Clock::now();
    }
    const auto now = Clock::now();
    const auto grace = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(spec.grace_seconds));
    const int stop = comm::received_stop_signal();
    if (!exited && !kill_at) {
      if (stop != 0) {
        result.stop_signal = stop;
        ::kill(-pid, stop);
        ::kill(-pid, SIGCONT);
        kill_at = now + grace;
      } else if (spec.timeout_seconds > 0 && now - start > std::chrono::duration<double>(spec.timeout_seconds)) {
        result.timed_out = true;
        ::kill(-pid, SIGTERM);
        ::kill(-pid, SIGCONT);
        kill_at = now + grace;
      }
    } else if (!exited && kill_at && (now > *kill_at || (stop != 0 && result.timed_out && !result.stop_signal))) {
      // The grace period is over, or a stop signal came after the timeout's SIGTERM: the user insists.
      if (stop != 0 && !result.stop_signal) result.stop_signal = stop;
      ::kill(-pid, SIGKILL);
      ++kills;
      kill_at = now + std::chrono::seconds(2);
    }
    // The job's leader is gone but a descendant still holds the pipes (a rank left behind, or one in a session of its
    // own that the group's signals do not reach): after the grace period the group is killed, and 2 s later the pipes
    // are let go, so the runner always returns.
    if (exited && (open_out || open_err)) {
      if (!kill_at) kill_at = now + grace;
      else if (now > *kill_at && kills == 0) {
        holding_output = living_descendants();
        ::kill(-pid, SIGKILL);
        ++kills;
        kill_at = now + std::chrono::seconds(2);
      } else if (now > *kill_at) {
        open_out = open_err = false;
      }
    }
  }
  ::close(log);
  result.wall_seconds = std::chrono::duration<double>(ended_at.value_or(Clock::now()) - start).count();
  // The group's SIGKILL ended its members (they may still be exiting); a process of its own session outlives it.
  result.left_running = living_descendants(kills > 0 ? static_cast<long>(pid) : 0);
  for (auto& p : holding_output)
    if (std::none_of(result.left_running.begin(), result.left_running.end(), [&](const auto& q) { return q.pid == p.pid; })) {
      p.stopped = true;
      result.left_running.push_back(std::move(p));
    }
  if (!result.start_error.empty()) result.exit_status = 127;
  else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
    result.exit_status = 128 + *result.signal;
  } else {
    result.exit_status = WEXITSTATUS(status);
  }
  if (result.timed_out) result.exit_status = 124;
  return result;
}

}  // namespace scalescope::profile
