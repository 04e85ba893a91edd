#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "comm/launcher.h"
#include "core/error.h"

using scalescope::comm::ProcessSpec;
using scalescope::comm::received_stop_signal;
using scalescope::comm::run_processes;
using scalescope::comm::StopSignalScope;

namespace {

ProcessSpec shell(const std::string& script, const std::string& label) { return {{"/bin/sh", "-c", script}, {}, label}; }

/// The message run_processes throws, or "" when it returns.
std::string failure_of(const std::vector<ProcessSpec>& processes, double timeout_seconds = 0) {
  try {
    run_processes(processes, timeout_seconds);
  } catch (const scalescope::core::Error& e) {
    return e.what();
  }
  return "";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The disposition of `sig` now (SIG_DFL, SIG_IGN in a background job, or a handler).
void (*disposition(int sig))(int) {
  struct sigaction now {};
  sigaction(sig, nullptr, &now);
  return now.sa_handler;
}

}  // namespace

TEST(Launcher, TheFirstFailureIsNamedAndTheOthersAreStopped) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto what = failure_of({shell("exit 3", "rank 0"), shell("exec sleep 30", "rank 1")});
  EXPECT_NE(what.find("rank 0 exited with status 3"), std::string::npos) << what;
  EXPECT_NE(what.find("the other ranks were stopped"), std::string::npos) << what;
  EXPECT_LT(seconds_since(t0), 10.0);
  EXPECT_EQ(failure_of({shell("exit 0", "rank 0"), shell("exit 0", "rank 1")}), "");
}

TEST(Launcher, ATimeoutStopsAHang) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto what = failure_of({shell("exec sleep 30", "rank 0")}, 0.5);
  EXPECT_NE(what.find("timeout"), std::string::npos) << what;
  EXPECT_LT(seconds_since(t0), 10.0);
}

TEST(Launcher, ASignalBetweenRunsOfASweepIsKeptAndStopsTheNextRun) {
  const auto before = disposition(SIGINT);
  if (before == SIG_IGN) GTEST_SKIP() << "SIGINT is ignored in this process (a background job): the scope keeps it so";
  EXPECT_EQ(received_stop_signal(), 0);
  {
    const StopSignalScope sweep;
    raise(SIGINT);  // as a Ctrl-C between two world sizes: this process lives on
    EXPECT_EQ(received_stop_signal(), SIGINT);
    const auto t0 = std::chrono::steady_clock::now();
    const auto what = failure_of({shell("exec sleep 30", "rank 0")});
    EXPECT_NE(what.find("interrupted by signal 2"), std::string::npos) << what;
    EXPECT_LT(seconds_since(t0), 5.0);
    EXPECT_EQ(received_stop_signal(), SIGINT) << "the inner scope of run_processes cleared the sweep's flag";
  }
  EXPECT_EQ(received_stop_signal(), 0);
  EXPECT_EQ(disposition(SIGINT), before) << "the handlers before the scope were not put back";
}

TEST(Launcher, ASignalDeliveredTwiceAtOnceIsOneStop) {
  // GNU timeout sends its signal to the process and again to its group: one stop, not a user insisting.
  const auto before = disposition(SIGINT);
  if (before == SIG_IGN) GTEST_SKIP() << "SIGINT is ignored in this process (a background job): the scope keeps it so";
  {
    const StopSignalScope sweep;
    raise(SIGINT);
    raise(SIGINT);  // this process lives on
    EXPECT_EQ(received_stop_signal(), SIGINT);
  }
  EXPECT_EQ(disposition(SIGINT), before);
}

TEST(Launcher, SignalsIgnoredAtTheStartStayIgnored) {
  // nohup ignores SIGHUP: a hang-up must not stop the sweep, nor reach mpirun and the ranks as a default action.
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGHUP, &ignore, &old);
  {
    const StopSignalScope sweep;
    EXPECT_EQ(disposition(SIGHUP), SIG_IGN);
    raise(SIGHUP);
    EXPECT_EQ(received_stop_signal(), 0);
    // The child is started with SIGHUP still ignored: it survives one.
    EXPECT_EQ(failure_of({shell("kill -HUP $$; exit 0", "rank 0")}), "");
  }
  EXPECT_EQ(disposition(SIGHUP), SIG_IGN);
  sigaction(SIGHUP, &old, nullptr);
}

TEST(Launcher, AProcessEndedByTheSameCtrlCIsAnInterruptionNotAFailure) {
  // A terminal's Ctrl-C reaches the whole process group; mpirun can exit of it before the loop sees the flag.
  const auto before = disposition(SIGINT);
  if (before == SIG_IGN) GTEST_SKIP() << "SIGINT is ignored in this process (a background job): the scope keeps it so";
  const auto what = failure_of({shell("kill -INT $PPID; exit 1", "the MPI job of the CPU ranks (mpirun)")});
  EXPECT_NE(what.find("interrupted by signal 2"), std::string::npos) << what;
  EXPECT_EQ(what.find("exited with status 1"), std::string::npos) << what;
  EXPECT_EQ(disposition(SIGINT), before);
}

// Open MPI 4.1.4's own words on this project's machine (mpirun -np 2 of `sh -c`; one rank killed, one exiting 3).
constexpr const char* kMpirunKilled =
    "--------------------------------------------------------------------------\n"
    "Primary job  terminated normally, but 1 process returned\n"
    "a non-zero exit code. Per user-direction, the job has been aborted.\n"
    "--------------------------------------------------------------------------\n"
    "--------------------------------------------------------------------------\n"
    "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).\n"
    "--------------------------------------------------------------------------\n";
constexpr const char* kMpirunExit =
    "--------------------------------------------------------------------------\n"
    "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
    "the job to be terminated. The first process to do so was:\n"
    "\n"
    "  Process name: [[23759,1],1]\n"
    "  Exit code:    3\n"
    "--------------------------------------------------------------------------\n";

TEST(Launcher, MpirunsMessageNamesTheFailedRank) {
  using scalescope::comm::mpirun_failed_rank;
  EXPECT_EQ(mpirun_failed_rank(kMpirunKilled), "rank 1 (on node vm) was killed by signal 9 (Killed)");
  EXPECT_EQ(mpirun_failed_rank(kMpirunExit), "rank 1 exited with status 3");
  // Open MPI 4.1.4 again: a rank's MPI_Abort, and a rank that exited without MPI_Finalize.
  EXPECT_EQ(mpirun_failed_rank("MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD\nwith errorcode 7.\n"),
            "rank 1 called MPI_Abort with error code 7");
  EXPECT_EQ(mpirun_failed_rank("mpirun has exited due to process rank 1 with PID 0 on\nnode vm exiting improperly. "
                               "There are three reasons this could occur:\n"),
            "rank 1 (on node vm) exited without finishing MPI (no MPI_Finalize)");
  EXPECT_EQ(mpirun_failed_rank("[vm:01234] *** Process received signal ***\n"), std::nullopt);
  EXPECT_EQ(mpirun_failed_rank(""), std::nullopt);
}

TEST(Launcher, AFailureNamesTheRankFromMpirunsStderrAndStillShowsIt) {
  auto fake_mpirun = [](const std::string& stderr_text) {
    ProcessSpec spec = shell("printf '%s' '" + stderr_text + "' >&2; exit 1", "the MPI job of the CPU ranks (mpirun)");
    spec.keep_stderr_tail = true;
    return spec;
  };
  testing::internal::CaptureStderr();  // fd 2: what the pipe echoes
  auto what = failure_of({fake_mpirun(kMpirunExit)});
  const std::string echoed = testing::internal::GetCapturedStderr();
  EXPECT_NE(echoed.find("Exit code:    3"), std::string::npos) << "mpirun's message was not passed on: " << echoed;
  EXPECT_NE(what.find("rank 1 exited with status 3, as the MPI job of the CPU ranks (mpirun) reports"),
            std::string::npos) << what;
  std::string remedy;
  try {
    run_processes({fake_mpirun("")}, 0);
  } catch (const scalescope::core::Error& e) {
    remedy = e.remedy();
  }
  EXPECT_NE(remedy.find("names no rank in a wording scalescope knows"), std::string::npos) << remedy;
}

TEST(Launcher, ATimeoutNamesTheStoppedRanks) {
  // A stopped rank (SIGSTOP, Ctrl-Z, a debugger) hangs the others in their next collective: the timeout says which.
  const auto t0 = std::chrono::steady_clock::now();
  auto what = failure_of({shell("kill -STOP $$; exit 0", "rank 0"), shell("exec sleep 30", "rank 1")}, 1.0);
  EXPECT_NE(what.find("timeout"), std::string::npos) << what;
  EXPECT_NE(what.find("rank 0 (pid "), std::string::npos) << what;
  EXPECT_NE(what.find("is stopped (SIGSTOP, Ctrl-Z or a debugger)"), std::string::npos) << what;
  EXPECT_EQ(what.find("rank 1 (pid "), std::string::npos) << what;
  // Both ended by SIGTERM (the stopped one continued to take it), not 5 s later by SIGKILL.
  EXPECT_LT(seconds_since(t0), 4.0);
  // A rank under mpirun is a grandchild: named by the rank in its environment.
  // Like mpirun, the middle shell passes SIGTERM on to its child (continued first).
  what = failure_of({shell("SCALESCOPE_RANK=3 sh -c 'kill -STOP $$; exit 0' & c=$!; "
                           "trap 'kill -CONT $c; kill $c; exit 1' TERM; wait",
                           "the MPI job (mpirun)")},
                    1.0);
  EXPECT_NE(what.find("rank 3 (pid "), std::string::npos) << what;
}

TEST(Launcher, ASecondStopSignalEndsTheProcessAsWithoutTheScope) {
  // The first Ctrl-C stops the run and keeps what was measured; a second one is the user insisting.
  const pid_t pid = fork();
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);  // as started from a terminal
    const StopSignalScope scope;
    raise(SIGINT);
    if (received_stop_signal() != SIGINT) _exit(3);
    // After the window in which a repeat is the same stop (ASignalDeliveredTwiceAtOnceIsOneStop…).
    std::this_thread::sleep_for(std::chrono::nanoseconds(scalescope::comm::kSameStopSignalNs + 100'000'000));
    raise(SIGINT);
    _exit(4);  // not reached: the second one ends the process
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << "wait status " << status;
}
