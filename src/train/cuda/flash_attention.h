#pragma once
// Fused causal self-attention for GptCuda (flash attention, Dao et al. 2022; the FlashAttention-2 work split,
// Dao 2023): the [B, H, T, T] scores and probabilities never reach device memory. Forward: one thread block per
// (64-query tile, head) streams 64-key tiles of k and v through shared memory, keeps an online softmax (row max
// and sum) and the output in registers, and writes y and each row's log-sum-exp. Backward: one block per
// (64-key tile, head) streams the query tiles that see its keys, recomputes P from q, k and the log-sum-exp,
// accumulates dk and dv in registers and adds its share of dq to an fp32 buffer with atomics (so dq's sum order,
// and its last bits, vary from run to run, like the token embedding's scatter-add). Matrix products run on the
// tensor cores (mma.sync m16n8k16, bf16 in, fp32 accumulate); P and dS are rounded to bf16 before their
// products, as in the paper's kernels.
//
// Layouts are GptCuda's row layouts, so no relayout kernels are needed: qkv [B, T, 3d] (q, k, v columns [0, d),
// [d, 2d), [2d, 3d); head h owns columns h·hd … h·hd + hd − 1 of each), y and dy [B, T, d], dqkv [B, T, 3d],
// lse [B, H, T] fp32 (natural log of the scaled scores' row sum: lse = m + ln Σ_j exp(s_j − m), s = q·k/√hd).
// Head widths 64 and 128 only (flash_attention_supported); 1 ≤ T ≤ 4 194 240, B·H < 2³¹ (the launch grid).
// Pointers 16-byte aligned. Errors: std::invalid_argument for an unsupported shape or a misaligned pointer,
// core::Error for a failed launch.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "train/flash_attention_shape.h"  // FlashAttentionShape, flash_attention_supported, flash_attention_workspace_floats

namespace scalescope::train::gpt_kernels {

/// y = softmax(mask(q·kᵀ/√hd))·v per head, causal (key j ≤ query i), and lse as above. qkv [B, T, 3d] bf16;
/// y [B, T, d] bf16 (overwritten); lse [B, H, T] fp32 (overwritten).
void flash_attention_forward(cudaStream_t stream, const __nv_bfloat16* qkv, const FlashAttentionShape& shape,
                             __nv_bfloat16* y, float* lse);

/// Backward of flash_attention_forward from its qkv, y and lse: dP = dy·vᵀ, dS = P ⊙ (dP − D) with P recomputed
/// from the scores and lse, dq = dS·k/√hd, dk = dSᵀ·q/√hd, dv = Pᵀ·dy. dy [B, T, d]; dqkv [B, T, 3d] bf16
/// (overwritten); workspace of flash_attention_workspace_floats(shape) floats (scratch).
void flash_attention_backward(cudaStream_t stream, const __nv_bfloat16* dy, const __nv_bfloat16* qkv,
                              const __nv_bfloat16* y, const float* lse, const FlashAttentionShape& shape,
                              float* workspace, std::size_t workspace_floats, __nv_bfloat16* dqkv);

}  // namespace scalescope::train::gpt_kernels
