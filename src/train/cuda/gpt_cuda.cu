#include "train/cuda/gpt_cuda.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "train/adamw.h"
#include "train/cuda/device_buffer.h"
#include "train/cuda/cudnn_attention.h"
#include "train/cuda/flash_attention.h"
#include "train/cuda/gpt_kernels.h"
#include "train/cuda/lt_matmul.h"

namespace scalescope::train {
namespace {

using bf16 = __nv_bfloat16;
using cuda::DeviceArray;
using cuda::GemmSpec;
using cuda::PinnedArray;
namespace k = gpt_kernels;

constexpr std::size_t kShadowAlignElements = 128;   // bf16 weight copies start on 256-byte boundaries
constexpr std::size_t kArenaAlignBytes = 256;
// Attention queries per chunk for long sequences: 4 chunks at T = 1024 skip 3/8 of the T×T score work.
constexpr int kQueryChunk = 256;

std::size_t z(int v) { return static_cast<std::size_t>(v); }
int round_up(int v, int m) { return (v + m - 1) / m * m; }

const GptConfig& validated(const GptConfig& config) {
  config.validate();
  if (config.d_model % 8 != 0 || config.ffn % 8 != 0)
    throw core::UsageError("the CUDA GPT needs d_model and ffn to be multiples of 8 (got " +
                               std::to_string(config.d_model) + " and " + std::to_string(config.ffn) + ")",
                           "use a preset or multiples of 8 (16-byte vector loads)");
  return config;
}

/// Activations of one transformer block kept for backward (pointers into the arena). With
/// GptConfig::recompute_activations, `probs` and `act` point at shared scratch and are recomputed in backward:
/// the attention probabilities from q, k and lse (B·H·T² bf16 per layer), the GELU output from pre (R·ffn; backward
/// writes it over pre, whose last use that is: one backward per forward).
/// With flash attention `qkvh` is the qkv GEMM's output in row layout [R, 3d] and `probs` is null.
struct LayerActivations {
  bf16 *ln1 = nullptr, *qkvh = nullptr, *att = nullptr, *mid = nullptr, *ln2 = nullptr, *pre = nullptr, *out = nullptr;
  bf16 *probs = nullptr, *act = nullptr;  // [B, H, T, T] attention probabilities, [R, ffn] GELU output
  float* lse = nullptr;                   // [B, H, T] attention log-sum-exp
  float *mean1 = nullptr, *rstd1 = nullptr, *mean2 = nullptr, *rstd2 = nullptr;
};

/// Places buffers one after another on 256-byte boundaries: a first pass with a null base sizes the arena.
class ArenaLayout {
 public:
  explicit ArenaLayout(unsigned char* base) : base_(base) {}
  template <typename T>
  T* take(std::size_t elements) {
    at_ = (at_ + kArenaAlignBytes - 1) / kArenaAlignBytes * kArenaAlignBytes;
    T* p = base_ == nullptr ? nullptr : reinterpret_cast<T*>(base_ + at_);
    at_ += elements * sizeof(T);
    return p;
  }
  std::size_t bytes() const { return at_; }

 private:
  unsigned char* base_;
  std::size_t at_ = 0;
};

}  // namespace

struct GptCuda::State {
  State(const GptConfig& c, cudaStream_t s)
      : config(validated(c)),
        layout(c.parameter_layout()),
        stream(s),
        hdp(round_up(c.head_dim(), 8)),
        flash(c.uses_flash_attention()),
        cudnn(c.uses_cudnn_attention()),
        vocab_padded(round_up(c.vocab, 8)) {}
  ~State() {
    cudaStreamSynchronize(stream);  // queued kernels may still use the buffers freed below
    if (staged != nullptr) cudaEventDestroy(staged);
  }

  // Parameter indices (GptConfig::parameter_layout): 0 wte, 1 wpe, block l from 2 + 12l, then lnf.
  enum Slot : std::size_t { kLn1W, kLn1B, kQkvW, kQkvB, kProjW, kProjB, kLn2W, kLn2B, kFcW, kFcB, kFpW, kFpB, kSlots };
  static std::size_t slot(int layer, std::size_t s) { return 2 + kSlots * z(layer) + s; }
  std::size_t lnf_weight() const { return slot(config.layers, 0); }

  const float* master(std::size_t i) const { return params.get() + param_offsets[i]; }
  const bf16* weights(std::size_t i) const { return shadow.get() + shadow_offsets[i]; }
  float* grad(std::size_t i) const { return grads.get() + grad_offsets[i]; }
  const bf16* x_in(int layer) const { return layer == 0 ? x0 : acts[z(layer - 1)].out; }

  void ensure_rows(int rows);
  void upload_tensor_table();

  // y = x·W + b (+ residual); x [R, in], W [in, out].
  void linear(const bf16* x, int rows, int in, int out, std::size_t weight_index, bf16* y, const bf16* residual) {
    GemmSpec g;
    g.m = rows;
    g.n = out;
    g.k = in;
    g.a = x;
    g.lda = in;
    g.b = weights(weight_index);
    g.ldb = out;
    g.d = y;
    g.ldd = out;
    g.bias = weights(weight_index + 1);
    if (residual != nullptr) {
      g.c = residual;
      g.beta = 1.0f;
    }
    gemm.run(stream, g);
  }
  // dW = xᵀ·dy in fp32 into the gradient buffer.
  void linear_weight_grad(const bf16* x, const bf16* dy, int rows, int in, int out, std::size_t weight_index) {
    GemmSpec g;
    g.trans_a = true;
    g.m = in;
    g.n = out;
    g.k = rows;
    g.a = x;
    g.lda = in;
    g.b = dy;
    g.ldb = out;
    g.d = grad(weight_index);
    g.d_type = CUDA_R_32F;
    g.ldd = out;
    gemm.run(stream, g);
  }
  // dx = dy·Wᵀ.
  void linear_input_grad(const bf16* dy, int rows, int in, int out, std::size_t weight_index, bf16* dx) {
    GemmSpec g;
    g.trans_b = true;
    g.m = rows;
    g.n = in;
    g.k = out;
    g.a = dy;
    g.lda = out;
    g.b = weights(weight_index);
    g.ldb = out;
    g.d = dx;
    g.ldd = in;
    gemm.run(stream, g);
  }
  GptConfig config;
  std::vector<ParameterInfo> layout;
  cudaStream_t stream;
  int hdp;           // head width padded to a multiple of 8
  bool flash;        // config.uses_flash_attention(): fused kernels, q/k/v in row layout, no T² buffers
  bool cudnn;        // config.uses_cudnn_attention(): those fused kernels are cuDNN's
  k::AttentionShape attention;  // of the staged batch (GEMM path)
  k::FlashAttentionShape flash_shape;  // of the staged batch (flash path)
  int vocab_padded;  // logits leading dimension
  std::vector<std::size_t> param_offsets, shadow_offsets, grad_offsets;

  DeviceArray<float> params, adam_m, adam_v;  // forward order, parameter_count()
  DeviceArray<bf16> shadow;                   // bf16 copies, each parameter on a 256-byte boundary
  DeviceArray<float> grads;                   // engine layout
  std::vector<k::TensorSlot> tensor_slots;
  std::vector<k::TensorChunk> chunks;
  // Per parameter, then the chunk count: parameter i is chunks [first_chunk[i], first_chunk[i + 1]).
  std::vector<std::size_t> first_chunk;
  DeviceArray<k::TensorSlot> tensor_slots_device;
  DeviceArray<k::TensorChunk> chunks_device;
  cuda::LtMatmul gemm;

  int capacity_rows = 0, rows = 0;
  PinnedArray<std::int32_t> staging;
  cudaEvent_t staged = nullptr;  // the staging buffer's last host→device copy
  DeviceArray<unsigned char> arena;
  std::int32_t* tokens = nullptr;  // [rows, T + 1]
  bf16* x0 = nullptr;              // embedding output [R, d]
  std::vector<LayerActivations> acts;
  bf16* lnf = nullptr;             // final LayerNorm output [R, d]
  float *lnf_mean = nullptr, *lnf_rstd = nullptr;
  bf16* logits = nullptr;          // [R, vocab_padded]; d logits after forward
  float* position_losses = nullptr;  // [R]
  // Scratch shared by all layers.
  bf16* qkv = nullptr;       // [R, 3d]: qkv GEMM output; backward: d qkv
  bf16* heads = nullptr;     // GEMM path: [B, H, T, hdp]: attention output; backward: its gradient
  bf16* scores = nullptr;    // GEMM path, recomputing: [B, H, T, T] scores, then P (forward, and again in backward)
  bf16* dscores = nullptr;   // GEMM path: [B, H, T, T]: dP, then dS
  bf16* dqkvh = nullptr;     // GEMM path: [3, B, H, T, hdp]
  float* flash_workspace = nullptr;  // own flash kernels: fp32 dq accumulator and row dots (flash_attention_workspace_floats)
  std::size_t flash_workspace_floats = 0;
  // cuDNN path: plans per batch size (each takes a build of tens to hundreds of ms, so kept), the staged batch's,
  // and the workspace the largest asks for.
  std::map<int, std::unique_ptr<k::CudnnAttention>> cudnn_plans;
  const k::CudnnAttention* cudnn_attention = nullptr;
  DeviceArray<unsigned char> cudnn_workspace;
  void select_cudnn_plan(int rows);
  bf16* dres = nullptr;      // [R, d] residual-stream gradient
  bf16* dln = nullptr;       // [R, d] LayerNorm-output (or attention-output) gradient
  bf16* mlp_hidden = nullptr;  // [R, ffn]: MLP hidden gradient; recomputing: also forward's GELU output
  float* workspace = nullptr;
  std::size_t workspace_floats = 0;

  // EmbeddingGather (gather_world ≥ 2): receive buffers for world × capacity rows and the scatter-add's scratch.
  int gather_world = 0;
  DeviceArray<std::int32_t> gathered_tokens;  // [world × rows, T + 1]
  DeviceArray<bf16> gathered_dres;            // [world × rows, T, d]
  DeviceArray<unsigned char> gather_scratch;
  void ensure_gather_buffers();

  cuda::DeviceLossLog losses;
  DeviceArray<float> replay_loss;  // [1]: where a forward being captured into a CUDA graph writes its loss
  bool forward_done = false;
  AdamWStepCounts steps{layout.size()};
};

void GptCuda::State::select_cudnn_plan(int batch_rows) {
  // No plan is selected until both the plan and its workspace exist, so a throw leaves nothing half-set.
  cudnn_attention = nullptr;
  auto found = cudnn_plans.find(batch_rows);
  if (found == cudnn_plans.end()) {
    auto plan = std::make_unique<k::CudnnAttention>(k::FlashAttentionShape{batch_rows, config.seq, config.heads, config.head_dim()});
    found = cudnn_plans.emplace(batch_rows, std::move(plan)).first;
  }
  if (found->second->workspace_bytes() > cudnn_workspace.bytes()) {
    SCALESCOPE_CUDA_CHECK(cudaStreamSynchronize(stream));  // the old workspace may still be in use
    cudnn_workspace.resize(found->second->workspace_bytes());
  }
  cudnn_attention = found->second.get();
}

void GptCuda::State::ensure_rows(int needed) {
  if (needed <= capacity_rows) return;
  SCALESCOPE_CUDA_CHECK(cudaStreamSynchronize(stream));  // the old buffers may still be in use
  arena.resize(0);
  const GptConfig& c = config;
  const std::size_t B = z(needed), T = z(c.seq), d = z(c.d_model), f = z(c.ffn), H = z(c.heads);
  const std::size_t R = B * T, head_elems = B * H * T * z(hdp), scores_elems = B * H * T * T;
  flash_workspace_floats = flash && !cudnn ? k::flash_attention_workspace_floats({needed, c.seq, c.heads, c.head_dim()}) : 0;
  workspace_floats = std::max({k::layernorm_backward_workspace_floats(R, c.d_model), k::column_workspace_floats(R, 3 * c.d_model, 1),
                               k::column_workspace_floats(R, c.ffn, 1)});

  // Two passes over the same layout: size, then place.
  const auto place = [&](ArenaLayout& a) {
    tokens = a.take<std::int32_t>(B * (T + 1));
    x0 = a.take<bf16>(R * d);
    acts.assign(z(c.layers), LayerActivations{});
    for (auto& l : acts) {
      l.ln1 = a.take<bf16>(R * d);
      l.qkvh = a.take<bf16>(flash ? R * 3 * d : 3 * head_elems);
      l.lse = a.take<float>(B * H * T);
      l.att = a.take<bf16>(R * d);
      l.mid = a.take<bf16>(R * d);
      l.ln2 = a.take<bf16>(R * d);
      l.pre = a.take<bf16>(R * f);
      if (!c.recompute_activations) {
        if (!flash) l.probs = a.take<bf16>(scores_elems);
        l.act = a.take<bf16>(R * f);
      }
      l.out = a.take<bf16>(R * d);
      l.mean1 = a.take<float>(R);
      l.rstd1 = a.take<float>(R);
      l.mean2 = a.take<float>(R);
      l.rstd2 = a.take<float>(R);
    }
    lnf = a.take<bf16>(R * d);
    lnf_mean = a.take<float>(R);
    lnf_rstd = a.take<float>(R);
    logits = a.take<bf16>(R * z(vocab_padded));
    position_losses = a.take<float>(R);
    qkv = a.take<bf16>(R * 3 * d);
    if (flash) {
      flash_workspace = a.take<float>(flash_workspace_floats);
    } else {
      heads = a.take<bf16>(head_elems);
      scores = c.recompute_activations ? a.take<bf16>(scores_elems) : nullptr;
      dscores = a.take<bf16>(scores_elems);
      dqkvh = a.take<bf16>(3 * head_elems);
    }
    dres = a.take<bf16>(R * d);
    dln = a.take<bf16>(R * d);
    mlp_hidden = a.take<bf16>(R * f);
    workspace = a.take<float>(workspace_floats);
    if (c.recompute_activations)
      for (auto& l : acts) {
        l.probs = scores;  // null with flash attention
        l.act = mlp_hidden;
      }
  };
  ArenaLayout sizing(nullptr);
  place(sizing);
  arena.resize(sizing.bytes());
  ArenaLayout placing(arena.get());
  place(placing);
  // NaN everywhere: a kernel or GEMM that reads a region nothing wrote (e.g. past a query chunk's end in the
  // attention probabilities) poisons the loss instead of reading stale values.
  SCALESCOPE_CUDA_CHECK(cudaMemsetAsync(arena.get(), 0xFF, arena.bytes(), stream));
  staging.resize(B * (T + 1));
  capacity_rows = needed;
  if (gather_world > 1) ensure_gather_buffers();
}

void GptCuda::State::ensure_gather_buffers() {
  const std::size_t rows = z(gather_world) * z(capacity_rows), T = z(config.seq);
  gathered_tokens.resize(rows * (T + 1));
  gathered_dres.resize(rows * T * z(config.d_model));
  gather_scratch.resize(k::gathered_embedding_scratch_bytes(rows * T, config.d_model));
}

void GptCuda::State::upload_tensor_table() {
  SCALESCOPE_CUDA_CHECK(cudaMemcpyAsync(tensor_slots_device.get(), tensor_slots.data(),
                                        tensor_slots.size() * sizeof(k::TensorSlot), cudaMemcpyHostToDevice, stream));
}

GptCuda::GptCuda(const GptConfig& config, cudaStream_t compute_stream)
    : s_(std::make_unique<State>(config, compute_stream)) {
  State& s = *s_;
  // Parameters packed in order: every numel is a multiple of 8 floats (d_model and ffn are, validated()), so each
  // master starts 32-byte aligned, which the LayerNorm kernels' 16-byte weight loads require (they check).
  std::size_t at = 0, shadow_at = 0;
  for (std::size_t i = 0; i < s.layout.size(); ++i) {
    const auto& p = s.layout[i];
    s.param_offsets.push_back(at);
    s.shadow_offsets.push_back(shadow_at);
    s.tensor_slots.push_back({at, 0, shadow_at, p.numel, gpt_decays(p.name) ? 1 : 0});
    s.first_chunk.push_back(s.chunks.size());
    for (std::size_t b = 0; b < p.numel; b += k::kChunkElements)
      s.chunks.push_back({static_cast<int>(i), b, std::min(p.numel, b + k::kChunkElements)});
    at += p.numel;
    shadow_at += (p.numel + kShadowAlignElements - 1) / kShadowAlignElements * kShadowAlignElements;
  }
  s.first_chunk.push_back(s.chunks.size());
  s.params.resize(at);
  s.adam_m.resize(at);
  s.adam_v.resize(at);
  s.shadow.resize(shadow_at);
  s.tensor_slots_device.resize(s.tensor_slots.size());
  s.chunks_device.resize(s.chunks.size());
  s.replay_loss.resize(1);
  SCALESCOPE_CUDA_CHECK(cudaEventCreateWithFlags(&s.staged, cudaEventDisableTiming));
  SCALESCOPE_CUDA_CHECK(cudaMemsetAsync(s.adam_m.get(), 0, at * sizeof(float), s.stream));
  SCALESCOPE_CUDA_CHECK(cudaMemsetAsync(s.adam_v.get(), 0, at * sizeof(float), s.stream));
  s.upload_tensor_table();
  SCALESCOPE_CUDA_CHECK(cudaMemcpyAsync(s.chunks_device.get(), s.chunks.data(), s.chunks.size() * sizeof(k::TensorChunk),
                                        cudaMemcpyHostToDevice, s.stream));
  const std::vector<float> initial = gpt_initial_parameters(config);
  SCALESCOPE_CUDA_CHECK(cudaMemcpyAsync(s.params.get(), initial.data(), at * sizeof(float), cudaMemcpyHostToDevice, s.stream));
  parameters_changed();
  SCALESCOPE_CUDA_CHECK(cudaStreamSynchronize(s.stream));  // `initial` is freed on return
}

GptCuda::~GptCuda() = default;

const GptConfig& GptCuda::config() const { return s_->config; }
cudaStream_t GptCuda::stream() const { return s_->stream; }
std::string GptCuda::describe() const { return s_->config.describe() + " (bf16 autocast, fp32 master, CUDA)"; }
const std::vector<ParameterInfo>& GptCuda::parameters() const { return s_->layout; }
double GptCuda::flops_per_token() const { return s_->config.flops_per_token(); }
int GptCuda::row_tokens() const { return s_->config.seq + 1; }
int GptCuda::predictions_per_row() const { return s_->config.seq; }
float* GptCuda::flat_parameters() { return s_->params.get(); }

std::size_t GptCuda::device_bytes() const {
  const State& s = *s_;
  return s.params.bytes() + s.adam_m.bytes() + s.adam_v.bytes() + s.shadow.bytes() + s.grads.bytes() + s.arena.bytes() +
         s.losses.bytes() + s.tensor_slots_device.bytes() + s.chunks_device.bytes() + s.gemm.workspace_bytes() +
         s.gathered_tokens.bytes() + s.gathered_dres.bytes() + s.gather_scratch.bytes() + s.cudnn_workspace.bytes();
}

float* GptCuda::allocate_gradients(const std::vector<std::size_t>& offsets, std::size_t total_elements) {
  State& s = *s_;
  check_gradient_offsets(s.layout, offsets, total_elements);
  SCALESCOPE_CUDA_CHECK(cudaStreamSynchronize(s.stream));  // the tensor table on the host is about to change
  s.grad_offsets = offsets;
  for (std::size_t i = 0; i < offsets.size(); ++i) s.tensor_slots[i].grad_offset = offsets[i];
  s.upload_tensor_table();
  s.grads.resize(total_elements);
  SCALESCOPE_CUDA_CHECK(cudaMemsetAsync(s.grads.get(), 0, total_elements * sizeof(float), s.stream));
  return s.grads.get();
}

void GptCuda::parameters_changed() {
  State& s = *s_;
  k::to_bf16(s.stream, s.tensor_slots_device.get(), s.chunks_device.get(), static_cast<int>(s.chunks.size()),
             s.params.get(), s.shadow.get());
}

void GptCuda::stage_batch(const TokenBatchView& batch) {
  State& s = *s_;
  check_gpt_batch(s.config, batch);
  s.ensure_rows(batch.rows);
  s.rows = 0;  // nothing counts as staged until the end: after a throw, forward() and backward() refuse
  s.forward_done = false;
  if (s.cudnn) s.select_cudnn_plan(batch.rows);
  cuda::stage_tokens(batch.tokens, z(batch.rows) * z(batch.row_tokens), s.staging, s.tokens, s.staged, s.stream);
  s.rows = batch.rows;
  s.attention = {batch.rows, s.config.seq, s.config.heads, s.config.head_dim(), s.hdp,
                 s.config.seq > kQueryChunk ? kQueryChunk : s.config.seq};
  s.flash_shape = {batch.rows, s.config.seq, s.config.heads, s.config.head_dim()};
}

void GptCuda::forward() {
  State& s = *s_;
  if (s.rows == 0) throw std::logic_error("GptCuda::forward before stage_batch");
  // A forward captured for replay runs many times: its loss goes to one fixed place, logged after each run by
  // log_replayed_loss(); an eager forward writes straight into the log.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  SCALESCOPE_CUDA_CHECK(cudaStreamIsCapturing(s.stream, &capture));
  const bool captured = capture != cudaStreamCaptureStatusNone;
  float* loss = captured ? s.replay_loss.get() : s.losses.next_slot("GptCuda");
  const GptConfig& c = s.config;
  const int B = s.rows, T = c.seq, d = c.d_model, f = c.ffn;
  const int R = B * T;

  k::embedding_forward(s.stream, s.tokens, B, T, s.master(0), s.master(1), d, s.x0);
  for (int l = 0; l < c.layers; ++l) {
    LayerActivations& a = s.acts[z(l)];
    const std::size_t base = State::slot(l, 0);
    const bf16* x = s.x_in(l);
    // Attention: mid = x + Attn(LN1(x))·W_proj + b_proj.
    k::layernorm_forward(s.stream, x, s.master(base + State::kLn1W), s.master(base + State::kLn1B), z(R), d, a.ln1, a.mean1, a.rstd1);
    if (s.flash) {  // q, k, v kept as the GEMM wrote them
      s.linear(a.ln1, R, d, 3 * d, base + State::kQkvW, a.qkvh, nullptr);
      if (s.cudnn)
        s.cudnn_attention->forward(s.stream, a.qkvh, a.att, a.lse, s.cudnn_workspace.get());
      else
        k::flash_attention_forward(s.stream, a.qkvh, s.flash_shape, a.att, a.lse);
    } else {
      s.linear(a.ln1, R, d, 3 * d, base + State::kQkvW, s.qkv, nullptr);
      k::attention_forward(s.stream, s.gemm, s.qkv, s.attention, a.qkvh, a.probs, a.lse, s.heads, a.att);
    }
    s.linear(a.att, R, d, d, base + State::kProjW, a.mid, x);
    // MLP: out = mid + GELU(LN2(mid)·W_fc + b_fc)·W_fp + b_fp.
    k::layernorm_forward(s.stream, a.mid, s.master(base + State::kLn2W), s.master(base + State::kLn2B), z(R), d, a.ln2, a.mean2, a.rstd2);
    s.linear(a.ln2, R, d, f, base + State::kFcW, a.pre, nullptr);
    k::gelu_forward(s.stream, a.pre, a.act, z(R) * z(f));
    s.linear(a.act, R, f, d, base + State::kFpW, a.out, a.mid);
  }
  const std::size_t lnf = s.lnf_weight();
  k::layernorm_forward(s.stream, s.x_in(c.layers), s.master(lnf), s.master(lnf + 1), z(R), d, s.lnf, s.lnf_mean, s.lnf_rstd);
  GemmSpec head;  // logits = LN_f(x)·wteᵀ
  head.trans_b = true;
  head.m = R;
  head.n = c.vocab;
  head.k = d;
  head.a = s.lnf;
  head.lda = d;
  head.b = s.weights(0);
  head.ldb = d;
  head.d = s.logits;
  head.ldd = s.vocab_padded;
  s.gemm.run(s.stream, head);
  k::cross_entropy(s.stream, s.logits, s.vocab_padded, s.tokens, B, T, c.vocab, 1.0f / static_cast<float>(R), s.position_losses);
  k::mean(s.stream, s.position_losses, z(R), loss);
  if (!captured) s.losses.commit();
  s.forward_done = true;
}

void GptCuda::backward(const std::function<void(std::size_t)>& on_gradient_ready) {
  State& s = *s_;
  if (s.grad_offsets.empty()) throw std::logic_error("GptCuda::backward before allocate_gradients");
  if (!s.forward_done) throw std::logic_error("GptCuda::backward before forward");
  // Backward overwrites what forward kept (the GELU output over its pre-activation, d logits over the logits): a
  // second backward needs a second forward.
  s.forward_done = false;
  const GptConfig& c = s.config;
  const int B = s.rows, T = c.seq, d = c.d_model, f = c.ffn, L = c.layers;
  const int R = B * T;
  const auto ready = [&](std::size_t i) { on_gradient_ready(i); };

  // Tied head (d logits were written over the logits by forward's fused cross-entropy).
  GemmSpec dw;  // d wte = d logitsᵀ·LN_f(x), fp32, overwrites; the input embedding adds its part last
  dw.trans_a = true;
  dw.m = c.vocab;
  dw.n = d;
  dw.k = R;
  dw.a = s.logits;
  dw.lda = s.vocab_padded;
  dw.b = s.lnf;
  dw.ldb = d;
  dw.d = s.grad(0);
  dw.d_type = CUDA_R_32F;
  dw.ldd = d;
  s.gemm.run(s.stream, dw);
  const bool gathered = s.gather_world > 1;
  if (gathered) ready(0);  // the head's part alone; the input side is all-gathered (EmbeddingGather)
  GemmSpec dx;  // d LN_f output = d logits·wte
  dx.m = R;
  dx.n = d;
  dx.k = c.vocab;
  dx.a = s.logits;
  dx.lda = s.vocab_padded;
  dx.b = s.weights(0);
  dx.ldb = d;
  dx.d = s.dln;
  dx.ldd = d;
  s.gemm.run(s.stream, dx);
  const std::size_t lnf = s.lnf_weight();
  // The final LayerNorm's backward also sums d x_L over rows: the last block's mlp.proj bias gradient.
  k::layernorm_backward(s.stream, s.dln, s.x_in(L), s.lnf_mean, s.lnf_rstd, s.master(lnf), z(R), d, s.dres, false,
                        s.grad(lnf), s.grad(lnf + 1), s.grad(State::slot(L - 1, State::kFpB)), s.workspace, s.workspace_floats);
  ready(lnf + 1);
  ready(lnf);
  ready(State::slot(L - 1, State::kFpB));

  for (int l = L - 1; l >= 0; --l) {
    LayerActivations& a = s.acts[z(l)];
    const std::size_t base = State::slot(l, 0);
    // MLP (its output bias gradient was summed by the LayerNorm backward above this block).
    if (c.recompute_activations) {
      // The GELU output was not kept (a.act is the shared mlp_hidden): d act first, into mlp_hidden; then one pass
      // recomputes the output over a.pre (its last use) and takes the GELU backward; then the weight gradient
      // reads the recomputed output. The same bits as recomputing first, and 2 bytes per element less traffic.
      s.linear_input_grad(s.dres, R, f, d, base + State::kFpW, s.mlp_hidden);
      k::gelu_recompute_backward_bias_grad(s.stream, s.mlp_hidden, a.pre, z(R), f, s.grad(base + State::kFcB),
                                           s.workspace, s.workspace_floats);
      s.linear_weight_grad(a.pre, s.dres, R, f, d, base + State::kFpW);
      ready(base + State::kFpW);
    } else {
      s.linear_weight_grad(a.act, s.dres, R, f, d, base + State::kFpW);
      ready(base + State::kFpW);
      s.linear_input_grad(s.dres, R, f, d, base + State::kFpW, s.mlp_hidden);
      k::gelu_backward_bias_grad(s.stream, s.mlp_hidden, a.pre, z(R), f, s.grad(base + State::kFcB), s.workspace,
                                 s.workspace_floats);
    }
    ready(base + State::kFcB);
    s.linear_weight_grad(a.ln2, s.mlp_hidden, R, d, f, base + State::kFcW);
    ready(base + State::kFcW);
    s.linear_input_grad(s.mlp_hidden, R, d, f, base + State::kFcW, s.dln);
    k::layernorm_backward(s.stream, s.dln, a.mid, a.mean2, a.rstd2, s.master(base + State::kLn2W), z(R), d, s.dres, true,
                          s.grad(base + State::kLn2W), s.grad(base + State::kLn2B), s.grad(base + State::kProjB),
                          s.workspace, s.workspace_floats);
    ready(base + State::kLn2B);
    ready(base + State::kLn2W);
    ready(base + State::kProjB);
    // Attention.
    s.linear_weight_grad(a.att, s.dres, R, d, d, base + State::kProjW);
    ready(base + State::kProjW);
    s.linear_input_grad(s.dres, R, d, d, base + State::kProjW, s.dln);  // d attention output
    if (s.cudnn)
      s.cudnn_attention->backward(s.stream, s.dln, a.qkvh, a.att, a.lse, s.qkv, s.cudnn_workspace.get());
    else if (s.flash)
      k::flash_attention_backward(s.stream, s.dln, a.qkvh, a.att, a.lse, s.flash_shape, s.flash_workspace,
                                  s.flash_workspace_floats, s.qkv);
    else
      k::attention_backward(s.stream, s.gemm, s.dln, a.qkvh, c.recompute_activations ? a.lse : nullptr, s.attention,
                            a.probs, s.heads, s.dscores, s.dqkvh, s.qkv);
    k::column_sum(s.stream, s.qkv, z(R), 3 * d, s.grad(base + State::kQkvB), s.workspace, s.workspace_floats);
    ready(base + State::kQkvB);
    s.linear_weight_grad(a.ln1, s.qkv, R, d, 3 * d, base + State::kQkvW);
    ready(base + State::kQkvW);
    s.linear_input_grad(s.qkv, R, d, 3 * d, base + State::kQkvW, s.dln);
    float* below_bias = l > 0 ? s.grad(State::slot(l - 1, State::kFpB)) : nullptr;
    k::layernorm_backward(s.stream, s.dln, s.x_in(l), a.mean1, a.rstd1, s.master(base + State::kLn1W), z(R), d, s.dres, true,
                          s.grad(base + State::kLn1W), s.grad(base + State::kLn1B), below_bias, s.workspace,
                          s.workspace_floats);
    ready(base + State::kLn1B);
    ready(base + State::kLn1W);
    if (l > 0) ready(State::slot(l - 1, State::kFpB));
  }
  if (gathered) return;  // s.dres holds the embedding-output gradient the engine all-gathers
  k::embedding_backward(s.stream, s.tokens, B, T, s.dres, d, s.grad(0), s.grad(1));
  ready(1);
  ready(0);
}

std::optional<EmbeddingGather> GptCuda::embedding_gather() const {
  return gpt_embedding_gather(s_->config, sizeof(bf16));
}

void GptCuda::gather_embedding_gradient(int world_size) {
  State& s = *s_;
  if (world_size < 2) throw std::invalid_argument("GptCuda::gather_embedding_gradient needs at least 2 ranks");
  s.gather_world = world_size;
  if (s.capacity_rows > 0) {
    SCALESCOPE_CUDA_CHECK(cudaStreamSynchronize(s.stream));  // the old buffers may still be in use
    s.ensure_gather_buffers();
  }
}

EmbeddingGatherBuffers GptCuda::embedding_gather_buffers() {
  State& s = *s_;
  if (s.gather_world < 2) throw std::logic_error("GptCuda::embedding_gather_buffers before gather_embedding_gradient");
  if (s.rows == 0) throw std::logic_error("GptCuda::embedding_gather_buffers before stage_batch");
  const std::size_t T = z(s.config.seq);
  EmbeddingGatherBuffers b;
  b.tokens = s.tokens;
  b.gathered_tokens = s.gathered_tokens.get();
  b.token_bytes = z(s.rows) * (T + 1) * sizeof(std::int32_t);
  b.row_gradients = s.dres;
  b.gathered_row_gradients = s.gathered_dres.get();
  b.row_gradient_bytes = z(s.rows) * T * z(s.config.d_model) * sizeof(bf16);
  return b;
}

void GptCuda::apply_gathered_embedding_gradient() {
  State& s = *s_;
  if (s.gather_world < 2 || s.rows == 0)
    throw std::logic_error("GptCuda::apply_gathered_embedding_gradient before the all-gathers");
  k::embedding_backward_gathered(s.stream, s.gathered_tokens.get(), s.gather_world * s.rows, s.config.seq,
                                 s.gathered_dres.get(), s.config.d_model, s.config.vocab,
                                 1.0f / static_cast<float>(s.gather_world), s.grad(0), s.grad(1),
                                 s.gather_scratch.get(), s.gather_scratch.bytes());
}

void GptCuda::optimizer_step_part(const AdamWConfig& config, ParameterRange part) {
  State& s = *s_;
  if (s.grad_offsets.empty()) throw std::logic_error("GptCuda::optimizer_step before allocate_gradients");
  const AdamWStep step = adamw_step(config, s.steps.advance(part, "GptCuda"));
  // A parameter's chunks are consecutive in the chunk table, in parameter order.
  const std::size_t first = s.first_chunk[part.first], end = s.first_chunk[part.end];
  k::adamw(s.stream, s.tensor_slots_device.get(), s.chunks_device.get() + first, static_cast<int>(end - first),
           s.params.get(), s.grads.get(), s.adam_m.get(), s.adam_v.get(), s.shadow.get(), step);
}

void GptCuda::log_replayed_loss() {
  State& s = *s_;
  SCALESCOPE_CUDA_CHECK(cudaMemcpyAsync(s.losses.next_slot("GptCuda"), s.replay_loss.get(), sizeof(float),
                                        cudaMemcpyDeviceToDevice, s.stream));
  s.losses.commit();
}

std::vector<float> GptCuda::take_losses() {
  State& s = *s_;
  return s.losses.take(s.stream);
}

std::vector<float> GptCuda::parameters_to_host() {
  const State& s = *s_;
  return cuda::copy_to_host(s.params.get(), s.params.size(), s.stream);
}

std::vector<float> GptCuda::gradients_to_host() {
  const State& s = *s_;
  return cuda::copy_to_host(s.grads.get(), s.grads.size(), s.stream);
}

}  // namespace scalescope::train
