// `scalescope predict` as a user runs it: a doctor report and a named link, a profile job directory, a measured
// link file, and the errors for what it cannot use.

#include <fstream>

#include <gtest/gtest.h>

#include "integration/cli_runner.h"

namespace {

using scalescope::testing::read_json;
using scalescope::testing::run_cli;
using scalescope::testing::scratch_dir;
namespace fs = std::filesystem;

const std::string kFixtures = std::string(SCALESCOPE_SOURCE_DIR) + "/tests/fixtures/";

TEST(PredictCli, DoctorReportWithANamedLinkWritesPredictionsBesideTheMeasuredStep) {
  const auto dir = scratch_dir("predict_doctor");
  const auto r = run_cli("predict " + kFixtures + "diagnosis/compute-contention/doctor.json --link H200:NV18 --gpus 2,4,1024 "
                         "--what-if --out " + (dir / "p.json").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("measured 2916.29 ms"), std::string::npos) << r.output;  // the report's own 2-rank point
  const auto j = read_json(dir / "p.json");
  EXPECT_EQ(j["schema"], "scalescope.predict/1");
  ASSERT_EQ(j["predictions"].size(), 3u);
  EXPECT_EQ(j["predictions"][2]["ranks"], 1024);
  EXPECT_GT(j["what_if"].size(), 5u);
  EXPECT_FALSE(j["assumptions"].empty());
  fs::remove_all(dir);
}

TEST(PredictCli, ProfileJobDirectoryAndAMeasuredLinkRecord) {
  const auto r = run_cli("predict " + kFixtures + "profile-h200/none --link " + kFixtures +
                         "nccl-plugin-h200/nccl-profile.vm.1202.832138c290e9438c.r0.jsonl --gpus 2");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("one PyTorch DDP rank"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("all-reduce measured in"), std::string::npos) << r.output;
}

TEST(PredictCli, ATraceAloneWithItsBandInTheTerminalJsonAndHtml) {
  const auto dir = scratch_dir("predict_trace");
  const auto r = run_cli("predict " + kFixtures + "profile-h200/none/trace.rank0.json.gz --link H200:NV18 --gpus 2,4 --out " +
                         (dir / "p.json").string() + " --html " + (dir / "p.html").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("a PyTorch profiler trace of one DDP rank"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("band ms"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("band: the link's all-reduce times ±15 %"), std::string::npos) << r.output;
  const auto j = read_json(dir / "p.json");
  ASSERT_EQ(j["predictions"].size(), 2u);
  for (const auto& p : j["predictions"]) {
    ASSERT_TRUE(p.contains("step_ms_band")) << p.dump();
    EXPECT_LT(p["step_ms_band"][0].get<double>(), p["step_ms"].get<double>());
    EXPECT_GT(p["step_ms_band"][1].get<double>(), p["step_ms"].get<double>());
  }
  EXPECT_DOUBLE_EQ(j["band"]["link_spread"].get<double>(), 0.15);
  std::ifstream html(dir / "p.html");
  const std::string page((std::istreambuf_iterator<char>(html)), std::istreambuf_iterator<char>());
  EXPECT_NE(page.find("Predicted step, with its band"), std::string::npos);
  fs::remove_all(dir);
}

TEST(PredictCli, WhatItCannotUseIsAClearError) {
  auto r = run_cli("predict " + kFixtures + "diagnosis/no-overlap/train.json --link H200:NV18");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("world size 2, not 1"), std::string::npos) << r.output;
  r = run_cli("predict " + kFixtures + "diagnosis/compute-contention/doctor.json --link nvlink");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("GPU:PATH"), std::string::npos) << r.output;
  r = run_cli("predict " + kFixtures + "diagnosis/compute-contention/doctor.json --link " + kFixtures + "diagnosis/no-overlap/train.json");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("not an all-reduce measurement"), std::string::npos) << r.output;
  r = run_cli("predict " + kFixtures + "diagnosis --link H200:NV18");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("capture.rank0.json"), std::string::npos) << r.output;
  r = run_cli("predict " + kFixtures + "diagnosis/compute-contention/doctor.json --link H200:NV18 --gpus 16 --network net:25");
  EXPECT_EQ(r.status, 2) << r.output;  // a network without --gpus-per-node
}

}  // namespace
