// CudnnAttention through cudnn-frontend's graph API: one SDPA forward graph and one SDPA backward graph per shape,
// their tensors described with GptCuda's strides (a head's q is a [T, hd] slice of qkv with row stride 3d), so no
// relayout is needed on either side.
#include "train/cuda/cudnn_attention.h"

#include <cudnn.h>
#include <fmt/format.h>

// cudnn-frontend carries its own copy of nlohmann-json for graph serialisation; this project does not serialise
// graphs, and leaving it out keeps a second copy of that library out of the build.
#define CUDNN_FRONTEND_SKIP_JSON_LIB
#include <cudnn_frontend.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "core/error.h"

namespace scalescope::train::gpt_kernels {

namespace fe = cudnn_frontend;

namespace {

// Tensor ids of the variant packs (any distinct values).
enum Uid : fe::graph::Tensor_attributes::uid_t { kQ = 1, kK, kV, kO, kStats, kDo, kDq, kDk, kDv };

[[noreturn]] void fail(const char* what, const std::string& message) {
  throw core::Error(fmt::format("cuDNN fused attention: {} failed: {}", what, message),
                    "run with --attention flash (the project's own fused kernels) instead, or check that libcudnn 9 "
                    "matches this build (CUDNN_LOGERR_DBG=1 prints cuDNN's own reasons)");
}

void check(fe::error_t status, const char* what) {
  if (!status.is_good()) fail(what, status.get_message());
}

void check(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS) fail(what, cudnnGetErrorString(status));
}

/// A tensor's dims and strides, as cuDNN's graph takes them.
struct Layout {
  std::vector<std::int64_t> dim, stride;
};

/// dims [B, H, T, hd] over a [B, T, row] row layout: head h's columns start h·hd after the tensor's base pointer
/// (q, k and v of qkv differ only in that pointer: base, base + d, base + 2d).
Layout rows_layout(const FlashAttentionShape& s, std::int64_t row) {
  const std::int64_t B = s.batch, H = s.heads, T = s.seq, hd = s.head_dim;
  return {{B, H, T, hd}, {T * row, hd, row, 1}};
}

/// lse (cuDNN's stats) [B, H, T, 1] fp32, contiguous.
Layout lse_layout(const FlashAttentionShape& s) {
  const std::int64_t B = s.batch, H = s.heads, T = s.seq;
  return {{B, H, T, 1}, {H * T, T, 1, 1}};
}

fe::graph::Tensor_attributes input_tensor(const char* name, Uid uid, const Layout& l, fe::DataType_t type) {
  return fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(l.dim).set_stride(l.stride).set_data_type(type);
}

void set_output(fe::graph::Tensor_attributes& t, Uid uid, const Layout& l) {
  t.set_output(true).set_uid(uid).set_dim(l.dim).set_stride(l.stride);
}

std::shared_ptr<fe::graph::Graph> new_graph() {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return g;
}

void build(fe::graph::Graph& g, cudnnHandle_t handle, const char* what) {
  check(g.validate(), what);
  check(g.build_operation_graph(handle), what);
  check(g.create_execution_plans({fe::HeurMode_t::A}), what);
  check(g.check_support(handle), what);
  check(g.build_plans(handle), what);
}

}  // namespace

struct CudnnAttention::Plans {
  FlashAttentionShape shape;
  cudnnHandle_t handle = nullptr;
  std::shared_ptr<fe::graph::Graph> forward, backward;
  std::size_t workspace = 0;
  ~Plans() {
    if (handle != nullptr) cudnnDestroy(handle);
  }
};

CudnnAttention::CudnnAttention(const FlashAttentionShape& shape) : plans_(std::make_unique<Plans>()) {
  if (shape.batch <= 0 || shape.seq <= 0 || shape.heads <= 0 || shape.head_dim <= 0)
    throw std::invalid_argument(fmt::format("CudnnAttention: B {}, T {}, H {}, hd {} must all be positive", shape.batch,
                                            shape.seq, shape.heads, shape.head_dim));
  Plans& p = *plans_;
  p.shape = shape;
  check(cudnnCreate(&p.handle), "creating a cuDNN handle");
  const std::int64_t d = shape.d_model();
  const float scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  const Layout qkv = rows_layout(shape, 3 * d), rows = rows_layout(shape, d), lse = lse_layout(shape);
  const auto bf16_in = [](fe::graph::Graph& g, const char* name, Uid uid, const Layout& l) {
    return g.tensor(input_tensor(name, uid, l, fe::DataType_t::BFLOAT16));
  };

  {  // forward: (y, lse) = sdpa(q, k, v)
    p.forward = new_graph();
    fe::graph::Graph& g = *p.forward;
    auto options = fe::graph::SDPA_attributes().set_name("attention").set_generate_stats(true).set_attn_scale(scale);
    options.set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT).set_diagonal_band_right_bound(0);  // causal
    auto [y, stats] = g.sdpa(bf16_in(g, "q", kQ, qkv), bf16_in(g, "k", kK, qkv), bf16_in(g, "v", kV, qkv), options);
    set_output(*y, kO, rows);
    set_output(*stats, kStats, lse);
    stats->set_data_type(fe::DataType_t::FLOAT);
    build(g, p.handle, "building the forward plan");
  }
  {  // backward: (dq, dk, dv) = sdpa_backward(q, k, v, y, dy, lse)
    p.backward = new_graph();
    fe::graph::Graph& g = *p.backward;
    auto options = fe::graph::SDPA_backward_attributes().set_name("attention_backward").set_attn_scale(scale);
    options.set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT).set_diagonal_band_right_bound(0);
    auto [dq, dk, dv] = g.sdpa_backward(bf16_in(g, "q", kQ, qkv), bf16_in(g, "k", kK, qkv), bf16_in(g, "v", kV, qkv),
                                        bf16_in(g, "y", kO, rows), bf16_in(g, "dy", kDo, rows),
                                        g.tensor(input_tensor("lse", kStats, lse, fe::DataType_t::FLOAT)), options);
    set_output(*dq, kDq, qkv);  // straight into the qkv gradient's row layout
    set_output(*dk, kDk, qkv);
    set_output(*dv, kDv, qkv);
    build(g, p.handle, "building the backward plan");
  }
  std::int64_t forward_bytes = 0, backward_bytes = 0;
  check(p.forward->get_workspace_size(forward_bytes), "sizing the forward workspace");
  check(p.backward->get_workspace_size(backward_bytes), "sizing the backward workspace");
  p.workspace = static_cast<std::size_t>(std::max<std::int64_t>({forward_bytes, backward_bytes, 0}));
}

CudnnAttention::~CudnnAttention() = default;

const FlashAttentionShape& CudnnAttention::shape() const { return plans_->shape; }

std::size_t CudnnAttention::workspace_bytes() const { return plans_->workspace; }

std::string CudnnAttention::library_version() {
  const std::size_t v = cudnnGetVersion();  // major·10000 + minor·100 + patch since cuDNN 9
  return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

void CudnnAttention::forward(cudaStream_t stream, const __nv_bfloat16* qkv, __nv_bfloat16* y, float* lse,
                             void* workspace) const {
  const Plans& p = *plans_;
  auto* base = const_cast<__nv_bfloat16*>(qkv);  // cuDNN's variant pack takes void*; inputs are only read
  const std::int64_t d = p.shape.d_model();
  std::unordered_map<fe::graph::Tensor_attributes::uid_t, void*> pack{
      {kQ, base}, {kK, base + d}, {kV, base + 2 * d}, {kO, y}, {kStats, lse}};
  check(cudnnSetStream(p.handle, stream), "setting the stream");
  check(p.forward->execute(p.handle, pack, workspace), "running the forward");
}

void CudnnAttention::backward(cudaStream_t stream, const __nv_bfloat16* dy, const __nv_bfloat16* qkv,
                              const __nv_bfloat16* y, const float* lse, __nv_bfloat16* dqkv, void* workspace) const {
  const Plans& p = *plans_;
  auto* base = const_cast<__nv_bfloat16*>(qkv);
  const std::int64_t d = p.shape.d_model();
  std::unordered_map<fe::graph::Tensor_attributes::uid_t, void*> pack{
      {kQ, base},
      {kK, base + d},
      {kV, base + 2 * d},
      {kO, const_cast<__nv_bfloat16*>(y)},
      {kDo, const_cast<__nv_bfloat16*>(dy)},
      {kStats, const_cast<float*>(lse)},
      {kDq, dqkv},
      {kDk, dqkv + d},
      {kDv, dqkv + 2 * d}};
  check(cudnnSetStream(p.handle, stream), "setting the stream");
  check(p.backward->execute(p.handle, pack, workspace), "running the backward");
}

}  // namespace scalescope::train::gpt_kernels
