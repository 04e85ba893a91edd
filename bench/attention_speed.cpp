// bench_attention_speed: one layer's causal attention, forward and backward, through the fused flash-attention
// kernels, cuDNN's fused attention (where built in: train/cuda/cudnn_attention.h) and the GEMM path (cuBLASLt
// batched GEMMs around the softmax kernels, probabilities recomputed in backward) on the same random inputs, one
// GPU. Shapes default to the GPT presets' at their bench batches:
// gpt2-124m (16 rows × 1024 tokens, 12 heads × 64) and gpt-1.3b (8 × 1024, 16 heads × 128).
//
//   bench_attention_speed [--shape B,T,H,hd]… [--runs 20] [--json FILE]
//
// Each timing is the median over `runs` calls of CUDA-event time after 3 warm-up calls. FLOPs are the causal
// products actually needed (a query sees T(T+1)/2 keys per head on average over the rows): forward 2 products
// (q·kᵀ and P·v), backward 5 (q·kᵀ again, dP = dy·vᵀ, dv, dk, dq), 2·hd FLOPs per (query, key) pair each —
// 4·B·H·hd·T(T+1)/2 forward and 10·B·H·hd·T(T+1)/2 backward. The GEMM path computes more than that (its query
// chunks cover up to 5/8 of T×T at T = 1024 instead of ~1/2); the rate is always against the causal count.
// Fewest bytes: forward reads q, k, v and writes y and lse; backward reads q, k, v, y, dy, lse and writes dqkv.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_flags.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "gpu/cuda_check.h"
#include "median_event_time.h"
#include "train/cuda/cudnn_attention.h"
#include "train/cuda/device_buffer.h"
#include "train/cuda/flash_attention.h"
#include "train/cuda/gpt_kernels.h"
#include "train/cuda/lt_matmul.h"

namespace {

using namespace scalescope;
namespace k = train::gpt_kernels;
using bf16 = __nv_bfloat16;

using bench::median_event_seconds;

using Shape = k::FlashAttentionShape;  // B, T, H, hd; also the flash kernels' shape
template <typename T>
using DeviceArray = train::cuda::DeviceArray<T>;

nlohmann::json measure(cudaStream_t stream, const Shape& s, int runs) {
  const int d = s.heads * s.head_dim, hdp = (s.head_dim + 7) / 8 * 8;
  const std::size_t R = static_cast<std::size_t>(s.batch) * s.seq;
  const k::AttentionShape gemm_shape{s.batch, s.seq, s.heads, s.head_dim, hdp, s.seq > 256 ? 256 : s.seq};
  // Inputs ~ N(0, 1) in bf16, so the scores have the spread of a trained model's (σ ≈ 1 after the 1/√hd).
  std::vector<bf16> host(R * 3 * d);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto& x : host) x = __float2bfloat16(normal(rng));
  DeviceArray<bf16> qkv_buffer(R * 3 * d), dy_buffer(R * d), y_buffer(R * d), dqkv_buffer(R * 3 * d);
  DeviceArray<float> lse_buffer(R * s.heads);
  bf16 *qkv = qkv_buffer.get(), *dy = dy_buffer.get(), *y = y_buffer.get(), *dqkv = dqkv_buffer.get();
  float* lse = lse_buffer.get();
  SCALESCOPE_CUDA_CHECK(cudaMemcpy(qkv, host.data(), host.size() * sizeof(bf16), cudaMemcpyHostToDevice));
  SCALESCOPE_CUDA_CHECK(cudaMemcpy(dy, host.data(), R * d * sizeof(bf16), cudaMemcpyHostToDevice));
  nlohmann::json j = {{"batch", s.batch}, {"seq", s.seq}, {"heads", s.heads}, {"head_dim", s.head_dim}};
  const double pairs = static_cast<double>(s.batch) * s.heads * s.seq * (s.seq + 1.0) / 2.0;
  const double fwd_flops = 4.0 * s.head_dim * pairs, bwd_flops = 10.0 * s.head_dim * pairs;
  const double fwd_bytes = 2.0 * R * (3 * d + d) + 4.0 * R * s.heads;
  const double bwd_bytes = 2.0 * R * (3 * d + 2 * d + 3 * d) + 4.0 * R * s.heads;
  const auto record = [&](const char* name, double fwd, double bwd) {
    j[name] = {{"forward_ms", fwd * 1e3}, {"backward_ms", bwd * 1e3},
               {"forward_tflops", fwd_flops / fwd / 1e12}, {"backward_tflops", bwd_flops / bwd / 1e12},
               {"forward_gbps_floor", fwd_bytes / fwd / 1e9}, {"backward_gbps_floor", bwd_bytes / bwd / 1e9}};
    fmt::print("  {:<6} forward {:7.3f} ms ({:5.1f} TFLOP/s)  backward {:7.3f} ms ({:5.1f} TFLOP/s)\n", name, fwd * 1e3,
               fwd_flops / fwd / 1e12, bwd * 1e3, bwd_flops / bwd / 1e12);
  };
  fmt::print("B {} T {} H {} hd {}: causal forward {:.1f} GFLOP, backward {:.1f} GFLOP\n", s.batch, s.seq, s.heads,
             s.head_dim, fwd_flops / 1e9, bwd_flops / 1e9);
  if (k::flash_attention_supported(s.head_dim)) {
    DeviceArray<float> work(k::flash_attention_workspace_floats(s));
    const double fwd = median_event_seconds(stream, runs, [&] { k::flash_attention_forward(stream, qkv, s, y, lse); });
    const double bwd = median_event_seconds(stream, runs, [&] {
      k::flash_attention_backward(stream, dy, qkv, y, lse, s, work.get(), work.size(), dqkv);
    });
    record("flash", fwd, bwd);
  }
  if (k::flash_attention_supported(s.head_dim) && k::cudnn_attention_built()) {
    const k::CudnnAttention plans(s);  // built before timing
    DeviceArray<unsigned char> work(plans.workspace_bytes());
    const double fwd = median_event_seconds(stream, runs, [&] { plans.forward(stream, qkv, y, lse, work.get()); });
    const double bwd = median_event_seconds(stream, runs, [&] { plans.backward(stream, dy, qkv, y, lse, dqkv, work.get()); });
    record("cudnn", fwd, bwd);
  }
  {
    train::cuda::LtMatmul gemm;
    DeviceArray<bf16> qkvh_buffer(3 * gemm_shape.head_elements()), heads_buffer(gemm_shape.head_elements());
    DeviceArray<bf16> scores_buffer(gemm_shape.score_elements()), dscores_buffer(gemm_shape.score_elements());
    DeviceArray<bf16> dqkvh_buffer(3 * gemm_shape.head_elements());
    bf16 *qkvh = qkvh_buffer.get(), *heads = heads_buffer.get(), *scores = scores_buffer.get();
    bf16 *dscores = dscores_buffer.get(), *dqkvh = dqkvh_buffer.get();
    const double fwd = median_event_seconds(stream, runs, [&] {
      k::attention_forward(stream, gemm, qkv, gemm_shape, qkvh, scores, lse, heads, y);
    });
    const double bwd = median_event_seconds(stream, runs, [&] {
      k::attention_backward(stream, gemm, dy, qkvh, lse, gemm_shape, scores, heads, dscores, dqkvh, dqkv);
    });
    record("gemm", fwd, bwd);
  }
  return j;
}

Shape parse_shape(const std::string& text) {
  Shape s{};
  int used = 0;
  if (std::sscanf(text.c_str(), "%d,%d,%d,%d%n", &s.batch, &s.seq, &s.heads, &s.head_dim, &used) != 4 ||
      used != static_cast<int>(text.size()) || s.batch < 1 || s.seq < 1 || s.heads < 1 || s.head_dim < 1)
    throw core::UsageError("--shape '" + text + "' is not B,T,H,hd with positive integers", "e.g. --shape 16,1024,12,64");
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_attention_speed: fused flash attention vs the GEMM path, one layer, forward and backward"};
  std::vector<std::string> shapes{"16,1024,12,64", "8,1024,16,128"};
  int runs = 20;
  std::string json;
  app.add_option("--shape", shapes, "B,T,H,hd (repeatable; default: gpt2-124m at 16 rows and gpt-1.3b at 8)");
  app.add_option("--runs", runs, "timed calls per measurement (median)")->check(CLI::Range(1, 100000));
  app.add_option("--json", json, "write the results as JSON to this file");
  if (const int status = scalescope::bench::parse_flags(app, argc, argv, "bench_attention_speed"); status >= 0) return status;
  try {
    std::vector<Shape> parsed;  // every shape checked before the first is timed
    for (const auto& text : shapes) parsed.push_back(parse_shape(text));
    if (!json.empty()) core::check_output_path_writable(json);
    cudaStream_t stream = nullptr;
    SCALESCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    nlohmann::json all = nlohmann::json::array();
    for (const Shape& s : parsed) all.push_back(measure(stream, s, runs));
    if (!json.empty()) core::write_file_atomically(json, all.dump(2) + "\n");
  } catch (const core::Error& e) {
    fmt::print(stderr, "bench_attention_speed: {}\n", e.what());
    if (!e.remedy().empty()) fmt::print(stderr, "  what to do: {}\n", e.remedy());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_attention_speed: {}\n", e.what());
    return 1;
  }
  return 0;
}
