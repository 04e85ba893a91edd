// Table reader, part 2: column headers — what a value column measures, which dimension a configuration column
// holds.
#include <algorithm>
#include <cctype>
#include <regex>
#include <set>

#include "text/log_text.h"
#include "readers/tables/tables_internal.h"

namespace scalescope::analyze::tables_detail {
namespace {

bool has_word(const std::vector<std::string>& words, std::initializer_list<std::string_view> any) {
  for (const auto& w : words)
    for (auto a : any)
      if (w == a) return true;
  return false;
}

// Words that name a quantity or only fill a header; what remains tells columns of one quantity apart.
const std::set<std::string>& header_words() {
  static const std::set<std::string> k = {
      "speedup", "speed-up", "speed", "up", "scaling", "weak", "strong", "efficiency", "busbw", "algbw", "bus", "alg",
      "algorithm", "bandwidth", "bw", "idle", "share", "ratio", "fraction", "gpu", "gpus", "util", "utilization",
      "utilisation", "usage", "busy", "processing", "compute", "computation", "kernel", "allreduce", "all-reduce",
      "all", "reduce", "comm", "communication", "nccl", "sync", "data", "loading", "load", "wait", "dataloader",
      "latency", "throughput", "rate", "fps", "epoch", "step", "iteration", "iter", "batch", "time", "runtime",
      "duration", "elapsed", "wall", "secs", "seconds", "sec", "total", "avg", "average", "mean", "median", "peak",
      "max", "per", "train", "training", "measured", "overall", "of", "the", "in", "-", "–", "performance", "perf",
      "mixed", "precision", "tf32", "fp32", "fp16", "bf16", "fp8", "amp", "s", "ms", "%", "(%)", "x", "to", "and",
      "vs", "vs.", "clock", "wallclock", "value", "result", "results"};
  return k;
}

std::string precision_word(const std::string& w) {
  if (w == "tf32" || w == "fp32" || w == "fp16" || w == "bf16" || w == "fp8") return w;
  if (w == "amp" || w == "mixed") return "mixed";
  return "";
}

// "TF32 - mixed precision", "Mixed Precision to TF32", "FP32 vs AMP" → "TF32 to mixed precision".
std::string comparison(std::string_view text) {
  const std::string t(trim_blanks(text));
  const std::string l = lower(t);
  for (std::string_view sep : {" to ", " - ", " vs. ", " vs ", " → ", " -> ", "/"}) {
    const auto pos = l.find(sep);
    if (pos != std::string::npos && pos > 0)
      return std::string(trim_blanks(std::string_view(t).substr(0, pos))) + " to " +
             std::string(trim_blanks(std::string_view(t).substr(pos + sep.size())));
  }
  return "";
}

}  // namespace

Quantity quantity_of_header(std::string_view header) {
  Quantity q;
  const std::string h = clean_cell(header);
  // Parenthesised and bracketed parts: a unit, or a note ("TF32 - mixed precision", "90E").
  std::string body;
  std::vector<std::string> parens;
  for (std::size_t i = 0; i < h.size(); ++i) {
    if (h[i] == '(' || h[i] == '[') {
      const char close = h[i] == '(' ? ')' : ']';
      const auto end = h.find(close, i + 1);
      if (end != std::string::npos) {
        parens.emplace_back(trim_blanks(std::string_view(h).substr(i + 1, end - i - 1)));
        body += ' ';
        i = end;
        continue;
      }
    }
    body += h[i];
  }
  std::vector<std::string> notes;
  for (const auto& p : parens) {
    if (!q.unit)
      if (auto u = unit_of(p)) {
        q.unit = u;
        continue;
      }
    notes.push_back(p);
  }
  std::string b(trim_blanks(body));
  // A header that is only a unit: "it/s", "GB/s", "sec".
  if (!q.unit)
    if (auto u = unit_of(b); u && !u->ratio) {
      q.unit = u;
      b.clear();
    }
  // A unit as the last word ("time secs", "busbw GB/s", "Idle %") or suffix ("time_s", "step_ms").
  if (!q.unit) {
    const auto sp = b.find_last_of(" \t");
    if (sp != std::string::npos)
      if (auto u = unit_of(b.substr(sp + 1)); u && !u->ratio) {
        q.unit = u;
        b = std::string(trim_blanks(std::string_view(b).substr(0, sp)));
      }
  }
  if (!q.unit) {
    const std::string lb = lower(b);
    for (auto [suffix, unit] : {std::pair{"_ms", "ms"}, {"_sec", "s"}, {"_secs", "s"}, {"_s", "s"}, {"_us", "us"}})
      if (ends_with(lb, suffix) && lb.size() > std::string_view(suffix).size()) {
        q.unit = unit_of(unit);
        b = b.substr(0, b.size() - std::string_view(suffix).size());
        break;
      }
  }
  // A unit after the last '_' of the last word: "global_step/sec", "train_samples/s" (TensorBoard's and HF's names).
  if (!q.unit) {
    const auto sp = b.find_last_of(" \t"), us = b.find_last_of('_');
    if (us != std::string::npos && (sp == std::string::npos || us > sp) && b.find('/', us) != std::string::npos)
      if (auto u = unit_of(b.substr(us + 1)); u && !u->ratio) {
        q.unit = u;
        b = b.substr(0, us);
      }
  }
  // "train_samples_per_second", "tokens per sec": a rate.
  if (!q.unit) {
    static const std::regex per(R"(([a-z]+)[ _]per[ _]sec(ond)?s?\b)");
    std::smatch m;
    const std::string lb = lower(b);
    if (lb.size() <= 200 && std::regex_search(lb, m, per))
      if (auto u = unit_of(m[1].str() + "/s")) q.unit = u;
  }
  const std::vector<std::string> orig = words_of(b);
  std::vector<std::string> w;
  for (const auto& x : orig) w.push_back(lower(x));
  const std::string l = lower(b);
  auto any = [&](std::initializer_list<std::string_view> subs) {
    for (auto s : subs)
      if (contains(l, s)) return true;
    return false;
  };
  const std::string uq = q.unit ? q.unit->quantity : "";
  const bool time_words = has_word(w, {"time", "duration", "latency", "secs", "seconds", "elapsed"}) ||
                          uq == "run time" || uq == "step time" || uq == "epoch time";
  std::string name;
  if (any({"speedup", "speed-up", "speed up"})) {
    name = "speedup";
    for (const auto& n : notes)
      if (auto c = comparison(n); !c.empty()) q.dims["compared"] = c;
  } else if (any({"scaling"}) && !any({"efficiency"})) {
    name = "speedup";
    if (has_word(w, {"weak"})) q.dims["scaling"] = "weak";
    if (has_word(w, {"strong"})) q.dims["scaling"] = "strong";
  } else if (any({"efficiency"})) {
    name = "efficiency";
  } else if (any({"busbw", "bus bw", "bus bandwidth", "bus_bw"})) {
    name = "busbw";
  } else if (any({"algbw", "alg bw", "algorithm bandwidth", "alg_bw"})) {
    name = "algbw";
  } else if (any({"bandwidth"}) || has_word(w, {"bw"})) {
    name = "bandwidth";
  } else if (has_word(w, {"idle"})) {
    const bool share = (q.unit && q.unit->unit == "%") || has_word(w, {"share", "ratio", "fraction", "%"});
    name = share ? "GPU idle share" : "GPU idle time";
  } else if (has_word(w, {"mfu"}) || any({"model flops util", "model flop util"})) {
    name = "MFU";
  } else if (has_word(w, {"hfu"}) || any({"hardware flops util", "hardware flop util"})) {
    name = "HFU";
  } else if (any({"util", "sm activity"})) {
    name = "GPU utilization";
  } else if (any({"busy", "processing time", "compute time", "computation time", "gpu time", "kernel time",
                  "gpu compute"})) {
    name = "GPU busy time";
  } else if (any({"allreduce", "all-reduce", "all reduce", "all_reduce", "communication", "nccl"}) ||
             (has_word(w, {"comm", "sync", "reduce"}) && time_words)) {
    name = "communication time";
  } else if (any({"dataloader", "data loading", "data load"}) || (has_word(w, {"data"}) && (time_words || has_word(w, {"wait"})))) {
    name = "data time";
  } else if (has_word(w, {"latency"})) {
    name = "latency";
  } else if (any({"throughput", "samples/s", "tokens/s", "img/s", "images/s", "speed"}) ||
             has_word(w, {"fps", "qps", "rate"}) || uq == "throughput") {
    name = "throughput";
  } else if ((has_word(w, {"epoch", "epochs"}) && time_words) || uq == "epoch time") {
    name = "epoch time";
  } else if (uq == "step time" ||
             (has_word(w, {"step", "iteration", "iter", "batch", "it", "steps"}) && time_words)) {
    name = "step time";
  } else if (time_words || has_word(w, {"runtime", "train_runtime", "wall", "wallclock"}) ||
             any({"train_runtime", "runtime"})) {
    name = "run time";
  } else if (!uq.empty() && uq != "speedup") {
    name = uq;
  }
  // A time unit wins over words of speed ("Speed (s/it)"); a rate per GPU is not the job's throughput.
  if (name == "throughput" && (uq == "run time" || uq == "step time" || uq == "epoch time")) name = uq;
  if (name == "throughput") {
    const std::string lh = lower(h);
    for (std::string_view per : {"/gpu", "per gpu", "/device", "per device", "per-gpu", "per_gpu", "/chip", "/ gpu"}) {
      const auto pos = lh.find(per);
      if (pos == std::string::npos) continue;
      name = "throughput per GPU";
      if (!q.unit) {  // "tokens/sec/GPU": the rate before "/GPU"
        const auto start = lh.find_last_of(" (", pos == 0 ? 0 : pos - 1);
        const std::size_t b0 = start == std::string::npos ? 0 : start + 1;
        if (pos > b0) q.unit = unit_of(std::string_view(lh).substr(b0, pos - b0));
      }
      break;
    }
  }
  if (!name.empty()) {
    q.quantity = name;
    q.known = true;
  } else {
    std::string t = lower(trim_blanks(body));
    q.quantity = t.empty() ? (q.unit && q.unit->unit == "%" ? "share" : "value") : t;
    if (q.unit && q.unit->ratio) q.quantity = "speedup", q.known = true;
  }
  // Precision of the measured variant; a comparison between precisions is not one.
  if (!q.dims.count("compared")) {
    for (auto x : w) {
      while (!x.empty() && (x.front() == '-' || x.front() == '.')) x.erase(x.begin());
      while (!x.empty() && (x.back() == '-' || x.back() == '.')) x.pop_back();
      if (auto p = precision_word(x); !p.empty()) q.dims["precision"] = p;
    }
    for (const auto& n : notes)
      if (auto p = precision_word(lower(n)); !p.empty() && !q.dims.count("precision")) q.dims["precision"] = p;
  }
  // What is left of the header, word by word as printed ("DALI_extra" of "DALI_extra speed (samples/s)").
  std::string word;
  auto flush = [&] {
    std::string t = word;
    word.clear();
    while (!t.empty() && std::string_view("-–:,;.").find(t.back()) != std::string_view::npos) t.pop_back();
    while (!t.empty() && std::string_view("-:,;.").find(t.front()) != std::string_view::npos) t.erase(t.begin());
    const std::string lt = lower(t);
    if (t.empty() || header_words().count(lt) || precision_word(lt) != "") return;
    if (!std::any_of(t.begin(), t.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); })) return;
    q.rest.push_back(t);
  };
  for (char c : b) {
    if (c == ' ' || c == '\t') flush();
    else word += c;
  }
  flush();
  return q;
}

std::optional<std::string> config_key_of_header(std::string_view header) {
  // Lower case, without parenthesised notes, '_' and '-' as blanks, count prefixes dropped.
  // A unit in parentheses makes it a measured column: "epoch (min)", "steps (s)".
  {
    const std::string h = clean_cell(header);
    const auto open = h.find('(');
    const auto close = open == std::string::npos ? std::string::npos : h.find(')', open);
    if (close != std::string::npos)
      if (auto u = unit_of(h.substr(open + 1, close - open - 1)); u && !u->unit.empty()) return std::nullopt;
  }
  std::string l;
  int depth = 0;
  for (char c : lower(clean_cell(header))) {
    if (c == '(' || c == '[') ++depth;
    else if ((c == ')' || c == ']') && depth > 0) --depth;
    else if (depth == 0) l += (c == '_' || c == '-' || c == '\t') ? ' ' : c;
  }
  std::string t;
  for (char c : l)
    if (!(c == ' ' && (t.empty() || t.back() == ' '))) t += c;
  while (!t.empty() && (t.back() == ' ' || t.back() == ':' || t.back() == '.')) t.pop_back();
  for (std::string_view p : {"number of ", "num ", "no. of ", "# of ", "#of ", "# ", "#", "n "})
    if (starts_with(t, p) && t.size() > p.size()) {
      t = t.substr(p.size());
      break;
    }
  auto is = [&](std::initializer_list<std::string_view> names) {
    for (auto n : names)
      if (t == n) return true;
    return false;
  };
  auto has = [&](std::string_view s) { return contains(t, s); };
  if (is({"", "type", "config", "configuration", "setup", "variant", "name", "case", "experiment", "setting",
          "settings", "label", "description", "condition", "scenario", "test", "system", "platform", "options",
          "option", "run name", "job", "version / setup", "id", "what", "change", "changes"}))
    return "";
  const bool measures = has("time") || has("throughput") || has("speed") || has("bandwidth") || has("latency") ||
                        has("/s") || has("busbw") || has("algbw") || has("util") || has("idle") || has("scaling");
  if (measures) return std::nullopt;
  if ((has("per node") || has("/ node") || has("/node") || has("per host")) &&
      (has("gpu") || has("proc") || has("rank") || has("device")))
    return "gpus_per_node";
  if (is({"gpus", "gpu count", "gpus count", "ngpus", "gpus used", "world size", "worldsize", "nproc", "devices",
          "total gpus", "gpus total", "gpu num", "cards", "ranks", "processes", "world", "gpu s"}))
    return "gpus";
  // Count words joined ("nproc/ngpu", "#procs / #gpus", "gpus (ranks)"): one per GPU in data-parallel training.
  {
    static const std::set<std::string> count_words = {"gpus", "gpu", "ngpu", "ngpus", "nproc", "nprocs", "procs", "processes",
                                                      "ranks", "devices", "cards", "world", "size", "num", "n", "of"};
    std::string word;
    bool all = true, any = false;
    for (char c : t + " ") {
      if (std::isalnum(static_cast<unsigned char>(c))) {
        word += c;
        continue;
      }
      if (!word.empty()) {
        all = all && count_words.count(word) > 0;
        any = any || (word != "n" && word != "of" && word != "num" && word != "size");
        word.clear();
      }
    }
    if (all && any) return "gpus";
  }
  if (is({"nodes", "node count", "nnodes", "hosts count", "machines", "servers", "instances"})) return "nodes";
  if (is({"gpu", "gpu type", "gpu model", "hardware", "device type", "accelerator", "gpu name", "card"})) return "gpu";
  if (is({"host", "hostname", "node", "node name", "server", "machine", "host name", "instance"})) return "host";
  if (is({"pair", "pairs", "node pair", "host pair", "nodes pair", "hosts", "ranks pair", "gpu pair"})) return "pair";
  if (is({"note", "notes", "comment", "comments", "remark", "remarks"})) return "note";
  if (is({"rank", "local rank", "global rank"})) return "rank";
  if (is({"gpu id", "gpu index", "device id", "gpu #", "cuda device", "device index", "gpu idx"})) return "gpu_index";
  if (is({"run", "repeat", "trial", "attempt", "try", "run #", "repetition"})) return "repeat";
  if (has("batch")) {
    if (has("accumulat")) return std::string(t);
    if (has("/ gpu") || has("/gpu") || has("per gpu") || has("per device") || has("micro") || has("local") ||
        has("per rank"))
      return "batch_per_gpu";
    if (has("global") || has("total") || has("effective")) return "global_batch";
    return "batch";
  }
  if (is({"bs", "mbs"})) return t == "bs" ? "batch" : "batch_per_gpu";
  if (is({"gbs"})) return "global_batch";
  if (has("accumulation") || has("grad accum") || has("gradient accum") || is({"ga", "accum"})) return "grad_accum";
  if (has("sequence length") || has("seq len") || has("seqlen") || has("seq length") || has("context length") ||
      has("max seq") || is({"seq", "sequence", "tokens per sample"}))
    return "seq_len";
  if (is({"model", "network", "architecture", "arch", "model name", "net", "model size"})) return "model";
  if (is({"epochs", "epoch"})) return "epochs";
  if (is({"steps", "iterations", "iters", "max steps", "train steps", "training steps"})) return "steps";
  if (has("workers")) return "workers";
  if (has("topo")) return "topology";
  if (has("nccl") && (has("version") || t == "nccl")) return "nccl_version";
  if (has("cuda") && (has("version") || t == "cuda")) return "cuda_version";
  if ((has("torch") || has("pytorch")) && (has("version") || t == "torch" || t == "pytorch")) return "torch_version";
  if (has("driver")) return "driver_version";
  if (has("version")) return "version";
  if (is({"precision", "dtype", "amp", "data type", "mixed precision", "numerics"})) return "precision";
  if (is({"mode", "backend", "strategy", "parallelism", "method", "framework", "wrapper", "distributed",
          "parallel mode", "dp mode"}))
    return "mode";
  if (is({"link", "interconnect", "connection", "path", "gpu link", "p2p link", "link type"})) return "link";
  if (is({"network", "transport", "fabric", "net", "nic", "network type"})) return "network";
  if (is({"algo", "algorithm", "nccl algo", "nccl algorithm"})) return "setting:NCCL_ALGO";
  if (is({"proto", "protocol", "nccl proto", "nccl protocol"})) return "setting:NCCL_PROTO";
  if (is({"channels", "nchannels", "nccl channels"})) return "setting:NCCL_MIN_NCHANNELS";
  return std::nullopt;
}

bool higher_is_better(const std::string& quantity, const std::string& unit) {
  if (quantity == "throughput" || quantity == "throughput per GPU" || quantity == "bandwidth" || quantity == "busbw" || quantity == "algbw" ||
      quantity == "speedup" || quantity == "efficiency" || quantity == "GPU utilization")
    return true;
  if (contains(quantity, "time") || quantity == "latency" || quantity == "GPU idle share") return false;
  return ends_with(unit, "/s");
}

}  // namespace scalescope::analyze::tables_detail
