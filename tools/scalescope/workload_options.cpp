#include "workload_options.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include "core/atomic_file.h"

#include "core/error.h"
#include "core/stats.h"
#include "train/backend.h"

namespace scalescope::cli {

CLI::Validator number_check(bool zero_allowed, double at_most) {
  // CLI11's PositiveNumber says "Value 0 not in range 0.000000 to 1797693134862315708145…" (309 digits).
  return CLI::Validator(
      [zero_allowed, at_most](std::string& text) -> std::string {
        double x = 0;
        if (!CLI::detail::lexical_cast(text, x)) return "'" + text + "' is not a number";
        if (zero_allowed ? !(x >= 0) : !(x > 0)) return text + (zero_allowed ? " must be ≥ 0" : " must be positive");
        if (!std::isfinite(x)) return text + " is not a finite number";
        if (x > at_most) return fmt::format("{} is more than {:.15g}, the most this option takes", text, at_most);
        return {};
      },
      zero_allowed ? "NONNEGATIVE" : "POSITIVE");
}

CLI::Validator output_file_check() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text.empty()) return "needs a file name (got an empty one)";
        // CLI11 hands an option the next word even when it is a flag: `--out --overlap-optimizer` would write a
        // file of that name and run without the option.
        if (text.starts_with("-"))
          return "took '" + text + "' as its file name, which looks like a flag; give the file right after it (a "
                 "name starting with '-' can be given as ./" + text + ")";
        return "";
      },
      "FILE");
}

void check_kernel_trace_dir(const std::string& dir, train::TrainJobConfig config) {
  if (dir.empty()) throw core::UsageError("--kernel-trace needs a directory name", "e.g. --kernel-trace traces");
  // CLI11 hands an option the next word even when it is a flag: `--kernel-trace --model x` would trace into a
  // directory named "--model" and train the default model.
  if (dir.starts_with("-"))
    throw core::UsageError(fmt::format("--kernel-trace took '{}' as its directory, which looks like a flag", dir),
                           "give the directory right after --kernel-trace; a directory whose name starts with "
                           "'-' can be given as ./" + dir);
  config.kernel_trace_dir = dir;
  config.validate();  // CPU ranks: a usage error before anything runs
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec))
    throw core::UsageError(fmt::format("--kernel-trace '{}' exists and is not a directory", dir),
                           "pass a directory, e.g. --kernel-trace traces");
}

void check_outputs(const std::vector<core::RunOutput>& outputs, const train::TrainJobConfig& config) {
  core::check_run_outputs(outputs, {{config.data == "synthetic" ? "" : config.data, "the training data"}});
}

void add_workload_options(CLI::App& app, WorkloadFlags& f) {
  app.add_option("--backend", f.backend, "cpu (MPI ranks, one core each), gpu (NCCL, one GPU per rank) or auto")
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}))->capture_default_str();
  std::string presets;
  for (const auto& n : train::ModelSpec::preset_names()) presets += (presets.empty() ? "" : ", ") + n;
  app.add_option("--model", f.model,
                 "model preset: auto (mlp-10m on CPU, mlp-100m on GPU), MLP language models or GPT decoders: " + presets)
      ->capture_default_str();
  app.add_option("--context", f.context, "override: bytes of context per example")
      ->check(number_check(false));
  app.add_option("--embed", f.embed, "override: embedding width per context byte")
      ->check(number_check(false));
  app.add_option("--hidden", f.hidden, "override: hidden layer width")
      ->check(number_check(false));
  app.add_option("--layers", f.layers, "override: hidden layers (MLP) or transformer blocks (GPT: fewer than the preset's give a slice of it, more a "
                 "deeper model of the same widths)")
      ->check(number_check(false));
  app.add_option("--seq", f.seq, "override (GPT): context length in tokens")->check(number_check(false));
  app.add_flag("--keep-activations", f.keep_activations,
               "GPT on GPU: keep each layer's GELU output (and, on the GEMM attention path: --attention gemm, or a "
               "head width other than 64 and 128 such as tiny-14m's, its attention probabilities) for backward "
               "instead of recomputing them (a faster step for more memory)");
  app.add_option("--attention", f.attention,
                 "GPT on GPU: cudnn (cuDNN's fused flash attention), flash (this project's fused kernels) — both "
                 "for head widths 64 and 128, no T×T tensor in memory; other widths use the GEMMs — or gemm "
                 "(cuBLASLt batched GEMMs around a softmax kernel); default cudnn where this build has cuDNN, "
                 "else flash")
      ->check(CLI::IsMember({"cudnn", "flash", "gemm"}));
  app.add_option("--batch", f.batch,
                 "batch rows: per rank (weak scaling) or global (--strong); default: the preset's (MLP 64 on CPU, "
                 "8192 on GPU; GPT on GPU tiny-14m 64, gpt2-124m 16, gpt-1.3b 8 …; GPT on CPU 2)")
      ->check(number_check(false));
  app.add_flag("--strong", f.strong, "strong scaling: fixed global batch split over the ranks (default: weak)");
  app.add_option("--first-bucket-mb", f.first_bucket_mib, "first gradient bucket size, MiB (DDP default 1)")
      ->check(number_check(false))->capture_default_str();
  app.add_option("--bucket-cap-mb", f.bucket_cap_mib, "gradient bucket cap, MiB (DDP's bucket_cap_mb, default 25)")
      ->check(number_check(false))->capture_default_str();
  app.add_flag("--no-overlap", f.no_overlap, "start the all-reduces only after the whole backward");
  app.add_flag("--overlap-optimizer", f.overlap_optimizer,
               "run AdamW on the parameters outside the last gradient bucket while that bucket (a GPT's tied "
               "embedding) is still being all-reduced, then on the last bucket's: same update, less exposed "
               "communication (as PyTorch's experimental DDP optimizer-in-backward). Measured on 2 x H200: AdamW "
               "slows by about as much beside the all-reduce (gpt2-124m no gain, gpt-1.3b -0.2 to -0.7 %)");
  app.add_option("--embedding-exchange", f.embedding_exchange,
                 "GPT, 2 or more ranks: all-reduce the tied token embedding's gradient whole once backward has "
                 "finished it (all-reduce, as DDP), or all-reduce its output-head part as soon as it is ready and "
                 "all-gather the ranks' tokens and embedding-output gradients at the end (all-gather, as Horovod "
                 "does for sparse gradients); auto picks all-gather when it moves fewer bytes after backward. all-gather is "
                 "refused with --overlap-optimizer, and auto then all-reduces")
      ->check(CLI::IsMember({"auto", "all-reduce", "all-gather"}))->capture_default_str();
  app.add_flag("--cuda-graph", f.cuda_graph,
               "GPU, GPT: capture each step's forward, backward and all-reduces into a CUDA graph after 3 eager "
               "steps and replay it (less launch work; phases stay timed by CUDA events). Measured: tiny-14m 4 % "
               "faster at 2 GPUs, gpt2-124m -1.0 % at 1 GPU and +0.3 % at 2, gpt-1.3b -0.3 to -0.5 % (bench/RESULTS.md, 2026-11-30, second session)");
  app.add_option("--stream-priority", f.stream_priority,
                 "GPU: which CUDA stream the GPU schedules first while all-reduces overlap backward: equal (as "
                 "PyTorch DDP), comm (NCCL's, like ProcessGroupNCCL's is_high_priority_stream) or compute")
      ->check(CLI::IsMember({"equal", "comm", "compute"}))->capture_default_str();
  app.add_option("--data", f.data,
                 "training data: a text file or directory of text files, an llm.c or nanoGPT .bin token file, or "
                 "'synthetic' for random bytes "
                 "(default: $SCALESCOPE_DATA, else /usr/share/games/fortunes from the Debian package 'fortunes')");
  app.add_option("--warmup-rounds", f.warmup_rounds, "rounds run and discarded before timing (seed: ≥ 3)")
      ->check(number_check(true, core::MeasurementProtocol::kMaxRounds))->capture_default_str();
  app.add_option("--rounds", f.timed_rounds, "timed rounds (seed: 5; headline = mean of the middle 3)")
      ->check(number_check(false, core::MeasurementProtocol::kMaxRounds))->capture_default_str();
  app.add_option("--steps-per-round", f.steps_per_round, "training steps per round")
      ->check(number_check(false, core::MeasurementProtocol::kMaxStepsPerRound))->capture_default_str();
  app.add_option("--lr", f.learning_rate, "AdamW learning rate")
      ->check(number_check(false))->capture_default_str();
  app.add_option("--timeout", f.timeout_seconds, "stop a run whose ranks take longer than this, seconds (0: never)")
      ->check(number_check(true))->capture_default_str();
  app.add_flag("-q,--quiet", f.quiet, "no progress messages on stderr");
  // Test hooks, hidden from --help: prove that rank failures and wrong averages are caught.
  app.add_option("--internal-fault", f.fault, "")->group("");
  app.add_option("--internal-gradient-reduction", f.gradient_reduction, "")
      ->check(CLI::IsMember({"average", "sum"}))->group("");
}

int default_batch(const train::ModelSpec& model, bool gpu) {
  if (model.family == train::ModelFamily::mlp) return gpu ? 8192 : 64;
  if (!gpu) return 2;
  if (model.name == "tiny-14m") return 64;
  if (model.name == "gpt2-124m" || model.name == "gpt-350m") return 16;
  if (model.name == "gpt-1.3b") return 8;
  return 1;
}

std::string model_summary(const train::TrainJobConfig& c) {
  const bool gpu = c.backend == train::BackendKind::gpu;
  return fmt::format("model {}: {:.2f} M parameters, {:.3f} GFLOP per token, about {:.2f} GiB per rank at {} rows{}",
                     c.model.describe(), c.model.parameter_count() / 1e6, c.model.flops_per_token() / 1e9,
                     c.model.memory_per_rank_bytes(c.rows_per_rank(), gpu, c.world_size) / (1u << 30),
                     c.rows_per_rank(),
                     gpu && c.model.family == train::ModelFamily::gpt ? "; " + c.model.gpt.gpu_attention() : "");
}

train::TrainJobConfig WorkloadFlags::resolve(int world_size) const {
  train::TrainJobConfig c;
  c.backend = backend == "auto" ? (train::visible_gpu_count() > 0 ? train::BackendKind::gpu : train::BackendKind::cpu)
                                : train::parse_backend_kind(backend);
  const bool gpu = c.backend == train::BackendKind::gpu;
  c.world_size = world_size;
  train::ModelOverrides overrides;
  overrides.layers = layers;
  overrides.context = context;
  overrides.embed = embed;
  overrides.hidden = hidden;
  overrides.seq = seq;
  overrides.keep_activations = keep_activations;
  overrides.attention = attention;
  c.model = train::ModelSpec::from_preset(model == "auto" ? (gpu ? "mlp-100m" : "mlp-10m") : model, overrides);
  c.batch = batch ? batch : default_batch(c.model, gpu);
  c.mode = strong ? core::ScalingMode::strong : core::ScalingMode::weak;
  auto mib = [](double x, const char* flag) {
    if (!(x >= 0 && x <= 1 << 20))  // NaN too; beyond 1 TiB llround would overflow
      throw core::UsageError(fmt::format("{} {} must be between 0 and 1048576 MiB", flag, x), "e.g. 1 or 25");
    return static_cast<std::size_t>(std::llround(x * (1 << 20)));
  };
  c.engine.buckets.first_bucket_bytes = mib(first_bucket_mib, "--first-bucket-mb");
  c.engine.buckets.bucket_cap_bytes = mib(bucket_cap_mib, "--bucket-cap-mb");
  c.engine.overlap = !no_overlap;
  c.engine.overlap_optimizer = overlap_optimizer;
  c.engine.embedding_exchange = train::parse_embedding_exchange(embedding_exchange);
  c.stream_priority = train::parse_stream_priority(stream_priority);
  c.cuda_graph = cuda_graph;
  c.engine.gradient_reduction = gradient_reduction == "sum" ? comm::ReduceOp::sum : comm::ReduceOp::average;
  // SCALESCOPE_DATA names the default text where /usr/share/games/fortunes cannot be installed.
  const char* env_data = std::getenv("SCALESCOPE_DATA");
  c.data = !data.empty() ? data : (env_data ? env_data : "");
  c.protocol.warmup_rounds = warmup_rounds;
  c.protocol.timed_rounds = timed_rounds;
  c.protocol.steps_per_round = steps_per_round;
  // AdamW runs in fp32: a rate beyond float's range would become inf on the way (--lr 1e300).
  if (std::isfinite(learning_rate) && std::abs(learning_rate) > std::numeric_limits<float>::max())
    throw core::UsageError(fmt::format("learning rate {:.9g} is beyond what fp32 holds ({:.9g})", learning_rate,
                                       std::numeric_limits<float>::max()),
                           "e.g. --lr 0.001");
  if (learning_rate > 0 && static_cast<float>(learning_rate) == 0.0f)  // --lr 1e-50 would become 0
    throw core::UsageError(fmt::format("learning rate {:g} is below the smallest fp32 number ({:g})", learning_rate,
                                       std::numeric_limits<float>::denorm_min()),
                           "e.g. --lr 0.001");
  c.adamw.learning_rate = static_cast<float>(learning_rate);
  c.timeout_seconds = timeout_seconds;
  c.progress = !quiet;
  c.fault = fault;
  c.validate();
  return c;
}

}  // namespace scalescope::cli
