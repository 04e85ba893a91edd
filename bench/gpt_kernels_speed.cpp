// bench_gpt_kernels_speed: the GPT's memory-bound kernels (train/cuda/gpt_kernels.h) one at a time at one preset's
// shape, one GPU: time per call and the DRAM rate its fewest bytes imply, beside a device-to-device copy of as
// many bytes (the machine's practical ceiling, measured in the same run). Default: gpt-1.3b at 8 rows (R = 8192
// positions, d 2048, ffn 8192, vocab 50304), the shape of bench_gpt_speed's gpt-1.3b runs.
//
//   bench_gpt_kernels_speed [--model gpt-1.3b] [--batch 8] [--runs 30] [--only NAME] [--json FILE]
//
// Each time is the median CUDA-event time over `runs` calls after 3 warm-up calls. Inputs repeat a block of 2^20
// random values. The in-place kernels (the GELU
// backwards, cross-entropy) run again on what their previous call wrote: the values drift, the bytes and the work
// do not. `--only NAME` times one kernel (for a profiler: `ncu -k regex:NAME bench_gpt_kernels_speed --only NAME
// --runs 1`). Fewest bytes per call (bf16 activations, fp32 statistics; R rows of width d or ffn):
//   layernorm_forward   read x, write y: 4·R·d, + mean and rstd 8·R
//   layernorm_backward  read dy, x and the residual gradient, write it: 8·R·d, + mean and rstd 8·R (as in the
//                       model: accumulate into the residual gradient, with the column sum of dx)
//   gelu_forward        read pre, write out: 4·R·ffn
//   gelu_backward       read grad and pre, write grad: 6·R·ffn (+ the fc bias gradient)
//   gelu_recompute_backward  read grad and pre, write both: 8·R·ffn (+ the fc bias gradient)
//   cross_entropy       read the logits, write d logits: 4·R·ld (ld = vocab rounded up to 8), + losses 4·R
//   column_sum          read x [R, 3d]: 6·R·d (the qkv bias gradient)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <stdexcept>
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
#include "train/cuda/device_buffer.h"
#include "train/cuda/gpt_kernels.h"
#include "train/gpt.h"

namespace {

using namespace scalescope;
namespace k = train::gpt_kernels;
using bf16 = __nv_bfloat16;
template <typename T>
using DeviceArray = train::cuda::DeviceArray<T>;

using bench::median_event_seconds;

/// n bf16 values ~ N(mean, stddev²) on the device: one block of up to 2^20 drawn values, repeated (drawing all
/// of gpt-1.3b's 412 M logits took seconds; a memory-bound kernel's time does not depend on the repetition).
DeviceArray<bf16> random_bf16(std::size_t n, float mean, float stddev, unsigned seed) {
  std::vector<bf16> host(std::min<std::size_t>(n, std::size_t{1} << 20));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(mean, stddev);
  for (auto& x : host) x = __float2bfloat16(normal(rng));
  DeviceArray<bf16> d(n);
  for (std::size_t at = 0; at < n; at += host.size()) {
    const std::size_t count = std::min(host.size(), n - at);
    SCALESCOPE_CUDA_CHECK(cudaMemcpy(d.get() + at, host.data(), count * sizeof(bf16), cudaMemcpyHostToDevice));
  }
  return d;
}

/// n fp32 values uniform in [lo, hi) on the device.
DeviceArray<float> random_floats(std::size_t n, float lo, float hi, unsigned seed) {
  std::vector<float> host(n);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(lo, hi);
  for (auto& x : host) x = uniform(rng);
  DeviceArray<float> d(n);
  SCALESCOPE_CUDA_CHECK(cudaMemcpy(d.get(), host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

/// The kernels timed, in order (names as --only takes them).
const std::vector<std::string> kKernelNames = {"layernorm_forward", "layernorm_backward", "gelu_forward", "gelu_backward",
                                               "gelu_recompute_backward", "cross_entropy", "column_sum"};

struct Kernel {
  std::string name;
  double bytes;
  std::function<void()> call;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_gpt_kernels_speed: the GPT's memory-bound kernels at one preset's shape, one GPU"};
  std::string model = "gpt-1.3b", only, json;
  int batch = 8, runs = 30;
  app.add_option("--model", model, "GPT preset whose widths are used")->capture_default_str();
  app.add_option("--batch", batch, "rows (each seq positions)")->capture_default_str()->check(CLI::Range(1, 4096));
  app.add_option("--runs", runs, "timed calls per kernel (median)")->capture_default_str()->check(CLI::Range(1, 100000));
  std::string names;
  for (const auto& n : kKernelNames) names += (names.empty() ? "" : ", ") + n;
  app.add_option("--only", only, "time only the kernel of this name: " + names);
  app.add_option("--json", json, "write the results as JSON to this file (atomically)");
  if (const int status = scalescope::bench::parse_flags(app, argc, argv, "bench_gpt_kernels_speed"); status >= 0) return status;
  try {
    const train::GptConfig c = train::GptConfig::preset(model);
    if (!only.empty() && std::find(kKernelNames.begin(), kKernelNames.end(), only) == kKernelNames.end())
      throw core::UsageError("--only '" + only + "' names no kernel here", "one of: " + names);
    if (!json.empty()) core::check_output_path_writable(json);
    const std::size_t R = static_cast<std::size_t>(batch) * c.seq;
    const int d = c.d_model, f = c.ffn, ld = (c.vocab + 7) / 8 * 8;
    const std::size_t Rd = R * d, Rf = R * f, Rv = R * ld;
    cudaStream_t stream = nullptr;
    SCALESCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    // Inputs with a trained model's spread: activations ~ N(0, 1), LayerNorm weights near 1, logits ~ N(0, 2²).
    auto x = random_bf16(Rd, 0.0f, 1.0f, 1), dy = random_bf16(Rd, 0.0f, 1.0f, 2), dres = random_bf16(Rd, 0.0f, 1.0f, 3);
    DeviceArray<bf16> y(Rd);
    auto w = random_floats(d, 0.9f, 1.1f, 4), b = random_floats(d, -0.1f, 0.1f, 5);
    DeviceArray<float> mean(R), rstd(R), dw(d), db(d), dbelow(d), dbias(f), dqkv_bias(3 * d), losses(R);
    auto pre = random_bf16(Rf, 0.0f, 1.0f, 6), grad = random_bf16(Rf, 0.0f, 1.0f, 7);
    DeviceArray<bf16> act(Rf);
    auto logits = random_bf16(Rv, 0.0f, 2.0f, 8), qkv = random_bf16(R * 3 * d, 0.0f, 1.0f, 9);
    std::vector<std::int32_t> host_tokens(static_cast<std::size_t>(batch) * (c.seq + 1));
    std::mt19937 rng(10);
    std::uniform_int_distribution<std::int32_t> token(0, c.vocab - 1);
    for (auto& t : host_tokens) t = token(rng);
    DeviceArray<std::int32_t> tokens(host_tokens.size());
    SCALESCOPE_CUDA_CHECK(cudaMemcpy(tokens.get(), host_tokens.data(), host_tokens.size() * sizeof(std::int32_t),
                                     cudaMemcpyHostToDevice));
    const std::size_t ws_floats = std::max({k::layernorm_backward_workspace_floats(R, d),
                                            k::column_workspace_floats(R, f, 1), k::column_workspace_floats(R, 3 * d, 1)});
    DeviceArray<float> ws(ws_floats);
    k::layernorm_forward(stream, x.get(), w.get(), b.get(), R, d, y.get(), mean.get(), rstd.get());  // real stats

    const std::vector<Kernel> kernels = {
        {"layernorm_forward", 4.0 * Rd + 8.0 * R,
         [&] { k::layernorm_forward(stream, x.get(), w.get(), b.get(), R, d, y.get(), mean.get(), rstd.get()); }},
        {"layernorm_backward", 8.0 * Rd + 8.0 * R,
         [&] {
           k::layernorm_backward(stream, dy.get(), x.get(), mean.get(), rstd.get(), w.get(), R, d, dres.get(), true,
                                 dw.get(), db.get(), dbelow.get(), ws.get(), ws.size());
         }},
        {"gelu_forward", 4.0 * Rf, [&] { k::gelu_forward(stream, pre.get(), act.get(), Rf); }},
        {"gelu_backward", 6.0 * Rf,
         [&] { k::gelu_backward_bias_grad(stream, grad.get(), pre.get(), R, f, dbias.get(), ws.get(), ws.size()); }},
        {"gelu_recompute_backward", 8.0 * Rf,
         [&] {
           k::gelu_recompute_backward_bias_grad(stream, grad.get(), pre.get(), R, f, dbias.get(), ws.get(), ws.size());
         }},
        {"cross_entropy", 4.0 * Rv + 4.0 * R,
         [&] {
           k::cross_entropy(stream, logits.get(), ld, tokens.get(), batch, c.seq, c.vocab, 1.0f / static_cast<float>(R),
                            losses.get());
         }},
        {"column_sum", 6.0 * Rd,
         [&] { k::column_sum(stream, qkv.get(), R, 3 * d, dqkv_bias.get(), ws.get(), ws.size()); }},
    };
    for (std::size_t i = 0; i < kernels.size(); ++i)
      if (kernels[i].name != kKernelNames.at(i)) throw std::logic_error("kernel list out of order: " + kernels[i].name);

    // The ceiling: a device-to-device copy of the largest kernel's bytes (half read, half written).
    const std::size_t copy_bytes = Rv * sizeof(bf16);
    DeviceArray<unsigned char> copy_dst(copy_bytes);
    const double copy_s = median_event_seconds(stream, runs, [&] {
      SCALESCOPE_CUDA_CHECK(cudaMemcpyAsync(copy_dst.get(), logits.get(), copy_bytes, cudaMemcpyDeviceToDevice, stream));
    });
    const double copy_gbps = 2.0 * static_cast<double>(copy_bytes) / copy_s / 1e9;
    fmt::print("{} at {} rows (R {}, d {}, ffn {}, ld {}); device copy of {:.0f} MB: {:.1f} GB/s (read + write)\n", model,
               batch, R, d, f, ld, copy_bytes / 1e6, copy_gbps);
    nlohmann::json out = {{"model", model}, {"batch", batch}, {"positions", R}, {"runs", runs},
                          {"copy_gbps", copy_gbps}, {"kernels", nlohmann::json::array()}};
    for (const auto& kn : kernels) {
      if (!only.empty() && kn.name != only) continue;
      const double s = median_event_seconds(stream, runs, kn.call);
      const double gbps = kn.bytes / s / 1e9;
      fmt::print("  {:<24} {:8.1f} us  {:7.1f} MB  {:7.1f} GB/s  ({:4.0f} % of the copy)\n", kn.name, s * 1e6,
                 kn.bytes / 1e6, gbps, 100.0 * gbps / copy_gbps);
      out["kernels"].push_back({{"name", kn.name}, {"us", s * 1e6}, {"bytes", kn.bytes}, {"gbps", gbps}});
    }
    SCALESCOPE_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (!json.empty()) core::write_file_atomically(json, out.dump(2) + "\n");
  } catch (const core::UsageError& e) {
    fmt::print(stderr, "bench_gpt_kernels_speed: {}{}\n", e.what(), e.remedy().empty() ? "" : " (" + e.remedy() + ")");
    return 2;
  } catch (const core::Error& e) {
    fmt::print(stderr, "bench_gpt_kernels_speed: {}\n", e.what());
    if (!e.remedy().empty()) fmt::print(stderr, "  what to do: {}\n", e.remedy());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_gpt_kernels_speed: {}\n", e.what());
    return 1;
  }
  return 0;
}
