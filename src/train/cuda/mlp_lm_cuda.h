#pragma once
// The MLP language model (train/mlp_lm.h) on one GPU, in bf16 mixed precision as PyTorch autocast with
// fp32 parameters: fp32 master weights, AdamW moments and gradients; bf16 copies of the weights and bf16
// activations; GEMMs through cuBLASLt (bf16 inputs, fp32 accumulation). Weight gradients leave the GEMM
// in fp32 straight into the engine's flat gradient buffer, as DDP sees them under autocast.

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "train/mlp_lm.h"
#include "train/model.h"

namespace scalescope::train {

/// The MLP LM on the current CUDA device. Every method only enqueues work on the compute stream and
/// returns without waiting, except take_losses(), parameters_to_host() and gradients_to_host() (they read
/// results back), stage_batch() (it waits for its previous host→device copy before reusing the pinned
/// staging buffer) and the first stage_batch() of a larger batch (it reallocates the activations).
/// CUDA and cuBLAS failures throw core::Error (gpu/cuda_check.h).
///
/// Numerics per step (rows = batch rows, C = context, E = embed, H = hidden, V = vocab):
///   x [rows, C·E] bf16 gathered from the bf16 embedding copy;
///   per layer z = x·W (bf16 out, fp32 accumulate), z ← bf16(z + b) with the fp32 bias, h = bf16(GELU(z));
///   logits [rows, V] bf16 = h·W_out; loss and d logits from fp32 softmax cross-entropy on logits + b_out;
///   d logits = (softmax − onehot)/rows in bf16; bias gradients are fp32 column sums of bf16 upstream
///   gradients; the embedding gradient is an fp32 atomic scatter-add of the bf16 input gradient.
///
/// Backward order (on_gradient_ready), the same as MlpLmCpu: the reverse of parameters(), i.e.
/// output.bias, output.weight, hidden.{L-1}.bias, hidden.{L-1}.weight, …, hidden.0.weight, embedding.weight.
/// Each call comes right after the kernels writing that gradient were enqueued (not completed): record an
/// event on the compute stream to wait for it.
class MlpLmCuda final : public Model {
 public:
  /// Allocates the parameters on the current device and initialises them with
  /// mlp_lm_initial_parameters(config) (synchronises `compute_stream` once). `compute_stream` is not owned
  /// and must outlive the model. Throws core::UsageError for an invalid config, core::Error on CUDA errors.
  MlpLmCuda(const MlpLmConfig& config, cudaStream_t compute_stream);
  ~MlpLmCuda() override;
  MlpLmCuda(const MlpLmCuda&) = delete;
  MlpLmCuda& operator=(const MlpLmCuda&) = delete;

  const MlpLmConfig& config() const;
  cudaStream_t stream() const;

  std::string describe() const override;
  const std::vector<ParameterInfo>& parameters() const override;
  double flops_per_token() const override;
  int row_tokens() const override;
  int predictions_per_row() const override { return 1; }

  /// Device memory, zero-filled on the compute stream. Throws std::invalid_argument if the offsets do not
  /// give every parameter a range inside `total_elements`.
  float* allocate_gradients(const std::vector<std::size_t>& offsets, std::size_t total_elements) override;
  /// Device pointer to the fp32 master parameters (forward order).
  float* flat_parameters() override;
  /// Re-derives the bf16 weight copies from the master parameters (one kernel per parameter, on the
  /// compute stream). Call after writing flat_parameters() from outside, e.g. after a broadcast.
  void parameters_changed() override;

  /// Validates on the host (check_mlp_lm_batch, throws core::Error), copies into pinned memory and
  /// enqueues the host→device copy on the compute stream.
  void stage_batch(const TokenBatchView& batch) override;
  /// Enqueues the forward pass and the fused softmax cross-entropy (which also produces d logits for
  /// backward). Throws std::logic_error with no staged batch or with 65536 losses not yet taken.
  void forward() override;
  /// Throws std::logic_error before allocate_gradients() or forward().
  void backward(const std::function<void(std::size_t parameter_index)>& on_gradient_ready) override;
  /// One fused AdamW kernel per parameter, as torch.optim.AdamW (Loshchilov & Hutter 2019; formula in
  /// train/adamw.h), which also refreshes the bf16 copy. Throws std::logic_error before
  /// allocate_gradients() and as Model::optimizer_step_part says.
  void optimizer_step_part(const AdamWConfig& config, ParameterRange part) override;
  /// Copies the per-step losses back; synchronises the compute stream.
  std::vector<float> take_losses() override;

  /// Both synchronise the compute stream.
  std::vector<float> parameters_to_host() override;
  std::vector<float> gradients_to_host() override;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace scalescope::train
