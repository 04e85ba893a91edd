// The bf16 CUDA MLP LM against the fp32 host model: losses, per-parameter gradients, AdamW, gradient-ready
// order, full coverage of the gradient buffer, a large shape, batch validation. Skips without a GPU.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "cuda_test_util.h"
#include "train/cpu/mlp_lm_cpu.h"
#include "train/cuda/mlp_lm_cuda.h"
#include "train/mlp_lm.h"

using scalescope::core::Error;
using namespace scalescope::train;

using namespace scalescope::train::testing;

namespace {

MlpLmConfig make_config(int context, int embed, int hidden, int layers) {
  MlpLmConfig c;
  c.context = context;
  c.embed = embed;
  c.hidden = hidden;
  c.layers = layers;
  return c;
}

class MlpLmCudaTest : public CudaStreamTest {
 protected:
  /// One step of the host and CUDA models on the same random batch (expect_step_matches_cpu).
  void compare_step(const MlpLmConfig& config, int rows, std::size_t gap, double grad_tolerance) {
    MlpLmCpu cpu(config);
    MlpLmCuda gpu(config, stream_);
    expect_step_matches_cpu(cpu, gpu, stream_, random_tokens(rows, config.context + 1, 256, 11), rows, config.context + 1,
                            gap, grad_tolerance);
  }
};

}  // namespace

TEST_F(MlpLmCudaTest, StartsFromTheSharedInitialParameters) {
  const auto config = make_config(16, 16, 256, 3);
  MlpLmCuda gpu(config, stream_);
  MlpLmCpu cpu(config);
  ASSERT_EQ(gpu.parameters().size(), cpu.parameters().size());
  for (std::size_t i = 0; i < cpu.parameters().size(); ++i) {
    EXPECT_EQ(gpu.parameters()[i].name, cpu.parameters()[i].name);
    EXPECT_EQ(gpu.parameters()[i].numel, cpu.parameters()[i].numel);
  }
  EXPECT_EQ(gpu.parameters_to_host(), mlp_lm_initial_parameters(config));
  EXPECT_EQ(gpu.row_tokens(), 17);
}

TEST_F(MlpLmCudaTest, LossAndGradientsMatchCpu) {
  compare_step(make_config(16, 16, 256, 3), 64, 64, 2e-2);  // 256-byte aligned gradient ranges
}

TEST_F(MlpLmCudaTest, LossAndGradientsMatchCpuWithUnalignedGradientRanges) {
  compare_step(make_config(16, 16, 256, 3), 64, 3, 2e-2);  // fp32 GEMM outputs only 4-byte aligned
}

TEST_F(MlpLmCudaTest, LargeHiddenLayersMatchCpu) {
  // 35.7 M parameters; looser gradient bound because the bf16 rounding of 4096-wide activations adds up.
  compare_step(make_config(16, 16, 4096, 3), 64, 64, 5e-2);
}

TEST_F(MlpLmCudaTest, AdamWMatchesCpuForTheSameGradients) {
  const auto config = make_config(16, 16, 256, 3);
  MlpLmCpu cpu(config);
  MlpLmCuda gpu(config, stream_);
  expect_adamw_matches_cpu(cpu, gpu, stream_, 64, random_tokens(64, 17, 256, 12), 64, 17);
}

TEST_F(MlpLmCudaTest, TrainingStepsTrackCpu) {
  const auto config = make_config(16, 16, 256, 3);
  MlpLmCpu cpu(config);
  MlpLmCuda gpu(config, stream_);
  std::vector<std::size_t> offsets;
  const std::size_t total = reverse_offsets(cpu.parameters(), 64, offsets);
  cpu.allocate_gradients(offsets, total);
  gpu.allocate_gradients(offsets, total);
  AdamWConfig adam;
  adam.learning_rate = 1e-3f;
  adam.weight_decay = 0.1f;
  for (int step = 0; step < 5; ++step) {
    const auto tokens = random_tokens(64, 17, 256, 100 + static_cast<unsigned>(step));
    for (Model* m : {static_cast<Model*>(&cpu), static_cast<Model*>(&gpu)}) {
      m->stage_batch({64, 17, tokens.data()});
      m->forward();
      m->backward([](std::size_t) {});
      m->optimizer_step(adam);
    }
  }
  const auto l_cpu = cpu.take_losses(), l_gpu = gpu.take_losses();
  ASSERT_EQ(l_gpu.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_LT(std::abs(l_gpu[i] - l_cpu[i]) / l_cpu[i], 1e-2) << "step " << i;

  const auto p_cpu = cpu.parameters_to_host(), p_gpu = gpu.parameters_to_host();
  EXPECT_LT(relative_error(p_gpu, 0, p_cpu, 0, p_cpu.size()), 2e-2);
  std::size_t at = 0;
  for (const auto& p : cpu.parameters()) {
    if (p.name.ends_with(".bias")) {
      // Biases start at 0 and AdamW moves each by about ±lr per step whatever the gradient's size, so an
      // element whose gradient is near 0 may move the other way under bf16 rounding: require that most
      // elements agree to within one step instead of a norm bound.
      std::size_t close = 0;
      for (std::size_t e = 0; e < p.numel; ++e) close += std::abs(p_gpu[at + e] - p_cpu[at + e]) <= adam.learning_rate;
      EXPECT_GE(static_cast<double>(close), 0.9 * static_cast<double>(p.numel)) << p.name;
    } else {
      EXPECT_LT(relative_error(p_gpu, at, p_cpu, at, p.numel), 2e-2) << p.name;
    }
    at += p.numel;
  }
}

TEST_F(MlpLmCudaTest, ParametersChangedRefreshesTheBf16Weights) {
  auto other = make_config(16, 16, 256, 3);
  other.seed = 99;
  MlpLmCpu cpu(other);
  MlpLmCuda gpu(make_config(16, 16, 256, 3), stream_);
  expect_parameters_changed_refreshes_bf16_weights(cpu, gpu, stream_, random_tokens(64, 17, 256, 13), 64, 17);
}

TEST_F(MlpLmCudaTest, BatchesOfDifferentSizes) {
  MlpLmCuda gpu(make_config(8, 8, 64, 2), stream_);  // embed and hidden multiples of 8: vectorised kernels
  expect_steps_on_batches_of_sizes(gpu, 9, 256, {1, 7, 300, 5});
}

TEST_F(MlpLmCudaTest, OddWidthsUseTheScalarKernels) {
  compare_step(make_config(5, 3, 37, 2), 9, 1, 2e-2);
}

TEST_F(MlpLmCudaTest, BadBatchesThrow) {
  MlpLmCuda gpu(make_config(4, 8, 64, 1), stream_);
  std::vector<std::int32_t> tokens = random_tokens(2, 5, 256, 14);
  EXPECT_NO_THROW(gpu.stage_batch({2, 5, tokens.data()}));
  tokens[3] = 256;
  EXPECT_THROW(gpu.stage_batch({2, 5, tokens.data()}), Error);
  tokens[3] = -1;
  EXPECT_THROW(gpu.stage_batch({2, 5, tokens.data()}), Error);
  tokens[3] = 0;
  EXPECT_THROW(gpu.stage_batch({2, 4, tokens.data()}), Error);
  EXPECT_THROW(gpu.stage_batch({0, 5, tokens.data()}), Error);
}
