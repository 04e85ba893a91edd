#pragma once
// The MLP language model of the vertical slice: a byte-level next-token model in the style of Bengio et
// al. 2003 ("A Neural Probabilistic Language Model"): the embeddings of `context` previous bytes are
// concatenated and fed through `layers` fully connected GELU layers to a softmax over the 256 byte values.
//
//   x      = concat(E[t_1], …, E[t_C])                 [rows, C·embed]
//   h_0    = x;  h_l = GELU(h_{l-1} · W_l + b_l)      [rows, hidden]      l = 1 … layers
//   logits = h_L · W_out + b_out                        [rows, vocab]
//   loss   = mean_rows( −log softmax(logits)[target] )  (nats per predicted byte)
//
// GELU is the tanh approximation (Hendrycks & Gimpel 2016, as GPT-2). Weights are [in, out] row-major so
// that y = x·W. The parameter count ranges from ~1 M (mlp-1m) to ~1 B (mlp-1b) through presets or flags.
// Pure description and host-side initialisation: no device code here.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "train/model.h"

namespace scalescope::train {

struct MlpLmConfig {
  int vocab = 256;           ///< byte-level tokens
  int context = 32;          ///< bytes of context per example
  int embed = 32;            ///< embedding width per context position
  int hidden = 1536;         ///< width of every hidden layer
  int layers = 4;            ///< number of hidden layers, ≥ 1
  std::uint64_t seed = 1234; ///< initialisation seed (same on every rank; rank 0's weights are broadcast anyway)

  /// Width of the first layer's input: context × embed.
  int input_width() const { return context * embed; }
  /// Parameters in forward order: embedding.weight [vocab, embed], then per layer l hidden.l.weight
  /// [in, hidden] and hidden.l.bias [hidden], then output.weight [hidden, vocab] and output.bias [vocab].
  std::vector<ParameterInfo> parameter_layout() const;
  std::size_t parameter_count() const;
  /// Training FLOPs per predicted token: 6 × (elements of the weight matrices), i.e. 2 for the forward
  /// multiply-add and 4 for the two backward GEMMs (Kaplan et al. 2020, "Scaling Laws", C ≈ 6N); the
  /// embedding lookup and element-wise work are left out.
  double flops_per_token() const;
  /// Throws core::UsageError naming the bad field (non-positive sizes, vocab > 256 for byte data…).
  void validate() const;
  /// One line for logs and reports, e.g. "mlp-lm: ctx 32 × embed 64 → 4 × 1024 → 256".
  std::string describe() const;

  /// Named sizes: mlp-1m (0.9 M), mlp-10m (9.1 M), mlp-100m (102 M), mlp-1b (0.98 B).
  /// Throws core::UsageError listing the known names.
  static MlpLmConfig preset(std::string_view name);
  static std::vector<std::string> preset_names();
};

/// Deterministic initial parameters (fp32, forward order, parameter_count() elements), a pure function of
/// the config and its seed so that every backend and every rank can build the same model:
/// embedding ~ N(0, 1); hidden weights ~ N(0, 1/in); output weight ~ N(0, 0.01/in); biases 0.
/// Normal draws come from a counter-based generator (splitmix64 + Box–Muller) so large models initialise
/// in parallel and identically on any machine.
std::vector<float> mlp_lm_initial_parameters(const MlpLmConfig& config);

/// Checks a batch before a backend copies it: rows ≥ 1, row_tokens == context + 1 (context inputs, then
/// the target), tokens not null and every token in [0, vocab). Throws core::Error naming the first problem.
void check_mlp_lm_batch(const MlpLmConfig& config, const TokenBatchView& batch);

/// Whether AdamW's decoupled weight decay applies to the parameter called `name`: weight matrices only
/// (names ending in ".weight" other than "embedding.weight"), as AdamWConfig specifies.
bool mlp_lm_decays(const std::string& name);

}  // namespace scalescope::train
