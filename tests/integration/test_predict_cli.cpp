// `scalescope predict` as a user runs it: a doctor report and a named link, a profile job directory, a measured
// link file, and the errors for what it cannot use.

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
