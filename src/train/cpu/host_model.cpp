#include "train/cpu/host_model.h"

#include <stdexcept>
#include <utility>

#include "train/adamw.h"

namespace scalescope::train {

std::vector<std::size_t> forward_offsets(const std::vector<ParameterInfo>& layout) {
  std::vector<std::size_t> offsets;
  std::size_t at = 0;
  for (const auto& p : layout) {
    offsets.push_back(at);
    at += p.numel;
  }
  return offsets;
}

HostModel::HostModel(std::string name, std::vector<ParameterInfo> layout, std::vector<float> initial_parameters)
    : name_(std::move(name)),
      layout_(std::move(layout)),
      param_offsets_(forward_offsets(layout_)),
      params_(std::move(initial_parameters)),
      adam_m_(params_.size(), 0.0f),
      adam_v_(params_.size(), 0.0f),
      steps_(layout_.size()) {}

float* HostModel::allocate_gradients(const std::vector<std::size_t>& offsets, std::size_t total_elements) {
  check_gradient_offsets(layout_, offsets, total_elements);
  grad_offsets_ = offsets;
  grads_.assign(total_elements, 0.0f);
  return grads_.data();
}

void HostModel::stage_batch(const TokenBatchView& batch) {
  check_batch(batch);
  staged_rows_ = batch.rows;
  forward_done_ = false;  // the kept activations belong to the previous batch
  staged_tokens_.assign(batch.tokens,
                        batch.tokens + static_cast<std::size_t>(batch.rows) * static_cast<std::size_t>(batch.row_tokens));
}

void HostModel::forward() {
  if (staged_rows_ == 0) throw std::logic_error(name_ + "::forward before stage_batch");
  losses_.push_back(forward_math(params_.data(), staged_tokens_.data(), staged_rows_));
  forward_done_ = true;
}

void HostModel::backward(const std::function<void(std::size_t)>& on_gradient_ready) {
  if (grad_offsets_.empty()) throw std::logic_error(name_ + "::backward before allocate_gradients");
  if (!forward_done_) throw std::logic_error(name_ + "::backward before forward");
  std::vector<float*> grads;
  for (std::size_t off : grad_offsets_) grads.push_back(grads_.data() + off);
  backward_math(params_.data(), grads, on_gradient_ready);
}

void HostModel::optimizer_step_part(const AdamWConfig& config, ParameterRange part) {
  if (grad_offsets_.empty()) throw std::logic_error(name_ + "::optimizer_step before allocate_gradients");
  const AdamWStep step = adamw_step(config, steps_.advance(part, name_));
  for (std::size_t i = part.first; i < part.end; ++i) {
    const std::size_t at = param_offsets_[i];
    adamw_update(params_.data() + at, grads_.data() + grad_offsets_[i], adam_m_.data() + at, adam_v_.data() + at,
                 layout_[i].numel, step, decays(i));
  }
}

std::vector<float> HostModel::take_losses() { return std::exchange(losses_, {}); }

}  // namespace scalescope::train
