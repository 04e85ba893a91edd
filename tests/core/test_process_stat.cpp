#include <gtest/gtest.h>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/process_stat.h"

using scalescope::core::read_process_stat;

TEST(ProcessStat, ReadsThisProcess) {
  const auto stat = read_process_stat(getpid());
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->parent, getppid());
  EXPECT_EQ(stat->group, getpgrp());
  EXPECT_EQ(stat->state, 'R');  // reading its own stat, it runs
  EXPECT_FALSE(stat->stopped());
  EXPECT_GT(stat->start_ticks, 0u);
  EXPECT_FALSE(stat->command.empty());
}

TEST(ProcessStat, ACommandNameWithParenthesesAndSpacesAndAStoppedChild) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_NAME, "a) b (c");  // the fields after the name are counted from the last ')'
    if (write(ready[1], "x", 1) != 1) _exit(1);
    raise(SIGSTOP);
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, WUNTRACED), pid);  // it has stopped
  const auto stat = read_process_stat(pid);
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->command, "a) b (c");
  EXPECT_TRUE(stat->stopped()) << "state " << stat->state;
  EXPECT_EQ(stat->parent, getpid());
  EXPECT_GT(stat->start_ticks, 0u);
}

TEST(ProcessStat, NoSuchProcessIsNothing) { EXPECT_FALSE(read_process_stat(-1).has_value()); }
