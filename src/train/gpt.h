#pragma once
// The GPT decoder workload (GitHub issue #5): the GPT-2 architecture (Radford et al. 2019, "Language Models
// are Unsupervised Multitask Learners"; the GPT-1 decoder of Radford et al. 2018 with pre-LayerNorm blocks).
// For a row of T + 1 tokens t[0..T], inputs are t[0..T-1] and targets t[1..T]:
//
//   x_0    = E[t_i] + P[i]                                      [B, T, d]  token + position embedding
//   block l = 0 … L-1 (pre-LayerNorm):
//     a    = LN1(x_l)                                           LayerNorm, Ba et al. 2016
//     q,k,v = split(a·W_qkv + b_qkv)                            [B, T, 3d] → H heads of d/H
//     y    = softmax(q·kᵀ/√(d/H) + causal mask)·v               Vaswani et al. 2017, per head
//     x'   = x_l + y·W_proj + b_proj                            residual
//     x_l+1 = x' + GELU(LN2(x')·W_fc + b_fc)·W_fp + b_fp        GELU tanh approximation, Hendrycks & Gimpel 2016
//   logits = LN_f(x_L)·Eᵀ                                       [B, T, V]  output head tied to E
//   loss   = mean over B·T positions of −log softmax(logits)[target]   (nats per predicted token)
//
// Weights are [in, out] row-major (y = x·W), as in the MLP LM; E is [V, d]. No dropout. Pure description and
// host-side initialisation: no device code here.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "train/flash_attention_shape.h"
#include "train/model.h"

namespace scalescope::train {

/// Bytes per rank for training a GPT with fp32 master weights and bf16 activations (GptCuda's buffers).
struct GptMemoryEstimate {
  double parameters = 0;     ///< fp32 master weights, 4 B/parameter
  double gradients = 0;      ///< fp32 gradient buffer, 4 B/parameter (the engine's flat buffer)
  double optimizer = 0;      ///< AdamW first and second moments, fp32, 8 B/parameter
  double weight_copies = 0;  ///< bf16 copies used by the GEMMs, 2 B/parameter
  double activations = 0;    ///< kept for backward plus shared scratch, for the batch given
  double total() const { return parameters + gradients + optimizer + weight_copies + activations; }
};

/// Whose fused attention kernels GptCuda runs (GptConfig::fused_attention); `--attention cudnn|flash`.
enum class FusedAttention { automatic, cudnn, flash };
/// "automatic", "cudnn" or "flash".
std::string to_string(FusedAttention f);
/// The inverse of to_string. Errors: std::invalid_argument naming the value (a damaged job or result file; its
/// reader adds the file's name).
FusedAttention fused_attention_from_string(const std::string& name);

/// Sizes of a GPT decoder. Presets follow issue #5; `layers` may be lowered so a slice of a large model fits
/// one GPU while each layer keeps its true compute/gradient balance.
struct GptConfig {
  int layers = 4;             ///< transformer blocks, ≥ 1
  int d_model = 312;          ///< residual width d
  int heads = 12;             ///< attention heads H; d_model % heads == 0
  int ffn = 1200;             ///< MLP hidden width
  int vocab = 30522;          ///< token ids in [0, vocab)
  int seq = 128;              ///< context length T: a batch row holds T + 1 tokens
  std::uint64_t seed = 1234;  ///< initialisation seed (same on every rank)
  /// GptCuda: recompute the GELU output (from the pre-activation) and, on the GEMM attention path, the attention
  /// probabilities (from q, k and each row's log-sum-exp, as flash attention, Dao et al. 2022) in backward
  /// instead of keeping them per layer — the selective recomputation of Korthikanti et al. 2022. Saves R·ffn
  /// bf16 elements per layer (+ B·H·T² on the GEMM path) for a memory-bound GELU pass (+ one more score GEMM);
  /// flash attention never stores the probabilities. On one H200, gpt-1.3b at 8 rows: 32.25 instead of 35.25
  /// GiB with flash attention, 32.8 instead of 41.5 on the GEMM path (bench/RESULTS.md). The CPU reference
  /// ignores it.
  bool recompute_activations = true;
  /// GptCuda: causal attention through the fused flash-attention kernels (cuda/flash_attention.h: no [B, H, T, T]
  /// tensor in device memory) where the head width allows it (uses_flash_attention), instead of cuBLASLt batched
  /// GEMMs around a softmax kernel. The CPU reference ignores it.
  bool flash_attention = true;
  /// Which fused kernels run that attention: cuDNN's (cuda/cudnn_attention.h), the project's own
  /// (cuda/flash_attention.h), or `automatic`: cuDNN's where this build has it (cudnn_attention_built()), else the
  /// project's. Both share layouts and log-sum-exp, so every other kernel is the same; the memory plan counts the
  /// project's fp32 dq accumulator for both, which cuDNN's own workspace and state replace (about 10 MB more at
  /// gpt-1.3b's shape on an H200, bench/RESULTS.md 2026-12-01 fourth session).
  FusedAttention fused_attention = FusedAttention::automatic;

  int head_dim() const { return d_model / heads; }
  /// Whether GptCuda runs the fused attention: flash_attention set and a head width of 64 or 128 (the widths the
  /// kernels are built for; tiny-14m's 26 takes the GEMM path).
  bool uses_flash_attention() const { return flash_attention && gpt_kernels::flash_attention_supported(head_dim()); }
  /// Whether that fused attention is cuDNN's: uses_flash_attention() and fused_attention cudnn, or automatic in a
  /// build with cuDNN.
  bool uses_cudnn_attention() const {
    return uses_flash_attention() && (fused_attention == FusedAttention::cudnn ||
                                      (fused_attention == FusedAttention::automatic && gpt_kernels::cudnn_attention_built()));
  }
  /// GptCuda's attention kernels in one word, for result files: "cudnn", "flash" or "gemm".
  const char* gpu_attention_kernels() const {
    return uses_cudnn_attention() ? "cudnn" : uses_flash_attention() ? "flash" : "gemm";
  }
  /// Applies `--attention`: "cudnn" or "flash" (fused_attention; flash_attention on), "gemm" (flash_attention off),
  /// "" (the defaults). Errors: core::UsageError for another value, or "cudnn" in a build without cuDNN.
  void choose_attention(std::string_view choice);
  /// How GptCuda computes attention, for reports: "flash attention (cuDNN's fused kernels)", "flash attention
  /// (fused kernels)" (the project's), or "attention by cuBLASLt GEMMs" followed by why ("--attention gemm", or
  /// the head width the fused kernels do not take).
  std::string gpu_attention() const;

  /// A config of these sizes (the fields of the same names), the defaults for the rest (seed, recomputation).
  /// Nothing is checked here: validate() does.
  static GptConfig sized(int layers, int d_model, int heads, int ffn, int vocab, int seq);

  /// Parameters in forward order:
  ///   wte [V, d] (tied with the output head), wpe [T, d],
  ///   per block l "h.l.": ln1.weight [d], ln1.bias [d], attn.qkv.weight [d, 3d], attn.qkv.bias [3d],
  ///     attn.proj.weight [d, d], attn.proj.bias [d], ln2.weight [d], ln2.bias [d], mlp.fc.weight [d, ffn],
  ///     mlp.fc.bias [ffn], mlp.proj.weight [ffn, d], mlp.proj.bias [d];
  ///   lnf.weight [d], lnf.bias [d].
  /// The q, k and v columns of attn.qkv are [0, d), [d, 2d), [2d, 3d); head h owns columns h·d/H … of each.
  std::vector<ParameterInfo> parameter_layout() const;
  /// V·d + T·d + L·(4d² + 2·d·ffn + 9d + ffn) + 2d.
  std::size_t parameter_count() const;
  /// Elements of the matrices that take part in matmuls: L·(4d² + 2·d·ffn) + V·d (the tied head counts once,
  /// as the head's matmul; the position embedding, biases and LayerNorms do none).
  double matmul_parameter_count() const;
  /// Training FLOPs per predicted token (forward + backward, multiply-add = 2): 6·N + 12·L·T·d, with N =
  /// matmul_parameter_count() — PaLM's model-FLOPs formula (Chowdhery et al. 2022, Appendix B: 6N + 12·L·H·Q·T,
  /// H·Q = d), where 12·L·T·d counts the attention score and value matmuls over the full T×T (as Kaplan et
  /// al. 2020, Table 1) and N includes the de-embedding (head) matmul of Kaplan's Table 1. Element-wise work
  /// and the embedding lookup are left out. This is the numerator of MFU.
  double flops_per_token() const;
  /// Memory per rank for a batch of `rows` rows (each seq + 1 tokens), following GptCuda's buffers:
  /// per layer and token the saved activations are 2 residual-stream tensors, 2 LayerNorm outputs, q/k/v,
  /// the attention output (bf16 d each, q/k/v head dims padded to a multiple of 8), the MLP pre-activation
  /// (bf16 ffn), LayerNorm statistics and the attention log-sum-exp (fp32 H), and, unless
  /// recompute_activations, the GELU output (bf16 ffn) and, without flash attention, the attention
  /// probabilities (bf16 H·T). Plus the embedding output, final LayerNorm, bf16 logits over V rounded up to a
  /// multiple of 8, and shared scratch: the qkv GEMM output or its gradient, the MLP hidden gradient, the
  /// residual and LayerNorm gradients; with flash attention its fp32 workspace (dq, B·T·d, and B·H·T row
  /// dots); without it the head-layout buffers, the score gradient [B, H, T, T] and, when recomputing, the
  /// recomputed probabilities [B, H, T, T]. Excludes the CUDA context and library workspaces.
  /// Throws core::UsageError for rows < 1.
  GptMemoryEstimate memory_per_rank(int rows) const;
  /// The same for the fp32 CPU reference (GptCpu's buffers): fp32 weights, gradients and moments (no bf16
  /// copies); per layer every activation kept (LN outputs, qkv, the probabilities H·T, attention output,
  /// residual after attention, MLP pre-activation and GELU output, LayerNorm statistics), the L + 1 residual
  /// stream tensors, the final LayerNorm, the softmax of the logits and d logits ([R, V] each — usually the
  /// largest part) and one layer's gradients. Excludes BLAS and MPI buffers. Throws core::UsageError for rows < 1.
  GptMemoryEstimate host_memory_per_rank(int rows) const;
  /// Throws core::UsageError naming the bad field (non-positive sizes, d_model not divisible by heads, …).
  void validate() const;
  /// e.g. "gpt: 12 layers × d 768 (12 heads × 64, ffn 3072), vocab 50304, seq 1024".
  std::string describe() const;

  /// Named sizes (issue #5): tiny-14m (4 layers, d 312, 12 heads, ffn 1200, vocab 30522, seq 128 — the
  /// TinyBERT-4L-312 shape), gpt2-124m (12, 768, 12, 3072, 50304, 1024), gpt-350m (24, 1024, 16, 4096, 50304,
  /// 1024), gpt-1.3b (24, 2048, 16, 8192, 50304, 1024), llama2-7b-shape (32, 4096, 32, 11008, 32000, 4096)
  /// and llama2-13b-shape (40, 5120, 40, 13824, 32000, 4096). The Llama shapes keep Llama 2's widths, depth,
  /// vocabulary and 4096-token training context (Touvron et al. 2023) in the GPT-2 block (two FFN matrices
  /// instead of SwiGLU's three, so 5.2 B and 10.2 B parameters at full depth): the context sets the share of
  /// attention in the compute, which is what the scaling balance depends on. Throws core::UsageError listing
  /// the known names.
  static GptConfig preset(std::string_view name);
  static std::vector<std::string> preset_names();
};

/// Deterministic initial parameters (fp32, forward order, parameter_count() elements), a pure function of
/// the config and its seed, GPT-2 style: matrices and embeddings ~ N(0, 0.02²), the two residual projections
/// (attn.proj.weight and mlp.proj.weight) ~ N(0, (0.02/√(2L))²) (Radford et al. 2019, §2.3), biases 0,
/// LayerNorm weights 1 and biases 0. Draws come from normal_init.h (parameter index = stream).
/// Throws core::UsageError for an invalid config.
std::vector<float> gpt_initial_parameters(const GptConfig& config);

/// Checks a batch before a backend copies it: rows ≥ 1, row_tokens == seq + 1, tokens not null, every token
/// in [0, vocab). Throws core::Error naming the first problem.
void check_gpt_batch(const GptConfig& config, const TokenBatchView& batch);

/// The GPT's tied embedding as Model::embedding_gather describes it: wte (parameter 0) and wpe (1); per batch
/// row, (seq + 1) int32 tokens and seq × d embedding-output gradients of `gradient_element_bytes` bytes each (2:
/// GptCuda's bf16, 4: GptCpu's fp32); the two tables' fp32 gradient bytes.
EmbeddingGather gpt_embedding_gather(const GptConfig& config, std::size_t gradient_element_bytes);

/// Whether AdamW's decoupled weight decay applies to parameter `name`: the 2-D matrices (attn.qkv, attn.proj,
/// mlp.fc, mlp.proj weights); not embeddings, biases or LayerNorm parameters (as nanoGPT's and GPT-3's
/// practice and AdamWConfig's rule "weight matrices only").
bool gpt_decays(const std::string& name);

}  // namespace scalescope::train
