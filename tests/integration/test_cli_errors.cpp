// Bad input (issue #2, item 8): one clear message naming the cause, a non-zero exit, no half-written output.

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "cli_runner.h"

using scalescope::testing::read_json;
using scalescope::testing::run_cli;
using scalescope::testing::scratch_dir;
namespace fs = std::filesystem;

namespace {
const std::string kQuick = " --backend cpu --model mlp-1m --batch 4 --warmup-rounds 0 --rounds 1 --steps-per-round 2 -q";

void expect_mentions(const std::string& output, const std::string& what) {
  EXPECT_NE(output.find(what), std::string::npos) << "expected '" << what << "' in:\n" << output;
}

/// Starts a 2-rank CPU train that runs for minutes (no timeout), TMPDIR = `tmp`, its output in tmp/log.txt; the
/// pid is scalescope's own (sh execs it). For the tests that signal it.
pid_t start_long_cpu_train(const fs::path& tmp) {
  const std::string cmd = std::string("exec ") + SCALESCOPE_EXE + " train --world-size 2 --steps-per-round 100000 " +
                          "--timeout 0 --backend cpu --model mlp-1m --batch 4 --warmup-rounds 0 --rounds 1 -q > " +
                          (tmp / "log.txt").string() + " 2>&1";
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("TMPDIR", tmp.c_str(), 1);
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

/// Pids of the processes whose command line names `tmp` (mpirun and the ranks: their job file is under it).
std::vector<std::string> processes_naming(const fs::path& tmp) {
  std::vector<std::string> pids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::ifstream cmdline(e.path() / "cmdline");
    std::string text((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    if (text.find(tmp.string()) != std::string::npos) pids.push_back(e.path().filename().string());
  }
  return pids;
}
}  // namespace

TEST(CliErrors, UnknownFlagIsAUsageError) {
  auto r = run_cli("train --no-such-flag");
  EXPECT_EQ(r.status, 2);
  expect_mentions(r.output, "--no-such-flag");
}

TEST(CliErrors, ATypoGetsDidYouMean) {
  auto r = run_cli("analyse x");
  EXPECT_EQ(r.status, 2);
  expect_mentions(r.output, "did you mean 'scalescope analyze'?");
  r = run_cli("doctor --worldsizes 1,2");
  EXPECT_EQ(r.status, 2);
  expect_mentions(r.output, "'--worldsizes': did you mean '--world-sizes'?");
  r = run_cli(std::string("predict ") + SCALESCOPE_SOURCE_DIR + "/tests/fixtures/diagnosis/compute-contention/doctor.json --link H100:PHB");
  EXPECT_EQ(r.status, 2);
  expect_mentions(r.output, "H100 PCIe, H100 NVL");  // the models whose names hold what was typed, and the path allows
  // A short name the path makes one model: NV18 is the H100 with 18 NVLinks, said as an assumption.
  r = run_cli(std::string("predict ") + SCALESCOPE_SOURCE_DIR + "/tests/fixtures/diagnosis/compute-contention/doctor.json --link H100:NV18");
  EXPECT_EQ(r.status, 0) << r.output;
  expect_mentions(r.output, "'H100' read as 'H100 SXM5'");
}

TEST(CliErrors, MissingCommandIsAUsageError) {
  auto r = run_cli("");
  EXPECT_EQ(r.status, 2);
}

TEST(CliErrors, AValueOfTheWrongTypeNamesWhatTheFlagWants) {
  // CLI11 alone says "Could not convert: --batch = 9999999999", neither why nor what would do.
  for (const std::string value : {"9999999999", "1.5"}) {
    auto r = run_cli("train --batch " + value);
    EXPECT_EQ(r.status, 2) << r.output;
    expect_mentions(r.output, "--batch: '" + value + "' is not a value this flag takes");
    expect_mentions(r.output, "a whole number (no decimal point or exponent) that fits the flag's range");
  }
}

TEST(CliErrors, BadValuesAreUsageErrors) {
  auto zero = run_cli("train --world-size 0");
  EXPECT_EQ(zero.status, 2);
  expect_mentions(zero.output, "--world-size: 0 must be positive");  // not "not in range 0.000000 to 1797…"
  EXPECT_LT(zero.output.size(), 200u) << zero.output;
  auto both = run_cli("doctor --world-sizes 1,2 --max-world-size 1" + kQuick);  // --max-world-size was ignored
  EXPECT_EQ(both.status, 2) << both.output;
  expect_mentions(both.output, "excludes");
  EXPECT_EQ(run_cli("train --backend tpu").status, 2);
  auto r = run_cli("train --backend cpu --model mlp-7t");
  EXPECT_EQ(r.status, 2);
  expect_mentions(r.output, "mlp-10m");  // lists the presets
  r = run_cli("train --world-size 3 --strong" + kQuick);
  EXPECT_EQ(r.status, 2);
  expect_mentions(r.output, "divisible");
  r = run_cli("doctor --world-sizes 2,4" + kQuick);
  EXPECT_EQ(r.status, 2);
  expect_mentions(r.output, "start at 1");
  r = run_cli("doctor --world-sizes 1,2,2" + kQuick);
  EXPECT_EQ(r.status, 2);
  expect_mentions(r.output, "ascending");
  EXPECT_EQ(r.output.find("topology"), std::string::npos) << "refused before the topology probe:\n" << r.output;
  r = run_cli("train --stream-priority comm" + kQuick);  // CPU ranks have no CUDA streams
  EXPECT_EQ(r.status, 2) << r.output;
  expect_mentions(r.output, "needs GPU ranks");
  EXPECT_EQ(run_cli("train --stream-priority nccl" + kQuick).status, 2);
  r = run_cli("train --backend cpu --model tiny-14m --keep-activations --rounds 1 -q");  // a GptCuda setting
  EXPECT_EQ(r.status, 2) << r.output;
  expect_mentions(r.output, "needs GPU ranks");
  r = run_cli("train --cuda-graph" + kQuick);  // CPU ranks issue no CUDA work to capture
  EXPECT_EQ(r.status, 2) << r.output;
  expect_mentions(r.output, "--cuda-graph needs GPU ranks");
  r = run_cli("doctor --backend gpu --model mlp-1m --cuda-graph -q");  // refused before any GPU is looked for
  EXPECT_EQ(r.status, 2) << r.output;
  expect_mentions(r.output, "--cuda-graph needs a GPT model");
  r = run_cli("train --keep-activations" + kQuick);  // the MLP has nothing to recompute
  EXPECT_EQ(r.status, 2) << r.output;
  expect_mentions(r.output, "applies to GPT presets");
  r = run_cli("train --backend cpu --model tiny-14m --attention gemm --rounds 1 -q");  // a GptCuda setting
  EXPECT_EQ(r.status, 2) << r.output;
  expect_mentions(r.output, "--attention gemm needs GPU ranks");
  r = run_cli("doctor --attention gemm" + kQuick);  // mlp-1m: no attention to choose
  EXPECT_EQ(r.status, 2) << r.output;
  expect_mentions(r.output, "mlp-1m is an MLP");
  r = run_cli("train --attention flash" + kQuick);  // given explicitly for an MLP: refused as gemm is
  EXPECT_EQ(r.status, 2) << r.output;
  expect_mentions(r.output, "mlp-1m is an MLP");
  r = run_cli("train --attention sdpa" + kQuick);
  EXPECT_EQ(r.status, 2) << r.output;
  expect_mentions(r.output, "flash");
  const auto dir = scratch_dir("kernel_trace_cpu");
  r = run_cli("train --kernel-trace " + (dir / "traces").string() + kQuick);  // CUPTI records GPU kernels
  EXPECT_EQ(r.status, 2) << r.output;
  expect_mentions(r.output, "--kernel-trace needs GPU ranks");
  EXPECT_FALSE(std::filesystem::exists(dir / "traces")) << "a refused run made its trace directory";
  r = run_cli("train --kernel-trace --no-overlap" + kQuick);  // CLI11 gives the option the next word
  EXPECT_EQ(r.status, 2) << r.output;
  expect_mentions(r.output, "looks like a flag");
  r = run_cli("train --kernel-trace ''" + kQuick);
  EXPECT_EQ(r.status, 2) << r.output;
  expect_mentions(r.output, "--kernel-trace needs a directory name");
  // A GPU run refused later (no GPU here, or --out unwritable) leaves no trace directory either.
  r = run_cli("train --backend gpu --model mlp-1m --kernel-trace " + (dir / "gpu").string() + " -q");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "gpu")) << r.output;
  std::filesystem::remove_all(dir);
}

TEST(CliErrors, NonFiniteNumbersAreUsageErrors) {
  // --timeout inf reached the ranks' job file as JSON null (an internal error); --rounds near INT_MAX overflowed
  // warm-up + timed rounds into an empty sample.
  for (const char* flag : {"--timeout nan", "--timeout inf", "--bucket-cap-mb nan", "--bucket-cap-mb 1e30", "--lr 1e39",
                           "--rounds 2147483647", "--warmup-rounds 2147483647", "--steps-per-round 10000000",
                           "--rounds 10001"}) {
    auto r = run_cli(std::string("train ") + flag + kQuick);
    EXPECT_EQ(r.status, 2) << flag << "\n" << r.output;
    EXPECT_EQ(r.output.find("internal error"), std::string::npos) << flag << "\n" << r.output;
  }
  // A learning rate beyond fp32 is named as given, not as the "inf" it would become.
  auto r = run_cli("train --lr 1e300" + kQuick);
  EXPECT_EQ(r.status, 2) << r.output;
  expect_mentions(r.output, "learning rate 1e+300 is beyond what fp32 holds");
  r = run_cli("train --lr 1e-50" + kQuick);  // would round to 0
  EXPECT_EQ(r.status, 2) << r.output;
  expect_mentions(r.output, "learning rate 1e-50 is below the smallest fp32 number");
}

TEST(CliErrors, DoctorAnswersTrainsWorldSizeFlagWithItsOwn) {
  auto r = run_cli("doctor --world-size 2" + kQuick);
  EXPECT_EQ(r.status, 2) << r.output;
  expect_mentions(r.output, "--world-sizes 1,2");
  EXPECT_EQ(run_cli("doctor -n 2" + kQuick).status, 2);
  for (const char* bad : {"''", "abc", "0", "-3"}) {  // no hint built from a value that cannot be a world size
    r = run_cli(std::string("doctor -n ") + bad + kQuick);
    EXPECT_EQ(r.status, 2) << bad << "\n" << r.output;
    expect_mentions(r.output, "--max-world-size N");
  }
}

TEST(CliErrors, DivergedTrainingKeepsItsResult) {
  // A loss of NaN travels as JSON null from rank 0 to the launcher; the measurement must not be lost.
  auto dir = scratch_dir("diverged");
  auto out = dir / "r.json";
  auto r = run_cli("train --lr 1e30 --out " + out.string() + kQuick);
  EXPECT_EQ(r.status, 0) << r.output;
  expect_mentions(r.output, "diverged");
  ASSERT_TRUE(fs::exists(out));
  EXPECT_TRUE(scalescope::testing::read_json(out).at("losses").back().is_null());
  fs::remove_all(dir);
}

TEST(CliErrors, ModelOrBatchBeyondMemoryIsRefusedBeforeStarting) {
  // These died of std::bad_alloc in the ranks (abort and MPI noise) or as "internal error".
  const std::string quick = " --backend cpu --warmup-rounds 0 --rounds 1 --steps-per-round 2 -q";
  for (const char* flags : {"--model mlp-1m --batch 1000000000", "--batch 4 --hidden 65536 --layers 1024"}) {
    auto r = run_cli(std::string("train ") + flags + quick);
    EXPECT_EQ(r.status, 2) << flags << "\n" << r.output;
    expect_mentions(r.output, "GiB of memory");
    EXPECT_EQ(r.output.find("bad_alloc"), std::string::npos) << r.output;
  }
  auto r = run_cli("doctor --world-sizes 1,2 --batch 4 --hidden 65536 --layers 1024" + quick);
  EXPECT_EQ(r.status, 2) << r.output;
  expect_mentions(r.output, "GiB of memory");
}

TEST(CliErrors, UnreadableDataNamesThePath) {
  auto r = run_cli("train --data /nonexistent/corpus.txt" + kQuick);
  EXPECT_EQ(r.status, 1);
  expect_mentions(r.output, "/nonexistent/corpus.txt");
  expect_mentions(r.output, "synthetic");  // says what to do

  auto dir = scratch_dir("tiny");
  std::ofstream(dir / "tiny.txt") << "too short";
  r = run_cli("train --data " + (dir / "tiny.txt").string() + kQuick);
  EXPECT_EQ(r.status, 1);
  expect_mentions(r.output, "bytes of text");
  fs::remove_all(dir);
}

TEST(CliErrors, BinaryOnlyDirectoryIsRejected) {
  auto dir = scratch_dir("binary");
  std::ofstream(dir / "x.dat", std::ios::binary) << std::string(4096, '\0');
  auto r = run_cli("train --data " + dir.string() + kQuick);
  EXPECT_EQ(r.status, 1);
  expect_mentions(r.output, "0 file(s)");
  expect_mentions(r.output, "1 file skipped as binary");  // says why the file did not count
  fs::remove_all(dir);
}

TEST(CliErrors, DataThatIsNotAFileIsRejectedAtOnce) {
  // A FIFO would block the read for ever; /dev/zero would be read until memory runs out.
  auto dir = scratch_dir("fifo");
  ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0600), 0);
  for (const std::string& data : {(dir / "fifo").string(), std::string("/dev/zero")}) {
    auto r = run_cli("train --data " + data + kQuick);
    EXPECT_EQ(r.status, 1) << r.output;
    expect_mentions(r.output, "not a regular file");
    expect_mentions(r.output, data);
  }
  fs::remove_all(dir);
}

TEST(CliErrors, LargeBinaryFileIsNotReadWhole) {
  // A sparse 64 GiB file of zeros: the binary probe must reject it without reading it into memory.
  auto dir = scratch_dir("sparse");
  { std::ofstream(dir / "disk.img"); }
  fs::resize_file(dir / "disk.img", std::uintmax_t{64} << 30);
  auto r = run_cli("train --data " + (dir / "disk.img").string() + kQuick);
  EXPECT_EQ(r.status, 1) << r.output;
  expect_mentions(r.output, "0 bytes of text");
  fs::remove_all(dir);
}

TEST(CliErrors, OutputInMissingDirectoryFailsBeforeTraining) {
  auto r = run_cli("train --out /nonexistent-dir/r.json" + kQuick);
  EXPECT_EQ(r.status, 1);
  expect_mentions(r.output, "does not exist");
  EXPECT_EQ(r.output.find("round"), std::string::npos) << "must fail before measuring";
}

TEST(CliErrors, EmptyOutputNameIsAUsageError) {
  // `--out "$UNSET"` used to run and write nothing, silently.
  for (const std::string& cmd : {"train" + kQuick, "doctor --world-sizes 1" + kQuick, std::string("comm --backend cpu"),
                                std::string("topo"), std::string("analyze x.json")}) {
    auto r = run_cli(cmd + " --out ''");
    EXPECT_EQ(r.status, 2) << cmd << "\n" << r.output;
    expect_mentions(r.output, "--out: needs a file name");
    // CLI11 gives --out the next word even when it is a flag: the flag would be lost and a file of its name written.
    r = run_cli(cmd + " --out --strong");
    EXPECT_EQ(r.status, 2) << cmd << "\n" << r.output;
    expect_mentions(r.output, "looks like a flag");
  }
}

TEST(CliErrors, TopologyFileErrorsSayWhy) {
  auto r = run_cli("topo --from /nonexistent/topo.txt");
  EXPECT_EQ(r.status, 1);
  expect_mentions(r.output, "No such file or directory");
  r = run_cli("topo --from /tmp");
  EXPECT_EQ(r.status, 1);
  expect_mentions(r.output, "Is a directory");
}

TEST(CliErrors, OutputThatWouldReplaceSomethingElseIsRejected) {
  auto dir = scratch_dir("outkind");
  auto text = dir / "corpus.txt";
  std::ofstream(text) << std::string(4096, 'a');
  auto r = run_cli("train --data " + text.string() + " --out " + text.string() + kQuick);
  EXPECT_EQ(r.status, 2) << r.output;
  expect_mentions(r.output, "training data");
  EXPECT_EQ(fs::file_size(text), 4096u) << "the data must be kept";
  // A FIFO stands for any device here (a regression must not replace /dev/null on a machine run as root).
  auto fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  r = run_cli("doctor --world-sizes 1 --out " + fifo.string() + kQuick);
  EXPECT_EQ(r.status, 1) << r.output;
  expect_mentions(r.output, "not a regular file");
  EXPECT_EQ(r.output.find("world size 1 ("), std::string::npos) << "must fail before measuring";
  EXPECT_TRUE(fs::is_fifo(fifo));
  fs::remove_all(dir);
}

// Every command that reads files refuses an output (--out, analyze's --timeline) that is one of its inputs, before
// reading anything; train's --data case is above.
TEST(CliErrors, OutputThatIsAnInputIsRejected) {
  auto dir = scratch_dir("outin");
  auto input = dir / "in.txt";
  const std::string content = "not read: the command must stop before\n";
  std::ofstream(input) << content;
  auto other = dir / "other.json";
  for (const std::string& args :
       {"analyze " + input.string() + " --out " + input.string(),
        "analyze " + input.string() + " --timeline " + input.string(),
        "analyze " + input.string() + " --out " + (dir / "." / "in.txt").string(),  // another spelling
        "analyze " + input.string() + " --out " + other.string() + " --timeline " + other.string(),
        // Neither exists yet, one relative: "cd DIR && analyze … --out other.json --timeline ./other.json".
        "analyze " + input.string() + " --out " + other.string() + " --timeline " + (dir / "." / "other.json").string(),
        "topo --from " + input.string() + " --out " + input.string(),
        "comm --from " + input.string() + " --out " + input.string()}) {
    auto r = run_cli(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("would replace"), std::string::npos) << args << "\n" << r.output;
    std::ifstream in(input);
    EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), content) << args;
    EXPECT_FALSE(fs::exists(other)) << args;
  }
  fs::remove_all(dir);
}

TEST(CliErrors, GpuBackendWithoutEnoughGpus) {
  // More ranks than GPUs: on a CPU-only machine (and on any machine with fewer than 64 GPUs).
  // No GPU at all is the machine's fault (exit 1); too few is the command line's (exit 2).
  auto r = run_cli("train --backend gpu --world-size 64 --model mlp-1m -q");
  // A CPU-only build says so and how to rebuild; a CUDA build on a machine without a GPU says there is none.
  const bool cpu_only = r.output.find("this scalescope was built without CUDA") != std::string::npos;
  const bool none = cpu_only || r.output.find("no GPU is usable here") != std::string::npos;
  EXPECT_EQ(r.status, none ? 1 : 2) << r.output;
  expect_mentions(r.output, none ? "use --backend cpu" : "needs 64 GPUs");
  if (cpu_only) expect_mentions(r.output, "rebuild where nvcc and NCCL are installed");
}

TEST(CliErrors, DyingRankStopsTheJobAndWritesNothing) {
  auto dir = scratch_dir("death");
  for (const char* kind : {"exit", "abort"}) {
    auto out = dir / (std::string(kind) + ".json");
    auto r = run_cli("train --world-size 2 --internal-fault 1:1:" + std::string(kind) + " --out " + out.string() + kQuick);
    EXPECT_EQ(r.status, 1) << r.output;
    expect_mentions(r.output, "scalescope: error:");
    expect_mentions(r.output, "nothing was written");
    EXPECT_FALSE(fs::exists(out)) << kind;
  }
  fs::remove_all(dir);
}

TEST(CliErrors, HangingRankIsStoppedByTheTimeout) {
  auto dir = scratch_dir("hang");
  auto out = dir / "r.json";
  auto r = run_cli("train --world-size 2 --internal-fault 0:1:hang --timeout 5 --out " + out.string() + kQuick);
  EXPECT_EQ(r.status, 1) << r.output;
  expect_mentions(r.output, "timeout");
  expect_mentions(r.output, "raise --timeout");  // not "mpirun's message above names the failed rank"
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(dir);
}

TEST(CliErrors, SigtermStopsTheRanksAndCleansUp) {
  // SIGTERM to scalescope alone left mpirun and the ranks running (for ever with --timeout 0) and the
  // hand-over directory in TMPDIR behind.
  auto tmp = scratch_dir("sigterm");
  const pid_t pid = start_long_cpu_train(tmp);
  ASSERT_GE(pid, 0);
  auto job_dir_exists = [&] {
    for (const auto& e : fs::directory_iterator(tmp))
      if (e.path().filename().string().starts_with("scalescope-job-")) return true;
    return false;
  };
  for (int i = 0; i < 100 && !job_dir_exists(); ++i) usleep(100000);
  sleep(2);  // let mpirun start the ranks
  kill(pid, SIGTERM);
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 300 && done == 0; ++i, usleep(100000)) done = waitpid(pid, &status, WNOHANG);
  if (done == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "scalescope did not exit within 30 s of SIGTERM";
  }
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 1);
  std::ifstream in(tmp / "log.txt");
  std::string output((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  expect_mentions(output, "interrupted by signal");
  EXPECT_FALSE(job_dir_exists()) << "the hand-over directory was left behind";
  for (const auto& p : processes_naming(tmp)) ADD_FAILURE() << "left running: pid " << p;  // no rank survives
  fs::remove_all(tmp);
}

TEST(CliErrors, ACtrlCToTheWholeGroupLeavesNoOpenMpiFilesBehind) {
  // A terminal's Ctrl-C (or `timeout -s INT`) reaches scalescope, mpirun and the ranks at once: mpirun left its
  // session files (about 8 MB, TMPDIR/ompi.HOST.UID) behind. They now live in the job directory and go with it.
  auto tmp = scratch_dir("sigint_group");
  const std::string cmd = std::string("exec ") + SCALESCOPE_EXE + " train --world-size 2 --steps-per-round 100000 " +
                          "--timeout 0 --backend cpu --model mlp-1m --batch 4 --warmup-rounds 0 --rounds 1 -q > " +
                          (tmp / "log.txt").string() + " 2>&1";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setpgid(0, 0);  // its own group, as a terminal's foreground job: the test is not in it
    setenv("TMPDIR", tmp.c_str(), 1);
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  auto entry_starting = [&](const std::string& prefix) {
    for (const auto& e : fs::directory_iterator(tmp))
      if (e.path().filename().string().starts_with(prefix)) return true;
    return false;
  };
  for (int i = 0; i < 100 && !entry_starting("scalescope-job-"); ++i) usleep(100000);
  sleep(3);  // mpirun and the ranks are up
  kill(-pid, SIGINT);
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 300 && done == 0; ++i, usleep(100000)) done = waitpid(pid, &status, WNOHANG);
  if (done == 0) {
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "scalescope did not exit within 30 s of SIGINT";
  }
  usleep(500000);
  EXPECT_FALSE(entry_starting("scalescope-job-")) << "the hand-over directory was left behind";
  EXPECT_FALSE(entry_starting("ompi.")) << "Open MPI's session files were left behind";
  fs::remove_all(tmp);
}

TEST(CliErrors, SigkillOfScalescopeStillStopsTheRanks) {
  // SIGKILL (or the OOM killer) gives scalescope no chance to stop its ranks: mpirun and both ranks ran on, with
  // no timeout watching them. They now get SIGTERM when it dies (PR_SET_PDEATHSIG). Its hand-over directory in
  // TMPDIR stays behind, as nothing is left to remove it, until the next run finds its owner gone.
  auto tmp = scratch_dir("sigkill");
  const pid_t pid = start_long_cpu_train(tmp);
  ASSERT_GE(pid, 0);
  auto survivors = [&] { return processes_naming(tmp); };
  for (int i = 0; i < 100 && survivors().size() < 2; ++i) usleep(100000);
  sleep(2);  // let mpirun start the ranks
  ASSERT_FALSE(survivors().empty()) << "the ranks never started";
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  std::vector<std::string> left = survivors();
  for (int i = 0; i < 150 && !left.empty(); ++i, usleep(100000)) left = survivors();
  EXPECT_TRUE(left.empty()) << "still running 15 s after scalescope was killed: " << left.size() << " process(es), pid "
                            << (left.empty() ? "" : left[0]);
  for (const auto& p : left) kill(std::stoi(p), SIGKILL);
  const auto job_dirs = [&] {
    int n = 0;
    for (const auto& e : fs::directory_iterator(tmp)) n += e.path().filename().string().rfind("scalescope-job-", 0) == 0;
    return n;
  };
  EXPECT_EQ(job_dirs(), 1) << "the killed run's hand-over directory";
  auto next = run_cli("train" + kQuick, {{"TMPDIR", tmp.string()}});
  EXPECT_EQ(next.status, 0) << next.output;
  EXPECT_EQ(job_dirs(), 0) << "the next run left the killed run's directory (or its own)";
  fs::remove_all(tmp);
}

TEST(CliErrors, ALauncherVariableLeftInTheEnvironmentIsNamed) {
  // A shell opened by `srun --pty bash` keeps PMIX_RANK: scalescope took itself for one MPI rank of world size 1.
  auto r = run_cli("train --world-size 2" + kQuick, {{"PMIX_RANK", "0"}});
  EXPECT_EQ(r.status, 1) << r.output;
  expect_mentions(r.output, "1 ranks were started but the job asks for world size 2");
  expect_mentions(r.output, "because PMIX_RANK=0 is set");
}

TEST(CliErrors, UnusableTmpdirIsNamed) {
  auto r = run_cli("train" + kQuick, {{"TMPDIR", "/nonexistent-scalescope-tmp"}});
  EXPECT_EQ(r.status, 1) << r.output;
  expect_mentions(r.output, "TMPDIR");
  EXPECT_EQ(r.output.find("internal error"), std::string::npos) << r.output;
}

TEST(CliErrors, BadInternalJobFileIsAnError) {
  auto dir = scratch_dir("job");
  std::ofstream(dir / "truncated.json") << "{";
  std::ofstream(dir / "wrong.json") << R"({"config": 5})";
  for (const auto& job : {dir / "truncated.json", dir / "wrong.json", dir}) {
    auto r = run_cli("train --internal-job " + job.string());
    EXPECT_EQ(r.status, 1) << r.output;
    expect_mentions(r.output, "is not a scalescope job");
    EXPECT_EQ(r.output.find("internal error"), std::string::npos) << r.output;
  }
  fs::remove_all(dir);
}

TEST(CliErrors, DoctorKeepsWhatWasMeasuredWhenAWorldSizeFails) {
  auto dir = scratch_dir("doctor");
  auto out = dir / "d.json";
  // Rank 1 exists only at world size 2: world size 1 is measured, world size 2 dies.
  auto r = run_cli("doctor --world-sizes 1,2 --internal-fault 1:0:exit --out " + out.string() + kQuick);
  EXPECT_EQ(r.status, 1) << r.output;
  expect_mentions(r.output, "incomplete: world size 2 failed");
  // On stderr as well, as every failed run says it (the report line above is on stdout, which -q keeps too).
  expect_mentions(r.output, "scalescope: error: doctor: world size 2 failed");
  expect_mentions(r.output, "what to do: the world sizes measured before it are reported");
  ASSERT_TRUE(fs::exists(out));
  auto j = scalescope::testing::read_json(out);
  EXPECT_FALSE(j.at("complete").get<bool>());
  EXPECT_EQ(j.at("points").size(), 1u);
  fs::remove_all(dir);
}

TEST(CliErrors, AbsurdCpuWorldSizesAreRefusedBeforeAnythingRuns) {
  // Thousands of MPI ranks on a few cores exhaust Open MPI's pipes and hang; refused up front, exit 2.
  for (const std::string& cmd : {"train --world-size 100000" + kQuick, "doctor --world-sizes 1,100000" + kQuick,
                                std::string("comm --backend cpu -g 100000 -b 8 -e 8 -q")}) {
    auto r = run_cli(cmd);
    EXPECT_EQ(r.status, 2) << cmd << "\n" << r.output;
    expect_mentions(r.output, "100000 CPU ranks on");
    expect_mentions(r.output, "per core");
  }
}

TEST(CliErrors, DoctorThatMeasuredNothingWritesNothing) {
  auto dir = scratch_dir("doctor-nothing");
  auto out = dir / "d.json";
  auto r = run_cli("doctor --world-sizes 1,2 --data /nonexistent/corpus.txt --out " + out.string() + kQuick);
  EXPECT_EQ(r.status, 1) << r.output;
  expect_mentions(r.output, "/nonexistent/corpus.txt");
  expect_mentions(r.output, "nothing was written");
  EXPECT_FALSE(fs::exists(out)) << "a report with no measurement was written";
  fs::remove_all(dir);
}

TEST(CliErrors, TokenIdsBeyondTheVocabularyAreRefused) {
  // A token file for a 50k vocabulary cannot train the byte-level MLP (vocabulary 256).
  auto dir = scratch_dir("vocab");
  std::vector<std::uint16_t> tokens(4096, 300);
  std::ofstream(dir / "t.bin", std::ios::binary).write(reinterpret_cast<const char*>(tokens.data()), 8192);
  auto r = run_cli("train --data " + (dir / "t.bin").string() + kQuick);
  EXPECT_EQ(r.status, 1) << r.output;  // bad data, as the README says: a failed run
  expect_mentions(r.output, "vocabulary of 256");
  // A rank started by a launcher (mpirun, srun: here its SCALESCOPE_* variables) has no pre-flight; it checked no
  // vocabulary and failed at its first step with advice about the data loader.
  auto rank = run_cli("train --data " + (dir / "t.bin").string() + kQuick,
                      {{"SCALESCOPE_RANK", "0"}, {"SCALESCOPE_WORLD_SIZE", "1"}});
  EXPECT_EQ(rank.status, 1) << rank.output;
  expect_mentions(rank.output, "the data holds token id 300 but mlp-1m has a vocabulary of 256");
  fs::remove_all(dir);
}

TEST(CliErrors, TextShorterThanOneBatchIsNamedInTheDataLine) {
  auto dir = scratch_dir("short_text");
  std::ofstream(dir / "s.txt") << std::string(300, 'a');
  auto r = run_cli("train --data " + (dir / "s.txt").string() + " --backend cpu --model mlp-1m --batch 16 "
                   "--warmup-rounds 0 --rounds 1 --steps-per-round 1");
  EXPECT_EQ(r.status, 0) << r.output;
  expect_mentions(r.output, "shorter than one global batch");
  fs::remove_all(dir);
}

TEST(CliErrors, AReportThatCannotReachStdoutFailsTheRun) {
  // /dev/full and a closed stdout: exit 1 with the reason on stderr, never a silent 0 (nor the report written into
  // a file that took stdout's descriptor number).
  const auto dir = scratch_dir("stdout_errors");
  const auto err = dir / "err.txt";
  for (const char* redirect : {"> /dev/full", ">&-"}) {
    for (const std::string& args : std::vector<std::string>{"topo", "--help", "topo --out " + (dir / "t.json").string()}) {
      const std::string cmd = std::string(SCALESCOPE_EXE) + " " + args + " " + std::string(redirect) + " 2> " + err.string();
      const int raw = std::system(cmd.c_str());
      EXPECT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) == 1) << cmd << ": " << raw;
      std::ifstream in(err);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      EXPECT_NE(text.find("the report could not be written to standard output"), std::string::npos) << cmd << ": " << text;
    }
  }
  // The --out result holds JSON only, not the report printed while stdout was closed.
  const auto j = read_json(dir / "t.json");
  EXPECT_TRUE(j.contains("schema")) << j.dump().substr(0, 200);
  std::filesystem::remove_all(dir);
}

TEST(CliErrors, AnOutFileThatStdoutAlsoWritesIsRefusedBeforeTheRun) {
  // `--out same.json > same.json`: the report and the result in one file. Refused at once (exit 2), naming the
  // redirection, not read at the end as "replaced by another process".
  const auto dir = scratch_dir("stdout_is_out");
  const auto same = dir / "same.json", err = dir / "err.txt";
  const std::string cmd = std::string(SCALESCOPE_EXE) + " topo --out " + same.string() + " > " + same.string() +
                          " 2> " + err.string();
  const int raw = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) == 2) << raw;
  std::ifstream in(err);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("is where standard output goes"), std::string::npos) << text;
  std::filesystem::remove_all(dir);
}

TEST(CliErrors, ADataPathThatIsNotUtf8IsNamed) {
  // A Latin-1 file name: it failed inside the JSON job file as "internal error: [json.exception.type_error.316]".
  const auto dir = scratch_dir("latin1");
  const auto path = dir / "donn\xe9" "es.txt";
  std::ofstream(path) << "some text to train on\n";
  const auto r = run_cli("train --backend cpu --model mlp-1m -q --data '" + path.string() + "'");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("is not valid UTF-8"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("internal error"), std::string::npos) << r.output;
  std::filesystem::remove_all(dir);
}

TEST(CliErrors, ALowSoftLimitOnOpenFilesDoesNotHangTheCpuRanks) {
  // ulimit -Sn 32: mpirun ran out of pipes and hung until the --timeout, read as a hang in a collective.
  const std::string cmd = "ulimit -Sn 32 && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " +
                          std::string(SCALESCOPE_EXE) + " train --timeout 60" + kQuick + " --world-size 2 > /dev/null 2>&1";
  const int raw = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) == 0) << raw;
}
