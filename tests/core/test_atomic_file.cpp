#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "support/scratch_dir.h"

namespace fs = std::filesystem;
using scalescope::core::Error;
using scalescope::core::write_file_atomically;

namespace {
std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
fs::path fresh_dir(const std::string& name) { return scalescope::testing::scratch_dir(name); }
}  // namespace

TEST(AtomicFile, WritesWholeContentAndReplaces) {
  auto dir = fresh_dir("atomic");
  auto path = (dir / "r.json").string();
  write_file_atomically(path, "first");
  EXPECT_EQ(read_all(path), "first");
  write_file_atomically(path, "second, longer");
  EXPECT_EQ(read_all(path), "second, longer");
  // No temporary files are left beside it.
  int files = 0;
  for (auto& e : fs::directory_iterator(dir)) { (void)e; ++files; }
  EXPECT_EQ(files, 1);
  fs::remove_all(dir);
}

TEST(AtomicFile, MissingDirectoryIsAClearError) {
  try {
    write_file_atomically("/nonexistent-dir-scalescope/x.json", "x");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
    EXPECT_FALSE(e.remedy().empty());
  }
}

TEST(AtomicFile, DirectoryAsPathIsRejected) {
  auto dir = fresh_dir("atomicdir");
  EXPECT_THROW(write_file_atomically(dir.string(), "x"), Error);
  fs::remove_all(dir);
}

TEST(AtomicFile, DeviceOrFifoAsPathIsRejectedAndKept) {
  // rename() would replace the node by a regular file (run as root, --out /dev/null destroyed /dev/null).
  auto dir = fresh_dir("atomicfifo");
  auto fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  try {
    write_file_atomically(fifo.string(), "x");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_THROW(scalescope::core::check_output_path_writable("/dev/null"), Error);
  fs::remove_all(dir);
}

TEST(AtomicFile, DirectoryWhereNoFileCanBeCreatedIsRefusedBeforeTheRun) {
  // As root access(W_OK) says yes for /proc, where no file can be created: the check must probe for real.
  if (!fs::is_directory("/proc/self")) GTEST_SKIP() << "no /proc on this system";
  EXPECT_THROW(scalescope::core::check_output_path_writable("/proc/self/scalescope-result.json"), Error);
  // A writable directory passes, and the probe leaves nothing behind.
  auto dir = fresh_dir("atomicprobe");
  scalescope::core::check_output_path_writable((dir / "result.json").string());
  EXPECT_TRUE(fs::is_empty(dir));
  fs::remove_all(dir);
}

// Two outputs of one run that name one file, in any spelling, and neither there yet (analyze's --out and
// --timeline: "o.json" and "./o.json" got past weakly_canonical, which leaves such relative paths relative).
TEST(AtomicFile, TwoOutputsThatAreOneFileAreRefused) {
  using scalescope::core::check_outputs_differ;
  using scalescope::core::UsageError;
  const auto dir = fresh_dir("outputs_differ");
  const auto cwd = fs::current_path();
  fs::current_path(dir);
  EXPECT_THROW(check_outputs_differ("o.json", "--out", "./o.json", "--timeline"), UsageError);
  EXPECT_THROW(check_outputs_differ("o.json", "--out", (dir / "o.json").string(), "--timeline"), UsageError);
  EXPECT_THROW(check_outputs_differ("new/../o.json", "--out", "o.json", "--timeline"), UsageError);
  EXPECT_NO_THROW(check_outputs_differ("o.json", "--out", "t.json", "--timeline"));
  EXPECT_NO_THROW(check_outputs_differ("o.json", "--out", "", "--timeline"));  // not asked for
  try {
    check_outputs_differ("o.json", "--out", "./o.json", "--timeline");
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--out and --timeline are the same file"), std::string::npos) << e.what();
  }
  fs::current_path(cwd);
  fs::remove_all(dir);
}

// An output that is one of the inputs, through another spelling or a symbolic link.
TEST(AtomicFile, AnOutputThatIsAnInputIsRefused) {
  using scalescope::core::check_output_is_not_input;
  using scalescope::core::UsageError;
  const auto dir = fresh_dir("output_input");
  std::ofstream(dir / "in.txt") << "x";
  fs::create_symlink(dir / "in.txt", dir / "link.txt");
  EXPECT_THROW(check_output_is_not_input((dir / "." / "in.txt").string(), "--out", {(dir / "in.txt").string()}),
               UsageError);
  EXPECT_THROW(check_output_is_not_input((dir / "link.txt").string(), "--out", {(dir / "in.txt").string()}), UsageError);
  EXPECT_NO_THROW(check_output_is_not_input((dir / "new.json").string(), "--out", {(dir / "in.txt").string()}));
  EXPECT_NO_THROW(check_output_is_not_input("", "--out", {(dir / "in.txt").string()}));
  fs::remove_all(dir);
}

namespace {
std::string error_of(const scalescope::core::OutputFile& out, const std::string& content) {
  try {
    out.write(content);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(OutputFile, WritesItsPathWhenNobodyElseDid) {
  auto dir = fresh_dir("output_file_alone");
  const auto path = (dir / "o.json").string();
  const scalescope::core::OutputFile absent(path);
  EXPECT_EQ(absent.write("first"), path);
  EXPECT_EQ(read_all(path), "first");
  const scalescope::core::OutputFile existing(path);  // a rerun of the same command replaces its old result
  EXPECT_EQ(existing.write("second"), path);
  EXPECT_EQ(read_all(path), "second");
  const scalescope::core::OutputFile removed_meanwhile(path);  // the user removed the old result during the run
  fs::remove(path);
  EXPECT_EQ(removed_meanwhile.write("third"), path);
  EXPECT_EQ(read_all(path), "third");
  fs::remove_all(dir);
}

TEST(OutputFile, AnotherRunsResultIsKeptAndThisOneGoesBesideIt) {
  auto dir = fresh_dir("output_file_two_runs");
  const auto path = (dir / "o.json").string();
  const scalescope::core::OutputFile created_meanwhile(path);
  write_file_atomically(path, "the other run");  // two runs with the same --out: the other one ended first
  auto what = error_of(created_meanwhile, "this run");
  EXPECT_NE(what.find("was created by another process"), std::string::npos) << what;
  EXPECT_NE(what.find(created_meanwhile.sibling_path()), std::string::npos) << what;
  EXPECT_EQ(read_all(path), "the other run");
  EXPECT_EQ(read_all(created_meanwhile.sibling_path()), "this run");
  EXPECT_EQ(fs::path(created_meanwhile.sibling_path()).filename().string(),
            "o." + std::to_string(getpid()) + ".json");

  const scalescope::core::OutputFile replaced_meanwhile(path);  // it existed: replaced by another's rename
  write_file_atomically(path, "a third run");
  what = error_of(replaced_meanwhile, "this run again");
  EXPECT_NE(what.find("was replaced by another process"), std::string::npos) << what;
  EXPECT_EQ(read_all(path), "a third run");
  EXPECT_EQ(read_all(replaced_meanwhile.sibling_path()), "this run again");
  fs::remove_all(dir);
}
