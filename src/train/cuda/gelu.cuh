#pragma once
// The tanh-approximate GELU both CUDA models use (the GPT's kernels and the MLP's), so both compute one
// function one way; internal to src/train/cuda.

#include <cuda_runtime.h>

namespace scalescope::train::gpt_kernels::support {

// Tanh-approximate GELU (Hendrycks & Gimpel 2016, as GPT-2) and its exact derivative, fp32, written through the
// logistic function: 0.5·x·(1 + tanh u) = x·σ(2u) and 1 − tanh²u = 4σ(2u)(1 − σ(2u)), u = √(2/π)(x + 0.044715x³),
// with one e = exp(−2u) (ex2.approx, relative error ~2^-22) and one approximate reciprocal per element. tanhf
// took a dozen instructions and made both GELU kernels instruction-bound (74 and 147 µs per gpt-1.3b call for 256
// and 384 MB); tanh.approx.f32 would be one instruction, but 1 + tanh u cancels for negative x, where its 2^-11
// relative error grows in the result; σ(2u) has no such cancellation.
// u ≥ −40 keeps e finite (e^80): below that GELU(x) = x·σ(2u) is below 1e-33 anyway.
/// σ(2u) of x, and e = exp(−2u) in `e` (1 − σ(2u) = e·σ(2u)).
__device__ __forceinline__ float gelu_sigmoid(float x, float& e) {
  const float u = fmaxf(0.7978845608028654f * (x + 0.044715f * x * x * x), -40.0f);  // √(2/π)(x + 0.044715x³)
  e = __expf(-2.0f * u);
  return __fdividef(1.0f, 1.0f + e);  // σ(2u)
}

/// GELU(x) = x·σ(2u), fp32 in and out.
__device__ __forceinline__ float gelu(float x) {
  float e;
  return x * gelu_sigmoid(x, e);
}

/// d GELU / dx = σ(2u) + 2x·σ(2u)(1 − σ(2u))·du/dx, fp32.
__device__ __forceinline__ float gelu_grad(float x) {
  float e;
  const float s = gelu_sigmoid(x, e);  // σ(2u); 1 − σ(2u) = e·σ(2u)
  const float du = 0.7978845608028654f * (1.0f + 3.0f * 0.044715f * x * x);
  return s + 2.0f * x * (e * s) * s * du;
}

}  // namespace scalescope::train::gpt_kernels::support
