// The assessor of the input pipeline (input-bound): data waits measured per step, the DataLoader's settings, its
// workers against the host's CPUs, and what the text says of the CPU, the GPUs' idleness and the storage.

#include <algorithm>
#include <cctype>

#include "diagnose/causes_util.h"

namespace scalescope::diagnose {

using namespace detail;

namespace {

/// The DataLoader workers the job's ranks start on one host, against the CPUs the text says the host has: each rank
/// runs its own loader, so a host carries workers × ranks loader processes beside the ranks. Empty when the worker
/// count, the ranks per host or the CPU count is not in the evidence.
struct LoaderDemand {
  int workers = 0, ranks = 0, cpus = 0;
  EvidenceLine workers_line, cpus_line;
};
std::optional<LoaderDemand> loader_demand(const Context& ctx) {
  LoaderDemand d;
  for (const auto& c : ctx.facts.of<Claim>())
    if (const auto count = cpu_count_of(c.fact)) {
      const int n = *count;
      if (n > d.cpus) {
        d.cpus = n;
        d.cpus_line = line("the host has " + c.fact.detail + " CPUs, as the text says", c.where);
      }
    }
  if (d.cpus == 0) return std::nullopt;
  // Workers per rank: the script's flag (--num_workers 32, --workers=8, -j 16, --dataloader_num_workers 4), or the
  // DataLoader's argument in the code.
  for (const auto& l : ctx.facts.of<Launch>())
    for (std::size_t i = 0; i < l.fact.args.size(); ++i) {
      std::string a = l.fact.args[i], v;
      if (const auto eq = a.find('='); eq != std::string::npos) {
        v = a.substr(eq + 1);
        a = a.substr(0, eq);
      } else if (i + 1 < l.fact.args.size()) {
        v = l.fact.args[i + 1];
      }
      const bool flag = a == "--num_workers" || a == "--num-workers" || a == "--workers" || a == "-j" ||
                        a == "--dataloader_num_workers" || a == "--dataloader-num-workers" || a == "--data_workers" ||
                        a == "--data-workers" || a == "--n_workers" || a == "--nworkers";
      if (flag && !v.empty() && v.size() <= 4 && std::all_of(v.begin(), v.end(), ::isdigit)) {
        d.workers = std::stoi(v);
        d.workers_line = line(fmt::format("{} {}: {} loader workers per rank", a, v, v), l.where);
      }
    }
  if (d.workers == 0)
    for (const auto& c : ctx.facts.of<CodeUse>())
      if (c.fact.construct == "dataloader" && c.fact.value && *c.fact.value >= 1) {
        d.workers = static_cast<int>(*c.fact.value);
        d.workers_line = line(fmt::format("num_workers={} in the DataLoader: {} loader workers per rank", d.workers, d.workers), c.where);
      }
  if (d.workers == 0) return std::nullopt;
  d.ranks = ctx.ranks_per_node.value_or(ctx.span != Span::multi_node ? ctx.ranks.value_or(0) : 0);
  if (d.ranks == 0 && ctx.span != Span::multi_node) d.ranks = ctx.expected.gpus;
  if (d.ranks == 0) return std::nullopt;
  return d;
}

}  // namespace

std::optional<Assessment> assess_input_bound(const Context& ctx) {
  Assessment a = start("input-bound");
  double score = 0;
  std::vector<EvidenceLine> little_wait;  // said only when something else points at the input
  for (const auto& s : ctx.facts.of<StepPhases>())
    if (s.fact.data_wait_s && s.fact.step_s && *s.fact.step_s > 0) {
      const double share = *s.fact.data_wait_s / *s.fact.step_s;
      if (share < 0.1) {
        little_wait.push_back(line(fmt::format("data wait {} of the step", percent(share)), s.where));
        continue;
      }
      const double sc = share >= 0.5 ? 0.85 : share >= 0.25 ? 0.6 : 0.35;
      a.evidence.push_back(line(fmt::format("waiting for data {} of a {} step ({}){}", duration(*s.fact.data_wait_s),
                                            duration(*s.fact.step_s), percent(share),
                                            s.fact.basis.empty() ? "" : " — " + s.fact.basis),
                                s.where));
      if (sc > score) {
        score = sc;
        a.cost.seconds = *s.fact.data_wait_s;
        a.cost.per = "step";
        a.cost.share = share;
        a.cost.text = fmt::format("{} of every {} step waits for data ({}); compute and communication take the rest",
                                  duration(*s.fact.data_wait_s), duration(*s.fact.step_s), percent(share));
      }
    }
  for (const auto& m : ctx.facts.of<FrameworkMessage>())
    if (m.fact.id == "dataloader-workers" || m.fact.id == "persistent-workers") {
      a.evidence.push_back(line(m.fact.id == "dataloader-workers" ? "the data loader's worker count is off for this machine"
                                                                 : "loader workers are re-created every epoch",
                                m.where));
      score = std::max(score, 0.3);
    }
  for (const auto& c : ctx.facts.of<CodeUse>())
    if (c.fact.construct == "dataloader" && c.fact.value && *c.fact.value == 0) {
      a.evidence.push_back(line("the DataLoader runs with num_workers=0: every batch is loaded and transformed in the training "
                                "process itself, on the step's critical path",
                                c.where));
      score = std::max(score, 0.4);
    } else if (c.fact.construct == "dataloader" && c.fact.detail == "persistent_workers=False") {
      a.evidence.push_back(line("persistent_workers=False: the loader's workers are started again every epoch", c.where));
      score = std::max(score, 0.3);
    }
  // The loaders oversubscribe the host: more loader processes than CPUs, each gets a fraction of a core, so decoding
  // and augmenting a batch takes longer than the GPUs' step and they wait (PyTorch warns when one loader asks for more
  // workers than the host's cores; across ranks the sum is what the host carries).
  if (const auto ld = loader_demand(ctx); ld && ld->workers * ld->ranks > ld->cpus) {
    a.evidence.push_back(ld->workers_line);
    a.evidence.push_back(ld->cpus_line);
    a.evidence.push_back(line(fmt::format("{} workers × {} ranks = {} loader processes, plus the {} ranks, on {} CPUs: each "
                                          "worker gets {:.2f} of a core, so the input pipeline, not the GPUs, sets the pace",
                                          ld->workers, ld->ranks, ld->workers * ld->ranks, ld->ranks, ld->cpus,
                                          static_cast<double>(ld->cpus) / (ld->workers * ld->ranks + ld->ranks)),
                              ld->cpus_line.where));
    const bool told = first_claim(ctx, "gpu-underused") || first_claim(ctx, "slow") || first_claim(ctx, "util-swings");
    score = std::max(score, told ? 0.45 : 0.4);
    a.fix = fmt::format("at most {} workers per rank (the host's {} CPUs over {} ranks, less one for the rank itself); "
                        "pin_memory=True and persistent_workers=True; pre-decode or move augmentation to the GPU (DALI) "
                        "if that is still short",
                        std::max(1, ld->cpus / ld->ranks - 1), ld->cpus, ld->ranks);
  }
  // The input pipeline's share of the step, measured ("loading data costs about 75 % of the total time"): that share
  // of every step is spent waiting for data, on any number of GPUs.
  for (const auto& m : ctx.facts.of<Measurement>())
    if (m.fact.quantity == "data loading share" && m.fact.unit == "%" && m.fact.value >= 25 && m.fact.value <= 100) {
      a.evidence.push_back(line("data loading takes " + figure(m.fact) + " of the step: the GPUs wait that long for every "
                                "batch, and more GPUs only wait more",
                                m.where));
      score = std::max(score, m.fact.value >= 50 ? 0.6 : 0.45);
      if (!a.cost.share) {
        a.cost.share = m.fact.value / 100;
        a.cost.per = "step";
        a.cost.text = fmt::format("{} of every step waits for data, as measured", figure(m.fact));
      }
      break;
    }
  // In words: a saturated CPU, GPUs left idle, data loading suspected — together with scaling that falls short.
  {
    const auto cpu = first_claim(ctx, "cpu-saturated"), idle = first_claim(ctx, "gpu-underused"),
               input = first_claim(ctx, "input-suspected");
    const auto& ex = ctx.expected;
    const bool poor = ex.measured_speedup && ex.gpus >= 2 && *ex.measured_speedup < 0.75 * ex.gpus;
    if (cpu) {
      a.evidence.push_back(line("the text says a CPU is saturated: the host side (data loading, augmentation, the Python "
                                "loop) cannot go faster, so more GPUs wait for it",
                                cpu->where));
      score = std::max(score, poor ? 0.45 : 0.35);
    }
    if (input) {
      a.evidence.push_back(line("the text points at data loading", input->where));
      score = std::max(score, poor ? 0.4 : 0.3);
    }
    if (idle && (cpu || input)) {
      a.evidence.push_back(line("the GPUs are said to be underused: they wait for work", idle->where));
      raise(score, 0.05);
    }
    if ((cpu || input) && poor && ex.speedup_line) a.evidence.push_back(*ex.speedup_line);
    // Utilisation that swings between idle and flat out, in a job whose input pipeline is in view: the GPU runs a batch
    // and then waits for the next — the signature of a pipeline that cannot keep up (a sync every step would show the
    // same swing at a shorter period, and a named sync says so).
    // The data on slow storage (an HDD, a network file system): every batch is read from it.
    const auto storage = first_claim(ctx, "slow-storage");
    if (storage) {
      a.evidence.push_back(line("the data is read from slow storage (a hard disk or a network file system): every batch "
                                "waits on it, and more GPUs only wait more",
                                storage->where));
      score = std::max(score, 0.35);
    }
    const auto swings = first_claim(ctx, "util-swings");
    const auto named = storage ? storage : first_claim(ctx, "input-mentioned");
    if (swings && (named || input) && !first_claim(ctx, "launch-suspected") && !ctx.has<HostSync>()) {
      a.evidence.push_back(line("GPU utilisation swings between idle and busy: each batch runs flat out, then the GPU waits "
                                "for the next",
                                swings->where));
      if (named && !input) a.evidence.push_back(line("the input pipeline is part of the job as described", named->where));
      score = std::max(score, input ? 0.55 : 0.5);
    }
    // A pause at every epoch's start: the loader starting its worker processes again (persistent_workers=False, the
    // default), the sampler and dataset set up anew — the input pipeline's start-up, paid every epoch.
    if (const auto c = first_claim(ctx, "epoch-start-stall")) {
      a.evidence.push_back(line("a pause at the start of every epoch: the DataLoader starts its workers again (and the "
                                "dataset and sampler are set up anew) before the first batch",
                                c->where));
      score = std::max(score, 0.5);
    }
    // GPUs measured idle (utilisation ≤ 10 %) in a job whose input pipeline is what the text is about.
    if (!swings && (named || input) && !first_claim(ctx, "launch-suspected") && !ctx.has<HostSync>())
      for (const auto& m : ctx.facts.of<Measurement>())
        if (m.fact.quantity == "GPU utilisation" && m.fact.unit == "%" && m.fact.value <= 10) {
          a.evidence.push_back(line("the GPUs are measured idle (" + figure(m.fact) + " utilisation): they wait for work", m.where));
          if (named && !input) a.evidence.push_back(line("the input pipeline is part of the job as described", named->where));
          score = std::max(score, input ? 0.55 : 0.5);
          break;
        } else if (m.fact.quantity == "GPU utilisation" && m.fact.unit == "%" && m.fact.value <= 70 && m.fact.value > 10) {
          // Busy only part of the time (a training step that computes keeps a GPU above 90 %): with the input pipeline
          // in view and nothing else named, the likeliest wait is the next batch — a lean, not a finding.
          a.evidence.push_back(line("the GPUs are busy only " + figure(m.fact) + " of the time: they wait for something, and "
                                    "the input pipeline is what the text describes",
                                    m.where));
          if (named && !input) a.evidence.push_back(line("the input pipeline is part of the job as described", named->where));
          score = std::max(score, input ? 0.45 : 0.4);
          break;
        }
  }
  // One-off reads in a Python profile are start-up, not per-step input.
  const auto pv = profile_view(ctx);
  for (const auto& r : pv.rows)
    if (one_off(r.fact) && pv.total_s > 0 && r.fact.cumtime_s >= 0.2 * pv.total_s)
      a.against.push_back(line(fmt::format("{}{}: {} call(s) of {} each — one-off start-up work (loading a data set), not "
                                           "per-step data loading",
                                           r.fact.file.empty() ? "" : r.fact.file + ":", r.fact.function, r.fact.calls,
                                           duration(r.fact.cumtime_s / r.fact.calls)),
                               r.where));
  if (score > 0 || !a.against.empty()) a.against.insert(a.against.end(), little_wait.begin(), little_wait.end());
  if (score == 0) {
    if (a.against.empty()) return std::nullopt;
    a.ruled_out = true;
    a.why_not = a.against.front().says;
    return a;
  }
  if (score >= 0.6 && a.cost.share && *a.cost.share >= 0.5)
    a.summary = "the input pipeline sets the step: the GPUs wait for data most of the time, so more GPUs cannot help";
  else
    a.summary = "data loading holds back part of the step";
  a.score = score;
  return a;
}

}  // namespace scalescope::diagnose
