#include "train/cpu/gpt_cpu.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/error.h"
#include "train/cpu/gpt_ops.h"

namespace scalescope::train {
namespace {

// Row-major C[M,N] = alpha·op(A)·op(B) + beta·C.
void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
          std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, double alpha, const double* a,
          std::size_t lda, const double* b, std::size_t ldb, double beta, double* c, std::size_t ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

std::size_t z(int v) { return static_cast<std::size_t>(v); }

template <typename T>
constexpr T kLayerNormEpsilon = static_cast<T>(1e-5);
template <typename T>
constexpr T kGeluScale = static_cast<T>(0.7978845608028654);  // √(2/π)
template <typename T>
constexpr T kGeluCubic = static_cast<T>(0.044715);

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// Operations (gpt_ops.h).

namespace gpt_ops {

template <typename T>
void embedding_forward(const std::int32_t* tokens, int batch, int seq, const T* wte, const T* wpe, int d, T* x) {
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < seq; ++i) {
      const T* e = wte + z(tokens[z(b) * z(seq + 1) + z(i)]) * z(d);
      const T* p = wpe + z(i) * z(d);
      T* out = x + (z(b) * z(seq) + z(i)) * z(d);
      for (int c = 0; c < d; ++c) out[c] = e[c] + p[c];
    }
}

template <typename T>
void embedding_backward(const std::int32_t* tokens, int batch, int seq, const T* dx, int d, T* dwte, T* dwpe,
                        T scale) {
  std::fill_n(dwpe, z(seq) * z(d), T(0));
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < seq; ++i) {
      const T* g = dx + (z(b) * z(seq) + z(i)) * z(d);
      T* e = dwte + z(tokens[z(b) * z(seq + 1) + z(i)]) * z(d);
      T* p = dwpe + z(i) * z(d);
      for (int c = 0; c < d; ++c) {
        const T v = scale * g[c];  // exact for scale 1
        e[c] += v;
        p[c] += v;
      }
    }
}

template <typename T>
void layernorm_forward(const T* x, const T* w, const T* b, std::size_t rows, int d, T* y, T* mean, T* rstd) {
  for (std::size_t r = 0; r < rows; ++r) {
    const T* in = x + r * z(d);
    T mu = 0;
    for (int c = 0; c < d; ++c) mu += in[c];
    mu /= static_cast<T>(d);
    T var = 0;
    for (int c = 0; c < d; ++c) var += (in[c] - mu) * (in[c] - mu);
    var /= static_cast<T>(d);
    const T s = T(1) / std::sqrt(var + kLayerNormEpsilon<T>);
    T* out = y + r * z(d);
    for (int c = 0; c < d; ++c) out[c] = (in[c] - mu) * s * w[c] + b[c];
    mean[r] = mu;
    rstd[r] = s;
  }
}

template <typename T>
void layernorm_backward(const T* dy, const T* x, const T* mean, const T* rstd, const T* w, std::size_t rows, int d,
                        T* dx, T* dw, T* db) {
  std::fill_n(dw, z(d), T(0));
  std::fill_n(db, z(d), T(0));
  for (std::size_t r = 0; r < rows; ++r) {
    const T* g_out = dy + r * z(d);
    const T* in = x + r * z(d);
    T g_mean = 0, gx_mean = 0;  // mean(g) and mean(g·x̂), g = dy·w
    for (int c = 0; c < d; ++c) {
      const T xhat = (in[c] - mean[r]) * rstd[r];
      const T g = g_out[c] * w[c];
      g_mean += g;
      gx_mean += g * xhat;
      dw[c] += g_out[c] * xhat;
      db[c] += g_out[c];
    }
    g_mean /= static_cast<T>(d);
    gx_mean /= static_cast<T>(d);
    T* out = dx + r * z(d);
    for (int c = 0; c < d; ++c) {
      const T xhat = (in[c] - mean[r]) * rstd[r];
      out[c] += rstd[r] * (g_out[c] * w[c] - g_mean - xhat * gx_mean);
    }
  }
}

template <typename T>
void matmul_forward(const T* x, const T* w, const T* bias, std::size_t rows, int in, int out, T* y) {
  gemm(false, false, rows, z(out), z(in), T(1), x, z(in), w, z(out), T(0), y, z(out));
  if (bias != nullptr)
    for (std::size_t r = 0; r < rows; ++r)
      for (int c = 0; c < out; ++c) y[r * z(out) + z(c)] += bias[c];
}

template <typename T>
void matmul_backward(const T* dy, const T* x, const T* w, std::size_t rows, int in, int out, T* dx, T* dw, T* dbias) {
  gemm(true, false, z(in), z(out), rows, T(1), x, z(in), dy, z(out), T(0), dw, z(out));
  if (dbias != nullptr) {
    std::fill_n(dbias, z(out), T(0));
    for (std::size_t r = 0; r < rows; ++r)
      for (int c = 0; c < out; ++c) dbias[c] += dy[r * z(out) + z(c)];
  }
  if (dx != nullptr) gemm(false, true, rows, z(in), z(out), T(1), dy, z(out), w, z(out), T(0), dx, z(in));
}

template <typename T>
void tied_head_forward(const T* x, const T* wte, std::size_t rows, int d, int vocab, T* logits) {
  gemm(false, true, rows, z(vocab), z(d), T(1), x, z(d), wte, z(d), T(0), logits, z(vocab));
}

template <typename T>
void tied_head_backward(const T* dlogits, const T* x, const T* wte, std::size_t rows, int d, int vocab, T* dwte, T* dx) {
  gemm(true, false, z(vocab), z(d), rows, T(1), dlogits, z(vocab), x, z(d), T(0), dwte, z(d));
  gemm(false, false, rows, z(d), z(vocab), T(1), dlogits, z(vocab), wte, z(d), T(0), dx, z(d));
}

template <typename T>
void attention_forward(const T* qkv, int batch, int seq, int d, int heads, T* probs, T* y) {
  const std::size_t hd = z(d / heads), ld = 3 * z(d), t = z(seq);
  const T scale = T(1) / std::sqrt(static_cast<T>(hd));
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h) {
      const T* q = qkv + z(b) * t * ld + z(h) * hd;
      const T* k = q + z(d);
      const T* v = q + 2 * z(d);
      T* p = probs + (z(b) * z(heads) + z(h)) * t * t;
      gemm(false, true, t, t, hd, scale, q, ld, k, ld, T(0), p, t);  // scores
      for (std::size_t i = 0; i < t; ++i) {  // causal softmax: keys j ≤ i
        T* row = p + i * t;
        const T m = *std::max_element(row, row + i + 1);
        T sum = 0;
        for (std::size_t j = 0; j <= i; ++j) sum += (row[j] = std::exp(row[j] - m));
        for (std::size_t j = 0; j <= i; ++j) row[j] /= sum;
        std::fill(row + i + 1, row + t, T(0));
      }
      gemm(false, false, t, hd, t, T(1), p, t, v, ld, T(0), y + z(b) * t * z(d) + z(h) * hd, z(d));
    }
}

template <typename T>
void attention_backward(const T* dy, const T* qkv, const T* probs, int batch, int seq, int d, int heads, T* dqkv) {
  const std::size_t hd = z(d / heads), ld = 3 * z(d), t = z(seq);
  const T scale = T(1) / std::sqrt(static_cast<T>(hd));
  std::vector<T> ds(t * t);
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h) {
      const std::size_t col = z(h) * hd;
      const T* q = qkv + z(b) * t * ld + col;
      const T* k = q + z(d);
      const T* v = q + 2 * z(d);
      const T* p = probs + (z(b) * z(heads) + z(h)) * t * t;
      const T* g = dy + z(b) * t * z(d) + col;
      T* dq = dqkv + z(b) * t * ld + col;
      T* dk = dq + z(d);
      T* dv = dq + 2 * z(d);
      gemm(false, true, t, t, hd, T(1), g, z(d), v, ld, T(0), ds.data(), t);  // dP
      for (std::size_t i = 0; i < t; ++i) {  // softmax backward, then the score scale
        T* row = ds.data() + i * t;
        const T* prow = p + i * t;
        T dot = 0;
        for (std::size_t j = 0; j <= i; ++j) dot += prow[j] * row[j];
        for (std::size_t j = 0; j < t; ++j) row[j] = j <= i ? prow[j] * (row[j] - dot) * scale : T(0);
      }
      gemm(false, false, t, hd, t, T(1), ds.data(), t, k, ld, T(0), dq, ld);
      gemm(true, false, t, hd, t, T(1), ds.data(), t, q, ld, T(0), dk, ld);
      gemm(true, false, t, hd, t, T(1), p, t, g, z(d), T(0), dv, ld);
    }
}

template <typename T>
void gelu_forward(const T* x, std::size_t n, T* y) {
  for (std::size_t i = 0; i < n; ++i) {
    const T u = x[i];
    y[i] = T(0.5) * u * (T(1) + std::tanh(kGeluScale<T> * (u + kGeluCubic<T> * u * u * u)));
  }
}

template <typename T>
void gelu_backward(const T* dy, const T* x, std::size_t n, T* dx) {
  for (std::size_t i = 0; i < n; ++i) {
    const T u = x[i];
    const T th = std::tanh(kGeluScale<T> * (u + kGeluCubic<T> * u * u * u));
    const T derivative =
        T(0.5) * (T(1) + th) + T(0.5) * u * (T(1) - th * th) * kGeluScale<T> * (T(1) + T(3) * kGeluCubic<T> * u * u);
    dx[i] = dy[i] * derivative;
  }
}

template <typename T>
void residual_forward(const T* a, const T* b, std::size_t n, T* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <typename T>
void cross_entropy_forward(const T* logits, const std::int32_t* tokens, int batch, int seq, int vocab, T* losses,
                           T* probs) {
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < seq; ++i) {
      const std::size_t r = z(b) * z(seq) + z(i);
      const T* row = logits + r * z(vocab);
      T* p = probs + r * z(vocab);
      const T m = *std::max_element(row, row + vocab);  // stable log-softmax
      T sum = 0;
      for (int v = 0; v < vocab; ++v) sum += std::exp(row[v] - m);
      const std::int32_t target = tokens[z(b) * z(seq + 1) + z(i) + 1];
      losses[r] = std::log(sum) + m - row[target];
      for (int v = 0; v < vocab; ++v) p[v] = std::exp(row[v] - m) / sum;  // after the last read of row: p may alias it
    }
}

template <typename T>
void cross_entropy_backward(const T* probs, const std::int32_t* tokens, int batch, int seq, int vocab, T scale,
                            T* dlogits) {
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < seq; ++i) {
      const std::size_t r = z(b) * z(seq) + z(i);
      for (int v = 0; v < vocab; ++v) dlogits[r * z(vocab) + z(v)] = scale * probs[r * z(vocab) + z(v)];
      dlogits[r * z(vocab) + z(tokens[z(b) * z(seq + 1) + z(i) + 1])] -= scale;
    }
}

#define SCALESCOPE_GPT_OPS_INSTANTIATE(T)                                                                         \
  template void embedding_forward<T>(const std::int32_t*, int, int, const T*, const T*, int, T*);                \
  template void embedding_backward<T>(const std::int32_t*, int, int, const T*, int, T*, T*, T);                     \
  template void layernorm_forward<T>(const T*, const T*, const T*, std::size_t, int, T*, T*, T*);                \
  template void layernorm_backward<T>(const T*, const T*, const T*, const T*, const T*, std::size_t, int, T*, T*, \
                                      T*);                                                                        \
  template void matmul_forward<T>(const T*, const T*, const T*, std::size_t, int, int, T*);                      \
  template void matmul_backward<T>(const T*, const T*, const T*, std::size_t, int, int, T*, T*, T*);             \
  template void tied_head_forward<T>(const T*, const T*, std::size_t, int, int, T*);                             \
  template void tied_head_backward<T>(const T*, const T*, const T*, std::size_t, int, int, T*, T*);              \
  template void attention_forward<T>(const T*, int, int, int, int, T*, T*);                                      \
  template void attention_backward<T>(const T*, const T*, const T*, int, int, int, int, T*);                     \
  template void gelu_forward<T>(const T*, std::size_t, T*);                                                      \
  template void gelu_backward<T>(const T*, const T*, std::size_t, T*);                                           \
  template void residual_forward<T>(const T*, const T*, std::size_t, T*);                                        \
  template void cross_entropy_forward<T>(const T*, const std::int32_t*, int, int, int, T*, T*);                  \
  template void cross_entropy_backward<T>(const T*, const std::int32_t*, int, int, int, T, T*);
SCALESCOPE_GPT_OPS_INSTANTIATE(float)
SCALESCOPE_GPT_OPS_INSTANTIATE(double)
#undef SCALESCOPE_GPT_OPS_INSTANTIATE

}  // namespace gpt_ops

// ---------------------------------------------------------------------------------------------------------
// The model's forward and backward.

/// Forward and backward of the GPT in precision `Scalar`, keeping the last forward's activations for the
/// backward. Parameter indices follow GptConfig::parameter_layout(): 0 wte, 1 wpe, block l's twelve from
/// 2 + 12l (see Slot), then lnf.weight and lnf.bias.
template <typename Scalar>
class GptHostMath {
 public:
  explicit GptHostMath(const GptConfig& config) : c_(config), offsets_(forward_offsets(config.parameter_layout())) {}

  /// Mean cross-entropy over rows × seq positions; `tokens` [rows, seq + 1] already validated.
  Scalar forward(const Scalar* params, const std::int32_t* tokens, int rows) {
    using namespace gpt_ops;
    resize(rows);
    tokens_.assign(tokens, tokens + z(rows) * z(c_.seq + 1));
    const int d = c_.d_model, f = c_.ffn, T = c_.seq, H = c_.heads;
    const std::size_t R = z(rows) * z(T), Rd = R * z(d);
    const auto p = [&](std::size_t i) { return params + offsets_[i]; };

    embedding_forward(tokens_.data(), rows, T, p(0), p(1), d, x_[0].data());
    for (int l = 0; l < c_.layers; ++l) {
      Layer& a = layers_[z(l)];
      const std::size_t base = slot(l, 0);
      layernorm_forward(x_[z(l)].data(), p(base + kLn1W), p(base + kLn1B), R, d, a.ln1.data(), a.mean1.data(), a.rstd1.data());
      matmul_forward(a.ln1.data(), p(base + kQkvW), p(base + kQkvB), R, d, 3 * d, a.qkv.data());
      attention_forward(a.qkv.data(), rows, T, d, H, a.probs.data(), a.att.data());
      matmul_forward(a.att.data(), p(base + kProjW), p(base + kProjB), R, d, d, scratch_.data());
      residual_forward(x_[z(l)].data(), scratch_.data(), Rd, a.mid.data());
      layernorm_forward(a.mid.data(), p(base + kLn2W), p(base + kLn2B), R, d, a.ln2.data(), a.mean2.data(), a.rstd2.data());
      matmul_forward(a.ln2.data(), p(base + kFcW), p(base + kFcB), R, d, f, a.pre.data());
      gelu_forward(a.pre.data(), R * z(f), a.act.data());
      matmul_forward(a.act.data(), p(base + kFpW), p(base + kFpB), R, f, d, scratch_.data());
      residual_forward(a.mid.data(), scratch_.data(), Rd, x_[z(l) + 1].data());
    }
    const std::size_t lnf = lnf_weight();
    layernorm_forward(x_[z(c_.layers)].data(), p(lnf), p(lnf + 1), R, d, lnf_out_.data(), lnf_mean_.data(), lnf_rstd_.data());
    tied_head_forward(lnf_out_.data(), p(0), R, d, c_.vocab, probs_.data());
    cross_entropy_forward(probs_.data(), tokens_.data(), rows, T, c_.vocab, losses_.data(), probs_.data());
    Scalar total = 0;
    for (Scalar l : losses_) total += l;
    return total / static_cast<Scalar>(R);
  }

  /// Gradients of the last forward's mean loss, overwritten at grads[i] (parameter i); ready(i) after each
  /// is complete, in reverse parameter order. With defer_input_embedding (EmbeddingGather): wte is ready with
  /// the head's part alone, first; wpe is not written nor reported; the embedding-output gradient stays in
  /// input_gradient() for the gathered scatter-add.
  void backward(const Scalar* params, const std::vector<Scalar*>& grads, const std::function<void(std::size_t)>& ready,
                bool defer_input_embedding = false) {
    using namespace gpt_ops;
    const int d = c_.d_model, f = c_.ffn, T = c_.seq, H = c_.heads, rows = rows_;
    const std::size_t R = z(rows) * z(T);
    const auto p = [&](std::size_t i) { return params + offsets_[i]; };

    cross_entropy_backward(probs_.data(), tokens_.data(), rows, T, c_.vocab, Scalar(1) / static_cast<Scalar>(R), dlogits_.data());
    tied_head_backward(dlogits_.data(), lnf_out_.data(), p(0), R, d, c_.vocab, grads[0], dln_.data());
    if (defer_input_embedding) ready(0);
    const std::size_t lnf = lnf_weight();
    std::fill(dres_.begin(), dres_.end(), Scalar(0));
    layernorm_backward(dln_.data(), x_[z(c_.layers)].data(), lnf_mean_.data(), lnf_rstd_.data(), p(lnf), R, d,
                       dres_.data(), grads[lnf], grads[lnf + 1]);
    ready(lnf + 1);
    ready(lnf);

    for (int l = c_.layers - 1; l >= 0; --l) {
      Layer& a = layers_[z(l)];
      const std::size_t base = slot(l, 0);
      // MLP: x_{l+1} = mid + GELU(LN2(mid)·W_fc + b_fc)·W_fp + b_fp.
      matmul_backward(dres_.data(), a.act.data(), p(base + kFpW), R, f, d, dhidden_.data(), grads[base + kFpW], grads[base + kFpB]);
      ready(base + kFpB);
      ready(base + kFpW);
      gelu_backward(dhidden_.data(), a.pre.data(), R * z(f), dhidden_.data());
      matmul_backward(dhidden_.data(), a.ln2.data(), p(base + kFcW), R, d, f, dln_.data(), grads[base + kFcW], grads[base + kFcB]);
      ready(base + kFcB);
      ready(base + kFcW);
      layernorm_backward(dln_.data(), a.mid.data(), a.mean2.data(), a.rstd2.data(), p(base + kLn2W), R, d, dres_.data(),
                         grads[base + kLn2W], grads[base + kLn2B]);
      ready(base + kLn2B);
      ready(base + kLn2W);
      // Attention: mid = x_l + Attn(LN1(x_l))·W_proj + b_proj.
      matmul_backward(dres_.data(), a.att.data(), p(base + kProjW), R, d, d, datt_.data(), grads[base + kProjW], grads[base + kProjB]);
      ready(base + kProjB);
      ready(base + kProjW);
      attention_backward(datt_.data(), a.qkv.data(), a.probs.data(), rows, T, d, H, dqkv_.data());
      matmul_backward(dqkv_.data(), a.ln1.data(), p(base + kQkvW), R, d, 3 * d, dln_.data(), grads[base + kQkvW], grads[base + kQkvB]);
      ready(base + kQkvB);
      ready(base + kQkvW);
      layernorm_backward(dln_.data(), x_[z(l)].data(), a.mean1.data(), a.rstd1.data(), p(base + kLn1W), R, d, dres_.data(),
                         grads[base + kLn1W], grads[base + kLn1B]);
      ready(base + kLn1B);
      ready(base + kLn1W);
    }
    if (defer_input_embedding) return;
    embedding_backward(tokens_.data(), rows, T, dres_.data(), d, grads[0], grads[1]);
    ready(1);
    ready(0);
  }

  const std::vector<std::size_t>& offsets() const { return offsets_; }
  /// The last backward's gradient at the embedding output, [rows, seq, d].
  const std::vector<Scalar>& input_gradient() const { return dres_; }

 private:
  // Offsets of a block's parameters from its first (GptConfig::parameter_layout order).
  enum Slot : std::size_t { kLn1W, kLn1B, kQkvW, kQkvB, kProjW, kProjB, kLn2W, kLn2B, kFcW, kFcB, kFpW, kFpB, kSlots };
  static std::size_t slot(int layer, std::size_t s) { return 2 + kSlots * z(layer) + s; }
  std::size_t lnf_weight() const { return slot(c_.layers, 0); }

  /// Activations of one block kept for backward.
  struct Layer {
    std::vector<Scalar> ln1, qkv, probs, att, mid, ln2, pre, act;
    std::vector<Scalar> mean1, rstd1, mean2, rstd2;
  };

  void resize(int rows) {
    if (rows == rows_) return;
    rows_ = rows;
    const std::size_t R = z(rows) * z(c_.seq), d = z(c_.d_model), f = z(c_.ffn);
    const std::size_t scores = z(rows) * z(c_.heads) * z(c_.seq) * z(c_.seq);
    x_.assign(z(c_.layers) + 1, std::vector<Scalar>(R * d));
    layers_.assign(z(c_.layers), Layer{});
    for (Layer& a : layers_) {
      a.ln1.assign(R * d, 0);
      a.qkv.assign(R * 3 * d, 0);
      a.probs.assign(scores, 0);
      a.att.assign(R * d, 0);
      a.mid.assign(R * d, 0);
      a.ln2.assign(R * d, 0);
      a.pre.assign(R * f, 0);
      a.act.assign(R * f, 0);
      for (auto* v : {&a.mean1, &a.rstd1, &a.mean2, &a.rstd2}) v->assign(R, 0);
    }
    lnf_out_.assign(R * d, 0);
    lnf_mean_.assign(R, 0);
    lnf_rstd_.assign(R, 0);
    probs_.assign(R * z(c_.vocab), 0);
    dlogits_.assign(R * z(c_.vocab), 0);
    losses_.assign(R, 0);
    scratch_.assign(R * d, 0);
    dres_.assign(R * d, 0);
    dln_.assign(R * d, 0);
    datt_.assign(R * d, 0);
    dqkv_.assign(R * 3 * d, 0);
    dhidden_.assign(R * f, 0);
  }

  GptConfig c_;
  std::vector<std::size_t> offsets_;
  int rows_ = 0;
  std::vector<std::int32_t> tokens_;                 // [rows, seq + 1]
  std::vector<std::vector<Scalar>> x_;               // residual stream entering block l; x_[L] the last output
  std::vector<Layer> layers_;
  std::vector<Scalar> lnf_out_, lnf_mean_, lnf_rstd_;
  std::vector<Scalar> probs_, dlogits_, losses_;     // [R, V] softmax of the logits; [R] per-position losses
  std::vector<Scalar> scratch_, dres_, dln_, datt_;  // [R, d]
  std::vector<Scalar> dqkv_, dhidden_;               // [R, 3d], [R, ffn]
};

// ---------------------------------------------------------------------------------------------------------
// GptCpu.

GptCpu::GptCpu(const GptConfig& config)
    : HostModel("GptCpu", config.parameter_layout(), gpt_initial_parameters(config)),
      config_(config),
      math_(std::make_unique<GptHostMath<float>>(config)) {}

GptCpu::~GptCpu() = default;

std::string GptCpu::describe() const { return config_.describe() + " (fp32, CPU)"; }

void GptCpu::check_batch(const TokenBatchView& batch) const { check_gpt_batch(config_, batch); }

float GptCpu::forward_math(const float* params, const std::int32_t* tokens, int rows) {
  return math_->forward(params, tokens, rows);
}

void GptCpu::backward_math(const float* params, const std::vector<float*>& grads,
                           const std::function<void(std::size_t)>& ready) {
  math_->backward(params, grads, ready, gather_world_ > 1);
}

std::optional<EmbeddingGather> GptCpu::embedding_gather() const { return gpt_embedding_gather(config_, sizeof(float)); }

void GptCpu::gather_embedding_gradient(int world_size) {
  if (world_size < 2) throw std::invalid_argument("GptCpu::gather_embedding_gradient needs at least 2 ranks");
  gather_world_ = world_size;
}

EmbeddingGatherBuffers GptCpu::embedding_gather_buffers() {
  if (gather_world_ < 2) throw std::logic_error("GptCpu::embedding_gather_buffers before gather_embedding_gradient");
  const auto& tokens = staged_tokens();
  if (tokens.empty()) throw std::logic_error("GptCpu::embedding_gather_buffers before stage_batch");
  const std::size_t rows = tokens.size() / z(config_.seq + 1), n = z(gather_world_);
  const std::size_t gradient_floats = rows * z(config_.seq) * z(config_.d_model);
  gathered_tokens_.resize(n * tokens.size());
  gathered_input_gradients_.resize(n * gradient_floats);
  EmbeddingGatherBuffers b;
  b.tokens = tokens.data();
  b.gathered_tokens = gathered_tokens_.data();
  b.token_bytes = tokens.size() * sizeof(std::int32_t);
  b.row_gradients = math_->input_gradient().data();  // sized for the staged rows by forward, written by backward
  b.gathered_row_gradients = gathered_input_gradients_.data();
  b.row_gradient_bytes = gradient_floats * sizeof(float);
  return b;
}

void GptCpu::apply_gathered_embedding_gradient() {
  if (gather_world_ < 2 || gathered_tokens_.empty())
    throw std::logic_error("GptCpu::apply_gathered_embedding_gradient before the all-gathers");
  const int rows = static_cast<int>(gathered_tokens_.size() / z(config_.seq + 1));
  gpt_ops::embedding_backward(gathered_tokens_.data(), rows, config_.seq, gathered_input_gradients_.data(),
                              config_.d_model, gradient(0), gradient(1), 1.0f / static_cast<float>(gather_world_));
}

bool GptCpu::decays(std::size_t parameter_index) const { return gpt_decays(parameters()[parameter_index].name); }

double gpt_reference_loss(const GptConfig& config, const std::vector<double>& parameters, const TokenBatchView& batch,
                          std::vector<double>* gradient) {
  config.validate();
  check_gpt_batch(config, batch);
  if (parameters.size() != config.parameter_count())
    throw std::invalid_argument("gpt_reference_loss: parameter vector has the wrong size");
  GptHostMath<double> math(config);
  return host_reference_loss(math, parameters, batch, gradient);
}

}  // namespace scalescope::train
