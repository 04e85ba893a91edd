// The fp32 host MLP LM: layout, initial loss, gradients against finite differences and a double oracle,
// gradient-ready order, AdamW against the formula, learning on a short text, batch validation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.h"
#include "model_test_util.h"
#include "train/cpu/mlp_lm_cpu.h"
#include "train/mlp_lm.h"

using scalescope::core::Error;
using namespace scalescope::train;

using namespace scalescope::train::testing;

namespace {

MlpLmConfig make_config(int context, int embed, int hidden, int layers, int vocab = 256) {
  MlpLmConfig c;
  c.context = context;
  c.embed = embed;
  c.hidden = hidden;
  c.layers = layers;
  c.vocab = vocab;
  return c;
}





}  // namespace

TEST(MlpLmCpu, LayoutMatchesConfig) {
  const auto config = make_config(3, 4, 5, 2);
  MlpLmCpu model(config);
  const auto& p = model.parameters();
  ASSERT_EQ(p.size(), 7u);
  const std::vector<std::pair<std::string, std::size_t>> want = {
      {"embedding.weight", 256 * 4}, {"hidden.0.weight", 12 * 5}, {"hidden.0.bias", 5}, {"hidden.1.weight", 5 * 5},
      {"hidden.1.bias", 5},          {"output.weight", 5 * 256},  {"output.bias", 256}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(p[i].name, want[i].first);
    EXPECT_EQ(p[i].numel, want[i].second);
  }
  EXPECT_EQ(model.parameter_count(), config.parameter_count());
  EXPECT_EQ(model.row_tokens(), 4);
  EXPECT_EQ(model.predictions_per_row(), 1);
  EXPECT_DOUBLE_EQ(model.flops_per_token(), config.flops_per_token());
  EXPECT_EQ(model.parameters_to_host(), mlp_lm_initial_parameters(config));
  EXPECT_EQ(model.describe(), "mlp-lm: ctx 3 × embed 4 → 2 × 5 → 256 (fp32, CPU)");
}

TEST(MlpLmCpu, InitialLossIsNearLogVocab) {
  MlpLmCpu model(make_config(8, 16, 64, 2));
  const auto tokens = random_tokens(512, 9, 256, 1);
  model.stage_batch({512, 9, tokens.data()});
  model.forward();
  const auto losses = model.take_losses();
  ASSERT_EQ(losses.size(), 1u);
  EXPECT_NEAR(losses[0], std::log(256.0), 0.1);
  EXPECT_TRUE(model.take_losses().empty());
}

TEST(MlpLmCpu, DoubleGradientMatchesCentralDifferences) {
  // Small vocabulary so that every embedding row is used and checked.
  const auto config = make_config(3, 4, 5, 2, 13);
  const auto tokens = random_tokens(4, 4, 13, 2);
  const TokenBatchView batch{4, 4, tokens.data()};
  const auto init = mlp_lm_initial_parameters(config);
  std::vector<double> params(init.begin(), init.end());
  // Non-zero biases so their paths are exercised away from the initial zeros.
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0.0, 0.3);
  for (auto& p : params) p += noise(rng);

  expect_gradient_matches_central_differences(
      config.parameter_layout(), params,
      [&](const std::vector<double>& p, std::vector<double>* grad) { return mlp_lm_reference_loss(config, p, batch, grad); });
}

TEST(MlpLmCpu, FloatGradientMatchesDoubleOracleAndWritesEveryElement) {
  const auto config = make_config(3, 4, 5, 2);
  MlpLmCpu model(config);
  expect_float_model_matches_double_reference(
      model, mlp_lm_initial_parameters(config), random_tokens(4, 4, 256, 4), 4, 4,
      [&](const std::vector<double>& p, const TokenBatchView& batch, std::vector<double>* grad) {
        return mlp_lm_reference_loss(config, p, batch, grad);
      });
}

TEST(MlpLmCpu, GradientsBecomeReadyInReverseParameterOrder) {
  MlpLmCpu model(make_config(4, 4, 8, 3));
  // output.bias, output.weight, hidden.2.bias, …, embedding.weight: each once
  expect_ready_in_reverse_order(model, random_tokens(6, 5, 256, 5), 6, 5);
}

TEST(MlpLmCpu, AdamWMatchesTheFormula) {
  MlpLmCpu model(make_config(3, 4, 5, 2));
  expect_adamw_matches_the_formula(model, random_tokens(8, 4, 256, 6), 8, 4, mlp_lm_decays);
  // Decay is decoupled from the gradient (it also shrinks weights whose gradient is 0, covered above) and
  // applies to weight matrices only.
  EXPECT_TRUE(mlp_lm_decays("hidden.0.weight"));
  EXPECT_TRUE(mlp_lm_decays("output.weight"));
  EXPECT_FALSE(mlp_lm_decays("embedding.weight"));
  EXPECT_FALSE(mlp_lm_decays("output.bias"));
}

TEST(MlpLmCpu, LossFallsOnEnglishText) {
  const std::string text =
      "The lighthouse keeper climbed the stairs every evening at dusk. She counted the steps aloud, one "
      "hundred and twelve of them, and at the top she wound the clock that turned the great lamp. Ships "
      "far out on the grey water saw the beam sweep past and knew where the rocks were. In the morning she "
      "walked down again, wrote the weather in her book, and made tea while the gulls argued on the roof. "
      "Nobody thanked her, and she did not mind; the light was the thanks.";
  const auto config = make_config(8, 16, 64, 2);
  MlpLmCpu model(config);
  std::vector<std::size_t> offsets;
  const std::size_t total = reverse_offsets(model.parameters(), 0, offsets);
  model.allocate_gradients(offsets, total);
  AdamWConfig adam;
  adam.learning_rate = 3e-3f;

  std::mt19937 rng(7);
  std::uniform_int_distribution<std::size_t> start(0, text.size() - 9);
  const int rows = 32;
  std::vector<std::int32_t> tokens(rows * 9);
  for (int step = 0; step < 200; ++step) {
    for (int r = 0; r < rows; ++r) {
      const std::size_t s = start(rng);
      for (int k = 0; k < 9; ++k) tokens[static_cast<std::size_t>(r * 9 + k)] = static_cast<unsigned char>(text[s + static_cast<std::size_t>(k)]);
    }
    model.stage_batch({rows, 9, tokens.data()});
    model.forward();
    model.backward([](std::size_t) {});
    model.optimizer_step(adam);
  }
  const auto losses = model.take_losses();
  ASSERT_EQ(losses.size(), 200u);
  const double first = losses.front();
  const double last = std::accumulate(losses.end() - 10, losses.end(), 0.0) / 10;
  EXPECT_NEAR(first, std::log(256.0), 0.1);
  EXPECT_LT(last, 0.5 * first) << "loss went from " << first << " to " << last;
}

TEST(MlpLmCpu, BadBatchesThrow) {
  MlpLmCpu model(make_config(3, 4, 5, 1, 100));
  const std::vector<std::int32_t> good = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_NO_THROW(model.stage_batch({2, 4, good.data()}));
  EXPECT_THROW(model.stage_batch({0, 4, good.data()}), Error);
  EXPECT_THROW(model.stage_batch({2, 3, good.data()}), Error);
  EXPECT_THROW(model.stage_batch({1, 8, good.data()}), Error);
  EXPECT_THROW(model.stage_batch({2, 4, nullptr}), Error);
  std::vector<std::int32_t> bad = good;
  bad[5] = 100;  // vocab is 100
  EXPECT_THROW(model.stage_batch({2, 4, bad.data()}), Error);
  bad[5] = -1;
  EXPECT_THROW(model.stage_batch({2, 4, bad.data()}), Error);
}

TEST(MlpLmCpu, CallsOutOfOrderAreLogicErrors) {
  MlpLmCpu model(make_config(3, 4, 5, 1));
  EXPECT_THROW(model.forward(), std::logic_error);
  const std::vector<std::int32_t> tokens = {1, 2, 3, 4};
  model.stage_batch({1, 4, tokens.data()});
  EXPECT_THROW(model.backward([](std::size_t) {}), std::logic_error);  // no gradient buffer yet
  EXPECT_THROW(model.allocate_gradients({0, 0}, 10), std::invalid_argument);
}
