#include "train/gpt.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.h"
#include "train/normal_init.h"

namespace scalescope::train {

GptConfig GptConfig::sized(int layers, int d_model, int heads, int ffn, int vocab, int seq) {
  GptConfig c;
  c.layers = layers;
  c.d_model = d_model;
  c.heads = heads;
  c.ffn = ffn;
  c.vocab = vocab;
  c.seq = seq;
  return c;
}

namespace {

struct Preset {
  const char* name;
  GptConfig config;
};

const std::vector<Preset>& presets() {
  static const std::vector<Preset> table = {
      {"tiny-14m", GptConfig::sized(4, 312, 12, 1200, 30522, 128)},
      {"gpt2-124m", GptConfig::sized(12, 768, 12, 3072, 50304, 1024)},
      {"gpt-350m", GptConfig::sized(24, 1024, 16, 4096, 50304, 1024)},
      {"gpt-1.3b", GptConfig::sized(24, 2048, 16, 8192, 50304, 1024)},
      {"llama2-7b-shape", GptConfig::sized(32, 4096, 32, 11008, 32000, 4096)},
      {"llama2-13b-shape", GptConfig::sized(40, 5120, 40, 13824, 32000, 4096)},
  };
  return table;
}

constexpr double kInitStddev = 0.02;  // GPT-2 / nanoGPT

std::size_t z(int v) { return static_cast<std::size_t>(v); }

}  // namespace

std::vector<ParameterInfo> GptConfig::parameter_layout() const {
  const std::size_t d = z(d_model), f = z(ffn);
  std::vector<ParameterInfo> p;
  p.push_back({"wte", z(vocab) * d});
  p.push_back({"wpe", z(seq) * d});
  for (int l = 0; l < layers; ++l) {
    const std::string h = fmt::format("h.{}.", l);
    p.push_back({h + "ln1.weight", d});
    p.push_back({h + "ln1.bias", d});
    p.push_back({h + "attn.qkv.weight", d * 3 * d});
    p.push_back({h + "attn.qkv.bias", 3 * d});
    p.push_back({h + "attn.proj.weight", d * d});
    p.push_back({h + "attn.proj.bias", d});
    p.push_back({h + "ln2.weight", d});
    p.push_back({h + "ln2.bias", d});
    p.push_back({h + "mlp.fc.weight", d * f});
    p.push_back({h + "mlp.fc.bias", f});
    p.push_back({h + "mlp.proj.weight", f * d});
    p.push_back({h + "mlp.proj.bias", d});
  }
  p.push_back({"lnf.weight", d});
  p.push_back({"lnf.bias", d});
  return p;
}

std::size_t GptConfig::parameter_count() const {
  const std::size_t d = z(d_model), f = z(ffn);
  return z(vocab) * d + z(seq) * d + z(layers) * (4 * d * d + 2 * d * f + 9 * d + f) + 2 * d;
}

double GptConfig::matmul_parameter_count() const {
  const double d = d_model, f = ffn;
  return layers * (4 * d * d + 2 * d * f) + static_cast<double>(vocab) * d;
}

double GptConfig::flops_per_token() const {
  return 6.0 * matmul_parameter_count() + 12.0 * layers * static_cast<double>(seq) * d_model;
}

namespace {

/// The training state both the CUDA model and the CPU reference hold for `n` parameters: fp32 weights,
/// gradients and AdamW moments (activations are left at 0). Throws core::UsageError for rows < 1.
GptMemoryEstimate fp32_training_state(std::size_t parameters, int rows) {
  if (rows < 1) throw core::UsageError(fmt::format("batch of {} rows: at least 1 is needed", rows));
  const double n = static_cast<double>(parameters);
  GptMemoryEstimate m;
  m.parameters = 4 * n;
  m.gradients = 4 * n;
  m.optimizer = 8 * n;
  return m;
}

}  // namespace

GptMemoryEstimate GptConfig::memory_per_rank(int rows) const {
  GptMemoryEstimate m = fp32_training_state(parameter_count(), rows);
  m.weight_copies = 2.0 * static_cast<double>(parameter_count());

  const double B = rows, T = seq, d = d_model, H = heads, f = ffn, L = layers;
  const double R = B * T;                                    // positions
  const double hdp = std::ceil(head_dim() / 8.0) * 8.0;      // padded head width
  const double vp = std::ceil(vocab / 8.0) * 8.0;            // padded logits row
  const double heads_elems = B * H * T * hdp;                // one of q, k, v in head layout
  const double scores = B * H * T * T;                       // one [B, H, T, T] tensor
  const double bf = 2, fp = 4;
  const double per_layer = bf * (R * d * 2        // residual after attention, block output
                                 + R * d * 2      // LN1, LN2 outputs
                                 + 3 * heads_elems  // q, k, v
                                 + R * d          // attention output (merged heads)
                                 + R * f)         // MLP pre-activation
                           + fp * (R * 4          // LN1/LN2 mean and rstd
                                   + B * H * T);  // attention log-sum-exp
  const double global = bf * (R * d * 2 + R * vp) + fp * (R * 3) + 4 * B * (T + 1);  // x0, LNf, logits; stats, losses; tokens
  const double common_scratch = bf * (R * 3 * d   // qkv GEMM output / its gradient
                                      + R * d * 2  // residual gradient, LayerNorm input gradient
                                      + R * f);    // MLP hidden gradient
  if (uses_flash_attention()) {
    // q, k, v stay in the qkv GEMM's row layout (hd % 8 == 0: no padding); nothing of size T² exists.
    const double scratch =  // dq, row dots
        common_scratch + fp * static_cast<double>(gpt_kernels::flash_attention_workspace_floats({rows, seq, heads, head_dim()}));
    m.activations = L * per_layer + global + scratch + (recompute_activations ? 0.0 : L * bf * R * f);  // GELU output
    return m;
  }
  const double kept_or_recomputed = bf * (scores + R * f);  // attention probabilities, GELU output
  const double scratch = common_scratch + bf * (heads_elems      // attention output in head layout / its gradient
                                                + scores         // dP, then dS
                                                + 3 * heads_elems);  // dq, dk, dv
  // Kept: one copy per layer. Recomputed: one shared buffer each (the GELU output shares the hidden gradient's).
  m.activations = L * per_layer + global + scratch + (recompute_activations ? bf * scores : L * kept_or_recomputed);
  return m;
}

GptMemoryEstimate GptConfig::host_memory_per_rank(int rows) const {
  GptMemoryEstimate m = fp32_training_state(parameter_count(), rows);  // no bf16 copies on the CPU
  const double B = rows, T = seq, d = d_model, H = heads, f = ffn, L = layers, V = vocab;
  const double R = B * T;
  const double per_layer = R * d * 7      // LN1, qkv (3d), attention output, residual after attention, LN2
                           + B * H * T * T  // attention probabilities
                           + R * f * 2      // MLP pre-activation, GELU output
                           + R * 4;         // LayerNorm statistics
  const double global = R * d * (L + 1)     // residual stream entering each block and the last output
                        + R * d + R * 2     // final LayerNorm output and statistics
                        + R * V * 2 + R;    // softmax of the logits, d logits; per-position losses
  const double scratch = R * d * 7 + R * f;  // scratch, residual, LN, attention-output gradients (d), d qkv (3d), d hidden
  m.activations = 4 * (L * per_layer + global + scratch) + 4 * B * (T + 1) * 2;  // + staged and current tokens
  return m;
}

void GptConfig::validate() const {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw core::UsageError("invalid GPT model size: " + what, "use a preset (--model gpt2-124m) or positive sizes");
  };
  require(layers >= 1 && layers <= 1024, fmt::format("layers {} must be in 1..1024", layers));
  require(d_model >= 1 && d_model <= 65536, fmt::format("d_model {} must be in 1..65536", d_model));
  require(heads >= 1 && heads <= d_model, fmt::format("heads {} must be in 1..d_model ({})", heads, d_model));
  require(d_model % heads == 0, fmt::format("d_model {} is not divisible by heads {}", d_model, heads));
  require(ffn >= 1 && ffn <= 262144, fmt::format("ffn {} must be in 1..262144", ffn));
  require(vocab >= 2 && vocab <= (1 << 24), fmt::format("vocab {} must be in 2..16777216", vocab));
  require(seq >= 1 && seq <= 65536, fmt::format("seq {} must be in 1..65536", seq));
  require(static_cast<double>(vocab) * d_model < 4e9 && static_cast<double>(d_model) * ffn < 4e9,
          "a weight matrix has more than 4e9 elements");
}

std::string GptConfig::describe() const {
  const char* kept = !recompute_activations
                         ? (uses_flash_attention() ? ", GELU outputs kept for backward"
                                                   : ", attention probabilities and GELU outputs kept for backward")
                         : "";
  return fmt::format("gpt: {} layer{} × d {} ({} heads × {}, ffn {}), vocab {}, seq {}{}", layers, layers == 1 ? "" : "s",
                     d_model, heads, head_dim(), ffn, vocab, seq, kept);
}

std::string to_string(FusedAttention f) {
  switch (f) {
    case FusedAttention::cudnn: return "cudnn";
    case FusedAttention::flash: return "flash";
    case FusedAttention::automatic: break;
  }
  return "automatic";
}

FusedAttention fused_attention_from_string(const std::string& name) {
  for (const FusedAttention f : {FusedAttention::automatic, FusedAttention::cudnn, FusedAttention::flash})
    if (to_string(f) == name) return f;
  throw std::invalid_argument(fmt::format("fused attention '{}' is none of automatic, cudnn and flash", name));
}

bool gpt_kernels::cudnn_attention_built() {
#if defined(SCALESCOPE_HAVE_CUDNN)
  return true;
#else
  return false;
#endif
}

void GptConfig::choose_attention(std::string_view choice) {
  if (choice.empty()) return;
  if (choice == "gemm") {
    flash_attention = false;
    return;
  }
  if (choice != "cudnn" && choice != "flash")
    throw core::UsageError(fmt::format("--attention '{}' is none of cudnn, flash and gemm", choice),
                           "use --attention cudnn, flash or gemm, or leave it out (cuDNN's where built in, else flash)");
  if (choice == "cudnn" && !gpt_kernels::cudnn_attention_built()) {
#if defined(SCALESCOPE_CUDNN_WHY)
    const std::string why = std::string(" ") + SCALESCOPE_CUDNN_WHY;  // what CMake's configure missed
#else
    const std::string why = " (no CUDA backend)";
#endif
    throw core::UsageError("--attention cudnn: this scalescope was built without cuDNN's fused attention" + why,
                           "provide what is missing (cudnn-frontend: scripts/setup.sh --cudnn-frontend, or "
                           "-DCUDNN_FRONTEND_ROOT=DIR to scripts/build.sh; cuDNN 9: -DCUDNN_ROOT=DIR) and rebuild, or "
                           "use --attention flash (GPU) or leave --attention out");
  }
  flash_attention = true;
  fused_attention = choice == "cudnn" ? FusedAttention::cudnn : FusedAttention::flash;
}

std::string GptConfig::gpu_attention() const {
  if (uses_cudnn_attention()) return "flash attention (cuDNN's fused kernels)";
  if (uses_flash_attention()) return "flash attention (fused kernels)";
  if (!flash_attention) return "attention by cuBLASLt GEMMs (--attention gemm)";
  return fmt::format("attention by cuBLASLt GEMMs (head width {}: the fused kernels take 64 and 128)", head_dim());
}

GptConfig GptConfig::preset(std::string_view name) {
  for (const auto& p : presets())
    if (name == p.name) return p.config;
  throw core::UsageError(fmt::format("unknown model '{}'", name),
                         fmt::format("choose one of: {}", fmt::join(preset_names(), ", ")));
}

std::vector<std::string> GptConfig::preset_names() {
  std::vector<std::string> names;
  for (const auto& p : presets()) names.emplace_back(p.name);
  return names;
}

std::vector<float> gpt_initial_parameters(const GptConfig& config) {
  config.validate();
  const auto layout = config.parameter_layout();
  std::vector<float> params(config.parameter_count(), 0.0f);
  const float residual_stddev = static_cast<float>(kInitStddev / std::sqrt(2.0 * config.layers));
  std::size_t offset = 0;
  for (std::size_t i = 0; i < layout.size(); ++i) {
    const auto& p = layout[i];
    float* dst = params.data() + offset;
    if (p.name.ends_with("ln1.weight") || p.name.ends_with("ln2.weight") || p.name == "lnf.weight") {
      std::fill_n(dst, p.numel, 1.0f);
    } else if (p.name.ends_with("proj.weight")) {  // attn.proj and mlp.proj write into the residual stream
      fill_normal(dst, p.numel, residual_stddev, config.seed, i);
    } else if (p.name.ends_with(".weight") || p.name == "wte" || p.name == "wpe") {
      fill_normal(dst, p.numel, static_cast<float>(kInitStddev), config.seed, i);
    }  // biases stay 0
    offset += p.numel;
  }
  return params;
}

void check_gpt_batch(const GptConfig& config, const TokenBatchView& batch) {
  check_token_batch(batch, config.seq + 1, "seq + 1", config.vocab,
                    "build batches with the data loader of this model (rows of seq + 1 tokens)");
}

EmbeddingGather gpt_embedding_gather(const GptConfig& config, std::size_t gradient_element_bytes) {
  const auto layout = config.parameter_layout();
  const auto T = static_cast<std::size_t>(config.seq), d = static_cast<std::size_t>(config.d_model);
  EmbeddingGather g;
  g.token_table = 0;
  g.position_table = 1;
  g.gather_bytes_per_row = (T + 1) * sizeof(std::int32_t) + T * d * gradient_element_bytes;
  g.table_gradient_bytes = (layout[0].numel + layout[1].numel) * sizeof(float);
  return g;
}

bool gpt_decays(const std::string& name) {
  return name.ends_with("qkv.weight") || name.ends_with("proj.weight") || name.ends_with("fc.weight");
}

}  // namespace scalescope::train
