#pragma once
// What the fused flash-attention kernels (train/cuda/flash_attention.h) take and need, without CUDA: the shape of
// one call, the head widths the kernels are built for, and the workspace their backward needs. The CUDA-free
// GptConfig (train/gpt.h) plans with these (which attention GptCuda runs, memory per rank); the kernels check and
// size with the same functions, so the two cannot disagree.

#include <cstddef>

namespace scalescope::train::gpt_kernels {

/// Sizes of one fused attention call: batch B, sequence T, heads H, head width hd (d = H·hd).
struct FlashAttentionShape {
  int batch = 0, seq = 0, heads = 0, head_dim = 0;
  int d_model() const { return heads * head_dim; }
};

/// Whether the fused kernels handle this head width (64 or 128: the GPT-2/350m and the 1.3b/Llama presets).
inline bool flash_attention_supported(int head_dim) { return head_dim == 64 || head_dim == 128; }

/// Whether this build has cuDNN's fused attention (train/cuda/cudnn_attention.h): CMake found cuDNN 9 and
/// cudnn-frontend (SCALESCOPE_HAVE_CUDNN). Defined in scalescope_train, so CUDA-free code can plan with it.
bool cudnn_attention_built();

/// Floats of workspace flash_attention_backward needs: B·T·d for the fp32 dq accumulator and B·H·T for
/// D = rowsum(dy ⊙ y), rounded up to a multiple of 64.
inline std::size_t flash_attention_workspace_floats(const FlashAttentionShape& s) {
  const std::size_t positions = static_cast<std::size_t>(s.batch) * static_cast<std::size_t>(s.seq);
  return positions * static_cast<std::size_t>(s.d_model()) + ((positions * static_cast<std::size_t>(s.heads) + 63) / 64) * 64;
}

}  // namespace scalescope::train::gpt_kernels
