#pragma once
// The plumbing the fp32 host models share (MlpLmCpu, GptCpu): parameters, AdamW moments, the engine's
// gradient buffer, the staged batch and the losses, with the Model contract's checks. A derived model
// supplies its batch check, forward and backward math and weight-decay rule through protected hooks.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "train/adamw.h"
#include "train/model.h"

namespace scalescope::train {

/// Offsets of the parameters of `layout` packed one after another in forward order (flat_parameters()
/// layout): element offsets, one per parameter.
std::vector<std::size_t> forward_offsets(const std::vector<ParameterInfo>& layout);

/// The double-precision oracles' common part (mlp_lm_reference_loss, gpt_reference_loss), on a batch and
/// parameters the caller has validated. `Math` is a model's host math in double: forward(params, tokens,
/// rows) → mean loss, backward(params, per-parameter gradient pointers, ready), offsets() → forward_offsets.
/// Returns the mean loss; when `gradient` is not null it is resized to parameters.size() and receives
/// d loss / d parameters in forward order.
template <typename Math>
double host_reference_loss(Math& math, const std::vector<double>& parameters, const TokenBatchView& batch,
                           std::vector<double>* gradient) {
  const double loss = math.forward(parameters.data(), batch.tokens, batch.rows);
  if (gradient != nullptr) {
    gradient->assign(parameters.size(), 0.0);
    std::vector<double*> grads;
    for (std::size_t off : math.offsets()) grads.push_back(gradient->data() + off);
    math.backward(parameters.data(), grads, [](std::size_t) {});
  }
  return loss;
}

/// A Model whose parameters, moments and gradients are fp32 host vectors. Work is synchronous: every
/// method has finished when it returns. Not copyable: a model owns its buffers and its math's activations.
class HostModel : public Model {
 public:
  ~HostModel() override = default;
  HostModel(const HostModel&) = delete;
  HostModel& operator=(const HostModel&) = delete;

  const std::vector<ParameterInfo>& parameters() const final { return layout_; }

  /// Host memory, zero-filled. Throws std::invalid_argument if offsets do not give every parameter a
  /// range inside `total_elements` (check_gradient_offsets).
  float* allocate_gradients(const std::vector<std::size_t>& offsets, std::size_t total_elements) final;
  float* flat_parameters() final { return params_.data(); }
  /// Nothing to refresh: a host model has no derived copies of its parameters.
  void parameters_changed() final {}

  /// Validates (check_batch, throws core::Error) and copies the batch.
  void stage_batch(const TokenBatchView& batch) final;
  /// Throws std::logic_error if no batch was staged.
  void forward() final;
  /// Throws std::logic_error before allocate_gradients() or forward().
  void backward(const std::function<void(std::size_t parameter_index)>& on_gradient_ready) final;
  /// adamw_update (train/adamw.h) on the parameters of `part`, with their step t counted per parameter and
  /// decay where decays(i). Throws std::logic_error as Model::optimizer_step_part says.
  void optimizer_step_part(const AdamWConfig& config, ParameterRange part) final;
  std::vector<float> take_losses() final;

  std::vector<float> parameters_to_host() final { return params_; }
  std::vector<float> gradients_to_host() final { return grads_; }

 protected:
  /// `name` starts the std::logic_error messages (e.g. "MlpLmCpu::forward before stage_batch");
  /// `initial_parameters` are in forward order, one range per entry of `layout`.
  HostModel(std::string name, std::vector<ParameterInfo> layout, std::vector<float> initial_parameters);

  /// Throws core::Error if `batch` does not fit the model (shape, token range).
  virtual void check_batch(const TokenBatchView& batch) const = 0;
  /// Mean loss over `rows` rows of row_tokens() validated tokens; `params` in forward order. Keeps what
  /// backward_math needs.
  virtual float forward_math(const float* params, const std::int32_t* tokens, int rows) = 0;
  /// Gradients of the last forward_math's loss, overwritten at grads[i] (parameter i's range in the engine
  /// buffer); ready(i) once each is complete, in the model's backward order.
  virtual void backward_math(const float* params, const std::vector<float*>& grads,
                             const std::function<void(std::size_t)>& ready) = 0;
  /// Whether weight decay applies to parameter i.
  virtual bool decays(std::size_t parameter_index) const = 0;

  /// The staged batch, [rows, row_tokens()] (empty before stage_batch).
  const std::vector<std::int32_t>& staged_tokens() const { return staged_tokens_; }
  /// Parameter i's gradient in the engine's buffer (after allocate_gradients).
  float* gradient(std::size_t parameter_index) { return grads_.data() + grad_offsets_.at(parameter_index); }

 private:
  std::string name_;
  std::vector<ParameterInfo> layout_;
  std::vector<std::size_t> param_offsets_;  // forward-order offsets into params_
  std::vector<float> params_, adam_m_, adam_v_;
  std::vector<float> grads_;                // engine layout
  std::vector<std::size_t> grad_offsets_;
  AdamWStepCounts steps_;
  int staged_rows_ = 0;
  std::vector<std::int32_t> staged_tokens_;
  bool forward_done_ = false;
  std::vector<float> losses_;
};

}  // namespace scalescope::train
