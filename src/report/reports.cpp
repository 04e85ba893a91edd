#include "report/reports.h"

#include <cmath>

#include <fmt/format.h>

#include "report/table.h"

namespace scalescope::report {
namespace {

std::string ms(double seconds) { return fmt::format("{:.2f}", 1e3 * seconds); }
std::string pct(double fraction) { return fmt::format("{:.1f} %", 100 * fraction); }

std::string si(double x) {
  if (x >= 1e9) return fmt::format("{:.2f} G", x / 1e9);
  if (x >= 1e6) return fmt::format("{:.2f} M", x / 1e6);
  if (x >= 1e3) return fmt::format("{:.1f} k", x / 1e3);
  return fmt::format("{:.0f}", x);
}

/// What --overlap-optimizer did: nothing to say without it; with one bucket or one rank there is no last
/// all-reduce to overlap (the engine splits AdamW only with ≥ 2 buckets), which a single run's line says.
std::string overlap_optimizer_clause(const train::TrainResult& r, bool sweep) {
  const auto& c = r.config;
  if (!c.engine.overlap_optimizer) return {};
  if (sweep || (c.world_size >= 2 && r.bucket_bytes.size() >= 2)) return ", optimizer overlapped with the last bucket";
  return c.world_size < 2 ? ", --overlap-optimizer idle (one rank: nothing to overlap)"
                          : ", --overlap-optimizer idle (one bucket: nothing to overlap)";
}

std::string workload_line(const train::TrainResult& r, bool sweep) {
  const auto& c = r.config;
  const std::string batch =
      !sweep ? fmt::format("batch {} rows per rank × {} rank{} = {} rows", c.rows_per_rank(), c.world_size,
                           c.world_size == 1 ? "" : "s", c.global_rows())
      : c.mode == core::ScalingMode::weak
          ? fmt::format("batch {} rows per rank (global = {} × world size)", c.rows_per_rank(), c.rows_per_rank())
          : fmt::format("global batch {} rows split over the ranks", c.global_rows());
  // Which exchange of a GPT's tied embedding ran (a sweep's line stands for every world size: say what was asked).
  std::string embedding;
  if (c.model.family == train::ModelFamily::gpt && (sweep || c.world_size > 1))
    embedding = sweep ? fmt::format(", embedding exchange {}", train::to_string(c.engine.embedding_exchange))
                      : std::string(r.embedding_all_gathered ? ", tied embedding all-gathered" : ", tied embedding all-reduced");
  return fmt::format("model {} ({} parameters, {} FLOP/token), {} scaling, {}, "
                     "{} bucket{} ({} MiB first, {} MiB cap), overlap {}{}{}{}{}",
                     c.model.name, si(static_cast<double>(r.parameters)), si(r.flops_per_token), core::to_string(c.mode),
                     batch,
                     r.bucket_bytes.size(), r.bucket_bytes.size() == 1 ? "" : "s",
                     c.engine.buckets.first_bucket_bytes / double(1 << 20), c.engine.buckets.bucket_cap_bytes / double(1 << 20),
                     c.engine.overlap ? "on" : "off",
                     overlap_optimizer_clause(r, sweep), embedding,
                     c.stream_priority == train::StreamPriority::equal
                         ? std::string()
                         : fmt::format(", {} stream first", train::to_string(c.stream_priority)),
                     !c.cuda_graph ? std::string()
                     : sweep       ? std::string(", CUDA graph")
                                   : fmt::format(", CUDA graph ({} of {} timed steps replayed)", r.replayed_timed_steps,
                                                 c.protocol.timed_rounds * c.protocol.steps_per_round));
}

}  // namespace

std::string render_train_result(const train::TrainResult& r) {
  const auto& c = r.config;
  const auto& p = r.phases;
  std::string out;
  out += fmt::format("scalescope train: world size {}, {} backend ({}), {}\n", c.world_size, train::to_string(c.backend),
                     r.communicator, r.device);
  out += workload_line(r, false) + "\n";
  out += fmt::format("data: {}; libraries: {}; phase timing: {}\n\n", r.data_description, r.library_versions,
                     r.timing_source);

  TextTable phases({"phase (mean per step, all ranks)", "ms", "share"});
  const double total = p.total > 0 ? p.total : 1;
  auto row = [&](const char* name, double s) { phases.add_row({name, ms(s), pct(s / total)}); };
  row("data wait", p.data_wait);
  if (r.timing_source == "cuda-events") row("batch copy to device", p.stage);
  row("forward", p.forward);
  row("backward", p.backward);
  row("exposed communication", p.exposed_comm);
  row("optimizer (AdamW)", p.optimizer);
  row("step total", p.total);
  out += phases.render();
  if (r.timing_source == "cuda-events")  // the host beside the device: is the step launch-bound?
    out += fmt::format("host per step: {} ms issuing the work, {} ms waiting for the staging buffer "
                       "(near 0 while issuing takes the whole step: launch-bound)\n",
                       ms(p.host_issue), ms(p.host_stage));

  const auto& s = r.step_seconds;
  out += fmt::format(
      "\nstep time (slowest rank, {} timed round{} of {} steps after {} warm-up): {} ms ({}), "
      "median {} ms, min {} ms, max {} ms, cv {:.1f} %\n",
      s.count, s.count == 1 ? "" : "s", c.protocol.steps_per_round, c.protocol.warmup_rounds, ms(s.trimmed_mean),
      s.count >= 3 ? fmt::format("mean of the middle {}", s.count - 2) : std::string("mean"), ms(s.median), ms(s.min),
      ms(s.max), 100 * s.cv);
  out += fmt::format("per-step {} time: median {} ms, p95 {} ms over {} steps; wall-clock vs {}: {} vs {} ms\n",
                     r.timing_source, ms(r.step_event_seconds.median), ms(r.step_event_seconds.p95),
                     r.step_event_seconds.count, r.timing_source, ms(s.trimmed_mean), ms(p.total));
  out += fmt::format("throughput: {} tokens/s ({} tokens per step), {:.2f} TFLOP/s per rank\n",
                     si(r.tokens_per_second()), r.tokens_per_step,
                     r.flops_per_token * r.tokens_per_second() / c.world_size / 1e12);
  if (c.world_size > 1) {
    out += fmt::format(
        "gradient all-reduce: {} per step, {:.1f} MB, {} ms in total (algbw {:.2f} GB/s, busbw {:.2f} GB/s), "
        "exposed {} ms ({} of the {} time hidden behind compute)\n",
        p.all_reduce_count, p.all_reduce_bytes / 1e6, ms(p.all_reduce_seconds), r.all_reduce_algbw_gbps(),
        r.all_reduce_busbw_gbps(), ms(p.exposed_comm),
        p.all_reduce_seconds > 0 ? pct(std::max(0.0, 1.0 - p.exposed_comm / p.gradient_comm()))
                                 : std::string("n/a"),
        p.all_gather_count > 0 ? "all-reduce and all-gather" : "all-reduce");
    if (p.all_gather_count > 0)
      out += fmt::format(
          "tied embedding: its head part all-reduced with the buckets; tokens (beside forward) and embedding-output "
          "gradients (after backward) all-gathered: {} per step, {:.3g} MB from each rank, {} ms per step; the "
          "exposed time includes the second and the scatter-add of every rank's rows after it\n",
          p.all_gather_count, p.all_gather_bytes / 1e6, ms(p.all_gather_seconds));
  } else {
    out += fmt::format("gradient all-reduce: {} per step over {:.1f} MB; at world size 1 it is a local operation "
                       "({} ms), not communication\n",
                       p.all_reduce_count, p.all_reduce_bytes / 1e6, ms(p.all_reduce_seconds));
  }
  if (r.ranks.size() > 1) {
    out += "\n";
    // With the embedding all-gathered, the exposed time holds all-gathers too: count them beside the all-reduces.
    const bool gathered = p.all_gather_count > 0;
    TextTable ranks({"rank", "compute ms", gathered ? "all-reduce + all-gather ms" : "all-reduce ms", "exposed ms",
                     "data wait ms", "wall step ms"});
    for (const auto& k : r.ranks)
      ranks.add_row({std::to_string(k.rank), ms(k.mean.compute()), ms(k.mean.gradient_comm()),
                     ms(k.mean.exposed_comm), ms(k.mean.data_wait), ms(k.wall_step_seconds)});
    out += ranks.render();
    if (r.min_rank_compute > 0)
      out += fmt::format("compute skew across ranks (straggler): slowest {} ms vs fastest {} ms (+{:.1f} %)\n",
                         ms(r.max_rank_compute), ms(r.min_rank_compute),
                         100 * (r.max_rank_compute / r.min_rank_compute - 1));
  }
  if (!r.losses.empty())
    out += fmt::format("loss: {:.4f} at step 0 → {:.4f} at step {}{}\n", r.losses.front(), r.losses.back(),
                       r.losses.size() - 1, std::isfinite(r.losses.back()) ? "" : " (training diverged: lower --lr)");
  return out;
}

std::string render_doctor_report(const doctor::DoctorReport& d) {
  std::string out;
  if (!d.points.empty()) {
    const auto& first = d.points.front().result;
    out += fmt::format("scalescope doctor: {} backend, {} {} found, world sizes up to {}; {} scaling\n", d.backend,
                       d.devices,
                       d.backend == "gpu" ? (d.devices == 1 ? "GPU" : "GPUs") : (d.devices == 1 ? "core" : "cores"),
                       d.max_world_size, core::to_string(d.mode));
    out += workload_line(first, true) + "\n";
    out += fmt::format("data: {}; device per rank: {}; timing: {}\n\n", first.data_description, first.device,
                       first.timing_source);
    // Where a point all-gathered the tied embedding, its all-gathers count as gradient communication
    // (TrainResult::scaling_sample): the column and the footnote say so.
    std::string gathered_at;
    for (const auto& p : d.points)
      if (p.result.embedding_all_gathered)
        gathered_at += (gathered_at.empty() ? "" : ",") + std::to_string(p.result.config.world_size);
    const bool gathered = !gathered_at.empty();
    TextTable t({"world size", "step ms", "tokens/s", "speedup", "efficiency", "comm ratio",
                 gathered ? "all-reduce + all-gather ms" : "all-reduce ms", "exposed comm ms", "overlap"});
    for (const auto& p : d.points) {
      const auto& r = p.result;
      t.add_row({std::to_string(r.config.world_size), ms(r.step_seconds.trimmed_mean), si(p.metrics.tokens_per_second),
                 fmt::format("{:.2f}", p.metrics.speedup), pct(p.metrics.efficiency),
                 // At one rank the "all-reduce" is local (no communication, no kernel on NCCL): not judged.
                 r.config.world_size > 1 ? pct(p.metrics.comm_ratio) : std::string("-"),
                 ms(r.phases.gradient_comm()), ms(r.phases.exposed_comm),
                 r.config.world_size > 1 ? pct(p.metrics.overlap_fraction) : std::string("-")});
    }
    out += t.render();
    const int rounds = first.config.protocol.timed_rounds;
    const char* comm = gathered ? "all-reduce and all-gather" : "all-reduce";
    out += fmt::format("step ms: {} of {} timed round{} (slowest rank); comm ratio: {} time per step / 1-rank "
                       "compute time; overlap: share of {} time hidden behind backward{}\n",
                       rounds >= 3 ? fmt::format("mean of the middle {}", rounds - 2) : std::string("mean"), rounds,
                       rounds == 1 ? "" : "s", comm, comm,
                       first.config.engine.overlap_optimizer ? " and AdamW (--overlap-optimizer)" : "");
    if (gathered)
      out += fmt::format("tied embedding all-gathered at N={} (--embedding-exchange {}), all-reduced whole elsewhere\n",
                         gathered_at, train::to_string(first.config.engine.embedding_exchange));
  }
  bool header = false;
  for (const auto& p : d.points) {
    if (p.result.config.world_size < 2) continue;
    if (!header) {
      out += "\nwhere the time beyond perfect scaling went (ms per step; compute: ranks slower than one rank alone, "
             "e.g. sharing cores, memory bandwidth or a progress thread):\n";
      header = true;
    }
    const auto& l = p.loss;
    out += fmt::format("  N={}: measured {} vs ideal {} = {:+.2f}: exposed comm {:+.2f}, compute {:+.2f}, data wait {:+.2f}, "
                       "other {:+.2f}\n",
                       p.result.config.world_size, ms(l.measured), ms(l.ideal), 1e3 * l.total(), 1e3 * l.exposed_comm,
                       1e3 * l.compute, 1e3 * l.data_wait, 1e3 * l.other);
  }
  bool kernel_header = false;
  for (const auto& p : d.points) {
    if (!p.kernels) continue;
    if (!kernel_header)
      out += "\ncompute beside one rank, kernel by kernel (rank 0's kernel traces, ms per step; idle: between kernels "
             "on any stream, waits for communication included; with the whole GPU idle: launch latency and "
             "host delays only):\n";
    kernel_header = true;
    const auto& k = *p.kernels;
    std::string top;
    for (const auto& t : k.top)
      if (std::abs(t.delta_ms()) >= 0.005) top += fmt::format("{}{} {:+.2f}", top.empty() ? "" : ", ", terminal_text(t.name, 48), t.delta_ms());
    out += fmt::format("  N={}: compute kernels {:+.2f}{}; idle between them {:.2f} → {:.2f} ({:+.2f}; with the whole "
                       "GPU idle {:.2f} → {:.2f}, {:+.2f}; {:.0f} → {:.0f} boundaries per step, median {:.2f} → {:.2f} µs); "
                       "NCCL kernels {:.2f}\n",
                       k.world_size, k.compute_kernels_delta_ms, top.empty() ? "" : " (" + top + ")", k.gaps_baseline_ms,
                       k.gaps_ms, k.gaps_ms - k.gaps_baseline_ms, k.gaps_idle_baseline_ms, k.gaps_idle_ms,
                       k.gaps_idle_ms - k.gaps_idle_baseline_ms, k.boundaries_baseline, k.boundaries,
                       k.boundary_median_baseline_us, k.boundary_median_us, k.comm_kernels_ms);
  }
  if (d.verdict) {
    out += fmt::format("\nverdict: {}", diagnose::to_string(d.verdict->verdict));
    for (std::size_t i = 0; i < d.verdict->reasons.size(); ++i)
      out += (i == 0 ? " — " : "; ") + d.verdict->reasons[i];
    out += "\n";
  } else if (d.complete()) {
    out += "\nverdict: none (no world size above 1 was measured)\n";
  }
  for (const auto& n : d.notes) out += "note: " + n + "\n";
  if (!d.complete()) out += "incomplete: " + d.failure + "\n";
  return out;
}

}  // namespace scalescope::report
