#include "doctor/doctor.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "comm/launcher.h"
#include "core/error.h"

namespace scalescope::doctor {

std::vector<int> default_world_sizes(int devices) {
  if (devices < 1) throw core::Error(fmt::format("cannot plan a scaling sweep over {} devices", devices));
  std::vector<int> sizes;
  for (int n = 1; n <= devices; n *= 2) sizes.push_back(n);
  if (sizes.back() != devices) sizes.push_back(devices);
  return sizes;
}

std::optional<std::string> overlap_note(const train::TrainResult& r) {
  const auto& p = r.phases;
  // With the tied embedding all-gathered, its two all-gathers are part of the gradient communication.
  const double comm = p.gradient_comm();
  const char* what = p.all_gather_count > 0 ? "all-reduce + all-gather" : "all-reduce";
  if (r.config.world_size < 2 || comm <= 0 || p.backward < 2.0 * comm) return std::nullopt;
  const double exposed_share = p.exposed_comm / comm;
  std::string note = fmt::format(
      "N={}: backward {:.2f} ms ≥ 2 × {} {:.2f} ms, exposed {:.2f} ms = {:.1f} % of the {} time: overlap {} (goal "
      "< 10 %)",
      r.config.world_size, 1e3 * p.backward, what, 1e3 * comm, 1e3 * p.exposed_comm, 100 * exposed_share, what,
      exposed_share < 0.10 ? "OK" : "WEAKER THAN EXPECTED");
  if (exposed_share >= 0.10 && r.embedding_all_gathered) {
    // The token table's gradient is then the first bucket, not the last: the tied-embedding advice below is moot.
    note += fmt::format("; it includes the tied embedding's all-gather after backward and its scatter-add (the "
                        "all-gathers took {:.2f} ms in all)",
                        1e3 * p.all_gather_seconds);
    return note;
  }
  // The last bucket starts only when backward ends, so its all-reduce is exposed whatever the overlap of the
  // others; when it is most of the exposed time, say so (the usual cause: an embedding tied to the head).
  if (exposed_share >= 0.10 && !r.bucket_bytes.empty() && p.last_all_reduce_seconds >= 0.5 * p.exposed_comm) {
    double gradient_bytes = 0;
    for (auto b : r.bucket_bytes) gradient_bytes += static_cast<double>(b);
    note += fmt::format(
        "; {:.2f} ms of it is the last bucket ({:.0f} MB, {:.0f} % of the gradient), which can only start when "
        "backward ends because its gradients complete last ({}): no bucket setting hides it, a larger batch per "
        "GPU makes it a smaller share of the step",
        1e3 * std::min(p.last_all_reduce_seconds, p.exposed_comm), r.bucket_bytes.back() / 1e6,
        100 * r.bucket_bytes.back() / gradient_bytes,
        r.config.model.family == train::ModelFamily::gpt
            ? "the token embedding, tied to the output head, is written again by the input side at the very end"
            : "the input embedding, the first layer, is the last one backward reaches");
    // A GPT's tied table can leave the last bucket (measured on 2 × H200: 0.63 → 0.35 ms exposed, gpt2-124m).
    if (r.config.model.family == train::ModelFamily::gpt && !r.config.engine.overlap_optimizer)
      note += "; --embedding-exchange all-gather all-reduces the head's part of the tied embedding during backward "
              "and all-gathers only what the input embedding adds";
    // Measured on 2 × H200 (bench/RESULTS.md): it hides the wait, but AdamW beside the all-reduce slows as much.
    if (!r.config.engine.overlap_optimizer)
      note += "; --overlap-optimizer runs the other parameters' AdamW beside it (on 2 × H200 it hid the wait, but "
              "AdamW ran as much slower beside the all-reduce: no gain measured there)";
  }
  return note;
}

std::optional<std::string> step_stall_note(const train::TrainResult& r) {
  const auto& e = r.step_event_seconds;
  if (e.count < 10 || !(e.median > 0) || !(e.p95 > kStallingStepRatio * e.median)) return std::nullopt;
  return fmt::format("N={}: some steps stall — per-step time p95 {:.2f} ms vs median {:.2f} ms (max {:.2f} ms, {} "
                     "steps): a rank paused now and then (host work between steps, another process on its cores or "
                     "GPU); the step ms above is the {} of the rounds, stalls included",
                     r.config.world_size, 1e3 * e.p95, 1e3 * e.median, 1e3 * e.max, e.count,
                     r.config.protocol.timed_rounds >= 3
                         ? fmt::format("mean of the middle {}", r.config.protocol.timed_rounds - 2)
                         : std::string("mean"));
}

std::optional<std::string> boundary_note(const KernelBreakdown& k) {
  const double growth = k.boundary_median_us - k.boundary_median_baseline_us;
  if (k.boundaries < kMinBoundaries || !(growth >= kBoundaryGrowthUs)) return std::nullopt;
  return fmt::format("N={}: every kernel boundary got longer: median gap between compute kernels {:.2f} → {:.2f} µs "
                     "at {:.0f} boundaries per step, ≈{:.2f} ms per step of the compute part that no kernel's own time "
                     "shows; fewer, larger kernels (fused operators) shorten it",
                     k.world_size, k.boundary_median_baseline_us, k.boundary_median_us, k.boundaries,
                     growth * k.boundaries / 1e3);
}

std::optional<std::string> interference_note(const KernelBreakdown& k) {
  if (!k.interference || !(k.step_ms > 0) ||
      !(k.interference->slowdown_ms >= analyze::CommInterference::kFindingShare * k.step_ms))
    return std::nullopt;
  return fmt::format("N={}, rank 0's kernel trace: {}", k.world_size, analyze::interference_text(*k.interference, k.step_ms));
}

ScalingLoss scaling_loss(core::ScalingMode mode, const train::TrainResult& baseline, const train::TrainResult& sample) {
  if (baseline.config.world_size != 1)
    throw core::Error(fmt::format("the scaling-loss baseline must be world size 1, not {}", baseline.config.world_size));
  const double share = mode == core::ScalingMode::strong ? 1.0 / sample.config.world_size : 1.0;
  const auto& b = baseline.phases;
  const auto& p = sample.phases;
  ScalingLoss loss;
  loss.ideal = baseline.step_seconds.trimmed_mean * share;
  loss.measured = sample.step_seconds.trimmed_mean;
  loss.exposed_comm = p.exposed_comm - b.exposed_comm;
  loss.compute = p.compute() + p.stage - (b.compute() + b.stage) * share;
  loss.data_wait = p.data_wait - b.data_wait * share;
  loss.other = loss.total() - loss.exposed_comm - loss.compute - loss.data_wait;
  return loss;
}

void to_json(nlohmann::json& j, const ScalingLoss& l) {
  j = {{"ideal_s", l.ideal}, {"measured_s", l.measured}, {"loss_s", l.total()}, {"exposed_comm_s", l.exposed_comm},
       {"compute_s", l.compute}, {"data_wait_s", l.data_wait}, {"other_s", l.other}};
}

void check_world_sizes(const std::vector<int>& sizes) {
  if (sizes.empty() || sizes.front() != 1)
    throw core::UsageError("the world sizes must start at 1: every metric compares against one rank",
                           "e.g. --world-sizes 1,2,4");
  for (std::size_t i = 1; i < sizes.size(); ++i)
    if (sizes[i] <= sizes[i - 1]) throw core::UsageError("the world sizes must be ascending, without repeats");
}

DoctorReport run_doctor(const DoctorConfig& config, int devices, int max_world_size,
                        const std::function<void(std::size_t index, std::size_t count, const std::string& what)>& progress) {
  DoctorReport report;
  report.backend = train::to_string(config.job.backend);
  report.devices = devices;
  report.max_world_size = max_world_size;
  report.mode = config.job.mode;
  std::vector<int> sizes = config.world_sizes.empty() ? default_world_sizes(max_world_size) : config.world_sizes;
  report.max_world_size = sizes.back();
  check_world_sizes(sizes);
  const auto trace_dir_of = [&](int n) {
    return config.kernel_trace_dir.empty()
               ? std::string()
               : (std::filesystem::path(config.kernel_trace_dir) / fmt::format("n{}", n)).string();
  };
  for (int n : sizes) {  // validate every configuration before measuring anything
    train::TrainJobConfig job = config.job;
    job.world_size = n;
    job.kernel_trace_dir = trace_dir_of(n);
    job.validate();
    train::check_cpu_memory(job);
  }

  std::vector<std::pair<int, diagnose::VerdictFinding>> verdicts;
  // For the whole sweep, not only while ranks run: a Ctrl-C while the next world size loads its data killed the
  // process and lost the world sizes already measured. Now it ends the sweep with those kept (complete: false).
  const comm::StopSignalScope stop_signals;
  for (std::size_t index = 0; index < sizes.size(); ++index) {
    const int n = sizes[index];
    if (const int sig = comm::received_stop_signal()) {
      report.failure = fmt::format("world size {} not measured: {}", n, comm::interrupted_message(sig));
      break;
    }
    train::TrainJobConfig job = config.job;
    job.world_size = n;
    job.kernel_trace_dir = trace_dir_of(n);
    progress(index, sizes.size(), fmt::format("world size {} ({} backend)", n, report.backend));
    DoctorPoint point;
    try {
      point.result = train::launch_job(job);
    } catch (const core::Error& e) {
      report.failure = fmt::format("world size {} failed: {}", n, e.what());
      if (!e.remedy().empty()) report.failure += " (" + e.remedy() + ")";
      break;
    }
    const auto& baseline = report.points.empty() ? point.result : report.points.front().result;
    point.metrics = core::scaling_metrics(config.job.mode, baseline.scaling_sample(), point.result.scaling_sample());
    point.loss = scaling_loss(config.job.mode, baseline, point.result);
    if (n >= 2) {
      point.verdict = diagnose::judge(n, point.metrics.speedup, point.metrics.comm_ratio);
      verdicts.emplace_back(n, *point.verdict);
      for (const auto& near : diagnose::near_thresholds(n, point.metrics.speedup, point.metrics.comm_ratio))
        report.notes.push_back(fmt::format("N={}: {}: run-to-run variation can change the verdict; repeat the run "
                                           "(or more --rounds) before acting on it",
                                           n, near));
    }
    if (auto note = overlap_note(point.result)) report.notes.push_back(*note);
    if (auto note = step_stall_note(point.result)) report.notes.push_back(*note);
    if (n >= 2 && !config.kernel_trace_dir.empty()) {
      try {
        point.kernels = kernel_breakdown(config.kernel_trace_dir, n);
        if (auto note = boundary_note(*point.kernels)) report.notes.push_back(*note);
        if (auto note = interference_note(*point.kernels)) report.notes.push_back(*note);
      } catch (const core::Error& e) {  // the figures stand without it
        report.notes.push_back(fmt::format("N={}: no kernel breakdown: {}", n, e.what()));
      }
    }
    report.points.push_back(std::move(point));
  }
  if (report.failure.empty()) progress(sizes.size(), sizes.size(), "done");
  if (const int sig = comm::received_stop_signal(); sig != 0 && report.failure.empty())
    report.notes.push_back(fmt::format("{} after the last world size had finished: every figure above was measured",
                                       comm::interrupted_message(sig)));
  if (!verdicts.empty()) report.verdict = diagnose::judge_overall(verdicts);
  if (config.job.backend == train::BackendKind::cpu)
    for (const auto& p : report.points)
      if (p.result.config.world_size > devices)
        report.notes.push_back(fmt::format("N={} runs {} CPU ranks on {} cores: oversubscribed, so its figures measure "
                                           "contention for cores rather than scaling",
                                           p.result.config.world_size, p.result.config.world_size, devices));
  if (sizes.size() == 1)
    report.notes.push_back(fmt::format("{}: there is no scaling to judge, only the single-rank baseline (and its "
                                       "all-reduce cost)",
                                       devices == 1 ? fmt::format("only one {} is available",
                                                                  report.backend == "gpu" ? "GPU" : "core")
                                                    : std::string("only world size 1 was asked for")));
  if (!report.points.empty() && report.points.front().result.data_description.starts_with("synthetic"))
    report.notes.push_back("data is synthetic (random bytes): the loss cannot fall; use real text for a real run");
  return report;
}

KernelBreakdown kernel_breakdown(const std::string& dir, int world_size) {
  const auto file = [&](int n) { return (std::filesystem::path(dir) / fmt::format("n{}", n) / "rank0.json").string(); };
  analyze::TraceOptions options;
  options.baseline_path = file(1);
  const analyze::TraceAnalysis a = analyze::analyze_trace_files({file(world_size)}, options);
  if (!a.errors.empty()) throw core::Error(a.errors.front().cause, a.errors.front().remedy);
  if (a.ranks.empty() || !a.baseline) throw core::Error(fmt::format("no kernel trace analysed in {}", dir));
  const analyze::RankAnalysis& r = a.ranks.front();
  KernelBreakdown k;
  k.world_size = world_size;
  k.gaps_baseline_ms = a.baseline->mean.launch_gap_ms;
  k.gaps_ms = r.mean.launch_gap_ms;
  k.gaps_idle_baseline_ms = a.baseline->mean.launch_gap_idle_ms;
  k.gaps_idle_ms = r.mean.launch_gap_idle_ms;
  k.boundaries_baseline = a.baseline->mean.launch_gaps;
  k.boundaries = r.mean.launch_gaps;
  k.boundary_median_baseline_us = a.baseline->launch_gaps.p50_us;
  k.boundary_median_us = r.launch_gaps.p50_us;
  for (const auto& g : r.kernels)
    if (g.comm) k.comm_kernels_ms += g.per_step_ms;
  k.step_ms = r.mean.step_ms;
  k.interference = r.interference;
  for (const auto& d : analyze::kernel_deltas(r, *a.baseline)) {
    if (d.comm) continue;
    k.compute_kernels_delta_ms += d.delta_ms();
    if (k.top.size() < 5) k.top.push_back(d);
  }
  return k;
}

void to_json(nlohmann::json& j, const KernelBreakdown& k) {
  nlohmann::json top = nlohmann::json::array();
  for (const auto& d : k.top) top.push_back(d);  // analyze's KernelDelta JSON
  j = {{"world_size", k.world_size}, {"compute_kernels_delta_ms", k.compute_kernels_delta_ms},
       {"comm_kernels_ms", k.comm_kernels_ms}, {"gaps_baseline_ms", k.gaps_baseline_ms}, {"gaps_ms", k.gaps_ms},
       {"gaps_idle_baseline_ms", k.gaps_idle_baseline_ms}, {"gaps_idle_ms", k.gaps_idle_ms},
       {"boundaries_baseline_per_step", k.boundaries_baseline}, {"boundaries_per_step", k.boundaries},
       {"boundary_median_baseline_us", k.boundary_median_baseline_us}, {"boundary_median_us", k.boundary_median_us},
       {"top", top}, {"step_ms", k.step_ms},
       {"comm_interference", k.interference ? nlohmann::json(*k.interference) : nlohmann::json(nullptr)},
       {"source", "rank 0's kernel traces (train --kernel-trace)"}};
}

void to_json(nlohmann::json& j, const DoctorReport& r) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : r.points) {
    nlohmann::json metrics = p.metrics;
    if (p.result.config.world_size == 1) {  // a 1-rank "all-reduce" is a local copy: nothing to judge
      metrics["comm_ratio"] = nullptr;
      metrics["overlap_fraction"] = nullptr;
    }
    nlohmann::json x = {{"world_size", p.result.config.world_size}, {"metrics", metrics},
                        {"scaling_loss", p.loss}, {"result", p.result}};
    if (p.verdict) x["verdict"] = *p.verdict;
    if (p.kernels) x["kernels"] = *p.kernels;
    points.push_back(std::move(x));
  }
  j = {{"schema", DoctorReport::kSchema},
       {"backend", r.backend},
       {"devices", r.devices},
       {"max_world_size", r.max_world_size},
       {"scaling", std::string(core::to_string(r.mode))},
       {"complete", r.complete()},
       {"points", points},
       {"notes", r.notes}};
  if (r.verdict) j["verdict"] = *r.verdict;
  if (!r.failure.empty()) j["failure"] = r.failure;
}

}  // namespace scalescope::doctor
