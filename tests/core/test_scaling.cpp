#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "core/error.h"
#include "core/scaling.h"

using scalescope::core::Error;
using scalescope::core::parse_scaling_mode;
using scalescope::core::scaling_metrics;
using scalescope::core::ScalingMetrics;
using scalescope::core::ScalingMode;
using scalescope::core::ScalingSample;
using scalescope::core::UsageError;

namespace {

// One rank: 100 ms steps, 95 ms of compute, no communication, 4096 tokens.
ScalingSample baseline() { return {1, 0.100, 0.095, 0.0, 0, 0.0, 4096}; }

// Four ranks, weak scaling: 4 × 4096 tokens, 125 ms steps, 3 all-reduces taking 40 ms, 10 ms of it exposed.
ScalingSample weak4() { return {4, 0.125, 0.095, 0.040, 3, 0.010, 4 * 4096}; }

// Four ranks, strong scaling: 4096 tokens shared, 40 ms steps.
ScalingSample strong4() { return {4, 0.040, 0.024, 0.012, 3, 0.006, 4096}; }

template <class F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected core::Error";
  return {};
}

}  // namespace

TEST(ScalingMode, RoundTripsAndRejectsUnknownText) {
  EXPECT_EQ(to_string(ScalingMode::weak), "weak");
  EXPECT_EQ(to_string(ScalingMode::strong), "strong");
  EXPECT_EQ(parse_scaling_mode("weak"), ScalingMode::weak);
  EXPECT_EQ(parse_scaling_mode("strong"), ScalingMode::strong);
  EXPECT_THROW(parse_scaling_mode("Weak"), UsageError);
  EXPECT_THROW(parse_scaling_mode(""), UsageError);
  EXPECT_NE(error_message([] { parse_scaling_mode("linear"); }).find("'linear'"), std::string::npos);
}

TEST(ScalingMetrics, WeakScalingFormulas) {
  const ScalingMetrics m = scaling_metrics(ScalingMode::weak, baseline(), weak4());
  EXPECT_DOUBLE_EQ(m.efficiency, 0.100 / 0.125);  // T1 / TN = 0.8
  EXPECT_DOUBLE_EQ(m.speedup, 4 * 0.100 / 0.125);  // N · T1 / TN = 3.2
  EXPECT_NEAR(m.speedup, 3.2, 1e-12);
  EXPECT_DOUBLE_EQ(m.comm_ratio, 0.040 / 0.095);
  EXPECT_DOUBLE_EQ(m.tokens_per_second, 16384 / 0.125);  // 131072 tokens/s
  EXPECT_DOUBLE_EQ(m.overlap_fraction, 0.75);  // 1 − 10 ms / 40 ms
}

TEST(ScalingMetrics, StrongScalingFormulas) {
  const ScalingMetrics m = scaling_metrics(ScalingMode::strong, baseline(), strong4());
  EXPECT_DOUBLE_EQ(m.speedup, 0.100 / 0.040);  // T1 / TN = 2.5
  EXPECT_NEAR(m.speedup, 2.5, 1e-12);
  EXPECT_DOUBLE_EQ(m.efficiency, 0.100 / 0.040 / 4);  // speedup / N = 0.625
  // Divided by the single-rank compute time (95 ms), not this configuration's 24 ms.
  EXPECT_DOUBLE_EQ(m.comm_ratio, 0.012 / 0.095);
  EXPECT_DOUBLE_EQ(m.tokens_per_second, 4096 / 0.040);
  EXPECT_DOUBLE_EQ(m.overlap_fraction, 0.5);
}

TEST(ScalingMetrics, SingleRankAgainstItselfIsIdeal) {
  for (auto mode : {ScalingMode::weak, ScalingMode::strong}) {
    const ScalingMetrics m = scaling_metrics(mode, baseline(), baseline());
    EXPECT_DOUBLE_EQ(m.speedup, 1.0);
    EXPECT_DOUBLE_EQ(m.efficiency, 1.0);
    EXPECT_EQ(m.comm_ratio, 0.0);
    EXPECT_EQ(m.overlap_fraction, 1.0);  // nothing to hide
    EXPECT_DOUBLE_EQ(m.tokens_per_second, 40960.0);
  }
}

TEST(ScalingMetrics, SuperlinearResultsAreReportedNotClamped) {
  ScalingSample s = strong4();
  s.step_seconds = 0.020;
  const ScalingMetrics m = scaling_metrics(ScalingMode::strong, baseline(), s);
  EXPECT_DOUBLE_EQ(m.speedup, 5.0);
  EXPECT_DOUBLE_EQ(m.efficiency, 1.25);
}

TEST(ScalingMetrics, OverlapIsClampedToUnitInterval) {
  ScalingSample s = weak4();
  s.exposed_comm_seconds = 0.0;
  EXPECT_EQ(scaling_metrics(ScalingMode::weak, baseline(), s).overlap_fraction, 1.0);
  s.exposed_comm_seconds = 0.040;
  EXPECT_EQ(scaling_metrics(ScalingMode::weak, baseline(), s).overlap_fraction, 0.0);
  s.exposed_comm_seconds = 0.055;  // gaps between all-reduces make the exposed span longer than their sum
  EXPECT_EQ(scaling_metrics(ScalingMode::weak, baseline(), s).overlap_fraction, 0.0);
  s.all_reduce_seconds = 0.0;
  s.exposed_comm_seconds = 0.0;
  EXPECT_EQ(scaling_metrics(ScalingMode::weak, baseline(), s).overlap_fraction, 1.0);
}

TEST(ScalingMetrics, RejectsMultiRankBaseline) {
  ScalingSample b = baseline();
  b.world_size = 2;
  EXPECT_NE(error_message([&] { scaling_metrics(ScalingMode::weak, b, weak4()); }).find("world size 2"),
            std::string::npos);
}

TEST(ScalingMetrics, RejectsNonPositiveOrNonFiniteTimes) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {0.0, -0.1, nan, inf}) {
    ScalingSample s = weak4();
    s.step_seconds = bad;
    EXPECT_THROW(scaling_metrics(ScalingMode::weak, baseline(), s), Error) << bad;
    ScalingSample b = baseline();
    b.step_seconds = bad;
    EXPECT_THROW(scaling_metrics(ScalingMode::weak, b, weak4()), Error) << bad;
    b = baseline();
    b.compute_seconds = bad;
    EXPECT_THROW(scaling_metrics(ScalingMode::weak, b, weak4()), Error) << bad;
  }
  for (double bad : {-0.001, nan, inf}) {
    ScalingSample s = weak4();
    s.all_reduce_seconds = bad;
    EXPECT_THROW(scaling_metrics(ScalingMode::weak, baseline(), s), Error) << bad;
    s = weak4();
    s.exposed_comm_seconds = bad;
    EXPECT_THROW(scaling_metrics(ScalingMode::weak, baseline(), s), Error) << bad;
  }
  ScalingSample s = weak4();
  s.step_seconds = 0.0;
  EXPECT_NE(error_message([&] { scaling_metrics(ScalingMode::weak, baseline(), s); }).find("sample step_seconds"),
            std::string::npos);
}

TEST(ScalingMetrics, RejectsInconsistentCounts) {
  ScalingSample s = weak4();
  s.world_size = 0;
  EXPECT_THROW(scaling_metrics(ScalingMode::weak, baseline(), s), Error);
  s = weak4();
  s.all_reduce_count = -1;
  EXPECT_THROW(scaling_metrics(ScalingMode::weak, baseline(), s), Error);
  s = weak4();
  s.all_reduce_count = 0;  // but 40 ms of all-reduce time
  EXPECT_THROW(scaling_metrics(ScalingMode::weak, baseline(), s), Error);
  s = weak4();
  s.tokens_per_step = 0;
  EXPECT_THROW(scaling_metrics(ScalingMode::weak, baseline(), s), Error);
}

TEST(ScalingMetrics, RejectsTokenCountsThatContradictTheMode) {
  // Weak-scaling data (4× the tokens) judged as strong scaling would understate speedup by a factor 4.
  EXPECT_NE(error_message([] { scaling_metrics(ScalingMode::strong, baseline(), weak4()); }).find("strong"),
            std::string::npos);
  EXPECT_THROW(scaling_metrics(ScalingMode::weak, baseline(), strong4()), Error);
}

TEST(ScalingMetrics, Json) {
  const nlohmann::json m = scaling_metrics(ScalingMode::weak, baseline(), weak4());
  EXPECT_DOUBLE_EQ(m.at("efficiency").get<double>(), 0.8);
  EXPECT_DOUBLE_EQ(m.at("overlap_fraction").get<double>(), 0.75);
  for (const char* key : {"speedup", "comm_ratio", "tokens_per_second"}) EXPECT_TRUE(m.contains(key)) << key;
  EXPECT_EQ(m.size(), 5u);

  const nlohmann::json s = weak4();
  EXPECT_EQ(s.at("world_size").get<int>(), 4);
  EXPECT_EQ(s.at("all_reduce_count").get<int>(), 3);
  EXPECT_DOUBLE_EQ(s.at("exposed_comm_seconds").get<double>(), 0.010);
  EXPECT_EQ(s.size(), 7u);

  EXPECT_EQ(nlohmann::json(ScalingMode::strong).get<std::string>(), "strong");
}
