// What one analyze run reads: directories expanded within their bound, each file once (issue #40).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "readers/input_kind.h"
#include "readers/input_list.h"
#include "core/error.h"
#include "support/scratch_dir.h"

namespace fs = std::filesystem;
using namespace scalescope::analyze;
using scalescope::testing::scratch_dir;

namespace {

void touch(const fs::path& p, const std::string& text = "x\n") { std::ofstream(p) << text; }

TEST(InputList, ADirectoryIsReadUpToItsBoundInNameOrder) {
  const auto dir = scratch_dir("input_list_bound");
  for (int i = 0; i < 50; ++i) touch(dir / ("f" + std::to_string(100 + i) + ".log"));
  touch(dir / ".hidden");
  touch(dir / "partial.tmp");
  InputLimits limits;
  limits.files_per_directory = 10;
  const auto in = list_inputs({dir.string()}, limits);
  ASSERT_EQ(in.files.size(), 10u);
  EXPECT_EQ(fs::path(in.files.front()).filename(), "f100.log");
  EXPECT_EQ(fs::path(in.files.back()).filename(), "f109.log");
  ASSERT_EQ(in.directories.size(), 1u);
  EXPECT_EQ(in.directories[0].files, 50u);
  EXPECT_EQ(in.directories[0].omitted, 40u);
  EXPECT_EQ(fs::path(in.directories[0].first_omitted).filename(), "f110.log");
  fs::remove_all(dir);
}

TEST(InputList, AFileGivenTwiceIsAUsageErrorAndALinkInsideADirectoryIsReadOnce) {
  const auto dir = scratch_dir("input_list_twice");
  touch(dir / "a.log");
  EXPECT_THROW(list_inputs({(dir / "a.log").string(), (dir / "." / "a.log").string()}), scalescope::core::UsageError);
  fs::create_directories(dir / "d");
  touch(dir / "d" / "b.log");
  fs::create_symlink(dir / "d" / "b.log", dir / "d" / "c.log");
  const auto in = list_inputs({(dir / "d").string()});
  EXPECT_EQ(in.files.size(), 1u);
  EXPECT_EQ(in.notes.size(), 1u);
  fs::remove_all(dir);
}

TEST(InputList, AnEmptyDirectoryIsAnError) {
  const auto dir = scratch_dir("input_list_empty");
  EXPECT_THROW(list_inputs({dir.string()}), scalescope::core::Error);
  fs::remove_all(dir);
}

TEST(InputExcerpt, ALongTextIsReadByItsHeadAndTail) {
  const auto dir = scratch_dir("input_excerpt");
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "step " + std::to_string(i) + " loss 1.0 time 0.5 s\n";
  touch(dir / "job.log", text);
  const auto whole = read_input_file((dir / "job.log").string());
  EXPECT_EQ(whole.text, text);
  EXPECT_EQ(whole.bytes_skipped, 0u);
  const auto part = read_input_file((dir / "job.log").string(), 64 * 1024);
  EXPECT_LT(part.text.size(), 66u * 1024);
  EXPECT_EQ(part.text.rfind("step 0 loss", 0), 0u);
  EXPECT_NE(part.text.find("step 19999 loss 1.0 time 0.5 s\n"), std::string::npos);
  EXPECT_NE(part.text.find("bytes of this file not read"), std::string::npos);
  EXPECT_GT(part.bytes_skipped, text.size() - 64 * 1024 - 200);
  fs::remove_all(dir);
}

}  // namespace
