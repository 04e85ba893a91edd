#pragma once
// Which workload a job trains: the MLP language model of the vertical slice or the GPT decoder, by preset name
// with size overrides. One value type so that the job, its JSON and every backend agree on the model.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/gpt.h"
#include "train/mlp_lm.h"
#include "train/model.h"

namespace scalescope::train {

enum class ModelFamily { mlp, gpt };

/// Size overrides from the command line; 0 keeps the preset's value.
struct ModelOverrides {
  int layers = 0;   ///< both families: hidden layers (MLP) or transformer blocks (GPT)
  int context = 0;  ///< MLP: bytes of context
  int embed = 0;    ///< MLP: embedding width
  int hidden = 0;   ///< MLP: hidden width
  int seq = 0;      ///< GPT: context length T
  bool keep_activations = false;  ///< GPT: GptConfig::recompute_activations = false
  /// GPT: "cudnn", "flash" (GptConfig::fused_attention) or "gemm" (GptConfig::flash_attention off); empty keeps the
  /// default (cuDNN's fused attention where built in, else flash). Given for an MLP, refused.
  std::string attention;
};

struct ModelSpec {
  std::string name = "mlp-10m";  ///< the preset it started from
  ModelFamily family = ModelFamily::mlp;
  MlpLmConfig mlp;               ///< valid when family == mlp
  GptConfig gpt;                 ///< valid when family == gpt

  /// A preset of either family (mlp-1m … mlp-1b, tiny-14m … llama2-13b-shape) with `overrides` applied.
  /// Throws core::UsageError for an unknown name (listing every preset), an override that does not apply to
  /// the family (e.g. --hidden for a GPT preset), or an invalid size.
  static ModelSpec from_preset(std::string_view name, const ModelOverrides& overrides = {});
  /// Every preset name, MLP first.
  static std::vector<std::string> preset_names();

  /// Throws core::UsageError when the sizes are invalid.
  void validate() const;
  /// Tokens per batch row (MLP: context + 1; GPT: seq + 1) and predicted tokens per row (1; seq).
  int row_tokens() const;
  int predictions_per_row() const;
  /// Token ids must be below this.
  int vocab() const;
  std::size_t parameter_count() const;
  /// Training FLOPs per predicted token (the family's own formula: 6N, or 6N + 12·L·T·d for GPT).
  double flops_per_token() const;
  /// Estimated bytes one rank needs for `rows` batch rows: master weights, gradients, AdamW moments, working
  /// copies and activations (GPT: GptConfig::memory_per_rank on a GPU, host_memory_per_rank on a CPU rank;
  /// MLP: fp32 weights ×5 plus activations on either). A GPT on world_size ≥ 2 ranks also counts the tied
  /// embedding's all-gather buffers (EmbeddingExchange), as if it were chosen: world_size × rows × (seq + 1)
  /// tokens and seq × d embedding-output gradients (bf16 on GPU, fp32 on CPU), plus the GPU scatter-add's scratch.
  double memory_per_rank_bytes(int rows, bool gpu, int world_size = 1) const;
  /// e.g. "gpt2-124m: gpt: 12 layers × d 768 …".
  std::string describe() const;
};
void to_json(nlohmann::json& j, const ModelSpec& m);
void from_json(const nlohmann::json& j, ModelSpec& m);

/// The model on the host (fp32 reference: MlpLmCpu or GptCpu).
std::unique_ptr<Model> make_cpu_model(const ModelSpec& spec);

}  // namespace scalescope::train
