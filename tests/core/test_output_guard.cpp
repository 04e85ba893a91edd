// The one output guard every command uses, the escaping of bytes that are not UTF-8, and the removal of
// temporary files a killed write left (issue #40).

#include <gtest/gtest.h>

#include <sys/time.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/output_guard.h"
#include "core/terminal_text.h"
#include "support/scratch_dir.h"

namespace fs = std::filesystem;
using namespace scalescope::core;
using scalescope::testing::scratch_dir;

namespace {

void touch(const fs::path& p, const std::string& text = "x") { std::ofstream(p) << text; }

std::string usage_message(const std::vector<RunOutput>& outputs, const std::vector<RunInput>& inputs) {
  try {
    check_run_outputs(outputs, inputs);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(OutputGuard, AnOutputThatIsAnInputIsRefusedUnderAnySpelling) {
  const auto dir = scratch_dir("guard_same");
  touch(dir / "in.json");
  fs::create_symlink(dir / "in.json", dir / "link.json");
  fs::create_hard_link(dir / "in.json", dir / "hard.json");
  for (const auto& out : {dir / "in.json", dir / "." / "in.json", dir / "link.json", dir / "hard.json"})
    EXPECT_NE(usage_message({{"--out", out.string()}}, {{(dir / "in.json").string(), "the run"}}).find("would replace"),
              std::string::npos)
        << out;
  EXPECT_EQ(usage_message({{"--out", (dir / "other.json").string()}}, {{(dir / "in.json").string()}}), "");
  fs::remove_all(dir);
}

TEST(OutputGuard, AnOutputInsideAnInputDirectoryIsRefusedAtAnyDepth) {
  const auto dir = scratch_dir("guard_inside");
  fs::create_directories(dir / "job" / "sub");
  fs::create_directory_symlink(dir / "job", dir / "alias");
  for (const auto& out : {dir / "job" / "a.json", dir / "job" / "sub" / "b.json", dir / "alias" / "c.json",
                          dir / "x" / ".." / "job" / "d.json"})
    EXPECT_NE(usage_message({{"--html", out.string()}}, {{(dir / "job").string(), "the job directory"}}).find("lies inside the job directory"),
              std::string::npos)
        << out;
  // Beside it, or a name that only starts the same, is fine.
  EXPECT_EQ(usage_message({{"--out", (dir / "job.json").string()}}, {{(dir / "job").string()}}), "");
  EXPECT_EQ(usage_message({{"--out", (dir / "jobx" ).string()}}, {{(dir / "job").string()}}), "");
  // A directory the run will make: refused before it exists.
  EXPECT_NE(usage_message({{"--out", (dir / "new" / "a.json").string()}}, {{(dir / "new").string(), "the job directory", true}}), "");
  EXPECT_FALSE(fs::exists(dir / "new"));
  fs::remove_all(dir);
}

TEST(OutputGuard, TwoOutputsOfOneRunMustDiffer) {
  const auto dir = scratch_dir("guard_two");
  const auto m = usage_message({{"--out", (dir / "o.json").string()}, {"--html", (dir / "." / "o.json").string()}}, {});
  EXPECT_NE(m.find("--out and --html are the same file"), std::string::npos) << m;
  EXPECT_EQ(usage_message({{"--out", ""}, {"--html", ""}}, {{""}}), "");  // outputs not asked for never clash
  fs::remove_all(dir);
}

TEST(OutputGuard, AnUnwritableOutputIsNamedByItsFlag) {
  try {
    check_run_outputs({{"--timeline", "/nonexistent-dir-scalescope/t.json"}}, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--timeline: ", 0), 0u) << e.what();
  }
}

TEST(OutputGuard, PathIsInside) {
  EXPECT_TRUE(path_is_inside("/a/b/c", "/a/b"));
  EXPECT_TRUE(path_is_inside("/a/b/c", "/a/b/"));
  EXPECT_FALSE(path_is_inside("/a/b", "/a/b"));
  EXPECT_FALSE(path_is_inside("/a/bc", "/a/b"));
  EXPECT_FALSE(path_is_inside("", "/a"));
}

TEST(Utf8OrEscaped, ValidTextIsKeptAndOtherBytesAreEscapedReversibly) {
  bool escaped = true;
  EXPECT_EQ(utf8_or_escaped("torchrun --nproc 2 é ✓ \\x", &escaped), "torchrun --nproc 2 é ✓ \\x");
  EXPECT_FALSE(escaped);
  EXPECT_EQ(utf8_or_escaped("a\xff" "b\\", &escaped), "a\\xffb\\\\");
  EXPECT_TRUE(escaped);
  // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8 (RFC 3629): nlohmann::json refuses them.
  for (const std::string bad : {"\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82"}) {
    const auto s = utf8_or_escaped(bad, &escaped);
    EXPECT_TRUE(escaped) << s;
    EXPECT_NO_THROW(nlohmann::json(s).dump()) << s;
  }
}

TEST(StaleTemporaryFiles, OnlyOldOnesOfGoneProcessesForThisPathAreRemoved) {
  const auto dir = scratch_dir("stale_tmp");
  const auto old = [](const fs::path& p) {
    const timeval t[2] = {{std::time(nullptr) - 3600, 0}, {std::time(nullptr) - 3600, 0}};
    ASSERT_EQ(utimes(p.c_str(), t), 0);
  };
  const auto gone = dir / ".r.json.999999999.tmp.AbCdEf";          // no such process (above pid_max)
  const auto live = dir / (".r.json." + std::to_string(getpid()) + ".tmp.AbCdEf");
  const auto fresh = dir / ".r.json.999999998.tmp.XyZxYz";         // gone, but changed just now
  const auto other = dir / ".r.json.bak.999999999.tmp.AbCdEf";     // another file's
  const auto mine = dir / "r.json";
  for (const auto& p : {gone, live, fresh, other, mine}) touch(p);
  for (const auto& p : {gone, live, other, mine}) old(p);
  EXPECT_EQ(remove_stale_temporary_files((dir / "r.json").string()), 1);
  EXPECT_FALSE(fs::exists(gone));
  for (const auto& p : {live, fresh, other, mine}) EXPECT_TRUE(fs::exists(p)) << p;
  // A write removes them itself, and leaves none of its own.
  old(fresh);
  write_file_atomically((dir / "r.json").string(), "{}\n");
  EXPECT_FALSE(fs::exists(fresh));
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 3u);  // live, other, r.json
  fs::remove_all(dir);
}

TEST(StaleTemporaryFiles, TheTemplateNamesTheWriter) {
  const auto t = temporary_file_template("/x/result.json");
  EXPECT_EQ(t, "/x/.result.json." + std::to_string(getpid()) + ".tmp.XXXXXX");
}

}  // namespace
