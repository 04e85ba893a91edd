#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <string>
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

bool handler_is_default(int sig) {
  struct sigaction now {};
  sigaction(sig, nullptr, &now);
  return now.sa_handler == SIG_DFL;
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
  ASSERT_TRUE(handler_is_default(SIGINT));
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
  EXPECT_TRUE(handler_is_default(SIGINT)) << "the handlers before the scope were not put back";
}

TEST(Launcher, AProcessEndedByTheSameCtrlCIsAnInterruptionNotAFailure) {
  // A terminal's Ctrl-C reaches the whole process group; mpirun can exit of it before the loop sees the flag.
  const auto what = failure_of({shell("kill -INT $PPID; exit 1", "the MPI job of the CPU ranks (mpirun)")});
  EXPECT_NE(what.find("interrupted by signal 2"), std::string::npos) << what;
  EXPECT_EQ(what.find("exited with status 1"), std::string::npos) << what;
  EXPECT_TRUE(handler_is_default(SIGINT));
}
