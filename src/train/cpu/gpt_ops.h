#pragma once
// The GPT decoder's operations on the host, one named function each, in precision T (float or double;
// explicit instantiations in gpt_cpu.cpp). GptCpu is built from them, and they are the oracle the CUDA
// kernels are tested against. Layouts are row-major; B rows of T positions, width d, H heads of d/H.
// "Overwrite" outputs are fully written; "accumulate" outputs are added to. No bounds or shape checks:
// callers pass consistent sizes.

#include <cstddef>
#include <cstdint>

namespace scalescope::train::gpt_ops {

/// x[b, i] = wte[tokens[b, i]] + wpe[i] for i < T. tokens [B, T + 1] (the last token of a row is only a
/// target); wte [V, d]; wpe [≥T, d]; x [B, T, d] overwrite.
template <typename T>
void embedding_forward(const std::int32_t* tokens, int batch, int seq, const T* wte, const T* wpe, int d, T* x);

/// dwte[tokens[b, i]] += scale·dx[b, i] (accumulate: the tied head wrote its part first); dwpe[i] =
/// scale·Σ_b dx[b, i] (overwrite), rows b in order. dx [B, T, d]; dwte [V, d]; dwpe [T, d]. scale is 1 for one
/// rank's batch and 1/world_size for the rows all-gathered from every rank (EmbeddingGather).
template <typename T>
void embedding_backward(const std::int32_t* tokens, int batch, int seq, const T* dx, int d, T* dwte, T* dwpe,
                        T scale = T(1));

/// LayerNorm (Ba, Kiros & Hinton 2016) over the last dimension, ε = 1e-5 as torch.nn.LayerNorm:
/// y = (x − μ)·rstd·w + b with rstd = 1/√(var + ε) (biased variance). x, y [rows, d]; w, b [d];
/// mean, rstd [rows] overwrite (kept for backward).
template <typename T>
void layernorm_forward(const T* x, const T* w, const T* b, std::size_t rows, int d, T* y, T* mean, T* rstd);

/// With x̂ = (x − μ)·rstd and g = dy·w: dx += rstd·(g − mean(g) − x̂·mean(g·x̂)) (accumulate, the residual
/// stream's gradient), dw = Σ_rows dy·x̂ and db = Σ_rows dy (overwrite). dy, x, dx [rows, d].
template <typename T>
void layernorm_backward(const T* dy, const T* x, const T* mean, const T* rstd, const T* w, std::size_t rows, int d,
                        T* dx, T* dw, T* db);

/// y = x·W + bias. x [rows, in]; W [in, out]; bias [out] or null; y [rows, out] overwrite.
template <typename T>
void matmul_forward(const T* x, const T* w, const T* bias, std::size_t rows, int in, int out, T* y);

/// dW = xᵀ·dy, dbias = Σ_rows dy (if not null), dx = dy·Wᵀ (if not null); all overwrite.
template <typename T>
void matmul_backward(const T* dy, const T* x, const T* w, std::size_t rows, int in, int out, T* dx, T* dw, T* dbias);

/// The output head tied to the token embedding: logits = x·wteᵀ. x [rows, d]; wte [V, d]; logits [rows, V].
template <typename T>
void tied_head_forward(const T* x, const T* wte, std::size_t rows, int d, int vocab, T* logits);

/// dwte = dlogitsᵀ·x (overwrite; the input embedding's part is added later), dx = dlogits·wte (overwrite).
template <typename T>
void tied_head_backward(const T* dlogits, const T* x, const T* wte, std::size_t rows, int d, int vocab, T* dwte, T* dx);

/// Causal multi-head self-attention (Vaswani et al. 2017, §3.2.2) on qkv [B, T, 3d] (q, k, v in column
/// blocks of d; head h in columns h·d/H … of each): per (b, h), probs = softmax_row(q·kᵀ/√(d/H)) over
/// keys j ≤ i (0 above the diagonal), y = probs·v. probs [B, H, T, T] and y [B, T, d] overwrite.
template <typename T>
void attention_forward(const T* qkv, int batch, int seq, int d, int heads, T* probs, T* y);

/// Backward of attention_forward: dP = dy·vᵀ; dS = P ⊙ (dP − Σ_j P·dP) (softmax backward, per row);
/// dq = dS·k/√(d/H), dk = dSᵀ·q/√(d/H), dv = Pᵀ·dy. dy [B, T, d]; dqkv [B, T, 3d] overwrite.
template <typename T>
void attention_backward(const T* dy, const T* qkv, const T* probs, int batch, int seq, int d, int heads, T* dqkv);

/// Tanh-approximate GELU (Hendrycks & Gimpel 2016, as GPT-2): 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))).
template <typename T>
void gelu_forward(const T* x, std::size_t n, T* y);

/// dx = dy·GELU′(x) (overwrite).
template <typename T>
void gelu_backward(const T* dy, const T* x, std::size_t n, T* dx);

/// out = a + b (the residual connection); out may alias a or b.
template <typename T>
void residual_forward(const T* a, const T* b, std::size_t n, T* out);

/// Softmax cross-entropy per position against the next token: losses[b·T + i] = logsumexp(logits[b, i]) −
/// logits[b, i, tokens[b, i + 1]] (max-subtracted); probs [B·T, V] receives the softmax and may alias
/// logits [B·T, V].
template <typename T>
void cross_entropy_forward(const T* logits, const std::int32_t* tokens, int batch, int seq, int vocab, T* losses,
                           T* probs);

/// dlogits = scale·(probs − onehot(target)) (overwrite); scale = 1/(B·T) for the mean loss.
template <typename T>
void cross_entropy_backward(const T* probs, const std::int32_t* tokens, int batch, int seq, int vocab, T scale,
                            T* dlogits);

}  // namespace scalescope::train::gpt_ops
