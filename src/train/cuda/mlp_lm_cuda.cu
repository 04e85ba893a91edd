#include "train/cuda/mlp_lm_cuda.h"

#include <cuda_bf16.h>
#include <math_constants.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "gpu/cuda_check.h"
#include "train/adamw.h"
#include "train/cuda/device_buffer.h"
#include "train/cuda/gelu.cuh"
#include "train/cuda/lt_matmul.h"

namespace scalescope::train {
namespace {

using bf16 = __nv_bfloat16;
using cuda::DeviceArray;
using cuda::PinnedArray;

constexpr int kThreads = 256;                        // element-wise kernels and row reductions
constexpr std::size_t kMaxBlocks = 4096;              // grid-stride loops cover the rest
constexpr std::size_t kShadowAlignElements = 128;     // bf16 weight copies start on 256-byte boundaries

unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>(std::clamp<std::size_t>((n + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

// ---------------------------------------------------------------------------------------------------
// Kernels. Element-wise kernels move VEC bf16 values (16 bytes for VEC = 8) per load when the row width
// allows it; all buffers start on cudaMalloc's 256-byte boundaries or on kShadowAlignElements boundaries.

template <int VEC>
struct alignas(2 * VEC) Bf16Pack {
  bf16 v[VEC];
};

// GELU and its derivative: the GPT's (train/cuda/gelu.cuh), the tanh approximation computed through σ(2u).
__device__ __forceinline__ float gelu_forward(float x) { return gpt_kernels::support::gelu(x); }
__device__ __forceinline__ float gelu_derivative(float x) { return gpt_kernels::support::gelu_grad(x); }

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};

/// Reduces one value per thread over the block (blockDim.x a multiple of 32, ≤ 1024); every thread gets
/// the result.
template <typename Op>
__device__ float block_reduce(float v, float identity, Op op) {
  __shared__ float partial[32];
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();  // an earlier call may still be reading `partial`
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < blockDim.x / 32 ? partial[lane] : identity;
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

#define GRID_STRIDE_LOOP(i, n) \
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)

/// x[r, c·E + e] = table[tokens[r, c], e] for the C context positions of each row.
/// tokens [rows, C + 1] int32; table [V, E] bf16; x [rows, C·E] bf16. VEC must divide E.
template <int VEC>
__global__ void embedding_gather_kernel(const std::int32_t* tokens, const bf16* table, bf16* x, std::size_t rows,
                                        int context, int embed) {
  const std::size_t width = static_cast<std::size_t>(context) * embed;
  GRID_STRIDE_LOOP(p, rows * width / VEC) {
    const std::size_t i = p * VEC, r = i / width, j = i % width;
    const std::size_t c = j / embed, e = j % embed;
    const std::size_t token = static_cast<std::size_t>(tokens[r * (context + 1) + c]);
    reinterpret_cast<Bf16Pack<VEC>*>(x)[p] = *reinterpret_cast<const Bf16Pack<VEC>*>(table + token * embed + e);
  }
}

/// In place z ← bf16(z + bias[col]), then h = bf16(GELU(z)): autocast's linear output (bias added in the
/// GEMM epilogue, rounded to bf16) followed by GELU on that bf16 tensor. z, h [total / n, n]; bias [n] fp32.
/// VEC must divide n.
template <int VEC>
__global__ void bias_gelu_kernel(bf16* z, const float* bias, bf16* h, std::size_t total, int n) {
  GRID_STRIDE_LOOP(p, total / VEC) {
    Bf16Pack<VEC> zp = reinterpret_cast<const Bf16Pack<VEC>*>(z)[p];
    Bf16Pack<VEC> hp;
    const std::size_t col = (p * VEC) % static_cast<std::size_t>(n);
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      zp.v[k] = __float2bfloat16(__bfloat162float(zp.v[k]) + bias[col + k]);
      hp.v[k] = __float2bfloat16(gelu_forward(__bfloat162float(zp.v[k])));
    }
    reinterpret_cast<Bf16Pack<VEC>*>(z)[p] = zp;
    reinterpret_cast<Bf16Pack<VEC>*>(h)[p] = hp;
  }
}

/// In place dh ← bf16(dh · GELU′(z)): turns d loss/d h into d loss/d z. dh, z [total] bf16; VEC divides total.
template <int VEC>
__global__ void gelu_backward_kernel(bf16* dh, const bf16* z, std::size_t total) {
  GRID_STRIDE_LOOP(p, total / VEC) {
    Bf16Pack<VEC> g = reinterpret_cast<const Bf16Pack<VEC>*>(dh)[p];
    const Bf16Pack<VEC> zp = reinterpret_cast<const Bf16Pack<VEC>*>(z)[p];
#pragma unroll
    for (int k = 0; k < VEC; ++k)
      g.v[k] = __float2bfloat16(__bfloat162float(g.v[k]) * gelu_derivative(__bfloat162float(zp.v[k])));
    reinterpret_cast<Bf16Pack<VEC>*>(dh)[p] = g;
  }
}

constexpr int kColumnTile = 32;  // bias_grad_kernel: block (32 columns) × (32 row stripes)

/// db[j] = Σ_r dz[r, j] in fp32, overwriting db. dz [rows, n] bf16; db [n] fp32. Deterministic.
__global__ void bias_grad_kernel(const bf16* dz, int rows, int n, float* db) {
  __shared__ float partial[kColumnTile][kColumnTile + 1];
  const int col = blockIdx.x * kColumnTile + threadIdx.x;
  float acc = 0.0f;
  if (col < n)
    for (int r = threadIdx.y; r < rows; r += kColumnTile) acc += __bfloat162float(dz[static_cast<std::size_t>(r) * n + col]);
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < n) {
    float sum = 0.0f;
    for (int y = 0; y < kColumnTile; ++y) sum += partial[y][threadIdx.x];
    db[col] = sum;
  }
}

/// One block per row: row_loss[r] = logsumexp(l) − l[target] with l = logits[r] + bias (fp32, max-
/// subtracted), and dlogits[r] = bf16((softmax(l) − onehot(target)) · inv_rows). The target is the last
/// token of the row. logits, dlogits [rows, V] bf16; bias [V] fp32; tokens [rows, row_tokens].
__global__ void softmax_xent_kernel(const bf16* logits, const float* bias, const std::int32_t* tokens, int row_tokens,
                                    int vocab, float inv_rows, float* row_loss, bf16* dlogits) {
  const std::size_t r = blockIdx.x;
  const bf16* row = logits + r * vocab;
  const int target = tokens[r * row_tokens + row_tokens - 1];
  float m = -CUDART_INF_F;
  for (int v = threadIdx.x; v < vocab; v += blockDim.x) m = fmaxf(m, __bfloat162float(row[v]) + bias[v]);
  m = block_reduce(m, -CUDART_INF_F, MaxOp{});
  float sum = 0.0f;
  for (int v = threadIdx.x; v < vocab; v += blockDim.x) sum += expf(__bfloat162float(row[v]) + bias[v] - m);
  sum = block_reduce(sum, 0.0f, SumOp{});
  for (int v = threadIdx.x; v < vocab; v += blockDim.x) {
    const float p = expf(__bfloat162float(row[v]) + bias[v] - m) / sum;
    dlogits[r * vocab + v] = __float2bfloat16((p - (v == target ? 1.0f : 0.0f)) * inv_rows);
  }
  if (threadIdx.x == 0) row_loss[r] = logf(sum) + m - (__bfloat162float(row[target]) + bias[target]);
}

/// *loss = mean of row_loss[0 … rows) (one block, fixed order, so deterministic).
__global__ void mean_loss_kernel(const float* row_loss, int rows, float* loss) {
  float sum = 0.0f;
  for (int r = threadIdx.x; r < rows; r += blockDim.x) sum += row_loss[r];
  sum = block_reduce(sum, 0.0f, SumOp{});
  if (threadIdx.x == 0) *loss = sum / static_cast<float>(rows);
}

/// dtable[tokens[r, c], e] += dx[r, c·E + e] (fp32 atomics; dtable zeroed beforehand).
/// tokens [rows, C + 1]; dx [rows, C·E] bf16; dtable [V, E] fp32.
__global__ void embedding_backward_kernel(const std::int32_t* tokens, const bf16* dx, float* dtable, std::size_t rows,
                                          int context, int embed) {
  const std::size_t width = static_cast<std::size_t>(context) * embed;
  GRID_STRIDE_LOOP(i, rows * width) {
    const std::size_t r = i / width, j = i % width;
    const std::size_t token = static_cast<std::size_t>(tokens[r * (context + 1) + j / embed]);
    atomicAdd(dtable + token * embed + j % embed, __bfloat162float(dx[i]));
  }
}

/// Fused AdamW over one parameter (formula in train/adamw.h): fp32 master p, gradient g, moments m and v;
/// writes the bf16 copy too. s.decay multiplies every element: the caller sets it to 1 where there is no decay.
__global__ void adamw_kernel(float* p, const float* g, float* m, float* v, bf16* shadow, std::size_t n, AdamWStep s) {
  GRID_STRIDE_LOOP(i, n) {
    const float grad = g[i];
    const float mi = s.beta1 * m[i] + (1.0f - s.beta1) * grad;
    const float vi = s.beta2 * v[i] + (1.0f - s.beta2) * grad * grad;
    m[i] = mi;
    v[i] = vi;
    const float pi = p[i] * s.decay - s.step_size * mi / (sqrtf(vi) / s.bc2_sqrt + s.epsilon);
    p[i] = pi;
    shadow[i] = __float2bfloat16(pi);
  }
}

__global__ void to_bf16_kernel(const float* src, bf16* dst, std::size_t n) {
  GRID_STRIDE_LOOP(i, n) dst[i] = __float2bfloat16(src[i]);
}

#undef GRID_STRIDE_LOOP

const MlpLmConfig& validated(const MlpLmConfig& config) {
  config.validate();
  return config;
}

}  // namespace

// -------------------------------------------------------------------------------------------------------

struct MlpLmCuda::State {
  State(const MlpLmConfig& c, cudaStream_t s) : config(validated(c)), layout(c.parameter_layout()), stream(s) {}
  ~State() {
    cudaStreamSynchronize(stream);  // queued kernels may still use the buffers freed below
    if (staged != nullptr) cudaEventDestroy(staged);
  }

  // Parameter indices (MlpLmConfig::parameter_layout): 0 embedding, 1 + 2l / 2 + 2l hidden l weight / bias.
  static std::size_t weight(int layer) { return 1 + 2 * static_cast<std::size_t>(layer); }
  static std::size_t bias(int layer) { return 2 + 2 * static_cast<std::size_t>(layer); }
  std::size_t output_weight() const { return weight(config.layers); }
  std::size_t output_bias() const { return weight(config.layers) + 1; }

  const float* master(std::size_t i) const { return params.get() + param_offsets[i]; }
  const bf16* weights(std::size_t i) const { return shadow.get() + shadow_offsets[i]; }
  float* grad(std::size_t i) const { return grads.get() + grad_offsets[i]; }

  void ensure_rows(int rows);
  void bias_grad(const bf16* dz, int rows, int n, float* db) const;

  // Row-major D[m, n] = op(A)·op(B), bf16 A and B, fp32 accumulation, D (bf16 or fp32) overwritten: a
  // cuda::GemmSpec with alpha 1, beta 0, no bias and batch 1.
  void matmul(bool trans_a, bool trans_b, int m, int n, int k, const bf16* a, int lda, const bf16* b, int ldb, void* d,
              cudaDataType_t d_type, int ldd) {
    gemm.run(stream, {.trans_a = trans_a, .trans_b = trans_b, .m = m, .n = n, .k = k, .a = a, .lda = lda, .b = b,
                      .ldb = ldb, .d = d, .d_type = d_type, .ldd = ldd});
  }

  MlpLmConfig config;
  std::vector<ParameterInfo> layout;
  cudaStream_t stream;
  std::vector<std::size_t> param_offsets, shadow_offsets, grad_offsets;

  DeviceArray<float> params, adam_m, adam_v;  // forward order, parameter_count()
  DeviceArray<bf16> shadow;                   // bf16 copies, each parameter on a 256-byte boundary
  DeviceArray<float> grads;                   // engine layout
  cuda::LtMatmul gemm;

  int capacity_rows = 0, rows = 0;
  PinnedArray<std::int32_t> staging;
  cudaEvent_t staged = nullptr;               // the staging buffer's last host→device copy
  DeviceArray<std::int32_t> tokens;           // [rows, C + 1]
  DeviceArray<bf16> x, dx;                    // [rows, C·E]
  std::vector<DeviceArray<bf16>> z, h;        // per layer [rows, H]: pre-activation (bias added), GELU output
  DeviceArray<bf16> dh, dscratch;             // [rows, H] upstream gradients
  DeviceArray<bf16> logits, dlogits;          // [rows, V]
  DeviceArray<float> row_loss;                // [rows]
  cuda::DeviceLossLog losses;
  bool forward_done = false;
  AdamWStepCounts steps{layout.size()};
};

void MlpLmCuda::State::ensure_rows(int needed) {
  if (needed <= capacity_rows) return;
  SCALESCOPE_CUDA_CHECK(cudaStreamSynchronize(stream));  // the old buffers may still be in use
  const std::size_t n = static_cast<std::size_t>(needed), hid = static_cast<std::size_t>(config.hidden);
  const std::size_t in0 = static_cast<std::size_t>(config.input_width()), voc = static_cast<std::size_t>(config.vocab);
  staging.resize(n * static_cast<std::size_t>(config.context + 1));
  tokens.resize(n * static_cast<std::size_t>(config.context + 1));
  x.resize(n * in0);
  dx.resize(n * in0);
  z.resize(static_cast<std::size_t>(config.layers));
  h.resize(static_cast<std::size_t>(config.layers));
  for (int l = 0; l < config.layers; ++l) {
    z[static_cast<std::size_t>(l)].resize(n * hid);
    h[static_cast<std::size_t>(l)].resize(n * hid);
  }
  dh.resize(n * hid);
  dscratch.resize(n * hid);
  logits.resize(n * voc);
  dlogits.resize(n * voc);
  row_loss.resize(n);
  capacity_rows = needed;
}

void MlpLmCuda::State::bias_grad(const bf16* dz, int batch_rows, int n, float* db) const {
  const dim3 block(kColumnTile, kColumnTile);
  bias_grad_kernel<<<static_cast<unsigned>((n + kColumnTile - 1) / kColumnTile), block, 0, stream>>>(dz, batch_rows, n, db);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
}

MlpLmCuda::MlpLmCuda(const MlpLmConfig& config, cudaStream_t compute_stream)
    : s_(std::make_unique<State>(config, compute_stream)) {
  State& s = *s_;
  std::size_t at = 0, shadow_at = 0;
  for (const auto& p : s.layout) {
    s.param_offsets.push_back(at);
    s.shadow_offsets.push_back(shadow_at);
    at += p.numel;
    shadow_at += (p.numel + kShadowAlignElements - 1) / kShadowAlignElements * kShadowAlignElements;
  }
  s.params.resize(at);
  s.adam_m.resize(at);
  s.adam_v.resize(at);
  s.shadow.resize(shadow_at);
  SCALESCOPE_CUDA_CHECK(cudaEventCreateWithFlags(&s.staged, cudaEventDisableTiming));
  SCALESCOPE_CUDA_CHECK(cudaMemsetAsync(s.adam_m.get(), 0, at * sizeof(float), s.stream));
  SCALESCOPE_CUDA_CHECK(cudaMemsetAsync(s.adam_v.get(), 0, at * sizeof(float), s.stream));
  const std::vector<float> initial = mlp_lm_initial_parameters(config);
  SCALESCOPE_CUDA_CHECK(cudaMemcpyAsync(s.params.get(), initial.data(), at * sizeof(float), cudaMemcpyHostToDevice, s.stream));
  parameters_changed();
  SCALESCOPE_CUDA_CHECK(cudaStreamSynchronize(s.stream));  // `initial` is freed on return
}

MlpLmCuda::~MlpLmCuda() = default;

const MlpLmConfig& MlpLmCuda::config() const { return s_->config; }
cudaStream_t MlpLmCuda::stream() const { return s_->stream; }
std::string MlpLmCuda::describe() const { return s_->config.describe() + " (bf16 autocast, fp32 master, CUDA)"; }
const std::vector<ParameterInfo>& MlpLmCuda::parameters() const { return s_->layout; }
double MlpLmCuda::flops_per_token() const { return s_->config.flops_per_token(); }
int MlpLmCuda::row_tokens() const { return s_->config.context + 1; }
float* MlpLmCuda::flat_parameters() { return s_->params.get(); }

float* MlpLmCuda::allocate_gradients(const std::vector<std::size_t>& offsets, std::size_t total_elements) {
  State& s = *s_;
  check_gradient_offsets(s.layout, offsets, total_elements);
  s.grad_offsets = offsets;
  s.grads.resize(total_elements);
  SCALESCOPE_CUDA_CHECK(cudaMemsetAsync(s.grads.get(), 0, total_elements * sizeof(float), s.stream));
  return s.grads.get();
}

void MlpLmCuda::parameters_changed() {
  State& s = *s_;
  for (std::size_t i = 0; i < s.layout.size(); ++i) {
    const std::size_t n = s.layout[i].numel;
    to_bf16_kernel<<<blocks_for(n), kThreads, 0, s.stream>>>(s.master(i), s.shadow.get() + s.shadow_offsets[i], n);
    SCALESCOPE_CUDA_CHECK_LAUNCH();
  }
}

void MlpLmCuda::stage_batch(const TokenBatchView& batch) {
  State& s = *s_;
  check_mlp_lm_batch(s.config, batch);
  s.ensure_rows(batch.rows);
  cuda::stage_tokens(batch.tokens, static_cast<std::size_t>(batch.rows) * static_cast<std::size_t>(batch.row_tokens),
                     s.staging, s.tokens.get(), s.staged, s.stream);
  s.rows = batch.rows;
  s.forward_done = false;
}

void MlpLmCuda::forward() {
  State& s = *s_;
  if (s.rows == 0) throw std::logic_error("MlpLmCuda::forward before stage_batch");
  float* loss = s.losses.next_slot("MlpLmCuda");
  const MlpLmConfig& c = s.config;
  const int n = s.rows, in0 = c.input_width();
  const std::size_t rows = static_cast<std::size_t>(n), hidden_elements = rows * static_cast<std::size_t>(c.hidden);

  const std::size_t x_elements = rows * static_cast<std::size_t>(in0);
  if (c.embed % 8 == 0)
    embedding_gather_kernel<8><<<blocks_for(x_elements / 8), kThreads, 0, s.stream>>>(s.tokens.get(), s.weights(0), s.x.get(), rows, c.context, c.embed);
  else
    embedding_gather_kernel<1><<<blocks_for(x_elements), kThreads, 0, s.stream>>>(s.tokens.get(), s.weights(0), s.x.get(), rows, c.context, c.embed);
  SCALESCOPE_CUDA_CHECK_LAUNCH();

  const bf16* in = s.x.get();
  int in_width = in0;
  for (int l = 0; l < c.layers; ++l) {
    bf16* z = s.z[static_cast<std::size_t>(l)].get();
    bf16* h = s.h[static_cast<std::size_t>(l)].get();
    s.matmul(false, false, n, c.hidden, in_width, in, in_width, s.weights(State::weight(l)), c.hidden, z,
             CUDA_R_16BF, c.hidden);
    if (c.hidden % 8 == 0)
      bias_gelu_kernel<8><<<blocks_for(hidden_elements / 8), kThreads, 0, s.stream>>>(z, s.master(State::bias(l)), h, hidden_elements, c.hidden);
    else
      bias_gelu_kernel<1><<<blocks_for(hidden_elements), kThreads, 0, s.stream>>>(z, s.master(State::bias(l)), h, hidden_elements, c.hidden);
    SCALESCOPE_CUDA_CHECK_LAUNCH();
    in = h;
    in_width = c.hidden;
  }

  s.matmul(false, false, n, c.vocab, c.hidden, in, c.hidden, s.weights(s.output_weight()), c.vocab,
           s.logits.get(), CUDA_R_16BF, c.vocab);
  softmax_xent_kernel<<<static_cast<unsigned>(n), kThreads, 0, s.stream>>>(
      s.logits.get(), s.master(s.output_bias()), s.tokens.get(), c.context + 1, c.vocab, 1.0f / static_cast<float>(n),
      s.row_loss.get(), s.dlogits.get());
  SCALESCOPE_CUDA_CHECK_LAUNCH();
  mean_loss_kernel<<<1, kThreads, 0, s.stream>>>(s.row_loss.get(), n, loss);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
  s.losses.commit();
  s.forward_done = true;
}

void MlpLmCuda::backward(const std::function<void(std::size_t)>& on_gradient_ready) {
  State& s = *s_;
  if (s.grad_offsets.empty()) throw std::logic_error("MlpLmCuda::backward before allocate_gradients");
  if (!s.forward_done) throw std::logic_error("MlpLmCuda::backward before forward");
  const MlpLmConfig& c = s.config;
  const int n = s.rows, in0 = c.input_width();
  const std::size_t rows = static_cast<std::size_t>(n), hidden_elements = rows * static_cast<std::size_t>(c.hidden);
  const bf16* dlogits = s.dlogits.get();  // written by forward's softmax cross-entropy

  s.bias_grad(dlogits, n, c.vocab, s.grad(s.output_bias()));
  on_gradient_ready(s.output_bias());
  s.matmul(true, false, c.hidden, c.vocab, n, s.h[static_cast<std::size_t>(c.layers - 1)].get(), c.hidden,
           dlogits, c.vocab, s.grad(s.output_weight()), CUDA_R_32F, c.vocab);
  on_gradient_ready(s.output_weight());
  s.matmul(false, true, n, c.hidden, c.vocab, dlogits, c.vocab, s.weights(s.output_weight()), c.vocab,
           s.dh.get(), CUDA_R_16BF, c.hidden);

  for (int l = c.layers - 1; l >= 0; --l) {
    if (hidden_elements % 8 == 0)
      gelu_backward_kernel<8><<<blocks_for(hidden_elements / 8), kThreads, 0, s.stream>>>(s.dh.get(), s.z[static_cast<std::size_t>(l)].get(), hidden_elements);
    else
      gelu_backward_kernel<1><<<blocks_for(hidden_elements), kThreads, 0, s.stream>>>(s.dh.get(), s.z[static_cast<std::size_t>(l)].get(), hidden_elements);
    SCALESCOPE_CUDA_CHECK_LAUNCH();
    s.bias_grad(s.dh.get(), n, c.hidden, s.grad(State::bias(l)));
    on_gradient_ready(State::bias(l));

    const bf16* in = l > 0 ? s.h[static_cast<std::size_t>(l - 1)].get() : s.x.get();
    const int in_width = l > 0 ? c.hidden : in0;
    s.matmul(true, false, in_width, c.hidden, n, in, in_width, s.dh.get(), c.hidden, s.grad(State::weight(l)),
             CUDA_R_32F, c.hidden);
    on_gradient_ready(State::weight(l));
    bf16* d_in = l > 0 ? s.dscratch.get() : s.dx.get();
    s.matmul(false, true, n, in_width, c.hidden, s.dh.get(), c.hidden, s.weights(State::weight(l)), c.hidden,
             d_in, CUDA_R_16BF, in_width);
    if (l > 0) std::swap(s.dh, s.dscratch);
  }

  float* dtable = s.grad(0);
  SCALESCOPE_CUDA_CHECK(cudaMemsetAsync(dtable, 0, s.layout[0].numel * sizeof(float), s.stream));
  const std::size_t x_elements = rows * static_cast<std::size_t>(in0);
  embedding_backward_kernel<<<blocks_for(x_elements), kThreads, 0, s.stream>>>(s.tokens.get(), s.dx.get(), dtable, rows,
                                                                               c.context, c.embed);
  SCALESCOPE_CUDA_CHECK_LAUNCH();
  on_gradient_ready(0);
}

void MlpLmCuda::optimizer_step_part(const AdamWConfig& config, ParameterRange part) {
  State& s = *s_;
  if (s.grad_offsets.empty()) throw std::logic_error("MlpLmCuda::optimizer_step before allocate_gradients");
  const AdamWStep step = adamw_step(config, s.steps.advance(part, "MlpLmCuda"));
  for (std::size_t i = part.first; i < part.end; ++i) {
    AdamWStep tensor_step = step;
    if (!mlp_lm_decays(s.layout[i].name)) tensor_step.decay = 1.0f;
    const std::size_t n = s.layout[i].numel, off = s.param_offsets[i];
    adamw_kernel<<<blocks_for(n), kThreads, 0, s.stream>>>(s.params.get() + off, s.grad(i), s.adam_m.get() + off,
                                                          s.adam_v.get() + off, s.shadow.get() + s.shadow_offsets[i], n,
                                                          tensor_step);
    SCALESCOPE_CUDA_CHECK_LAUNCH();
  }
}

std::vector<float> MlpLmCuda::take_losses() {
  State& s = *s_;
  return s.losses.take(s.stream);
}

std::vector<float> MlpLmCuda::parameters_to_host() {
  const State& s = *s_;
  return cuda::copy_to_host(s.params.get(), s.params.size(), s.stream);
}

std::vector<float> MlpLmCuda::gradients_to_host() {
  const State& s = *s_;
  return cuda::copy_to_host(s.grads.get(), s.grads.size(), s.stream);
}

}  // namespace scalescope::train
