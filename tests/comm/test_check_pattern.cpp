// The benchmark's data check: simulating every collective on the host, from the inputs of all ranks, must give
// exactly what check_pattern.h expects on each rank — so a backend that counts wrong elements against these
// expectations counts real errors, not pattern mistakes.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "comm/check_pattern.h"
#include "comm/half_float.h"

using namespace scalescope::comm;
using pattern::Case;

namespace {

std::vector<double> inputs(Case c, int rank) {
  c.rank = rank;
  std::vector<double> v(pattern::send_elements(c));
  for (std::uint64_t i = 0; i < v.size(); ++i) v[i] = pattern::send_value(c, i);
  return v;
}

double apply(RedOp op, double a, double b) {
  switch (op) {
    case RedOp::sum: case RedOp::avg: return a + b;
    case RedOp::prod: return a * b;
    case RedOp::max: return std::max(a, b);
    case RedOp::min: return std::min(a, b);
  }
  return 0;
}

/// The collective's definition, computed naively from every rank's inputs.
std::vector<double> simulate(const Case& c, int rank) {
  const int n = c.n;
  const std::uint64_t k = c.count;
  std::vector<std::vector<double>> in;
  for (int r = 0; r < n; ++r) in.push_back(inputs(c, r));
  auto reduce_at = [&](std::uint64_t i) {
    double acc = in[0][i];
    for (int r = 1; r < n; ++r) acc = apply(c.op, acc, in[r][i]);
    return c.op == RedOp::avg ? acc / n : acc;
  };
  std::vector<double> out;
  switch (c.collective) {
    case Collective::all_reduce: case Collective::reduce:
      for (std::uint64_t i = 0; i < k; ++i) out.push_back(reduce_at(i));
      break;
    case Collective::reduce_scatter:
      for (std::uint64_t i = 0; i < k; ++i) out.push_back(reduce_at(rank * k + i));
      break;
    case Collective::all_gather:
      for (int r = 0; r < n; ++r) for (std::uint64_t i = 0; i < k; ++i) out.push_back(in[r][i]);
      break;
    case Collective::broadcast:
      out = std::vector<double>(in[c.root].begin(), in[c.root].begin() + static_cast<long>(k));
      break;
    case Collective::all_to_all:
      for (int r = 0; r < n; ++r) for (std::uint64_t i = 0; i < k; ++i) out.push_back(in[r][rank * k + i]);
      break;
    case Collective::send_recv:
      out = in[(rank + n - 1) % n];
      break;
  }
  return out;
}

}  // namespace

TEST(CheckPattern, ExpectationsMatchTheCollectivesDefinitions) {
  for (auto coll : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter, Collective::broadcast,
                    Collective::reduce, Collective::all_to_all, Collective::send_recv})
    for (auto op : {RedOp::sum, RedOp::prod, RedOp::max, RedOp::min, RedOp::avg})
      for (int n : {1, 2, 3, 4, 8})
        for (int root : {0, n - 1}) {
          Case c{coll, op, 0, n, root, 37};
          for (int rank = 0; rank < n; ++rank) {
            c.rank = rank;
            if (!pattern::result_is_checked(c)) continue;
            auto want = simulate(c, rank);
            ASSERT_EQ(want.size(), pattern::result_elements(c));
            for (std::uint64_t i = 0; i < want.size(); ++i)
              ASSERT_EQ(pattern::expected_value(c, i), want[i]) << static_cast<int>(coll) << " op " << static_cast<int>(op)
                                                                << " n " << n << " rank " << rank << " i " << i;
          }
        }
}

TEST(CheckPattern, ReductionsAreExactInInt8AndBf16) {
  // Every reduced value must be an integer representable exactly in int8 and bf16 up to 32 ranks.
  for (auto op : {RedOp::sum, RedOp::prod, RedOp::max, RedOp::min, RedOp::avg})
    for (int n : {2, 7, 32}) {
      Case c{Collective::all_reduce, op, 0, n, 0, 1000};
      for (std::uint64_t i = 0; i < c.count; ++i) {
        const double v = pattern::expected_value(c, i);
        EXPECT_EQ(v, std::round(v));
        EXPECT_LE(std::abs(v), 127);
        EXPECT_EQ(bf16_to_float(float_to_bf16(static_cast<float>(v))), v);
        EXPECT_EQ(half_to_float(float_to_half(static_cast<float>(v))), v);
      }
    }
}

TEST(CheckPattern, NoPatternValueEqualsThePoison) {
  for (auto coll : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter})
    for (auto op : {RedOp::sum, RedOp::prod, RedOp::max}) {
      Case c{coll, op, 1, 4, 0, 64};
      for (std::uint64_t i = 0; i < pattern::result_elements(c); ++i) EXPECT_NE(pattern::expected_value(c, i), 101.0);
    }
}

TEST(HalfFloat, EveryHalfAndBf16RoundTrips) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = half_to_float(bits);
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_half(f), bits) << h;
    const float g = bf16_to_float(bits);
    if (!std::isnan(g)) EXPECT_EQ(float_to_bf16(g), bits) << h;
  }
}

TEST(HalfFloat, RoundsToNearestEven) {
  EXPECT_EQ(half_to_float(float_to_half(65504.0f)), 65504.0f);         // largest half
  EXPECT_TRUE(std::isinf(half_to_float(float_to_half(65520.0f))));      // halfway to the next: rounds to inf
  EXPECT_EQ(half_to_float(float_to_half(1.0f + 1.0f / 2048)), 1.0f);    // tie → even (1.0)
  EXPECT_EQ(half_to_float(float_to_half(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);  // tie → even (up)
  EXPECT_EQ(half_to_float(float_to_half(5.9604645e-08f)), 5.9604645e-08f);  // smallest subnormal
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + 1.0f / 256)), 1.0f);     // bf16 tie → even
  EXPECT_EQ(bf16_to_float(float_to_bf16(3.0f)), 3.0f);
}
