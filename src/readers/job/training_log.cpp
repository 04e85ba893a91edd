#include "readers/job/training_log.h"

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

namespace scalescope::analyze {
namespace {

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

constexpr CatalogueEntry kCatalogue[] = {
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

const std::vector<Finder>& finders() {
  static const std::vector<Finder> all = [] {
    std::vector<Finder> v;
    for (std::size_t e = 0; e < std::size(kCatalogue); ++e) {
      for (const char* p : kCatalogue[e].phrases) {
        if (p == nullptr) continue;
        Finder f;
        f.entry = e;
        std::string_view rest = p;
        while (true) {
          const auto amp = rest.find("&&");
          f.parts.push_back(rest.substr(0, amp));
          if (amp == std::string_view::npos) break;
          rest = rest.substr(amp + 2);
        }
        for (auto part : f.parts) f.searchers.emplace_back(part.begin(), part.end());
        v.push_back(std::move(f));
      }
    }
    return v;
  }();
  return all;
}

// The character pairs that can stand at a line break inside a catalogue phrase: (phrase[k-1], phrase[k]) for a break
// inside a word, (phrase[k-2], phrase[k]) for a break at a blank. A line whose last character and the next line's
// first character form none of them cannot hold a wrapped phrase.
const std::bitset<65536>& break_pairs() {
  static const std::bitset<65536> pairs = [] {
    std::bitset<65536> b;
    for (const Finder& f : finders())
      for (auto part : f.parts)
        for (std::size_t k = 1; k < part.size(); ++k) {
          b.set(static_cast<unsigned char>(part[k - 1]) << 8 | static_cast<unsigned char>(part[k]));
          if (k >= 2 && part[k - 1] == ' ')
            b.set(static_cast<unsigned char>(part[k - 2]) << 8 | static_cast<unsigned char>(part[k]));
        }
    return b;
  }();
  return pairs;
}

// How a training loop reports that it ended normally.
struct EndMarker {
  const char* phrase;
  const char* framework;
};
constexpr EndMarker kEndMarkers[] = {
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

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }
char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

// Lower case with every run of blanks made one space, trimmed: what catalogue phrases are matched against.
std::string normalize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool blank = false;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f') {
      blank = true;
      continue;
    }
    if (blank && !out.empty()) out += ' ';
    blank = false;
    out += ascii_lower(c);
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ascii_lower(c);
  return out;
}

// Whether `phrase` runs from the end of `tail` into the start of `head` (a message wrapped at a line break): with a
// blank between them, or glued (a break inside a word). Both are normalized (no blank at either end).
bool crosses(std::string_view tail, std::string_view head, std::string_view phrase) {
  if (tail.empty() || head.empty()) return false;
  const char last = tail.back();
  for (std::size_t k = 1; k < phrase.size(); ++k) {
    if (phrase[k] != head.front()) continue;
    const bool glued = phrase[k - 1] == last;
    const bool blank = k >= 2 && phrase[k - 1] == ' ' && phrase[k - 2] == last;
    if (!glued && !blank) continue;
    const std::string_view right = phrase.substr(k);
    if (head.size() < right.size() || head.substr(0, right.size()) != right) continue;
    // glued: tail ends with phrase[0, k); a blank at the break: phrase[k-1] is that blank
    const std::string_view left = phrase.substr(0, glued ? k : k - 1);
    if (tail.size() >= left.size() && tail.substr(tail.size() - left.size()) == left) return true;
  }
  return false;
}

// A plain number at s[pos]: "-12", "3.5", "1e-3", "10,050" (thousands separators), ".5" not. `end` gets the position
// after it.
std::optional<double> number_at(std::string_view s, std::size_t pos, std::size_t* end = nullptr) {
  std::size_t i = pos;
  std::string digits;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) digits += s[i++];
  if (i >= s.size() || !is_digit(s[i])) return std::nullopt;
  while (i < s.size()) {
    if (is_digit(s[i])) {
      digits += s[i++];
    } else if (s[i] == ',' && i + 3 < s.size() && is_digit(s[i + 1]) && is_digit(s[i + 2]) && is_digit(s[i + 3]) &&
               (i + 4 >= s.size() || !is_digit(s[i + 4]))) {
      i += 1;  // a thousands separator
    } else {
      break;
    }
  }
  if (i < s.size() && s[i] == '.' && i + 1 < s.size() && is_digit(s[i + 1])) {
    digits += s[i++];
    while (i < s.size() && is_digit(s[i])) digits += s[i++];
  }
  if (i + 1 < s.size() && (s[i] == 'e' || s[i] == 'E') &&
      (is_digit(s[i + 1]) || ((s[i + 1] == '-' || s[i + 1] == '+') && i + 2 < s.size() && is_digit(s[i + 2])))) {
    digits += s[i++];
    if (s[i] == '-' || s[i] == '+') digits += s[i++];
    while (i < s.size() && is_digit(s[i])) digits += s[i++];
  }
  double v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || p != digits.data() + digits.size() || !std::isfinite(v)) return std::nullopt;
  if (end) *end = i;
  return v;
}

// "0:04:06.24" / "04:06" / "1:02:03" → seconds.
std::optional<double> clock_at(std::string_view s, std::size_t pos, std::size_t* end) {
  double total = 0;
  int parts = 0;
  std::size_t i = pos;
  while (parts < 4) {
    std::size_t e = i;
    auto v = number_at(s, i, &e);
    if (!v || *v < 0) return std::nullopt;
    total = total * 60 + *v;
    ++parts;
    i = e;
    if (i < s.size() && s[i] == ':' && i + 1 < s.size() && is_digit(s[i + 1])) {
      ++i;
      continue;
    }
    break;
  }
  if (parts < 2) return std::nullopt;
  if (end) *end = i;
  return total;
}

// The unit word right after a number at `pos` (one blank allowed): "ms", "s", "it/s", "samples/sec", "%".
std::string unit_at(std::string_view low, std::size_t pos) {
  std::size_t i = pos;
  if (i < low.size() && low[i] == ' ') ++i;
  std::size_t b = i;
  while (i < low.size() && (is_alpha(low[i]) || low[i] == '/' || low[i] == '%' || static_cast<unsigned char>(low[i]) >= 0x80)) ++i;
  return std::string(low.substr(b, i - b));
}

// A time in `unit` ("ms", "s", "min", "h", "us") converted to `want` ("ms" or "s").
std::optional<double> convert_time(double v, std::string_view unit, std::string_view want) {
  double s;
  if (unit == "ms" || unit == "msec") s = v / 1000;
  else if (unit == "s" || unit == "sec" || unit == "secs" || unit == "second" || unit == "seconds") s = v;
  else if (unit == "min" || unit == "mins" || unit == "minutes" || unit == "m") s = v * 60;
  else if (unit == "h" || unit == "hr" || unit == "hours") s = v * 3600;
  else if (unit == "us" || unit == "µs") s = v / 1e6;
  else return std::nullopt;
  return want == "ms" ? s * 1000 : s;
}

// Finds `key` in `low` at a word boundary (the character before is no letter, digit or '_'); npos if absent.
std::size_t find_key(std::string_view low, std::string_view key, std::size_t from = 0) {
  while (true) {
    std::size_t p = low.find(key, from);
    if (p == std::string_view::npos) return p;
    const bool left = p == 0 || !is_word(low[p - 1]) || !is_word(key.front());
    const std::size_t e = p + key.size();
    const bool right = e >= low.size() || !is_word(key.back()) || !is_word(low[e]);
    if (left && right) return p;
    from = p + 1;
  }
}

// The position of the value after `key` at `p`: separators (blanks, ':', '=', quotes, '|', '>', runs of dots as in
// Megatron's argument dump "micro_batch_size ........ 4") skipped.
std::size_t value_pos(std::string_view low, std::size_t p) {
  std::size_t i = p;
  while (i < low.size()) {
    const char c = low[i];
    if (c == ' ' || c == ':' || c == '=' || c == '\'' || c == '"' || c == '|' || c == '>' || c == '\t') {
      ++i;
    } else if (c == '.' && i + 1 < low.size() && low[i + 1] == '.') {
      while (i < low.size() && low[i] == '.') ++i;
    } else {
      break;
    }
  }
  return i;
}

// The number after `key` ("world_size=8", "'train_runtime': 12.5", "num processes: 8"), with its end.
std::optional<double> number_after_key(std::string_view low, std::string_view key, std::size_t* end = nullptr,
                                       std::size_t* key_at = nullptr) {
  std::size_t from = 0;
  while (true) {
    const std::size_t p = find_key(low, key, from);
    if (p == std::string_view::npos) return std::nullopt;
    const std::size_t v = value_pos(low, p + key.size());
    std::size_t e = v;
    if (auto n = number_at(low, v, &e)) {
      if (end) *end = e;
      if (key_at) *key_at = p;
      return n;
    }
    from = p + 1;
  }
}

// The word after `key` (a value such as a model name or "true"), quotes and trailing punctuation removed.
std::optional<std::string> word_after_key(std::string_view text, std::string_view low, std::string_view key) {
  const std::size_t p = find_key(low, key);
  if (p == std::string_view::npos) return std::nullopt;
  std::size_t i = value_pos(low, p + key.size());
  std::size_t e = i;
  while (e < text.size() && text[e] != ' ' && text[e] != '\t' && text[e] != ',' && text[e] != '\'' && text[e] != '"' &&
         text[e] != ')' && text[e] != '}' && text[e] != ']' && text[e] != ';')
    ++e;
  if (e == i) return std::nullopt;
  return std::string(text.substr(i, e - i));
}

std::optional<bool> to_bool(std::string_view w) {
  const std::string l = lower(w);
  if (l == "true" || l == "1" || l == "yes") return true;
  if (l == "false" || l == "0" || l == "no") return false;
  return std::nullopt;
}

// ───────────────────────────── launcher prefixes ─────────────────────────────

bool is_level_word(std::string_view w) {
  static constexpr std::string_view kLevels[] = {"INFO", "WARNING", "WARN", "ERROR", "DEBUG", "CRITICAL", "FATAL",
                                                  "I", "W", "E", "D", "info", "warning", "error", "debug"};
  return std::find(std::begin(kLevels), std::end(kLevels), w) != std::end(kLevels);
}

// "2025-06-17 16:23:09,123" or "03/13/2023 10:49:01" at the start of `s`: its length, else 0.
std::size_t timestamp_length(std::string_view s) {
  std::size_t i = 0;
  auto digits = [&](std::size_t n) {
    for (std::size_t k = 0; k < n; ++k, ++i)
      if (i >= s.size() || !is_digit(s[i])) return false;
    return true;
  };
  const std::size_t start = i;
  if (digits(4) && i < s.size() && s[i] == '-' && (++i, digits(2)) && i < s.size() && s[i] == '-' && (++i, digits(2))) {
  } else {
    i = start;
    if (!(digits(2) && i < s.size() && s[i] == '/' && (++i, digits(2)) && i < s.size() && s[i] == '/' && (++i, digits(4))))
      return 0;
  }
  if (i < s.size() && (s[i] == ' ' || s[i] == 'T')) {
    const std::size_t t = i + 1;
    std::size_t j = t;
    while (j < s.size() && (is_digit(s[j]) || s[j] == ':' || s[j] == '.' || s[j] == ',')) ++j;
    if (j > t + 4) i = j;
  }
  if (i < s.size() && (s[i] == 'Z')) ++i;
  return i;
}

// What launchers, loggers and pastes put before a line's text: "[rank1]:", "[default0]:", "0: ", "[1,0]<stdout>:",
// "(RayTrainWorker pid=123) ", "> " quote markers, "[80746] " viewer line numbers, timestamps with a level and a
// logger name ("2025-06-17 16:23:09 I [train.py:156] ", "03/13/2023 10:49:01 - INFO - name - ",
// "[INFO|trainer.py:2681] 2025-05-15 07:30:25,556 >> "), glog headers ("I0607 16:10:35.739390 515217 logger.cpp:173] ").
std::string_view strip_prefixes(std::string_view s) {
  for (int round = 0; round < 16; ++round) {
    s = trim_blanks(s);
    if (s.empty()) return s;
    if (s.front() == '>' && (s.size() == 1 || s[1] == ' ' || s[1] == '>')) {
      s.remove_prefix(1);
      continue;
    }
    if (s.front() == '[') {
      const std::size_t close = s.find(']');
      if (close != std::string_view::npos && close < 64) {
        std::string_view inner = s.substr(1, close - 1);
        const std::string li = lower(inner);
        const bool rank = (starts_with(li, "rank") && inner.size() > 4 && is_digit(inner[4])) ||
                          (starts_with(li, "default") && inner.size() > 7 && is_digit(inner[7]));
        const bool numeric = !inner.empty() && std::all_of(inner.begin(), inner.end(), [](char c) { return is_digit(c) || c == ','; });
        const bool stamp = timestamp_length(inner) > 0;
        const bool logger = contains(inner, "|") || li == "titan" ||
                            (inner.size() > 2 && is_level_word(inner.substr(0, inner.find_first_of("| ")))) ;
        if (rank || numeric || stamp || logger) {
          s.remove_prefix(close + 1);
          if (starts_with(s, "<stdout>") || starts_with(s, "<stderr>")) s.remove_prefix(8);
          if (starts_with(s, ":")) s.remove_prefix(1);
          continue;
        }
      }
      break;
    }
    if (s.front() == '(') {
      const std::size_t close = s.find(") ");
      if (close != std::string_view::npos && close < 80 && contains(s.substr(0, close), "pid=")) {
        s.remove_prefix(close + 1);
        continue;
      }
      break;
    }
    if (is_digit(s.front())) {
      if (const std::size_t ts = timestamp_length(s); ts > 0) {
        s.remove_prefix(ts);
        s = trim_blanks(s);
        // " - INFO - name - ", " I ", " >> ", ": "
        for (int k = 0; k < 3; ++k) {
          s = trim_blanks(s);
          if (starts_with(s, "- ")) s.remove_prefix(2);
          else if (starts_with(s, ">>")) s.remove_prefix(2);
          else if (starts_with(s, "|")) s.remove_prefix(1);
          else break;
        }
        s = trim_blanks(s);
        const std::size_t sp = s.find(' ');
        if (sp != std::string_view::npos && is_level_word(s.substr(0, sp))) {
          s.remove_prefix(sp + 1);
          s = trim_blanks(s);
          if (starts_with(s, "- ")) {
            // "- name - " after the level
            const std::size_t dash = s.find(" - ", 2);
            s.remove_prefix(2);
            if (dash != std::string_view::npos && dash < 80) s.remove_prefix(dash + 1);
          }
        }
        continue;
      }
      std::size_t i = 0;
      while (i < s.size() && i < 5 && is_digit(s[i])) ++i;
      if (i < s.size() && s[i] == ':' && (i + 1 >= s.size() || s[i + 1] == ' ')) {  // srun --label "0: "
        s.remove_prefix(i + 1);
        continue;
      }
      break;
    }
    // glog: "I0607 16:10:35.739390 515217 logger.cpp:173] "
    if ((s.front() == 'I' || s.front() == 'W' || s.front() == 'E' || s.front() == 'F') && s.size() > 6 && is_digit(s[1]) &&
        is_digit(s[4])) {
      const std::size_t close = s.find("] ");
      if (close != std::string_view::npos && close < 100) {
        s.remove_prefix(close + 1);
        continue;
      }
    }
    break;
  }
  return s;
}

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
constexpr KeyRule kKeyRules[] = {
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
constexpr UnitRule kUnitRules[] = {
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
constexpr std::string_view kNotTraining[] = {
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
constexpr NcclResult kNcclResults[] = {
    {"ncclunhandledcudaerror", 1, "unhandled cuda error"}, {"ncclsystemerror", 2, "unhandled system error"},
    {"ncclinternalerror", 3, "internal error"},            {"ncclinvalidargument", 4, "invalid argument"},
    {"ncclinvalidusage", 5, "invalid usage"},              {"ncclremoteerror", 6, "remote error"},
    {"unhandled cuda error", 1, "unhandled cuda error"},   {"unhandled system error", 2, "unhandled system error"},
    {"internal error - please report", 3, "internal error"}, {"invalid argument (run with", 4, "invalid argument"},
    {"invalid usage (run with", 5, "invalid usage"},
    {"remote process exited or there was a network error", 6, "remote error"},
};

std::optional<int> code_of_name(std::string_view low_name) {
  for (const auto& r : kNcclResults)
    if (contains(low_name, r.token) || low_name == r.name) return r.code;
  if (contains(low_name, "internal error")) return 3;
  if (contains(low_name, "remote error")) return 6;
  return std::nullopt;
}

std::string name_of_code(int code) {
  for (const auto& r : kNcclResults)
    if (r.code == code) return r.name;
  return "error " + std::to_string(code);
}

// diagnose::NcclWarning::category of a warning text.
std::string warning_category(std::string_view low) {
  const bool shm = contains(low, "shared memory") || contains(low, "/dev/shm") || contains(low, "shm_open") ||
                   contains(low, "shm.cc") || contains(low, "shm.h") || contains(low, "shmptr");
  if (shm && (contains(low, "no space") || contains(low, "posix_fallocate") || contains(low, "ftruncate") ||
              contains(low, "enospc") || contains(low, "(28)")))
    return "shm-space";
  if (shm) return "shm-create";
  if (contains(low, "posix_fallocate") || contains(low, "no space left")) return "shm-space";
  if (contains(low, "ibv_") || contains(low, "net/ib") || contains(low, "completion error") || contains(low, "ib_plugin") ||
      contains(low, "mlx5") || contains(low, "rdma"))
    return "ib";
  if (contains(low, "peer access") || contains(low, "p2p") || contains(low, "cudaipc") || contains(low, "ipc handle") ||
      contains(low, "cumemimport"))
    return "p2p";
  if (contains(low, "cuda failure") || contains(low, "cuda error") || contains(low, "cudaerror") || contains(low, "cuda driver"))
    return "cuda";
  if (contains(low, "socket") || contains(low, "connect") || contains(low, "recv") || contains(low, "bootstrap") ||
      contains(low, "send ") || contains(low, "connection"))
    return "socket";
  if (contains(low, "proxy")) return "proxy";
  return "other";
}

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

class Reader {
 public:
  Reader(std::string_view text, std::string source, bool probe) : text_(text), source_(std::move(source)), probe_(probe) {
    lines_ = split_lines(text);
  }

  void run() {
    if (is_json_trace(text_)) {
      if (!probe_) out_.notes.push_back("a JSON profiler trace, not a training log: not read");
      return;
    }
    for (std::size_t i = 0; i < lines_.size(); ++i) {
      read_line(i);
      if (probe_ && found()) return;
    }
  }

  // A Chrome / Kineto trace (JSON with "traceEvents") is the trace reader's, not a log.
  static bool is_json_trace(std::string_view text) {
    std::string_view t = text.substr(0, 1 << 16);
    while (!t.empty() && (t.front() == '\n' || t.front() == ' ' || t.front() == '\t' || t.front() == '\r')) t.remove_prefix(1);
    return !t.empty() && (t.front() == '{' || t.front() == '[') && contains(t, "\"traceEvents\"");
  }

  bool found() const {
    // A bare "NCCL version" line (nccl-tests and NCCL logs print one) makes no training log.
    // nccl-tests' own failure lines are the nccl-tests reader's.
    bool fact = false;
    for (const auto& f : out_.facts.all()) fact |= !std::holds_alternative<diagnose::NcclVersion>(f.value);
    for (const auto& f : failures_) fact |= f.reporter != "nccl-tests";
    return fact || !series_.empty() || !time_data_.empty() || !breakdowns_.empty() || ddp_set_ ||
           batch_line_ || !models_.empty() || !params_.empty();
  }

  diagnose::Reading finish() {
    finish_failures();
    finish_models();
    finish_batch();
    finish_ddp();
    finish_timing();
    if (out_.notes.size() > 100) {
      const auto n = out_.notes.size();
      out_.notes.resize(100);
      out_.notes.push_back(fmt::format("… and {} more notes", n - 100));
    }
    return std::move(out_);
  }

 private:
  // The normalized (lower case, single-spaced) text of line i (kept: lines are looked at again for wrapped
  // messages and error blocks). References stay valid (a deque).
  const std::string& low(std::size_t i) {
    if (i < low_cache_index_.size() && low_cache_index_[i] != SIZE_MAX) return low_store_[low_cache_index_[i]];
    if (low_cache_index_.size() < lines_.size()) low_cache_index_.resize(lines_.size(), SIZE_MAX);
    low_cache_index_[i] = low_store_.size();
    low_store_.push_back(normalize(lines_[i]));
    return low_store_.back();
  }

  diagnose::Provenance where(std::size_t i) { return at(source_, i + 1, lines_[i]); }

  void read_line(std::size_t i) {
    const std::string_view raw = lines_[i];
    if (trim_blanks(raw).empty()) return;
    const std::string& lw = low(i);
    // `text`: the line without launcher prefixes; `tlow`: it in lower case, position for position (values are cut
    // from `text` where a key was found in `tlow`); `tn`: it normalized.
    const std::string_view text = strip_prefixes(raw);
    // A command line (with its continuations) is the command reader's; detection leaves commands to
    // looks_like_command (a text of commands only is no training log).
    if (i < continued_until_) return;
    if (is_command(text)) {
      std::string joined(command_text(text));
      // Backslash-continued command lines.
      std::size_t k = i;
      while (!joined.empty() && joined.back() == '\\' && k + 1 < lines_.size() && k < i + 30) {
        joined.pop_back();
        joined += ' ';
        joined += std::string(strip_prefixes(lines_[++k]));
      }
      continued_until_ = k + 1;
      if (!probe_) commands(i, joined);
      return;
    }
    const std::string tlow = lower(text);
    const std::string tn = normalize(text);
    catalogue(i, lw);
    transformers_process_line(i, lw);
    errors(i, lw, text, tlow);
    ended(i, lw);
    timing(i, raw, lw);
    model_and_batch(i, text, tlow, tn);
    world(i, lw);
    ddp(i, text, tlow);
  }

  // ── framework messages ──
  void catalogue(std::size_t i, const std::string& lw) {
    // For messages wrapped by a terminal or a paste: the next line (also without its launcher prefix).
    std::string_view next, next_stripped;
    std::string stripped_store;
    bool window = false, may_cross = false;
    for (const Finder& f : finders()) {
      const CatalogueEntry& e = kCatalogue[f.entry];
      if (seen_ids_.count(e.id)) continue;
      bool hit = f.in(lw);
      if (!hit && i + 1 < lines_.size() && f.parts.size() == 1) {
        if (!window) {
          window = true;
          next = low(i + 1);
          stripped_store = normalize(strip_prefixes(lines_[i + 1]));
          next_stripped = stripped_store;
          const auto& pairs = break_pairs();
          auto pair = [&](std::string_view h) {
            return !lw.empty() && !h.empty() &&
                   pairs.test(static_cast<unsigned char>(lw.back()) << 8 | static_cast<unsigned char>(h.front()));
          };
          may_cross = pair(next) || pair(next_stripped);
        }
        if (may_cross) hit = crosses(lw, next, f.parts[0]) || crosses(lw, next_stripped, f.parts[0]);
      }
      if (!hit) continue;
      seen_ids_.insert(e.id);
      out_.facts.add(diagnose::FrameworkMessage{.id = e.id, .framework = e.framework}, where(i));
      // The warning itself says the flag is on.
      if (std::string_view(e.id) == "ddp-find-unused-no-unused") {
        if (!ddp_.find_unused_parameters) ddp_.find_unused_parameters = true;
        mark_ddp(i);
      }
    }
  }

  // transformers examples: "Process rank: -1, device: cuda:0, n_gpu: 2, distributed training: False, 16-bits
  // training: False" (examples/pytorch/*/run_*.py; older ones lack the ", " before "distributed"). One process using
  // several GPUs is nn.DataParallel (transformers/training_args.py: n_gpu > 1 without a distributed launch).
  // TrainingArguments printed one field per line ("TrainingArguments(\n_n_gpu=2,\n…\nlocal_rank=-1,\n…") is read
  // across its lines.
  void transformers_process_line(std::size_t i, const std::string& lw) {
    if (starts_with(lw, "local_rank=")) {
      if (auto v = number_after_key(lw, "local_rank")) args_local_rank_ = v;
      if (args_n_gpu_ && args_local_rank_) one_process_gpus(*args_n_gpu_, *args_local_rank_ < 0, args_line_, "TrainingArguments _n_gpu");
      return;
    }
    if (!contains(lw, "n_gpu")) return;
    std::size_t e = 0;
    auto n = number_after_key(lw, "n_gpu", &e);
    if (!n) n = number_after_key(lw, "_n_gpu", &e);
    if (!n || *n < 1 || *n > 1024) return;
    if (starts_with(lw, "_n_gpu=")) {
      args_n_gpu_ = n;
      args_line_ = i;
      if (args_local_rank_) one_process_gpus(*n, *args_local_rank_ < 0, i, "TrainingArguments _n_gpu");
      return;
    }
    std::optional<bool> distributed;
    if (auto p = lw.find("distributed training"); p != std::string::npos) {
      const std::size_t v = value_pos(lw, p + 20);
      if (starts_with(std::string_view(lw).substr(v), "true")) distributed = true;
      else if (starts_with(std::string_view(lw).substr(v), "false")) distributed = false;
    }
    std::optional<double> rank = number_after_key(lw, "process rank");
    if (!rank) rank = number_after_key(lw, "local_rank");
    if (contains(lw, "16-bits training: true") && !dtype_) dtype_ = "fp16";
    const bool one_process = (distributed && !*distributed) || (!distributed && rank && *rank < 0);
    one_process_gpus(*n, one_process, i, "transformers: n_gpu");
  }

  void one_process_gpus(double n, bool one_process, std::size_t i, const char* what) {
    if (n <= 1 || !one_process) return;
    if (!seen_ids_.count("dataparallel")) {
      seen_ids_.insert("dataparallel");
      out_.facts.add(diagnose::FrameworkMessage{.id = "dataparallel", .framework = "transformers"}, where(i));
    }
    diagnose::WorldShape w;
    w.processes = 1;
    w.gpus_per_process = static_cast<int>(n);
    w.basis = fmt::format("{} {} in one process (distributed training off)", what, static_cast<int>(n));
    add_world(std::move(w), i);
  }

  // ── errors ──
  void errors(std::size_t i, const std::string& lw, std::string_view text, const std::string& tlow) {
    if (contains(lw, "nccl")) nccl_errors(i, lw);
    if (contains(lw, "last error:")) last_error(i);
    // NCCL's shared-memory failure as its message reaches a log without the "NCCL WARN" prefix (PyTorch quotes it in a
    // DistBackendError; a paste keeps only it): "Error while creating shared memory segment /dev/shm/nccl-… (size …)".
    else if (contains(lw, "shared memory segment") && (contains(lw, "error") || contains(lw, "failed")) &&
             !contains(lw, "nccl warn") && shm_errors_ < 16 && last_error_message_line_ != i) {
      ++shm_errors_;
      diagnose::NcclWarning w;
      w.category = warning_category(lw);
      w.message = to_valid_utf8(trim_blanks(strip_prefixes(lines_[i])));
      out_.facts.add(std::move(w), where(i));
    }
    process_failure(i, lw, text, tlow);
  }
  std::size_t shm_errors_ = 0;

  void add_failure(std::optional<int> code, std::string name, std::string reporter, std::size_t i) {
    for (const auto& f : failures_)
      if (f.code == code && f.name == name) return;
    failures_.push_back({code, std::move(name), std::move(reporter), i});
  }

  void nccl_errors(std::size_t i, const std::string& lw) {
    // NCCL version in PyTorch's message ("…, NCCL version 2.21.5") or on a line of its own; NCCL's own INFO lines are
    // the NCCL log reader's.
    if (auto p = lw.find("nccl version "); p != std::string::npos && !contains(lw, "nccl info") && !contains(lw, "nccl warn")) {
      std::size_t b = p + 13, e = b;
      while (e < lw.size() && (is_digit(lw[e]) || lw[e] == '.')) ++e;
      std::string v = lw.substr(b, e - b);
      while (!v.empty() && v.back() == '.') v.pop_back();
      if (!v.empty() && contains(v, ".") && versions_.insert(v).second)
        out_.facts.add(diagnose::NcclVersion{.version = v}, where(i));
    }
    const bool pytorch = contains(lw, "runtimeerror") || contains(lw, "distbackenderror") || contains(lw, "nccl error") ||
                         contains(lw, "processgroupnccl") || contains(lw, "c10d");
    // "NCCL Error 2: unhandled system error" (PyTorch before 1.13 and others)
    if (auto p = lw.find("nccl error "); p != std::string::npos && p + 11 < lw.size() && is_digit(lw[p + 11])) {
      std::size_t e = p + 11;
      auto code = number_at(lw, e, &e);
      if (code && *code >= 0 && *code < 100) {
        std::string name;
        if (e < lw.size() && lw[e] == ':') {
          std::string_view rest = trim_blanks(std::string_view(lw).substr(e + 1));
          name = std::string(rest.substr(0, rest.find(" (")));
        }
        if (name.empty()) name = name_of_code(static_cast<int>(*code));
        add_failure(static_cast<int>(*code), name, "pytorch", i);
        return;
      }
    }
    // "NCCL error in: …/NCCLUtils.hpp:268, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version
    // 2.21.5" (torch/csrc/distributed/c10d/NCCLUtils.hpp C10D_NCCL_CHECK)
    if (auto p = lw.find("nccl error in:"); p != std::string::npos) {
      std::string_view rest = std::string_view(lw).substr(p + 14);
      const auto comma = rest.find(", ");
      if (comma != std::string_view::npos) {
        std::string_view name = rest.substr(comma + 2);
        name = name.substr(0, std::min(name.find(" ("), name.find(", nccl version")));
        name = trim_blanks(name);
        if (!name.empty()) {
          add_failure(code_of_name(name), std::string(name), "pytorch", i);
          return;
        }
      }
    }
    // nccl-tests: "Test NCCL failure common.cu:777 'unhandled system error'"
    if (auto p = lw.find("test nccl failure"); p != std::string::npos) {
      const auto q = lw.find('\'', p);
      const auto q2 = q == std::string::npos ? q : lw.find('\'', q + 1);
      std::string name = q2 == std::string::npos ? std::string() : lw.substr(q + 1, q2 - q - 1);
      if (auto c = name.find(" ("); c != std::string::npos) name = name.substr(0, c);
      add_failure(code_of_name(name), name.empty() ? "unknown" : name, "nccl-tests", i);
      return;
    }
    // "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error."
    for (const auto& r : kNcclResults) {
      if (!starts_with(r.token, "nccl")) continue;
      if (contains(lw, r.token)) {
        add_failure(r.code, r.name, pytorch ? "pytorch" : "nccl", i);
        return;
      }
    }
    // The error string alone ("ncclCommInitRank failed: unhandled system error").
    for (const auto& r : kNcclResults) {
      if (starts_with(r.token, "nccl")) continue;
      if (contains(lw, r.token)) {
        add_failure(r.code, r.name, pytorch ? "pytorch" : "nccl", i);
        return;
      }
    }
  }

  // PyTorch quotes ncclGetLastError() after "Last error:" (NCCLUtils getNcclErrorDetailStr), usually on the next line.
  void last_error(std::size_t i) {
    std::string_view msg = trim_blanks(strip_prefixes(lines_[i]));
    std::size_t line = i;
    {
      const std::string ls = lower(msg);
      const auto q = ls.find("last error:");
      msg = q == std::string::npos ? std::string_view() : trim_blanks(msg.substr(q + 11));
    }
    for (std::size_t k = i + 1; msg.empty() && k < lines_.size() && k <= i + 3; ++k) {
      msg = trim_blanks(strip_prefixes(lines_[k]));
      line = k;
    }
    // An empty "Last error:" (NCCL had none) is followed by the stack trace, not by a message.
    if (msg.empty() || starts_with(msg, "Exception raised from") || starts_with(msg, "C++ CapturedTraceback") ||
        starts_with(msg, "frame #") || starts_with(msg, "Traceback"))
      return;
    diagnose::NcclWarning w;
    const std::string ml = lower(msg);
    w.category = warning_category(ml);
    // A location before the message: "include/shm.h:28 NCCL WARN …" or "misc/socket.cc:46 …".
    const auto sp = msg.find(' ');
    if (sp != std::string_view::npos) {
      std::string_view first = msg.substr(0, sp);
      const auto colon = first.rfind(':');
      if (colon != std::string_view::npos && colon + 1 < first.size() && contains(first.substr(0, colon), ".") &&
          std::all_of(first.begin() + static_cast<std::ptrdiff_t>(colon) + 1, first.end(), is_digit)) {
        w.location = std::string(first);
        msg = trim_blanks(msg.substr(sp + 1));
        if (starts_with(msg, "NCCL WARN ")) msg.remove_prefix(10);
      }
    }
    w.message = to_valid_utf8(msg);
    out_.facts.add(std::move(w), where(line));
    last_error_message_line_ = line;
  }
  std::optional<std::size_t> last_error_message_line_;  // the line a "Last error:" took its message from

  void add_process_failure(std::string what, std::size_t i) {
    if (!process_failures_.insert(what).second) return;
    out_.facts.add(diagnose::ProcessFailure{.what = std::move(what)}, where(i));
  }

  void process_failure(std::size_t i, const std::string& lw, std::string_view text, const std::string& tlow) {
    // srun (slurm): "srun: error: host-a: task 0: Aborted (core dumped)"
    if (contains(lw, "srun: error:")) {
      const auto p = tlow.find("srun:");
      std::string rest = p == std::string::npos ? std::string("srun: error") : excerpt(text.substr(p), 160);
      add_process_failure(rest, i);
      return;
    }
    struct Phrase {
      const char* phrase;
      const char* what;
    };
    static constexpr Phrase kPhrases[] = {
        {"aborted (core dumped)", "Aborted (core dumped)"},
        {"segmentation fault", "Segmentation fault"},
        {"bus error", "Bus error"},
        {"childfailederror", "ChildFailedError"},  // torch/distributed/elastic/multiprocessing/errors/__init__.py
        {"cuda out of memory", "CUDA out of memory"},
        {"outofmemoryerror", "CUDA out of memory"},
        {"exited unexpectedly", "DataLoader worker exited unexpectedly"},  // torch/utils/data/dataloader.py
        {"is killed by signal", "DataLoader worker killed by a signal"},
    };
    for (const auto& ph : kPhrases) {
      if (contains(lw, ph.phrase)) {
        add_process_failure(ph.what, i);
        return;
      }
    }
    // torchrun's failure summary: "exitcode  : -6 (pid: 1234)", "… failed (exitcode: 1)"
    if (auto code = number_after_key(lw, "exitcode"); code && *code != 0) {
      add_process_failure(fmt::format("exit code {}", static_cast<int>(*code)), i);
      return;
    }
    if (auto code = number_after_key(lw, "exit code"); code && *code != 0) {
      add_process_failure(fmt::format("exit code {}", static_cast<int>(*code)), i);
      return;
    }
    // "Signal 6 (SIGABRT) received by PID 1234"; "process 1 terminated with signal SIGKILL"
    if (contains(lw, "received by pid") || contains(lw, "terminated with signal")) {
      const std::size_t q = lw.find("(sig");
      const std::size_t b = q != std::string::npos ? q + 1 : lw.rfind("sig");
      std::size_t e = b;
      while (b != std::string::npos && e < lw.size() && (is_alpha(lw[e]) || is_digit(lw[e]))) ++e;
      if (b != std::string::npos && e > b + 3) {
        add_process_failure("signal " + std::string(to_upper(lw.substr(b, e - b))), i);
        return;
      }
    }
    if (trim_blanks(tlow) == "killed") {
      add_process_failure("Killed", i);
      return;
    }
    // A Python exception at the start of a line: "RuntimeError: …", "torch.distributed.DistBackendError: …".
    std::size_t e = 0;
    while (e < text.size() && (is_word(text[e]) || text[e] == '.')) ++e;
    if (e > 5 && e < text.size() && text[e] == ':' && is_alpha(text[0])) {
      std::string_view name = text.substr(0, e);
      const auto dot = name.rfind('.');
      std::string_view base = dot == std::string_view::npos ? name : name.substr(dot + 1);
      const std::string lb = lower(base);
      if ((lb.size() > 5 && (lb.substr(lb.size() - 5) == "error" || (lb.size() > 9 && lb.substr(lb.size() - 9) == "exception"))) &&
          !starts_with(lb, "nccl"))
        add_process_failure(std::string(base), i);
    }
  }

  static std::string to_upper(std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
  }

  // ── the end of training ──
  void ended(std::size_t i, const std::string& lw) {
    for (const auto& m : kEndMarkers) {
      if (!contains(lw, m.phrase)) continue;
      if (ended_.insert(m.framework).second) out_.facts.add(diagnose::TrainingEnded{.framework = m.framework}, where(i));
      return;
    }
  }

  // ── timing ──
  void add_sample(const std::string& key_format, const char* quantity, const std::string& unit, bool higher, bool running,
                  double value, std::size_t i, std::set<std::string>& this_line) {
    const std::string key = key_format + "|" + quantity + "|" + unit;
    if (!this_line.insert(key).second) return;
    auto& s = series_[key];
    if (s.samples.empty()) {
      s.quantity = quantity;
      s.unit = unit;
      s.format = key_format;
      s.higher_is_better = higher;
      s.running = running;
      series_order_.push_back(key);
    }
    s.samples.push_back({value, i});
    if (!first_timing_line_) first_timing_line_ = i;
  }

  void timing(std::size_t i, std::string_view raw, const std::string& lw) {
    std::set<std::string> this_line;
    tqdm(i, raw);
    time_data(i, lw);
    breakdown(i, lw);
    // Labelled figures.
    for (const auto& r : kKeyRules) {
      if (!contains(lw, r.key)) continue;
      if (*r.needs && !contains(lw, r.needs)) continue;
      std::size_t e = 0;
      const std::string_view key = r.key;
      std::optional<double> v;
      std::size_t from = 0;
      // The first occurrence of the key with a number after it.
      while (true) {
        const std::size_t p = find_key(lw, key, from);
        if (p == std::string::npos) break;
        const std::size_t vp = value_pos(lw, p + key.size());
        std::size_t ce = vp;
        if (std::string_view(r.unit) == "s" || std::string_view(r.unit) == "ms") {
          if (auto c = clock_at(lw, vp, &ce)) {
            v = std::string_view(r.unit) == "ms" ? *c * 1000 : *c;
            e = ce;
            break;
          }
        }
        if (auto n = number_at(lw, vp, &e)) {
          v = n;
          std::string unit = unit_at(lw, e);
          const bool time_unit = std::string_view(r.unit) == "s" || std::string_view(r.unit) == "ms";
          if (time_unit && !unit.empty()) {
            auto c = convert_time(*v, unit, r.unit);
            if (!c) {
              v.reset();  // "time 12 steps" …
              from = p + 1;
              continue;
            }
            v = c;
          } else if (r.unit_required) {
            v.reset();
            from = p + 1;
            continue;
          }
          break;
        }
        from = p + 1;
      }
      if (!v || *v < 0) continue;
      add_sample(r.format, r.quantity, r.unit, r.higher_is_better, r.running, *v, i, this_line);
    }
    // Figures named by their unit.
    if (contains(lw, "/s") || contains(lw, "/step") || contains(lw, "/iter") || contains(lw, "/it") || contains(lw, "second")) {
      for (std::size_t p = 0; p < lw.size(); ++p) {
        if (!is_digit(lw[p]) || (p > 0 && (is_digit(lw[p - 1]) || lw[p - 1] == '.' || lw[p - 1] == ','))) continue;
        std::size_t e = p;
        auto v = number_at(lw, p, &e);
        if (!v) continue;
        const std::string unit = unit_at(lw, e);
        for (const auto& u : kUnitRules) {
          if (unit != u.unit) continue;
          add_sample(std::string("'") + u.unit + "' figures", u.quantity, u.to_unit, u.higher_is_better, false, *v * u.factor, i,
                     this_line);
          break;
        }
        p = e;
      }
    }
    // llm.c: "step    2/74 | train loss 10.949 | norm 15.98 | lr 0.00e+00 | 98.27 ms | 17.2% bf16 MFU | 166752 tok/s"
    if (starts_with(strip_prefixes(lw), "step") && contains(lw, " ms |")) {
      const auto q = lw.find(" ms |");
      std::size_t b = q;
      while (b > 0 && (is_digit(lw[b - 1]) || lw[b - 1] == '.')) --b;
      if (b < q && b > 0 && lw[b - 1] == ' ') {
        if (auto v = number_at(lw, b)) add_sample("llm.c step lines", "step time", "ms", false, false, *v, i, this_line);
      }
    }
  }

  // tqdm and Lightning progress bars: "Epoch 0:  45%|████▌     | 450/1000 [01:23<01:40,  5.41it/s, loss=0.1]",
  // "  5%|▌ | 50/1000 [00:20<06:20,  2.50it/s]", "Training: 123it [00:45,  2.71it/s]", "1.52s/it".
  void tqdm(std::size_t i, std::string_view raw) {
    const std::string_view l = raw;  // tqdm prints "it/s" and "s/it" in lower case
    std::size_t p = 0;
    while (true) {
      const std::size_t a = l.find("it/s", p), b = l.find("s/it", p);
      const std::size_t q = std::min(a, b);
      if (q == std::string::npos) return;
      const bool per_second = q == a;
      p = q + 4;
      if (!per_second && q + 4 < l.size() && is_alpha(l[q + 4])) continue;
      // The number just before the rate.
      std::size_t e = q;
      std::size_t s = e;
      while (s > 0 && (is_digit(l[s - 1]) || l[s - 1] == '.')) --s;
      if (s == e || (s > 0 && is_alpha(l[s - 1]))) continue;  // "?it/s", "Gbit/s"
      auto v = number_at(l, s);
      if (!v || *v <= 0) continue;
      const double step_s = per_second ? 1.0 / *v : *v;
      // The bar's description and total.
      std::string desc;
      std::uint64_t total = 0;
      const std::string_view before = std::string_view(raw).substr(0, s);
      const std::size_t pct = before.rfind("%|");
      std::size_t desc_end = std::string_view::npos;
      if (pct != std::string_view::npos) {
        desc_end = pct;
        while (desc_end > 0 && (is_digit(before[desc_end - 1]) || before[desc_end - 1] == '.')) --desc_end;
      } else {
        const std::size_t it = before.rfind("it [");
        if (it != std::string_view::npos) {
          desc_end = it;
          while (desc_end > 0 && is_digit(before[desc_end - 1])) --desc_end;
        }
      }
      if (desc_end == std::string_view::npos) {
        // Not a tqdm bar; Rich progress bars ("100/100 0:00:12 • 0:00:00 8.12it/s") have no '%|'.
        desc_end = 0;
        const std::size_t sl = before.rfind('/');
        if (sl == std::string_view::npos) continue;
      }
      if (pct != std::string_view::npos) {
        const std::size_t bar = before.find('|', pct + 2);
        if (bar != std::string_view::npos) {
          const std::size_t slash = before.find('/', bar);
          if (slash != std::string_view::npos) {
            std::size_t te = slash + 1;
            if (auto t = number_at(before, te)) total = static_cast<std::uint64_t>(std::max(0.0, *t));
          }
        }
      }
      std::string_view d = strip_prefixes(before.substr(0, desc_end));
      // Text glued before the bar (a previous line's end): keep the part after the last '\r' or "]".
      if (auto cut = d.find_last_of("\r"); cut != std::string_view::npos) d = d.substr(cut + 1);
      d = trim_blanks(d);
      while (!d.empty() && (d.back() == ':' || d.back() == ' ')) d.remove_suffix(1);
      for (char c : d) desc += is_digit(c) ? '#' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      // collapse "##" runs
      desc.erase(std::unique(desc.begin(), desc.end(), [](char x, char y) { return x == '#' && y == '#'; }), desc.end());
      if (desc.size() > 60) desc = desc.substr(desc.size() - 60);
      bool skip = false;
      for (auto w : kNotTraining)
        if (contains(desc, w)) skip = true;
      if (skip) return;
      const std::string key = "tqdm|" + desc + "|" + std::to_string(total);
      auto& ser = series_[key];
      if (ser.samples.empty()) {
        ser.quantity = "step time";
        ser.unit = "s";
        ser.tqdm = true;
        ser.desc = desc;
        ser.total = total;
        ser.format = desc.empty() ? "progress bar" : fmt::format("progress bar '{}'", desc);
        series_order_.push_back(key);
      }
      ser.samples.push_back({step_s, i});
      if (!first_timing_line_) first_timing_line_ = i;
      return;  // one reading per line
    }
  }

  // "Time 22.424 (7.498)\tData 22.372 (7.070)" (pytorch/examples imagenet/main.py ProgressMeter/AverageMeter, running
  // averages in parentheses); timm train.py "Time: 0.361s, 2836.31/s  (0.395s, 2592.53/s) … Data: 0.012 (0.037)";
  // torchvision references MetricLogger "time: 0.3323  data: 0.0000"; detectron2 "time: 0.3880 … data_time: 0.0123".
  void time_data(std::size_t i, const std::string& lw) {
    if (!contains(lw, "time") || !contains(lw, "data")) return;
    auto field = [&](std::string_view key, std::optional<double>& cur, std::optional<double>& avg) {
      std::size_t from = 0;
      while (true) {
        const std::size_t p = find_key(lw, key, from);
        if (p == std::string::npos) return;
        std::size_t v = p + key.size();
        if (v < lw.size() && lw[v] == ':') ++v;
        while (v < lw.size() && lw[v] == ' ') ++v;
        std::size_t e = v;
        auto n = number_at(lw, v, &e);
        if (!n || *n < 0) {
          from = p + 1;
          continue;
        }
        if (e < lw.size() && lw[e] == 's' && (e + 1 >= lw.size() || !is_alpha(lw[e + 1]))) ++e;
        cur = n;
        // "(avg)" after it, possibly after ", 2836.31/s " (timm)
        std::size_t open = lw.find('(', e);
        if (open != std::string::npos && open < e + 24) {
          std::size_t ae = open + 1;
          while (ae < lw.size() && lw[ae] == ' ') ++ae;
          if (auto a = number_at(lw, ae, &ae)) avg = a;
        }
        return;
      }
    };
    std::optional<double> t, ta, d, da;
    field("time", t, ta);
    field("data", d, da);
    if (!d) field("data_time", d, da);
    if (!t || !d || *d > *t * 1.5 + 1e-9) return;
    TimeData td;
    td.time = *t;
    td.data = *d;
    td.time_avg = ta;
    td.data_avg = da;
    td.line = i;
    // The position: "[0][10/5005]" (epoch, iteration) or "[ 50/500]".
    for (std::size_t slash_br = lw.find('/'); slash_br != std::string::npos; slash_br = lw.find('/', slash_br + 1)) {
      const std::size_t open = lw.rfind('[', slash_br);
      const std::size_t close = lw.find(']', slash_br);
      const std::size_t open_close = open == std::string::npos ? std::string::npos : lw.find(']', open);
      if (open != std::string::npos && close != std::string::npos && close - open < 30 && open_close == close) {
        std::size_t b = open + 1;
        while (b < lw.size() && lw[b] == ' ') ++b;
        if (auto it = number_at(lw, b); it && *it >= 0) td.iter = static_cast<std::uint64_t>(*it);
        td.position = lw.substr(open, close - open + 1);
        if (open >= 3 && lw[open - 1] == ']') {
          const std::size_t eo = lw.rfind('[', open - 1);
          if (eo != std::string::npos) {
            td.epoch = lw.substr(eo, open - eo);
            td.position = lw.substr(eo, close - eo + 1);
          }
        }
        break;
      }
    }
    time_data_.push_back(std::move(td));
    if (!first_timing_line_) first_timing_line_ = i;
  }

  // DeepSpeed wall_clock_breakdown (deepspeed/runtime/engine.py, timers.log): "[Rank 0] time (ms) | forward: 1425.20
  // | backward: 211.12 | backward_inner: 209.05 | backward_allreduce: 1.99 | step: 649.10"; Megatron timers
  // (megatron/core/timers.py): "time (ms) | forward-backward: 530.2 | forward-compute: 53.79 | backward-compute: …
  // | batch-generator: 1.2 | grads-all-reduce: 30.1 | optimizer: 12.3".
  void breakdown(std::size_t i, const std::string& lw) {
    if (contains(lw, "elapsed time per iteration (ms)")) {
      if (auto v = number_after_key(lw, "elapsed time per iteration (ms)")) last_iteration_ms_ = v;
    }
    const auto p = lw.find("time (ms) |");
    if (p == std::string::npos || contains(lw, "elapsed time per iteration")) return;
    Breakdown b;
    b.line = i;
    std::string_view rest = std::string_view(lw).substr(p + 11);
    while (!rest.empty()) {
      const auto bar = rest.find('|');
      std::string_view item = trim_blanks(rest.substr(0, bar));
      const auto colon = item.find(':');
      if (colon != std::string_view::npos) {
        std::string name(trim_blanks(item.substr(0, colon)));
        std::string_view val = trim_blanks(item.substr(colon + 1));
        // Megatron prints "(min, max)": "forward-compute ...: (53.12, 54.01)"
        if (!val.empty() && val.front() == '(') val.remove_prefix(1);
        if (auto v = number_at(val, 0); v && *v >= 0) b.ms[name] = *v;
      }
      if (bar == std::string_view::npos) break;
      rest = rest.substr(bar + 1);
    }
    if (b.ms.empty()) return;
    const bool megatron = b.ms.count("forward-compute") || b.ms.count("forward-backward") || b.ms.count("optimizer");
    b.basis = megatron ? "log: Megatron timers (ms)" : "log: DeepSpeed wall_clock_breakdown (ms)";
    if (megatron) b.step_ms = last_iteration_ms_;
    breakdowns_.push_back(std::move(b));
    if (!first_timing_line_) first_timing_line_ = i;
  }

  // ── model, batch ──
  void model_and_batch(std::size_t i, std::string_view text, const std::string& tlow, const std::string& tn) {
    // Names: "--model_name_or_path gpt2", "model_name_or_path='gpt2'", "\"_name_or_path\": \"meta-llama/Llama-3.2-3B\"",
    // "=> creating model 'alexnet'" / "=> using pre-trained model 'resnet50'" (pytorch/examples imagenet/main.py),
    // Hugging Face cache paths ".../models--meta-llama--Llama-3.2-3B/snapshots/…".
    static constexpr std::string_view kNameKeys[] = {"model_name_or_path", "_name_or_path", "pretrained_model_name_or_path",
                                                     "model_name", "model_id", "base_model"};
    for (auto key : kNameKeys) {
      if (!contains(tlow, key)) continue;
      if (auto w = word_after_key(text, tlow, key)) add_model_name(*w, i);
    }
    for (std::string_view marker : {"=> creating model '", "=> using pre-trained model '"}) {
      if (auto p = tlow.find(marker); p != std::string::npos) {
        const std::size_t b = p + marker.size();
        const std::size_t e = tlow.find('\'', b);
        if (e != std::string::npos && e > b) add_model_name(std::string(text.substr(std::min(b, text.size()), e - b)), i);
      }
    }
    if (auto p = tlow.find("models--"); p != std::string::npos) {
      std::size_t e = p + 8;
      while (e < tlow.size() && tlow[e] != '/' && tlow[e] != ' ' && tlow[e] != '\'' && tlow[e] != '"') ++e;
      std::string name(text.substr(std::min(p + 8, text.size()), e - p - 8));
      if (auto dd = name.find("--"); dd != std::string::npos) name = name.substr(0, dd) + "/" + name.substr(dd + 2);
      if (!name.empty()) add_model_name(name, i);
    }
    // Parameter counts.
    const std::string& tl = tn;
    if (contains(tl, "param")) param_count(i, tl);
    // dtype
    if (!dtype_) {
      if (contains(tl, "bfloat16 automatic mixed precision") || contains(tl, "mixed precision type: bf16") ||
          contains(tl, "bf16=true") || contains(tl, "bf16: true") || contains(tl, "bf16-mixed"))
        dtype_ = "bf16";
      else if (contains(tl, "16bit automatic mixed precision") || contains(tl, "16bit native automatic mixed precision") ||
               contains(tl, "mixed precision type: fp16") || contains(tl, "fp16=true") || contains(tl, "16-bits training: true"))
        dtype_ = "fp16";
    }
    // Batch sizes: transformers/trainer.py "***** Running training *****" block ("Instantaneous batch size per device
    // = 4", "Total train batch size (w. parallel, distributed & accumulation) = 8", "Gradient Accumulation steps =
    // 1"); TrainingArguments / config dumps; DeepSpeed config ("train_micro_batch_size_per_gpu", "train_batch_size");
    // Megatron ("global batch size: 16", "micro_batch_size ........ 4").
    struct BatchKey {
      const char* key;
      int field;  // 0 per device, 1 global, 2 accumulation
    };
    static constexpr BatchKey kBatchKeys[] = {
        {"instantaneous batch size per device", 0}, {"per_device_train_batch_size", 0}, {"per_gpu_train_batch_size", 0},
        {"train_micro_batch_size_per_gpu", 0},      {"micro_batch_size", 0},            {"micro batch size", 0},
        {"total train batch size (w. parallel, distributed & accumulation)", 1},        {"\"train_batch_size\"", 1},
        {"train_batch_size .", 1},
        {"global batch size", 1},                   {"global_batch_size", 1},           {"gradient accumulation steps", 2},
        {"gradient_accumulation_steps", 2},         {"batch_size", 0}};
    if (contains(tl, "batch") || contains(tl, "accumulation")) {
      for (const auto& k : kBatchKeys) {
        if (!contains(tl, k.key)) continue;
        if (std::string_view(k.key) == "batch_size" && (contains(tl, "eval") || contains(tl, "val_") || contains(tl, "test")))
          continue;
        auto v = number_after_key(tl, k.key);
        if (!v || *v <= 0 || *v > 1e9) continue;
        std::optional<double>& f = k.field == 0 ? batch_.per_device : k.field == 1 ? batch_.global : batch_.gradient_accumulation;
        if (!f) {
          f = *v;
          if (!batch_line_) batch_line_ = i + 1;
        }
      }
    }
  }

  void add_model_name(std::string name, std::size_t i) {
    while (!name.empty() && (name.back() == '.' || name.back() == ',' || name.back() == ':' || name.back() == '/')) name.pop_back();
    const std::string l = lower(name);
    if (name.empty() || l == "none" || l == "null" || l == "true" || l == "false" || name.size() > 200 ||
        starts_with(name, "-") || starts_with(name, "$") || starts_with(name, "{"))
      return;
    for (const auto& [n, line] : models_)
      if (lower(n) == l) return;
    models_.emplace_back(name, i);
  }

  // "124M parameters", "674 K  Total params", "number of parameters: 123.65M", "Number of trainable parameters =
  // 124,439,808", "Created model with total parameters: 7392727040 (7.39 B)", "trainable params: 4,194,304 || all params:
  // 6,742,609,920" (peft), "Total number of parameters in billions: 1.2" (Megatron).
  void param_count(std::size_t i, const std::string& tl) {
    if (contains(tl, "(mb)") || contains(tl, "size (") || contains(tl, "estimated") || contains(tl, "bytes") ||
        contains(tl, "param_groups") || contains(tl, "parameters that were not used") || contains(tl, "unused param"))
      return;
    auto scale_after = [&](std::size_t e, std::size_t* end) -> double {
      std::size_t k = e;
      if (k < tl.size() && tl[k] == ' ') ++k;
      if (k < tl.size()) {
        const char c = tl[k];
        const bool alone = k + 1 >= tl.size() || !is_alpha(tl[k + 1]);
        if (alone && (c == 'k' || c == 'm' || c == 'b' || c == 'g' || c == 't')) {
          if (end) *end = k + 1;
          return c == 'k' ? 1e3 : c == 'm' ? 1e6 : c == 't' ? 1e12 : 1e9;
        }
        if (starts_with(std::string_view(tl).substr(k), "million")) return 1e6;
        if (starts_with(std::string_view(tl).substr(k), "billion")) return 1e9;
        if (starts_with(std::string_view(tl).substr(k), "thousand")) return 1e3;
      }
      return 1;
    };
    auto label_priority = [](std::string_view label) {
      if (contains(label, "non-trainable") || contains(label, "non trainable") || contains(label, "frozen")) return 0;
      if (contains(label, "total") || contains(label, "all param") || contains(label, "all ")) return 3;
      if (contains(label, "trainable")) return 1;
      return 2;
    };
    // A number after a "param" word and a ':' or '=' ("number of parameters: …", not "record_param_comms", "pid": 1).
    for (std::size_t p = tl.find("param"); p != std::string::npos; p = tl.find("param", p + 5)) {
      if (p > 0 && is_word(tl[p - 1])) continue;
      std::size_t sep = tl.find_first_of(":=", p);
      if (sep == std::string::npos || sep > p + 40) continue;
      const std::string_view label_text = std::string_view(tl).substr(p, sep - p);
      if (!std::all_of(label_text.begin(), label_text.end(), [](char c) { return is_alpha(c) || c == ' ' || c == '(' || c == ')'; }))
        continue;
      std::size_t v = sep + 1;
      while (v < tl.size() && tl[v] == ' ') ++v;
      std::size_t e = v;
      auto n = number_at(tl, v, &e);
      if (!n) continue;
      double scale = scale_after(e, nullptr);
      if (contains(std::string_view(tl).substr(p, sep - p), "in billions")) scale = 1e9;
      if (contains(std::string_view(tl).substr(p, sep - p), "in millions")) scale = 1e6;
      // the label: from the previous separator ("||", ",", "|") to the ':'
      std::size_t lb = tl.rfind("|", p);
      lb = lb == std::string::npos ? 0 : lb;
      const int pr = label_priority(std::string_view(tl).substr(lb, sep - lb));
      if (pr > 0) params_.push_back({*n * scale, pr, i});
    }
    // A number before "param": "124M parameters", "674 K Trainable params", "6,139,136 total parameters".
    for (std::size_t p = tl.find("param"); p != std::string::npos; p = tl.find("param", p + 5)) {
      if (p > 0 && is_alpha(tl[p - 1])) continue;
      // up to three words back
      std::size_t b = p;
      std::string label;
      for (int w = 0; w < 4 && b > 0; ++w) {
        std::size_t we = b;
        while (we > 0 && tl[we - 1] == ' ') --we;
        std::size_t wb = we;
        while (wb > 0 && tl[wb - 1] != ' ') --wb;
        std::string_view word = std::string_view(tl).substr(wb, we - wb);
        std::size_t ne = 0;
        auto n = number_at(word, 0, &ne);
        const bool scale_word = word.size() == 1 && (word == "k" || word == "m" || word == "b" || word == "g");
        if (n && (ne == word.size() || (ne + 1 == word.size() && is_alpha(word.back())))) {
          double scale = 1;
          if (ne + 1 == word.size()) {
            const char c = word.back();
            scale = c == 'k' ? 1e3 : c == 'm' ? 1e6 : (c == 'b' || c == 'g') ? 1e9 : 0;
          } else {
            // a scale word after the number: "124 M total params"
            std::string_view after = std::string_view(tl).substr(we, p - we);
            after = trim_blanks(after);
            if (starts_with(after, "k ")) scale = 1e3;
            else if (starts_with(after, "m ")) scale = 1e6;
            else if (starts_with(after, "b ") || starts_with(after, "g ")) scale = 1e9;
            else if (starts_with(after, "million")) scale = 1e6;
            else if (starts_with(after, "billion")) scale = 1e9;
          }
          const int pr = label_priority(label);
          if (scale > 0 && pr > 0) params_.push_back({*n * scale, pr, i});
          break;
        }
        if (!scale_word) label = std::string(word) + " " + label;
        b = wb;
      }
    }
  }

  // ── world ──
  void add_world(diagnose::WorldShape w, std::size_t i) {
    const auto key = std::make_tuple(w.ranks, w.nodes, w.ranks_per_node, w.gpus_per_process, w.processes);
    if (!world_keys_.insert(key).second) return;
    if (!gpus_) {
      if (w.ranks) gpus_ = *w.ranks * std::max(1, w.gpus_per_process.value_or(1));
      else if (w.processes && w.gpus_per_process) gpus_ = *w.processes * *w.gpus_per_process;
    }
    out_.facts.add(std::move(w), where(i));
  }

  // "world_size=8", "world size: 8" (Megatron "using world size: 8, data-parallel size: 8 …"), DeepSpeed launcher
  // "dist_world_size=4" and "nnodes=1, num_local_procs=4", accelerate's state "Num processes: 8" (after "Distributed
  // environment: MULTI_GPU"), Lightning "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/8" and "All distributed
  // processes registered. Starting with 8 processes".
  void world(std::size_t i, const std::string& lw) {
    auto ranks_from = [&](std::string_view key, std::string basis) {
      auto v = number_after_key(lw, key);
      if (!v || *v < 1 || *v > 1e6 || *v != std::floor(*v)) return;
      diagnose::WorldShape w;
      w.ranks = static_cast<int>(*v);
      w.processes = w.ranks;
      w.basis = std::move(basis);
      add_world(std::move(w), i);
    };
    if (contains(lw, "world_size") || contains(lw, "world size")) {
      for (std::string_view k : {"world_size", "dist_world_size", "world size"}) {
        if (find_key(lw, k) == std::string::npos) continue;
        auto v = number_after_key(lw, k);
        if (!v) continue;
        ranks_from(k, fmt::format("log: {} {}", k, static_cast<long long>(*v)));
        break;
      }
    }
    if (contains(lw, "num processes")) {
      auto v = number_after_key(lw, "num processes");
      if (v) ranks_from("num processes", fmt::format("accelerate: Num processes {}", static_cast<long long>(*v)));
    }
    if (auto p = lw.find("member:"); p != std::string::npos && contains(lw, "initializing distributed")) {
      const auto slash = lw.find('/', p);
      if (slash != std::string::npos) {
        if (auto v = number_at(lw, slash + 1); v && *v >= 1 && *v < 1e6) {
          diagnose::WorldShape w;
          w.ranks = static_cast<int>(*v);
          w.processes = w.ranks;
          w.basis = fmt::format("Lightning: MEMBER x/{}", w.ranks.value());
          add_world(std::move(w), i);
        }
      }
    }
    if (auto p = lw.find("starting with "); p != std::string::npos && contains(lw, " processes")) {
      if (auto v = number_at(lw, p + 14); v && *v >= 1 && *v < 1e6) {
        diagnose::WorldShape w;
        w.ranks = static_cast<int>(*v);
        w.processes = w.ranks;
        w.basis = fmt::format("Lightning: starting with {} processes", w.ranks.value());
        add_world(std::move(w), i);
      }
    }
    // Lightning: "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1,2,3]" (what CUDA shows the job).
    if (auto p = lw.find("cuda_visible_devices: ["); p != std::string::npos && !cuda_count_seen_) {
      const std::size_t b = p + 23, e = lw.find(']', b);
      if (e != std::string::npos) {
        const std::string_view list = std::string_view(lw).substr(b, e - b);
        int count = list.empty() ? 0 : static_cast<int>(std::count(list.begin(), list.end(), ',')) + 1;
        diagnose::GpuCount g;
        g.count = count;
        g.scope = "cuda";
        out_.facts.add(std::move(g), where(i));
        cuda_count_seen_ = true;
      }
    }
    if (contains(lw, "num_local_procs") && contains(lw, "nnodes")) {
      auto n = number_after_key(lw, "nnodes");
      auto l = number_after_key(lw, "num_local_procs");
      if (n && l && *n >= 1 && *l >= 1) {
        diagnose::WorldShape w;
        w.nodes = static_cast<int>(*n);
        w.ranks_per_node = static_cast<int>(*l);
        w.ranks = *w.nodes * *w.ranks_per_node;
        w.processes = w.ranks;
        w.basis = fmt::format("DeepSpeed launcher: nnodes {}, num_local_procs {}", *w.nodes, *w.ranks_per_node);
        add_world(std::move(w), i);
      }
    }
  }

  // ── DDP's logging data, TORCH_DISTRIBUTED_DEBUG ──
  // torch/csrc/distributed/c10d/logger.cpp: "[Rank 0]: DDP Initialized with: " then "key: value" lines
  // (bucket_cap_bytes, find_unused_parameters, gradient_as_bucket_view, static_graph, world_size, bucket_sizes,
  // dtypes …), and with DETAIL "Avg forward compute time: 40838608" (ns) …; DistributedDataParallel's
  // _get_ddp_logging_data() printed as a dict ('avg_forward_compute_time': …, ns); reducer.cpp "Reducer initialized
  // with bucket_bytes_cap: 26214400 first_bucket_bytes_cap: 1048576".
  void ddp(std::size_t i, std::string_view text, const std::string& tl) {
    // `tl` is `text` in lower case, position for position.
    if (contains(tl, "ddp initialized with")) {
      in_ddp_block_ = true;
      mark_ddp(i);
      return;
    }
    bool block_line = false;
    if (in_ddp_block_) {
      // "key: value" lines continue the block.
        const std::string_view t = trim_blanks(tl);
      const auto colon = t.find(':');
      block_line = colon != std::string::npos && colon > 0 && colon < 48 &&
                   std::all_of(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(colon), [](char c) { return is_word(c); });
      if (!block_line) in_ddp_block_ = false;
    }
    const bool dict = contains(tl, "'find_unused_parameters'") || contains(tl, "'bucket_cap_bytes'") ||
                      contains(tl, "'avg_forward_compute_time'");
    auto flag = [&](std::string_view key, std::optional<bool>& f) {
      if (!contains(tl, key)) return;
      // "find_unused_parameters: 0", "find_unused_parameters=True" (and ddp_find_unused_parameters=False in
      // TrainingArguments dumps); the reducer warning's "=True was specified" also says so.
      if (auto w = word_after_key(text, tl, key)) {
        if (auto b = to_bool(*w)) {
          if (!f) f = b;
          mark_ddp(i);
        }
      } else if (auto w2 = word_after_key(text, tl, std::string("ddp_") + std::string(key))) {
        if (auto b = to_bool(*w2)) {
          if (!f) f = b;
          mark_ddp(i);
        }
      }
    };
    // Advice in error messages ("…by passing the keyword argument `find_unused_parameters=True`…") states no setting.
    const bool advice = contains(tl, "keyword argument") || contains(tl, "enable the detection") ||
                        contains(tl, "you can enable") || contains(tl, "consider ") || contains(tl, "if this is intentional");
    if (!advice) flag("find_unused_parameters", ddp_.find_unused_parameters);
    flag("static_graph", ddp_.static_graph);
    flag("gradient_as_bucket_view", ddp_.gradient_as_bucket_view);
    if (contains(tl, "bucket_cap_bytes") || contains(tl, "bucket_bytes_cap")) {
      auto v = number_after_key(tl, "bucket_cap_bytes");
      if (!v) v = number_after_key(tl, "bucket_bytes_cap");
      if (v && *v > 0 && !ddp_.bucket_cap_mb) ddp_.bucket_cap_mb = *v / (1024.0 * 1024.0), mark_ddp(i);
    }
    if (contains(tl, "bucket_cap_mb")) {
      auto v = number_after_key(tl, "bucket_cap_mb");
      if (!v) v = number_after_key(tl, "ddp_bucket_cap_mb");
      if (v && *v > 0 && !ddp_.bucket_cap_mb) ddp_.bucket_cap_mb = *v, mark_ddp(i);
    }
    if ((block_line || dict) && contains(tl, "bucket_sizes")) {
      const auto p = find_key(tl, "bucket_sizes");
      std::size_t v = value_pos(tl, p + 12);
      while (v < tl.size()) {
        std::size_t e = v;
        auto n = number_at(tl, v, &e);
        if (!n || *n < 0) break;
        ddp_.bucket_bytes.push_back(static_cast<std::uint64_t>(*n));
        v = e;
        while (v < tl.size() && (tl[v] == ',' || tl[v] == ' ')) ++v;
      }
      mark_ddp(i);
    }
    if (block_line || dict) {
      if (auto v = number_after_key(tl, "world_size"); v && *v >= 1 && !ddp_.world_size) {
        ddp_.world_size = static_cast<int>(*v);
        mark_ddp(i);
      }
      if (contains(tl, "dtypes")) {
        if (auto w = word_after_key(text, tl, "dtypes"); w && !ddp_.dtype) {
          const std::string l = lower(*w);
          ddp_.dtype = l == "float" || l == "float32" ? "fp32" : contains(l, "bfloat16") ? "bf16"
                       : (contains(l, "half") || l == "float16") ? "fp16" : l;
          mark_ddp(i);
        }
      }
    }
    // Runtime averages (ns).
    struct Avg {
      const char* key;
      int field;  // 0 forward, 1 backward compute, 2 backward comm, 3 overlap
    };
    static constexpr Avg kAvgs[] = {
        {"avg forward compute time", 0},          {"avg backward compute time", 1},
        {"avg backward comm. time", 2},           {"avg backward comm/comp overlap time", 3},
        {"avg_forward_compute_time", 0},          {"avg_backward_compute_time", 1},
        {"avg_backward_comm_time", 2},            {"avg_backward_compute_comm_overlap_time", 3},
    };
    if (contains(tl, "avg")) {
      for (const auto& a : kAvgs) {
        if (!contains(tl, a.key)) continue;
        if (auto v = number_after_key(tl, a.key); v && *v >= 0) {
          // The latest value wins: later iterations are past warm-up.
          std::optional<double>& f = a.field == 0   ? ddp_.forward_ms
                                     : a.field == 1 ? ddp_.backward_compute_ms
                                     : a.field == 2 ? ddp_.backward_comm_ms
                                                    : ddp_.backward_comm_compute_overlap_ms;
          f = *v / 1e6;
          mark_ddp(i);
        }
      }
    }
  }

  void mark_ddp(std::size_t i) {
    ddp_set_ = true;
    if (!ddp_line_) ddp_line_ = i + 1;
  }

  // ── commands inside the log ──
  // What some launchers and scripts print before the command they run.
  static std::string_view command_text(std::string_view t) {
    for (std::string_view p : {"cmd = ", "Command: ", "command: ", "Running command: ", "Executing: "})
      if (starts_with(t, p)) t.remove_prefix(p.size());
    return t;
  }

  // Whether the line is a launch command (a launcher near its start, after at most a prompt and VAR=value words).
  static bool is_command(std::string_view text) {
    static constexpr std::string_view kLaunchWords[] = {"torchrun", "torch.distributed.launch", "torch.distributed.run",
                                                       "mpirun", "mpiexec", "srun ", "deepspeed ", "accelerate launch",
                                                       "python", "_perf", "horovodrun"};
    if (text.size() > 16384) return false;
    const std::string_view head = text.substr(0, 600);
    bool any = false;
    for (auto w : kLaunchWords)
      if (contains(head, w)) any = true;
    return any && looks_like_command(command_text(text));
  }

  void commands(std::size_t i, const std::string& joined) {
    auto r = read_command_line(joined, source_, i + 1);
    if (r.facts.empty()) return;
    for (auto f : r.facts.all()) {
      f.where = where(i);
      if (auto* w = std::get_if<diagnose::WorldShape>(&f.value)) {
        add_world(*w, i);
        continue;
      }
      if (auto* m = std::get_if<diagnose::ModelSeen>(&f.value)) {
        add_model_name(m->name, i);
        continue;
      }
      if (auto* b = std::get_if<diagnose::BatchSize>(&f.value)) {
        if (!batch_.per_device && b->per_device) batch_.per_device = b->per_device;
        if (!batch_.global && b->global) batch_.global = b->global;
        if (!batch_.gradient_accumulation && b->gradient_accumulation) batch_.gradient_accumulation = b->gradient_accumulation;
        if (!batch_line_) batch_line_ = i + 1;
        continue;
      }
      out_.facts.add(std::move(f));
    }
    for (auto& n : r.notes) out_.notes.push_back(std::move(n));
  }

  // ── after the last line ──
  void finish_failures() {
    for (auto& f : failures_) {
      diagnose::NcclFailure nf;
      nf.code = f.code;
      nf.name = f.name;
      nf.reporter = f.reporter;
      // The phase: creating the communicator (init) when the error block names it; a collective when the training
      // loop had printed timing lines before.
      bool init = false;
      for (std::size_t k = f.line; k < lines_.size() && k < f.line + 12; ++k) {
        const std::string& l = low(k);
        if (contains(l, "from create at") || contains(l, "ncclcomminit") || contains(l, "nccl comm init") ||
            contains(l, "getncclcomm") || contains(l, "init_process_group") || contains(l, "ncclcomm::create") ||
            contains(l, "_new_process_group_helper") || contains(l, "initnccl")) {
          init = true;
          break;
        }
      }
      if (init) nf.phase = "init";
      else if (first_timing_line_ && *first_timing_line_ < f.line) nf.phase = "collective";
      out_.facts.add(std::move(nf), where(f.line));
    }
  }

  void finish_models() {
    std::optional<ParamCount> best;
    for (const auto& p : params_)
      if (p.value >= 1000 && (!best || p.priority > best->priority)) best = p;
    if (models_.empty()) {
      if (best) out_.facts.add(diagnose::ModelSeen{.name = "", .parameters = best->value, .dtype = dtype_}, where(best->line));
      return;
    }
    for (std::size_t k = 0; k < models_.size(); ++k) {
      const auto& [name, line] = models_[k];
      std::optional<double> params = known_model_parameters(name);
      if (best && models_.size() == 1) params = best->value;
      out_.facts.add(diagnose::ModelSeen{.name = name, .parameters = params, .dtype = dtype_}, where(line));
    }
  }

  void finish_batch() {
    if (!batch_line_) return;
    if (!batch_.per_device && !batch_.global && !batch_.gradient_accumulation) return;
    out_.facts.add(batch_, where(*batch_line_ - 1));
  }

  void finish_ddp() {
    if (!ddp_set_ || !ddp_line_) return;
    out_.facts.add(ddp_, where(*ddp_line_ - 1));
  }

  std::map<std::string, std::string> dims() const {
    std::map<std::string, std::string> d;
    if (gpus_) d["gpus"] = std::to_string(*gpus_);
    return d;
  }

  static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  }

  void finish_timing() {
    // Progress bars: of bars with one description, the one with the largest total is the training loop (a
    // Trainer's evaluation bar has no description either).
    std::map<std::string, std::pair<std::uint64_t, std::size_t>> best_total;
    for (const auto& key : series_order_) {
      const auto& s = series_[key];
      if (!s.tqdm) continue;
      auto& b = best_total[s.desc];
      if (s.total > b.first || (s.total == b.first && s.samples.size() > b.second)) b = {s.total, s.samples.size()};
    }
    for (const auto& key : series_order_) {
      const auto& s = series_[key];
      if (s.samples.empty()) continue;
      if (s.tqdm) {
        const auto& b = best_total[s.desc];
        if (s.total != b.first || s.samples.size() != b.second) continue;
      }
      diagnose::Measurement m;
      m.quantity = s.quantity;
      m.unit = s.unit;
      m.higher_is_better = s.higher_is_better;
      m.dims = dims();
      std::size_t line = s.samples.back().line;
      const std::size_t n = s.samples.size();
      if (s.running) {
        m.value = s.samples.back().value;
        m.row = n > 1 ? fmt::format("{}: the last running average of {} lines", s.format, n) : s.format;
      } else if (n == 1) {
        m.value = s.samples.front().value;
        m.row = s.format;
        line = s.samples.front().line;
      } else {
        std::vector<double> v;
        for (std::size_t k = 1; k < n; ++k) v.push_back(s.samples[k].value);
        m.value = median(v);
        // The line whose value is nearest the median shows it.
        double best = INFINITY;
        for (std::size_t k = 1; k < n; ++k) {
          const double d = std::fabs(s.samples[k].value - m.value);
          if (d < best) best = d, line = s.samples[k].line;
        }
        m.row = fmt::format("{}: median of {} lines (lines {}–{}), the first left out as warm-up", s.format, n - 1,
                            s.samples[1].line + 1, s.samples.back().line + 1);
        if (s.tqdm && s.total) m.row += fmt::format(", bar total {}", s.total);
      }
      out_.facts.add(std::move(m), where(line));
    }
    finish_time_data();
    finish_breakdowns();
  }

  void finish_time_data() {
    if (time_data_.empty()) return;
    // The last line past warm-up: not the first line, not iteration 0.
    const TimeData* last = nullptr;
    for (std::size_t k = 0; k < time_data_.size(); ++k) {
      const auto& t = time_data_[k];
      if (k == 0 && time_data_.size() > 1) continue;
      if (t.iter && *t.iter == 0 && time_data_.size() > 1) continue;
      last = &t;
    }
    if (!last) {
      if (time_data_.size() != 1) return;
      last = &time_data_.front();
    }
    const bool warm_up_only = time_data_.size() == 1;
    diagnose::StepPhases sp;
    if (gpus_) sp.world_size = gpus_;
    std::string where_text = last->position.empty() ? fmt::format("line {}", last->line + 1) : last->position;
    if (last->time_avg && last->data_avg) {
      sp.step_s = last->time_avg;
      sp.data_wait_s = last->data_avg;
      sp.basis = fmt::format("log: Time/Data running averages at {}", where_text);
      // The first iteration of the same epoch, when its line is there, can be taken out of the averages.
      const TimeData* first = nullptr;
      for (const auto& t : time_data_)
        if (t.iter && *t.iter == 0 && t.epoch == last->epoch && &t != last) first = &t;
      if (first && last->iter && *last->iter > 0) {
        const double k = static_cast<double>(*last->iter);
        const double step = (*last->time_avg * (k + 1) - first->time) / k;
        const double data = (*last->data_avg * (k + 1) - first->data) / k;
        if (step > 0 && data >= 0)
          sp.basis += fmt::format(" (they include the warm-up first iteration; without it: step {:.3f} s, data {:.3f} s)",
                                  step, data);
      } else {
        sp.basis += " (the averages include the first, warm-up iterations)";
      }
    } else {
      std::vector<double> t, d;
      for (std::size_t k = warm_up_only ? 0 : 1; k < time_data_.size(); ++k) {
        t.push_back(time_data_[k].time);
        d.push_back(time_data_[k].data);
      }
      sp.step_s = median(t);
      sp.data_wait_s = median(d);
      sp.basis = fmt::format("log: time/data, median of {} lines{}", t.size(), warm_up_only ? " (one line: may be warm-up)" : ", the first left out as warm-up");
    }
    diagnose::Measurement m;
    m.quantity = "step time";
    m.unit = "s";
    m.value = *sp.step_s;
    m.dims = dims();
    m.row = sp.basis.substr(5);
    out_.facts.add(std::move(m), where(last->line));
    out_.facts.add(std::move(sp), where(last->line));
  }

  void finish_breakdowns() {
    if (breakdowns_.empty()) return;
    const Breakdown& b = breakdowns_.size() > 1 ? breakdowns_.back() : breakdowns_.front();
    auto get = [&](std::initializer_list<const char*> names) -> std::optional<double> {
      for (const char* n : names)
        if (auto it = b.ms.find(n); it != b.ms.end()) return it->second / 1000.0;
      return std::nullopt;
    };
    diagnose::StepPhases sp;
    if (gpus_) sp.world_size = gpus_;
    sp.forward_s = get({"forward", "fwd", "forward-compute"});
    sp.backward_s = get({"backward", "bwd", "backward-compute"});
    sp.all_reduce_s = get({"backward_allreduce", "bwd_allreduce", "grads-all-reduce", "all-grads-sync",
                           "backward-params-all-reduce", "allreduce"});
    sp.optimizer_s = get({"step", "optimizer"});
    sp.data_wait_s = get({"batch-generator", "batch_input"});
    if (auto tb = get({"train_batch"}); tb && *tb > 0) sp.step_s = tb;
    if (!sp.step_s && b.step_ms) sp.step_s = *b.step_ms / 1000.0;
    sp.basis = b.basis + (breakdowns_.size() > 1 ? fmt::format(", the last of {} lines", breakdowns_.size()) : "");
    out_.facts.add(std::move(sp), where(b.line));
  }

  struct Failure {
    std::optional<int> code;
    std::string name, reporter;
    std::size_t line = 0;
  };

  std::string_view text_;
  std::string source_;
  bool probe_;
  std::vector<std::string_view> lines_;
  std::vector<std::size_t> low_cache_index_;
  std::deque<std::string> low_store_;
  std::size_t continued_until_ = 0;
  std::optional<double> args_n_gpu_, args_local_rank_;  // a TrainingArguments dump, one field per line
  std::size_t args_line_ = 0;  // lines before this were read as continuations of a command
  diagnose::Reading out_;
  std::set<std::string> seen_ids_;
  // errors
  std::vector<Failure> failures_;
  std::set<std::string> versions_, process_failures_;
  // the end
  std::set<std::string> ended_;
  // timing
  std::map<std::string, Series> series_;
  std::vector<std::string> series_order_;
  std::optional<std::size_t> first_timing_line_;
  std::vector<TimeData> time_data_;
  std::vector<Breakdown> breakdowns_;
  std::optional<double> last_iteration_ms_;
  // model, batch, world, DDP
  std::vector<std::pair<std::string, std::size_t>> models_;
  std::vector<ParamCount> params_;
  std::optional<std::string> dtype_;
  diagnose::BatchSize batch_;
  std::optional<std::size_t> batch_line_;  // 1-based
  std::set<std::tuple<std::optional<int>, std::optional<int>, std::optional<int>, std::optional<int>, std::optional<int>>> world_keys_;
  std::optional<int> gpus_;
  bool cuda_count_seen_ = false;
  diagnose::DdpConfig ddp_;
  bool ddp_set_ = false, in_ddp_block_ = false;
  std::optional<std::size_t> ddp_line_;  // 1-based
};

}  // namespace

bool looks_like_training_log(std::string_view text) {
  try {
    Reader r(text, "", true);
    r.run();
    return r.found();
  } catch (...) {
    return false;
  }
}

diagnose::Reading read_training_log(std::string_view text, const std::string& source) {
  std::optional<Reader> r;
  try {
    r.emplace(text, source, false);
    r->run();
    return r->finish();
  } catch (const std::exception& e) {
    // Out of memory or a bug: what was read so far, and a note.
    diagnose::Reading out;
    if (r) {
      try {
        out = r->finish();
      } catch (...) {
        out = {};
      }
    }
    out.notes.push_back(std::string("training-log reader stopped early: ") + e.what());
    return out;
  }
}

}  // namespace scalescope::analyze
