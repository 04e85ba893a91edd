#include "train/cuda/flash_attention.h"

#include <math_constants.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "gpu/cuda_check.h"
#include "train/cuda/kernel_support.cuh"

namespace scalescope::train::gpt_kernels {
namespace {

using bf16 = __nv_bfloat16;
using support::allow_shared_memory;
using support::pack_bf16;

constexpr int kWarps = 4;
constexpr int kWarpLanes = 32;
constexpr int kThreads = kWarps * kWarpLanes;
constexpr int kQueryTile = 64;  // forward: queries per block (16 per warp)
constexpr int kKeyTile = 64;    // keys per tile (forward: per step; backward: per block, 16 per warp)
constexpr float kLog2e = 1.4426950408889634f;

// ---------------------------------------------------------------------------------------------------------------
// Warp-level building blocks. Shared-memory tiles are row-major [rows, W] bf16 with their 16-byte chunks
// XOR-swizzled by row, so the eight rows one ldmatrix phase reads fall in eight different bank groups.

/// Element offset of (row, col) in a swizzled tile of width W (col a multiple of 8).
template <int W>
__device__ __forceinline__ int swizzled(int row, int col) {
  static_assert(W == 32 || W % 64 == 0, "tile widths of 32 or multiples of 64 bf16");
  if constexpr (W == 32)  // 64-byte rows: two rows per 128-byte line
    return row * W + ((((col >> 3) ^ (row >> 1)) & 3) << 3);
  else
    return row * W + (((col >> 3) ^ (row & 7)) << 3);
}

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// 16 bytes global → shared without a register round trip; zero-filled when !valid (src is then not read).
__device__ __forceinline__ void copy_async_16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int PENDING>
__device__ __forceinline__ void copy_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(p)));
}

/// c += a·b on one 16×8 tile: a 16×16 (row), b 16×8 (col), bf16 in, fp32 accumulate.
__device__ __forceinline__ void mma(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// 2^x by the special-function unit alone (ex2.approx.ftz: relative error ~2^-22, results below 2^-126 flushed to
/// 0, 2^-∞ = 0), as flash attention's kernels do; exp2f adds range handling around the same instruction.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

/// Copies rows [row0, row0 + ROWS) × W columns of a global matrix (row stride ld elements) into a swizzled
/// shared tile asynchronously; rows at or past `rows_valid` are zero-filled.
template <int ROWS, int W>
__device__ __forceinline__ void load_tile(bf16* tile, const bf16* src, std::size_t ld, int row0, int rows_valid) {
  constexpr int kChunksPerRow = W / 8;
  for (int c = threadIdx.x; c < ROWS * kChunksPerRow; c += kThreads) {
    const int r = c / kChunksPerRow, col = (c % kChunksPerRow) * 8;
    const bool valid = row0 + r < rows_valid;
    copy_async_16(tile + swizzled<W>(r, col), src + static_cast<std::size_t>(valid ? row0 + r : 0) * ld + col, valid);
  }
}

/// A fragments (16 rows × K) of rows [row0, row0 + 16) of a shared [·, K] tile, K/16 k-steps.
template <int K>
__device__ __forceinline__ void load_a(unsigned (&a)[K / 16][4], const bf16* tile, int row0, int lane) {
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) ldmatrix_x4(a[kk], tile + swizzled<K>(row0 + (lane & 15), kk * 16 + (lane >> 4) * 8));
}

/// A fragments of the transpose of a shared [K, ·] tile of width W: rows = its columns [col0, col0 + 16).
template <int K, int W>
__device__ __forceinline__ void load_a_transposed(unsigned (&a)[K / 16][4], const bf16* tile, int col0, int lane) {
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk)
    ldmatrix_x4_trans(a[kk], tile + swizzled<W>(kk * 16 + (lane & 7) + (lane >> 4) * 8, col0 + ((lane >> 3) & 1) * 8));
}

/// c[16 × N] += a[16 × K] · tileᵀ, the tile [N, K] in shared memory (e.g. S = q·kᵀ with k rows as the tile).
template <int N, int K>
__device__ __forceinline__ void mma_a_bt(float (&c)[N / 8][4], const unsigned (&a)[K / 16][4], const bf16* tile,
                                         int lane) {
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk)
#pragma unroll
    for (int np = 0; np < N / 16; ++np) {
      unsigned b[4];
      ldmatrix_x4(b, tile + swizzled<K>(np * 16 + (lane & 7) + (lane >> 4) * 8, kk * 16 + ((lane >> 3) & 1) * 8));
      mma(c[2 * np], a[kk], b[0], b[1]);
      mma(c[2 * np + 1], a[kk], b[2], b[3]);
    }
}

/// c[16 × N] += a[16 × K] · tile[:, col0 … col0 + N), the tile [K, W] in shared memory (e.g. O += P·v).
template <int N, int K, int W>
__device__ __forceinline__ void mma_a_b(float (&c)[N / 8][4], const unsigned (&a)[K / 16][4], const bf16* tile,
                                        int col0, int lane) {
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk)
#pragma unroll
    for (int np = 0; np < N / 16; ++np) {
      unsigned b[4];
      ldmatrix_x4_trans(b, tile + swizzled<W>(kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8,
                                              col0 + np * 16 + (lane >> 4) * 8));
      mma(c[2 * np], a[kk], b[0], b[1]);
      mma(c[2 * np + 1], a[kk], b[2], b[3]);
    }
}

/// The accumulator of a 16 × K product as bf16 A fragments for a following product over K (the C layout of two
/// adjacent 8-column tiles is the A layout of one 16-deep step).
template <int K>
__device__ __forceinline__ void accumulator_to_a(unsigned (&a)[K / 16][4], const float (&c)[K / 8][4]) {
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    a[kk][0] = pack_bf16(c[2 * kk][0], c[2 * kk][1]);
    a[kk][1] = pack_bf16(c[2 * kk][2], c[2 * kk][3]);
    a[kk][2] = pack_bf16(c[2 * kk + 1][0], c[2 * kk + 1][1]);
    a[kk][3] = pack_bf16(c[2 * kk + 1][2], c[2 * kk + 1][3]);
  }
}

template <int N>
__device__ __forceinline__ void zero(float (&c)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i) c[i][0] = c[i][1] = c[i][2] = c[i][3] = 0.0f;
}

/// c[16 × N] = rows [row0, row0 + 16) of the shared tile `a_tile` [·, K] times `b_tile`ᵀ (b_tile [N, K] shared).
template <int N, int K>
__device__ __forceinline__ void rows_times_transpose(float (&c)[N / 8][4], const bf16* a_tile, int row0,
                                                     const bf16* b_tile, int lane) {
  zero(c);
  unsigned a[K / 16][4];
  load_a<K>(a, a_tile, row0, lane);
  mma_a_bt<N, K>(c, a, b_tile, lane);
}

// ---------------------------------------------------------------------------------------------------------------
// Forward. Block = (b·H + h on x — up to 2³¹ − 1 —, query tile on y), heaviest tiles (most keys) first: blocks
// start in linear order, x fastest, so every head's last tile runs before any head's first. Thread (warp w, lane: g = lane/4,
// t = lane%4) owns query rows q0 + 16w + g and + 8, and in each 8-column accumulator tile columns 2t, 2t + 1.

template <int HD>
constexpr int forward_shared_bytes() {
  return (kQueryTile + 4 * kKeyTile) * HD * static_cast<int>(sizeof(bf16));  // q, k ×2, v ×2
}

template <int HD>
__global__ void __launch_bounds__(kThreads) flash_forward_kernel(const bf16* qkv, int seq, int heads, float scale,
                                                                 bf16* y, float* lse) {
  extern __shared__ __align__(128) unsigned char shared_raw[];
  bf16* sq = reinterpret_cast<bf16*>(shared_raw);
  bf16* sk = sq + kQueryTile * HD;  // two stages
  bf16* sv = sk + 2 * kKeyTile * HD;
  const int d = heads * HD, tile = static_cast<int>(gridDim.y - 1 - blockIdx.y);
  const int bh = static_cast<int>(blockIdx.x), b = bh / heads, h = bh % heads;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
  const std::size_t ld = 3 * static_cast<std::size_t>(d);
  const bf16* q_src = qkv + static_cast<std::size_t>(b) * seq * ld + h * HD;
  const bf16 *k_src = q_src + d, *v_src = q_src + 2 * d;
  const int q0 = tile * kQueryTile;
  const int last_query = min(q0 + kQueryTile, seq) - 1;
  const int key_tiles = last_query / kKeyTile + 1;
  const int warp_first = q0 + warp * 16, row = warp_first + g;  // this thread's rows: row, row + 8
  const float scale_log2 = scale * kLog2e;

  load_tile<kQueryTile, HD>(sq, q_src, ld, q0, seq);
  load_tile<kKeyTile, HD>(sk, k_src, ld, 0, seq);
  load_tile<kKeyTile, HD>(sv, v_src, ld, 0, seq);
  copy_async_commit();

  unsigned qa[HD / 16][4];
  float o[HD / 8][4];
  zero(o);
  float m[2] = {-CUDART_INF_F, -CUDART_INF_F}, l[2] = {0.0f, 0.0f};
  for (int j = 0; j < key_tiles; ++j) {
    const int stage = j & 1, k0 = j * kKeyTile;
    if (j + 1 < key_tiles) {  // prefetch the next tile into the other stage (freed by the last barrier)
      load_tile<kKeyTile, HD>(sk + (stage ^ 1) * kKeyTile * HD, k_src, ld, k0 + kKeyTile, seq);
      load_tile<kKeyTile, HD>(sv + (stage ^ 1) * kKeyTile * HD, v_src, ld, k0 + kKeyTile, seq);
    }
    copy_async_commit();
    copy_async_wait<1>();  // everything but the prefetch has landed
    __syncthreads();
    if (j == 0) load_a<HD>(qa, sq, warp * 16, lane);
    if (k0 <= warp_first + 15) {  // else every key of the tile is after this warp's queries
      float s[kKeyTile / 8][4];
      zero(s);
      mma_a_bt<kKeyTile, HD>(s, qa, sk + stage * kKeyTile * HD, lane);
      if (k0 + kKeyTile - 1 > warp_first) {  // the tile reaches past some query of the warp: causal mask
#pragma unroll
        for (int n = 0; n < kKeyTile / 8; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            if (k0 + n * 8 + 2 * t + (e & 1) > row + (e >> 1) * 8) s[n][e] = -CUDART_INF_F;
      }
      float top[2] = {m[0], m[1]};
#pragma unroll
      for (int n = 0; n < kKeyTile / 8; ++n) {
        top[0] = fmaxf(top[0], fmaxf(s[n][0], s[n][1]));
        top[1] = fmaxf(top[1], fmaxf(s[n][2], s[n][3]));
      }
      float rescale[2], shift[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        top[r] = fmaxf(top[r], __shfl_xor_sync(0xffffffffu, top[r], 1));
        top[r] = fmaxf(top[r], __shfl_xor_sync(0xffffffffu, top[r], 2));
        // Key 0 is in every row's first tile, so top is finite; the guard keeps a fully masked row at P = 0.
        shift[r] = top[r] == -CUDART_INF_F ? 0.0f : top[r] * scale_log2;
        rescale[r] = fast_exp2(m[r] * scale_log2 - shift[r]);  // 0 on the first tile (m = −∞)
        m[r] = top[r];
        l[r] *= rescale[r];
      }
#pragma unroll
      for (int n = 0; n < kKeyTile / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[n][e] = fast_exp2(fmaf(s[n][e], scale_log2, -shift[e >> 1]));
          l[e >> 1] += s[n][e];
        }
#pragma unroll
      for (int n = 0; n < HD / 8; ++n) {
        o[n][0] *= rescale[0];
        o[n][1] *= rescale[0];
        o[n][2] *= rescale[1];
        o[n][3] *= rescale[1];
      }
      unsigned pa[kKeyTile / 16][4];
      accumulator_to_a<kKeyTile>(pa, s);
      mma_a_b<HD, kKeyTile, HD>(o, pa, sv + stage * kKeyTile * HD, 0, lane);
    }
    __syncthreads();  // this stage is free for the prefetch two tiles on
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    const int i = row + r * 8;
    if (i >= seq) continue;
    const float inv = 1.0f / l[r];
    bf16* out = y + (static_cast<std::size_t>(b) * seq + i) * d + h * HD;
#pragma unroll
    for (int n = 0; n < HD / 8; ++n)
      *reinterpret_cast<__nv_bfloat162*>(out + n * 8 + 2 * t) = __floats2bfloat162_rn(o[n][2 * r] * inv, o[n][2 * r + 1] * inv);
    if (t == 0) lse[static_cast<std::size_t>(bh) * seq + i] = m[r] * scale + logf(l[r]);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Backward. First D = rowsum(dy ⊙ y) per (b, h, query) — the Σ_j P·dP of the softmax backward (Dao et al. 2022,
// eq. 4) — then one block per (b·H + h on x, key tile on y), the first key tiles (which most queries see) first:
// warp w owns keys k0 + 16w … + 15 (rows g, g + 8 of its accumulators), streams the query tiles [k0, T) of q, dy,
// lse and D, and keeps dk and dv for its keys. After each query tile the block's dSᵀ goes through shared memory so
// that each warp can add a slice of dS·k to dq.

/// D[b, h, i] = Σ_e dy[b, i, h·hd + e]·y[b, i, h·hd + e]: one thread per 8 values (16 bytes), so that a warp
/// reads 512 contiguous bytes; the HD/8 threads of a (position, head) add theirs with shuffles. (One thread per
/// head row, reading 256 bytes alone, took 1.0 ms per gpt-1.3b step for 1.5 GB, this 0.56 ms: bench/RESULTS.md,
/// 2026-12-01, second session.)
template <int HD>
__global__ void softmax_row_dot_kernel(const bf16* dy, const bf16* y, int seq, int heads, std::size_t rows, float* dot) {
  constexpr int kLanes = HD / 8;  // 8 or 16: a power of two dividing the warp, so groups never straddle warps
  static_assert(HD % 8 == 0 && kWarpLanes % kLanes == 0, "a head's lanes must divide the warp");
  const std::size_t pack = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t r = pack / kLanes;  // (b, i, h), h fastest
  float sum = 0.0f;
  if (r < rows) {  // threads past the end add 0 but still join the shuffles
    const uint4 av = reinterpret_cast<const uint4*>(dy)[pack], cv = reinterpret_cast<const uint4*>(y)[pack];
    const __nv_bfloat162* ap = reinterpret_cast<const __nv_bfloat162*>(&av);
    const __nv_bfloat162* cp = reinterpret_cast<const __nv_bfloat162*>(&cv);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float2 x = __bfloat1622float2(ap[e]), z = __bfloat1622float2(cp[e]);
      sum = fmaf(x.x, z.x, fmaf(x.y, z.y, sum));
    }
  }
#pragma unroll
  for (int o = kLanes / 2; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (r < rows && pack % kLanes == 0) {
    const int h = static_cast<int>(r % heads);
    const std::size_t bi = r / heads, b = bi / seq, i = bi % seq;
    dot[(b * heads + h) * seq + i] = sum;
  }
}

/// Query rows per backward step: 64 for hd 64; 32 for hd 128, which keeps dk, dv and the two score tiles
/// within the register file (255 per thread) without spilling.
template <int HD>
constexpr int backward_query_tile() {
  return HD == 64 ? 64 : 32;
}

template <int HD>
constexpr int backward_shared_bytes() {
  constexpr int bq = backward_query_tile<HD>();
  return (2 * kKeyTile * HD + 4 * bq * HD + kKeyTile * bq) * static_cast<int>(sizeof(bf16)) +
         4 * bq * static_cast<int>(sizeof(float));  // k, v; q ×2, dy ×2; dSᵀ; lse ×2, D ×2
}

/// Blocks per SM the backward kernel is compiled for (__launch_bounds__, which caps its registers): 3 for hd 64
/// (168 registers, 32 bytes spilled: 0.489 instead of 0.532 ms for gpt2-124m's layer on an H200), 1 for hd 128
/// (255 registers; capped to 168 it spills 440 bytes and slows from 0.66 to 0.82 ms). bench/RESULTS.md, 2026-12-01.
template <int HD>
constexpr int backward_min_blocks() {
  return HD == 64 ? 3 : 1;
}

template <int HD>
__global__ void __launch_bounds__(kThreads, backward_min_blocks<HD>())
    flash_backward_kernel(const bf16* qkv, const bf16* dy, const float* lse, const float* row_dot, int seq, int heads,
                          float scale, float* dq, bf16* dqkv) {
  constexpr int BQ = backward_query_tile<HD>();
  constexpr int kDqColumns = HD * (BQ / 16) / kWarps;  // each warp's slice of a dq tile: 16 rows × this
  static_assert(kDqColumns == 64, "dq slices of 64 columns (8 accumulator tiles)");
  extern __shared__ __align__(128) unsigned char shared_raw[];
  bf16* sk = reinterpret_cast<bf16*>(shared_raw);
  bf16* sv = sk + kKeyTile * HD;
  bf16* sq = sv + kKeyTile * HD;  // two stages
  bf16* sdy = sq + 2 * BQ * HD;   // two stages
  bf16* sds = sdy + 2 * BQ * HD;  // dSᵀ [keys, queries]
  float* slse = reinterpret_cast<float*>(sds + kKeyTile * BQ);  // two stages, pre-multiplied by log2 e
  float* sdot = slse + 2 * BQ;

  const int d = heads * HD, tile = static_cast<int>(blockIdx.y);  // key tile 0 sees every query: first
  const int bh = static_cast<int>(blockIdx.x), b = bh / heads, h = bh % heads;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
  const std::size_t ld = 3 * static_cast<std::size_t>(d);
  const bf16* q_src = qkv + static_cast<std::size_t>(b) * seq * ld + h * HD;
  const bf16 *k_src = q_src + d, *v_src = q_src + 2 * d;
  const bf16* dy_src = dy + static_cast<std::size_t>(b) * seq * d + h * HD;
  const float* lse_src = lse + static_cast<std::size_t>(bh) * seq;
  const float* dot_src = row_dot + static_cast<std::size_t>(bh) * seq;
  const int k0 = tile * kKeyTile, key_first = k0 + warp * 16, key = key_first + g;  // keys key, key + 8
  const int first_tile = k0 / BQ, query_tiles = (seq + BQ - 1) / BQ;
  const float scale_log2 = scale * kLog2e;

  const auto load_query_tile = [&](int i, int stage) {
    load_tile<BQ, HD>(sq + stage * BQ * HD, q_src, ld, i * BQ, seq);
    load_tile<BQ, HD>(sdy + stage * BQ * HD, dy_src, static_cast<std::size_t>(d), i * BQ, seq);
    for (int r = threadIdx.x; r < BQ; r += kThreads) {  // plain loads: visible after the next barrier
      const int qi = i * BQ + r;
      slse[stage * BQ + r] = qi < seq ? lse_src[qi] * kLog2e : 0.0f;
      sdot[stage * BQ + r] = qi < seq ? dot_src[qi] : 0.0f;
    }
  };
  load_tile<kKeyTile, HD>(sk, k_src, ld, k0, seq);
  load_tile<kKeyTile, HD>(sv, v_src, ld, k0, seq);
  load_query_tile(first_tile, 0);
  copy_async_commit();

  float dk[HD / 8][4], dv[HD / 8][4];
  zero(dk);
  zero(dv);
  for (int i = first_tile; i < query_tiles; ++i) {
    const int stage = (i - first_tile) & 1, qt0 = i * BQ;
    if (i + 1 < query_tiles) load_query_tile(i + 1, stage ^ 1);
    copy_async_commit();
    copy_async_wait<1>();
    __syncthreads();
    const bf16 *q_tile = sq + stage * BQ * HD, *dy_tile = sdy + stage * BQ * HD;
    const float *lse_tile = slse + stage * BQ, *dot_tile = sdot + stage * BQ;
    if (qt0 + BQ - 1 >= key_first) {  // else no query of the tile sees this warp's keys: dS = 0
      // Sᵀ = k·qᵀ for the warp's 16 keys × BQ queries, then Pᵀ.
      float p[BQ / 8][4];
      rows_times_transpose<BQ, HD>(p, sk, warp * 16, q_tile, lane);
      // Each thread's columns in accumulator tile n are n·8 + 2t and + 1: their lse and D as one float2 each.
#pragma unroll
      for (int n = 0; n < BQ / 8; ++n) {
        const float2 l = *reinterpret_cast<const float2*>(lse_tile + n * 8 + 2 * t);
#pragma unroll
        for (int e = 0; e < 4; ++e) p[n][e] = fast_exp2(fmaf(p[n][e], scale_log2, -((e & 1) ? l.y : l.x)));
      }
      if (qt0 < key_first + 15 || qt0 + BQ > seq) {  // some query before some key of the warp, or past T
#pragma unroll
        for (int n = 0; n < BQ / 8; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int qi = qt0 + n * 8 + 2 * t + (e & 1);
            if (key + (e >> 1) * 8 > qi || qi >= seq) p[n][e] = 0.0f;
          }
      }
      unsigned pa[BQ / 16][4];
      accumulator_to_a<BQ>(pa, p);
      mma_a_b<HD, BQ, HD>(dv, pa, dy_tile, 0, lane);  // dv += Pᵀ·dy
      // dPᵀ = v·dyᵀ, then dSᵀ = Pᵀ ⊙ (dPᵀ − D).
      float dp[BQ / 8][4];
      rows_times_transpose<BQ, HD>(dp, sv, warp * 16, dy_tile, lane);
#pragma unroll
      for (int n = 0; n < BQ / 8; ++n) {
        const float2 dot = *reinterpret_cast<const float2*>(dot_tile + n * 8 + 2 * t);
#pragma unroll
        for (int e = 0; e < 4; ++e) p[n][e] *= dp[n][e] - ((e & 1) ? dot.y : dot.x);
      }
      unsigned dsa[BQ / 16][4];
      accumulator_to_a<BQ>(dsa, p);
      mma_a_b<HD, BQ, HD>(dk, dsa, q_tile, 0, lane);  // dk += dSᵀ·q (scaled at the end)
#pragma unroll
      for (int n = 0; n < BQ / 8; ++n)
#pragma unroll
        for (int r = 0; r < 2; ++r)
          *reinterpret_cast<unsigned*>(sds + swizzled<BQ>(warp * 16 + g + r * 8, n * 8) + 2 * t) =
              r == 0 ? dsa[n / 2][(n & 1) * 2] : dsa[n / 2][(n & 1) * 2 + 1];
    } else {
#pragma unroll
      for (int n = 0; n < BQ / 8; ++n)
#pragma unroll
        for (int r = 0; r < 2; ++r) *reinterpret_cast<unsigned*>(sds + swizzled<BQ>(warp * 16 + g + r * 8, n * 8) + 2 * t) = 0u;
    }
    __syncthreads();  // dSᵀ of every warp is in shared memory
    // dq[qt0 + rows, cols] += dS·k over the block's 64 keys: warp w takes 16 query rows × 64 columns.
    {
      constexpr int kColumnSlices = HD / kDqColumns;
      const int row0 = (warp / kColumnSlices) * 16, col0 = (warp % kColumnSlices) * kDqColumns;
      unsigned dsq[kKeyTile / 16][4];
      load_a_transposed<kKeyTile, BQ>(dsq, sds, row0, lane);
      float acc[kDqColumns / 8][4];
      zero(acc);
      mma_a_b<kDqColumns, kKeyTile, HD>(acc, dsq, sk, col0, lane);
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int qi = qt0 + row0 + g + r * 8;
        if (qi >= seq) continue;
        float* out = dq + (static_cast<std::size_t>(b) * seq + qi) * d + h * HD + col0 + 2 * t;
#pragma unroll
        for (int n = 0; n < kDqColumns / 8; ++n) atomicAdd(reinterpret_cast<float2*>(out + n * 8), make_float2(acc[n][2 * r], acc[n][2 * r + 1]));
      }
    }
    // The next iteration's barrier (after its wait) orders these reads of sds and sk before its writes.
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int kj = key + r * 8;
    if (kj >= seq) continue;
    bf16* out = dqkv + (static_cast<std::size_t>(b) * seq + kj) * (3 * static_cast<std::size_t>(d)) + h * HD;
#pragma unroll
    for (int n = 0; n < HD / 8; ++n) {
      *reinterpret_cast<__nv_bfloat162*>(out + d + n * 8 + 2 * t) =
          __floats2bfloat162_rn(dk[n][2 * r] * scale, dk[n][2 * r + 1] * scale);
      *reinterpret_cast<__nv_bfloat162*>(out + 2 * d + n * 8 + 2 * t) = __floats2bfloat162_rn(dv[n][2 * r], dv[n][2 * r + 1]);
    }
  }
}

/// dqkv[r, 0 … d) = bf16(scale · dq[r]), 8 columns per thread.
__global__ void store_dq_kernel(const float* dq, std::size_t rows, int d, float scale, bf16* dqkv) {
  const std::size_t packs = rows * static_cast<std::size_t>(d / 8);
  for (std::size_t p = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; p < packs;
       p += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t r = p / (d / 8), c = (p % (d / 8)) * 8;
    const float4 a = *reinterpret_cast<const float4*>(dq + r * d + c), z = *reinterpret_cast<const float4*>(dq + r * d + c + 4);
    uint4 out;
    out.x = pack_bf16(a.x * scale, a.y * scale);
    out.y = pack_bf16(a.z * scale, a.w * scale);
    out.z = pack_bf16(z.x * scale, z.y * scale);
    out.w = pack_bf16(z.z * scale, z.w * scale);
    *reinterpret_cast<uint4*>(dqkv + r * 3 * d + c) = out;
  }
}

void require(bool ok, const std::string& what) { support::require(ok, "flash attention", what); }
void require_aligned(const void* p, const char* name) { support::require_aligned(p, "flash attention", name); }

void check_shape(const FlashAttentionShape& s) {
  require(flash_attention_supported(s.head_dim), "head width " + std::to_string(s.head_dim) + " (supported: 64, 128)");
  require(s.batch >= 1 && s.seq >= 1 && s.heads >= 1, "batch, sequence and heads must be ≥ 1");
  require(static_cast<long long>(s.batch) * s.heads <= 0x7fffffff && s.seq <= 65535LL * kQueryTile,
          "batch × heads must be < 2³¹ and T ≤ 4194240 (the launch grid's limits)");
}

float softmax_scale(const FlashAttentionShape& s) { return 1.0f / std::sqrt(static_cast<float>(s.head_dim)); }

template <int HD>
void forward(cudaStream_t stream, const bf16* qkv, const FlashAttentionShape& s, bf16* y, float* lse) {
  constexpr int bytes = forward_shared_bytes<HD>();
  const dim3 grid(static_cast<unsigned>(s.batch * s.heads), (s.seq + kQueryTile - 1) / kQueryTile);
  allow_shared_memory(flash_forward_kernel<HD>, bytes);
  flash_forward_kernel<HD><<<grid, kThreads, bytes, stream>>>(qkv, s.seq, s.heads, softmax_scale(s), y, lse);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
}

template <int HD>
void backward(cudaStream_t stream, const bf16* dy, const bf16* qkv, const bf16* y, const float* lse,
              const FlashAttentionShape& s, float* dq, float* row_dot, bf16* dqkv) {
  const std::size_t positions = static_cast<std::size_t>(s.batch) * s.seq, rows = positions * s.heads;
  SCALESCOPE_CUDA_CHECK(cudaMemsetAsync(dq, 0, positions * s.d_model() * sizeof(float), stream));
  const std::size_t dot_threads = rows * (HD / 8);
  require((dot_threads + 255) / 256 <= 0x7fffffffu, "batch × T × heads too large for the row-dot grid");
  softmax_row_dot_kernel<HD><<<static_cast<unsigned>((dot_threads + 255) / 256), 256, 0, stream>>>(dy, y, s.seq, s.heads,
                                                                                                  rows, row_dot);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
  constexpr int bytes = backward_shared_bytes<HD>();
  const dim3 grid(static_cast<unsigned>(s.batch * s.heads), (s.seq + kKeyTile - 1) / kKeyTile);
  allow_shared_memory(flash_backward_kernel<HD>, bytes);
  flash_backward_kernel<HD><<<grid, kThreads, bytes, stream>>>(qkv, dy, lse, row_dot, s.seq, s.heads, softmax_scale(s),
                                                               dq, dqkv);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
  const std::size_t packs = positions * static_cast<std::size_t>(s.d_model() / 8);
  store_dq_kernel<<<static_cast<unsigned>(std::min<std::size_t>((packs + 255) / 256, 8192)), 256, 0, stream>>>(
      dq, positions, s.d_model(), softmax_scale(s), dqkv);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
}

}  // namespace

void flash_attention_forward(cudaStream_t stream, const bf16* qkv, const FlashAttentionShape& shape, bf16* y, float* lse) {
  check_shape(shape);
  require_aligned(qkv, "qkv");
  require_aligned(y, "y");
  if (shape.head_dim == 64)
    forward<64>(stream, qkv, shape, y, lse);
  else
    forward<128>(stream, qkv, shape, y, lse);
}

void flash_attention_backward(cudaStream_t stream, const bf16* dy, const bf16* qkv, const bf16* y, const float* lse,
                              const FlashAttentionShape& shape, float* workspace, std::size_t workspace_floats, bf16* dqkv) {
  check_shape(shape);
  require(workspace_floats >= flash_attention_workspace_floats(shape), "workspace too small");
  for (const auto& [p, name] : {std::pair<const void*, const char*>{dy, "dy"}, {qkv, "qkv"}, {y, "y"}, {dqkv, "dqkv"},
                                {workspace, "workspace"}})
    require_aligned(p, name);
  float* dq = workspace;
  float* row_dot = workspace + static_cast<std::size_t>(shape.batch) * shape.seq * shape.d_model();
  if (shape.head_dim == 64)
    backward<64>(stream, dy, qkv, y, lse, shape, dq, row_dot, dqkv);
  else
    backward<128>(stream, dy, qkv, y, lse, shape, dq, row_dot, dqkv);
}

}  // namespace scalescope::train::gpt_kernels
