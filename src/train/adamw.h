#pragma once
// AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization", ICLR 2019) as torch.optim.AdamW:
// the per-step constants, computed once on the host for every model, and the fp32 element update of the
// host models. The CUDA models apply the same update in their fused kernels with these constants.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "train/model.h"

namespace scalescope::train {

/// AdamW's constants for one step. Plain floats, so CUDA kernels take it by value.
struct AdamWStep {
  float beta1, beta2, epsilon;
  float decay;      ///< 1 − lr·wd: the factor for parameters that decay (the others keep factor 1)
  float step_size;  ///< lr / (1 − β1^t)
  float bc2_sqrt;   ///< √(1 − β2^t)
};

/// The constants of step t ≥ 1 (t counts optimizer steps from 1). The bias corrections are computed in
/// double, as PyTorch computes them on the host, and rounded to fp32 once.
AdamWStep adamw_step(const AdamWConfig& config, std::int64_t t);

/// Optimizer steps taken by each parameter (torch.optim.AdamW keeps `step` per parameter), so that one step
/// can be applied in parts (Model::optimizer_step_part).
class AdamWStepCounts {
 public:
  /// `parameters` parameters, none stepped yet.
  explicit AdamWStepCounts(std::size_t parameters = 0) : steps_(parameters, 0) {}
  /// Advances parameters `part` by one step and returns their new step t ≥ 1. Throws std::logic_error
  /// (naming `model`) for an empty part, one beyond the parameters, or parameters at different steps.
  std::int64_t advance(ParameterRange part, const std::string& model);

 private:
  std::vector<std::int64_t> steps_;
};

/// One AdamW step on `n` fp32 elements: parameters p, gradients g, moments m and v (all [n]), in place:
///   p ← p·decay  (only if `decays`);  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²;
///   p ← p − step_size · m / (√v / bc2_sqrt + ε)
/// which is p − (lr / (1−β1^t)) · m / (√v / √(1−β2^t) + ε) with PyTorch's order of operations.
void adamw_update(float* p, const float* g, float* m, float* v, std::size_t n, const AdamWStep& step, bool decays);

}  // namespace scalescope::train
