#pragma once
// Helpers the cause assessors share: figures in words, scores, and evidence from measured rows. Internal to
// src/diagnose.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "diagnose/catalogue.h"

namespace scalescope::diagnose::detail {

/// "95.7 GB/s" (one decimal below 100, none above).
inline std::string gbps(double v) { return v < 100 ? fmt::format("{:.1f} GB/s", v) : fmt::format("{:.0f} GB/s", v); }

/// A time in seconds as "850 µs", "12.3 ms" or "3.21 s".
inline std::string duration(double s) {
  if (s < 1e-3) return fmt::format("{:.0f} µs", s * 1e6);
  if (s < 1) return fmt::format("{:.1f} ms", s * 1e3);
  return fmt::format("{:.2f} s", s);
}

/// "77 %"; shares under 10 % with one decimal ("0.3 %"), so that a small cost does not read as none.
inline std::string percent(double share) {
  return std::abs(share) < 0.1 && share != 0 ? fmt::format("{:.1f} %", share * 100) : fmt::format("{:.0f} %", share * 100);
}

/// A measured figure of a table row with its unit: "2.51 s", "~365 GB/s".
inline std::string figure(const Measurement& m) {
  const std::string v = std::abs(m.value) >= 100 ? fmt::format("{:.0f}", m.value) : fmt::format("{:.3g}", m.value);
  return m.unit.empty() ? v : v + (m.unit == "%" ? " %" : " " + m.unit);
}

/// A row's label for evidence: its printed label, else its conditions.
inline std::string row_name(const Measurement& m) {
  if (!m.row.empty()) return "'" + m.row + "'";
  return "(" + conditions_text(m.dims) + ")";
}

/// A measured time converted to seconds (s, ms, us, min, h).
inline double seconds_of(const Measurement& m) {
  if (m.unit == "ms") return m.value / 1e3;
  if (m.unit == "us") return m.value / 1e6;
  if (m.unit == "min") return m.value * 60;
  if (m.unit == "h") return m.value * 3600;
  return m.value;
}

/// A step's length in seconds from a per-step time, or from a step rate (steps/s, "it/s": one over it).
inline double step_seconds_of(const Measurement& m) {
  if (m.unit == "it/s" && m.value > 0) return 1 / m.value;
  return seconds_of(m);
}

/// The same GPU count measured at two batches (per GPU, or global at that count: either gives each GPU more work),
/// the larger scaling clearly better — efficiency ratio ≥ 1.3, the smaller below 80 % (a loss to explain) and the
/// larger at most 110 % (not a superlinear figure): the signature of a cost fixed per step (the gradient all-reduce
/// does not shrink with the batch, while compute does), not of compute that slows in proportion (contention slows a
/// larger batch as much as a small one). Rows are grouped by table, GPU count and their other conditions, so a
/// table of many rows costs one pass.
struct BatchDependentScaling {
  const ScalingRow* small = nullptr;
  const ScalingRow* large = nullptr;
  std::string dim;  ///< "batch", "batch_per_gpu" or "global_batch"
};
inline std::optional<BatchDependentScaling> batch_dependent_scaling(const Context& ctx) {
  std::map<std::tuple<std::string, std::string, int, std::map<std::string, std::string>>, std::vector<std::pair<double, const ScalingRow*>>> groups;
  for (const auto& s : ctx.variants.scaling) {
    if (s.gpus < 2) continue;
    for (const char* dim : {"batch", "batch_per_gpu", "global_batch"}) {
      const auto it = s.conditions.find(dim);
      if (it == s.conditions.end()) continue;
      char* end = nullptr;
      const double v = std::strtod(it->second.c_str(), &end);
      if (end == it->second.c_str() || !(v > 0)) continue;
      auto rest = s.conditions;
      rest.erase(dim);
      groups[{dim, s.row.m->table, s.gpus, std::move(rest)}].emplace_back(v, &s);
    }
  }
  std::optional<BatchDependentScaling> best;
  for (auto& [key, rows] : groups) {
    if (rows.size() < 2) continue;
    // The least efficient row below the best-scaling row's batch, against that row.
    const auto* large = std::max_element(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
                          return a.second->efficiency < b.second->efficiency;
                        })->second;
    double large_batch = 0;
    for (const auto& [v, r] : rows)
      if (r == large) large_batch = v;
    const ScalingRow* small = nullptr;
    for (const auto& [v, r] : rows)
      if (v < large_batch && (!small || r->efficiency < small->efficiency)) small = r;
    if (!small || large->efficiency > 1.1 || small->efficiency >= 0.8 || !(large->efficiency >= 1.3 * small->efficiency)) continue;
    if (!best || large->efficiency / small->efficiency > best->large->efficiency / best->small->efficiency)
      best = BatchDependentScaling{small, large, std::get<0>(key)};
  }
  return best;
}

/// What a time of this quantity is per: "step", "epoch", else "run".
inline std::string per_of(const std::string& quantity) {
  return quantity == "step time" ? "step" : quantity == "epoch time" ? "epoch" : "run";
}

/// The first Claim of `kind` (facts/facts.h) among the facts, nullopt when none.
inline std::optional<Seen<Claim>> first_claim(const Context& ctx, std::string_view kind) {
  for (const auto& c : ctx.facts.of<Claim>())
    if (c.fact.kind == kind) return c;
  return std::nullopt;
}

/// The host's CPU count a Claim "cpus" gives (its detail: digits, from the text or from profile's record of the
/// CPUs the job may run on), nullopt for another claim or a detail that is no count (not digits, 6 or more of them).
inline std::optional<int> cpu_count_of(const Claim& c) {
  if (c.kind != "cpus" || c.detail.empty() || c.detail.size() >= 6 ||
      !std::all_of(c.detail.begin(), c.detail.end(), [](unsigned char ch) { return std::isdigit(ch) != 0; }))
    return std::nullopt;
  return std::stoi(c.detail);
}

/// A change the evidence says made the job faster or made it work as it should (Claim "faster-with" whose detail is the
/// change: "ddp", "framework-ddp", "no-sync"; readers/prose/measures.cpp): the state before it was a cost, so the cause
/// that change removes was the job's. Nullopt when no such claim.
inline std::optional<Seen<Claim>> fixed_by(const Context& ctx, std::string_view change) {
  for (const auto& c : ctx.facts.of<Claim>())
    if (c.fact.kind == "faster-with" && c.fact.detail == change) return c;
  return std::nullopt;
}

/// DDP's default bucket (bucket_cap_mb = 25, torch.nn.parallel.DistributedDataParallel): gradients that fit in one
/// bucket are all-reduced in one call, which can start only when backward has produced the last of them.
inline constexpr double kDdpBucketBytes = 25.0 * 1024 * 1024;

/// The model of the evidence with a parameter count (the smallest, when several are named): its count and where it
/// was named; nullopt when none.
struct ModelSize {
  double params = 0;
  std::string name;
  Provenance where;
};
inline std::optional<ModelSize> model_with_params(const Context& ctx) {
  std::optional<ModelSize> best;
  for (const auto& m : ctx.facts.of<ModelSeen>())
    if (m.fact.parameters && *m.fact.parameters > 0 && (!best || *m.fact.parameters < best->params))
      best = ModelSize{*m.fact.parameters, m.fact.name, m.where};
  return best;
}

/// Whether a model of `params` parameters has all its FP32 gradients in one DDP bucket (kDdpBucketBytes).
inline bool fits_one_bucket(double params) { return params * 4 <= kDdpBucketBytes; }

/// "model NAME: 5e+06 parameters: 20 MB of FP32 gradients" (or "a model of …" when unnamed): the start of every
/// evidence line about a model whose gradients fit one DDP bucket.
inline std::string one_bucket_model(const ModelSize& m) {
  return fmt::format("{}{:.3g} parameters: {:.0f} MB of FP32 gradients", m.name.empty() ? "a model of " : "model " + m.name + ": ",
                     m.params, m.params * 4 / 1e6);
}

/// A PCIe link state as the cause and the no-defect judgement both read it: current and capable generation and
/// width (0 when not given; capability from the device's own maximum, else the host's), and whether it was read with
/// the GPU busy (PcieLinkState::under_load, or the evidence of the same file saying so: Claim "read-busy", "with the
/// models loaded and running", "under load"). An idle GPU lowers its generation on purpose.
struct PcieReading {
  int cur_gen = 0, cap_gen = 0, cur_width = 0, cap_width = 0;
  bool busy = false;
};
inline PcieReading pcie_reading(const Context& ctx, const Seen<PcieLinkState>& p) {
  const auto& f = p.fact;
  PcieReading r;
  r.cur_gen = f.current_gen.value_or(0);
  r.cap_gen = f.device_max_gen.value_or(f.max_gen.value_or(0));
  r.cur_width = f.current_width.value_or(0);
  r.cap_width = f.device_max_width.value_or(f.max_width.value_or(0));
  r.busy = f.under_load.value_or(false);
  for (const auto& c : ctx.facts.of<Claim>())
    r.busy = r.busy || (c.fact.kind == "read-busy" && c.where.source == p.where.source);
  return r;
}

/// One Python process given several GPUs: a `python train.py` launch (no torchrun, accelerate, deepspeed or mpirun,
/// no DDP in the code or the words) where the evidence names two GPUs or more. Without ranks there is no DDP; a
/// framework that uses every visible GPU from one process (the HF Trainer, Lightning's "dp") does it with
/// DataParallel. The launch line, nullopt when the evidence does not show this.
///
/// Not where the job spans nodes (one process cannot drive another machine's GPUs), nor where the script's own flags
/// say it starts its workers itself or belongs to another framework: detectron2-style launchers (--num-gpus,
/// --num-machines, --dist-url), MXNet's kvstore and device list (--kv-store, --gpus 0,1,2,3), a world size.
inline std::optional<Seen<Launch>> single_process_over_gpus(const Context& ctx) {
  if (ctx.expected.gpus < 2 || ctx.has<DdpConfig>()) return std::nullopt;
  if (ctx.nodes && *ctx.nodes > 1) return std::nullopt;
  for (const auto& c : ctx.facts.of<CodeUse>())
    if (c.fact.construct == "DistributedDataParallel") return std::nullopt;
  std::optional<Seen<Launch>> plain;
  for (const auto& l : ctx.facts.of<Launch>()) {
    if (l.fact.launcher != "python" || l.fact.nproc_per_node || l.fact.np) return std::nullopt;  // a launcher of ranks
    for (const auto& a : l.fact.args)
      for (std::string_view own : {"--num-gpus", "--num_gpus", "--ngpus", "--num-machines", "--num_machines", "--dist-url",
                                   "--dist_url", "--world-size", "--world_size", "--kv-store", "--kv_store", "--kvstore",
                                   "--gpus", "--launcher", "--nnodes"})
        if (a == own || a.rfind(std::string(own) + "=", 0) == 0) return std::nullopt;
    if (!plain) plain.emplace(l);
  }
  return plain;
}

/// Where the job is seen to run under nn.DataParallel (its code, the text, a framework message) without DDP.
inline std::optional<Provenance> data_parallel_in_use(const Context& ctx) {
  for (const auto& c : ctx.facts.of<CodeUse>())
    if (c.fact.construct == "DistributedDataParallel") return std::nullopt;
  for (const auto& c : ctx.facts.of<CodeUse>())
    if (c.fact.construct == "DataParallel") return c.where;
  for (const auto& m : ctx.facts.of<FrameworkMessage>())
    if (m.fact.id == "dataparallel") return m.where;
  if (const auto plain = single_process_over_gpus(ctx)) return plain->where;
  return std::nullopt;
}

/// Adds `v` to a score and keeps it in [0, 1].
inline void raise(double& score, double v) { score = std::clamp(score + v, 0.0, 1.0); }

// A Python profile: the rows, their total, and the rows that are one-off start-up work.
struct ProfileView {
  std::vector<Seen<ProfileRow>> rows;
  double total_s = 0;  ///< the largest cumulative time, else the sum of own times
};

inline ProfileView profile_view(const Context& ctx) {
  ProfileView v;
  v.rows = ctx.facts.of<ProfileRow>();
  double sum = 0, maxcum = 0;
  for (const auto& r : v.rows) {
    sum += r.fact.tottime_s;
    maxcum = std::max(maxcum, r.fact.cumtime_s);
  }
  v.total_s = std::max(sum, maxcum);
  return v;
}

// One-off work: a few calls taking seconds each (loading a data set or a model at start-up).
inline bool one_off(const ProfileRow& r) { return r.calls <= 5 && r.calls > 0 && r.cumtime_s / r.calls >= 1.0; }


}  // namespace scalescope::diagnose::detail
