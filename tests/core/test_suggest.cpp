// "Did you mean …?" (issue #39): typos of commands, flags and table names find their word; other words find none.

#include <gtest/gtest.h>

#include "core/suggest.h"

using scalescope::core::closest_name;

TEST(ClosestName, TyposFindTheirWord) {
  const std::vector<std::string> commands{"train", "doctor", "comm", "topo", "analyze", "profile", "predict"};
  EXPECT_EQ(closest_name("analyse", commands), "analyze");
  EXPECT_EQ(closest_name("profiel", commands), "profile");
  EXPECT_EQ(closest_name("Doctor", commands), "doctor");
  const std::vector<std::string> flags{"--world-sizes", "--warmup-rounds", "--out", "--html"};
  EXPECT_EQ(closest_name("--worldsizes", flags), "--world-sizes");
  EXPECT_EQ(closest_name("--world_sizes", flags), "--world-sizes");
  EXPECT_EQ(closest_name("--warmup-round", flags), "--warmup-rounds");
}

TEST(ClosestName, OtherWordsFindNone) {
  const std::vector<std::string> commands{"train", "doctor", "comm", "topo", "analyze", "profile", "predict"};
  EXPECT_EQ(closest_name("torchrun", commands), "");
  EXPECT_EQ(closest_name("x", commands), "");
  EXPECT_EQ(closest_name("", commands), "");
  EXPECT_EQ(closest_name("analyze", {}), "");
}
