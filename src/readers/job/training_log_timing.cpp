// The training-log reader's timing: per-step figures by key and by unit, tqdm bars, time/data splits and per-phase
// breakdowns; the series become step-time, throughput and phase facts after the last line.
#include "readers/job/training_log_reader.h"

namespace scalescope::analyze::training_log_detail {

// ── timing ──
void Reader::add_sample(const std::string& key_format, const char* quantity, const std::string& unit, bool higher, bool running,
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

void Reader::timing(std::size_t i, std::string_view raw, const std::string& lw) {
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
void Reader::tqdm(std::size_t i, std::string_view raw) {
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
void Reader::time_data(std::size_t i, const std::string& lw) {
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
void Reader::breakdown(std::size_t i, const std::string& lw) {
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

void Reader::finish_timing() {
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

void Reader::finish_time_data() {
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

void Reader::finish_breakdowns() {
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

}  // namespace scalescope::analyze::training_log_detail
