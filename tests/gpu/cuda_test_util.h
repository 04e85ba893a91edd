#pragma once
// Checks shared by the CUDA model tests (test_gpt_cuda, test_mlp_lm_cuda): the bf16 CUDA model against its fp32
// host reference through the Model interface.

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "../train/model_test_util.h"
#include "train/model.h"

namespace scalescope::train::testing {

/// AdamW parity: the same random fp32 gradients (N(0, 0.01²), the DDP-like layout with `gap` elements between
/// ranges) on the host model `cpu` and the CUDA model `gpu` (whose work runs on `stream`), three steps at lr 1e-3
/// and weight decay 0.1. The fp32 parameters must agree to rounding (1e-6 relative: the formula is the same, the
/// GPU contracts into FMAs), and a forward pass over `tokens` (`rows` × `row_tokens`) must give losses within 1 %,
/// which shows the fused kernel also refreshed the bf16 weights the forward reads.
inline void expect_adamw_matches_cpu(Model& cpu, Model& gpu, cudaStream_t stream, std::size_t gap,
                                     const std::vector<std::int32_t>& tokens, int rows, int row_tokens) {
  std::vector<std::size_t> offsets;
  const std::size_t total = reverse_offsets(cpu.parameters(), gap, offsets);
  float* g_cpu = cpu.allocate_gradients(offsets, total);
  float* g_gpu = gpu.allocate_gradients(offsets, total);
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 1e-2f);
  for (std::size_t i = 0; i < total; ++i) g_cpu[i] = dist(rng);
  ASSERT_EQ(cudaMemcpyAsync(g_gpu, g_cpu, total * sizeof(float), cudaMemcpyHostToDevice, stream), cudaSuccess);

  AdamWConfig adam;
  adam.learning_rate = 1e-3f;
  adam.weight_decay = 0.1f;
  for (int step = 0; step < 3; ++step) {
    cpu.optimizer_step(adam);
    gpu.optimizer_step(adam);
  }
  const auto p_cpu = cpu.parameters_to_host();
  const auto p_gpu = gpu.parameters_to_host();
  ASSERT_EQ(p_gpu.size(), p_cpu.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < p_cpu.size(); ++i)
    differ += std::abs(p_gpu[i] - p_cpu[i]) > 1e-6f * std::max(1.0f, std::abs(p_cpu[i]));
  EXPECT_EQ(differ, 0u) << "fp32 AdamW differs beyond rounding";

  cpu.stage_batch({rows, row_tokens, tokens.data()});
  gpu.stage_batch({rows, row_tokens, tokens.data()});
  cpu.forward();
  gpu.forward();
  const float l_cpu = cpu.take_losses().at(0), l_gpu = gpu.take_losses().at(0);
  EXPECT_LT(std::abs(l_gpu - l_cpu) / l_cpu, 1e-2);
}

}  // namespace scalescope::train::testing
