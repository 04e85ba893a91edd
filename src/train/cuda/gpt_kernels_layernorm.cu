// The GPT's LayerNorm kernels (gpt_kernels.h): the forward (warp per row, the row held in registers up to
// d 2048), the two-pass backward (dx, then the parameter gradients as column reductions) and the one-pass fused
// backward, with the workspace they need and the occupancy that sizes the fused backward's chunks.

#include "train/cuda/gpt_kernels.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <mutex>
#include <tuple>

#include "gpu/cuda_check.h"
#include "train/cuda/gpt_kernels_internal.cuh"

namespace scalescope::train::gpt_kernels {
namespace {

constexpr float kLayerNormEpsilon = 1e-5f;

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

}  // namespace

std::size_t layernorm_backward_workspace_floats(std::size_t rows, int d) {
  const std::size_t two_pass = column_workspace_floats(rows, d, 3);
  if (!fused_layernorm_backward_fits(d) || rows == 0) return two_pass;
  return std::max(two_pass, static_cast<std::size_t>(fused_layernorm_plan(rows, d).chunks) * 3 * static_cast<std::size_t>(d));
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

}  // namespace scalescope::train::gpt_kernels
