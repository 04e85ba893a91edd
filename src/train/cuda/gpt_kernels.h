#pragma once
// The GPT decoder's fused CUDA kernels (internal to GptCuda; exposed so tests can check each against the CPU
// operations of cpu/gpt_ops.h). Host-callable launchers: each enqueues its kernel(s) on `stream`, checks the
// launch (core::Error) and never synchronises. Storage is bf16 (activations) or fp32 (parameters, gradients,
// statistics); all arithmetic is fp32. Row-major layouts; R = B·T positions, d the width.
//
// Kernel list and what each fuses:
//   embedding_forward      token + position embedding gather from the fp32 master tables, one bf16 rounding
//   embedding_backward     fp32 scatter-add into the tied table (atomics) and the position-gradient sum over B
//   embedding_backward_gathered  the same over every rank's all-gathered rows, without atomics (tokens sorted
//                          with CUB's radix sort), so that every rank computes the same bits
//   layernorm_forward      mean, variance, normalise, affine; saves mean/rstd (warp per row, held in registers
//                          up to d 2048)
//   layernorm_backward     dx (optionally added to the residual gradient in place) + deterministic fp32
//                          column sums for dweight, dbias and, optionally, Σ_rows dx (the bias gradient of the
//                          projection that wrote the residual stream)
//   gelu_forward           GELU (tanh) of the bias-added GEMM output
//   gelu_backward_bias_grad  dpre = dact·GELU′(pre) in place + the fc bias gradient Σ_rows dpre
//   gelu_recompute_backward_bias_grad  the same, and in the same pass GELU(pre) recomputed over pre (backward's
//                          recomputation of the activation: one read of pre instead of two)
//   column_sum             Σ_rows x in fp32 (bias gradients), deterministic two-pass
//   heads_from_rows / rows_from_heads  [B, T, nb·d] ↔ [nb, B, H, T, hdp] relayout for the batched attention
//                          GEMMs (head width padded to hdp = multiple of 8 with zeros so every matrix is
//                          16-byte aligned)
//   causal_softmax_forward  causal mask + softmax in place on the (already scaled) scores, reading only j ≤ i,
//                          and each row's log-sum-exp (fp32), the only softmax state kept for backward
//   causal_softmax_backward P recomputed from the scores and the log-sum-exp, written over the scores, and
//                          dS = P ⊙ (dP − Σ P·dP) over dP, in one pass reading only j ≤ i
//   attention_forward/backward  the relayouts, the strided-batched cuBLASLt GEMMs (q·kᵀ with the 1/√hd
//                          scale in alpha, P·v; dP, q·kᵀ again, dq, dk, dv) and the softmax kernels above, in
//                          order: not flash attention — the bf16 probabilities [B, H, T, T] are materialised in
//                          a scratch buffer, but, as in flash attention, not kept between forward and backward
//   cross_entropy          softmax cross-entropy forward and backward, one kernel: per-position loss (fp32) and
//                          d logits (bf16) written over the logits; the row read once from DRAM where it fits in
//                          shared memory (≤ 112 KB: vocabularies up to 57344), else twice
//   mean                   deterministic mean of the per-position losses
//   adamw                  multi-tensor AdamW over the given chunks (all parameters, or a range) in one launch,
//                          writing the bf16 copies
//   to_bf16                multi-tensor fp32 → bf16 copy of the parameters

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "train/adamw.h"

namespace scalescope::train::cuda {
class LtMatmul;
}

namespace scalescope::train::gpt_kernels {

using bf16 = __nv_bfloat16;

/// Floats of workspace that layernorm_backward, gelu_backward_bias_grad and column_sum need for `rows` × `cols`
/// with `sums` column sums (1 for column_sum and gelu_backward_bias_grad, 3 for layernorm_backward).
std::size_t column_workspace_floats(std::size_t rows, int cols, int sums);

/// Floats of workspace layernorm_backward needs for `rows` × `d`: the one-pass kernel's per-chunk column sums
/// (at most 3 × 65536 × 8 floats, 6 MiB, whatever the shape) or the two-pass path's, whichever is larger.
std::size_t layernorm_backward_workspace_floats(std::size_t rows, int d);

/// x[b, i] = bf16(wte[tokens[b, i]] + wpe[i]), i < T. tokens [B, T + 1]; wte [V, d], wpe [T, d] fp32;
/// x [B, T, d]. d % 8 == 0 (std::invalid_argument otherwise, as for every d below).
void embedding_forward(cudaStream_t stream, const std::int32_t* tokens, int batch, int seq, const float* wte,
                       const float* wpe, int d, bf16* x);

/// dwte[tokens[b, i]] += dx[b, i] (fp32 atomics: accumulate onto the head's part) and dwpe[i] = Σ_b dx[b, i]
/// (overwrite, fixed order). dx [B, T, d] bf16.
void embedding_backward(cudaStream_t stream, const std::int32_t* tokens, int batch, int seq, const bf16* dx, int d,
                        float* dwte, float* dwpe);

/// Bytes of scratch embedding_backward_gathered needs for `positions` = rows × seq gathered positions of width d
/// (4 int32 arrays of `positions`, 2 fp32 partial sums of [positions / 32, d], CUB's radix-sort workspace).
std::size_t gathered_embedding_scratch_bytes(std::size_t positions, int d);

/// The input embedding's gradient over the rows all-gathered from every rank (train/model.h, EmbeddingGather):
/// dwte[v] += scale·Σ dx[b, i] over the positions (b, i) with tokens[b, i] = v, summed in (b, i) order, and
/// dwpe[i] = scale·Σ_b dx[b, i] (overwrite, b in order). tokens [rows, seq + 1] (each in [0, vocab)); dx [rows, seq,
/// d] bf16; dwte [vocab, d], dwpe [seq, d] fp32; scale = 1 / world size. Deterministic: the token ids are sorted
/// (stable radix sort), runs of one token are summed in fixed chunks of 32 sorted positions and the chunks in
/// order, with no atomics, so ranks with the same inputs get the same bits (atomics would not; nor would CUB's
/// reduce-by-key, whose look-back combines partials in a timing-dependent order). `scratch` holds
/// gathered_embedding_scratch_bytes(rows × seq, d) bytes.
/// std::invalid_argument if d % 8 != 0, scratch is too small, or vocab < 1.
void embedding_backward_gathered(cudaStream_t stream, const std::int32_t* tokens, int rows, int seq, const bf16* dx,
                                 int d, int vocab, float scale, float* dwte, float* dwpe, void* scratch,
                                 std::size_t scratch_bytes);

/// LayerNorm (Ba et al. 2016), ε = 1e-5: y = (x − μ)·rstd·w + b. x, y [rows, d] bf16; w, b [d] fp32;
/// mean, rstd [rows] fp32 overwrite. d % 8 == 0; x, y, w and b 16-byte aligned; y must not overlap x
/// (std::invalid_argument for the first two).
void layernorm_forward(cudaStream_t stream, const bf16* x, const float* w, const float* b, std::size_t rows, int d,
                       bf16* y, float* mean, float* rstd);

/// LayerNorm backward (formula in gpt_ops::layernorm_backward): dx = [dx +] rstd·(g − mean(g) − x̂·mean(g·x̂))
/// with g = dy·w (`accumulate`: add to dx, the residual gradient, in place); dw = Σ dy·x̂ and db = Σ dy
/// overwrite (fp32, deterministic); when `dx_colsum` is not null it receives Σ_rows of the final dx (of its bf16
/// values). For d % 256 == 0 and d ≤ 4096 one pass computes dx and the sums together (dy, x and dx read once);
/// other widths take a dx kernel and a column reduction. d % 8 == 0; dy, x, dx and w 16-byte aligned
/// (std::invalid_argument for these); dx must not overlap dy or x. `workspace` holds
/// layernorm_backward_workspace_floats(rows, d) floats (std::invalid_argument if fewer).
void layernorm_backward(cudaStream_t stream, const bf16* dy, const bf16* x, const float* mean, const float* rstd,
                        const float* w, std::size_t rows, int d, bf16* dx, bool accumulate, float* dw, float* db,
                        float* dx_colsum, float* workspace, std::size_t workspace_floats);

/// out = bf16(GELU(pre)), tanh approximation (computed as pre·σ(2u), the same function). n elements, n % 8 == 0.
void gelu_forward(cudaStream_t stream, const bf16* pre, bf16* out, std::size_t n);

/// In place: grad ← bf16(grad·GELU′(pre)) (d out → d pre), and dbias = Σ_rows of the new grad (fp32,
/// overwrite). grad, pre [rows, cols]; cols % 8 == 0; workspace of column_workspace_floats(rows, cols, 1).
void gelu_backward_bias_grad(cudaStream_t stream, bf16* grad, const bf16* pre, std::size_t rows, int cols,
                             float* dbias, float* workspace, std::size_t workspace_floats);

/// gelu_backward_bias_grad with the forward recomputed in the same pass, for a backward that did not keep the
/// activation: grad ← bf16(grad·GELU′(pre)) and pre ← bf16(GELU(pre)) in place (the same bits as gelu_forward;
/// pre's last use, so the activation the next weight gradient reads lands where pre was), and dbias = Σ_rows of
/// the new grad (fp32, overwrite). 8 bytes per element instead of the 10 of gelu_forward + gelu_backward_bias_grad.
/// grad, pre [rows, cols], disjoint (std::invalid_argument when they are the same buffer; a partial overlap is not
/// detected) and 16-byte aligned; cols % 8 == 0; workspace of
/// column_workspace_floats(rows, cols, 1).
void gelu_recompute_backward_bias_grad(cudaStream_t stream, bf16* grad, bf16* pre, std::size_t rows, int cols,
                                       float* dbias, float* workspace, std::size_t workspace_floats);

/// out[c] = Σ_rows x[r, c] in fp32 (overwrite, deterministic). cols % 8 == 0.
void column_sum(cudaStream_t stream, const bf16* x, std::size_t rows, int cols, float* out, float* workspace,
                std::size_t workspace_floats);

/// Head layout for batched attention GEMMs: dst[blk, b, h, t, e] = src[b, t, blk·d + h·hd + e] for e < hd and
/// 0 for hd ≤ e < hdp, where src is [B, T, nb·d] and dst [nb, B, H, T, hdp] (nb = 3 for q/k/v, 1 for one
/// tensor). hdp ≥ hd, hdp % 8 == 0.
void heads_from_rows(cudaStream_t stream, const bf16* src, int nb, int batch, int seq, int heads, int head_dim,
                     int head_dim_padded, bf16* dst);

/// The inverse of heads_from_rows (padding columns are dropped): dst [B, T, nb·d].
void rows_from_heads(cudaStream_t stream, const bf16* src, int nb, int batch, int seq, int heads, int head_dim,
                     int head_dim_padded, bf16* dst);

/// In place on scores [rows, T] bf16 (rows = B·H·T, row r is query i = r mod T, already scaled by 1/√hd):
/// p[i, j] = exp(s[i, j] − m)/Σ_{j' ≤ i} exp(s[i, j'] − m) for j ≤ i and 0 for i < j < end(i) (Vaswani et al.
/// 2017), where queries come in chunks of `chunk` rows and end(i) = min(T, (⌊i/chunk⌋ + 1)·chunk) is the end of
/// i's chunk: the chunked attention GEMMs never read past it, so the rest of the row is left as it was.
/// chunk ≥ T: whole rows. When lse is not null, lse[r] = m + ln Σ_{j' ≤ i} exp(s[i, j'] − m) (fp32, [rows]).
void causal_softmax_forward(cudaStream_t stream, bf16* scores, std::size_t rows, int seq, int chunk,
                            float* lse = nullptr);

/// Softmax backward, in place on grad [rows, T]: dP in, dS = P ⊙ (dP − Σ_{j ≤ i} P·dP) out for j ≤ i, 0 for
/// i < j < end(i), untouched past end(i). With lse (from causal_softmax_forward on the same scores), P is
/// recomputed from the scores (flash attention's recomputation, Dao et al. 2022; fp32 for dS) and written over
/// them in bf16 (0 for i < j < end(i)); with lse null, `scores` already holds the forward's P and is only read.
void causal_softmax_backward(cudaStream_t stream, bf16* scores, const float* lse, bf16* grad, std::size_t rows, int seq,
                             int chunk);

/// Sizes of one causal self-attention call: hd = d/H, hdp = hd rounded up to a multiple of 8. Queries are
/// processed in chunks of `query_chunk` rows (≥ T: one chunk): chunk j only needs keys before its end, so the
/// score and probability GEMMs skip the blocks above the diagonal — (c + 1)/(2c) of the full T×T work for c
/// chunks. A multiple of 8 keeps the softmax vectorised.
struct AttentionShape {
  int batch = 0, seq = 0, heads = 0, head_dim = 0, head_dim_padded = 0, query_chunk = 0;
  std::size_t head_elements() const {  ///< elements of one of q, k, v in head layout [B, H, T, hdp]
    return static_cast<std::size_t>(batch) * heads * seq * head_dim_padded;
  }
  std::size_t score_elements() const {  ///< elements of [B, H, T, T]
    return static_cast<std::size_t>(batch) * heads * seq * seq;
  }
};

/// Causal multi-head attention forward (formula in gpt_ops::attention_forward) through cuBLASLt
/// strided-batched GEMMs over the B·H heads, one set per query chunk: qkv [B, T, 3d] → qkvh [3, B, H, T, hdp]
/// (kept for backward), scores = causal_softmax(q·kᵀ/√hd) [B, H, T, T] bf16 (only the lower triangle and
/// the diagonal blocks of each chunk are written; scratch when backward recomputes them, else kept), lse
/// [B, H, T] fp32 (each row's log-sum-exp, kept for a recomputing backward), heads = P·v [B, H, T, hdp]
/// (scratch), y [B, T, d]. The score scale is applied by the
/// GEMM. std::invalid_argument when lse is null.
void attention_forward(cudaStream_t stream, cuda::LtMatmul& gemm, const bf16* qkv, const AttentionShape& shape,
                       bf16* qkvh, bf16* scores, float* lse, bf16* heads, bf16* y);

/// Its backward: dy [B, T, d] → dqkv [B, T, 3d] from the forward's qkvh, with scratch heads [B, H, T, hdp]
/// (d y in head layout), dscores [B, H, T, T] (dP, then dS) and dqkvh [3, B, H, T, hdp]: dP = dy·vᵀ; P and dS
/// by causal_softmax_backward; dq = dS·k/√hd; dk = dSᵀ·q/√hd; dv = Pᵀ·dy. With lse (the forward's), `scores`
/// is scratch: q·kᵀ/√hd is recomputed into it, then P, and nothing the forward left there is read. With lse
/// null, `scores` must hold the forward's probabilities (kept for backward).
void attention_backward(cudaStream_t stream, cuda::LtMatmul& gemm, const bf16* dy, const bf16* qkvh, const float* lse,
                        const AttentionShape& shape, bf16* scores, bf16* heads, bf16* dscores, bf16* dqkvh, bf16* dqkv);

/// Fused softmax cross-entropy forward and backward over the vocabulary for each of the B·T positions:
/// losses[r] = logsumexp(l_r) − l_r[target] (fp32 math on the bf16 logits) and, over the logits in place,
/// dlogits = bf16(scale·(softmax(l_r) − onehot(target))), with target = tokens[b, i + 1]. logits [B·T, ld]
/// with ld % 8 == 0 and ld ≥ vocab; columns in [vocab, ld) are set to 0. std::invalid_argument for a bad ld or an
/// unaligned pointer; core::Error from CUDA (the launch, or the shared-memory opt-in of the staged kernel).
void cross_entropy(cudaStream_t stream, bf16* logits, int ld, const std::int32_t* tokens, int batch, int seq,
                   int vocab, float scale, float* losses);

/// *out = mean of values[0 … n) (one block, fixed order).
void mean(cudaStream_t stream, const float* values, std::size_t n, float* out);

/// One tensor of a multi-tensor launch: element offsets into the flat master/moment buffers, the gradient
/// buffer and the bf16 copy buffer, its size, and whether weight decay applies.
struct TensorSlot {
  std::size_t param_offset = 0, grad_offset = 0, shadow_offset = 0, numel = 0;
  int decay = 0;
};

/// Work split for multi-tensor launches: tensor index and element range [begin, end) of one block's chunk.
struct TensorChunk {
  int tensor = 0;
  std::size_t begin = 0, end = 0;
};

/// Elements per chunk of a multi-tensor launch.
inline constexpr std::size_t kChunkElements = 1u << 16;

/// AdamW (Loshchilov & Hutter 2019; formula and `step` from train/adamw.h) over the `chunk_count` chunks at
/// `chunks` in one launch (all of a model's chunks, or the consecutive ones of a parameter range: each chunk names
/// its tensor): fp32 p, m, v at param_offset, g at grad_offset, and the bf16 copy at shadow_offset refreshed;
/// step.decay applies to the tensors with decay set. `tensors` and `chunks` are device arrays.
void adamw(cudaStream_t stream, const TensorSlot* tensors, const TensorChunk* chunks, int chunk_count, float* params,
           const float* grads, float* m, float* v, bf16* shadow, const AdamWStep& step);

/// shadow[shadow_offset + e] = bf16(params[param_offset + e]) for every tensor, in one launch.
void to_bf16(cudaStream_t stream, const TensorSlot* tensors, const TensorChunk* chunks, int chunk_count,
             const float* params, bf16* shadow);

}  // namespace scalescope::train::gpt_kernels
