#include "train/cuda/gpt_kernels.h"

#include <cub/device/device_radix_sort.cuh>
#include <math_constants.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>

#include "gpu/cuda_check.h"
#include "train/cuda/gelu.cuh"
#include "train/cuda/kernel_support.cuh"
#include "train/cuda/lt_matmul.h"

namespace scalescope::train::gpt_kernels {
namespace {

constexpr int kWarp = 32;
constexpr int kRowsPerBlock = 8;   // warp-per-row kernels: 256 threads
constexpr int kThreads = 256;
constexpr std::size_t kMaxBlocks = 8192;  // grid-stride loops cover the rest
constexpr float kLayerNormEpsilon = 1e-5f;

/// VEC bf16 values moved as one load/store (16 bytes for VEC = 8).
template <int VEC>
struct alignas(2 * VEC) Pack {
  bf16 v[VEC];
};

unsigned blocks_for(std::size_t n, int threads = kThreads) {
  return static_cast<unsigned>(std::clamp<std::size_t>((n + threads - 1) / threads, 1, kMaxBlocks));
}

unsigned warp_row_blocks(std::size_t rows) { return static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock); }

void require(bool ok, const std::string& what) { support::require(ok, "gpt_kernels", what); }
void require_aligned(const void* p, const char* name) { support::require_aligned(p, "gpt_kernels", name); }

#define GRID_STRIDE_LOOP(i, n)                                                                        \
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)

__device__ __forceinline__ float to_f(bf16 x) { return __bfloat162float(x); }

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// Merges two (max, Σ exp(x − max)) pairs of an online softmax; empty sides have max = −∞.
__device__ __forceinline__ void merge_softmax(float& m, float& s, float m2, float s2) {
  const float mm = fmaxf(m, m2);
  if (mm == -CUDART_INF_F) return;  // both empty
  s = (m == -CUDART_INF_F ? 0.0f : s * __expf(m - mm)) + (m2 == -CUDART_INF_F ? 0.0f : s2 * __expf(m2 - mm));
  m = mm;
}

/// Adds x to an online softmax's (max, sum).
__device__ __forceinline__ void push_softmax(float& m, float& s, float x) {
  if (x > m) {
    s = s * __expf(m - x) + 1.0f;  // s = 0 while m = −∞, so the product is 0
    m = x;
  } else {
    s += __expf(x - m);
  }
}

__device__ __forceinline__ void warp_merge_softmax(float& m, float& s) {
  for (int o = kWarp / 2; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
    merge_softmax(m, s, m2, s2);
  }
}

/// Block-wide sum (blockDim.x a multiple of 32); every thread gets the result.
__device__ float block_sum(float v) {
  __shared__ float partial[kWarp];
  v = warp_sum(v);
  const unsigned lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  __syncthreads();  // an earlier call may still read `partial`
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < blockDim.x / kWarp ? partial[lane] : 0.0f;
  return warp_sum(v);
}

using support::gelu;
using support::gelu_grad;

// -------------------------------------------------------------------------------------------------------------
// Deterministic column reductions: blocks of 32 column groups × 8 row lanes, each thread summing 8 adjacent
// columns (one 16-byte load per row) over a chunk of rows; per-chunk partials go to a workspace and a
// second kernel adds them in a fixed order. The grid aims at 528 blocks (4 per H100/H200 SM) whatever the
// shape, so a bias of 768 columns over 16 k rows still fills the GPU.

constexpr int kColVec = 8;
constexpr int kColGroups = 32;
constexpr int kRowLanes = kThreads / kColGroups;  // 8
constexpr int kTileColumns = kColGroups * kColVec;  // 256
constexpr int kTargetBlocks = 528;

struct ColumnPlan {
  int tiles = 1, chunks = 1;
  std::size_t rows_per_chunk = 1;
};

ColumnPlan column_plan(std::size_t rows, int cols) {
  ColumnPlan p;
  p.tiles = (cols + kTileColumns - 1) / kTileColumns;
  const std::size_t by_blocks = static_cast<std::size_t>((kTargetBlocks + p.tiles - 1) / p.tiles);
  const std::size_t by_rows = std::max<std::size_t>(1, (rows + 63) / 64);
  const std::size_t chunks = std::max<std::size_t>(1, std::min(by_blocks, by_rows));
  p.rows_per_chunk = std::max<std::size_t>(1, (rows + chunks - 1) / chunks);
  p.chunks = static_cast<int>(std::max<std::size_t>(1, (rows + p.rows_per_chunk - 1) / p.rows_per_chunk));
  return p;
}

/// Column sums of `Op`'s K values per element: Op::operator()(r, c0, acc) adds the values of row r, columns
/// c0 … c0 + 7 into acc[k][0 … 7] (and may write outputs of its own). partials [chunks, K, cols].
template <int K, class Op>
__global__ void __launch_bounds__(kThreads) column_partials_kernel(std::size_t rows, int cols, std::size_t rows_per_chunk,
                                                                   float* partials, Op op) {
  __shared__ float red[kRowLanes][K][kTileColumns];
  const int group = threadIdx.x % kColGroups, lane = threadIdx.x / kColGroups;
  const int c0 = (blockIdx.x * kColGroups + group) * kColVec;
  const std::size_t begin = blockIdx.y * rows_per_chunk;
  const std::size_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
  float acc[K][kColVec];
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int v = 0; v < kColVec; ++v) acc[k][v] = 0.0f;
  if (c0 < cols)
    for (std::size_t r = begin + lane; r < end; r += kRowLanes) op(r, c0, acc);
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int v = 0; v < kColVec; ++v) red[lane][k][group * kColVec + v] = acc[k][v];
  __syncthreads();
  const int col = blockIdx.x * kTileColumns + threadIdx.x;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    float s = 0.0f;
#pragma unroll
    for (int y = 0; y < kRowLanes; ++y) s += red[y][k][threadIdx.x];
    if (col < cols) partials[(static_cast<std::size_t>(blockIdx.y) * K + k) * cols + col] = s;
  }
}

/// out_k[c] = Σ_chunks partials[chunk, k, c] (overwrite); null outputs are skipped. Blocks of 32 outputs × 8
/// chunk lanes: lane y sums chunks y, y + 8, … in order, then lane 0 adds the 8 lane sums in order — a fixed
/// order, so the bits never depend on timing. (One thread per output summing every chunk left few threads, each
/// a long chain of loads: 9 µs per gpt-1.3b LayerNorm-backward call over 256 chunks, 16 µs per gpt2-124m call
/// over 512, bench/RESULTS.md, 2026-12-01, third session.)
constexpr int kFinishOutputs = 32, kFinishLanes = kThreads / kFinishOutputs;  // 8

template <int K>
__global__ void __launch_bounds__(kThreads) column_finish_kernel(const float* __restrict__ partials, int chunks, int cols,
                                                                 float* out0, float* out1, float* out2) {
  __shared__ float lane_sums[kFinishLanes][kFinishOutputs];
  const int tx = static_cast<int>(threadIdx.x) % kFinishOutputs, ty = static_cast<int>(threadIdx.x) / kFinishOutputs;
  const std::size_t idx = blockIdx.x * static_cast<std::size_t>(kFinishOutputs) + tx;
  const bool valid = idx < static_cast<std::size_t>(K) * cols;
  const int k = valid ? static_cast<int>(idx / cols) : 0, c = valid ? static_cast<int>(idx % cols) : 0;
  float s = 0.0f;
  if (valid) {
    const std::size_t stride = static_cast<std::size_t>(K) * cols;
    const float* p = partials + static_cast<std::size_t>(k) * cols + c;
#pragma unroll 4
    for (int ch = ty; ch < chunks; ch += kFinishLanes) s += p[static_cast<std::size_t>(ch) * stride];
  }
  lane_sums[ty][tx] = s;
  __syncthreads();
  if (ty != 0 || !valid) return;
  float total = 0.0f;
#pragma unroll
  for (int y = 0; y < kFinishLanes; ++y) total += lane_sums[y][tx];
  float* out = k == 0 ? out0 : (k == 1 ? out1 : out2);
  if (out != nullptr) out[c] = total;
}

/// Launches column_finish_kernel<K> over partials [chunks, K, cols].
template <int K>
void column_finish(cudaStream_t stream, const float* partials, int chunks, int cols, float* out0, float* out1, float* out2) {
  const std::size_t outputs = static_cast<std::size_t>(K) * cols;
  column_finish_kernel<K><<<static_cast<unsigned>((outputs + kFinishOutputs - 1) / kFinishOutputs), kThreads, 0, stream>>>(
      partials, chunks, cols, out0, out1, out2);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
}

template <int K, class Op>
void column_reduce(cudaStream_t stream, std::size_t rows, int cols, Op op, float* workspace, std::size_t workspace_floats,
                   float* out0, float* out1, float* out2) {
  require(cols % kColVec == 0, "column count " + std::to_string(cols) + " is not a multiple of 8");
  const ColumnPlan p = column_plan(rows, cols);
  require(workspace != nullptr && workspace_floats >= static_cast<std::size_t>(p.chunks) * K * cols,
          "column-reduction workspace too small");
  column_partials_kernel<K, Op><<<dim3(p.tiles, p.chunks), kThreads, 0, stream>>>(rows, cols, p.rows_per_chunk, workspace, op);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
  column_finish<K>(stream, workspace, p.chunks, cols, out0, out1, out2);
}

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

/// LayerNorm parameter gradients: Σ dy·x̂, Σ dy and (K = 3) Σ dx.
template <int K>
struct LayerNormColumnsOp {
  const bf16 *dy, *x, *dx;
  const float *mean, *rstd;
  int d;
  __device__ void operator()(std::size_t r, int c0, float (&acc)[K][kColVec]) const {
    const std::size_t at = r * d + c0;
    const Pack<kColVec> g = *reinterpret_cast<const Pack<kColVec>*>(dy + at);
    const Pack<kColVec> xv = *reinterpret_cast<const Pack<kColVec>*>(x + at);
    const float mu = mean[r], rs = rstd[r];
#pragma unroll
    for (int v = 0; v < kColVec; ++v) {
      acc[0][v] += to_f(g.v[v]) * (to_f(xv.v[v]) - mu) * rs;
      acc[1][v] += to_f(g.v[v]);
    }
    if constexpr (K == 3) {
      const Pack<kColVec> o = *reinterpret_cast<const Pack<kColVec>*>(dx + at);
#pragma unroll
      for (int v = 0; v < kColVec; ++v) acc[2][v] += to_f(o.v[v]);
    }
  }
};

// -------------------------------------------------------------------------------------------------------------
// Embedding.

__global__ void embedding_forward_kernel(const std::int32_t* tokens, int seq, const float* wte, const float* wpe, int d,
                                         bf16* x, std::size_t packs) {
  GRID_STRIDE_LOOP(p, packs) {
    const std::size_t i = p * 8, r = i / d;
    const int c = static_cast<int>(i % d);
    const std::size_t b = r / seq, t = r % seq;
    const std::size_t token = static_cast<std::size_t>(tokens[b * (seq + 1) + t]);
    const float* e = wte + token * d + c;
    const float* q = wpe + t * d + c;
    Pack<8> out;
#pragma unroll
    for (int v = 0; v < 8; ++v) out.v[v] = __float2bfloat16(e[v] + q[v]);
    reinterpret_cast<Pack<8>*>(x)[p] = out;
  }
}

/// One thread per (position t, column c): walks the batch in order (deterministic dwpe) and scatters into
/// the token rows of dwte with atomics.
__global__ void embedding_backward_kernel(const std::int32_t* tokens, int batch, int seq, const bf16* dx, int d,
                                          float* dwte, float* dwpe) {
  const std::size_t n = static_cast<std::size_t>(seq) * d;
  GRID_STRIDE_LOOP(i, n) {
    const std::size_t t = i / d, c = i % d;
    float sum = 0.0f;
    for (int b = 0; b < batch; ++b) {
      const float g = to_f(dx[(static_cast<std::size_t>(b) * seq + t) * d + c]);
      sum += g;
      atomicAdd(dwte + static_cast<std::size_t>(tokens[static_cast<std::size_t>(b) * (seq + 1) + t]) * d + c, g);
    }
    dwpe[i] = sum;
  }
}

/// Sort keys for the gathered embedding gradient: position p = b·seq + i gets key tokens[b, i] and value p.
__global__ void gathered_token_keys_kernel(const std::int32_t* tokens, int seq, std::size_t positions,
                                           std::int32_t* keys, std::int32_t* values) {
  GRID_STRIDE_LOOP(p, positions) {
    const std::size_t b = p / seq, i = p % seq;
    keys[p] = tokens[b * (seq + 1) + i];
    values[p] = static_cast<int>(p);
  }
}

/// Sorted positions are cut into chunks of kGatherChunk. Phase 1, one thread per (chunk, 8 columns): sums each run
/// of equal tokens inside the chunk in order. A run wholly inside the chunk is added to its dwte row at once (no
/// other thread touches that row); the part of a run that came from the previous chunk goes to head[chunk], the
/// part of one that goes on into the next chunk to tail[chunk] (a chunk inside one run: head only).
constexpr int kGatherChunk = 32;

__global__ void gathered_chunk_sums_kernel(const std::int32_t* keys, const std::int32_t* positions, std::size_t n,
                                           const bf16* dx, int d, float scale, float* dwte, float* head, float* tail) {
  const std::size_t packs = static_cast<std::size_t>(d) / 8, chunks = (n + kGatherChunk - 1) / kGatherChunk;
  GRID_STRIDE_LOOP(i, chunks * packs) {
    const std::size_t j = i / packs, c = (i % packs) * 8;
    const std::size_t begin = j * kGatherChunk, end = std::min(n, begin + kGatherChunk);
    for (std::size_t p = begin; p < end;) {
      const std::int32_t key = keys[p];
      float acc[8] = {};
      std::size_t q = p;
      for (; q < end && keys[q] == key; ++q) {
        const Pack<8> g = *reinterpret_cast<const Pack<8>*>(dx + static_cast<std::size_t>(positions[q]) * d + c);
        for (int v = 0; v < 8; ++v) acc[v] += to_f(g.v[v]);
      }
      const bool from_previous = p == begin && begin > 0 && keys[begin - 1] == key;
      const bool into_next = q == end && end < n && keys[end] == key;
      float* out = from_previous ? head + j * d + c : into_next ? tail + j * d + c : dwte + static_cast<std::size_t>(key) * d + c;
      if (from_previous || into_next)
        for (int v = 0; v < 8; ++v) out[v] = acc[v];
      else
        for (int v = 0; v < 8; ++v) out[v] += scale * acc[v];
      p = q;
    }
  }
}

/// Phase 2, one thread per (chunk, 8 columns): a run that starts in this chunk and goes on past its end is summed
/// from tail[chunk] and the heads of the chunks it covers, in order, and added to its dwte row.
__global__ void gathered_run_sums_kernel(const std::int32_t* keys, std::size_t n, int d, float scale, float* dwte,
                                         const float* head, const float* tail) {
  const std::size_t packs = static_cast<std::size_t>(d) / 8, chunks = (n + kGatherChunk - 1) / kGatherChunk;
  GRID_STRIDE_LOOP(i, chunks * packs) {
    const std::size_t j = i / packs, c = (i % packs) * 8;
    const std::size_t begin = j * kGatherChunk, end = std::min(n, begin + kGatherChunk);
    if (end >= n || keys[end - 1] != keys[end]) continue;       // no run goes on into the next chunk
    const std::int32_t key = keys[end - 1];
    if (begin > 0 && keys[begin - 1] == key) continue;          // it started in an earlier chunk: that one sums it
    std::size_t lo = end, hi = n;                                // the run's end: first position past it
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (keys[mid] == key) lo = mid + 1; else hi = mid;
    }
    const std::size_t last_chunk = (lo - 1) / kGatherChunk;
    float acc[8];
    for (int v = 0; v < 8; ++v) acc[v] = tail[j * d + c + v];
#pragma unroll 4
    for (std::size_t k = j + 1; k <= last_chunk; ++k)
      for (int v = 0; v < 8; ++v) acc[v] += head[k * d + c + v];
    float* out = dwte + static_cast<std::size_t>(key) * d + c;
    for (int v = 0; v < 8; ++v) out[v] += scale * acc[v];
  }
}

/// dwpe[i, c] = scale·Σ_b dx[b, i, c], b in order: one thread per (i, c).
__global__ void position_gradient_kernel(const bf16* dx, int rows, int seq, int d, float scale, float* dwpe) {
  const std::size_t n = static_cast<std::size_t>(seq) * d;
  GRID_STRIDE_LOOP(i, n) {
    float sum = 0.0f;
    for (int b = 0; b < rows; ++b) sum += to_f(dx[static_cast<std::size_t>(b) * n + i]);
    dwpe[i] = scale * sum;
  }
}

/// w[8k … 8k + 7] (w 16-byte aligned) as two 16-byte loads through the read-only path: lanes of a warp read
/// adjacent 32-byte groups, two load instructions per lane and 8 columns where scalar loads (w[c] per element)
/// took eight, at a 32-byte stride between lanes, which made the LayerNorm kernels L1-bound (50 µs per gpt-1.3b
/// forward call for 64 MB: bench/RESULTS.md, 2026-12-01, second session). Volatile, so the register-held forward
/// loads them where they are used rather than ahead of its row's reductions, where they would hold 64–128 more
/// registers.
struct Floats8 {
  float v[8];
};
__device__ __forceinline__ Floats8 load_floats8(const float* w, int k) {
  Floats8 r;
  const float* p = w + 8 * k;
  asm volatile("ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(r.v[0]), "=f"(r.v[1]), "=f"(r.v[2]), "=f"(r.v[3]) : "l"(p));
  asm volatile("ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4 + 16];"
               : "=f"(r.v[4]), "=f"(r.v[5]), "=f"(r.v[6]), "=f"(r.v[7]) : "l"(p));
  return r;
}

// -------------------------------------------------------------------------------------------------------------
// LayerNorm: one warp per row; the row is read three times (mean, variance, output) and stays in L1 or L2.

__global__ void __launch_bounds__(kThreads) layernorm_forward_kernel(const bf16* __restrict__ x, const float* w,
                                                                     const float* b, std::size_t rows, int d,
                                                                     bf16* __restrict__ y, float* mean, float* rstd) {
  const std::size_t row = blockIdx.x * static_cast<std::size_t>(kRowsPerBlock) + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const Pack<8>* in = reinterpret_cast<const Pack<8>*>(x + row * d);
  Pack<8>* out = reinterpret_cast<Pack<8>*>(y + row * d);
  const int packs = d / 8;
  float s = 0.0f;
#pragma unroll 4  // four 16-byte loads of a lane in flight at once
  for (int k = lane; k < packs; k += kWarp) {
    const Pack<8> p = in[k];
#pragma unroll
    for (int v = 0; v < 8; ++v) s += to_f(p.v[v]);
  }
  const float mu = warp_sum(s) / static_cast<float>(d);
  float q = 0.0f;
#pragma unroll 4  // four 16-byte loads of a lane in flight at once
  for (int k = lane; k < packs; k += kWarp) {
    const Pack<8> p = in[k];
#pragma unroll
    for (int v = 0; v < 8; ++v) q += (to_f(p.v[v]) - mu) * (to_f(p.v[v]) - mu);
  }
  const float rs = rsqrtf(warp_sum(q) / static_cast<float>(d) + kLayerNormEpsilon);
#pragma unroll 4  // four 16-byte loads of a lane in flight at once
  for (int k = lane; k < packs; k += kWarp) {
    const Pack<8> p = in[k];
    const Floats8 wk = load_floats8(w, k), bk = load_floats8(b, k);
    Pack<8> o;
#pragma unroll
    for (int v = 0; v < 8; ++v) o.v[v] = __float2bfloat16((to_f(p.v[v]) - mu) * rs * wk.v[v] + bk.v[v]);
    out[k] = o;
  }
  if (lane == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
}

__global__ void __launch_bounds__(kThreads) layernorm_backward_dx_kernel(const bf16* __restrict__ dy,
                                                                         const bf16* __restrict__ x, const float* mean,
                                                                         const float* rstd, const float* w,
                                                                         std::size_t rows, int d, bf16* __restrict__ dx,
                                                                         bool accumulate) {
  const std::size_t row = blockIdx.x * static_cast<std::size_t>(kRowsPerBlock) + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const Pack<8>* g_in = reinterpret_cast<const Pack<8>*>(dy + row * d);
  const Pack<8>* x_in = reinterpret_cast<const Pack<8>*>(x + row * d);
  Pack<8>* out = reinterpret_cast<Pack<8>*>(dx + row * d);
  const float mu = mean[row], rs = rstd[row];
  const int packs = d / 8;
  float sg = 0.0f, sgx = 0.0f;  // Σ g and Σ g·x̂ with g = dy·w
#pragma unroll 4  // four 16-byte loads of a lane in flight at once
  for (int k = lane; k < packs; k += kWarp) {
    const Pack<8> g = g_in[k], xv = x_in[k];
    const Floats8 wk = load_floats8(w, k);
#pragma unroll
    for (int v = 0; v < 8; ++v) {
      const float gw = to_f(g.v[v]) * wk.v[v];
      sg += gw;
      sgx += gw * (to_f(xv.v[v]) - mu) * rs;
    }
  }
  const float mg = warp_sum(sg) / static_cast<float>(d), mgx = warp_sum(sgx) / static_cast<float>(d);
#pragma unroll 4  // four 16-byte loads of a lane in flight at once
  for (int k = lane; k < packs; k += kWarp) {
    const Pack<8> g = g_in[k], xv = x_in[k];
    const Floats8 wk = load_floats8(w, k);
    Pack<8> o = accumulate ? out[k] : Pack<8>{};
#pragma unroll
    for (int v = 0; v < 8; ++v) {
      const float xhat = (to_f(xv.v[v]) - mu) * rs;
      const float val = rs * (to_f(g.v[v]) * wk.v[v] - mg - xhat * mgx);
      o.v[v] = __float2bfloat16(accumulate ? to_f(o.v[v]) + val : val);
    }
    out[k] = o;
  }
}

// The backward in one pass: dx and the column sums (Σ dy·x̂, Σ dy, Σ dx) together. The two-kernel path above
// reads dy and x again for the sums, and the dx it has just written (96 MB more per gpt-1.3b call). Here a row is
// spread over d/8 threads, one 16-byte pack each, so a thread's 8 columns and their K sums stay in registers over
// the rows of its chunk; each chunk of consecutive rows writes its sums to partials [chunk, K, d], which
// column_finish_kernel adds in chunk order — deterministic, as the column reductions above. For d % 256 == 0 and
// d ≤ 4096 (whole warps per row, at most 512 threads); other widths take the two kernels. Each group loads its
// next row before the barrier of the current one, so loads stay in flight while it waits (119–124 registers by
// the local ptxas: two blocks of 256 threads per SM); the chunks are sized to one wave of resident blocks.
constexpr int kFusedLayerNormMaxD = 4096;
constexpr int kFusedLayerNormThreadTarget = 65536;  // chunks × d/8 aims at ~500 threads per SM of 132

bool fused_layernorm_backward_fits(int d) { return d % (8 * kWarp) == 0 && d <= kFusedLayerNormMaxD; }

struct FusedLayerNormPlan {
  int row_threads = 1, groups_per_block = 1, chunks = 1, blocks = 1;  // a group = the threads of one row
  std::size_t rows_per_chunk = 1;
};

/// `resident_groups`: row groups the GPU holds at once (0: no limit, for the workspace bound). Chunks beyond one
/// wave would wait for a second one, each taking as long as the first (every chunk has the same rows).
FusedLayerNormPlan fused_layernorm_plan(std::size_t rows, int d, std::size_t resident_groups = 0) {
  FusedLayerNormPlan p;
  p.row_threads = d / 8;
  p.groups_per_block = std::max(1, kThreads / p.row_threads);
  std::size_t target = std::max<std::size_t>(1, kFusedLayerNormThreadTarget / p.row_threads);
  if (resident_groups > 0) target = std::min(target, resident_groups);
  const std::size_t chunks = std::max<std::size_t>(1, std::min(rows, target));
  p.rows_per_chunk = std::max<std::size_t>(1, (rows + chunks - 1) / chunks);
  p.chunks = static_cast<int>(std::max<std::size_t>(1, (rows + p.rows_per_chunk - 1) / p.rows_per_chunk));
  p.blocks = (p.chunks + p.groups_per_block - 1) / p.groups_per_block;
  return p;
}

/// The row a group works on, prefetched one row ahead of its use.
struct LayerNormBackwardRow {
  Pack<8> dy, x, dx;
  float mean = 0.0f, rstd = 0.0f;
};

template <int K>
__global__ void __launch_bounds__(2 * kThreads) layernorm_backward_fused_kernel(
    const bf16* __restrict__ dy, const bf16* __restrict__ x, const float* __restrict__ mean,
    const float* __restrict__ rstd, const float* w, std::size_t rows, int d, std::size_t rows_per_chunk, int chunks,
    bf16* __restrict__ dx, bool accumulate, float* __restrict__ partials) {
  // Each warp's two row sums, double-buffered by row parity: one barrier per row suffices, because a buffer is
  // written again two rows later, after every thread has passed the barrier of the row between.
  __shared__ float warp_sums[2][2 * kThreads / kWarp][2];
  const int row_threads = d / 8, t = static_cast<int>(threadIdx.x) % row_threads;
  const int group = static_cast<int>(threadIdx.x) / row_threads, warps_per_row = row_threads / kWarp;
  const int first_warp = group * warps_per_row, warp = static_cast<int>(threadIdx.x) / kWarp;
  const int chunk = static_cast<int>(blockIdx.x) * (static_cast<int>(blockDim.x) / row_threads) + group;
  const std::size_t begin = chunk < chunks ? static_cast<std::size_t>(chunk) * rows_per_chunk : rows;
  const std::size_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
  const Floats8 wk = load_floats8(w, t);
  const auto load = [&](std::size_t r, LayerNormBackwardRow& row) {
    if (r >= end) return;
    const std::size_t at = r * static_cast<std::size_t>(row_threads) + t;
    row.dy = reinterpret_cast<const Pack<8>*>(dy)[at];
    row.x = reinterpret_cast<const Pack<8>*>(x)[at];
    if (accumulate) row.dx = reinterpret_cast<const Pack<8>*>(dx)[at];
    row.mean = mean[r];
    row.rstd = rstd[r];
  };
  float acc[K][8];
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int v = 0; v < 8; ++v) acc[k][v] = 0.0f;
  LayerNormBackwardRow cur, next;
  load(begin, cur);
#pragma unroll 1
  for (std::size_t i = 0; i < rows_per_chunk; ++i) {  // the same count in every group: the barrier is uniform
    const std::size_t r = begin + i;
    const bool active = r < end;
    float sg = 0.0f, sgx = 0.0f;  // Σ g and Σ g·x̂ with g = dy·w (recomputed after the barrier: fewer registers)
#pragma unroll
    for (int v = 0; v < 8; ++v) {
      const float gw = to_f(cur.dy.v[v]) * wk.v[v];
      sg += gw;
      sgx += gw * ((to_f(cur.x.v[v]) - cur.mean) * cur.rstd);
    }
    sg = warp_sum(sg);
    sgx = warp_sum(sgx);
    const int parity = static_cast<int>(i & 1);
    if (threadIdx.x % kWarp == 0) {
      warp_sums[parity][warp][0] = sg;
      warp_sums[parity][warp][1] = sgx;
    }
    load(r + 1, next);  // in flight across the barrier
    __syncthreads();
    float tg = 0.0f, tgx = 0.0f;
    for (int j = 0; j < warps_per_row; ++j) {  // in warp order: every thread of the row gets the same sums
      tg += warp_sums[parity][first_warp + j][0];
      tgx += warp_sums[parity][first_warp + j][1];
    }
    if (active) {
      const float mg = tg / static_cast<float>(d), mgx = tgx / static_cast<float>(d);
      Pack<8> o;
#pragma unroll
      for (int v = 0; v < 8; ++v) {
        const float xhat = (to_f(cur.x.v[v]) - cur.mean) * cur.rstd;
        const float val = cur.rstd * (to_f(cur.dy.v[v]) * wk.v[v] - mg - xhat * mgx);
        o.v[v] = __float2bfloat16(accumulate ? to_f(cur.dx.v[v]) + val : val);
        acc[0][v] += to_f(cur.dy.v[v]) * xhat;
        acc[1][v] += to_f(cur.dy.v[v]);
        if constexpr (K == 3) acc[2][v] += to_f(o.v[v]);  // of the bf16 value written: what the GEMMs see
      }
      reinterpret_cast<Pack<8>*>(dx)[r * static_cast<std::size_t>(row_threads) + t] = o;
    }
    cur = next;
  }
  if (chunk >= chunks) return;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    float4* out = reinterpret_cast<float4*>(partials + (static_cast<std::size_t>(chunk) * K + k) * d + 8 * t);
    out[0] = make_float4(acc[k][0], acc[k][1], acc[k][2], acc[k][3]);
    out[1] = make_float4(acc[k][4], acc[k][5], acc[k][6], acc[k][7]);
  }
}

// The forward with the row held in registers: P packs of 8 per lane (d ≤ 256·P), all loaded before the first
// sum and read once. Up to d = 2048 (gpt-1.3b; 8 packs, 95 registers); the loop kernel above serves wider rows.
// A warp holds one row and leaves, so rows in flight decide the speed (ncu at d 2048: 42 % of DRAM bandwidth, 25 %
// occupancy): the registers allow 21 warps per SM, which blocks of 4 rows use as 20 and blocks of 8 only as 16.
// The two-pass backward (widths the one-pass kernel does not take) keeps its loop kernel: held in registers, dy
// and x took 245 registers at 8 packs (one block per SM) or spilled when capped at 128, and ran slower than the
// loop (3.67 against 2.68 ms per gpt-1.3b step, bench/RESULTS.md, 2026-12-01, second session).
constexpr int kMaxCachedPacks = 8;

/// Calls f(std::integral_constant<int, P>{}) for the smallest P in {1, 2, 4, 8} with 32·P ≥ packs, or returns
/// false when packs > 32·kMaxCachedPacks.
template <class F>
bool with_cached_packs(int packs, F&& f) {
  const int per_lane = (packs + kWarp - 1) / kWarp;
  if (per_lane <= 1) return f(std::integral_constant<int, 1>{}), true;
  if (per_lane <= 2) return f(std::integral_constant<int, 2>{}), true;
  if (per_lane <= 4) return f(std::integral_constant<int, 4>{}), true;
  if (per_lane <= kMaxCachedPacks) return f(std::integral_constant<int, kMaxCachedPacks>{}), true;
  return false;
}

template <int P>
__global__ void __launch_bounds__(kThreads, 2)
    layernorm_forward_cached_kernel(const bf16* __restrict__ x, const float* w, const float* b, std::size_t rows, int d,
                                    bf16* __restrict__ y, float* mean, float* rstd) {
  const std::size_t row = blockIdx.x * static_cast<std::size_t>(blockDim.x / kWarp) + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const Pack<8>* in = reinterpret_cast<const Pack<8>*>(x + row * d);
  Pack<8>* out = reinterpret_cast<Pack<8>*>(y + row * d);
  const int packs = d / 8;
  Pack<8> p[P];
#pragma unroll
  for (int j = 0; j < P; ++j)
    if (lane + j * kWarp < packs) p[j] = in[lane + j * kWarp];
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < P; ++j)
    if (lane + j * kWarp < packs)
#pragma unroll
      for (int v = 0; v < 8; ++v) s += to_f(p[j].v[v]);
  const float mu = warp_sum(s) / static_cast<float>(d);
  float q = 0.0f;
#pragma unroll
  for (int j = 0; j < P; ++j)
    if (lane + j * kWarp < packs)
#pragma unroll
      for (int v = 0; v < 8; ++v) q += (to_f(p[j].v[v]) - mu) * (to_f(p[j].v[v]) - mu);
  const float rs = rsqrtf(warp_sum(q) / static_cast<float>(d) + kLayerNormEpsilon);
#pragma unroll
  for (int j = 0; j < P; ++j) {
    const int k = lane + j * kWarp;
    if (k >= packs) continue;
    const Floats8 wk = load_floats8(w, k), bk = load_floats8(b, k);
    Pack<8> o;
#pragma unroll
    for (int v = 0; v < 8; ++v) o.v[v] = __float2bfloat16((to_f(p[j].v[v]) - mu) * rs * wk.v[v] + bk.v[v]);
    out[k] = o;
  }
  if (lane == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
}

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

// -------------------------------------------------------------------------------------------------------------
// Cross-entropy: one block per position; an online max/sum pass, then a pass writing d logits in place.
// STAGED: the first pass also keeps the row in shared memory, and the second reads it from there, so the logits
// cross DRAM once each way (1.65 GB per gpt-1.3b step instead of up to 2.5). Rows wider than kXentStagedMaxBytes
// take two reads. The kernel was instruction-bound (ncu at gpt-1.3b's shape: 67 % SM throughput, 43 % DRAM, with
// an online-softmax update and two compares per element), so the passes work per 8-value pack: one max and at
// most one rescale per pack, then exp2(x·log2e − m·log2e) (one FFMA and one MUFU.EX2 per element), bounds checked
// only in the last, partial pack, and the one-hot target subtracted in its pack alone. m·log2e overflows for
// |logit| > 2.3e38 (bf16 reaches 3.4e38): only a run that has already diverged gets there, and its loss is not finite.

constexpr int kXentThreads = 1024;  // 32 registers: two staged blocks fill an SM's 64 warps
constexpr int kXentStagedMaxBytes = 112 * 1024;  // two blocks per SM within the H100/H200's 227 KB of shared memory
constexpr float kLog2e = 1.4426950408889634f;

/// 2^x (ex2.approx.ftz: relative error ~2^-22, 0 for −∞).
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// The 8 logits of pack k as fp32, −∞ past the vocabulary (padding columns).
__device__ __forceinline__ void pack_logits(const Pack<8>& p, int k, int vocab, float (&x)[8]) {
  const int valid = vocab - k * 8;
#pragma unroll
  for (int v = 0; v < 8; ++v) x[v] = to_f(p.v[v]);
  if (valid < 8) {
#pragma unroll
    for (int v = 0; v < 8; ++v)
      if (v >= valid) x[v] = -CUDART_INF_F;
  }
}

template <bool STAGED>
__global__ void __launch_bounds__(kXentThreads) cross_entropy_kernel(bf16* logits, int ld, const std::int32_t* tokens,
                                                                     int seq, int vocab, float scale, float* losses) {
  __shared__ float shared_m[kXentThreads / kWarp], shared_s[kXentThreads / kWarp];
  extern __shared__ Pack<8> staged_row[];  // [ld / 8] when STAGED
  const std::size_t r = blockIdx.x;
  const std::size_t b = r / seq, i = r % seq;
  const int target = tokens[b * (seq + 1) + i + 1];
  bf16* row = logits + r * ld;
  // Read before the block's first barrier: no thread writes the row until after it.
  const float target_logit = threadIdx.x == 0 ? to_f(row[target]) : 0.0f;
  Pack<8>* packs = reinterpret_cast<Pack<8>*>(row);
  const int n = ld / 8;
  float m = -CUDART_INF_F, s = 0.0f;  // running max and Σ exp(x − m) over this thread's packs
  for (int k = threadIdx.x; k < n; k += blockDim.x) {
    const Pack<8> p = packs[k];
    if constexpr (STAGED) staged_row[k] = p;  // read back below by this same thread: no barrier needed
    float x[8];
    pack_logits(p, k, vocab, x);
    float pm = x[0];
#pragma unroll
    for (int v = 1; v < 8; ++v) pm = fmaxf(pm, x[v]);
    if (pm == -CUDART_INF_F) continue;  // padding only
    if (pm > m) {
      s *= fast_exp2((m - pm) * kLog2e);  // 0 while m = −∞
      m = pm;
    }
    const float ml = m * kLog2e;
#pragma unroll
    for (int v = 0; v < 8; ++v) s += fast_exp2(fmaf(x[v], kLog2e, -ml));
  }
  warp_merge_softmax(m, s);
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  if (lane == 0) {
    shared_m[warp] = m;
    shared_s[warp] = s;
  }
  __syncthreads();
  m = lane < static_cast<int>(blockDim.x / kWarp) ? shared_m[lane] : -CUDART_INF_F;
  s = lane < static_cast<int>(blockDim.x / kWarp) ? shared_s[lane] : 0.0f;
  warp_merge_softmax(m, s);  // every warp computes the same total
  // d logit_j = scale·(softmax_j − [j = target]) = exp2(x_j·log2e − m·log2e)·(scale / s) − [j = target]·scale.
  const float ml = m * kLog2e, c = scale / s;
  const int target_pack = target / 8, target_lane = target % 8;
  for (int k = threadIdx.x; k < n; k += blockDim.x) {
    Pack<8> p;
    if constexpr (STAGED)
      p = staged_row[k];
    else
      p = packs[k];
    float x[8];
    pack_logits(p, k, vocab, x);
    float g[8];
#pragma unroll
    for (int v = 0; v < 8; ++v) g[v] = fast_exp2(fmaf(x[v], kLog2e, -ml)) * c;  // 0 for padding
    if (k == target_pack) {
#pragma unroll
      for (int v = 0; v < 8; ++v)
        if (v == target_lane) g[v] -= scale;
    }
#pragma unroll
    for (int v = 0; v < 8; ++v) p.v[v] = __float2bfloat16(g[v]);
    packs[k] = p;
  }
  if (threadIdx.x == 0) losses[r] = logf(s) + m - target_logit;
}

__global__ void mean_kernel(const float* values, std::size_t n, float* out) {
  float s = 0.0f;
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) s += values[i];
  s = block_sum(s);
  if (threadIdx.x == 0) *out = s / static_cast<float>(n);
}

// -------------------------------------------------------------------------------------------------------------
// Multi-tensor parameter updates: one block per chunk of one tensor.

/// One AdamW update of one element (train/adamw.h's formula); the vector and scalar paths share it, so a chunk
/// gets the same bits whichever path it takes.
__device__ __forceinline__ float adamw_update(float p, float& m, float& v, float g, float decay, const AdamWStep& s) {
  m = s.beta1 * m + (1.0f - s.beta1) * g;
  v = s.beta2 * v + (1.0f - s.beta2) * g * g;
  return p * decay - s.step_size * m / (sqrtf(v) / s.bc2_sqrt + s.epsilon);
}

// A chunk whose master, gradient and copy offsets are multiples of 4 moves 16-byte vectors (the optimizer is
// bound by memory traffic: 30 bytes per parameter); other chunks, and a chunk's last n mod 4 elements, go one
// element at a time.
__global__ void adamw_kernel(const TensorSlot* tensors, const TensorChunk* chunks, float* params, const float* grads,
                             float* m, float* v, bf16* shadow, AdamWStep s) {
  const TensorChunk c = chunks[blockIdx.x];
  const TensorSlot t = tensors[c.tensor];
  const float decay = t.decay != 0 ? s.decay : 1.0f;
  const std::size_t p0 = t.param_offset + c.begin, g0 = t.grad_offset + c.begin, s0 = t.shadow_offset + c.begin;
  const std::size_t n = c.end - c.begin;
  std::size_t scalar_from = 0;
  if ((p0 | g0 | s0) % 4 == 0) {
    const std::size_t n4 = n / 4;
    float4* p4 = reinterpret_cast<float4*>(params + p0);
    float4* m4 = reinterpret_cast<float4*>(m + p0);
    float4* v4 = reinterpret_cast<float4*>(v + p0);
    const float4* g4 = reinterpret_cast<const float4*>(grads + g0);
    uint2* s4 = reinterpret_cast<uint2*>(shadow + s0);
    for (std::size_t i = threadIdx.x; i < n4; i += blockDim.x) {
      const float4 g = g4[i];
      float4 p = p4[i], mi = m4[i], vi = v4[i];
      p.x = adamw_update(p.x, mi.x, vi.x, g.x, decay, s);
      p.y = adamw_update(p.y, mi.y, vi.y, g.y, decay, s);
      p.z = adamw_update(p.z, mi.z, vi.z, g.z, decay, s);
      p.w = adamw_update(p.w, mi.w, vi.w, g.w, decay, s);
      p4[i] = p;
      m4[i] = mi;
      v4[i] = vi;
      s4[i] = make_uint2(support::pack_bf16(p.x, p.y), support::pack_bf16(p.z, p.w));
    }
    scalar_from = n4 * 4;
  }
  for (std::size_t e = scalar_from + threadIdx.x; e < n; e += blockDim.x) {
    const std::size_t at = p0 + e;
    const float p = adamw_update(params[at], m[at], v[at], grads[g0 + e], decay, s);
    params[at] = p;
    shadow[s0 + e] = __float2bfloat16(p);
  }
}

__global__ void to_bf16_kernel(const TensorSlot* tensors, const TensorChunk* chunks, const float* params, bf16* shadow) {
  const TensorChunk c = chunks[blockIdx.x];
  const TensorSlot t = tensors[c.tensor];
  for (std::size_t e = c.begin + threadIdx.x; e < c.end; e += blockDim.x)
    shadow[t.shadow_offset + e] = __float2bfloat16(params[t.param_offset + e]);
}

#undef GRID_STRIDE_LOOP

}  // namespace

// -------------------------------------------------------------------------------------------------------------
// Launchers.

std::size_t column_workspace_floats(std::size_t rows, int cols, int sums) {
  return static_cast<std::size_t>(column_plan(rows, cols).chunks) * static_cast<std::size_t>(sums) *
         static_cast<std::size_t>(cols);
}

std::size_t layernorm_backward_workspace_floats(std::size_t rows, int d) {
  const std::size_t two_pass = column_workspace_floats(rows, d, 3);
  if (!fused_layernorm_backward_fits(d) || rows == 0) return two_pass;
  return std::max(two_pass, static_cast<std::size_t>(fused_layernorm_plan(rows, d).chunks) * 3 * static_cast<std::size_t>(d));
}

void embedding_forward(cudaStream_t stream, const std::int32_t* tokens, int batch, int seq, const float* wte,
                       const float* wpe, int d, bf16* x) {
  require(d % 8 == 0, "d_model must be a multiple of 8");
  require_aligned(x, "x");
  const std::size_t packs = static_cast<std::size_t>(batch) * seq * d / 8;
  embedding_forward_kernel<<<blocks_for(packs), kThreads, 0, stream>>>(tokens, seq, wte, wpe, d, x, packs);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
}

void embedding_backward(cudaStream_t stream, const std::int32_t* tokens, int batch, int seq, const bf16* dx, int d,
                        float* dwte, float* dwpe) {
  require(d % 8 == 0, "d_model must be a multiple of 8");
  embedding_backward_kernel<<<blocks_for(static_cast<std::size_t>(seq) * d), kThreads, 0, stream>>>(tokens, batch, seq, dx,
                                                                                                      d, dwte, dwpe);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
}

namespace {

/// The scratch of embedding_backward_gathered: four int32 arrays of `positions`, each on a 256-byte boundary, then
/// CUB's workspace.
struct GatheredScratch {
  std::int32_t *keys_in, *values_in, *keys_out, *values_out;
  void* sort_workspace;
  std::size_t sort_bytes;
};

std::size_t aligned_int_array_bytes(std::size_t n) { return (n * sizeof(std::int32_t) + 255) / 256 * 256; }

std::size_t radix_sort_bytes(std::size_t positions) {
  std::size_t bytes = 0;
  SCALESCOPE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const std::int32_t*>(nullptr),
                                                        static_cast<std::int32_t*>(nullptr),
                                                        static_cast<const std::int32_t*>(nullptr),
                                                        static_cast<std::int32_t*>(nullptr), positions));
  return bytes;
}

std::size_t gathered_partials_bytes(std::size_t positions, int d) {
  const std::size_t chunks = (positions + kGatherChunk - 1) / kGatherChunk;
  return (chunks * static_cast<std::size_t>(d) * sizeof(float) + 255) / 256 * 256;
}

}  // namespace

std::size_t gathered_embedding_scratch_bytes(std::size_t positions, int d) {
  return 4 * aligned_int_array_bytes(positions) + 2 * gathered_partials_bytes(positions, d) + radix_sort_bytes(positions);
}

void embedding_backward_gathered(cudaStream_t stream, const std::int32_t* tokens, int rows, int seq, const bf16* dx,
                                 int d, int vocab, float scale, float* dwte, float* dwpe, void* scratch,
                                 std::size_t scratch_bytes) {
  require(d % 8 == 0, "d_model must be a multiple of 8");
  require(vocab >= 1, "the vocabulary must hold at least one token");
  require_aligned(dx, "dx");
  const std::size_t positions = static_cast<std::size_t>(rows) * seq;
  require(scratch_bytes >= gathered_embedding_scratch_bytes(positions, d), "the gathered embedding's scratch is too small");
  const std::size_t array = aligned_int_array_bytes(positions);
  auto* base = static_cast<unsigned char*>(scratch);
  auto* keys_in = reinterpret_cast<std::int32_t*>(base);
  auto* values_in = reinterpret_cast<std::int32_t*>(base + array);
  auto* keys_out = reinterpret_cast<std::int32_t*>(base + 2 * array);
  auto* values_out = reinterpret_cast<std::int32_t*>(base + 3 * array);
  const std::size_t partials = gathered_partials_bytes(positions, d);
  auto* head = reinterpret_cast<float*>(base + 4 * array);
  auto* tail = reinterpret_cast<float*>(base + 4 * array + partials);
  unsigned char* sort_workspace = base + 4 * array + 2 * partials;
  std::size_t sort_bytes = scratch_bytes - 4 * array - 2 * partials;
  gathered_token_keys_kernel<<<blocks_for(positions), kThreads, 0, stream>>>(tokens, seq, positions, keys_in, values_in);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
  int key_bits = 1;  // token ids are in [0, vocab): sort only their low bits
  while (key_bits < 31 && (1LL << key_bits) < vocab) ++key_bits;
  SCALESCOPE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sort_workspace, sort_bytes, keys_in, keys_out, values_in,
                                                        values_out, positions, 0, key_bits, stream));
  const std::size_t chunk_threads = (positions + kGatherChunk - 1) / kGatherChunk * static_cast<std::size_t>(d / 8);
  gathered_chunk_sums_kernel<<<blocks_for(chunk_threads), kThreads, 0, stream>>>(keys_out, values_out, positions, dx, d,
                                                                                 scale, dwte, head, tail);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
  gathered_run_sums_kernel<<<blocks_for(chunk_threads), kThreads, 0, stream>>>(keys_out, positions, d, scale, dwte,
                                                                               head, tail);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
  position_gradient_kernel<<<blocks_for(static_cast<std::size_t>(seq) * d), kThreads, 0, stream>>>(dx, rows, seq, d,
                                                                                                    scale, dwpe);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
}

void layernorm_forward(cudaStream_t stream, const bf16* x, const float* w, const float* b, std::size_t rows, int d,
                       bf16* y, float* mean, float* rstd) {
  require(d % 8 == 0, "d_model must be a multiple of 8");
  require_aligned(x, "x");
  require_aligned(y, "y");
  require_aligned(w, "w");
  require_aligned(b, "b");
  const bool cached = with_cached_packs(d / 8, [&](auto packs) {
    constexpr int P = decltype(packs)::value;
    constexpr int rows_per_block = P >= kMaxCachedPacks ? 4 : kRowsPerBlock;
    const auto blocks = static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block);
    layernorm_forward_cached_kernel<P><<<blocks, rows_per_block * kWarp, 0, stream>>>(x, w, b, rows, d, y, mean, rstd);
  });
  if (!cached) layernorm_forward_kernel<<<warp_row_blocks(rows), kThreads, 0, stream>>>(x, w, b, rows, d, y, mean, rstd);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
}

/// Blocks of `threads` threads of `kernel` the current device runs at once (occupancy × SMs), at least 1;
/// cached per kernel, block size and device.
template <class Kernel>
int resident_blocks(Kernel kernel, int threads) {
  int device = 0;
  SCALESCOPE_CUDA_CHECK(cudaGetDevice(&device));
  static std::mutex mutex;
  static std::map<std::tuple<const void*, int, int>, int> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_tuple(reinterpret_cast<const void*>(kernel), threads, device);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  int per_sm = 0, sms = 0;
  SCALESCOPE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
  SCALESCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return cache[key] = std::max(1, per_sm * sms);
}

/// The one-pass backward with K column sums (2: dw, db; 3: also Σ dx), its chunks one wave of resident blocks.
template <int K>
void layernorm_backward_fused(cudaStream_t stream, const bf16* dy, const bf16* x, const float* mean, const float* rstd,
                              const float* w, std::size_t rows, int d, bf16* dx, bool accumulate, float* dw, float* db,
                              float* dx_colsum, float* workspace) {
  const int groups_per_block = fused_layernorm_plan(rows, d).groups_per_block;  // fixed by d alone
  const int threads = groups_per_block * (d / 8);
  const std::size_t resident_groups = static_cast<std::size_t>(resident_blocks(layernorm_backward_fused_kernel<K>, threads)) *
                                      static_cast<std::size_t>(groups_per_block);
  const FusedLayerNormPlan p = fused_layernorm_plan(rows, d, resident_groups);
  layernorm_backward_fused_kernel<K><<<p.blocks, threads, 0, stream>>>(dy, x, mean, rstd, w, rows, d, p.rows_per_chunk,
                                                                      p.chunks, dx, accumulate, workspace);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
  column_finish<K>(stream, workspace, p.chunks, d, dw, db, dx_colsum);
}

void layernorm_backward(cudaStream_t stream, const bf16* dy, const bf16* x, const float* mean, const float* rstd,
                        const float* w, std::size_t rows, int d, bf16* dx, bool accumulate, float* dw, float* db,
                        float* dx_colsum, float* workspace, std::size_t workspace_floats) {
  require(d % 8 == 0, "d_model must be a multiple of 8");
  require_aligned(dy, "dy");
  require_aligned(x, "x");
  require_aligned(dx, "dx");
  require_aligned(w, "w");
  if (rows == 0) return;
  require(workspace != nullptr && workspace_floats >= layernorm_backward_workspace_floats(rows, d),
          "LayerNorm-backward workspace too small");
  if (fused_layernorm_backward_fits(d)) {
    if (dx_colsum != nullptr)
      layernorm_backward_fused<3>(stream, dy, x, mean, rstd, w, rows, d, dx, accumulate, dw, db, dx_colsum, workspace);
    else
      layernorm_backward_fused<2>(stream, dy, x, mean, rstd, w, rows, d, dx, accumulate, dw, db, nullptr, workspace);
    return;
  }
  layernorm_backward_dx_kernel<<<warp_row_blocks(rows), kThreads, 0, stream>>>(dy, x, mean, rstd, w, rows, d, dx, accumulate);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
  if (dx_colsum != nullptr)
    column_reduce<3>(stream, rows, d, LayerNormColumnsOp<3>{dy, x, dx, mean, rstd, d}, workspace, workspace_floats, dw, db,
                     dx_colsum);
  else
    column_reduce<2>(stream, rows, d, LayerNormColumnsOp<2>{dy, x, dx, mean, rstd, d}, workspace, workspace_floats, dw, db,
                     nullptr);
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

namespace {

/// Bytes of a logits row the staged cross-entropy holds on the current device: kXentStagedMaxBytes, or less where
/// the device's opt-in shared memory per block minus the kernel's static arrays is smaller; cached per device.
std::size_t xent_staged_limit() {
  int device = 0;
  SCALESCOPE_CUDA_CHECK(cudaGetDevice(&device));
  static std::mutex mutex;
  static std::map<int, std::size_t> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = cache.find(device); it != cache.end()) return it->second;
  int optin = 0;
  SCALESCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  cudaFuncAttributes attributes{};
  SCALESCOPE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, cross_entropy_kernel<true>));
  const std::size_t room = static_cast<std::size_t>(std::max(0, optin - static_cast<int>(attributes.sharedSizeBytes)));
  return cache[device] = std::min(room, static_cast<std::size_t>(kXentStagedMaxBytes));
}

}  // namespace

void cross_entropy(cudaStream_t stream, bf16* logits, int ld, const std::int32_t* tokens, int batch, int seq, int vocab,
                   float scale, float* losses) {
  require(ld % 8 == 0 && ld >= vocab, "logits leading dimension must be a multiple of 8 and ≥ vocab");
  require_aligned(logits, "logits");
  const std::size_t rows = static_cast<std::size_t>(batch) * seq;
  const std::size_t row_bytes = static_cast<std::size_t>(ld) * sizeof(bf16);
  const std::size_t staged_limit = xent_staged_limit();
  if (row_bytes <= staged_limit) {
    // Always the device's one limit, whatever this row needs: a smaller one would fail a graph node captured earlier
    // with a wider row.
    support::allow_shared_memory(cross_entropy_kernel<true>, static_cast<int>(staged_limit));
    cross_entropy_kernel<true><<<static_cast<unsigned>(rows), kXentThreads, row_bytes, stream>>>(logits, ld, tokens, seq,
                                                                                                 vocab, scale, losses);
  } else {
    cross_entropy_kernel<false><<<static_cast<unsigned>(rows), kXentThreads, 0, stream>>>(logits, ld, tokens, seq, vocab,
                                                                                          scale, losses);
  }
  SCALESCOPE_CUDA_CHECK_LAUNCH();
}

void mean(cudaStream_t stream, const float* values, std::size_t n, float* out) {
  mean_kernel<<<1, 1024, 0, stream>>>(values, n, out);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
}

void adamw(cudaStream_t stream, const TensorSlot* tensors, const TensorChunk* chunks, int chunk_count, float* params,
           const float* grads, float* m, float* v, bf16* shadow, const AdamWStep& step) {
  if (chunk_count == 0) return;
  adamw_kernel<<<static_cast<unsigned>(chunk_count), kThreads, 0, stream>>>(tensors, chunks, params, grads, m, v, shadow,
                                                                            step);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
}

void to_bf16(cudaStream_t stream, const TensorSlot* tensors, const TensorChunk* chunks, int chunk_count,
             const float* params, bf16* shadow) {
  if (chunk_count == 0) return;
  to_bf16_kernel<<<static_cast<unsigned>(chunk_count), kThreads, 0, stream>>>(tensors, chunks, params, shadow);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
}

}  // namespace scalescope::train::gpt_kernels
