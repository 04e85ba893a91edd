#pragma once
// Helpers shared by the host-model tests (test_gpt_cpu, test_mlp_lm_cpu): random token rows, the DDP-like
// gradient layout, relative error, and the check of a model's gradients in that layout against an oracle.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "train/adamw.h"
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

/// The fp32 host model `model` (fresh, so at its initial parameters `initial`) against its double-precision
/// reference: one forward and backward on `tokens` (`rows` × `row_tokens`) into the DDP-like layout with 3
/// elements between ranges, pre-filled with NaN; `reference(params, gradient)` returns the loss at `params` and
/// writes its gradient. The loss must agree within 1e-5 and the gradients within 1e-4 (relative), every range
/// element written and no gap element touched.
template <class Reference>
inline void expect_float_model_matches_double_reference(Model& model, const std::vector<float>& initial,
                                                        const std::vector<std::int32_t>& tokens, int rows,
                                                        int row_tokens, Reference reference) {
  std::vector<std::size_t> offsets;
  const std::size_t total = reverse_offsets(model.parameters(), 3, offsets);
  float* grads = model.allocate_gradients(offsets, total);
  std::fill_n(grads, total, std::numeric_limits<float>::quiet_NaN());  // backward must overwrite its ranges
  const TokenBatchView batch{rows, row_tokens, tokens.data()};
  model.stage_batch(batch);
  model.forward();
  model.backward([](std::size_t) {});

  std::vector<double> oracle;
  const double loss = reference(std::vector<double>(initial.begin(), initial.end()), batch, &oracle);
  EXPECT_NEAR(model.take_losses().at(0), loss, 1e-5 * loss);
  expect_gradients_match(model.parameters(), model.gradients_to_host(), offsets, total, oracle, 1e-4);
}

/// The finite-difference check of a double-precision reference: `loss(params, gradient)` returns the loss at
/// `params` and, when `gradient` is not null, writes its analytic gradient there. Central differences
/// (h = 1e-5) of every parameter must match the analytic gradient within 1e-6 relative error per parameter of
/// `layout` (forward order, concatenated), and every parameter must have a non-zero gradient.
template <class Loss>
inline void expect_gradient_matches_central_differences(const std::vector<ParameterInfo>& layout,
                                                        std::vector<double> params, Loss loss) {
  std::vector<double> analytic;
  loss(params, &analytic);
  std::vector<double> numeric(params.size());
  const double h = 1e-5;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const double saved = params[i];
    params[i] = saved + h;
    const double up = loss(params, nullptr);
    params[i] = saved - h;
    const double down = loss(params, nullptr);
    params[i] = saved;
    numeric[i] = (up - down) / (2 * h);
  }
  std::size_t at = 0;
  for (const auto& p : layout) {
    const std::vector<double> a(analytic.begin() + static_cast<std::ptrdiff_t>(at),
                                analytic.begin() + static_cast<std::ptrdiff_t>(at + p.numel));
    const std::vector<double> n(numeric.begin() + static_cast<std::ptrdiff_t>(at),
                                numeric.begin() + static_cast<std::ptrdiff_t>(at + p.numel));
    EXPECT_LT(relative_error(a, n), 1e-6) << p.name;
    double norm = 0;
    for (double x : a) norm += x * x;
    EXPECT_GT(std::sqrt(norm), 1e-8) << p.name << " has no gradient";
    at += p.numel;
  }
}

/// AdamW on `model`'s own gradients of one batch (`tokens`, `rows` × `row_tokens`, DDP-like layout with one
/// element between ranges), two steps with the same gradients at lr 0.01 and weight decay 0.1 on the parameters
/// for which `decays(name)` is true, against Loshchilov & Hutter (2019), Algorithm 2, as torch.optim.AdamW:
/// the first, middle and last element of every parameter within 1e-6. The second step is applied in two parts
/// (the first parameter, then the rest: how the engine's overlap_optimizer splits it), which must give the same
/// update; a part applied twice in one step is refused.
template <class Decays>
inline void expect_adamw_matches_the_formula(Model& model, const std::vector<std::int32_t>& tokens, int rows,
                                             int row_tokens, Decays decays) {
  std::vector<std::size_t> offsets;
  const std::size_t total = reverse_offsets(model.parameters(), 1, offsets);
  model.allocate_gradients(offsets, total);
  model.stage_batch({rows, row_tokens, tokens.data()});
  model.forward();
  model.backward([](std::size_t) {});
  const auto g = model.gradients_to_host();
  const auto p0 = model.parameters_to_host();

  AdamWConfig adam;
  adam.learning_rate = 0.01f;
  adam.weight_decay = 0.1f;
  model.optimizer_step(adam);
  const auto p1 = model.parameters_to_host();
  // Same gradients again: checks the moments and the per-parameter step counts.
  const std::size_t n = model.parameters().size();
  model.optimizer_step_part(adam, {0, 1});
  EXPECT_THROW(model.optimizer_step_part(adam, {0, n}), std::logic_error);  // parameter 0 is a step ahead
  model.optimizer_step_part(adam, {1, n});
  EXPECT_THROW(model.optimizer_step_part(adam, {1, 1}), std::logic_error);  // empty
  EXPECT_THROW(model.optimizer_step_part(adam, {0, n + 1}), std::logic_error);
  const auto p2 = model.parameters_to_host();

  const double lr = adam.learning_rate, wd = adam.weight_decay, b1 = adam.beta1, b2 = adam.beta2, eps = adam.epsilon;
  std::size_t at = 0;
  const auto& params = model.parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const double decay = decays(params[i].name) ? 1.0 - lr * wd : 1.0;
    for (std::size_t e : {std::size_t{0}, params[i].numel / 2, params[i].numel - 1}) {
      const double grad = g[offsets[i] + e], w0 = p0[at + e];
      // Step 1 by hand: m̂ = g and v̂ = g², so the update is lr·g/(|g| + ε) = lr·sign(g) up to ε.
      EXPECT_NEAR(p1[at + e], w0 * decay - lr * grad / (std::abs(grad) + eps), 1e-6) << params[i].name << "[" << e << "]";
      // Step 2 from the recurrences.
      const double m = b1 * (1 - b1) * grad + (1 - b1) * grad, v = b2 * (1 - b2) * grad * grad + (1 - b2) * grad * grad;
      const double want = p1[at + e] * decay - lr / (1 - b1 * b1) * m / (std::sqrt(v) / std::sqrt(1 - b2 * b2) + eps);
      EXPECT_NEAR(p2[at + e], want, 1e-6) << params[i].name << "[" << e << "]";
    }
    at += params[i].numel;
  }
}

/// One training step of `model` (fresh, so every loss is near ln `vocab`) on each batch size in `rows`, random
/// tokens of `row_tokens` per row: one finite loss per step, within 0.5 of ln `vocab`, and none left after
/// take_losses() — the activations follow the batch size up and down.
inline void expect_steps_on_batches_of_sizes(Model& model, int row_tokens, int vocab, std::initializer_list<int> rows) {
  std::vector<std::size_t> offsets;
  const std::size_t total = reverse_offsets(model.parameters(), 0, offsets);
  model.allocate_gradients(offsets, total);
  for (int r : rows) {
    const auto tokens = random_tokens(r, row_tokens, vocab, static_cast<unsigned>(r));
    model.stage_batch({r, row_tokens, tokens.data()});
    model.forward();
    model.backward([](std::size_t) {});
    model.optimizer_step(AdamWConfig{});
  }
  const auto losses = model.take_losses();
  ASSERT_EQ(losses.size(), rows.size());
  for (float l : losses) EXPECT_TRUE(std::isfinite(l) && std::abs(l - std::log(static_cast<float>(vocab))) < 0.5f) << l;
  EXPECT_TRUE(model.take_losses().empty());
}

}  // namespace scalescope::train::testing
