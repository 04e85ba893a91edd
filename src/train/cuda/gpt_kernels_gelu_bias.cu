// The GPT's GELU and bias-gradient kernels (gpt_kernels.h): GELU's forward, its backward fused with the fc
// bias gradient (and, for the recomputing backward, GELU(pre) again in the same pass), the column sums of bias
// gradients, and the workspace every column reduction needs.

#include "train/cuda/gpt_kernels.h"

#include <cstddef>
#include <type_traits>

#include "gpu/cuda_check.h"
#include "train/cuda/gelu.cuh"
#include "train/cuda/gpt_kernels_internal.cuh"

namespace scalescope::train::gpt_kernels {
namespace {

using support::gelu;
using support::gelu_grad;

/// Σ_rows x.
struct SumOp {
  const bf16* x;
  int cols;
  __device__ void operator()(std::size_t r, int c0, float (&acc)[1][kColVec]) const {
    const Pack<kColVec> p = *reinterpret_cast<const Pack<kColVec>*>(x + r * cols + c0);
#pragma unroll
    for (int v = 0; v < kColVec; ++v) acc[0][v] += to_f(p.v[v]);
  }
};

/// grad ← bf16(grad·GELU′(pre)) in place, and Σ_rows of the rounded result (what the GEMMs see). RECOMPUTE: also
/// pre ← bf16(GELU(pre)) in place from the same load (gelu and gelu_grad share one σ), the bits gelu_forward writes.
template <bool RECOMPUTE>
struct GeluBackwardOp {
  bf16* grad;
  std::conditional_t<RECOMPUTE, bf16*, const bf16*> pre;
  int cols;
  __device__ void operator()(std::size_t r, int c0, float (&acc)[1][kColVec]) const {
    Pack<kColVec>* gp = reinterpret_cast<Pack<kColVec>*>(grad + r * cols + c0);
    Pack<kColVec> g = *gp;
    Pack<kColVec> x = *reinterpret_cast<const Pack<kColVec>*>(pre + r * cols + c0);
#pragma unroll
    for (int v = 0; v < kColVec; ++v) {
      const float xf = to_f(x.v[v]);
      g.v[v] = __float2bfloat16(to_f(g.v[v]) * gelu_grad(xf));
      if constexpr (RECOMPUTE) x.v[v] = __float2bfloat16(gelu(xf));
      acc[0][v] += to_f(g.v[v]);
    }
    *gp = g;
    if constexpr (RECOMPUTE) *reinterpret_cast<Pack<kColVec>*>(pre + r * cols + c0) = x;
  }
};

// -------------------------------------------------------------------------------------------------------------
// Element-wise.

__global__ void gelu_forward_kernel(const bf16* pre, bf16* out, std::size_t packs) {
  GRID_STRIDE_LOOP(p, packs) {
    const Pack<8> x = reinterpret_cast<const Pack<8>*>(pre)[p];
    Pack<8> y;
#pragma unroll
    for (int v = 0; v < 8; ++v) y.v[v] = __float2bfloat16(gelu(to_f(x.v[v])));
    reinterpret_cast<Pack<8>*>(out)[p] = y;
  }
}

}  // namespace

std::size_t column_workspace_floats(std::size_t rows, int cols, int sums) {
  return static_cast<std::size_t>(column_plan(rows, cols).chunks) * static_cast<std::size_t>(sums) *
         static_cast<std::size_t>(cols);
}

void gelu_forward(cudaStream_t stream, const bf16* pre, bf16* out, std::size_t n) {
  require(n % 8 == 0, "GELU size must be a multiple of 8");
  require_aligned(pre, "pre");
  require_aligned(out, "out");
  gelu_forward_kernel<<<blocks_for(n / 8), kThreads, 0, stream>>>(pre, out, n / 8);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
}

void gelu_backward_bias_grad(cudaStream_t stream, bf16* grad, const bf16* pre, std::size_t rows, int cols, float* dbias,
                             float* workspace, std::size_t workspace_floats) {
  require_aligned(grad, "grad");
  require_aligned(pre, "pre");
  column_reduce<1>(stream, rows, cols, GeluBackwardOp<false>{grad, pre, cols}, workspace, workspace_floats, dbias,
                   nullptr, nullptr);
}

void gelu_recompute_backward_bias_grad(cudaStream_t stream, bf16* grad, bf16* pre, std::size_t rows, int cols,
                                       float* dbias, float* workspace, std::size_t workspace_floats) {
  require_aligned(grad, "grad");
  require_aligned(pre, "pre");
  require(grad != pre, "GELU backward: grad and pre must be different buffers");
  column_reduce<1>(stream, rows, cols, GeluBackwardOp<true>{grad, pre, cols}, workspace, workspace_floats, dbias,
                   nullptr, nullptr);
}

void column_sum(cudaStream_t stream, const bf16* x, std::size_t rows, int cols, float* out, float* workspace,
                std::size_t workspace_floats) {
  require_aligned(x, "x");
  column_reduce<1>(stream, rows, cols, SumOp{x, cols}, workspace, workspace_floats, out, nullptr, nullptr);
}

}  // namespace scalescope::train::gpt_kernels
