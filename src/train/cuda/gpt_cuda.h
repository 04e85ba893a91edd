#pragma once
// The GPT decoder (train/gpt.h) on one GPU in bf16 mixed precision, as PyTorch autocast with fp32
// parameters: fp32 master weights, AdamW moments and gradients; bf16 copies of the weights and bf16
// activations; fp32 arithmetic inside every kernel. GEMMs run through cuBLASLt (bf16 in, fp32 accumulate)
// with the bias (and the residual add) fused into the epilogue; weight gradients leave the GEMM in fp32
// straight into the engine's flat gradient buffer. Kernels: cuda/gpt_kernels.h.

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "train/gpt.h"
#include "train/model.h"

namespace scalescope::train {

/// The GPT on the current CUDA device. Every method only enqueues work on the compute stream and returns
/// without waiting, except take_losses(), parameters_to_host() and gradients_to_host() (they read results
/// back), stage_batch() (it waits for its previous host→device copy before reusing the pinned staging
/// buffer) and the first stage_batch() of a larger batch (it reallocates the activations). CUDA and cuBLAS
/// failures throw core::Error (gpu/cuda_check.h).
///
/// Numerics per step (R = rows·T positions), matching autocast where it matters:
///   x_0 = bf16(wte[t] + wpe[i]) from the fp32 tables; the residual stream is stored in bf16;
///   LayerNorm in fp32 with fp32 weight/bias, output bf16;
///   linear layers y = bf16(x·W + b [+ residual]) with bf16 W and b (cuBLASLt BIAS epilogue, fp32 accumulate);
///   attention, where GptConfig::uses_flash_attention() (head width 64 or 128, the default): fused kernels on q,
///   k, v in the qkv GEMM's row layout — cuDNN's (cuda/cudnn_attention.h) where uses_cudnn_attention(), else those
///   of cuda/flash_attention.h (scores fp32 in registers, P bf16 into the P·V product, nothing of size T² in
///   memory; backward recomputes P per key tile from the kept log-sum-exp; cuDNN's work the same way);
///   otherwise (--attention gemm, or another head width) strided-batched GEMMs: scores bf16 (scaled by 1/√hd in
///   the GEMM), causal softmax in fp32 into bf16 probabilities, y = P·V; padded head width hdp (multiple of 8);
///   for T > 256 queries go in chunks of 256 so the GEMMs skip score blocks above the diagonal; the
///   probabilities are materialised in one scratch buffer and recomputed in backward (from q, k and each row's
///   kept log-sum-exp) unless GptConfig::recompute_activations is false, which keeps them per layer;
///   GELU in fp32 on the bf16 pre-activation; logits bf16 [R, V]; loss and d logits from one fused fp32 pass;
///   backward recomputes the GELU output (from the kept pre-activation, over it, in the GELU backward's pass)
///   unless recompute_activations is false; backward consumes what forward kept, so a second backward without a
///   forward between throws std::logic_error;
///   weight gradients fp32 from the GEMM; bias and LayerNorm gradients fp32 column sums (deterministic);
///   the tied embedding's gradient = head GEMM (fp32) + fp32 atomic scatter-add of the input gradient, or, once
///   gather_embedding_gradient() was called, + the deterministic scatter-add of every rank's gathered rows.
///
/// Backward order (on_gradient_ready): the reverse of parameters(), as GptCpu (wte last); with the embedding
/// gathered, wte first (its head part) and wpe never. Each call comes
/// right after the kernels writing that gradient were enqueued (not completed): record an event on the
/// compute stream to wait for it.
///
/// Requires d_model % 8 == 0 and ffn % 8 == 0 (all presets; core::UsageError otherwise).
class GptCuda final : public Model {
 public:
  /// Allocates the parameters on the current device and initialises them with gpt_initial_parameters(config)
  /// (synchronises `compute_stream` once). `compute_stream` is not owned and must outlive the model. Throws
  /// core::UsageError for an invalid config, core::Error on CUDA errors (e.g. out of memory).
  GptCuda(const GptConfig& config, cudaStream_t compute_stream);
  ~GptCuda() override;
  GptCuda(const GptCuda&) = delete;
  GptCuda& operator=(const GptCuda&) = delete;

  const GptConfig& config() const;
  cudaStream_t stream() const;
  /// Bytes of device memory this model holds now: parameters, moments, bf16 copies, gradients, activations
  /// for the largest batch staged so far, workspaces (cuBLASLt's included). Excludes the CUDA context.
  std::size_t device_bytes() const;

  std::string describe() const override;
  const std::vector<ParameterInfo>& parameters() const override;
  double flops_per_token() const override;
  int row_tokens() const override;
  int predictions_per_row() const override;

  /// Device memory, zero-filled on the compute stream. Throws std::invalid_argument if the offsets do not
  /// give every parameter a range inside `total_elements`.
  float* allocate_gradients(const std::vector<std::size_t>& offsets, std::size_t total_elements) override;
  /// Device pointer to the fp32 master parameters (forward order).
  float* flat_parameters() override;
  /// Re-derives the bf16 weight copies from the master parameters (one multi-tensor kernel on the compute
  /// stream). Call after writing flat_parameters() from outside, e.g. after a broadcast.
  void parameters_changed() override;

  /// Validates on the host (check_gpt_batch, throws core::Error), copies into pinned memory and enqueues
  /// the host→device copy on the compute stream.
  void stage_batch(const TokenBatchView& batch) override;
  /// Enqueues the forward pass and the fused cross-entropy (which also produces d logits for backward).
  /// Throws std::logic_error with no staged batch or with 65536 losses not yet taken.
  void forward() override;
  /// Throws std::logic_error before allocate_gradients() or forward().
  void backward(const std::function<void(std::size_t parameter_index)>& on_gradient_ready) override;
  /// One multi-tensor AdamW kernel over the parameters of `part` (torch.optim.AdamW, decay per gpt_decays),
  /// which also refreshes their bf16 copies. Throws std::logic_error before allocate_gradients() and as
  /// Model::optimizer_step_part says.
  void optimizer_step_part(const AdamWConfig& config, ParameterRange part) override;
  /// Copies the per-step losses back; synchronises the compute stream.
  std::vector<float> take_losses() override;
  /// forward() and backward() only enqueue work on the compute stream at addresses fixed for one batch shape
  /// (stage_batch() reallocates for a larger one), so they can be captured into a CUDA graph.
  bool replayable() const override { return true; }

  /// wte (0) and wpe (1); per row (seq + 1) int32 tokens and seq × d bf16 embedding-output gradients (what the
  /// input embedding's backward reads, so nothing is rounded on the way).
  std::optional<EmbeddingGather> embedding_gather() const override;
  /// Allocates world_size × the staged rows' receive buffers (tokens, gradients) and the deterministic
  /// scatter-add's scratch (k::embedding_backward_gathered): 57 MB more for gpt2-124m at 16 rows on 2 ranks.
  /// Throws std::invalid_argument for world_size < 2.
  void gather_embedding_gradient(int world_size) override;
  /// Device memory; std::logic_error before gather_embedding_gradient or stage_batch.
  EmbeddingGatherBuffers embedding_gather_buffers() override;
  /// k::embedding_backward_gathered on the compute stream, scale 1 / world_size.
  void apply_gathered_embedding_gradient() override;
  /// Enqueues the copy of the loss a captured forward wrote (a fixed device float) into the loss log.
  void log_replayed_loss() override;

  /// Both synchronise the compute stream.
  std::vector<float> parameters_to_host() override;
  std::vector<float> gradients_to_host() override;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace scalescope::train
