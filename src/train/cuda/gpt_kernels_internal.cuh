#pragma once
// Internal to the GPT's kernel files (gpt_kernels_*.cu, the launchers of gpt_kernels.h split by kernel family):
// what the families share — the block and grid constants, 16-byte bf16 packs, grid sizes, the launchers' argument
// checks, warp and block sums, the online-softmax merges (causal softmax and cross-entropy) — and the deterministic
// column reductions (bias gradients, LayerNorm parameter gradients). Everything is in an anonymous namespace, as it
// was when the kernels were one file: each kernel file compiles its own copy.

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math_constants.h>

#include <algorithm>
#include <cstddef>
#include <string>

#include "gpu/cuda_check.h"
#include "train/cuda/gpt_kernels.h"
#include "train/cuda/kernel_support.cuh"

namespace scalescope::train::gpt_kernels {
namespace {

constexpr int kWarp = 32;
constexpr int kRowsPerBlock = 8;   // warp-per-row kernels: 256 threads
constexpr int kThreads = 256;
constexpr std::size_t kMaxBlocks = 8192;  // grid-stride loops cover the rest

/// VEC bf16 values moved as one load/store (16 bytes for VEC = 8).
template <int VEC>
struct alignas(2 * VEC) Pack {
  bf16 v[VEC];
};

inline unsigned blocks_for(std::size_t n, int threads = kThreads) {
  return static_cast<unsigned>(std::clamp<std::size_t>((n + threads - 1) / threads, 1, kMaxBlocks));
}

inline unsigned warp_row_blocks(std::size_t rows) {
  return static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
}

inline void require(bool ok, const std::string& what) { support::require(ok, "gpt_kernels", what); }
inline void require_aligned(const void* p, const char* name) { support::require_aligned(p, "gpt_kernels", name); }

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
__device__ inline float block_sum(float v) {
  __shared__ float partial[kWarp];
  v = warp_sum(v);
  const unsigned lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  __syncthreads();  // an earlier call may still read `partial`
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < blockDim.x / kWarp ? partial[lane] : 0.0f;
  return warp_sum(v);
}

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

inline ColumnPlan column_plan(std::size_t rows, int cols) {
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

}  // namespace
}  // namespace scalescope::train::gpt_kernels
