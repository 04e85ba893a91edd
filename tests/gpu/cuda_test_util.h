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

/// ‖got − want‖ / ‖want‖ over [got_at, got_at + n) and [want_at, want_at + n) (denominator floored at 1e-30).
inline double relative_error(const std::vector<float>& got, std::size_t got_at, const std::vector<float>& want,
                             std::size_t want_at, std::size_t n) {
  double diff = 0, ref = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double g = got[got_at + i], w = want[want_at + i];
    diff += (g - w) * (g - w);
    ref += w * w;
  }
  return std::sqrt(diff) / std::max(std::sqrt(ref), 1e-30);
}

/// Fixture of the CUDA tests: skipped with the reason when no CUDA device is visible (CPU-only CI), else device
/// 0 and a non-blocking stream_, so a model cannot rely on implicit synchronisation with the legacy stream.
class CudaStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int devices = 0;
    const cudaError_t err = cudaGetDeviceCount(&devices);
    if (err != cudaSuccess) GTEST_SKIP() << "no CUDA device: " << cudaGetErrorString(err);
    if (devices == 0) GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount returned 0";
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  void sync() { ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess); }

  cudaStream_t stream_ = nullptr;
};

/// Stages `tokens` (`rows` × `row_tokens`) on both models and runs one forward each: their losses must agree
/// within 1 % (the bf16 CUDA model against its fp32 host reference).
inline void expect_same_loss(Model& host, Model& gpu, const std::vector<std::int32_t>& tokens, int rows, int row_tokens) {
  host.stage_batch({rows, row_tokens, tokens.data()});
  gpu.stage_batch({rows, row_tokens, tokens.data()});
  host.forward();
  gpu.forward();
  const float l_host = host.take_losses().at(0), l_gpu = gpu.take_losses().at(0);
  EXPECT_LT(std::abs(l_gpu - l_host) / l_host, 1e-2) << "host " << l_host << " gpu " << l_gpu;
}

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
  expect_same_loss(cpu, gpu, tokens, rows, row_tokens);
}

/// Writes the fp32 parameters of `other` (a host model of the same shape, another seed) into the CUDA model
/// `gpu` through flat_parameters() and calls parameters_changed(): a forward over `tokens` (`rows` ×
/// `row_tokens`) must then give `other`'s loss within 1 % — the bf16 weight copies were refreshed — and the
/// parameters read back must be exactly what was written.
inline void expect_parameters_changed_refreshes_bf16_weights(Model& other, Model& gpu, cudaStream_t stream,
                                                            const std::vector<std::int32_t>& tokens, int rows,
                                                            int row_tokens) {
  const auto values = other.parameters_to_host();
  ASSERT_EQ(cudaMemcpyAsync(gpu.flat_parameters(), values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice,
                            stream),
            cudaSuccess);
  gpu.parameters_changed();
  expect_same_loss(other, gpu, tokens, rows, row_tokens);
  EXPECT_EQ(gpu.parameters_to_host(), values);
}

/// One forward and backward of the host model `cpu` and the CUDA model `gpu` (work on `stream`) on the same
/// `tokens` (`rows` × `row_tokens`), gradients in reverse parameter order with `gap` elements between ranges
/// (the GPU's buffer pre-filled with NaN): the losses must agree within 1 %, the GPU must report every gradient
/// ready once in reverse order, and its gradients must match the host's within `grad_tolerance` (relative, per
/// parameter), with every range element written and no gap element touched (expect_gradients_match).
inline void expect_step_matches_cpu(Model& cpu, Model& gpu, cudaStream_t stream, const std::vector<std::int32_t>& tokens,
                                    int rows, int row_tokens, std::size_t gap, double grad_tolerance) {
  std::vector<std::size_t> offsets;
  const std::size_t total = reverse_offsets(cpu.parameters(), gap, offsets);
  cpu.allocate_gradients(offsets, total);
  float* g = gpu.allocate_gradients(offsets, total);
  ASSERT_EQ(cudaMemsetAsync(g, 0xFF, total * sizeof(float), stream), cudaSuccess);  // NaN everywhere

  const TokenBatchView batch{rows, row_tokens, tokens.data()};
  cpu.stage_batch(batch);
  gpu.stage_batch(batch);
  cpu.forward();
  gpu.forward();
  cpu.backward([](std::size_t) {});
  std::vector<std::size_t> order;
  gpu.backward([&](std::size_t i) { order.push_back(i); });

  const float cpu_loss = cpu.take_losses().at(0);
  const auto gpu_losses = gpu.take_losses();
  ASSERT_EQ(gpu_losses.size(), 1u);
  EXPECT_LT(std::abs(gpu_losses[0] - cpu_loss) / cpu_loss, 1e-2) << "cpu " << cpu_loss << " gpu " << gpu_losses[0];

  std::vector<std::size_t> want_order(cpu.parameters().size());
  for (std::size_t i = 0; i < want_order.size(); ++i) want_order[i] = want_order.size() - 1 - i;
  EXPECT_EQ(order, want_order);

  const auto g_cpu = cpu.gradients_to_host();
  std::vector<double> oracle;  // the host's gradients in forward order, concatenated
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    const auto begin = g_cpu.begin() + static_cast<std::ptrdiff_t>(offsets[i]);
    oracle.insert(oracle.end(), begin, begin + static_cast<std::ptrdiff_t>(cpu.parameters()[i].numel));
  }
  expect_gradients_match(cpu.parameters(), gpu.gradients_to_host(), offsets, total, oracle, grad_tolerance);
}

}  // namespace scalescope::train::testing
