#pragma once
// The fp32 host reference of the GPT decoder (train/gpt.h): forward, backward and AdamW on the CPU with
// OpenBLAS GEMMs, built from the named operations of cpu/gpt_ops.h. It is the CPU rank's GPT workload and
// the oracle of GptCuda; a double-precision instantiation of the same code is the oracle for this one.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "train/cpu/host_model.h"
#include "train/gpt.h"
#include "train/model.h"

namespace scalescope::train {

template <typename Scalar>
class GptHostMath;  // forward and backward, defined in gpt_cpu.cpp for float and double

/// The GPT decoder in fp32 on the host; the Model plumbing (buffers, checks, AdamW, synchronous work) is
/// HostModel's. A batch row is seq + 1 tokens (inputs t[0..T-1], targets t[1..T]); the loss is the mean
/// over all rows × T positions; predictions_per_row() = seq.
///
/// Backward order (on_gradient_ready): exactly the reverse of parameters(): lnf.bias, lnf.weight, then per
/// block from the last: mlp.proj.bias, mlp.proj.weight, mlp.fc.bias, mlp.fc.weight, ln2.bias, ln2.weight,
/// attn.proj.bias, attn.proj.weight, attn.qkv.bias, attn.qkv.weight, ln1.bias, ln1.weight; then wpe, and wte
/// last: the tied embedding's gradient (head plus input embedding) is complete only after the input
/// embedding's backward. Weight decay per gpt_decays; stage_batch validates with check_gpt_batch.
class GptCpu final : public HostModel {
 public:
  /// Initialises the parameters with gpt_initial_parameters(config). Throws core::UsageError for an invalid
  /// config.
  explicit GptCpu(const GptConfig& config);
  ~GptCpu() override;

  const GptConfig& config() const { return config_; }

  std::string describe() const override;
  double flops_per_token() const override { return config_.flops_per_token(); }
  int row_tokens() const override { return config_.seq + 1; }
  int predictions_per_row() const override { return config_.seq; }

  /// wte (0) and wpe (1); per row (seq + 1) int32 tokens and seq × d fp32 gradients.
  std::optional<EmbeddingGather> embedding_gather() const override;
  /// Throws std::invalid_argument for world_size < 2.
  void gather_embedding_gradient(int world_size) override;
  /// The staged tokens and the last backward's embedding-output gradient; host memory. Throws std::logic_error
  /// before gather_embedding_gradient or stage_batch.
  EmbeddingGatherBuffers embedding_gather_buffers() override;
  /// gpt_ops::embedding_backward over every rank's rows in rank order, scale 1 / world_size. Throws
  /// std::logic_error before the buffers exist.
  void apply_gathered_embedding_gradient() override;

 protected:
  void check_batch(const TokenBatchView& batch) const override;
  float forward_math(const float* params, const std::int32_t* tokens, int rows) override;
  void backward_math(const float* params, const std::vector<float*>& grads,
                     const std::function<void(std::size_t)>& ready) override;
  bool decays(std::size_t parameter_index) const override;

 private:
  GptConfig config_;
  std::unique_ptr<GptHostMath<float>> math_;
  int gather_world_ = 0;  // ≥ 2 once gather_embedding_gradient was called
  std::vector<std::int32_t> gathered_tokens_;   // [world × rows, seq + 1]
  std::vector<float> gathered_input_gradients_;  // [world × rows, seq, d]
};

/// The same forward and backward in double precision, for gradient checks. `parameters` in forward order
/// (config.parameter_count() elements); the batch is checked with check_gpt_batch (throws core::Error).
/// Returns the mean cross-entropy in nats; when `gradient` is not null it is resized to parameter_count()
/// and receives d loss / d parameters in forward order.
double gpt_reference_loss(const GptConfig& config, const std::vector<double>& parameters, const TokenBatchView& batch,
                          std::vector<double>* gradient);

}  // namespace scalescope::train
