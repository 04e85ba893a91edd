// The training-log reader's job shape: the model (by name and parameter count), the batch, the world (ranks, nodes,
// GPUs) and DDP's settings (its logging data, TORCH_DISTRIBUTED_DEBUG).
#include "readers/job/training_log_reader.h"

namespace scalescope::analyze::training_log_detail {

// ── model, batch ──
void Reader::model_and_batch(std::size_t i, std::string_view text, const std::string& tlow, const std::string& tn) {
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

void Reader::add_model_name(std::string name, std::size_t i) {
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
void Reader::param_count(std::size_t i, const std::string& tl) {
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
void Reader::add_world(diagnose::WorldShape w, std::size_t i) {
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
void Reader::world(std::size_t i, const std::string& lw) {
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
void Reader::ddp(std::size_t i, std::string_view text, const std::string& tl) {
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

void Reader::mark_ddp(std::size_t i) {
  ddp_set_ = true;
  if (!ddp_line_) ddp_line_ = i + 1;
}

void Reader::finish_models() {
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

void Reader::finish_batch() {
  if (!batch_line_) return;
  if (!batch_.per_device && !batch_.global && !batch_.gradient_accumulation) return;
  out_.facts.add(batch_, where(*batch_line_ - 1));
}

void Reader::finish_ddp() {
  if (!ddp_set_ || !ddp_line_) return;
  out_.facts.add(ddp_, where(*ddp_line_ - 1));
}

}  // namespace scalescope::analyze::training_log_detail
