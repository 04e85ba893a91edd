#pragma once
// Helpers shared by the host-model tests (test_gpt_cpu, test_mlp_lm_cpu): random token rows, the DDP-like
// gradient layout, relative error, and the check of a model's gradients in that layout against an oracle.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "train/model.h"

namespace scalescope::train::testing {

/// `rows` × `row_tokens` tokens uniform in [0, vocab), reproducible from `seed`.
inline std::vector<std::int32_t> random_tokens(int rows, int row_tokens, int vocab, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int32_t> dist(0, vocab - 1);
  std::vector<std::int32_t> t(static_cast<std::size_t>(rows) * static_cast<std::size_t>(row_tokens));
  for (auto& x : t) x = dist(rng);
  return t;
}

/// Gradient offsets in reverse parameter order with `gap` unused elements before each range (like DDP
/// buckets, which are filled in backward order). Returns the total size, elements.
inline std::size_t reverse_offsets(const std::vector<ParameterInfo>& params, std::size_t gap,
                                   std::vector<std::size_t>& offsets) {
  offsets.assign(params.size(), 0);
  std::size_t at = 0;
  for (std::size_t i = params.size(); i-- > 0;) {
    at += gap;
    offsets[i] = at;
    at += params[i].numel;
  }
  return at + gap;
}

/// ‖got − want‖₂ / ‖want‖₂ (the denominator floored at 1e-300).
inline double relative_error(const std::vector<double>& got, const std::vector<double>& want) {
  double diff = 0, ref = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    diff += (got[i] - want[i]) * (got[i] - want[i]);
    ref += want[i] * want[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(ref), 1e-300);
}

/// Checks gradients read back in the layout of `offsets` (each parameter's range, `total` elements, gaps
/// pre-filled with NaN) against `oracle` (parameters in forward order, concatenated): each parameter within
/// `tolerance` relative error, every element of a range written with a finite value, no gap element written.
inline void expect_gradients_match(const std::vector<ParameterInfo>& params, const std::vector<float>& got,
                                   const std::vector<std::size_t>& offsets, std::size_t total,
                                   const std::vector<double>& oracle, double tolerance) {
  ASSERT_EQ(got.size(), total);
  std::vector<bool> covered(total, false);
  std::size_t at = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto begin = got.begin() + static_cast<std::ptrdiff_t>(offsets[i]);
    std::vector<double> g(begin, begin + static_cast<std::ptrdiff_t>(params[i].numel));
    std::vector<double> want(oracle.begin() + static_cast<std::ptrdiff_t>(at),
                             oracle.begin() + static_cast<std::ptrdiff_t>(at + params[i].numel));
    EXPECT_LT(relative_error(g, want), tolerance) << params[i].name;
    for (std::size_t e = 0; e < params[i].numel; ++e) covered[offsets[i] + e] = true;
    at += params[i].numel;
  }
  std::size_t unwritten = 0, stray = 0;
  for (std::size_t e = 0; e < total; ++e) {
    if (covered[e] && !std::isfinite(got[e])) ++unwritten;
    if (!covered[e] && !std::isnan(got[e])) ++stray;
  }
  EXPECT_EQ(unwritten, 0u) << "gradient elements left unwritten or not finite";
  EXPECT_EQ(stray, 0u) << "elements between the ranges were written";
}

/// Forward and backward of `model` on `tokens` (`rows` × `row_tokens`), gradients laid out by reverse_offsets
/// (no gap): every parameter's gradient must be reported ready exactly once, in reverse parameter order (the
/// order DDP buckets are filled in).
inline void expect_ready_in_reverse_order(Model& model, const std::vector<std::int32_t>& tokens, int rows,
                                          int row_tokens) {
  std::vector<std::size_t> offsets;
  const std::size_t total = reverse_offsets(model.parameters(), 0, offsets);
  model.allocate_gradients(offsets, total);
  model.stage_batch({rows, row_tokens, tokens.data()});
  model.forward();
  std::vector<std::size_t> order;
  model.backward([&](std::size_t i) { order.push_back(i); });
  std::vector<std::size_t> want(model.parameters().size());
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = want.size() - 1 - i;
  EXPECT_EQ(order, want);
}

}  // namespace scalescope::train::testing
