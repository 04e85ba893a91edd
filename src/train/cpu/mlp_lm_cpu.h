#pragma once
// The fp32 host reference of the MLP language model (train/mlp_lm.h): exact forward, backward and AdamW
// on the CPU with OpenBLAS GEMMs. It is the CPU rank's workload and the oracle the CUDA model is checked
// against; a double-precision instantiation of the same code is the oracle for this one.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "train/mlp_lm.h"
#include "train/model.h"

namespace scalescope::train {

template <typename Scalar>
class MlpLmHostMath;  // forward and backward math, defined in mlp_lm_cpu.cpp for float and double

/// The MLP LM in fp32 on the host. Work is synchronous: every method has finished when it returns.
/// GEMMs run through cblas_sgemm with whatever thread count the caller gave OpenBLAS.
///
/// Backward order (on_gradient_ready): exactly the reverse of parameters(): output.bias, output.weight,
/// then hidden.{L-1}.bias, hidden.{L-1}.weight, …, hidden.0.bias, hidden.0.weight, and embedding.weight last.
/// Within a layer the bias gradient (a column sum of the upstream gradient) is ready before the weight's
/// GEMM, as with DDP's reverse registration order.
class MlpLmCpu final : public Model {
 public:
  /// Initialises the parameters with mlp_lm_initial_parameters(config). Throws core::UsageError for an
  /// invalid config.
  explicit MlpLmCpu(const MlpLmConfig& config);
  ~MlpLmCpu() override;
  MlpLmCpu(const MlpLmCpu&) = delete;
  MlpLmCpu& operator=(const MlpLmCpu&) = delete;

  const MlpLmConfig& config() const { return config_; }

  std::string describe() const override;
  const std::vector<ParameterInfo>& parameters() const override { return layout_; }
  double flops_per_token() const override { return config_.flops_per_token(); }
  int row_tokens() const override { return config_.context + 1; }
  int predictions_per_row() const override { return 1; }

  /// Host memory, zero-filled. Throws std::invalid_argument if offsets do not give every parameter a
  /// range inside `total_elements`.
  float* allocate_gradients(const std::vector<std::size_t>& offsets, std::size_t total_elements) override;
  float* flat_parameters() override { return params_.data(); }
  /// Nothing to refresh: the host model has no derived copies of its parameters.
  void parameters_changed() override {}

  /// Validates (check_mlp_lm_batch, throws core::Error) and copies the batch.
  void stage_batch(const TokenBatchView& batch) override;
  /// Throws std::logic_error if no batch was staged.
  void forward() override;
  /// Throws std::logic_error before allocate_gradients() or forward().
  void backward(const std::function<void(std::size_t parameter_index)>& on_gradient_ready) override;
  /// adamw_update (train/adamw.h) on every parameter (decay per mlp_lm_decays: weight matrices only).
  /// Throws std::logic_error before allocate_gradients().
  void optimizer_step(const AdamWConfig& config) override;
  std::vector<float> take_losses() override;

  std::vector<float> parameters_to_host() override { return params_; }
  std::vector<float> gradients_to_host() override { return grads_; }

 private:
  MlpLmConfig config_;
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
  std::unique_ptr<MlpLmHostMath<float>> math_;
};

/// The same forward and backward in double precision, for gradient checks. `parameters` are in forward
/// order (config.parameter_count() elements); the batch is checked with check_mlp_lm_batch (throws
/// core::Error). Returns the mean cross-entropy in nats; when `gradient` is not null it is resized to
/// parameter_count() and receives d loss / d parameters in forward order.
double mlp_lm_reference_loss(const MlpLmConfig& config, const std::vector<double>& parameters,
                             const TokenBatchView& batch, std::vector<double>* gradient);

}  // namespace scalescope::train
