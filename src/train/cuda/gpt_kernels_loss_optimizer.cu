// The GPT's loss and optimizer kernels (gpt_kernels.h): the softmax cross-entropy forward and backward in one
// kernel (the row staged in shared memory where it fits), the deterministic mean of the losses, the multi-tensor
// AdamW update and the fp32 → bf16 copy of the parameters.

#include "train/cuda/gpt_kernels.h"

#include <math_constants.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include "gpu/cuda_check.h"
#include "train/cuda/gpt_kernels_internal.cuh"
#include "train/cuda/kernel_support.cuh"

namespace scalescope::train::gpt_kernels {
namespace {

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

}  // namespace

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
