#include "train/cpu/mlp_lm_cpu.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "core/error.h"

namespace scalescope::train {
namespace {

// Row-major C[M,N] = op(A)·op(B) with beta = 0 (C is overwritten, never read).
void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
          const float* b, std::size_t ldb, float* c, std::size_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), 1.0f, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), 0.0f, c, static_cast<blasint>(ldc));
}

void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, const double* a, std::size_t lda,
          const double* b, std::size_t ldb, double* c, std::size_t ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), 1.0, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), 0.0, c, static_cast<blasint>(ldc));
}

// Tanh-approximate GELU (Hendrycks & Gimpel 2016, "Gaussian Error Linear Units", eq. for GELU ≈
// 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))) as used by GPT-2) and its exact derivative.
template <typename T>
constexpr T kGeluScale = static_cast<T>(0.7978845608028654);  // √(2/π)
template <typename T>
constexpr T kGeluCubic = static_cast<T>(0.044715);

template <typename T>
T gelu(T x) {
  return T(0.5) * x * (T(1) + std::tanh(kGeluScale<T> * (x + kGeluCubic<T> * x * x * x)));
}

template <typename T>
T gelu_derivative(T x) {
  const T t = std::tanh(kGeluScale<T> * (x + kGeluCubic<T> * x * x * x));
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * kGeluScale<T> * (T(1) + T(3) * kGeluCubic<T> * x * x);
}

}  // namespace

/// Forward and backward of the MLP LM in precision `Scalar`, with the activations of the last forward
/// kept for the backward. Parameter indices follow MlpLmConfig::parameter_layout():
/// 0 embedding, 1 + 2l hidden.l.weight, 2 + 2l hidden.l.bias, 2L + 1 output.weight, 2L + 2 output.bias.
template <typename Scalar>
class MlpLmHostMath {
 public:
  explicit MlpLmHostMath(const MlpLmConfig& config) : c_(config), offsets_(forward_offsets(config.parameter_layout())) {}

  /// Mean cross-entropy over `rows` rows of context + 1 tokens (already validated); `params` in forward order.
  Scalar forward(const Scalar* params, const std::int32_t* tokens, int rows) {
    resize(rows);
    const std::size_t n = static_cast<std::size_t>(rows), ctx = static_cast<std::size_t>(c_.context);
    const std::size_t emb = static_cast<std::size_t>(c_.embed), hid = static_cast<std::size_t>(c_.hidden);
    const std::size_t voc = static_cast<std::size_t>(c_.vocab), in0 = ctx * emb;
    tokens_.assign(tokens, tokens + n * (ctx + 1));

    const Scalar* table = params + offsets_[0];
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t c = 0; c < ctx; ++c)
        std::copy_n(table + static_cast<std::size_t>(tokens_[r * (ctx + 1) + c]) * emb, emb, x_.data() + r * in0 + c * emb);

    const Scalar* in = x_.data();
    std::size_t in_width = in0;
    for (int l = 0; l < c_.layers; ++l) {
      gemm(false, false, n, hid, in_width, in, in_width, params + offsets_[weight(l)], hid, z_[l].data(), hid);
      const Scalar* bias = params + offsets_[bias_index(l)];
      for (std::size_t r = 0; r < n; ++r)
        for (std::size_t j = 0; j < hid; ++j) {
          Scalar& z = z_[l][r * hid + j];
          z += bias[j];
          h_[l][r * hid + j] = gelu(z);
        }
      in = h_[l].data();
      in_width = hid;
    }

    gemm(false, false, n, voc, hid, in, hid, params + offsets_[output_weight()], voc, probs_.data(), voc);
    const Scalar* out_bias = params + offsets_[output_weight() + 1];
    Scalar total = 0;
    for (std::size_t r = 0; r < n; ++r) {
      Scalar* row = probs_.data() + r * voc;
      for (std::size_t v = 0; v < voc; ++v) row[v] += out_bias[v];
      // Stable log-softmax: subtract the row maximum before exponentiating.
      const Scalar max = *std::max_element(row, row + voc);
      Scalar sum = 0;
      for (std::size_t v = 0; v < voc; ++v) sum += std::exp(row[v] - max);
      const std::size_t target = static_cast<std::size_t>(tokens_[r * (ctx + 1) + ctx]);
      total += std::log(sum) + max - row[target];
      for (std::size_t v = 0; v < voc; ++v) row[v] = std::exp(row[v] - max) / sum;
    }
    return total / static_cast<Scalar>(n);
  }

  /// Gradients of the last forward's mean loss, overwritten at grads[i] (parameter i, numel elements);
  /// ready(i) is called after each is complete, in reverse parameter order.
  void backward(const Scalar* params, const std::vector<Scalar*>& grads, const std::function<void(std::size_t)>& ready) {
    const std::size_t n = static_cast<std::size_t>(rows_), ctx = static_cast<std::size_t>(c_.context);
    const std::size_t emb = static_cast<std::size_t>(c_.embed), hid = static_cast<std::size_t>(c_.hidden);
    const std::size_t voc = static_cast<std::size_t>(c_.vocab), in0 = ctx * emb;

    // d loss / d logits = (softmax − onehot(target)) / rows.
    const Scalar inv_rows = Scalar(1) / static_cast<Scalar>(n);
    for (std::size_t r = 0; r < n; ++r) {
      for (std::size_t v = 0; v < voc; ++v) dlogits_[r * voc + v] = probs_[r * voc + v] * inv_rows;
      dlogits_[r * voc + static_cast<std::size_t>(tokens_[r * (ctx + 1) + ctx])] -= inv_rows;
    }
    const std::size_t out_w = output_weight();
    column_sums(dlogits_.data(), n, voc, grads[out_w + 1]);
    ready(out_w + 1);
    gemm(true, false, hid, voc, n, h_[c_.layers - 1].data(), hid, dlogits_.data(), voc, grads[out_w], voc);
    ready(out_w);
    gemm(false, true, n, hid, voc, dlogits_.data(), voc, params + offsets_[out_w], voc, dh_.data(), hid);

    for (int l = c_.layers - 1; l >= 0; --l) {
      for (std::size_t i = 0; i < n * hid; ++i) dh_[i] *= gelu_derivative(z_[l][i]);  // now d loss / d z_l
      column_sums(dh_.data(), n, hid, grads[bias_index(l)]);
      ready(bias_index(l));
      const Scalar* in = l > 0 ? h_[l - 1].data() : x_.data();
      const std::size_t in_width = l > 0 ? hid : in0;
      gemm(true, false, in_width, hid, n, in, in_width, dh_.data(), hid, grads[weight(l)], hid);
      ready(weight(l));
      Scalar* d_in = l > 0 ? dscratch_.data() : dx_.data();
      gemm(false, true, n, in_width, hid, dh_.data(), hid, params + offsets_[weight(l)], hid, d_in, in_width);
      if (l > 0) std::swap(dh_, dscratch_);
    }

    // Embedding: scatter-add each context position's input gradient into its token's row.
    Scalar* table_grad = grads[0];
    std::fill_n(table_grad, static_cast<std::size_t>(c_.vocab) * emb, Scalar(0));
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t c = 0; c < ctx; ++c) {
        Scalar* dst = table_grad + static_cast<std::size_t>(tokens_[r * (ctx + 1) + c]) * emb;
        const Scalar* src = dx_.data() + r * in0 + c * emb;
        for (std::size_t e = 0; e < emb; ++e) dst[e] += src[e];
      }
    ready(0);
  }

  const std::vector<std::size_t>& offsets() const { return offsets_; }

 private:
  static std::size_t weight(int layer) { return 1 + 2 * static_cast<std::size_t>(layer); }
  static std::size_t bias_index(int layer) { return 2 + 2 * static_cast<std::size_t>(layer); }
  std::size_t output_weight() const { return weight(c_.layers); }

  static void column_sums(const Scalar* m, std::size_t rows, std::size_t cols, Scalar* out) {
    std::fill_n(out, cols, Scalar(0));
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t j = 0; j < cols; ++j) out[j] += m[r * cols + j];
  }

  void resize(int rows) {
    if (rows == rows_) return;
    rows_ = rows;
    const std::size_t n = static_cast<std::size_t>(rows), hid = static_cast<std::size_t>(c_.hidden);
    const std::size_t in0 = static_cast<std::size_t>(c_.input_width()), voc = static_cast<std::size_t>(c_.vocab);
    x_.assign(n * in0, 0);
    dx_.assign(n * in0, 0);
    z_.assign(static_cast<std::size_t>(c_.layers), std::vector<Scalar>(n * hid));
    h_.assign(static_cast<std::size_t>(c_.layers), std::vector<Scalar>(n * hid));
    dh_.assign(n * hid, 0);
    dscratch_.assign(n * hid, 0);
    probs_.assign(n * voc, 0);
    dlogits_.assign(n * voc, 0);
  }

  MlpLmConfig c_;
  std::vector<std::size_t> offsets_;
  int rows_ = 0;
  std::vector<std::int32_t> tokens_;             // [rows, context + 1]
  std::vector<Scalar> x_, dx_;                   // [rows, context·embed]
  std::vector<std::vector<Scalar>> z_, h_;       // per layer [rows, hidden]: pre-activation, GELU output
  std::vector<Scalar> dh_, dscratch_;            // [rows, hidden]
  std::vector<Scalar> probs_, dlogits_;          // [rows, vocab]: softmax, d loss / d logits
};

MlpLmCpu::MlpLmCpu(const MlpLmConfig& config)
    : HostModel("MlpLmCpu", config.parameter_layout(), mlp_lm_initial_parameters(config)),
      config_(config),
      math_(std::make_unique<MlpLmHostMath<float>>(config)) {}

MlpLmCpu::~MlpLmCpu() = default;

std::string MlpLmCpu::describe() const { return config_.describe() + " (fp32, CPU)"; }

void MlpLmCpu::check_batch(const TokenBatchView& batch) const { check_mlp_lm_batch(config_, batch); }

float MlpLmCpu::forward_math(const float* params, const std::int32_t* tokens, int rows) {
  return math_->forward(params, tokens, rows);
}

void MlpLmCpu::backward_math(const float* params, const std::vector<float*>& grads,
                             const std::function<void(std::size_t)>& ready) {
  math_->backward(params, grads, ready);
}

bool MlpLmCpu::decays(std::size_t parameter_index) const { return mlp_lm_decays(parameters()[parameter_index].name); }

double mlp_lm_reference_loss(const MlpLmConfig& config, const std::vector<double>& parameters,
                             const TokenBatchView& batch, std::vector<double>* gradient) {
  config.validate();
  check_mlp_lm_batch(config, batch);
  if (parameters.size() != config.parameter_count())
    throw std::invalid_argument("mlp_lm_reference_loss: parameter vector has the wrong size");
  MlpLmHostMath<double> math(config);
  return host_reference_loss(math, parameters, batch, gradient);
}

}  // namespace scalescope::train
