// Hostile and careless inputs (issue #40): outputs that would replace inputs, two runs into one job directory,
// directories of many files, decompression bombs, non-UTF-8 arguments, a job that floods its output, numbers that are
// not finite, temporary files a killed run left, processes a job leaves behind. Every input is generated here, small
// enough that the whole file runs in well under a minute on two cores.

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "integration/cli_runner.h"

namespace {

using scalescope::testing::read_json;
using scalescope::testing::run_cli;
using scalescope::testing::scratch_dir;
namespace fs = std::filesystem;

const std::string kFixtures = std::string(SCALESCOPE_SOURCE_DIR) + "/tests/fixtures/";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

void expect_mentions(const std::string& output, const std::string& what) {
  EXPECT_NE(output.find(what), std::string::npos) << "expected '" << what << "' in:\n" << output;
}

/// A copy of the H200 profile job directory in `dir`/job: tests may try to overwrite it, never the fixture itself.
fs::path copy_job(const fs::path& dir) {
  const auto job = dir / "job";
  fs::copy(kFixtures + "profile-h200/none", job, fs::copy_options::recursive);
  return job;
}

// --- outputs never replace inputs -------------------------------------------------------------------------------

TEST(Adversarial, PredictNeverWritesOverOrIntoItsInputs) {
  const auto dir = scratch_dir("adv_predict_inputs");
  const auto job = copy_job(dir);
  const auto capture = job / "capture.rank0.json";
  const std::string before = slurp(capture);
  const auto link = dir / "link.txt";
  fs::copy_file(kFixtures + "diagnosis/pcie-host-bridge-path/all_reduce.txt", link);
  const std::string link_before = slurp(link);
  for (const std::string& args :
       {"predict " + job.string() + " --link H200:NV18 --out " + capture.string(),
        "predict " + job.string() + " --link H200:NV18 --html " + capture.string(),
        "predict " + job.string() + " --link H200:NV18 --out " + (job / "new.json").string(),
        "predict " + job.string() + " --link H200:NV18 --html " + (job / "sub" / ".." / "page.html").string(),
        "predict " + capture.string() + " --link H200:NV18 --out " + capture.string(),
        "predict " + job.string() + " --link " + link.string() + " --out " + link.string(),
        "predict " + job.string() + " --link " + link.string() + " --html " + (dir / "." / "link.txt").string()}) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_TRUE(r.output.find("would replace") != std::string::npos || r.output.find("lies inside") != std::string::npos)
        << args << "\n" << r.output;
  }
  EXPECT_EQ(slurp(capture), before);
  EXPECT_EQ(slurp(link), link_before);
  EXPECT_FALSE(fs::exists(job / "new.json"));
  EXPECT_FALSE(fs::exists(job / "page.html"));
  fs::remove_all(dir);
}

TEST(Adversarial, PredictKnowsTheTraceItsCaptureNamesAndOutputsBehindDanglingLinks) {
  const auto dir = scratch_dir("adv_predict_links");
  const auto job = copy_job(dir);
  const std::string trace_before = slurp(job / "trace.rank0.json.gz");
  // The capture given as a file: the trace beside it, named by its window, is read too.
  auto r = run_cli("predict " + (job / "capture.rank0.json").string() + " --link net:25 --out " + (job / "trace.rank0.json.gz").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(slurp(job / "trace.rank0.json.gz"), trace_before);
  // Two outputs made one file by a dangling link; an output that leads into the job directory.
  fs::create_symlink(dir / "o1.json", dir / "ol.json");
  r = run_cli("predict " + job.string() + " --link net:25 --out " + (dir / "o1.json").string() + " --html " + (dir / "ol.json").string());
  EXPECT_EQ(r.status, 2) << r.output;
  fs::create_symlink(job / "zz.json", dir / "into.json");
  r = run_cli("predict " + job.string() + " --link net:25 --out " + (dir / "into.json").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_FALSE(fs::exists(job / "zz.json"));
  fs::remove_all(dir);
}

TEST(Adversarial, TrainingDataThatLinksToTheOutputIsRefused) {
  const auto dir = scratch_dir("adv_data_link");
  fs::create_directories(dir / "data");
  spit(dir / "data" / "a.txt", "some text to train on\n");
  spit(dir / "keep.txt", "keep me\n");
  fs::create_symlink(dir / "keep.txt", dir / "data" / "l.txt");
  const auto r = run_cli("train --backend cpu --world-size 1 --model mlp-1m --warmup-rounds 0 --rounds 1 --steps-per-round 1 "
                         "--data " + (dir / "data").string() + " --out " + (dir / "keep.txt").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(slurp(dir / "keep.txt"), "keep me\n");
  fs::remove_all(dir);
}

TEST(Adversarial, AnalyzeAndTopoNeverWriteIntoAnInputDirectory) {
  const auto dir = scratch_dir("adv_analyze_inputs");
  const auto job = copy_job(dir);
  auto r = run_cli("analyze " + job.string() + " --out " + (job / "analysis.json").string());
  EXPECT_EQ(r.status, 2) << r.output;
  expect_mentions(r.output, "lies inside");
  r = run_cli("analyze " + job.string() + " --timeline " + (job / "t.json").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_FALSE(fs::exists(job / "analysis.json"));
  EXPECT_FALSE(fs::exists(job / "t.json"));
  fs::remove_all(dir);
}

TEST(Adversarial, ProfileOutputsStayOutOfItsJobDirectory) {
  const auto dir = scratch_dir("adv_profile_out");
  const auto r = run_cli("profile --keep " + (dir / "job").string() + " --out " + (dir / "job" / "a.json").string() +
                         " -- true");
  EXPECT_EQ(r.status, 2) << r.output;
  expect_mentions(r.output, "lies inside");
  EXPECT_FALSE(fs::exists(dir / "job"));  // refused before anything was made
  fs::remove_all(dir);
}

// --- concurrent runs never mix ----------------------------------------------------------------------------------

TEST(Adversarial, TwoProfilesIntoOneKeepDirectory) {
  const auto dir = scratch_dir("adv_keep_lock");
  const auto keep = dir / "job";
  const auto first_log = dir / "first.txt";
  const pid_t first = fork();
  if (first == 0) {
    const std::string cmd = std::string("exec ") + SCALESCOPE_EXE + " profile --keep " + keep.string() +
                            " -- sh -c 'echo first-job; sleep 4' > " + first_log.string() + " 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until the first run holds the directory (its lock file exists), at most 20 s.
  for (int i = 0; i < 200 && !fs::exists(keep / ".scalescope-profile.lock"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(fs::exists(keep / ".scalescope-profile.lock")) << slurp(first_log);
  const auto second = run_cli("profile --keep " + keep.string() + " -- sh -c 'echo second-job'");
  EXPECT_EQ(second.status, 2) << second.output;
  expect_mentions(second.output, "in use by another scalescope profile (process " + std::to_string(first) + ")");
  int status = 0;
  ASSERT_EQ(waitpid(first, &status, 0), first);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(first_log);
  const std::string log = slurp(keep / "job.log");
  EXPECT_NE(log.find("first-job"), std::string::npos) << log;
  EXPECT_EQ(log.find("second-job"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(keep / ".scalescope-profile.lock"));  // released at the end
  // A third run into the finished directory: not in use, but not empty.
  const auto third = run_cli("profile --keep " + keep.string() + " -- true");
  EXPECT_EQ(third.status, 2) << third.output;
  expect_mentions(third.output, "is not empty");
  fs::remove_all(dir);
}

// --- huge counts ------------------------------------------------------------------------------------------------

TEST(Adversarial, ADirectoryOfManyFilesIsReadUpToItsBound) {
  const auto dir = scratch_dir("adv_many_files");
  const auto many = dir / "many";
  fs::create_directories(many);
  for (int i = 0; i < 1500; ++i) spit(many / ("f" + std::to_string(i) + ".txt"), "nothing a reader knows " + std::to_string(i) + "\n");
  auto r = run_cli("analyze " + many.string() + " --max-files 1000 --out " + (dir / "a.json").string());
  EXPECT_EQ(r.status, 0) << r.output.substr(0, 4000);
  expect_mentions(r.output, "1500 files; the first 1000 in name order were read, 500 were not (from");
  expect_mentions(r.output, "--max-files");
  // Skipped files are counted by reason, not listed one line each.
  expect_mentions(r.output, "skipped 1000 files that no reader recognises");
  const auto j = read_json(dir / "a.json");
  ASSERT_TRUE(j.contains("inputs")) << j.dump().substr(0, 2000);
  EXPECT_EQ(j["inputs"]["directories"][0]["omitted"], 500);
  EXPECT_EQ(j["inputs"]["skipped"]["count"], 1000);
  EXPECT_LE(j["files"].size(), 20u);  // a few examples of skipped files, not 1000 rows
  fs::remove_all(dir);
}

// --- bombs ------------------------------------------------------------------------------------------------------

std::string trace_of(int events) {
  std::string s = "{\"traceEvents\": [\n";
  for (int i = 0; i < events; ++i)
    s += "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": " + std::to_string(1000 + 10 * i) +
         ", \"dur\": 5, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": " + std::to_string(i) + "}}" +
         (i + 1 < events ? ",\n" : "\n");
  return s + "]}\n";
}

TEST(Adversarial, TraceEventAndByteBoundsEndTheReadWithTheirFlag) {
  const auto dir = scratch_dir("adv_trace_bounds");
  spit(dir / "t.json", trace_of(5000));
  ASSERT_EQ(std::system(("gzip -k " + (dir / "t.json").string()).c_str()), 0);
  auto r = run_cli("analyze " + (dir / "t.json.gz").string() + " --max-trace-events 1000");
  EXPECT_EQ(r.status, 1) << r.output;
  expect_mentions(r.output, "more than 1000 events");
  expect_mentions(r.output, "--max-trace-events");
  r = run_cli("analyze " + (dir / "t.json.gz").string() + " --max-trace-bytes 100000");
  EXPECT_EQ(r.status, 1) << r.output;
  expect_mentions(r.output, "--max-trace-bytes");
  // A gzip bomb: 64 MB of one repeated event compressed to ~0.2 MB stops at the byte bound, not at memory's end.
  {
    const std::string one =
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 1000, \"dur\": 5},\n";
    std::ofstream bomb(dir / "bomb.json");
    bomb << "{\"traceEvents\": [\n";
    for (std::size_t written = 0; written < (64u << 20); written += one.size()) bomb << one;
    bomb << one.substr(0, one.size() - 2) << "]}\n";
  }
  ASSERT_EQ(std::system(("gzip " + (dir / "bomb.json").string()).c_str()), 0);
  EXPECT_LT(fs::file_size(dir / "bomb.json.gz"), 2u << 20);
  r = run_cli("analyze " + (dir / "bomb.json.gz").string() + " --max-trace-bytes 16000000");
  EXPECT_EQ(r.status, 1) << r.output;
  expect_mentions(r.output, "--max-trace-bytes");
  // Total bytes of a run: the second file is not read.
  spit(dir / "a.log", std::string(2000, 'x') + "\n");
  spit(dir / "b.log", std::string(2000, 'y') + "\n");
  r = run_cli("analyze " + (dir / "a.log").string() + " " + (dir / "b.log").string() + " --max-input-bytes 3000");
  EXPECT_EQ(r.status, 1) << r.output;
  expect_mentions(r.output, "--max-input-bytes");
  fs::remove_all(dir);
}

// --- non-UTF-8 --------------------------------------------------------------------------------------------------

TEST(Adversarial, ANonUtf8ArgumentReachesTheJobAndIsRecordedEscaped) {
  const auto dir = scratch_dir("adv_non_utf8");
  const auto keep = dir / "job";
  const auto r = run_cli("profile --keep " + keep.string() + " -- sh -c 'exit 0' x \"$(printf 'a\\377b')\"");
  EXPECT_EQ(r.status, 0) << r.output;  // the job ran
  const auto job = read_json(keep / "job.json");
  ASSERT_EQ(job["command"].size(), 5u) << job.dump();
  EXPECT_EQ(job["command"][4], "a\\xffb");
  EXPECT_EQ(job["command_escaped"], true);
  // Once one argument needs escaping, every backslash is doubled: the four characters \xfe typed and the byte differ.
  const auto r2 = run_cli("profile --keep " + (dir / "job2").string() + " -- true '\\xfe' \"$(printf '\\376')\"");
  EXPECT_EQ(r2.status, 0) << r2.output;
  const auto job2 = read_json(dir / "job2" / "job.json");
  ASSERT_EQ(job2["command"].size(), 3u) << job2.dump();
  EXPECT_EQ(job2["command"][1], "\\\\xfe");
  EXPECT_EQ(job2["command"][2], "\\xfe");
  fs::remove_all(dir);
}

TEST(Adversarial, AJobThatCannotStartIs127AndLeavesNoDirectory) {
  const auto dir = scratch_dir("adv_no_start");
  const auto keep = dir / "new" / "job";
  const auto r = run_cli("profile --keep " + keep.string() + " -- no-such-command-scalescope-test");
  EXPECT_EQ(r.status, 127) << r.output;
  expect_mentions(r.output, "could not be started");
  EXPECT_EQ(r.output.find("primary:"), std::string::npos) << r.output;  // no diagnosis of a job that never ran
  EXPECT_FALSE(fs::exists(keep));
  // An empty directory the user made stays, empty.
  fs::create_directories(dir / "mine");
  const auto r2 = run_cli("profile --keep " + (dir / "mine").string() + " -- no-such-command-scalescope-test");
  EXPECT_EQ(r2.status, 127) << r2.output;
  EXPECT_TRUE(fs::is_directory(dir / "mine"));
  EXPECT_TRUE(fs::is_empty(dir / "mine"));
  fs::remove_all(dir);
}

// --- a job that floods its output -------------------------------------------------------------------------------

TEST(Adversarial, ProfileRelaysAFloodInBoundedMemory) {
  const auto dir = scratch_dir("adv_flood");
  // 32 MB of output in 1 M lines; profile's peak memory (the largest child of this test process) stays under 100 MB.
  const auto r = run_cli("profile --keep " + (dir / "job").string() +
                         " -- sh -c 'yes 0123456789abcdefghijklmnopqrstu | head -c 33554432' > /dev/null");
  EXPECT_EQ(r.status, 0) << r.output.substr(0, 2000);
  EXPECT_EQ(fs::file_size(dir / "job" / "job.log"), 33554432u);
  rusage ru {};
  ASSERT_EQ(getrusage(RUSAGE_CHILDREN, &ru), 0);
  EXPECT_LT(ru.ru_maxrss, 100 * 1024) << "peak RSS " << ru.ru_maxrss << " KiB";
  fs::remove_all(dir);
}

// --- numbers that are not finite --------------------------------------------------------------------------------

TEST(Adversarial, LinksThatAreNotFiniteAreRefusedOrNamed) {
  const auto dir = scratch_dir("adv_nonfinite");
  const std::string run = kFixtures + "diagnosis/compute-contention/doctor.json";
  for (const std::string link : {"net:inf", "net:nan", "net:1e400", "net:-5", "net:1e9"}) {
    const auto r = run_cli("predict " + run + " --link " + link);
    EXPECT_EQ(r.status, 2) << link << "\n" << r.output;
  }
  auto r = run_cli("predict " + run + " --link H200:NV18 --gpus-per-node 8 --network net:inf --gpus 16");
  EXPECT_EQ(r.status, 2) << r.output;
  // An nccl-tests output with rows that are not finite or negative: those rows are named and left out.
  std::string text = slurp(kFixtures + "diagnosis/pcie-host-bridge-path/all_reduce.txt");
  const auto row = text.find("\n     1048576 ");
  ASSERT_NE(row, std::string::npos) << text;
  const auto end = text.find('\n', row + 1);
  text.replace(row + 1, end - row - 1, "     1048576        262144     float     sum      -1    -inf   nan    nan      0    -5.0   -1.0   -1.0      0");
  spit(dir / "bad.txt", text);
  r = run_cli("predict " + run + " --link " + (dir / "bad.txt").string() + " --out " + (dir / "p.json").string());
  EXPECT_EQ(r.status, 0) << r.output;
  expect_mentions(r.output, "warning: ");
  expect_mentions(r.output, "'-inf' is not a number");
  expect_mentions(r.output, "is negative; not used");
  const auto j = read_json(dir / "p.json");
  ASSERT_TRUE(j.contains("warnings")) << j.dump().substr(0, 2000);
  EXPECT_FALSE(j["warnings"].empty());
  fs::remove_all(dir);
}

// --- what a killed run left, and what a job leaves running --------------------------------------------------------

TEST(Adversarial, ATemporaryFileOfAKilledWriteIsRemovedByTheNextRun) {
  const auto dir = scratch_dir("adv_stale_tmp");
  // As a run killed mid-write leaves it: the name write_file_atomically uses, a process id that is gone (above
  // pid_max), old enough not to be another run's write in progress.
  const auto stale = dir / ".a.json.999999999.tmp.Ab12Cd";
  const auto live = dir / (".a.json." + std::to_string(getpid()) + ".tmp.Ef34Gh");
  spit(stale, std::string(4096, 'x'));
  spit(live, "in progress");
  const timeval old[2] = {{std::time(nullptr) - 3600, 0}, {std::time(nullptr) - 3600, 0}};
  ASSERT_EQ(utimes(stale.c_str(), old), 0);
  ASSERT_EQ(utimes(live.c_str(), old), 0);
  const auto r = run_cli("analyze " + kFixtures + "diagnosis/pcie-host-bridge-path/all_reduce.txt --out " + (dir / "a.json").string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir / "a.json"));
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));  // its writer (this process) is alive
  fs::remove_all(dir);
}

TEST(Adversarial, ProcessesAJobLeavesRunningAreListed) {
  const auto dir = scratch_dir("adv_left_running");
  const auto keep = dir / "job";
  const auto r = run_cli("profile --keep " + keep.string() +
                         " -- sh -c 'setsid sleep 60 < /dev/null > /dev/null 2>&1 & echo started'");
  EXPECT_EQ(r.status, 0) << r.output;
  expect_mentions(r.output, "still running after the job ended");
  expect_mentions(r.output, "sleep 60");
  expect_mentions(r.output, "still running when it ended: pid ");  // in the report of the job.json too
  const auto job = read_json(keep / "job.json");
  ASSERT_TRUE(job.contains("left_running")) << job.dump();
  ASSERT_EQ(job["left_running"].size(), 1u) << job.dump();
  const int pid = job["left_running"][0]["pid"];
  EXPECT_GT(pid, 1);
  EXPECT_EQ(job["left_running"][0]["stopped"], false);
  EXPECT_LT(job["wall_s"].get<double>(), 5.0);  // the job's own time, not the wait for what it left
  kill(pid, SIGKILL);
  fs::remove_all(dir);
}

TEST(Adversarial, AProcessThatHoldsTheJobsOutputIsStoppedAndNamed) {
  const auto dir = scratch_dir("adv_holds_output");
  const auto keep = dir / "job";
  // The background sleep inherits the job's stdout: profile waits its grace period (10 s), then ends the group.
  const auto r = run_cli("profile --keep " + keep.string() + " -- sh -c 'sleep 45 & echo started'");
  EXPECT_EQ(r.status, 0) << r.output;
  expect_mentions(r.output, "kept its output open");
  const auto job = read_json(keep / "job.json");
  ASSERT_TRUE(job.contains("left_running")) << job.dump();
  ASSERT_EQ(job["left_running"].size(), 1u) << job.dump();
  EXPECT_EQ(job["left_running"][0]["stopped"], true);
  EXPECT_NE(job["left_running"][0]["command"].get<std::string>().find("sleep 45"), std::string::npos);
  EXPECT_LT(job["wall_s"].get<double>(), 5.0);
  fs::remove_all(dir);
}

TEST(Adversarial, AJobThatFailsIsNamedWithItsFirstException) {
  const auto dir = scratch_dir("adv_job_fails");
  const auto r = run_cli("profile --keep " + (dir / "job").string() +
                         " -- python3 -c \"import sys; print('step 1'); raise RuntimeError('planted: boom')\"");
  EXPECT_EQ(r.status, 1) << r.output;  // the job's own status
  expect_mentions(r.output, "the job FAILED (exited with status 1): RuntimeError: planted: boom");
  const auto job = read_json(dir / "job" / "job.json");
  EXPECT_EQ(job["failure"]["first_exception"], "RuntimeError: planted: boom");
  expect_mentions(r.output, "it FAILED: RuntimeError: planted: boom");  // the job's record in the analysis
  fs::remove_all(dir);
}

// --- hostile strings --------------------------------------------------------------------------------------------

TEST(Adversarial, HostileFileNamesNeverReachAShellOrBreakTheJson) {
  const auto dir = scratch_dir("adv_names");
  const auto odd = dir / "$(touch pwned) ; \x1b[31mred\xff.log";
  spit(odd, "NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n");
  const auto r = run_cli("analyze '" + odd.string() + "' --out " + (dir / "a.json").string());
  EXPECT_NE(r.status, 2) << r.output;
  EXPECT_FALSE(fs::exists(fs::current_path() / "pwned"));
  EXPECT_NO_THROW(read_json(dir / "a.json"));
  fs::remove_all(dir);
}

}  // namespace
