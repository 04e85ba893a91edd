#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "core/json_file.h"
#include "support/scratch_dir.h"

namespace fs = std::filesystem;
using scalescope::core::remove_orphaned_job_directories;
using scalescope::core::TemporaryDirectory;

namespace {

fs::path fresh_dir(const std::string& name) { return scalescope::testing::scratch_dir(name); }

std::string this_host() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

std::string this_pidns() { return fs::read_symlink("/proc/self/ns/pid").string(); }

/// The id of a process that has exited and been reaped: no process has it (until the kernel reuses it).
pid_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

fs::path job_dir(const fs::path& base, const std::string& suffix, const std::string& owner_text) {
  auto d = base / ("scalescope-job-" + suffix);
  fs::create_directories(d);
  std::ofstream(d / "result.json") << "{}";
  if (!owner_text.empty()) std::ofstream(d / "owner") << owner_text;
  return d;
}

/// Sets TMPDIR for its lifetime and puts the earlier value back: a later test's scratch_dir must not find a
/// TMPDIR that an earlier test removed (all tests of this file run in one process outside ctest).
class TmpdirFor {
 public:
  explicit TmpdirFor(const fs::path& dir) {
    if (const char* old = std::getenv("TMPDIR")) old_ = old;
    setenv("TMPDIR", dir.c_str(), 1);
  }
  ~TmpdirFor() {
    if (old_) setenv("TMPDIR", old_->c_str(), 1);
    else unsetenv("TMPDIR");
  }
  TmpdirFor(const TmpdirFor&) = delete;
  TmpdirFor& operator=(const TmpdirFor&) = delete;

 private:
  std::optional<std::string> old_;
};

/// This process's start time as TemporaryDirectory records it: the owner file of a fresh directory.
std::string own_owner_line(const fs::path& base) {
  const TmpdirFor tmpdir(base);
  TemporaryDirectory own;
  std::ifstream in(own.path() + "/owner");
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

TEST(JobDirectory, HoldsAnOwnerFileNamingThisHostAndProcess) {
  auto base = fresh_dir("jobdir_owner");
  std::istringstream line(own_owner_line(base));
  std::string host;
  long pid = 0;
  unsigned long long start = 0;
  ASSERT_TRUE(line >> host >> pid >> start);
  EXPECT_EQ(host, this_host());
  EXPECT_EQ(pid, getpid());
  EXPECT_GT(start, 0u);
  std::string pidns;
  ASSERT_TRUE(line >> pidns);
  EXPECT_EQ(pidns, this_pidns());
  fs::remove_all(base);
}

TEST(JobDirectory, OnlyDirectoriesOfGoneOwnersOnThisHostAreRemoved) {
  auto base = fresh_dir("jobdir_reap");
  const std::string live = own_owner_line(base);  // this process, with its real start time
  const auto host = this_host();
  const auto dead = job_dir(base, "dead01", host + " " + std::to_string(dead_pid()) + " 12345 " + this_pidns() + "\n");
  std::istringstream fields(live);
  std::string h;
  long pid = 0;
  unsigned long long start = 0;
  fields >> h >> pid >> start;
  // A reused id: this process's id with an earlier start time is a gone owner too.
  const auto reused = job_dir(base, "reuse1", host + " " + std::to_string(pid) + " " + std::to_string(start - 1) + " " + this_pidns() + "\n");
  const auto in_use = job_dir(base, "inuse1", live + "\n");
  const auto other_host = job_dir(base, "other1", "some-other-host " + std::to_string(dead_pid()) + " 1 " + this_pidns() + "\n");
  const auto no_owner = job_dir(base, "noown1", "");
  // Another container on this host (same host name, a TMPDIR shared with it): its ids mean nothing here.
  const auto other_pidns = job_dir(base, "pidns1", host + " " + std::to_string(dead_pid()) + " 1 pid:[1]\n");
  // An owner file of before the pid namespace was written: cannot be told apart, kept.
  const auto old_format = job_dir(base, "oldfm1", host + " " + std::to_string(dead_pid()) + " 1\n");
  const auto cut_short = job_dir(base, "short1", host + " ");
  const auto unrelated = base / "not-a-job-dir";
  fs::create_directories(unrelated);
  std::ofstream(unrelated / "owner") << host << " " << dead_pid() << " 1 " << this_pidns() << "\n";

  EXPECT_EQ(remove_orphaned_job_directories(base.string()), 2);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(reused));
  for (const auto& kept : {in_use, other_host, no_owner, other_pidns, old_format, cut_short, unrelated}) EXPECT_TRUE(fs::exists(kept)) << kept;
  EXPECT_EQ(remove_orphaned_job_directories(base.string()), 0);
  fs::remove_all(base);
}

TEST(JobDirectory, ANewDirectoryTidiesTheOrphansOfEarlierRuns) {
  auto base = fresh_dir("jobdir_new");
  const auto dead = job_dir(base, "dead02", this_host() + " " + std::to_string(dead_pid()) + " 99 " + this_pidns() + "\n");
  {
    const TmpdirFor tmpdir(base);
    TemporaryDirectory fresh;
    EXPECT_FALSE(fs::exists(dead));
    EXPECT_TRUE(fs::exists(fresh.path() + "/owner"));
  }
  EXPECT_TRUE(fs::is_empty(base));
  fs::remove_all(base);
}

TEST(JobDirectory, AMissingBaseIsNotAnError) {
  EXPECT_EQ(remove_orphaned_job_directories("/nonexistent/scalescope-test-base"), 0);
}
