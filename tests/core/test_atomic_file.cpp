#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>

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
/// Entries in `dir`: 1 where only the result is there, more where a temporary file was left beside it.
int entries_in(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.exists() ? 1 : 0;
  return n;
}
}  // namespace

TEST(AtomicFile, WritesWholeContentAndReplaces) {
  auto dir = fresh_dir("atomic");
  auto path = (dir / "r.json").string();
  write_file_atomically(path, "first");
  EXPECT_EQ(read_all(path), "first");
  write_file_atomically(path, "second, longer");
  EXPECT_EQ(read_all(path), "second, longer");
  // No temporary files are left beside it.
  EXPECT_EQ(entries_in(dir), 1);
  fs::remove_all(dir);
}

TEST(AtomicFile, StreamedContentPastTheBufferIsWrittenWhole) {
  auto dir = fresh_dir("atomic_streamed");
  auto path = (dir / "t.json").string();
  std::string expected;
  for (int i = 0; i < 300000; ++i) expected += std::to_string(i) + ",";  // ~2 MB: the 1 MiB buffer fills twice
  scalescope::core::write_file_atomically_streamed(path, [&](std::ostream& out) {
    for (std::size_t at = 0; at < expected.size(); at += 4096) out << expected.substr(at, 4096);
  });
  EXPECT_EQ(read_all(path), expected);
  fs::remove_all(dir);
}

TEST(AtomicFile, AStreamedWriterThatThrowsLeavesTheOldFileAndNoTemporary) {
  auto dir = fresh_dir("atomic_streamed_throw");
  auto path = (dir / "t.json").string();
  write_file_atomically(path, "old");
  EXPECT_THROW(scalescope::core::write_file_atomically_streamed(path,
                                                                [](std::ostream& out) {
                                                                  out << std::string(3u << 20, 'x');  // flushed part
                                                                  throw Error("the writer failed");
                                                                }),
               Error);
  EXPECT_EQ(read_all(path), "old");
  EXPECT_EQ(entries_in(dir), 1) << "the temporary file must be removed";
  fs::remove_all(dir);
}

TEST(AtomicFile, AResultKeepsTheModeOfTheFileItReplacesOrTheUmasks) {
  auto dir = fresh_dir("atomic_mode");
  const auto mode_of = [](const fs::path& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? (st.st_mode & 0777) : 0777u + 1;
  };
  const mode_t old_mask = ::umask(077);
  write_file_atomically((dir / "private.json").string(), "x");  // a new file under umask 077: 0600
  ::umask(old_mask);
  EXPECT_EQ(mode_of(dir / "private.json"), 0600u);
  write_file_atomically((dir / "shared.json").string(), "x");
  ::chmod((dir / "shared.json").c_str(), 0640);
  write_file_atomically((dir / "shared.json").string(), "y");  // replaced: keeps 0640 whatever the umask
  EXPECT_EQ(mode_of(dir / "shared.json"), 0640u);
  fs::remove_all(dir);
}

// RLIMIT_FSIZE with SIGXFSZ at its default (which ends the process): the write fails with EFBIG instead, the old
// file stays and no temporary is left. In a child, whose limit ends with it.
TEST(AtomicFile, AFileSizeLimitIsAnErrorNotADeath) {
  auto dir = fresh_dir("atomic_fsize");
  const auto path = (dir / "r.json").string();
  write_file_atomically(path, "old");
  const pid_t pid = fork();
  if (pid == 0) {
    signal(SIGXFSZ, SIG_DFL);
    struct rlimit limit {4096, 4096};
    setrlimit(RLIMIT_FSIZE, &limit);
    try {
      write_file_atomically(path, std::string(1 << 20, 'x'));
    } catch (const Error& e) {
      _exit(std::string(e.what()).find("File too large") != std::string::npos ? 0 : 3);
    }
    _exit(2);  // no error at all
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(read_all(path), "old");
  EXPECT_EQ(entries_in(dir), 1) << "the temporary file must be removed";
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

/// error_of with TMPDIR set to `tmpdir` for the write (where OutputFile keeps a result it cannot write), then put back.
std::string error_of_with_tmpdir(const scalescope::core::OutputFile& out, const std::string& content,
                                 const fs::path& tmpdir) {
  const char* saved = std::getenv("TMPDIR");
  const std::string saved_tmpdir = saved ? saved : "";
  EXPECT_EQ(setenv("TMPDIR", tmpdir.c_str(), 1), 0);
  const auto what = error_of(out, content);
  if (saved) setenv("TMPDIR", saved_tmpdir.c_str(), 1);
  else unsetenv("TMPDIR");
  return what;
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

TEST(AtomicFile, ALinkIsWrittenThroughAndStaysALink) {
  auto dir = fresh_dir("atomic_link");
  fs::create_directory(dir / "elsewhere");
  write_file_atomically((dir / "elsewhere" / "real.json").string(), "old");
  fs::create_symlink("elsewhere/real.json", dir / "link.json");
  write_file_atomically((dir / "link.json").string(), "new");
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_EQ(read_all(dir / "elsewhere" / "real.json"), "new");
  fs::create_symlink("elsewhere/absent.json", dir / "dangling.json");  // a link to a file not yet written
  write_file_atomically((dir / "dangling.json").string(), "made");
  EXPECT_TRUE(fs::is_symlink(dir / "dangling.json"));
  EXPECT_EQ(read_all(dir / "elsewhere" / "absent.json"), "made");
  fs::remove_all(dir);
}

TEST(AtomicFile, NamesAsLongAsTheFileSystemAllowsAreWrittenLongerOnesRefusedBeforeTheRun) {
  auto dir = fresh_dir("atomic_long");
  const long name_max = pathconf(dir.c_str(), _PC_NAME_MAX);
  ASSERT_GT(name_max, 20);
  const std::string longest(static_cast<std::size_t>(name_max), 'r');
  write_file_atomically((dir / longest).string(), "fits");  // the temporary file's name is shorter than it
  EXPECT_EQ(read_all(dir / longest), "fits");
  try {
    scalescope::core::check_output_path_writable((dir / (longest + "x")).string());
    ADD_FAILURE() << "a name over NAME_MAX was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("file name is " + std::to_string(name_max + 1) + " bytes long"),
              std::string::npos) << e.what();
  }
  try {  // "results.json/" names a directory that does not exist: the remedy is not "mkdir -p results.json"
    scalescope::core::check_output_path_writable((dir / "results.json").string() + "/");
    ADD_FAILURE() << "a path ending in '/' was accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.remedy().find("drop the '/'"), std::string::npos) << e.remedy();
  }
  fs::remove_all(dir);
}

TEST(OutputFile, AResultThatCannotBeWrittenWhereAskedIsKeptInTheTemporaryDirectory) {
  auto dir = fresh_dir("output_file_gone");
  auto tmp = fresh_dir("output_file_tmpdir");
  fs::create_directory(dir / "sub");
  const auto path = (dir / "sub" / "o.json").string();
  const scalescope::core::OutputFile out(path);
  fs::remove_all(dir / "sub");  // the directory went away while the run measured (or the disk filled)
  const auto what = error_of_with_tmpdir(out, "measured", tmp);
  const auto kept = tmp / ("o." + std::to_string(getpid()) + ".json");
  EXPECT_NE(what.find("does not exist"), std::string::npos) << what;
  EXPECT_NE(what.find("kept in '" + kept.string() + "'"), std::string::npos) << what;
  EXPECT_EQ(read_all(kept), "measured");
  fs::remove_all(dir);
  fs::remove_all(tmp);
}

TEST(DeferredStopSignals, AStopSignalEndsTheProcessOnlyOnceTheScopeIsDone) {
  auto dir = fresh_dir("deferred_signals");
  const auto marker = dir / "whole";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    {
      const scalescope::core::DeferredStopSignals hold;
      std::raise(SIGTERM);  // arrives mid-write
      std::ofstream(marker) << "written after the signal";
    }
    _exit(0);  // not reached: the held SIGTERM ends the process when the scope ends
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  EXPECT_EQ(read_all(marker), "written after the signal");
  fs::remove_all(dir);
}

TEST(OutputFile, AFallbackNameThatIsAPlantedLinkIsNotFollowed) {
  // Someone else's link at $TMPDIR/NAME.PID.EXT (a shared /tmp): the result must not replace what it points at.
  auto dir = fresh_dir("output_file_planted");
  auto tmp = fresh_dir("output_file_planted_tmp");
  fs::create_directory(dir / "sub");
  const auto path = (dir / "sub" / "o.json").string();
  const scalescope::core::OutputFile out(path);
  fs::remove_all(dir / "sub");
  std::ofstream(dir / "precious.txt") << "precious";
  const std::string name = "o." + std::to_string(getpid()) + ".json";
  fs::create_symlink(dir / "precious.txt", tmp / name);
  const auto what = error_of_with_tmpdir(out, "measured", tmp);
  EXPECT_EQ(read_all(dir / "precious.txt"), "precious");
  EXPECT_NE(what.find("kept in '/tmp/" + name + "'"), std::string::npos) << what;  // the next place
  fs::remove("/tmp/" + name);
  fs::remove_all(dir);
  fs::remove_all(tmp);
}

TEST(AtomicFile, ALinkLoopIsRefused) {
  auto dir = fresh_dir("atomic_loop");
  fs::create_symlink("b.json", dir / "a.json");
  fs::create_symlink("a.json", dir / "b.json");
  try {
    scalescope::core::check_output_path_writable((dir / "a.json").string());
    ADD_FAILURE() << "a link loop was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than 40 symbolic links"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}
