#include "train/mlp_lm.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "train/normal_init.h"

namespace scalescope::train {
namespace {

struct Preset {
  const char* name;
  MlpLmConfig config;
};

MlpLmConfig make(int context, int embed, int hidden, int layers) {
  MlpLmConfig c;
  c.context = context;
  c.embed = embed;
  c.hidden = hidden;
  c.layers = layers;
  return c;
}

const std::vector<Preset>& presets() {
  static const std::vector<Preset> table = {
      {"mlp-1m", make(32, 16, 512, 3)},
      {"mlp-10m", make(32, 32, 1536, 4)},
      {"mlp-100m", make(64, 64, 4096, 6)},
      {"mlp-1b", make(64, 64, 8192, 15)},
  };
  return table;
}

}  // namespace

std::vector<ParameterInfo> MlpLmConfig::parameter_layout() const {
  std::vector<ParameterInfo> params;
  params.push_back({"embedding.weight", static_cast<std::size_t>(vocab) * embed});
  int in = input_width();
  for (int l = 0; l < layers; ++l) {
    params.push_back({fmt::format("hidden.{}.weight", l), static_cast<std::size_t>(in) * hidden});
    params.push_back({fmt::format("hidden.{}.bias", l), static_cast<std::size_t>(hidden)});
    in = hidden;
  }
  params.push_back({"output.weight", static_cast<std::size_t>(hidden) * vocab});
  params.push_back({"output.bias", static_cast<std::size_t>(vocab)});
  return params;
}

std::size_t MlpLmConfig::parameter_count() const {
  std::size_t n = 0;
  for (const auto& p : parameter_layout()) n += p.numel;
  return n;
}

double MlpLmConfig::flops_per_token() const {
  double matrix_elements = static_cast<double>(input_width()) * hidden +
                           static_cast<double>(layers - 1) * hidden * hidden +
                           static_cast<double>(hidden) * vocab;
  return 6.0 * matrix_elements;
}

void MlpLmConfig::validate() const {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw core::UsageError("invalid MLP model size: " + what, "use a preset (--model mlp-10m) or positive sizes");
  };
  require(vocab >= 2 && vocab <= 256, fmt::format("vocab {} must be in 2..256 (byte-level tokens)", vocab));
  require(context >= 1 && context <= 4096, fmt::format("context {} must be in 1..4096", context));
  require(embed >= 1 && embed <= 65536, fmt::format("embed {} must be in 1..65536", embed));
  require(hidden >= 1 && hidden <= 65536, fmt::format("hidden {} must be in 1..65536", hidden));
  require(layers >= 1 && layers <= 1024, fmt::format("layers {} must be in 1..1024", layers));
  require(static_cast<double>(input_width()) * hidden < 4e9, "first layer has more than 4e9 weights");
}

std::string MlpLmConfig::describe() const {
  return fmt::format("mlp-lm: ctx {} × embed {} → {} × {} → {}", context, embed, layers, hidden, vocab);
}

MlpLmConfig MlpLmConfig::preset(std::string_view name) {
  for (const auto& p : presets())
    if (name == p.name) return p.config;
  throw core::UsageError(fmt::format("unknown model '{}'", name),
                         fmt::format("choose one of: {}", fmt::join(preset_names(), ", ")));
}

std::vector<std::string> MlpLmConfig::preset_names() {
  std::vector<std::string> names;
  for (const auto& p : presets()) names.emplace_back(p.name);
  return names;
}

std::vector<float> mlp_lm_initial_parameters(const MlpLmConfig& config) {
  config.validate();
  const auto layout = config.parameter_layout();
  std::vector<float> params(config.parameter_count(), 0.0f);
  std::size_t offset = 0;
  int in = config.input_width();
  for (std::size_t i = 0; i < layout.size(); ++i) {
    const auto& p = layout[i];
    float* dst = params.data() + offset;
    if (p.name == "embedding.weight") {
      fill_normal(dst, p.numel, 1.0f, config.seed, i);
    } else if (p.name.ends_with(".weight")) {
      bool output = p.name == "output.weight";
      float stddev = static_cast<float>((output ? 0.1 : 1.0) / std::sqrt(static_cast<double>(in)));
      fill_normal(dst, p.numel, stddev, config.seed, i);
      in = config.hidden;
    }  // biases stay 0
    offset += p.numel;
  }
  return params;
}

void check_mlp_lm_batch(const MlpLmConfig& config, const TokenBatchView& batch) {
  check_token_batch(batch, config.context + 1, "context + 1", config.vocab,
                    "build batches with the data loader of this model (rows of context + 1 byte tokens)");
}

bool mlp_lm_decays(const std::string& name) { return name.ends_with(".weight") && name != "embedding.weight"; }

}  // namespace scalescope::train
