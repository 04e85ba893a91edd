// The GPT's attention kernels (gpt_kernels.h): the [B, T, nb·d] ↔ [nb, B, H, T, hdp] relayouts, the causal
// softmax forward and backward, and attention_forward/backward, which order them around the strided-batched
// cuBLASLt GEMMs, query chunk by query chunk.

#include "train/cuda/gpt_kernels.h"

#include <cmath>
#include <cstddef>

#include "gpu/cuda_check.h"
#include "train/cuda/gpt_kernels_internal.cuh"
#include "train/cuda/lt_matmul.h"

namespace scalescope::train::gpt_kernels {
namespace {

// -------------------------------------------------------------------------------------------------------------
// Attention relayout. VEC = 8 when the head width is a multiple of 8 (then hdp = hd), else 1.

template <int VEC>
__global__ void heads_from_rows_kernel(const bf16* src, int nb, int batch, int seq, int heads, int hd, int hdp, bf16* dst,
                                       std::size_t packs) {
  const std::size_t d = static_cast<std::size_t>(heads) * hd;
  GRID_STRIDE_LOOP(p, packs) {
    std::size_t i = p * VEC;
    const int e = static_cast<int>(i % hdp);
    i /= hdp;
    const std::size_t t = i % seq;
    i /= seq;
    const std::size_t h = i % heads;
    i /= heads;
    const std::size_t b = i % batch, blk = i / batch;
    Pack<VEC> out;
    if (e < hd) {
      out = *reinterpret_cast<const Pack<VEC>*>(src + (b * seq + t) * nb * d + blk * d + h * hd + e);
    } else {
#pragma unroll
      for (int v = 0; v < VEC; ++v) out.v[v] = __float2bfloat16(0.0f);
    }
    reinterpret_cast<Pack<VEC>*>(dst)[p] = out;
  }
}

template <int VEC>
__global__ void rows_from_heads_kernel(const bf16* src, int nb, int batch, int seq, int heads, int hd, int hdp, bf16* dst,
                                       std::size_t packs) {
  const std::size_t d = static_cast<std::size_t>(heads) * hd;
  GRID_STRIDE_LOOP(p, packs) {
    std::size_t i = p * VEC;
    const int e = static_cast<int>(i % hdp);
    if (e >= hd) continue;
    i /= hdp;
    const std::size_t t = i % seq;
    i /= seq;
    const std::size_t h = i % heads;
    i /= heads;
    const std::size_t b = i % batch, blk = i / batch;
    *reinterpret_cast<Pack<VEC>*>(dst + (b * seq + t) * nb * d + blk * d + h * hd + e) =
        reinterpret_cast<const Pack<VEC>*>(src)[p];
  }
}

// -------------------------------------------------------------------------------------------------------------
// Causal softmax, one warp per row of T scores; only keys j ≤ i are read. VEC = 8 when T % 8 == 0.

/// End of query i's chunk (exclusive): the last key column any chunked attention GEMM reads for row i.
__device__ __forceinline__ int chunk_end(int i, int seq, int chunk) { return min(seq, (i / chunk + 1) * chunk); }

template <int VEC>
__global__ void __launch_bounds__(kThreads) causal_softmax_forward_kernel(bf16* scores, std::size_t rows, int seq,
                                                                          int chunk, float* lse) {
  const std::size_t row = blockIdx.x * static_cast<std::size_t>(kRowsPerBlock) + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const int i = static_cast<int>(row % seq);
  Pack<VEC>* s = reinterpret_cast<Pack<VEC>*>(scores + row * seq);
  // Packs holding some j ≤ i, and packs up to the chunk's end (VEC divides chunk and seq).
  const int valid = (i + VEC) / VEC, packs = chunk_end(i, seq, chunk) / VEC;
  float m = -CUDART_INF_F, sum = 0.0f;
  for (int k = lane; k < valid; k += kWarp) {
    const Pack<VEC> p = s[k];
#pragma unroll
    for (int v = 0; v < VEC; ++v)
      if (k * VEC + v <= i) push_softmax(m, sum, to_f(p.v[v]));
  }
  warp_merge_softmax(m, sum);
  if (lse != nullptr && lane == 0) lse[row] = m + __logf(sum);
  const float inv = 1.0f / sum;
  for (int k = lane; k < packs; k += kWarp) {
    Pack<VEC> p{};
    if (k < valid) p = s[k];
#pragma unroll
    for (int v = 0; v < VEC; ++v)
      p.v[v] = __float2bfloat16(k * VEC + v <= i ? __expf(to_f(p.v[v]) - m) * inv : 0.0f);
    s[k] = p;
  }
}

// With lse, the backward recomputes P from the scores and the forward's log-sum-exp (flash attention's trade,
// Dao et al. 2022): one more score GEMM instead of keeping B·H·T² probabilities per layer. P is computed in
// fp32 for dS and written back over the scores in bf16 for the dv GEMM. Without lse, `scores` holds P.
template <int VEC>
__global__ void __launch_bounds__(kThreads) causal_softmax_backward_kernel(bf16* scores, const float* lse, bf16* grad,
                                                                           std::size_t rows, int seq, int chunk) {
  const std::size_t row = blockIdx.x * static_cast<std::size_t>(kRowsPerBlock) + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const int i = static_cast<int>(row % seq);
  Pack<VEC>* s = reinterpret_cast<Pack<VEC>*>(scores + row * seq);
  Pack<VEC>* g = reinterpret_cast<Pack<VEC>*>(grad + row * seq);
  const bool recompute = lse != nullptr;
  const float row_lse = recompute ? lse[row] : 0.0f;
  const int valid = (i + VEC) / VEC, packs = chunk_end(i, seq, chunk) / VEC;
  float dot = 0.0f;
  for (int k = lane; k < valid; k += kWarp) {
    const Pack<VEC> sp = s[k], dp = g[k];
#pragma unroll
    for (int v = 0; v < VEC; ++v)
      if (k * VEC + v <= i) dot += (recompute ? __expf(to_f(sp.v[v]) - row_lse) : to_f(sp.v[v])) * to_f(dp.v[v]);
  }
  dot = warp_sum(dot);
  // Each lane rewrites only the packs it read above, so reading and writing in place needs no barrier.
  for (int k = lane; k < packs; k += kWarp) {
    Pack<VEC> p_out, ds_out;
    if (k < valid) {
      const Pack<VEC> sp = s[k], dp = g[k];
#pragma unroll
      for (int v = 0; v < VEC; ++v) {
        const float p = k * VEC + v > i ? 0.0f : recompute ? __expf(to_f(sp.v[v]) - row_lse) : to_f(sp.v[v]);
        p_out.v[v] = __float2bfloat16(p);
        ds_out.v[v] = __float2bfloat16(p * (to_f(dp.v[v]) - dot));
      }
    } else {
#pragma unroll
      for (int v = 0; v < VEC; ++v) p_out.v[v] = ds_out.v[v] = __float2bfloat16(0.0f);
    }
    if (recompute) s[k] = p_out;  // kept probabilities are already P, zeros included
    g[k] = ds_out;
  }
}

}  // namespace

void heads_from_rows(cudaStream_t stream, const bf16* src, int nb, int batch, int seq, int heads, int head_dim,
                     int head_dim_padded, bf16* dst) {
  require(head_dim_padded >= head_dim && head_dim_padded % 8 == 0, "padded head width must be ≥ hd and a multiple of 8");
  const std::size_t n = static_cast<std::size_t>(nb) * batch * heads * seq * head_dim_padded;
  if (head_dim % 8 == 0 && head_dim_padded == head_dim) {
    require_aligned(src, "src");
    require_aligned(dst, "dst");
    heads_from_rows_kernel<8><<<blocks_for(n / 8), kThreads, 0, stream>>>(src, nb, batch, seq, heads, head_dim,
                                                                          head_dim_padded, dst, n / 8);
  } else {
    heads_from_rows_kernel<1><<<blocks_for(n), kThreads, 0, stream>>>(src, nb, batch, seq, heads, head_dim, head_dim_padded,
                                                                      dst, n);
  }
  SCALESCOPE_CUDA_CHECK_LAUNCH();
}

void rows_from_heads(cudaStream_t stream, const bf16* src, int nb, int batch, int seq, int heads, int head_dim,
                     int head_dim_padded, bf16* dst) {
  require(head_dim_padded >= head_dim && head_dim_padded % 8 == 0, "padded head width must be ≥ hd and a multiple of 8");
  const std::size_t n = static_cast<std::size_t>(nb) * batch * heads * seq * head_dim_padded;
  if (head_dim % 8 == 0 && head_dim_padded == head_dim) {
    require_aligned(src, "src");
    require_aligned(dst, "dst");
    rows_from_heads_kernel<8><<<blocks_for(n / 8), kThreads, 0, stream>>>(src, nb, batch, seq, heads, head_dim,
                                                                          head_dim_padded, dst, n / 8);
  } else {
    rows_from_heads_kernel<1><<<blocks_for(n), kThreads, 0, stream>>>(src, nb, batch, seq, heads, head_dim, head_dim_padded,
                                                                      dst, n);
  }
  SCALESCOPE_CUDA_CHECK_LAUNCH();
}

void causal_softmax_forward(cudaStream_t stream, bf16* scores, std::size_t rows, int seq, int chunk, float* lse) {
  chunk = chunk <= 0 || chunk > seq ? seq : chunk;
  if (seq % 8 == 0 && chunk % 8 == 0) {
    require_aligned(scores, "scores");
    causal_softmax_forward_kernel<8><<<warp_row_blocks(rows), kThreads, 0, stream>>>(scores, rows, seq, chunk, lse);
  } else {
    causal_softmax_forward_kernel<1><<<warp_row_blocks(rows), kThreads, 0, stream>>>(scores, rows, seq, chunk, lse);
  }
  SCALESCOPE_CUDA_CHECK_LAUNCH();
}

void causal_softmax_backward(cudaStream_t stream, bf16* scores, const float* lse, bf16* grad, std::size_t rows, int seq,
                             int chunk) {
  chunk = chunk <= 0 || chunk > seq ? seq : chunk;
  if (seq % 8 == 0 && chunk % 8 == 0) {
    require_aligned(scores, "scores");
    require_aligned(grad, "grad");
    causal_softmax_backward_kernel<8><<<warp_row_blocks(rows), kThreads, 0, stream>>>(scores, lse, grad, rows, seq, chunk);
  } else {
    causal_softmax_backward_kernel<1><<<warp_row_blocks(rows), kThreads, 0, stream>>>(scores, lse, grad, rows, seq, chunk);
  }
  SCALESCOPE_CUDA_CHECK_LAUNCH();
}

namespace {

/// One attention GEMM batched over the B·H heads: every operand is a [T, T] matrix (ld T, T·T elements
/// apart) or a [T, hdp] matrix (ld hdp, T·hdp apart).
void attention_gemm(cudaStream_t stream, cuda::LtMatmul& gemm, const AttentionShape& s, bool trans_a, bool trans_b, int m,
                    int n, int k, const bf16* a, int lda, const bf16* b, int ldb, bf16* d, int ldd, float alpha) {
  const long long tt = static_cast<long long>(s.seq) * s.seq, th = static_cast<long long>(s.seq) * s.head_dim_padded;
  const auto stride = [&](int ld) { return ld == s.head_dim_padded ? th : tt; };  // equal when T == hdp
  cuda::GemmSpec g;
  g.trans_a = trans_a;
  g.trans_b = trans_b;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = a;
  g.lda = lda;
  g.stride_a = stride(lda);
  g.b = b;
  g.ldb = ldb;
  g.stride_b = stride(ldb);
  g.d = d;
  g.ldd = ldd;
  g.stride_d = stride(ldd);
  g.alpha = alpha;
  g.batch = s.batch * s.heads;
  gemm.run(stream, g);
}

/// Query rows per chunk: query_chunk, or T when it is ≤ 0 or ≥ T (one chunk).
int effective_chunk(const AttentionShape& s) { return s.query_chunk <= 0 || s.query_chunk > s.seq ? s.seq : s.query_chunk; }

/// Calls body(r0, r1) for each query chunk [r0, r1) of `s` in order.
template <class Body>
void for_each_query_chunk(const AttentionShape& s, Body body) {
  const int T = s.seq, C = effective_chunk(s);
  for (int r0 = 0; r0 < T; r0 += C) body(r0, std::min(T, r0 + C));
}

float score_scale(const AttentionShape& s) { return 1.0f / std::sqrt(static_cast<float>(s.head_dim)); }

/// scores = q·kᵀ/√hd for queries [r0, r1) against keys [0, r1), chunk by chunk: the forward's scores, and the
/// backward's again (the same GEMMs, so the same values) when it recomputes the probabilities.
void attention_scores(cudaStream_t stream, cuda::LtMatmul& gemm, const AttentionShape& s, const bf16* q, const bf16* k,
                      bf16* scores) {
  const std::size_t t = static_cast<std::size_t>(s.seq), h = static_cast<std::size_t>(s.head_dim_padded);
  for_each_query_chunk(s, [&](int r0, int r1) {
    const std::size_t o = static_cast<std::size_t>(r0);
    attention_gemm(stream, gemm, s, false, true, r1 - r0, r1, s.head_dim_padded, q + o * h, s.head_dim_padded, k,
                   s.head_dim_padded, scores + o * t, s.seq, score_scale(s));
  });
}

}  // namespace

void attention_forward(cudaStream_t stream, cuda::LtMatmul& gemm, const bf16* qkv, const AttentionShape& s, bf16* qkvh,
                       bf16* scores, float* lse, bf16* heads, bf16* y) {
  require(lse != nullptr, "attention_forward needs a log-sum-exp buffer of B·H·T floats");
  const int T = s.seq, hdp = s.head_dim_padded;
  const std::size_t he = s.head_elements(), t = static_cast<std::size_t>(T), h = static_cast<std::size_t>(hdp);
  heads_from_rows(stream, qkv, 3, s.batch, T, s.heads, s.head_dim, hdp, qkvh);
  const bf16 *q = qkvh, *k = qkvh + he, *v = qkvh + 2 * he;
  attention_scores(stream, gemm, s, q, k, scores);
  causal_softmax_forward(stream, scores, static_cast<std::size_t>(s.batch) * s.heads * T, T, effective_chunk(s), lse);
  for_each_query_chunk(s, [&](int r0, int r1) {  // P·v for queries [r0, r1) over keys [0, r1)
    const std::size_t o = static_cast<std::size_t>(r0);
    attention_gemm(stream, gemm, s, false, false, r1 - r0, hdp, r1, scores + o * t, T, v, hdp, heads + o * h, hdp, 1.0f);
  });
  rows_from_heads(stream, heads, 1, s.batch, T, s.heads, s.head_dim, hdp, y);
}

void attention_backward(cudaStream_t stream, cuda::LtMatmul& gemm, const bf16* dy, const bf16* qkvh, const float* lse,
                        const AttentionShape& s, bf16* scores, bf16* heads, bf16* dscores, bf16* dqkvh, bf16* dqkv) {
  const int T = s.seq, hdp = s.head_dim_padded;
  const std::size_t he = s.head_elements(), t = static_cast<std::size_t>(T), h = static_cast<std::size_t>(hdp);
  heads_from_rows(stream, dy, 1, s.batch, T, s.heads, s.head_dim, hdp, heads);
  const bf16 *q = qkvh, *k = qkvh + he, *v = qkvh + 2 * he;
  bf16 *dq = dqkvh, *dk = dqkvh + he, *dv = dqkvh + 2 * he;
  for_each_query_chunk(s, [&](int r0, int r1) {  // dP for queries [r0, r1), keys [0, r1)
    const std::size_t o = static_cast<std::size_t>(r0);
    attention_gemm(stream, gemm, s, false, true, r1 - r0, r1, hdp, heads + o * h, hdp, v, hdp, dscores + o * t, T, 1.0f);
  });
  if (lse != nullptr) attention_scores(stream, gemm, s, q, k, scores);  // else scores holds the forward's P
  causal_softmax_backward(stream, scores, lse, dscores, static_cast<std::size_t>(s.batch) * s.heads * T, T,
                          effective_chunk(s));
  for_each_query_chunk(s, [&](int r0, int r1) {
    const int m = r1 - r0;
    const std::size_t o = static_cast<std::size_t>(r0);
    // dq for queries [r0, r1) from keys [0, r1): dS·k/√hd.
    attention_gemm(stream, gemm, s, false, false, m, hdp, r1, dscores + o * t, T, k, hdp, dq + o * h, hdp, score_scale(s));
    // dk and dv for keys [r0, r1) from the queries that see them, [r0, T): dSᵀ·q/√hd and Pᵀ·dy.
    attention_gemm(stream, gemm, s, true, false, m, hdp, T - r0, dscores + o * t + o, T, q + o * h, hdp, dk + o * h, hdp,
                   score_scale(s));
    attention_gemm(stream, gemm, s, true, false, m, hdp, T - r0, scores + o * t + o, T, heads + o * h, hdp, dv + o * h,
                   hdp, 1.0f);
  });
  rows_from_heads(stream, dqkvh, 3, s.batch, T, s.heads, s.head_dim, hdp, dqkv);
}

}  // namespace scalescope::train::gpt_kernels
