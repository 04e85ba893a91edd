#pragma once
// The fp32 host reference of the GPT decoder (train/gpt.h): forward, backward and AdamW on the CPU with
// OpenBLAS GEMMs, built from the named operations of cpu/gpt_ops.h. It is the CPU rank's GPT workload and
// the oracle of GptCuda; a double-precision instantiation of the same code is the oracle for this one.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "train/gpt.h"
#include "train/model.h"

namespace scalescope::train {

template <typename Scalar>
class GptHostMath;  // forward and backward, defined in gpt_cpu.cpp for float and double

/// The GPT decoder in fp32 on the host. Work is synchronous: every method has finished when it returns.
/// A batch row is seq + 1 tokens (inputs t[0..T-1], targets t[1..T]); the loss is the mean over all
/// rows × T positions; predictions_per_row() = seq.
///
/// Backward order (on_gradient_ready): exactly the reverse of parameters(): lnf.bias, lnf.weight, then per
/// block from the last: mlp.proj.bias, mlp.proj.weight, mlp.fc.bias, mlp.fc.weight, ln2.bias, ln2.weight,
/// attn.proj.bias, attn.proj.weight, attn.qkv.bias, attn.qkv.weight, ln1.bias, ln1.weight; then wpe, and wte
/// last: the tied embedding's gradient (head plus input embedding) is complete only after the input
/// embedding's backward.
class GptCpu final : public Model {
 public:
  /// Initialises the parameters with gpt_initial_parameters(config). Throws core::UsageError for an invalid
  /// config.
  explicit GptCpu(const GptConfig& config);
  ~GptCpu() override;
  GptCpu(const GptCpu&) = delete;
  GptCpu& operator=(const GptCpu&) = delete;

  const GptConfig& config() const { return config_; }

  std::string describe() const override;
  const std::vector<ParameterInfo>& parameters() const override { return layout_; }
  double flops_per_token() const override { return config_.flops_per_token(); }
  int row_tokens() const override { return config_.seq + 1; }
  int predictions_per_row() const override { return config_.seq; }

  /// Host memory, zero-filled. Throws std::invalid_argument if offsets do not give every parameter a range
  /// inside `total_elements`.
  float* allocate_gradients(const std::vector<std::size_t>& offsets, std::size_t total_elements) override;
  float* flat_parameters() override { return params_.data(); }
  /// Nothing to refresh: the host model has no derived copies of its parameters.
  void parameters_changed() override {}

  /// Validates (check_gpt_batch, throws core::Error) and copies the batch.
  void stage_batch(const TokenBatchView& batch) override;
  /// Throws std::logic_error if no batch was staged.
  void forward() override;
  /// Throws std::logic_error before allocate_gradients() or forward().
  void backward(const std::function<void(std::size_t parameter_index)>& on_gradient_ready) override;
  /// gpt_ops::adamw_update on every parameter (decay per gpt_decays). Throws std::logic_error before
  /// allocate_gradients().
  void optimizer_step(const AdamWConfig& config) override;
  std::vector<float> take_losses() override;

  std::vector<float> parameters_to_host() override { return params_; }
  std::vector<float> gradients_to_host() override { return grads_; }

 private:
  GptConfig config_;
  std::vector<ParameterInfo> layout_;
  std::vector<std::size_t> param_offsets_;  // forward-order offsets into params_
  std::vector<float> params_, adam_m_, adam_v_;
  std::vector<float> grads_;                // engine layout
  std::vector<std::size_t> grad_offsets_;
  std::int64_t step_ = 0;
  int staged_rows_ = 0;
  std::vector<std::int32_t> staged_tokens_;
  bool forward_done_ = false;
  std::vector<float> losses_;
  std::unique_ptr<GptHostMath<float>> math_;
};

/// The same forward and backward in double precision, for gradient checks. `parameters` in forward order
/// (config.parameter_count() elements); the batch is checked with check_gpt_batch (throws core::Error).
/// Returns the mean cross-entropy in nats; when `gradient` is not null it is resized to parameter_count()
/// and receives d loss / d parameters in forward order.
double gpt_reference_loss(const GptConfig& config, const std::vector<double>& parameters, const TokenBatchView& batch,
                          std::vector<double>* gradient);

}  // namespace scalescope::train
