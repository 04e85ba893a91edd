// The training-log reader: one pass over the lines (framework messages, commands inside the log, the end of
// training), the public entry points (looks_like_training_log, read_training_log).
#include "readers/job/training_log.h"

#include "core/parse_count.h"
#include "readers/job/training_log_reader.h"

namespace scalescope::analyze::training_log_detail {

void Reader::run() {
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
bool Reader::is_json_trace(std::string_view text) {
  std::string_view t = text.substr(0, 1 << 16);
  while (!t.empty() && (t.front() == '\n' || t.front() == ' ' || t.front() == '\t' || t.front() == '\r')) t.remove_prefix(1);
  return !t.empty() && (t.front() == '{' || t.front() == '[') && contains(t, "\"traceEvents\"");
}

bool Reader::found() const {
  // A bare "NCCL version" line (nccl-tests and NCCL logs print one) makes no training log.
  // nccl-tests' own failure lines are the nccl-tests reader's.
  bool fact = false;
  for (const auto& f : out_.facts.all()) fact |= !std::holds_alternative<diagnose::NcclVersion>(f.value);
  for (const auto& f : failures_) fact |= f.reporter != "nccl-tests";
  return fact || !series_.empty() || !time_data_.empty() || !breakdowns_.empty() || ddp_set_ ||
         batch_line_ || !models_.empty() || !params_.empty();
}

diagnose::Reading Reader::finish() {
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

// The normalized (lower case, single-spaced) text of line i (kept: lines are looked at again for wrapped
// messages and error blocks). References stay valid (a deque).
const std::string& Reader::low(std::size_t i) {
  if (i < low_cache_index_.size() && low_cache_index_[i] != SIZE_MAX) return low_store_[low_cache_index_[i]];
  if (low_cache_index_.size() < lines_.size()) low_cache_index_.resize(lines_.size(), SIZE_MAX);
  low_cache_index_[i] = low_store_.size();
  low_store_.push_back(normalize(lines_[i]));
  return low_store_.back();
}

diagnose::Provenance Reader::where(std::size_t i) { return at(source_, i + 1, lines_[i]); }

void Reader::read_line(std::size_t i) {
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
void Reader::catalogue(std::size_t i, const std::string& lw) {
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
void Reader::transformers_process_line(std::size_t i, const std::string& lw) {
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

void Reader::one_process_gpus(double n, bool one_process, std::size_t i, const char* what) {
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

// ── the end of training ──
void Reader::ended(std::size_t i, const std::string& lw) {
  for (const auto& m : kEndMarkers) {
    if (!contains(lw, m.phrase)) continue;
    if (ended_.insert(m.framework).second) out_.facts.add(diagnose::TrainingEnded{.framework = m.framework}, where(i));
    return;
  }
}

// ── commands inside the log ──
// What some launchers and scripts print before the command they run.
std::string_view Reader::command_text(std::string_view t) {
  for (std::string_view p : {"cmd = ", "Command: ", "command: ", "Running command: ", "Executing: "})
    if (starts_with(t, p)) t.remove_prefix(p.size());
  return t;
}

// Whether the line is a launch command (a launcher near its start, after at most a prompt and VAR=value words).
bool Reader::is_command(std::string_view text) {
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

void Reader::commands(std::size_t i, const std::string& joined) {
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

std::map<std::string, std::string> Reader::dims() const {
  std::map<std::string, std::string> d;
  if (gpus_) d["gpus"] = std::to_string(*gpus_);
  return d;
}

double Reader::median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace scalescope::analyze::training_log_detail

namespace scalescope::analyze {

using training_log_detail::Reader;


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
  core::count_parse("training_log", text);
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
