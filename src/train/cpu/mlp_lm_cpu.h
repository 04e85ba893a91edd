#pragma once
// The fp32 host reference of the MLP language model (train/mlp_lm.h): exact forward, backward and AdamW
// on the CPU with OpenBLAS GEMMs. It is the CPU rank's workload and the oracle the CUDA model is checked
// against; a double-precision instantiation of the same code is the oracle for this one.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "train/cpu/host_model.h"
#include "train/mlp_lm.h"
#include "train/model.h"

namespace scalescope::train {

template <typename Scalar>
class MlpLmHostMath;  // forward and backward math, defined in mlp_lm_cpu.cpp for float and double

/// The MLP LM in fp32 on the host; the Model plumbing (buffers, checks, AdamW, synchronous work) is
/// HostModel's. GEMMs run through cblas_sgemm with whatever thread count the caller gave OpenBLAS.
///
/// Backward order (on_gradient_ready): exactly the reverse of parameters(): output.bias, output.weight,
/// then hidden.{L-1}.bias, hidden.{L-1}.weight, …, hidden.0.bias, hidden.0.weight, and embedding.weight last.
/// Within a layer the bias gradient (a column sum of the upstream gradient) is ready before the weight's
/// GEMM, as with DDP's reverse registration order. Weight decay per mlp_lm_decays (weight matrices only);
/// stage_batch validates with check_mlp_lm_batch.
class MlpLmCpu final : public HostModel {
 public:
  /// Initialises the parameters with mlp_lm_initial_parameters(config). Throws core::UsageError for an
  /// invalid config.
  explicit MlpLmCpu(const MlpLmConfig& config);
  ~MlpLmCpu() override;

  const MlpLmConfig& config() const { return config_; }

  std::string describe() const override;
  double flops_per_token() const override { return config_.flops_per_token(); }
  int row_tokens() const override { return config_.context + 1; }
  int predictions_per_row() const override { return 1; }

 protected:
  void check_batch(const TokenBatchView& batch) const override;
  float forward_math(const float* params, const std::int32_t* tokens, int rows) override;
  void backward_math(const float* params, const std::vector<float*>& grads,
                     const std::function<void(std::size_t)>& ready) override;
  bool decays(std::size_t parameter_index) const override;

 private:
  MlpLmConfig config_;
  std::unique_ptr<MlpLmHostMath<float>> math_;
};

/// The same forward and backward in double precision, for gradient checks. `parameters` are in forward
/// order (config.parameter_count() elements); the batch is checked with check_mlp_lm_batch (throws
/// core::Error). Returns the mean cross-entropy in nats; when `gradient` is not null it is resized to
/// parameter_count() and receives d loss / d parameters in forward order.
double mlp_lm_reference_loss(const MlpLmConfig& config, const std::vector<double>& parameters,
                             const TokenBatchView& batch, std::vector<double>* gradient);

}  // namespace scalescope::train
