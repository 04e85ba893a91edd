#include "predict/step_model.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "diagnose/verdict.h"

namespace scalescope::predict {

double StepProfile::gradient_bytes() const {
  double b = 0;
  for (const auto& k : buckets) b += k.bytes;
  return b;
}

std::vector<Bucket> even_buckets(double total_bytes, double backward_s, double cap_bytes, double first_cap_bytes) {
  if (!(cap_bytes > 0) || !(first_cap_bytes > 0))
    throw core::UsageError("a bucket cap must be above 0 bytes", "give --bucket-cap-mb above 0");
  std::vector<Bucket> out;
  double done = 0;
  double cap = first_cap_bytes;
  while (done < total_bytes) {
    const double b = std::min(cap, total_bytes - done);
    done += b;
    out.push_back({b, total_bytes > 0 ? backward_s * done / total_bytes : backward_s});
    cap = cap_bytes;
  }
  return out;
}

Prediction predict_step(const StepProfile& profile, const LinkModel& link, const Scenario& s, const ModelConstants& k) {
  if (s.ranks < 1) throw core::UsageError(fmt::format("{} ranks: at least 1", s.ranks), "give --gpus 2,4,8 …");
  if (!(s.batch_factor > 0)) throw core::UsageError("the batch factor must be above 0", "give a positive factor");
  // Per-rank compute: weak scaling keeps it, strong scaling divides the one-rank batch over the ranks.
  const double work = s.batch_factor / (s.strong ? s.ranks : 1);
  const double fwd = profile.forward_s * work, bwd = profile.backward_s * work;
  const double opt = profile.optimizer_s;  // per parameter, not per sample
  std::vector<Bucket> buckets = profile.buckets;
  if (s.bucket_cap_bytes) buckets = even_buckets(profile.gradient_bytes(), profile.backward_s, *s.bucket_cap_bytes, 1024.0 * 1024);
  const double dtype_scale = s.grad_element_bytes ? static_cast<double>(*s.grad_element_bytes) / profile.grad_element_bytes : 1.0;
  for (auto& b : buckets) {
    b.bytes *= dtype_scale;
    b.ready_s = profile.backward_s > 0 ? b.ready_s / profile.backward_s * bwd : 0;
  }
  // The tied embedding exchanged by all-gather (scalescope's DP engine, EmbeddingExchange): its tables' gradient
  // leaves the last bucket, the head part is all-reduced early in backward, and after backward each rank
  // all-gathers the others' rows — (n−1)·P bytes received, which costs what an all-reduce of n·P/2 bytes does
  // (bus factors (n−1)/n and 2(n−1)/n, nccl-tests' definitions).
  double gather_s = 0;
  if (s.ranks >= 2 && profile.embedding_table_bytes > 0 && profile.embedding_gather_bytes > 0 && !buckets.empty()) {
    const double per_rank = profile.embedding_gather_bytes * work;  // rows per rank scale with the batch
    const std::string mode = s.embedding_exchange.value_or(profile.embedding_exchange);
    const bool gather = mode == "all-gather" || (mode == "auto" && per_rank < 2.0 * profile.embedding_table_bytes / s.ranks);
    if (gather) {
      const double moved = std::min(buckets.back().bytes, profile.embedding_table_bytes * dtype_scale);
      buckets.back().bytes -= moved;
      if (buckets.back().bytes <= 0) buckets.pop_back();
      buckets.push_back({moved, kHeadReadyShare * bwd});
      std::stable_sort(buckets.begin(), buckets.end(), [](const Bucket& a, const Bucket& b) { return a.ready_s < b.ready_s; });
      gather_s = link.all_reduce_s(s.ranks * per_rank / 2, s.ranks);
    }
  }
  // The schedule, twice: backward stretched by the all-reduces beside it delays the buckets' readiness.
  double stretch = 1, comm_total = 0, comm_end = 0, overlapped = 0;
  for (int pass = 0; pass < 2; ++pass) {
    comm_total = comm_end = overlapped = 0;
    const double bwd_end = bwd * stretch;
    for (const auto& b : buckets) {
      const double ready = s.overlap ? b.ready_s * stretch : bwd_end;
      const double start = std::max(ready, comm_end);
      const double alone = link.all_reduce_s(b.bytes, s.ranks);
      // Beside backward it runs (1 + comm_beside) times slower; after backward ends, at the link's own speed.
      const double slow = 1 + k.comm_beside;
      double dur = alone;
      if (start < bwd_end) {
        const double room = bwd_end - start;
        dur = alone * slow <= room ? alone * slow : room + (alone - room / slow);
      }
      comm_end = start + dur;
      comm_total += dur;
      overlapped += std::max(0.0, std::min(comm_end, bwd_end) - start);
    }
    if (gather_s > 0) {  // after backward (the input side is complete only then), behind the all-reduces
      comm_end = std::max(comm_end, bwd_end) + gather_s;
      comm_total += gather_s;
    }
    stretch = bwd > 0 ? 1 + k.contention * overlapped / bwd : 1;
  }
  const double bwd_eff = bwd * stretch;
  Prediction p;
  p.label = s.label.empty() ? fmt::format("{} ranks", s.ranks) : s.label;
  p.ranks = s.ranks;
  p.strong = s.strong;
  p.all_reduce_s = comm_total;
  p.exposed_s = std::max(0.0, comm_end - bwd_eff);
  p.overlap = comm_total > 0 ? 1 - p.exposed_s / comm_total : 1;
  const double spread = s.ranks > 1 ? k.sync_s * std::log2(static_cast<double>(s.ranks)) : 0;
  p.compute_s = fwd + bwd_eff + opt;
  p.step_s = p.compute_s + p.exposed_s + profile.other_s * work + spread;
  // Against one rank of the measured run (with the same batch factor).
  const double one = (profile.forward_s + profile.backward_s) * s.batch_factor + opt + profile.other_s * s.batch_factor;
  const double samples = s.strong ? 1.0 : s.ranks;  // global samples per step against the one-rank step's
  p.tokens_factor = p.step_s > 0 ? samples * one / p.step_s : 0;
  p.speedup = p.tokens_factor;
  p.efficiency = s.ranks > 0 ? p.speedup / s.ranks : 0;
  const double one_compute = (profile.forward_s + profile.backward_s) * s.batch_factor + opt;
  p.comm_ratio = one_compute > 0 ? comm_total / one_compute : 0;
  p.verdict = s.ranks >= 2 ? std::string(diagnose::to_string(diagnose::judge(s.ranks, p.speedup, p.comm_ratio).verdict)) : "";
  return p;
}

Prediction predict_band(const StepProfile& profile, const LinkModel& link, const Scenario& s, const ModelConstants& k) {
  Prediction p = predict_step(profile, link, s, k);
  const double b = link.spread();
  double lo = p.step_s, hi = p.step_s;
  for (double f : {1 - b, 1 + b})
    for (double c : {kBandContentionLo, kBandContentionHi}) {
      ModelConstants kc = k;
      kc.contention = c;
      const double step = predict_step(profile, link.scaled(f), s, kc).step_s;
      lo = std::min(lo, step);
      hi = std::max(hi, step);
    }
  // Multiplicative, so that no spread, however large, gives a negative step or an efficiency band without its centre.
  const double sp = std::isfinite(profile.step_spread) ? std::max(0.0, profile.step_spread) : 0.0;
  const double me = std::isfinite(k.model_error) ? std::max(0.0, k.model_error) : 0.0;
  p.step_lo_s = lo / ((1 + sp) * (1 + me));
  p.step_hi_s = hi * (1 + sp) * (1 + me);
  // efficiency ∝ 1 / step at a fixed one-rank step, whose own spread widens it once more.
  p.efficiency_lo = p.step_hi_s > 0 ? p.efficiency * p.step_s / p.step_hi_s / (1 + sp) : 0;
  p.efficiency_hi = p.step_lo_s > 0 ? p.efficiency * p.step_s / p.step_lo_s * (1 + sp) : 0;
  // Above 100 % only where the centre is (a batch what-if, strong scaling past its memory): else noise, not a gain.
  p.efficiency_hi = std::max(p.efficiency, std::min(p.efficiency_hi, std::max(1.0, p.efficiency)));
  p.efficiency_lo = std::min(p.efficiency_lo, p.efficiency);
  return p;
}

void to_json(nlohmann::json& j, const Prediction& p) {
  j = {{"label", p.label},          {"ranks", p.ranks},         {"scaling", p.strong ? "strong" : "weak"},
       {"step_ms", p.step_s * 1e3}, {"compute_ms", p.compute_s * 1e3}, {"all_reduce_ms", p.all_reduce_s * 1e3},
       {"exposed_comm_ms", p.exposed_s * 1e3}, {"overlap", p.overlap}, {"speedup", p.speedup},
       {"efficiency", p.efficiency}, {"comm_ratio", p.comm_ratio}, {"verdict", p.verdict}};
  if (p.step_hi_s > 0) {
    j["step_ms_band"] = {p.step_lo_s * 1e3, p.step_hi_s * 1e3};
    j["efficiency_band"] = {p.efficiency_lo, p.efficiency_hi};
  }
}

}  // namespace scalescope::predict
