#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/stats.h"

using scalescope::core::Error;
using scalescope::core::MeasurementProtocol;
using scalescope::core::quantile;
using scalescope::core::summarize;
using scalescope::core::Summary;
using scalescope::core::UsageError;

namespace {
// The message of the core::Error that `f` throws; fails the test if it throws nothing.
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

TEST(Protocol, DefaultsAreTheSeedProtocol) {
  MeasurementProtocol p;
  EXPECT_EQ(p.warmup_rounds, 3);
  EXPECT_EQ(p.timed_rounds, 5);
  EXPECT_NO_THROW(p.validate());
  EXPECT_TRUE(p.is_seed_compliant());
}

TEST(Protocol, RejectsOutOfRangeFieldsWithUsageError) {
  MeasurementProtocol p;
  p.warmup_rounds = -1;
  EXPECT_THROW(p.validate(), UsageError);
  p = {};
  p.timed_rounds = 0;
  EXPECT_THROW(p.validate(), UsageError);
  p = {};
  p.steps_per_round = 0;
  EXPECT_THROW(p.validate(), UsageError);
  p = {};
  p.timed_rounds = -3;
  EXPECT_NE(error_message([&] { p.validate(); }).find("-3"), std::string::npos);
}

TEST(Protocol, FewerRoundsAreValidButNotSeedCompliant) {
  MeasurementProtocol p;
  p.warmup_rounds = 0;
  EXPECT_NO_THROW(p.validate());
  EXPECT_FALSE(p.is_seed_compliant());
  p.warmup_rounds = 2;
  EXPECT_FALSE(p.is_seed_compliant());
  p.warmup_rounds = 3;
  p.timed_rounds = 4;
  EXPECT_NO_THROW(p.validate());
  EXPECT_FALSE(p.is_seed_compliant());
  p.timed_rounds = 7;
  EXPECT_TRUE(p.is_seed_compliant());
}

TEST(Summarize, FiveRoundsHeadlineIsMeanOfMiddleThree) {
  const std::vector<double> x{5, 1, 3, 2, 4};
  const Summary s = summarize(x);
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.trimmed_mean, 3.0);
  EXPECT_DOUBLE_EQ(s.mean, 3.0);
  EXPECT_DOUBLE_EQ(s.median, 3.0);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 5.0);
  EXPECT_DOUBLE_EQ(s.p95, 4.8);  // h = 4·0.95 = 3.8 → 4 + 0.8·(5 − 4)
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(2.5));  // squared deviations 4+1+0+1+4 = 10, / (5 − 1)
  EXPECT_DOUBLE_EQ(s.cv, std::sqrt(2.5) / 3.0);
}

TEST(Summarize, TrimmedMeanDropsOneOutlierEachSide) {
  const std::vector<double> x{1.0, 1.1, 0.9, 1.0, 9.0};
  const Summary s = summarize(x);
  EXPECT_DOUBLE_EQ(s.trimmed_mean, (1.0 + 1.0 + 1.1) / 3.0);
  EXPECT_DOUBLE_EQ(s.mean, 13.0 / 5.0);
}

TEST(Summarize, TrimmedMeanDropsExactlyOneOfTiedExtremes) {
  const std::vector<double> x{2, 9, 2, 2, 2};
  EXPECT_DOUBLE_EQ(summarize(x).trimmed_mean, 2.0);  // middle three of 2,2,2,2,9
  const std::vector<double> y{1, 1, 5, 5};
  EXPECT_DOUBLE_EQ(summarize(y).trimmed_mean, 3.0);  // middle two of 1,1,5,5
}

TEST(Summarize, EvenCountMedianAndPercentile) {
  const std::vector<double> x{4, 1, 3, 2};
  const Summary s = summarize(x);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.trimmed_mean, 2.5);
  EXPECT_DOUBLE_EQ(s.p95, 3.85);  // h = 3·0.95 = 2.85 → 3 + 0.85
}

TEST(Summarize, MatchesNumpyPercentileOnOneToTen) {
  std::vector<double> x;
  for (int i = 10; i >= 1; --i) x.push_back(i);
  const Summary s = summarize(x);
  EXPECT_DOUBLE_EQ(s.p95, 9.55);  // numpy.percentile(range(1, 11), 95)
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_DOUBLE_EQ(s.trimmed_mean, 5.5);
}

TEST(Summarize, SingleSample) {
  const std::vector<double> x{0.25};
  const Summary s = summarize(x);
  EXPECT_EQ(s.count, 1u);
  EXPECT_DOUBLE_EQ(s.trimmed_mean, 0.25);
  EXPECT_DOUBLE_EQ(s.median, 0.25);
  EXPECT_DOUBLE_EQ(s.p95, 0.25);
  EXPECT_DOUBLE_EQ(s.min, 0.25);
  EXPECT_DOUBLE_EQ(s.max, 0.25);
  EXPECT_EQ(s.stddev, 0.0);
  EXPECT_EQ(s.cv, 0.0);
}

TEST(Summarize, TwoSamplesUsePlainMean) {
  const std::vector<double> x{3, 1};
  const Summary s = summarize(x);
  EXPECT_DOUBLE_EQ(s.trimmed_mean, 2.0);
  EXPECT_DOUBLE_EQ(s.median, 2.0);
  EXPECT_DOUBLE_EQ(s.p95, 2.9);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(2.0));
}

TEST(Summarize, ZeroMeanGivesZeroCv) {
  const std::vector<double> x{-1, 1};
  const Summary s = summarize(x);
  EXPECT_EQ(s.mean, 0.0);
  EXPECT_EQ(s.cv, 0.0);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(2.0));
}

TEST(Summarize, StddevIsStableUnderALargeOffset) {
  // E[x²] − E[x]² would lose every digit here (x² ≈ 1e24, spacing ≈ 1e8).
  const std::vector<double> x{1e12 + 1, 1e12 + 2, 1e12 + 3};
  const Summary s = summarize(x);
  EXPECT_DOUBLE_EQ(s.stddev, 1.0);
  EXPECT_DOUBLE_EQ(s.trimmed_mean, 1e12 + 2);
}

TEST(Summarize, OrderDoesNotMatter) {
  const std::vector<double> a{0.31, 0.29, 0.30, 0.35, 0.28, 0.33};
  const std::vector<double> b{0.35, 0.28, 0.33, 0.30, 0.31, 0.29};
  const Summary sa = summarize(a), sb = summarize(b);
  EXPECT_DOUBLE_EQ(sa.trimmed_mean, sb.trimmed_mean);
  EXPECT_DOUBLE_EQ(sa.median, sb.median);
  EXPECT_DOUBLE_EQ(sa.p95, sb.p95);
  EXPECT_DOUBLE_EQ(sa.stddev, sb.stddev);
  EXPECT_DOUBLE_EQ(sa.trimmed_mean, (0.29 + 0.30 + 0.31 + 0.33) / 4.0);
}

TEST(Summarize, RejectsEmptyAndNonFiniteSamples) {
  const std::vector<double> empty;
  EXPECT_NE(error_message([&] { summarize(empty); }).find("empty"), std::string::npos);
  const std::vector<double> nan{1.0, std::numeric_limits<double>::quiet_NaN(), 2.0};
  EXPECT_NE(error_message([&] { summarize(nan); }).find("sample 1"), std::string::npos);
  const std::vector<double> inf{1.0, 2.0, std::numeric_limits<double>::infinity()};
  EXPECT_NE(error_message([&] { summarize(inf); }).find("sample 2"), std::string::npos);
}

TEST(Quantile, EndpointsAndInterpolation) {
  const std::vector<double> x{10, 30, 20};
  EXPECT_DOUBLE_EQ(quantile(x, 0.0), 10.0);
  EXPECT_DOUBLE_EQ(quantile(x, 1.0), 30.0);
  EXPECT_DOUBLE_EQ(quantile(x, 0.25), 15.0);
  EXPECT_DOUBLE_EQ(quantile(x, 0.5), 20.0);
}

TEST(Quantile, RejectsBadLevelAndEmptySample) {
  const std::vector<double> x{1, 2};
  EXPECT_THROW(quantile(x, -0.01), Error);
  EXPECT_THROW(quantile(x, 1.01), Error);
  EXPECT_THROW(quantile(x, std::numeric_limits<double>::quiet_NaN()), Error);
  const std::vector<double> empty;
  EXPECT_THROW(quantile(empty, 0.5), Error);
}

TEST(Summarize, JsonHasEveryField) {
  const std::vector<double> x{5, 1, 3, 2, 4};
  const nlohmann::json j = summarize(x);
  EXPECT_EQ(j.at("count").get<std::size_t>(), 5u);
  EXPECT_DOUBLE_EQ(j.at("trimmed_mean").get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(j.at("p95").get<double>(), 4.8);
  for (const char* key : {"mean", "median", "min", "max", "stddev", "cv"}) EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j.size(), 9u);
}

TEST(Protocol, Json) {
  const nlohmann::json j = MeasurementProtocol{};
  EXPECT_EQ(j.at("warmup_rounds").get<int>(), 3);
  EXPECT_EQ(j.at("timed_rounds").get<int>(), 5);
  EXPECT_EQ(j.at("steps_per_round").get<int>(), 10);
}
