// The GPU backend as a run-time module (issue #29): the binary links no CUDA library, the commands that read
// files never load the module, and GPU commands name a missing or broken module and what to do.

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "integration/cli_runner.h"

namespace {

using scalescope::testing::run_cli;
using scalescope::testing::scratch_dir;
namespace fs = std::filesystem;

const std::string kFixtures = std::string(SCALESCOPE_SOURCE_DIR) + "/tests/fixtures/";

std::string command_output(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    pclose(p);
  }
  return out;
}

bool cpu_only_build() { return run_cli("--version").output.find("built without CUDA") != std::string::npos; }

TEST(GpuModule, TheBinaryNeedsNoCudaLibrary) {
  const std::string dynamic = command_output("readelf -d " + std::string(SCALESCOPE_EXE) + " 2>&1");
  if (dynamic.find("NEEDED") == std::string::npos) GTEST_SKIP() << "readelf (binutils) did not list the binary's libraries";
  for (const char* lib : {"libcuda", "libcudart", "libcublas", "libnccl", "libcupti", "libcudnn", "libnvrtc"})
    EXPECT_EQ(dynamic.find(lib), std::string::npos) << lib << " is linked into the binary:\n" << dynamic;
}

TEST(GpuModule, FileCommandsNeverLoadTheModule) {
  // A module that cannot load would fail any command that touched it: these run as on a laptop without CUDA.
  const auto dir = scratch_dir("gpu_module_files");
  const std::string broken = (dir / "broken.so").string();
  std::ofstream(broken) << "not a shared object\n";
  const std::vector<std::pair<std::string, std::string>> env{{"SCALESCOPE_GPU_MODULE", broken}};
  const auto a = run_cli("analyze " + kFixtures + "diagnosis/comm-bound-small-model/timings.md", env);
  EXPECT_EQ(a.status, 0) << a.output;
  const auto p = run_cli("predict " + kFixtures + "diagnosis/compute-contention/doctor.json --link H200:NV18 --gpus 2", env);
  EXPECT_EQ(p.status, 0) << p.output;
  const auto v = run_cli("--version", env);
  EXPECT_EQ(v.status, 0) << v.output;
  fs::remove_all(dir);
}

TEST(GpuModule, AMissingModuleIsNamedWithWhatToDo) {
  if (cpu_only_build()) GTEST_SKIP() << "a CPU-only build says it was built without CUDA instead";
  const auto r = run_cli("train --backend gpu --model tiny-14m", {{"SCALESCOPE_GPU_MODULE", "/nonexistent/libscalescope-gpu.so"}});
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/libscalescope-gpu.so"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("SCALESCOPE_GPU_MODULE"), std::string::npos) << r.output;  // the remedy
}

TEST(GpuModule, AModuleThatCannotLoadIsNamedWithTheLoadersReason) {
  if (cpu_only_build()) GTEST_SKIP() << "a CPU-only build says it was built without CUDA instead";
  const auto dir = scratch_dir("gpu_module_broken");
  const std::string broken = (dir / "libscalescope-gpu.so").string();
  std::ofstream(broken) << "not a shared object\n";
  const auto r = run_cli("comm --backend gpu -g 1 -b 8 -e 8", {{"SCALESCOPE_GPU_MODULE", broken}});
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("could not be loaded"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(broken), std::string::npos) << r.output;
  fs::remove_all(dir);
}

TEST(GpuModule, AModuleOfAnotherBuildIsRefused) {
  if (cpu_only_build()) GTEST_SKIP() << "a CPU-only build says it was built without CUDA instead";
  // Any shared object without the entry point stands for a module of another build.
  const std::string other = command_output("ls /usr/lib/x86_64-linux-gnu/libz.so.1 /lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1");
  if (other.empty()) GTEST_SKIP() << "no libz.so.1 to stand for a foreign module";
  const std::string path = other.substr(0, other.find('\n'));
  const auto r = run_cli("train --backend gpu --model tiny-14m", {{"SCALESCOPE_GPU_MODULE", path}});
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("is not this scalescope's GPU module"), std::string::npos) << r.output;
}

TEST(GpuModule, TheBuiltModuleLoadsAndAnswers) {
  if (cpu_only_build()) GTEST_SKIP() << "a CPU-only build has no GPU module";
  // topo asks the module for the CUDA runtime's view: its version is in the answer whether or not a GPU is here.
  const auto r = run_cli("topo");
  EXPECT_NE(r.output.find("CUDA: CUDA runtime"), std::string::npos) << r.output;
}

}  // namespace
