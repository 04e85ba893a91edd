// bench_gpt_speed: training speed of the CUDA GPT (GptCuda) on one GPU, for comparison with the PyTorch peer
// (bench/peers/gpt_pytorch.py, same architecture, batch, protocol and machine).
//
//   bench_gpt_speed --model gpt2-124m --batch 16 [--layers K] [--data PATH|synthetic|random] [--json FILE]
//                   [--kernel-trace FILE]
//
// Data (--data, as `scalescope train`): by default real text — byte-level tokens of $SCALESCOPE_DATA, else
// /usr/share/games/fortunes — in rows drawn by train::BatchSampler, a fresh batch each step; `synthetic` is
// random bytes, `random` token ids uniform over the whole vocabulary (this benchmark's data until 2026-12-01).
// The peer takes the same --data, so both sides train on the same kind of tokens.
//
// Protocol (the project's): a step is stage_batch + forward + backward + AdamW; 3 warm-up rounds, then 5 timed
// rounds of 10 steps, each round timed with CUDA events on the compute stream; the step time is the mean of
// the middle 3 rounds (sorted) divided by 10. tokens/s = rows·seq / step time.
//
// MFU = achieved model FLOP/s (GptConfig::flops_per_token × tokens/s) / the bf16 GEMM rate measured in the
// same process: cuBLASLt D = A·B, 8192³, bf16 in and out, fp32 accumulate (the rate a perfect training step
// could approach), rather than the datasheet peak.
//
// Memory: `model` is what GptCuda holds (GptCuda::device_bytes(): every buffer is live for the whole step,
// so this is also its peak) — the counterpart of PyTorch's torch.cuda.max_memory_allocated(), which counts
// the peak of live tensor bytes but not the caching allocator's free blocks (max_memory_reserved counts
// those) nor the CUDA context or cuBLAS workspaces. `device` is the drop in cudaMemGetInfo's free memory from
// before the model was built to the lowest point during the run: ours plus the cuBLASLt workspace, the
// runtime's own allocations and cudaMalloc's page granularity — the counterpart of max_memory_reserved.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>
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
#include "gpu/cupti_tracer.h"
#include "train/cuda/cudnn_attention.h"
#include "train/cuda/gpt_cuda.h"
#include "train/cuda/lt_matmul.h"
#include "train/gpt.h"
#include "train/kernel_trace.h"
#include "train/text_data.h"

namespace {

using namespace scalescope;
using train::GptConfig;
using train::GptCuda;

/// Measured bf16 GEMM rate (FLOP/s) of cuBLASLt on an n³ product, mean over 20 runs after 3 warm-ups.
double measure_gemm_flops(cudaStream_t stream, int n) {
  const std::size_t elements = static_cast<std::size_t>(n) * n;
  __nv_bfloat16 *a = nullptr, *b = nullptr, *d = nullptr;
  SCALESCOPE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&a), elements * sizeof(__nv_bfloat16)));
  SCALESCOPE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&b), elements * sizeof(__nv_bfloat16)));
  SCALESCOPE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d), elements * sizeof(__nv_bfloat16)));
  // Small values (bit pattern 0x3C00 ≈ 0.0078) so the products stay finite; the rate does not depend on them.
  SCALESCOPE_CUDA_CHECK(cudaMemsetAsync(a, 0x3C, elements * sizeof(__nv_bfloat16), stream));
  SCALESCOPE_CUDA_CHECK(cudaMemsetAsync(b, 0x3C, elements * sizeof(__nv_bfloat16), stream));
  double seconds = 0;
  {
    train::cuda::LtMatmul gemm;
    const train::cuda::GemmSpec g = train::cuda::packed_gemm(n, n, n, a, b, d);
    for (int i = 0; i < 3; ++i) gemm.run(stream, g);
    cudaEvent_t start = nullptr, stop = nullptr;
    SCALESCOPE_CUDA_CHECK(cudaEventCreate(&start));
    SCALESCOPE_CUDA_CHECK(cudaEventCreate(&stop));
    const int runs = 20;
    SCALESCOPE_CUDA_CHECK(cudaEventRecord(start, stream));
    for (int i = 0; i < runs; ++i) gemm.run(stream, g);
    SCALESCOPE_CUDA_CHECK(cudaEventRecord(stop, stream));
    SCALESCOPE_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    SCALESCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    seconds = ms / 1e3 / runs;
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  SCALESCOPE_CUDA_CHECK(cudaFree(a));
  SCALESCOPE_CUDA_CHECK(cudaFree(b));
  SCALESCOPE_CUDA_CHECK(cudaFree(d));
  return 2.0 * n * static_cast<double>(n) * n / seconds;
}

std::size_t free_bytes() {
  std::size_t free = 0, total = 0;
  SCALESCOPE_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

double gib(double bytes) { return bytes / (1024.0 * 1024.0 * 1024.0); }

/// The token rows of each step: `rows` × `row_tokens` int32 ids, a fresh batch per step.
/// `data`: "random" (ids uniform over [0, vocab), seeded), "synthetic" (random bytes, as `train --data
/// synthetic`), or a text file, directory or token file read by train::TextCorpus; "" = $SCALESCOPE_DATA, else
/// train::kDefaultTextDirectory. Throws core::Error when the data cannot be read or holds ids ≥ vocab.
class StepBatches {
 public:
  StepBatches(std::string data, const std::string& model, int vocab, int rows, int row_tokens)
      : rows_(rows), row_tokens_(row_tokens), token_(0, vocab - 1) {
    const char* env = std::getenv("SCALESCOPE_DATA");
    const bool from_env = data.empty() && env != nullptr && *env != '\0';
    if (from_env) data = env;
    if (data == "random") {
      description_ = fmt::format("random: token ids uniform over the vocabulary of {}", vocab);
      return;
    }
    try {
      corpus_ = std::make_unique<train::TextCorpus>(
          train::TextCorpus::from_data_option(data, static_cast<std::size_t>(row_tokens), kSeed));
    } catch (const core::Error& e) {
      if (!from_env) throw;
      throw core::Error(std::string(e.what()) + " (the path is $SCALESCOPE_DATA's)",
                        "unset SCALESCOPE_DATA or point it at text, or pass --data; " + e.remedy());
    }
    corpus_->require_vocabulary(vocab, model);
    sampler_ = std::make_unique<train::BatchSampler>(*corpus_, row_tokens, kSeed);
    description_ = corpus_->description();
  }
  /// The batch of step `step` (valid until the next call).
  const std::vector<std::int32_t>& next(std::int64_t step) {
    if (sampler_) {
      sampler_->fill(step, 0, rows_, rows_data_);
    } else {
      rows_data_.resize(static_cast<std::size_t>(rows_) * static_cast<std::size_t>(row_tokens_));
      for (auto& t : rows_data_) t = token_(rng_);
    }
    return rows_data_;
  }
  const std::string& description() const { return description_; }

 private:
  static constexpr std::uint64_t kSeed = 42;  // corpus, rows and random ids alike, as `train`'s default data seed
  int rows_, row_tokens_;
  std::unique_ptr<train::TextCorpus> corpus_;
  std::unique_ptr<train::BatchSampler> sampler_;
  std::mt19937 rng_{kSeed};
  std::uniform_int_distribution<std::int32_t> token_;
  std::vector<std::int32_t> rows_data_;
  std::string description_;
};

struct Options {
  std::string model = "gpt2-124m";
  int batch = 16;
  int layers = 0;  // 0: the preset's
  bool keep_activations = false;
  std::string attention;  // "" = cuDNN's fused attention where built in, else flash
  int warmup_rounds = 3, rounds = 5, steps_per_round = 10;
  int gemm_size = 8192;
  std::string data;  // "" = the default text
  std::string json;
  std::string kernel_trace;  // after timing, one more round traced by CUPTI into this Kineto-format file
  int trace_steps = 5;
};

nlohmann::json run(const Options& o) {
  GptConfig config = GptConfig::preset(o.model);
  if (o.layers > 0) config.layers = o.layers;
  config.recompute_activations = !o.keep_activations;
  config.choose_attention(o.attention);
  config.validate();
  if (o.batch < 1) throw core::UsageError("--batch must be ≥ 1");
  if (o.rounds < 3) throw core::UsageError("--rounds must be ≥ 3 (the middle rounds are averaged)");
  for (const std::string& path : {o.json, o.kernel_trace})  // before minutes of measuring, not after
    if (!path.empty()) core::check_output_path_writable(path);
  core::check_outputs_differ(o.json, "--json", o.kernel_trace, "--kernel-trace");
  std::unique_ptr<train::KernelTracer> tracer;
  if (!o.kernel_trace.empty()) {
    tracer = gpu::make_cupti_tracer();  // registers nothing until start()
    if (!tracer) throw core::Error("this build has no CUPTI, so --kernel-trace is unavailable", "build with CUPTI (CUDA::cupti) or drop --kernel-trace");
  }

  const auto memory = config.memory_per_rank(o.batch);
  fmt::print("{}; {}: {:.2f} M parameters, {:.3f} GFLOP per token (6N + 12LTd), memory per rank at batch {}: {:.2f} GiB "
             "(weights, gradients, AdamW, bf16 copies {:.2f} GiB; activations {:.2f} GiB)\n",
             config.describe(), config.gpu_attention(), static_cast<double>(config.parameter_count()) / 1e6, config.flops_per_token() / 1e9,
             o.batch, gib(memory.total()), gib(memory.total() - memory.activations), gib(memory.activations));
  const int row_tokens = config.seq + 1;
  StepBatches batches(o.data, o.model, config.vocab, o.batch, row_tokens);  // before the GPU: bad data fails at once
  fmt::print("data: {}\n", batches.description());
  cudaDeviceProp prop{};
  SCALESCOPE_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t stream = nullptr;
  SCALESCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const double gemm_flops = measure_gemm_flops(stream, o.gemm_size);

  const std::size_t free_before = free_bytes();
  std::size_t free_low = free_before;
  GptCuda model(config, stream);
  std::vector<std::size_t> offsets;  // reverse order, as DDP's buckets lay them out
  std::size_t total = 0;
  offsets.assign(model.parameters().size(), 0);
  for (std::size_t i = model.parameters().size(); i-- > 0;) {
    offsets[i] = total;
    total += model.parameters()[i].numel;
  }
  model.allocate_gradients(offsets, total);

  train::AdamWConfig adam;
  adam.learning_rate = 1e-4f;
  adam.weight_decay = 0.1f;

  cudaEvent_t start = nullptr, stop = nullptr;
  SCALESCOPE_CUDA_CHECK(cudaEventCreate(&start));
  SCALESCOPE_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> round_step_ms;
  std::vector<float> losses;
  int step = 0;
  const auto train_step = [&] {  // one step of the protocol: stage, forward, backward, AdamW
    model.stage_batch({o.batch, row_tokens, batches.next(step++).data()});
    model.forward();
    model.backward([](std::size_t) {});
    model.optimizer_step(adam);
  };
  for (int round = 0; round < o.warmup_rounds + o.rounds; ++round) {
    SCALESCOPE_CUDA_CHECK(cudaEventRecord(start, stream));
    for (int s = 0; s < o.steps_per_round; ++s) train_step();
    SCALESCOPE_CUDA_CHECK(cudaEventRecord(stop, stream));
    SCALESCOPE_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    SCALESCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (round >= o.warmup_rounds) round_step_ms.push_back(ms / o.steps_per_round);
    const auto l = model.take_losses();
    losses.insert(losses.end(), l.begin(), l.end());
    free_low = std::min(free_low, free_bytes());
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  // After the timed rounds, so the recorder's overhead enters no figure; a recorder or file error is reported
  // and the measured result is kept.
  if (tracer) try {
    SCALESCOPE_CUDA_CHECK(cudaStreamSynchronize(stream));
    tracer->start();
    std::vector<train::TracedStep> steps;
    for (int s = 0; s < o.trace_steps; ++s) {
      train::TracedStep traced;
      traced.begin_ns = tracer->now_ns();
      train_step();
      traced.end_ns = tracer->now_ns();
      steps.push_back(traced);
    }
    SCALESCOPE_CUDA_CHECK(cudaStreamSynchronize(stream));
    model.take_losses();
    train::KernelTrace trace = tracer->stop();
    const std::uint32_t host_thread = trace.api_calls.empty() ? 0 : trace.api_calls.front().thread;
    for (auto& s : steps) s.thread = host_thread;
    trace.steps = std::move(steps);
    core::write_file_atomically(o.kernel_trace, train::kernel_trace_json(trace));
    fmt::print("kernel trace of {} more steps ({} kernels): {}\n", o.trace_steps, trace.kernels.size(), o.kernel_trace);
  } catch (const core::Error& e) {
    std::fprintf(stderr, "bench_gpt_speed: warning: no kernel trace written (%s); the measured figures are kept\n", e.what());
  }

  std::vector<double> sorted = round_step_ms;
  std::sort(sorted.begin(), sorted.end());
  const double step_ms = std::accumulate(sorted.begin() + 1, sorted.end() - 1, 0.0) / static_cast<double>(sorted.size() - 2);
  const double tokens_per_step = static_cast<double>(o.batch) * config.seq;
  const double tokens_per_s = tokens_per_step / (step_ms / 1e3);
  const double achieved = config.flops_per_token() * tokens_per_s;
  const double held = static_cast<double>(model.device_bytes());
  const double device_used = static_cast<double>(free_before - free_low);
  const double estimate = memory.total();

  const bool finite = std::all_of(losses.begin(), losses.end(), [](float x) { return std::isfinite(x); });
  fmt::print("{} (layers {}) batch {}: {:.1f} k tokens/s, step {:.2f} ms, {:.1f} TFLOP/s, MFU {:.1f} % of measured bf16 GEMM "
             "{:.0f} TFLOP/s; memory: model {:.2f} GiB (estimate {:.2f}), device {:.2f} GiB; loss {:.3f} → {:.3f}{}\n",
             o.model, config.layers, o.batch, tokens_per_s / 1e3, step_ms, achieved / 1e12, 100 * achieved / gemm_flops,
             gemm_flops / 1e12, gib(held), gib(estimate), gib(device_used), losses.front(), losses.back(),
             finite ? "" : " (NON-FINITE LOSS)");

  nlohmann::json j;
  j["schema"] = "scalescope.gpt_speed/1";
  j["implementation"] = "scalescope GptCuda (bf16, cuBLASLt)";
  j["device"] = prop.name;
  j["model"] = o.model;
  j["describe"] = model.describe();
  j["layers"] = config.layers;
  j["recompute_activations"] = config.recompute_activations;
  j["flash_attention"] = config.uses_flash_attention();
  j["attention"] = config.gpu_attention_kernels();
  if (config.uses_cudnn_attention()) j["cudnn_version"] = train::gpt_kernels::CudnnAttention::library_version();
  j["batch"] = o.batch;
  j["data"] = batches.description();
  j["seq"] = config.seq;
  j["parameters"] = config.parameter_count();
  j["flops_per_token"] = config.flops_per_token();
  j["protocol"] = {{"warmup_rounds", o.warmup_rounds}, {"rounds", o.rounds}, {"steps_per_round", o.steps_per_round}};
  j["round_step_ms"] = round_step_ms;
  j["step_ms"] = step_ms;
  j["tokens_per_s"] = tokens_per_s;
  j["achieved_flops"] = achieved;
  j["gemm_flops"] = gemm_flops;
  j["gemm_size"] = o.gemm_size;
  j["mfu"] = achieved / gemm_flops;
  j["memory"] = {{"model_bytes", held}, {"device_used_bytes", device_used}, {"estimate_bytes", estimate}};
  j["loss_first"] = losses.front();
  j["loss_last"] = losses.back();
  j["losses_finite"] = finite;
  SCALESCOPE_CUDA_CHECK(cudaStreamSynchronize(stream));
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_gpt_speed: tokens/s, step time, MFU and memory of the CUDA GPT on one GPU"};
  Options o;
  app.add_option("--model", o.model, "GPT preset: " + fmt::format("{}", fmt::join(GptConfig::preset_names(), ", ")));
  app.add_option("--batch", o.batch, "rows per step (each seq + 1 tokens)")->check(CLI::Range(1, 1 << 20));
  app.add_option("--layers", o.layers, "override the preset's layer count (0: keep)")->check(CLI::Range(0, 1000));
  app.add_flag("--keep-activations", o.keep_activations,
               "keep GELU outputs (and, on the GEMM attention path, attention probabilities) for backward (default: "
               "recompute them)");
  app.add_option("--attention", o.attention,
                 "cudnn (cuDNN's fused kernels) or flash (this project's) where the head width allows, or gemm; "
                 "default cudnn where built in, else flash")
      ->check(CLI::IsMember({"cudnn", "flash", "gemm"}));
  app.add_option("--warmup-rounds", o.warmup_rounds, "discarded rounds")->check(CLI::Range(0, 1000));
  app.add_option("--rounds", o.rounds, "timed rounds (the middle ones are averaged; 3 to 1000)")->check(CLI::Range(3, 1000));
  app.add_option("--steps-per-round", o.steps_per_round, "steps per round")->check(CLI::Range(1, 100000));
  app.add_option("--gemm-size", o.gemm_size, "n of the n³ bf16 GEMM whose rate is MFU's denominator (256 to 32768)")
      ->check(CLI::Range(256, 32768));
  app.add_option("--data", o.data,
                 "training tokens: a text file or directory, an llm.c/nanoGPT .bin token file, 'synthetic' (random "
                 "bytes) or 'random' (ids uniform over the vocabulary); default $SCALESCOPE_DATA, else "
                 "/usr/share/games/fortunes");
  app.add_option("--json", o.json, "write the result as JSON to this file (atomically)");
  CLI::Option* trace_option = app.add_option("--kernel-trace", o.kernel_trace,
                 "after timing, trace --trace-steps more steps with CUPTI into this Kineto-format JSON file "
                 "(read by `scalescope analyze` and bench/kernel_diff.py)");
  app.add_option("--trace-steps", o.trace_steps, "steps traced by --kernel-trace (1 to 100)")
      ->check(CLI::Range(1, 100))->needs(trace_option);
  if (const int status = scalescope::bench::parse_flags(app, argc, argv, "bench_gpt_speed"); status >= 0) return status;
  try {
    const nlohmann::json j = run(o);
    if (!o.json.empty()) core::write_file_atomically(o.json, j.dump(2) + "\n");
    return 0;
  } catch (const core::Error& e) {
    std::fprintf(stderr, "bench_gpt_speed: error: %s\n", e.what());
    if (!e.remedy().empty()) std::fprintf(stderr, "  what to do: %s\n", e.remedy().c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpt_speed: error: %s\n", e.what());
    return 1;
  }
}
