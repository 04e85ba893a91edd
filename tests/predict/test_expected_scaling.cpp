// `predict --model NAME --link GPU:PATH` with no run (predict/expected_scaling.h): the bands follow the physics they
// state — more GPUs, more all-reduce; a slower link, a larger comm ratio; a larger batch, a smaller one — and names the
// tables lack are refused with the closest names.
#include <gtest/gtest.h>

#include "core/error.h"
#include "predict/expected_scaling.h"

namespace scalescope::predict {
namespace {

TEST(ExpectedScaling, BandsFollowLinkBatchAndGpuCount) {
  const auto nv = expect_scaling("resnet50", "A100 SXM4 80GB:NV12", {2, 8}, 64, knowledge::Precision::mixed16);
  const auto pcie = expect_scaling("resnet50", "A100 SXM4 80GB:SYS", {2, 8}, 64, knowledge::Precision::mixed16);
  ASSERT_EQ(nv.rows.size(), 2u);
  EXPECT_EQ(nv.rows[0].gpus, 2);
  // 2(N−1)/N grows from 1 at 2 GPUs to 1.75 at 8.
  EXPECT_NEAR(nv.rows[1].step.allreduce_s.high / nv.rows[0].step.allreduce_s.high, 1.75, 1e-9);
  EXPECT_GT(pcie.rows[0].step.comm_ratio.low, 5 * nv.rows[0].step.comm_ratio.low);
  const auto big = expect_scaling("resnet50", "A100 SXM4 80GB:SYS", {2}, 256, knowledge::Precision::mixed16);
  EXPECT_NEAR(big.rows[0].step.comm_ratio.high * 4, pcie.rows[0].step.comm_ratio.high, 1e-9);
  const auto json = expected_json(nv);
  EXPECT_EQ(json.at("schema"), "scalescope.expect/1");
  EXPECT_EQ(json.at("rows").size(), 2u);
  EXPECT_NE(render_expected(nv).find("comm ratio"), std::string::npos);
}

TEST(ExpectedScaling, BetweenNodesThroughOnePort) {
  const auto e = expect_scaling("gpt2", "A100 SXM4 80GB:net:10", {2}, std::nullopt, knowledge::Precision::mixed16);
  EXPECT_LE(e.busbw.high, 10 / 8.0 * 2);  // at most the port's rate (× 2 on exactly two nodes: NCCL's tree)
  EXPECT_GT(e.rows[0].step.comm_ratio.high, 1.0);
}

TEST(ExpectedScaling, UnknownNamesAreRefusedWithTheClosest) {
  try {
    (void)expect_scaling("resnet-51", "A100 SXM4 80GB:NV12", {2}, std::nullopt, knowledge::Precision::mixed16);
    FAIL() << "no throw";
  } catch (const core::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)expect_scaling("resnet50", "H100:PHB", {2}, std::nullopt, knowledge::Precision::mixed16), core::UsageError);
  // "H100" with 18 NVLinks is one model of the table: taken, and said.
  const auto e = expect_scaling("resnet50", "H100:NV18", {2}, std::nullopt, knowledge::Precision::mixed16);
  ASSERT_NE(e.gpu, nullptr);
  EXPECT_EQ(e.gpu->model, "H100 SXM5");
  ASSERT_FALSE(e.assumptions.empty());
  EXPECT_NE(e.assumptions.front().find("'H100' read as 'H100 SXM5'"), std::string::npos) << e.assumptions.front();
  EXPECT_THROW((void)expect_scaling("resnet50", "A100 SXM4 80GB:NVX", {2}, std::nullopt, knowledge::Precision::mixed16), core::UsageError);
  EXPECT_THROW((void)expect_scaling("resnet50", "A100 SXM4 80GB:NV12", {1}, std::nullopt, knowledge::Precision::mixed16), core::UsageError);
  EXPECT_THROW((void)expect_scaling("resnet50", "A100 SXM4 80GB:NV12", {2}, -4, knowledge::Precision::mixed16), core::UsageError);
}

}  // namespace
}  // namespace scalescope::predict
