// Why a job failed, from its output (issue #39): the first exception, not its consequences nor the launcher's.

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "profile/job_failure.h"

using namespace scalescope::profile;

TEST(JobFailure, TheFirstExceptionIsTheCauseNotThePeersOrTheLaunchers) {
  std::ifstream in(std::string(SCALESCOPE_SOURCE_DIR) + "/tests/fixtures/job-failures/torchrun-rank1-raises.log");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(text.empty());
  const auto f = read_job_failure(text);
  ASSERT_EQ(f.exceptions.size(), 3u);
  ASSERT_NE(f.first_cause(), nullptr);
  EXPECT_EQ(f.first_cause()->line, "RuntimeError: planted failure on rank 1");
  EXPECT_EQ(f.first_cause()->line_no, 8u);
  EXPECT_NE(f.exceptions[1].line.find("Connection closed by peer"), std::string::npos);
  EXPECT_TRUE(f.exceptions[2].launcher);
  EXPECT_EQ(f.failed_ranks, (std::vector<int>{1, 0}));
}

TEST(JobFailure, RankPrefixesAndChainedExceptions) {
  const auto f = read_job_failure(
      "[rank1]: Traceback (most recent call last):\n"
      "[rank1]:   File \"train.py\", line 3, in <module>\n"
      "[rank1]:     x = batch[7]\n"
      "[rank1]: IndexError: index 7 is out of bounds\n"
      "\n"
      "During handling of the above exception, another exception occurred:\n");
  ASSERT_EQ(f.exceptions.size(), 1u);
  EXPECT_EQ(f.exceptions[0].line, "IndexError: index 7 is out of bounds");
  EXPECT_EQ(f.exceptions[0].rank, 1);
}

TEST(JobFailure, OutputWithoutATracebackGivesNone) {
  const auto f = read_job_failure("step 1 loss 2.0\nKilled\n");
  EXPECT_TRUE(f.exceptions.empty());
  EXPECT_EQ(f.first_cause(), nullptr);
}

TEST(JobFailure, ALauncherThatFailsOnItsOwnIsTold) {
  std::ifstream in(std::string(SCALESCOPE_SOURCE_DIR) + "/tests/fixtures/job-failures/torchrun-launcher-no-redirects.log");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(text.empty());
  const auto f = read_job_failure(text);
  ASSERT_NE(f.first_cause(), nullptr);
  EXPECT_EQ(f.first_cause()->line, "AttributeError: 'NoneType' object has no attribute 'get'");
  EXPECT_NE(f.first_cause()->frame.find("elastic/multiprocessing/api.py"), std::string::npos) << f.first_cause()->frame;
  EXPECT_TRUE(f.first_cause()->in_launcher_code);
  EXPECT_TRUE(f.launcher_crash());
  // A worker's own exception is no launcher crash, though the launcher reports it after.
  std::ifstream in2(std::string(SCALESCOPE_SOURCE_DIR) + "/tests/fixtures/job-failures/torchrun-rank1-raises.log");
  const std::string text2((std::istreambuf_iterator<char>(in2)), std::istreambuf_iterator<char>());
  const auto g = read_job_failure(text2);
  EXPECT_FALSE(g.launcher_crash());
  EXPECT_FALSE(g.first_cause()->in_launcher_code);
}
