// The words a training log is read by (internal to readers/job/training_log*.cpp): the catalogue of framework
// messages that name a scaling problem, how a training loop says it ended, the keys and units of timing figures,
// NCCL's result codes, and the line helpers (prefix stripping, numbers after keys, clocks, units).
#pragma once

#include <algorithm>
#include <array>
#include <bitset>
#include <cctype>
#include <charconv>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>
#include <fmt/format.h>
#include "readers/job/launch_env.h"
#include "text/log_text.h"
#include "readers/job/training_log.h"

namespace scalescope::analyze::training_log_detail {

using diagnose::at;

// ───────────────────────────── the catalogue ─────────────────────────────
//
// Framework messages that name a scaling problem. One row per wording: the id (diagnose::FrameworkMessage::id),
// the framework that prints it, the phrases that identify it (lower case, single-spaced; a phrase "a&&b" needs
// both parts on the line), and what it means. Phrases are matched case-insensitively anywhere in a line (so
// launcher prefixes, timestamps and progress bars glued before the text do not matter) and across a line break
// (a message wrapped by a terminal or a paste). Adding a message is adding a row.
struct CatalogueEntry {
  const char* id;
  const char* framework;
  std::array<const char*, 4> phrases;
  const char* meaning;
};

inline constexpr CatalogueEntry kCatalogue[] = {
    // torch/csrc/distributed/c10d/reducer.cpp, Reducer::search_unused_parameters (TORCH_WARN_ONCE):
    // "find_unused_parameters=True was specified in DDP constructor, but did not find any unused parameters in the
    // forward pass. This flag results in an extra traversal of the autograd graph every iteration …"
    {"ddp-find-unused-no-unused", "pytorch",
     {"did not find any unused parameters", "find_unused_parameters=true was specified in ddp constructor"},
     "DDP searches the autograd graph for unused parameters every iteration, but there are none"},
    // torch/csrc/distributed/c10d/reducer.cpp, Reducer::ensure_prior_reduction_finished: "Expected to have finished
    // reduction in the prior iteration before starting a new one. This error indicates that your module has
    // parameters that were not used in producing loss. …", and "Parameters which did not receive grad for rank N:".
    {"ddp-unused-parameters", "pytorch",
     {"expected to have finished reduction in the prior iteration", "parameters that were not used in producing loss",
      "did not receive grad for rank"},
     "some parameters get no gradient in an iteration: DDP's reducer waits for them"},
    // lightning/pytorch DDPStrategy rewording of the reducer error (tests/tests_pytorch/strategies/test_ddp*.py):
    // "It looks like your LightningModule has parameters that were not used in producing the loss returned by
    // training_step. If this is intentional, you must enable the detection of unused parameters in DDP …"
    {"ddp-unused-parameters", "lightning",
     {"has parameters that were not used in producing the loss returned by training_step"},
     "some parameters get no gradient in an iteration: DDP's reducer waits for them"},
    // torch/nn/parallel/_functions.py, Gather.forward: "Was asked to gather along dimension 0, but all input tensors
    // were scalars; will instead unsqueeze and return a vector."
    // torch/nn/parallel/data_parallel.py, _check_balance: "There is an imbalance between your GPUs. You may want to
    // exclude GPU {} which has less than 75% of the memory or cores of GPU {}."
    {"dataparallel", "pytorch",
     {"was asked to gather along dimension 0, but all input tensors were scalars", "there is an imbalance between your gpus"},
     "nn.DataParallel drives several GPUs from one process (replicates the model every step, GIL-bound)"},
    // torch/utils/data/dataloader.py, _check_worker_number_rationality: "This DataLoader will create {} worker
    // processes in total. Our suggested max number of worker in current system is {}, which is smaller than what
    // this DataLoader is going to create."
    {"dataloader-workers", "pytorch",
     {"our suggested max number of worker in current system is"},
     "more DataLoader workers than the CPUs available to the job"},
    // lightning/pytorch/trainer/connectors/data_connector.py, _worker_check ("The '{name}' does not have many workers
    // which may be a bottleneck."); pytorch_lightning/trainer/data_loading.py before 2.0 ("The dataloader, {name},
    // does not have many workers which may be a bottleneck.").
    {"dataloader-workers", "lightning",
     {"does not have many workers which may be a bottleneck"},
     "the DataLoader has fewer than two workers: loading may starve the GPUs"},
    // lightning/pytorch/trainer/connectors/data_connector.py, _worker_check: "Consider setting
    // `persistent_workers=True` in '{name}' to speed up the dataloader worker initialization."
    {"persistent-workers", "lightning",
     {"to speed up the dataloader worker initialization", "consider setting `persistent_workers=true`"},
     "DataLoader workers are re-created every epoch (spawn start method)"},
    // torch/csrc/distributed/c10d/reducer.cpp: "Grad strides do not match bucket view strides. This may indicate grad
    // was not created according to the gradient layout contract, or that the param's strides changed since DDP was
    // constructed. This is not an error, but may impair performance."
    {"bucket-view-strides", "pytorch",
     {"grad strides do not match bucket view strides"},
     "gradients are copied into DDP's buckets instead of viewed (memory-format mismatch)"},
    // torch/nn/parallel/distributed.py, DistributedDataParallel._pre_forward: logger.info("Reducer buckets have been
    // rebuilt in this iteration."); torch/csrc/distributed/c10d/reducer.cpp, Reducer::rebuild_buckets with
    // TORCH_DISTRIBUTED_DEBUG: "N buckets rebuilt with size limits: 1048576, 26214400 bytes."
    {"rebuilt-buckets", "pytorch",
     {"reducer buckets have been rebuilt in this iteration", "buckets rebuilt with size limits"},
     "DDP re-ordered its gradient buckets after the first iteration (normal once; repeated means a changing graph)"},
    // c10/cuda/CUDAFunctions.cpp, warn_or_error_on_sync (torch.cuda.set_sync_debug_mode): "called a synchronizing CUDA
    // operation".
    {"sync-debug", "pytorch",
     {"called a synchronizing cuda operation"},
     "the host waits for the GPU inside the step (.item(), .cpu(), nonzero …)"},
    // torch/_dynamo/backends/distributed.py (DDPOptimizer: "DDPOptimizer used bucket cap %s and created %d buckets"),
    // torch/_dynamo/convert_frame.py ("torch._dynamo hit config.cache_size_limit (8)", later "recompile_limit"),
    // graph breaks as TORCH_LOGS=graph_breaks prints them ("Graph break in user code", "[__graph_breaks]").
    {"compile-graph-break", "pytorch",
     {"ddpoptimizer", "graph break", "hit config.cache_size_limit", "hit config.recompile_limit"},
     "torch.compile split or recompiled the model (graph breaks, DDP bucket splits, recompilations)"},
    {"compile-graph-break", "pytorch", {"__graph_breaks"}, "torch.compile split the model at graph breaks"},
    // torch/distributed/run.py (and torch/distributed/launch.py): "Setting OMP_NUM_THREADS environment variable for
    // each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for
    // optimal performance in your application as needed."
    {"omp-threads", "pytorch",
     {"setting omp_num_threads environment variable for each process to be"},
     "torchrun set OMP_NUM_THREADS=1 for every process (CPU-side work runs on one thread)"},
    // torch/csrc/distributed/c10d/NCCLUtils.cpp, NCCLComm::getNcclComm: "NCCL communicator was aborted on rank N.";
    // ProcessGroupNCCL.cpp, ncclCommWatchdog: "NCCL watchdog thread terminated with exception", later "Process group
    // watchdog thread terminated with exception"; ncclCommAbort in stack traces.
    {"nccl-abort", "pytorch",
     {"nccl communicator was aborted", "ncclcommabort", "nccl watchdog thread terminated",
      "process group watchdog thread terminated"},
     "the NCCL communicator was torn down (after a timeout or an error on some rank)"},
    // torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (async error handling): "Some NCCL operations have failed or
    // timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on
    // corrupted/incomplete data."
    {"nccl-async-error", "pytorch",
     {"some nccl operations have failed or timed out"},
     "a collective failed or timed out and the process is being taken down"},
    // lightning/fabric/accelerators/cuda.py, _check_cuda_matmul_precision: "You are using a CUDA device ('…') that has
    // Tensor Cores. To properly utilize them, you should set `torch.set_float32_matmul_precision('medium' | 'high')`
    // which will trade-off precision for performance."
    {"tensor-cores-precision", "lightning",
     {"to properly utilize them, you should set `torch.set_float32_matmul_precision", "that has tensor cores. to properly utilize them"},
     "fp32 matmuls do not use the Tensor Cores (TF32 off)"},
    // lightning/pytorch/trainer/setup.py, _log_device_info: "GPU available: True (cuda), used: False".
    {"gpu-unused", "lightning",
     {"gpu available: true&&used: false"},
     "the machine has GPUs but the Trainer runs on the CPU"},
    // deepspeed/runtime/zero/stage3.py, DeepSpeedZeroOptimizer_Stage3 step: "%d pytorch allocator cache flushes since
    // last step. this happens when there is high memory pressure and is detrimental to performance."
    {"deepspeed-cache-flush", "deepspeed",
     {"pytorch allocator cache flushes since last step"},
     "the CUDA caching allocator is flushed every step under memory pressure (slow)"},
};

// A catalogue phrase (or one part of an "a&&b" phrase) with a Boyer-Moore-Horspool searcher: logs are large, and most
// lines hold none of the phrases.
struct Finder {
  std::size_t entry = 0;  // index into kCatalogue
  std::vector<std::string_view> parts;
  std::vector<std::boyer_moore_horspool_searcher<std::string_view::const_iterator>> searchers;

  std::size_t find(std::string_view hay, std::size_t k) const {
    const auto it = std::search(hay.begin(), hay.end(), searchers[k]);
    return it == hay.end() ? std::string_view::npos : static_cast<std::size_t>(it - hay.begin());
  }
  bool in(std::string_view hay) const {
    for (std::size_t k = 0; k < parts.size(); ++k)
      if (find(hay, k) == std::string_view::npos) return false;
    return true;
  }
};

const std::vector<Finder>& finders();

// The character pairs that can stand at a line break inside a catalogue phrase: (phrase[k-1], phrase[k]) for a break
// inside a word, (phrase[k-2], phrase[k]) for a break at a blank. A line whose last character and the next line's
// first character form none of them cannot hold a wrapped phrase.
const std::bitset<65536>& break_pairs();

// How a training loop reports that it ended normally.
struct EndMarker {
  const char* phrase;
  const char* framework;
};
inline constexpr EndMarker kEndMarkers[] = {
    // lightning/pytorch/loops/fit_loop.py, FitLoop.done: "`Trainer.fit` stopped: `max_epochs=N` reached." (also
    // max_steps, max_time, `trainer.should_stop` was set); the backticks may be lost in a paste.
    {"`trainer.fit` stopped:", "lightning"},
    {"trainer.fit stopped:", "lightning"},
    // transformers/trainer.py, _inner_training_loop: "Training completed. Do not forget to share your model on
    // huggingface.co/models =)"; trainer_pt_utils.py log_metrics: "***** train metrics *****".
    {"training completed. do not forget to share your model", "transformers"},
    {"***** train metrics *****", "transformers"},
    {"{'train_runtime':", "transformers"},
    // megatron/training/training.py: print_datetime('after training is done').
    {"[after training is done]", "megatron"},
    // torchtitan/train.py: logger.info("Training completed").
    {"training completed", "unknown"},
};

// ───────────────────────────── text helpers ─────────────────────────────

bool starts_with(std::string_view s, std::string_view p);
bool contains(std::string_view s, std::string_view p);
bool is_digit(char c);
bool is_alpha(char c);
bool is_word(char c);
char ascii_lower(char c);

// Lower case with every run of blanks made one space, trimmed: what catalogue phrases are matched against.
std::string normalize(std::string_view s);

std::string lower(std::string_view s);

// Whether `phrase` runs from the end of `tail` into the start of `head` (a message wrapped at a line break): with a
// blank between them, or glued (a break inside a word). Both are normalized (no blank at either end).
bool crosses(std::string_view tail, std::string_view head, std::string_view phrase);

// A plain number at s[pos]: "-12", "3.5", "1e-3", "10,050" (thousands separators), ".5" not. `end` gets the position
// after it.
std::optional<double> number_at(std::string_view s, std::size_t pos, std::size_t* end = nullptr);

// "0:04:06.24" / "04:06" / "1:02:03" → seconds.
std::optional<double> clock_at(std::string_view s, std::size_t pos, std::size_t* end);

// The unit word right after a number at `pos` (one blank allowed): "ms", "s", "it/s", "samples/sec", "%".
std::string unit_at(std::string_view low, std::size_t pos);

// A time in `unit` ("ms", "s", "min", "h", "us") converted to `want` ("ms" or "s").
std::optional<double> convert_time(double v, std::string_view unit, std::string_view want);

// Finds `key` in `low` at a word boundary (the character before is no letter, digit or '_'); npos if absent.
std::size_t find_key(std::string_view low, std::string_view key, std::size_t from = 0);

// The position of the value after `key` at `p`: separators (blanks, ':', '=', quotes, '|', '>', runs of dots as in
// Megatron's argument dump "micro_batch_size ........ 4") skipped.
std::size_t value_pos(std::string_view low, std::size_t p);

// The number after `key` ("world_size=8", "'train_runtime': 12.5", "num processes: 8"), with its end.
std::optional<double> number_after_key(std::string_view low, std::string_view key, std::size_t* end = nullptr,
                                       std::size_t* key_at = nullptr);

// The word after `key` (a value such as a model name or "true"), quotes and trailing punctuation removed.
std::optional<std::string> word_after_key(std::string_view text, std::string_view low, std::string_view key);

std::optional<bool> to_bool(std::string_view w);

// ───────────────────────────── launcher prefixes ─────────────────────────────

bool is_level_word(std::string_view w);

// "2025-06-17 16:23:09,123" or "03/13/2023 10:49:01" at the start of `s`: its length, else 0.
std::size_t timestamp_length(std::string_view s);

// What launchers, loggers and pastes put before a line's text: "[rank1]:", "[default0]:", "0: ", "[1,0]<stdout>:",
// "(RayTrainWorker pid=123) ", "> " quote markers, "[80746] " viewer line numbers, timestamps with a level and a
// logger name ("2025-06-17 16:23:09 I [train.py:156] ", "03/13/2023 10:49:01 - INFO - name - ",
// "[INFO|trainer.py:2681] 2025-05-15 07:30:25,556 >> "), glog headers ("I0607 16:10:35.739390 515217 logger.cpp:173] ").
std::string_view strip_prefixes(std::string_view s);

// ───────────────────────────── timing rules ─────────────────────────────

// A labelled figure: the number after `key` (unit printed after the number, else `unit`). Sources in comments.
struct KeyRule {
  const char* key;          // lower case
  const char* quantity;
  const char* unit;         // the unit of the value ("ms", "s" for times: a printed unit is converted to it)
  bool higher_is_better;
  bool running;             // a running average: the last value stands for the run
  bool unit_required;       // the number counts only with a time unit after it ("time 123.45ms")
  const char* needs;        // a word the line must also hold ("" none)
  const char* format;       // names the series in Measurement::row
};
inline constexpr KeyRule kKeyRules[] = {
    // megatron/training/training.py, training_log: "iteration 10/ 1000 | consumed samples: 160 | elapsed time per
    // iteration (ms): 1147.6 | … | throughput per GPU (TFLOP/s/GPU): 123.4 |"
    {"elapsed time per iteration (ms)", "step time", "ms", false, false, false, "", "Megatron iteration lines"},
    {"throughput per gpu (tflop/s/gpu)", "throughput", "TFLOP/s/GPU", true, false, false, "", "Megatron iteration lines"},
    // deepspeed/utils/timer.py, ThroughputTimer: "epoch=0/micro_step=10/global_step=10, RunningAvgSamplesPerSec=220.7,
    // CurrSamplesPerSec=222.9, MemAllocated=0.07GB, MaxMemAllocated=1.36GB"
    {"runningavgsamplespersec", "throughput", "samples/s", true, true, false, "", "DeepSpeed ThroughputTimer"},
    // torchtitan/train.py (metrics logger): "step:  4  loss:  7.62585  grad_norm: 26.6250  memory: 66.91GiB(37.51%)
    // tps: 10,050  tflops: 314.71  mfu: 13.99%" (tps: tokens per second per device)
    {"tps", "throughput", "tokens/s/GPU", true, false, false, "step", "torchtitan step lines"},
    // nanochat / modded-nanogpt: "step 00004/21400 (0.02%) | loss: 8.89 | lrm: 1.00 | dt: 989.44ms | tok/sec:
    // 529,882 | mfu: 74.13", "step:100/1770 train_time:12345ms step_avg:123.45ms"
    {"tok/sec", "throughput", "tokens/s", true, false, false, "", "tok/sec lines"},
    {"dt", "step time", "ms", false, false, true, "step", "dt lines"},
    {"step_avg", "step time", "ms", false, true, false, "", "step_avg lines"},
    // nanoGPT train.py: "iter 10: loss 3.2345, time 123.45ms, mfu 5.67%"
    {"time", "step time", "ms", false, false, true, "iter", "nanoGPT iter lines"},
    // transformers/trainer.py metrics: {'train_runtime': 246.2454, 'train_samples_per_second': 7.2,
    // 'train_steps_per_second': 0.902, …}; trainer_pt_utils.py log_metrics: "  train_runtime = 0:04:06.24".
    {"train_runtime", "run time", "s", false, false, false, "", "HF Trainer train metrics"},
    {"train_samples_per_second", "throughput", "samples/s", true, false, false, "", "HF Trainer train metrics"},
    {"train_steps_per_second", "throughput", "steps/s", true, false, false, "", "HF Trainer train metrics"},
    {"train_tokens_per_second", "throughput", "tokens/s", true, false, false, "", "HF Trainer train metrics"},
    // Generic labels ("step_time: 0.45", "step time: 1.2 s", "iteration time: 350 ms", "epoch time: 120 s").
    {"step_time", "step time", "s", false, false, false, "", "step_time lines"},
    {"step time", "step time", "s", false, false, false, "", "step time lines"},
    {"time per step", "step time", "s", false, false, false, "", "time per step lines"},
    {"iteration time", "step time", "s", false, false, false, "", "iteration time lines"},
    {"iter_time", "step time", "s", false, false, false, "", "iter_time lines"},
    {"epoch time", "epoch time", "s", false, false, false, "", "epoch time lines"},
    {"epoch_time", "epoch time", "s", false, false, false, "", "epoch_time lines"},
    {"time per epoch", "epoch time", "s", false, false, false, "", "time per epoch lines"},
    {"samples_per_second", "throughput", "samples/s", true, false, false, "", "samples_per_second lines"},
};

// A figure named by the unit printed after it ("10.90 samples/sec", "166752 tok/s", "123 ms/step").
struct UnitRule {
  const char* unit;  // as printed, lower case
  const char* quantity;
  const char* to_unit;
  double factor;     // printed value × factor = value in to_unit
  bool higher_is_better;
};
inline constexpr UnitRule kUnitRules[] = {
    // awsome-distributed-training FSDP example "Speed: 10.90 samples/sec"; DeepSpeed/Megatron variants.
    {"samples/sec", "throughput", "samples/s", 1, true},   {"samples/s", "throughput", "samples/s", 1, true},
    {"samples/second", "throughput", "samples/s", 1, true},
    // llm.c train_gpt2.cu: "step 2/74 | loss … | 98.27 ms | 17.2% bf16 MFU | 166752 tok/s"
    {"tok/s", "throughput", "tokens/s", 1, true},          {"tokens/s", "throughput", "tokens/s", 1, true},
    {"tokens/sec", "throughput", "tokens/s", 1, true},     {"tokens/second", "throughput", "tokens/s", 1, true},
    {"images/sec", "throughput", "images/s", 1, true},     {"images/s", "throughput", "images/s", 1, true},
    {"img/s", "throughput", "images/s", 1, true},          {"imgs/sec", "throughput", "images/s", 1, true},
    {"ms/step", "step time", "ms", 1, false},              {"ms/iter", "step time", "ms", 1, false},
    {"ms/it", "step time", "ms", 1, false},                {"s/step", "step time", "s", 1, false},
    {"sec/step", "step time", "s", 1, false},              {"s/iter", "step time", "s", 1, false},
    {"sec/iter", "step time", "s", 1, false},
    // TensorFlow 1's models (inception, slim, cifar10_multi_gpu_train): "step 10, loss = 13.16 (68.1 examples/sec;
    // 3.762 sec/batch)".
    // (not "examples/s": HF datasets' map bars print it of preprocessing)
    {"examples/sec", "throughput", "samples/s", 1, true},
    {"sec/batch", "step time", "s", 1, false},             {"s/batch", "step time", "s", 1, false},
    {"ms/batch", "step time", "ms", 1, false},
};

// tqdm descriptions of bars that are not the training loop.
inline constexpr std::string_view kNotTraining[] = {
    "eval", "valid", "test", "predict", "infer", "sanity", "load", "download", "map", "token", "generat", "filter",
    "shard", "checkpoint", "saving", "preprocess", "extract", "convert", "caching", "dataset", "upload", "resolv",
    "fetch", "calibrat", "sampl", "encod", "decod", "warmup", "warm-up", "benchmark"};

// ───────────────────────────── NCCL errors ─────────────────────────────

struct NcclResult {
  const char* token;  // lower case, as PyTorch or NCCL print it
  int code;
  const char* name;
};
// nccl.h ncclResult_t and ncclGetErrorString (src/init.cc): ncclUnhandledCudaError 1 "unhandled cuda error",
// ncclSystemError 2 "unhandled system error", ncclInternalError 3 "internal error", ncclInvalidArgument 4 "invalid
// argument", ncclInvalidUsage 5 "invalid usage", ncclRemoteError 6 "remote process exited or there was a network
// error".
inline constexpr NcclResult kNcclResults[] = {
    {"ncclunhandledcudaerror", 1, "unhandled cuda error"}, {"ncclsystemerror", 2, "unhandled system error"},
    {"ncclinternalerror", 3, "internal error"},            {"ncclinvalidargument", 4, "invalid argument"},
    {"ncclinvalidusage", 5, "invalid usage"},              {"ncclremoteerror", 6, "remote error"},
    {"unhandled cuda error", 1, "unhandled cuda error"},   {"unhandled system error", 2, "unhandled system error"},
    {"internal error - please report", 3, "internal error"}, {"invalid argument (run with", 4, "invalid argument"},
    {"invalid usage (run with", 5, "invalid usage"},
    {"remote process exited or there was a network error", 6, "remote error"},
};

std::optional<int> code_of_name(std::string_view low_name);

std::string name_of_code(int code);

// diagnose::NcclWarning::category of a warning text.
std::string warning_category(std::string_view low);

// ───────────────────────────── the reader ─────────────────────────────

struct Sample {
  double value = 0;
  std::size_t line = 0;  // 0-based
};

struct Series {
  std::string quantity, unit, format;
  bool higher_is_better = false, running = false;
  std::vector<Sample> samples;
  // tqdm
  bool tqdm = false;
  std::string desc;
  std::uint64_t total = 0;
};

// A line that splits a step into time and data-loading time ("Time 22.424 (7.498)\tData 22.372 (7.070)").
struct TimeData {
  double time = 0, data = 0;
  std::optional<double> time_avg, data_avg;
  std::optional<std::uint64_t> iter;
  std::optional<std::string> epoch;
  std::string position;  // "[0][20/5005]" as printed
  std::size_t line = 0;
};

// A per-phase breakdown line (DeepSpeed wall_clock_breakdown, Megatron timers), ms.
struct Breakdown {
  std::map<std::string, double> ms;
  std::size_t line = 0;
  std::string basis;
  std::optional<double> step_ms;  // Megatron: the iteration time printed just before
};

struct ParamCount {
  double value = 0;
  int priority = 0;  // 3 total/all, 2 unlabelled, 1 trainable
  std::size_t line = 0;
};

}  // namespace scalescope::analyze::training_log_detail
