// The GPT's embedding kernels (gpt_kernels.h): the token + position gather of the forward, the backward's
// scatter-add into the tied table and position-gradient sum, and the gathered backward over every rank's rows
// (tokens sorted with CUB's radix sort, no atomics).

#include "train/cuda/gpt_kernels.h"

#include <cub/device/device_radix_sort.cuh>

#include <cstddef>
#include <cstdint>

#include "gpu/cuda_check.h"
#include "train/cuda/gpt_kernels_internal.cuh"

namespace scalescope::train::gpt_kernels {
namespace {

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

}  // namespace

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

}  // namespace scalescope::train::gpt_kernels
