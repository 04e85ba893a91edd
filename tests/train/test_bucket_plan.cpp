#include <gtest/gtest.h>

#include "core/error.h"
#include "train/bucket_plan.h"
#include "train/mlp_lm.h"

using namespace scalescope::train;

namespace {
std::vector<ParameterInfo> params(std::initializer_list<std::size_t> sizes) {
  std::vector<ParameterInfo> p;
  int i = 0;
  for (auto n : sizes) p.push_back({"p" + std::to_string(i++), n});
  return p;
}
}  // namespace

TEST(BucketPlan, ReverseOrderFirstBucketSmallThenCapped) {
  // 4-byte elements; first cap 16 bytes = 4 elements, then 40 bytes = 10 elements.
  BucketConfig cfg{16, 40};
  const auto layout = params({3, 8, 2, 2, 5});
  auto plan = BucketPlan::build(layout, cfg);
  ASSERT_EQ(plan.buckets.size(), 3u);
  // bucket 0: p4 (5 elements ≥ 4) — closes at once.
  EXPECT_EQ(plan.buckets[0].parameters, (std::vector<std::size_t>{4}));
  // bucket 1: p3 (2), p2 (2), p1 (8) → 12 ≥ 10 closes.
  EXPECT_EQ(plan.buckets[1].parameters, (std::vector<std::size_t>{3, 2, 1}));
  // bucket 2: p0 left over.
  EXPECT_EQ(plan.buckets[2].parameters, (std::vector<std::size_t>{0}));
  EXPECT_EQ(plan.total_numel, 20u);
  // Contiguity: each bucket starts where the previous ended, parameters inside are contiguous.
  std::size_t expect = 0;
  for (const auto& b : plan.buckets) {
    EXPECT_EQ(b.offset, expect);
    std::size_t inner = b.offset;
    for (auto k : b.parameters) {
      EXPECT_EQ(plan.parameter_offset[k], inner);
      inner += layout[k].numel;
    }
    EXPECT_EQ(inner, b.offset + b.numel);
    expect += b.numel;
  }
  EXPECT_EQ(plan.parameter_bucket[0], 2u);
  EXPECT_EQ(plan.parameter_bucket[4], 0u);
}

TEST(BucketPlan, DefaultsOnMlp10mCoverEveryParameterOnce) {
  auto cfg = MlpLmConfig::preset("mlp-10m");
  auto layout = cfg.parameter_layout();
  auto plan = BucketPlan::build(layout, BucketConfig{});
  std::vector<int> seen(layout.size(), 0);
  std::size_t total = 0;
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
    total += plan.buckets[b].numel;
    for (auto k : plan.buckets[b].parameters) {
      ++seen[k];
      EXPECT_EQ(plan.parameter_bucket[k], b);
    }
    // Every bucket but the last reached its cap; none exceeds cap + its largest parameter.
    if (b + 1 < plan.buckets.size()) {
      EXPECT_GE(plan.buckets[b].numel * 4, b == 0 ? (1u << 20) : (25u << 20));
    }
  }
  for (int s : seen) EXPECT_EQ(s, 1);
  EXPECT_EQ(total, cfg.parameter_count());
  // The first bucket holds the output layer (last parameters), as DDP's reverse order.
  EXPECT_EQ(plan.buckets[0].parameters.front(), layout.size() - 1);
}

TEST(BucketPlan, ParameterLargerThanCapGetsItsOwnBucket) {
  auto plan = BucketPlan::build(params({100, 1}), BucketConfig{4, 8});
  ASSERT_EQ(plan.buckets.size(), 2u);
  EXPECT_EQ(plan.buckets[0].parameters, (std::vector<std::size_t>{1}));
  EXPECT_EQ(plan.buckets[1].parameters, (std::vector<std::size_t>{0}));
}

TEST(BucketPlan, RejectsZeroCapAndEmptyModel) {
  EXPECT_THROW(BucketPlan::build(params({1}), BucketConfig{0, 8}), scalescope::core::Error);
  EXPECT_THROW(BucketPlan::build({}, BucketConfig{}), scalescope::core::Error);
}

TEST(BucketPlan, InOrderPacksTheGivenOrderAndPlacesUnlistedParametersLast) {
  // A GPT's ready order with the embedding all-gathered: wte (p0) first, then the rest in reverse, wpe (p1) in no
  // bucket. 4-byte elements; caps 16 and 40 bytes.
  auto plan = BucketPlan::build_in_order(params({8, 3, 2, 5}), {0, 3, 2}, BucketConfig{16, 40});
  ASSERT_EQ(plan.buckets.size(), 2u);
  EXPECT_EQ(plan.buckets[0].parameters, (std::vector<std::size_t>{0}));
  EXPECT_EQ(plan.buckets[1].parameters, (std::vector<std::size_t>{3, 2}));
  EXPECT_EQ(plan.buckets[1].offset, 8u);
  EXPECT_EQ(plan.buckets[1].numel, 7u);
  EXPECT_EQ(plan.parameter_offset, (std::vector<std::size_t>{0, 15, 13, 8}));
  EXPECT_EQ(plan.parameter_bucket[1], BucketPlan::kNoBucket);
  EXPECT_EQ(plan.total_numel, 18u);
  // build() is build_in_order with the reverse order.
  auto reverse = BucketPlan::build(params({8, 3, 2, 5}), BucketConfig{16, 40});
  auto same = BucketPlan::build_in_order(params({8, 3, 2, 5}), {3, 2, 1, 0}, BucketConfig{16, 40});
  EXPECT_EQ(reverse.parameter_offset, same.parameter_offset);
  EXPECT_EQ(reverse.parameter_bucket, same.parameter_bucket);
}

TEST(BucketPlan, InOrderRefusesRepeatedOrUnknownParameters) {
  EXPECT_THROW(BucketPlan::build_in_order(params({1, 2}), {0, 0}, BucketConfig{}), scalescope::core::Error);
  EXPECT_THROW(BucketPlan::build_in_order(params({1, 2}), {2}, BucketConfig{}), scalescope::core::Error);
}
