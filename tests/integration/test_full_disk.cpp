// Results on a full disk, as a user meets it: each command runs in a private mount namespace (`unshare -m`) with
// a small tmpfs mounted where it writes, so the disk really fills and the mount goes with the process. Needs the
// right to mount (root, as on CI); elsewhere the tests skip and say why.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <sys/wait.h>

#include "cli_runner.h"

using scalescope::testing::read_json;
using scalescope::testing::scratch_dir;
namespace fs = std::filesystem;

namespace {

std::string quote(const fs::path& p) { return "'" + p.string() + "'"; }

struct ShellRun {
  int status = -1;
  std::string output;
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Runs `script` with /bin/sh in a private mount namespace; stdout and stderr together.
ShellRun run_unshared(const std::string& script, const fs::path& dir) {
  const auto script_file = dir / "script.sh", log = dir / "log.txt";
  std::ofstream(script_file) << "set -u\n" << script << "\n";
  const std::string cmd = "unshare -m sh " + quote(script_file) + " > " + quote(log) + " 2>&1";
  const int raw = std::system(cmd.c_str());
  ShellRun r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  r.output = read_text(log);
  return r;
}

/// The script line that mounts a tmpfs of `size` ("768k", "8m") at `mnt`, ending the script (exit 99) if it cannot.
std::string mount_tmpfs(const fs::path& mnt, const std::string& size) {
  return "mount -t tmpfs -o size=" + size + " tmpfs " + quote(mnt) + " || exit 99\n";
}

/// The script line that prints the last command's exit status as "exit N", for the test to find.
const std::string kEchoExit = "\necho \"exit $?\"\n";

/// Empty when this process may mount a tmpfs in a mount namespace of its own, else why not.
std::string why_no_small_disk() {
  const auto dir = scratch_dir("full_disk_probe");
  fs::create_directories(dir / "mnt");
  const auto r = run_unshared(mount_tmpfs(dir / "mnt", "64k") + "echo mounted", dir);
  fs::remove_all(dir);
  if (r.output.find("mounted") != std::string::npos) return "";
  return "cannot mount a small tmpfs in a private mount namespace here (needs root or CAP_SYS_ADMIN and "
         "unshare(1)): " + r.output;
}

#define SKIP_WITHOUT_SMALL_DISK()                                      \
  do {                                                                 \
    static const std::string why = why_no_small_disk();                \
    if (!why.empty()) GTEST_SKIP() << why;                             \
  } while (0)

/// `rows` rows of an all-reduce sweep over 2 ranks, 1 KiB apart: `comm --from` writes about 620 bytes of JSON a row.
void write_nccl_tests_table(const fs::path& path, int rows) {
  std::ofstream out(path);
  out << "# nThread 1 nGpus 2 minBytes 1024 maxBytes 1048576 step: 1024(bytes) warmup iters: 5 iters: 20 agg iters: "
         "1 validation: 1 graph: 0\n"
         "# Using devices\n"
         "#  Rank  0 Group  0 Pid  1 on h device  0 [0000:b4:00] NVIDIA H100\n"
         "#  Rank  1 Group  0 Pid  1 on h device  1 [0000:b5:00] NVIDIA H100\n"
         "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
         "busbw #wrong\n";
  for (int i = 1; i <= rows; ++i) {
    const double size = 1024.0 * i, time_us = 10 + size / 1e5, algbw = size / time_us / 1e3;
    char row[200];
    std::snprintf(row, sizeof row, "%12.0f %12.0f float sum -1 %8.2f %7.2f %7.2f 0 %8.2f %7.2f %7.2f 0\n", size,
                  size / 4, time_us, algbw, algbw * 2 * (2 - 1) / 2, time_us, algbw, algbw * 2 * (2 - 1) / 2);
    out << row;
  }
}

/// A Kineto-style trace of one rank with `kernels` back-to-back kernels: `analyze --timeline` writes about 95
/// bytes of timeline a kernel.
void write_trace(const fs::path& path, int kernels) {
  std::ofstream out(path);
  out << R"({"distributedInfo": {"rank": 0, "world_size": 1, "backend": "nccl"}, "traceEvents": [)"
      << R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": )"
      << 60 * kernels + 20 << "}";
  for (int i = 0; i < kernels; ++i)
    out << R"(, {"ph": "X", "cat": "kernel", "name": "sm90_gemm_)" << i % 7 << R"(", "pid": 0, "tid": 7, "ts": )"
        << 10 + 60 * i << R"(, "dur": 50})";
  out << "]}\n";
}

/// What `ls -A` lists in `dir` inside the namespace, printed after a marker line: the test reads it back.
std::string list_after(const fs::path& dir) { return "echo '--- left in " + dir.string() + ":'; ls -A " + quote(dir); }

std::string listed(const std::string& output, const fs::path& dir) {
  const std::string marker = "--- left in " + dir.string() + ":\n";
  const auto at = output.find(marker);
  if (at == std::string::npos) return "(not listed)";
  const auto from = at + marker.size(), next = output.find("--- left in ", from);
  return output.substr(from, next == std::string::npos ? std::string::npos : next - from);
}

}  // namespace

// --out on a disk with under 1 MiB free: refused before anything runs, nothing written there.
TEST(FullDisk, AnOutDirectoryWithoutRoomIsRefusedBeforeTheRun) {
  SKIP_WITHOUT_SMALL_DISK();
  const auto dir = scratch_dir("full_disk_before");
  const auto mnt = dir / "mnt";
  fs::create_directories(mnt);
  const auto r = run_unshared(mount_tmpfs(mnt, "768k") +
                                  SCALESCOPE_EXE + " train --backend cpu --model mlp-1m --batch 4 --warmup-rounds 0 "
                                  "--rounds 1 --steps-per-round 2 -q --out " + quote(mnt / "r.json") +
                                  kEchoExit + list_after(mnt),
                              dir);
  EXPECT_NE(r.output.find("exit 1\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("KiB free: the result may not fit when the run ends"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("step"), std::string::npos) << "nothing should have trained:\n" << r.output;
  EXPECT_EQ(listed(r.output, mnt), "") << r.output;
  fs::remove_all(dir);
}

// A result larger than the room left (the check passed: over 1 MiB free) is kept in $TMPDIR as NAME.PID.EXT and
// named, exit 1; neither the result nor a temporary file is left half-written on the full disk.
TEST(FullDisk, AResultThatDoesNotFitIsKeptInTmpdir) {
  SKIP_WITHOUT_SMALL_DISK();
  const auto dir = scratch_dir("full_disk_result");
  const auto mnt = dir / "mnt", tmp = dir / "tmp", table = dir / "sweep.txt";
  fs::create_directories(mnt);
  fs::create_directories(tmp);
  write_nccl_tests_table(table, 3000);  // ~1.9 MB of JSON for 1.5 MiB of room
  const auto r = run_unshared(mount_tmpfs(mnt, "1536k") + "TMPDIR=" +
                                  quote(tmp) + " " + SCALESCOPE_EXE + " comm --from " + quote(table) +
                                  " --collective all_reduce --out " + quote(mnt / "r.json") +
                                  " > /dev/null" + kEchoExit + list_after(mnt),
                              dir);
  EXPECT_NE(r.output.find("exit 1\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("No space left on device"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the result was kept in '" + tmp.string() + "/r."), std::string::npos) << r.output;
  EXPECT_EQ(listed(r.output, mnt), "") << r.output;
  int kept = 0;
  for (const auto& e : fs::directory_iterator(tmp)) {
    if (e.path().filename().string().rfind("r.", 0) != 0 || e.path().extension() != ".json") continue;
    ++kept;
    const auto j = read_json(e.path());
    EXPECT_EQ(j.at("sweep").at("rows").size(), 3000u) << e.path();
  }
  EXPECT_EQ(kept, 1) << r.output;
  fs::remove_all(dir);
}

// With $TMPDIR full as well and the /tmp name taken, the result is printed on stderr rather than lost. /tmp is not
// covered by a tmpfs (the checkout, and so this test's files, may be under it): a file planted at the fallback name
// NAME.PID.EXT (the pid is the shell's, which execs scalescope) makes that place fail as a full one would.
TEST(FullDisk, AResultWithNowhereToGoIsPrintedOnStderr) {
  SKIP_WITHOUT_SMALL_DISK();
  const auto dir = scratch_dir("full_disk_stderr");
  const auto mnt = dir / "mnt", table = dir / "sweep.txt", pid_file = dir / "pid";
  fs::create_directories(mnt);
  write_nccl_tests_table(table, 3000);
  const std::string run = "echo $$ > " + quote(pid_file) + "; : > /tmp/r.$$.json; TMPDIR=" + quote(mnt) + " exec " +
                          SCALESCOPE_EXE + " comm --from " + quote(table) + " --collective all_reduce --out " +
                          quote(mnt / "r.json");
  const auto r = run_unshared(mount_tmpfs(mnt, "1536k") + "sh -c '" + run +
                                  "' > /dev/null 2> " + quote(dir / "stderr.txt") + kEchoExit +
                                  "planted=/tmp/r.$(cat " + quote(pid_file) + ").json; [ -s \"$planted\" ] && echo "
                                  "'planted file written'; rm -f \"$planted\"\n" + list_after(mnt),
                              dir);
  EXPECT_NE(r.output.find("exit 1\n"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("planted file written"), std::string::npos) << r.output;
  EXPECT_EQ(listed(r.output, mnt), "") << r.output;
  const std::string err = read_text(dir / "stderr.txt");
  const auto follows = err.find(": it follows on stderr\n");
  ASSERT_NE(follows, std::string::npos) << err.substr(0, 2000);
  EXPECT_NE(err.find("the result was printed on stderr instead"), std::string::npos) << err.substr(err.size() - 2000);
  // The JSON stands whole between the announcement and the final error line.
  const auto start = err.find('{', follows);
  const auto end = err.rfind("\n}");
  ASSERT_TRUE(start != std::string::npos && end != std::string::npos && end > start) << err.substr(0, 2000);
  const auto j = nlohmann::json::parse(err.substr(start, end + 2 - start));
  EXPECT_EQ(j.at("sweep").at("rows").size(), 3000u);
  fs::remove_all(dir);
}

// Under a file-size limit (`ulimit -f`) with SIGXFSZ at its default, a result past it, its fallbacks and even the
// error line on a stderr that is such a file fail like writes to a full disk: exit 1, never a death by SIGXFSZ.
// No mount needed: this one runs everywhere.
TEST(FullDisk, AFileSizeLimitIsAFailedRunNotADeath) {
  const auto dir = scratch_dir("full_disk_fsize");
  const auto table = dir / "sweep.txt", tmp = dir / "tmp";
  fs::create_directories(tmp);
  write_nccl_tests_table(table, 3000);
  // ulimit -f counts 512-byte blocks in dash and 1024-byte ones in bash: 16 is 8 or 16 KiB, far below the ~1.9 MB.
  const std::string cmd = "cd " + quote(dir) + " && trap - XFSZ; ulimit -f 16 && TMPDIR=" + quote(tmp) + " " +
                          SCALESCOPE_EXE + " comm --from " + quote(table) + " --collective all_reduce --out r.json "
                          "> out.txt 2> err.txt; echo \"exit $?\" > " + quote(dir / "status.txt");
  std::ofstream(dir / "script.sh") << cmd << "\n";
  ASSERT_EQ(std::system(("sh " + quote(dir / "script.sh")).c_str()), 0);
  const std::string status = read_text(dir / "status.txt"), err = read_text(dir / "err.txt");
  EXPECT_EQ(status, "exit 1\n") << err.substr(0, 2000);
  // stderr is past the limit too: what fits of it is the announcement and the start of the JSON.
  EXPECT_NE(err.find("scalescope: the result could not be written to 'r.json'"), std::string::npos) << err.substr(0, 2000);
  EXPECT_FALSE(fs::exists(dir / "r.json"));
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  fs::remove_all(dir);
}

// A merged timeline larger than the room left: exit 1 naming the disk, the analysis itself still reported and
// written (--out elsewhere), and no partial timeline or temporary file on the full disk.
TEST(FullDisk, ATimelineThatDoesNotFitLeavesNothingHalfWritten) {
  SKIP_WITHOUT_SMALL_DISK();
  const auto dir = scratch_dir("full_disk_timeline");
  const auto mnt = dir / "mnt", trace = dir / "rank0.json";
  fs::create_directories(mnt);
  write_trace(trace, 30000);  // ~2.8 MB of timeline for 1.5 MiB of room
  const auto r = run_unshared(mount_tmpfs(mnt, "1536k") +
                                  SCALESCOPE_EXE + " analyze " + quote(trace) + " --out " + quote(dir / "a.json") +
                                  " --timeline " + quote(mnt / "t.json") + kEchoExit + list_after(mnt),
                              dir);
  EXPECT_NE(r.output.find("exit 1\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("No space left on device"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 rank analysed"), std::string::npos) << r.output;
  EXPECT_EQ(listed(r.output, mnt), "") << r.output;
  ASSERT_TRUE(fs::exists(dir / "a.json")) << r.output;
  EXPECT_EQ(read_json(dir / "a.json").at("schema"), "scalescope.analyze/1");
  fs::remove_all(dir);
}

// The CPU ranks hand their results over through $TMPDIR: one with under 32 MiB free is refused before they start.
TEST(FullDisk, ATmpdirWithoutRoomIsRefusedBeforeTheRanksStart) {
  SKIP_WITHOUT_SMALL_DISK();
  const auto dir = scratch_dir("full_disk_tmpdir");
  const auto mnt = dir / "mnt";
  fs::create_directories(mnt);
  const auto r = run_unshared(mount_tmpfs(mnt, "8m") + "TMPDIR=" + quote(mnt) +
                                  " " + SCALESCOPE_EXE + " train --backend cpu --world-size 2 --model mlp-1m --batch 4 "
                                  "--warmup-rounds 0 --rounds 1 --steps-per-round 2 -q" + kEchoExit +
                                  list_after(mnt),
                              dir);
  EXPECT_EQ(r.output.find("exit 0\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(mnt.string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("KiB free: the ranks' results and Open MPI's session files would not fit"), std::string::npos)
      << r.output;
  EXPECT_EQ(listed(r.output, mnt), "") << r.output;
  fs::remove_all(dir);
}
