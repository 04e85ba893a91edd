#pragma once
// Causal self-attention through cuDNN's fused attention (its scaled-dot-product "flash" engines, reached through
// cudnn-frontend's graph API), for GptCuda. The same contract as the project's own kernels
// (train/cuda/flash_attention.h): the same row layouts, so q, k and v are read straight from the qkv GEMM's
// output and dq, dk, dv written straight into its gradient, and the same log-sum-exp between forward and backward.
// Why a library: on an H200 at gpt-1.3b's shape cuDNN's Hopper kernels run a layer's forward and backward in about
// 0.14 and 0.40 ms against 0.18 and 0.59 for ours (bench/RESULTS.md, 2026-12-01 third session, call 5).
//
// Layouts: qkv [B, T, 3d] bf16 (q, k, v columns [0, d), [d, 2d), [2d, 3d); head h owns columns h·hd … h·hd + hd − 1
// of each), y and dy [B, T, d] bf16, dqkv [B, T, 3d] bf16, lse [B, H, T] fp32 (natural log of the scaled scores'
// row sum, cuDNN's "stats"). Pointers 16-byte aligned (cuDNN's requirement for its vectorised loads).
//
// Built only when CMake finds cuDNN 9 and cudnn-frontend (SCALESCOPE_HAVE_CUDNN); otherwise every entry point throws
// core::Error saying how to build it in (cudnn_attention_built() in train/flash_attention_shape.h tells which).

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>

#include "train/flash_attention_shape.h"  // FlashAttentionShape

namespace scalescope::train::gpt_kernels {

/// The forward and backward execution plans for one attention shape, built once (cuDNN's heuristics pick the
/// engines; building takes tens to hundreds of milliseconds) and run on any stream. Not thread-safe: one object per
/// model. Destroying it destroys its cuDNN handle; GptCuda waits for its stream first. The dq reduction inside
/// cuDNN's backward may use atomics (its non-deterministic algorithm, the faster one, as in the project's own
/// kernels), so dq's last bits may vary from run to run.
class CudnnAttention {
 public:
  /// Builds both plans for `shape` (causal, scale 1/√hd) on the current CUDA device. Errors: core::Error naming
  /// cuDNN's message when cuDNN has no engine for this shape or GPU (e.g. before sm_80) or one of its
  /// sub-libraries fails to load; std::invalid_argument for a non-positive size. (libcudnn itself is linked: a
  /// binary built with it does not start without it.)
  explicit CudnnAttention(const FlashAttentionShape& shape);
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  const FlashAttentionShape& shape() const;
  /// Bytes of device workspace forward and backward need (the larger of the two); may be 0.
  std::size_t workspace_bytes() const;
  /// cuDNN's version as loaded at run time, e.g. "9.19.0" (for reports).
  static std::string library_version();

  /// y = softmax(mask(q·kᵀ/√hd))·v per head, causal, and lse. Writes all of y and lse. `workspace` holds at least
  /// workspace_bytes() bytes (may be null when that is 0). Errors: core::Error with cuDNN's message.
  void forward(cudaStream_t stream, const __nv_bfloat16* qkv, __nv_bfloat16* y, float* lse, void* workspace) const;
  /// The gradients dq, dk, dv of forward's output, from dy, qkv, forward's y and lse, written over all of dqkv.
  void backward(cudaStream_t stream, const __nv_bfloat16* dy, const __nv_bfloat16* qkv, const __nv_bfloat16* y,
                const float* lse, __nv_bfloat16* dqkv, void* workspace) const;

 private:
  struct Plans;
  std::unique_ptr<Plans> plans_;
};

}  // namespace scalescope::train::gpt_kernels
