#include "train/model_spec.h"

#include <fmt/format.h>

#include "core/error.h"
#include "train/cpu/gpt_cpu.h"
#include "train/cpu/mlp_lm_cpu.h"

namespace scalescope::train {
namespace {

bool is_mlp_preset(std::string_view name) {
  for (const auto& n : MlpLmConfig::preset_names())
    if (n == name) return true;
  return false;
}

bool is_gpt_preset(std::string_view name) {
  for (const auto& n : GptConfig::preset_names())
    if (n == name) return true;
  return false;
}

}  // namespace

std::vector<std::string> ModelSpec::preset_names() {
  auto names = MlpLmConfig::preset_names();
  for (const auto& n : GptConfig::preset_names()) names.push_back(n);
  return names;
}

ModelSpec ModelSpec::from_preset(std::string_view name, const ModelOverrides& o) {
  ModelSpec spec;
  spec.name = std::string(name);
  if (is_mlp_preset(name)) {
    spec.family = ModelFamily::mlp;
    spec.mlp = MlpLmConfig::preset(name);
    if (o.seq) throw core::UsageError("--seq applies to GPT presets; the MLP's context is --context");
    if (o.keep_activations)
      throw core::UsageError("--keep-activations applies to GPT presets: the MLP keeps all its activations anyway",
                             "drop --keep-activations, or use a GPT preset such as --model gpt2-124m");
    if (!o.attention.empty())
      throw core::UsageError(fmt::format("--attention applies to GPT presets: {} is an MLP, which has no attention", name),
                             "drop --attention, or use a GPT preset such as --model gpt2-124m");
    if (o.layers) spec.mlp.layers = o.layers;
    if (o.context) spec.mlp.context = o.context;
    if (o.embed) spec.mlp.embed = o.embed;
    if (o.hidden) spec.mlp.hidden = o.hidden;
  } else if (is_gpt_preset(name)) {
    spec.family = ModelFamily::gpt;
    spec.gpt = GptConfig::preset(name);
    if (o.context || o.embed || o.hidden)
      throw core::UsageError(fmt::format("--context, --embed and --hidden apply to MLP presets, not to {}", name),
                             "for a GPT preset use --layers (a slice of its blocks) and --seq");
    if (o.layers) spec.gpt.layers = o.layers;
    if (o.seq) spec.gpt.seq = o.seq;
    if (o.keep_activations) spec.gpt.recompute_activations = false;
    spec.gpt.choose_attention(o.attention);
  } else {
    throw core::UsageError(fmt::format("unknown model '{}'", name),
                           fmt::format("choose one of: {}", fmt::join(preset_names(), ", ")));
  }
  spec.validate();
  return spec;
}

void ModelSpec::validate() const {
  if (family == ModelFamily::mlp) mlp.validate();
  else gpt.validate();
}

int ModelSpec::row_tokens() const { return family == ModelFamily::mlp ? mlp.context + 1 : gpt.seq + 1; }
int ModelSpec::predictions_per_row() const { return family == ModelFamily::mlp ? 1 : gpt.seq; }
int ModelSpec::vocab() const { return family == ModelFamily::mlp ? mlp.vocab : gpt.vocab; }

std::size_t ModelSpec::parameter_count() const {
  return family == ModelFamily::mlp ? mlp.parameter_count() : gpt.parameter_count();
}

double ModelSpec::flops_per_token() const {
  return family == ModelFamily::mlp ? mlp.flops_per_token() : gpt.flops_per_token();
}

double ModelSpec::memory_per_rank_bytes(int rows, bool gpu, int world_size) const {
  if (family == ModelFamily::gpt) {
    const double model = (gpu ? gpt.memory_per_rank(rows) : gpt.host_memory_per_rank(rows)).total();
    if (world_size < 2) return model;
    const double positions = static_cast<double>(world_size) * rows * gpt.seq;
    const double gathered = static_cast<double>(world_size) * rows *
                            static_cast<double>(gpt_embedding_gather(gpt, gpu ? 2 : 4).gather_bytes_per_row);
    // GPU: four int32 sort arrays, two fp32 partial sums per 32 sorted positions (CUB's workspace is small).
    const double scratch = gpu ? positions * 16.0 + 2.0 * (positions / 32.0 + 1.0) * gpt.d_model * 4.0 : 0.0;
    return model + gathered + scratch;
  }
  // MLP: fp32 weights, gradients, two AdamW moments and a working copy (5 × 4 B per parameter), plus the
  // activations kept for backward (input, every hidden layer before and after GELU, logits) and the batches.
  const double params = static_cast<double>(mlp.parameter_count());
  const double activations_per_row =
      2.0 * mlp.input_width() + 2.0 * mlp.layers * mlp.hidden + 2.0 * mlp.hidden + 2.0 * mlp.vocab;
  const double tokens_per_row = (mlp.context + 1) * 3.0;  // staged, current and prefetched batches
  return 4.0 * (5.0 * params + rows * (activations_per_row + tokens_per_row));
}

std::string ModelSpec::describe() const {
  return name + ": " + (family == ModelFamily::mlp ? mlp.describe() : gpt.describe());
}

void to_json(nlohmann::json& j, const ModelSpec& m) {
  j = {{"name", m.name}, {"family", m.family == ModelFamily::mlp ? "mlp" : "gpt"}};
  if (m.family == ModelFamily::mlp)
    j["mlp"] = {{"vocab", m.mlp.vocab}, {"context", m.mlp.context}, {"embed", m.mlp.embed},
                {"hidden", m.mlp.hidden}, {"layers", m.mlp.layers}, {"seed", m.mlp.seed}};
  else
    j["gpt"] = {{"layers", m.gpt.layers}, {"d_model", m.gpt.d_model}, {"heads", m.gpt.heads}, {"ffn", m.gpt.ffn},
                {"vocab", m.gpt.vocab}, {"seq", m.gpt.seq}, {"seed", m.gpt.seed},
                {"recompute_activations", m.gpt.recompute_activations}, {"flash_attention", m.gpt.flash_attention},
                {"fused_attention", to_string(m.gpt.fused_attention)}};
}

void from_json(const nlohmann::json& j, ModelSpec& m) {
  m.name = j.at("name");
  const std::string family = j.at("family");
  if (family == "mlp") {
    m.family = ModelFamily::mlp;
    const auto& c = j.at("mlp");
    m.mlp.vocab = c.at("vocab"); m.mlp.context = c.at("context"); m.mlp.embed = c.at("embed");
    m.mlp.hidden = c.at("hidden"); m.mlp.layers = c.at("layers"); m.mlp.seed = c.at("seed");
  } else if (family == "gpt") {
    m.family = ModelFamily::gpt;
    const auto& c = j.at("gpt");
    m.gpt.layers = c.at("layers"); m.gpt.d_model = c.at("d_model"); m.gpt.heads = c.at("heads");
    m.gpt.ffn = c.at("ffn"); m.gpt.vocab = c.at("vocab"); m.gpt.seq = c.at("seq"); m.gpt.seed = c.at("seed");
    m.gpt.recompute_activations = c.at("recompute_activations");
    // Absent in descriptions older than the option: today's default. (Results older than 2026-12-01 ran the GEMM
    // path; what a GPU job ran is its config's "attention" key, TrainJobConfig's to_json.)
    m.gpt.flash_attention = c.value("flash_attention", true);
    m.gpt.fused_attention = fused_attention_from_string(c.value("fused_attention", std::string("automatic")));
  } else {
    throw core::Error("unknown model family '" + family + "' in a job description");
  }
}

std::unique_ptr<Model> make_cpu_model(const ModelSpec& spec) {
  if (spec.family == ModelFamily::mlp) return std::make_unique<MlpLmCpu>(spec.mlp);
  return std::make_unique<GptCpu>(spec.gpt);
}

}  // namespace scalescope::train
