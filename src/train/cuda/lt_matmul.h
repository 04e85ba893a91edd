#pragma once
// Row-major bf16 GEMMs through cuBLASLt with fp32 accumulation: plain, strided-batched, with a bias epilogue
// and with a residual input (D = alpha·op(A)·op(B) + beta·C + bias). Used by both CUDA models (the MLP's
// GEMMs are plain ones); descriptors and the heuristic's algorithm are cached per shape and pointer
// alignment, so steady-state calls cost one cublasLtMatmul each.

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "train/cuda/stream_blocker.h"

namespace scalescope::train::cuda {

/// One row-major GEMM D[m, n] = alpha·op(A)·op(B) + beta·C + bias, batched over `batch` matrices.
/// op(A) is [m, k]: A stored [m, k] (lda ≥ k), or [k, m] (lda ≥ m) when trans_a; op(B) is [k, n]: B stored
/// [k, n] (ldb ≥ n), or [n, k] when trans_b. D is [m, n] with ldd ≥ n, in bf16 or fp32. C (read only when
/// beta ≠ 0) has D's type, ld and batch stride and may differ from D. `bias` is a bf16 vector of n added to
/// every row of D (cuBLASLt's BIAS epilogue; bf16 D, batch 1 only), as torch.nn.Linear under autocast.
/// Batch strides are in elements; compute is fp32 (CUBLAS_COMPUTE_32F).
struct GemmSpec {
  bool trans_a = false, trans_b = false;
  int m = 0, n = 0, k = 0;
  const __nv_bfloat16* a = nullptr;
  int lda = 0;
  long long stride_a = 0;
  const __nv_bfloat16* b = nullptr;
  int ldb = 0;
  long long stride_b = 0;
  void* d = nullptr;
  cudaDataType_t d_type = CUDA_R_16BF;
  int ldd = 0;
  long long stride_d = 0;
  const void* c = nullptr;
  float alpha = 1.0f, beta = 0.0f;
  const __nv_bfloat16* bias = nullptr;
  int batch = 1;
};

/// D[m, n] = A[m, k]·B[k, n] with every matrix row-major and packed (lda = k, ldb = n, ldd = n), bf16 D, no
/// transposes, no bias, α = 1, β = 0: the plain product that benchmarks and tests time or check.
inline GemmSpec packed_gemm(int m, int n, int k, const __nv_bfloat16* a, const __nv_bfloat16* b, void* d) {
  GemmSpec g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = a;
  g.lda = k;
  g.b = b;
  g.ldb = n;
  g.d = d;
  g.ldd = n;
  return g;
}

/// A cuBLASLt handle, a workspace (32 MiB, cuBLAS's recommendation for Hopper; the environment variable
/// SCALESCOPE_CUBLASLT_WORKSPACE_MB overrides it for experiments, 0 allowed) and the plan cache. Not
/// thread-safe; use one per stream.
///
/// Algorithm choice: the first call of each shape times up to 4 of cuBLASLt's heuristic results with the
/// workspace and 4 without (these need no memset of the workspace before each call, which costs ~2 µs of GPU
/// time per call) on that call's own operands — the autotuning of cuBLASLt's documentation, with the memsets
/// counted — and keeps the fastest:
///  - the whole device is waited for first (cudaDeviceSynchronize), so that no other stream's work (NCCL's
///    kernels beside a data-parallel first step) shares the SMs with the candidates;
///  - each candidate runs 5 calls after an untimed one, in two interleaved rounds, and keeps its faster round;
///  - the stream is held by a StreamBlocker while a candidate's timed calls are enqueued, so the CUDA events time
///    the GPU, not the host's launches between the calls; a round whose hold expired does not count;
///  - a candidate must beat an earlier one (in the heuristic's order) by 3 % to replace it, so near-ties do not
///    follow timing noise. With all of these, a 1- and a 2-GPU gpt2-124m run (and the two ranks) still chose other
///    kernels for one or two shapes on H200 (bench/RESULTS.md, 2026-11-30, third session).
/// Measured on H200 with one round, no wait, no blocker and no margin (bench/RESULTS.md, "GEMM autotuning"):
/// tiny-14m −3 %, gpt2-124m −1.3 % step time, gpt-1.3b unchanged; that comparison was not repeated since.
/// SCALESCOPE_GEMM_AUTOTUNE=0 takes cuBLASLt's first choice instead, as does a shape first seen while the stream
/// is captured into a CUDA graph.
class LtMatmul {
 public:
  /// Throws core::Error if cuBLASLt or the workspace allocation fails.
  LtMatmul();
  ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  /// Enqueues the GEMM on `stream`. Throws std::invalid_argument for inconsistent arguments (a bias with an
  /// fp32 D or a batch, ld smaller than the stored width) and core::Error when cuBLASLt has no algorithm or
  /// the call fails.
  void run(cudaStream_t stream, const GemmSpec& g);
  static constexpr std::size_t kDefaultWorkspaceBytes = 32u << 20;  // as recommended for Hopper
  std::size_t workspace_bytes() const { return workspace_bytes_; }

 private:
  struct Key {
    bool trans_a, trans_b, has_bias, has_c;
    int m, n, k, lda, ldb, ldd, batch;
    long long stride_a, stride_b, stride_d;
    cudaDataType_t d_type;
    std::uint32_t align_a, align_b, align_c, align_d;
    auto operator<=>(const Key&) const = default;
  };
  struct Plan;
  const Plan& plan(const Key& key, const GemmSpec& g, cudaStream_t stream);
  /// Up to `count` heuristic results for the plan's shape with at most `workspace` bytes of workspace; `status`
  /// receives cuBLASLt's status (none found is an empty result with CUBLAS_STATUS_SUCCESS or an error status).
  std::vector<cublasLtMatmulHeuristicResult_t> heuristics(const Plan& p, const Key& key, std::uint64_t workspace,
                                                          int count, cublasStatus_t& status) const;
  /// The candidate whose 5 back-to-back calls on `g`'s operands take the least GPU time on `stream`, the device
  /// otherwise idle (it synchronises the device first), over two rounds.
  cublasLtMatmulAlgo_t fastest(const Plan& p, const GemmSpec& g,
                               const std::vector<cublasLtMatmulHeuristicResult_t>& candidates, cudaStream_t stream);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = kDefaultWorkspaceBytes;
  bool autotune_ = true;  // SCALESCOPE_GEMM_AUTOTUNE=0 turns it off
  // Holds the stream while a candidate's timed calls are enqueued; made on the first tuning (pinned memory).
  std::unique_ptr<StreamBlocker> blocker_;
  std::map<Key, Plan*> plans_;
};

}  // namespace scalescope::train::cuda
