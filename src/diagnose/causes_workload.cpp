// Assessors of the workload and training-code causes: overlap, DDP settings, DataParallel, host syncs, launch rate,
// stragglers and imbalance, torch.compile, compute contention (communication against compute:
// diagnose/causes_comm.cpp; the input pipeline: diagnose/causes_input.cpp).

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "diagnose/causes_util.h"

namespace scalescope::diagnose {
namespace {

using namespace detail;

bool contains(const std::string& s, std::string_view p) { return s.find(p) != std::string::npos; }

/// CPU ranks (a gloo job's, from their profiler traces) that share the host's cores: at least as many ranks, each
/// with its Python interpreter, its compute threads (OMP_NUM_THREADS when set, else at least one) and gloo's threads,
/// as CPUs the job could run on (profile's record, or the text). Then every rank's compute waits for cores the
/// others hold, and which rank arrives late at a collective is the scheduler's choice, not a slow member.
struct CoresShared {
  int ranks = 0, cpus = 0, threads = 1;
  EvidenceLine line_ranks, line_cpus;
};
std::optional<CoresShared> cpu_ranks_share_cores(const Context& ctx) {
  std::set<int> ranks;
  std::optional<EvidenceLine> ranks_line;
  for (const auto& s : ctx.facts.of<StepPhases>())
    if (s.fact.cpu_rank && s.fact.rank) {
      ranks.insert(*s.fact.rank);
      if (!ranks_line) ranks_line = line("CPU ranks: their profiler traces show their compute as the CPU's operators", s.where);
    }
  if (ranks.size() < 2) return std::nullopt;
  CoresShared c;
  c.ranks = static_cast<int>(ranks.size());
  for (const auto& cl : ctx.facts.of<Claim>())
    if (const auto count = cpu_count_of(cl.fact)) {
      const int n = *count;
      if (n >= 1 && (c.cpus == 0 || n < c.cpus)) {
        c.cpus = n;
        c.line_cpus = line(fmt::format("{} CPU(s) for the whole job", n), cl.where);
      }
    }
  if (c.cpus == 0) return std::nullopt;
  for (const auto& st : ctx.facts.of<Setting>())
    if (st.fact.name == "OMP_NUM_THREADS" && !st.fact.value.empty() && st.fact.value.size() < 4 &&
        std::all_of(st.fact.value.begin(), st.fact.value.end(), ::isdigit))
      c.threads = std::max(1, std::stoi(st.fact.value));
  if (c.ranks * c.threads < c.cpus) return std::nullopt;
  c.line_ranks = *ranks_line;
  return c;
}

}  // namespace

std::optional<Assessment> assess_no_overlap(const Context& ctx) {
  Assessment a = start("no-overlap");
  double score = 0;
  bool by_code_or_config = false;  // the code or DDP's configuration serialises the reduction (not the model's size)
  // The text says the all-reduce runs after backward (or overlaps 0 %); the code reduces gradients by hand in the loop.
  // PyTorch's own DDP in place of a hand-written data-parallel wrapper made training faster: what DDP adds over such a
  // wrapper is the all-reduce of gradient buckets during backward, so the wrapper reduced after backward.
  if (const auto c = fixed_by(ctx, "framework-ddp")) {
    a.evidence.push_back(line("the text says PyTorch's DDP in place of a hand-written wrapper made training faster: DDP "
                              "all-reduces gradient buckets while backward runs, so the wrapper reduced them after it",
                              c->where));
    score = std::max(score, 0.5);
    by_code_or_config = true;
  }
  if (const auto c = first_claim(ctx, "no-overlap")) {
    a.evidence.push_back(line("the text says the gradient all-reduce runs after backward, not during it: the whole "
                              "communication time adds to every step",
                              c->where));
    score = std::max(score, 0.5);
  }
  {
    bool ddp = false;
    for (const auto& c : ctx.facts.of<CodeUse>()) ddp = ddp || c.fact.construct == "DistributedDataParallel";
    for (const auto& c : ctx.facts.of<CodeUse>())
      if (c.fact.construct == "manual-all-reduce" && c.fact.in_loop && !ddp) {
        a.evidence.push_back(line("the training loop all-reduces by hand (dist.all_reduce) without DDP: nothing starts the "
                                  "reduction while backward still runs",
                                  c.where));
        score = std::max(score, 0.45);
        by_code_or_config = true;
        break;
      }
  }
  for (const auto& c : ctx.facts.of<CodeUse>())
    if (c.fact.construct == "sync-in-reduction") {
      a.evidence.push_back(line("the gradient-reduction code calls " + c.fact.detail + ": it runs from backward's hooks for "
                                "every bucket, and the CPU waits there for all GPU work before issuing more of backward — "
                                "the reductions no longer overlap it",
                                c.where));
      score = std::max(score, 0.55);
      by_code_or_config = true;
      break;
    }
  for (const auto& s : ctx.facts.of<StepPhases>()) {
    const auto& f = s.fact;
    if (!f.all_reduce_s || !f.exposed_comm_s || !f.step_s || *f.all_reduce_s <= 0 || f.world_size.value_or(2) < 2) continue;
    const double overlap = std::clamp(1 - *f.exposed_comm_s / *f.all_reduce_s, 0.0, 1.0);
    if (*f.exposed_comm_s < 0.05 * *f.step_s && overlap < 0.2) continue;  // too small a share to matter
    if (overlap < 0.2) {
      a.evidence.push_back(line(fmt::format("all-reduce {} per step, {} of it exposed after backward (overlap {})",
                                            duration(*f.all_reduce_s), duration(*f.exposed_comm_s), percent(overlap)),
                                s.where));
      score = std::max(score, 0.6);
      a.cost.seconds = *f.exposed_comm_s;
      a.cost.per = "step";
      a.cost.share = *f.exposed_comm_s / *f.step_s;
      a.cost.text = fmt::format("{} of exposed communication per step ({})", duration(*f.exposed_comm_s), percent(*a.cost.share));
    } else if (overlap > 0.7) {
      a.against.push_back(line(fmt::format("overlap {} of the all-reduce", percent(overlap)), s.where));
    }
  }
  for (const auto& d : ctx.facts.of<DdpConfig>())
    if (d.fact.overlap && !*d.fact.overlap) {
      a.evidence.push_back(line("the all-reduces are configured to start only after backward (overlap off)", d.where));
      score = std::max(score, score > 0 ? 0.75 : 0.45);
      by_code_or_config = true;
    } else if (d.fact.bucket_bytes.size() == 1) {
      a.evidence.push_back(line("one gradient bucket: its all-reduce can start only when backward has finished", d.where));
      score = std::max(score, 0.4);
    }
  if (score == 0) {
    if (a.against.empty()) return std::nullopt;
    a.ruled_out = true;
    a.why_not = "the all-reduce overlaps backward";
    return a;
  }
  // A model whose gradients fit in one DDP bucket has one all-reduce, ready only when backward ends: no overlap is
  // what such a model gets, not a setting or a code path that turned it off (comm-bound-small-model says it).
  if (const auto m = model_with_params(ctx); m && fits_one_bucket(m->params) && !by_code_or_config) {
    score *= 0.6;
    a.against.push_back(line(one_bucket_model(*m) + ", one DDP bucket (25 MB), reduced in one call after the last gradient "
                                                    "— no overlap is this model's size, not a fault",
                             m->where));
  }
  a.score = score;
  a.summary = "the gradient all-reduce runs after backward instead of during it";
  return a;
}

std::optional<Assessment> assess_ddp_unused_parameters(const Context& ctx) {
  Assessment a = start("ddp-unused-parameters");
  double score = 0;
  for (const auto& m : ctx.facts.of<FrameworkMessage>()) {
    if (m.fact.id == "ddp-find-unused-no-unused") {
      a.evidence.push_back(line("PyTorch's reducer: find_unused_parameters=True, but no parameter was unused — an extra "
                                "autograd-graph traversal every iteration for nothing",
                                m.where));
      // Named by PyTorch itself, but its cost unmeasured: medium until a trace or an A/B shows the time.
      score = std::max(score, 0.65);
    } else if (m.fact.id == "ddp-unused-parameters") {
      a.evidence.push_back(line("parameters that receive no gradient in some iterations", m.where));
      score = std::max(score, 0.6);
    }
  }
  for (const auto& d : ctx.facts.of<DdpConfig>())
    if (d.fact.find_unused_parameters && *d.fact.find_unused_parameters) {
      if (std::none_of(a.evidence.begin(), a.evidence.end(), [&](const EvidenceLine& e) {
            return e.where.source == d.where.source && e.where.line == d.where.line;
          }))
        a.evidence.push_back(line("DDP constructed with find_unused_parameters=True", d.where));
      score = std::max(score, 0.55);
    } else if (d.fact.find_unused_parameters && !*d.fact.find_unused_parameters) {
      a.against.push_back(line("find_unused_parameters=False", d.where));
    }
  for (const auto& c : ctx.facts.of<CodeUse>())
    if (c.fact.construct == "find_unused_parameters") {
      if (c.fact.detail == "True") {
        a.evidence.push_back(line("the training code builds DDP with find_unused_parameters=True: DDP traverses the autograd "
                                  "graph every iteration to find parameters without gradients",
                                  c.where));
        score = std::max(score, 0.5);
      } else {
        a.against.push_back(line("the training code builds DDP with find_unused_parameters=" + c.fact.detail, c.where));
      }
    }
  // DDP's search for unused parameters is a range of its own in profiler traces (PyTorch 2.x): it runs only with
  // find_unused_parameters=True, and its duration is the traversal's cost.
  for (const auto& c : ctx.facts.of<CpuOpTime>())
    if (contains(c.fact.name, "search_unused_parameters") || contains(c.fact.name, "find_unused") ||
        contains(c.fact.name, "prepare_for_backward")) {
      double step_s = 0;
      for (const auto& p : ctx.facts.of<StepPhases>())
        if (p.where.source == c.where.source && p.fact.step_s) step_s = *p.fact.step_s;
      a.evidence.push_back(line(fmt::format("{}: {:.1f} call(s) and {} per step on the host{} — the traversal "
                                            "find_unused_parameters=True makes DDP do",
                                            c.fact.name, c.fact.calls_per_step, duration(c.fact.ms_per_step / 1e3),
                                            step_s > 0 ? " (" + percent(c.fact.ms_per_step / 1e3 / step_s) + " of the profiled step)" : ""),
                                c.where));
      score = std::max(score, 0.75);
      a.cost.seconds = c.fact.ms_per_step / 1e3;
      a.cost.per = "step";
      if (step_s > 0) a.cost.share = c.fact.ms_per_step / 1e3 / step_s;
      a.cost.text = fmt::format("{} per step of host time in DDP's search for unused parameters{}; it also delays the "
                                "buckets' readiness, so their all-reduces start later",
                                duration(c.fact.ms_per_step / 1e3), a.cost.share ? " (" + percent(*a.cost.share) + ")" : "");
    }
  if (score > 0)
    for (const auto& l : ctx.facts.of<Launch>())
      if (l.fact.launcher.find("torch.distributed") != std::string::npos || l.fact.launcher == "torchrun") {
        a.evidence.push_back(line(l.fact.launcher + " launch of " + l.fact.program + ": one DDP process per GPU", l.where));
        break;
      }
  if (score == 0) {
    if (a.against.empty()) return std::nullopt;
    a.ruled_out = true;
    a.why_not = "DDP runs with find_unused_parameters=False";
    return a;
  }
  a.score = score;
  a.summary = "DDP runs with find_unused_parameters=True although the model has no unused parameters: a graph traversal "
              "each step, and buckets wait for it";
  if (a.cost.text.empty())
    a.cost.text = "usually a few % of the step (more with many small parameters or heavy Python); it delays bucket "
                  "readiness, so overlap drops — not a multi-× slowdown on its own";
  return a;
}

std::optional<Assessment> assess_dataparallel_not_ddp(const Context& ctx) {
  Assessment a = start("dataparallel-not-ddp");
  double score = 0;
  for (const auto& m : ctx.facts.of<FrameworkMessage>())
    if (m.fact.id == "dataparallel") {
      a.evidence.push_back(line("the job runs under torch.nn.DataParallel (one process driving several GPUs)", m.where));
      score = std::max(score, 0.8);
    }
  bool ddp_code = false;
  for (const auto& c : ctx.facts.of<CodeUse>()) ddp_code = ddp_code || c.fact.construct == "DistributedDataParallel";
  for (const auto& c : ctx.facts.of<CodeUse>())
    if (c.fact.construct == "DataParallel") {
      const bool code = c.fact.detail.empty();
      a.evidence.push_back(line(code ? "the training code wraps the model in torch.nn.DataParallel: one process drives every GPU"
                                     : "the text says the job uses DataParallel",
                                c.where));
      score = std::max(score, ddp_code ? 0.3 : code ? 0.75 : 0.55);
    }
  // Moving to DDP made the job faster: before, one process drove every GPU (DataParallel or a single-process
  // equivalent), which is what DDP removes.
  if (const auto c = fixed_by(ctx, "ddp")) {
    a.evidence.push_back(line("the text says moving to DDP made training faster: before, one process drove every GPU "
                              "(DataParallel or an equivalent), replicating the model and gathering outputs every step",
                              c->where));
    score = std::max(score, 0.6);
  }
  // One process said to drive several GPUs: DataParallel's shape, and DistributedDataParallel's too in its
  // single-process multi-device mode (one process replicating the module to every GPU each step, under one GIL).
  for (const auto& c : ctx.facts.of<Claim>())
    if (c.fact.kind == "not-ddp" && c.fact.detail == "one process drives several GPUs") {
      a.evidence.push_back(line(ddp_code ? "the text says one process drives several GPUs: DistributedDataParallel in its "
                                           "single-process multi-device mode replicates the model to every GPU each step, "
                                           "as DataParallel does"
                                         : "the text says one process drives several GPUs: DataParallel's shape",
                                c.where));
      score = std::max(score, 0.5);
      break;
    }
  if (const auto c = first_claim(ctx, "not-ddp"); c && !ddp_code && c->fact.detail.empty()) {
    a.evidence.push_back(line("the text asks whether DDP would help: the job does not use it yet, so several GPUs are driven "
                              "from one process (DataParallel or an equivalent)",
                              c->where));
    const auto idle = first_claim(ctx, "gpu-underused");
    if (idle) a.evidence.push_back(line("the GPUs are said to be underused", idle->where));
    score = std::max(score, idle ? 0.45 : 0.4);
  }
  // A Python profile with DataParallel's fingerprint.
  const auto pv = profile_view(ctx);
  double dp_time = 0;
  bool direct = false, setattr = false, modules = false, locks = false;
  for (const auto& r : pv.rows) {
    const auto& f = r.fact;
    const bool dp_file = contains(f.file, "replicate.py") || contains(f.file, "parallel_apply.py") ||
                         contains(f.file, "scatter_gather.py") || contains(f.file, "data_parallel.py");
    if (dp_file) {
      direct = true;
      a.evidence.push_back(line(fmt::format("{}({}): {} calls, {} — DataParallel's own code", f.file, f.function, f.calls,
                                            duration(f.cumtime_s)),
                                r.where));
      dp_time = std::max(dp_time, f.cumtime_s);
    } else if (f.function == "__setattr__" && contains(f.file, "module") && f.calls >= 100000) {
      setattr = true;
      a.evidence.push_back(line(fmt::format("Module.__setattr__ called {} times ({}): modules rebuilt over and over, as "
                                            "DataParallel's replicate() does on every forward",
                                            f.calls, duration(f.cumtime_s)),
                                r.where));
      dp_time += f.cumtime_s;
    } else if ((f.function == "named_modules" || f.function == "modules" || f.function == "_named_members") && f.calls >= 100000) {
      modules = true;
      a.evidence.push_back(line(fmt::format("{} visited {} times ({}): the module tree walked again for every replica",
                                            f.function, f.calls, duration(f.cumtime_s)),
                                r.where));
      dp_time += f.tottime_s;
    } else if (f.function == "acquire" && f.tottime_s >= 1.0) {
      locks = true;
      a.evidence.push_back(line(fmt::format("{} lock waits, {}: threads waiting on each other (parallel_apply runs one thread "
                                            "per GPU under the GIL)",
                                            f.calls, duration(f.tottime_s)),
                                r.where));
      dp_time += f.tottime_s;
    }
  }
  if (direct) score = std::max(score, 0.85);
  else if (setattr && modules) score = std::max(score, locks ? 0.7 : 0.65);
  else if (setattr || modules) score = std::max(score, 0.45);
  if (dp_time > 0 && pv.total_s > 0) {
    double steady = pv.total_s;
    for (const auto& r : pv.rows)
      if (one_off(r.fact)) steady -= r.fact.cumtime_s;
    a.cost.seconds = dp_time;
    a.cost.per = "profile";
    if (steady > 0) a.cost.share = std::min(1.0, dp_time / steady);
    a.cost.text = fmt::format("about {} of the profile in replication and thread overhead{}", duration(dp_time),
                              a.cost.share ? " (" + percent(*a.cost.share) + " of the profiled time outside start-up)" : "");
  }
  // One Python process given several GPUs (causes_util.h single_process_over_gpus).
  if (score == 0)
    if (const auto plain = single_process_over_gpus(ctx)) {
      a.evidence.push_back(line(fmt::format("`python {}` starts one process for the {} GPUs the evidence names: without "
                                            "torchrun (or accelerate, deepspeed, mpirun) there are no DDP ranks, and a "
                                            "framework that uses every visible GPU from one process does it with DataParallel",
                                            plain->fact.program, ctx.expected.gpus),
                                plain->where));
      score = 0.5;
    }
  // A table with a DP row slower than a DDP row.
  for (const auto& c : ctx.variants.comparisons)
    if (c.dim == "mode" && c.worse_value == "DP" && c.better_value == "DDP" && c.beyond_noise) {
      a.evidence.push_back(line(fmt::format("{} {} against {} {} with DDP: DataParallel is {:.2f}× slower", row_name(*c.worse.m),
                                            figure(*c.worse.m), row_name(*c.better.m), figure(*c.better.m), c.ratio),
                                *c.worse.where));
      score = std::max(score, c.ratio >= 1.2 ? 0.5 : 0.4);
      if (!a.cost.seconds && !c.worse.m->higher_is_better) {
        a.cost.seconds = seconds_of(*c.worse.m) - seconds_of(*c.better.m);
        a.cost.per = per_of(c.quantity);
        a.cost.text = fmt::format("{} per {} against DDP in the same table", duration(*a.cost.seconds), a.cost.per);
      }
    } else if (c.dim == "mode" && c.worse_value == "DDP" && c.better_value == "DP" && c.beyond_noise) {
      a.against.push_back(line("DDP measured slower than DataParallel in this table", *c.worse.where));
    }
  if (score == 0) return std::nullopt;
  a.score = score;
  a.summary = "the job runs under torch.nn.DataParallel: one process replicates the model onto every GPU on every forward "
              "and drives them from threads under the GIL";
  if (a.cost.text.empty())
    a.cost.text = "not measured here: the model's replication on every forward and the threads' GIL contention grow with the "
                  "number of modules and GPUs, and can exceed what the extra GPUs add (time one step under DDP to compare)";
  return a;
}

std::optional<Assessment> assess_host_sync(const Context& ctx) {
  Assessment a = start("host-sync");
  double score = 0;
  for (const auto& s : ctx.facts.of<StepPhases>())
    if (s.fact.host_sync_s && s.fact.step_s && *s.fact.step_s > 0) {
      const double share = *s.fact.host_sync_s / *s.fact.step_s;
      if (share >= 0.05) {
        a.evidence.push_back(line(fmt::format("the GPU idles {} per step ({}) after host synchronisations{}", duration(*s.fact.host_sync_s),
                                              percent(share), s.fact.basis.empty() ? "" : " (" + s.fact.basis + ")"),
                                  s.where));
        const double sc = share >= 0.15 ? 0.7 : 0.5;
        if (sc > score) {
          score = sc;
          a.cost.seconds = *s.fact.host_sync_s;
          a.cost.per = "step";
          a.cost.share = share;
          a.cost.text = fmt::format("{} of GPU idle time per step ({})", duration(*s.fact.host_sync_s), percent(share));
        }
      }
    }
  if (score > 0)
    for (const auto& h : ctx.facts.of<HostSync>())
      if (a.evidence.size() < 6 && h.fact.gpu_idle_ms_per_step > 0)
        a.evidence.push_back(line(fmt::format("{}: {:.1f} per step, {} of GPU idle", h.fact.label, h.fact.per_step,
                                              duration(h.fact.gpu_idle_ms_per_step / 1e3)),
                                  h.where));
  // A sync the text or a profile names with its time per step ("40–50 ms of cudaStreamSynchronize every step").
  for (const auto& h : ctx.facts.of<HostSync>())
    if (h.fact.blocked_ms_per_step > 0 && h.fact.gpu_idle_ms_per_step == 0) {
      a.evidence.push_back(line(fmt::format("{} blocks the host {} per step: the CPU cannot queue the next kernels until the GPU "
                                            "drains",
                                            h.fact.label, duration(h.fact.blocked_ms_per_step / 1e3)),
                                h.where));
      const double sc = h.fact.blocked_ms_per_step >= 5 ? 0.65 : 0.45;
      if (sc > score) {
        score = sc;
        a.cost.seconds = h.fact.blocked_ms_per_step / 1e3;
        a.cost.per = "step";
        a.cost.text = fmt::format("up to {} per step while the host waits (the GPU idles for the part it cannot overlap)",
                                  duration(h.fact.blocked_ms_per_step / 1e3));
      }
    }
  // torch.cuda.empty_cache() every step: it synchronises the device and hands the caching allocator's free blocks back,
  // which the next step must cudaMalloc again (PyTorch's CUDA semantics notes: memory management).
  for (const auto& c : ctx.facts.of<CodeUse>())
    if (c.fact.construct == "empty_cache" && c.fact.in_loop) {
      a.evidence.push_back(line("torch.cuda.empty_cache() every step: a device synchronisation, and the freed blocks are "
                                "allocated again with cudaMalloc in the next step",
                                c.where));
      score = std::max(score, 0.5);
      break;
    }
  // Syncs in the training loop of the code: each one drains the GPU every step.
  {
    std::vector<const Seen<CodeUse>*> syncs;
    const auto uses = ctx.facts.of<CodeUse>();
    for (const auto& c : uses)
      if (c.fact.construct == "host-sync" && c.fact.in_loop) syncs.push_back(&c);
    for (const auto* c : syncs)
      if (a.evidence.size() < 6)
        a.evidence.push_back(line(fmt::format("{} inside the training loop: a device-to-host wait every step", c->fact.detail), c->where));
    if (!syncs.empty()) score = std::max(score, syncs.size() >= 2 ? 0.5 : 0.4);
  }
  for (const auto& m : ctx.facts.of<FrameworkMessage>())
    if (m.fact.id == "sync-debug") {
      a.evidence.push_back(line("PyTorch's sync debug mode caught a synchronising CUDA call", m.where));
      score = std::max(score, 0.45);
    }
  if (score == 0) return std::nullopt;
  a.score = score;
  a.summary = "the host waits for the GPU inside the step (.item(), .cpu(), synchronize, blocking copies): the GPU drains "
              "and idles until the next launches";
  if (a.cost.text.empty())
    a.cost.text = "not measured here: after each synchronising call the GPU idles until the host launches again — a profiler "
                  "trace gives the idle time per step";
  return a;
}

std::optional<Assessment> assess_launch_bound(const Context& ctx) {
  Assessment a = start("launch-bound");
  double score = 0;
  // In words and figures: a short step with the GPU mostly idle and no input or CPU-saturation claim — the host's launch
  // rate sets the step (or the text names kernel launches).
  {
    const auto words = first_claim(ctx, "launch-suspected"), idle_claim = first_claim(ctx, "gpu-underused");
    const bool other = first_claim(ctx, "cpu-saturated") || first_claim(ctx, "input-suspected");
    std::optional<Seen<Measurement>> util, step;
    for (const auto& m : ctx.facts.of<Measurement>()) {
      if (m.fact.table != "prose") continue;
      if (m.fact.quantity == "GPU utilisation" && m.fact.value < 50 && !util) util.emplace(m);
      if (m.fact.quantity == "step time" && m.fact.unit == "s" && m.fact.value < 0.1 && !step) step.emplace(m);
    }
    const bool idle = util || idle_claim;
    if (!other && ((idle && step) || words)) {
      if (step) a.evidence.push_back(line("a short step: " + figure(step->fact), step->where));
      if (util) a.evidence.push_back(line("the GPU busy only " + figure(util->fact) + " of it", util->where));
      else if (idle_claim) a.evidence.push_back(line("the GPUs are said to be underused", idle_claim->where));
      if (words) a.evidence.push_back(line("the text names launch or host overhead", words->where));
      score = std::max(score, idle && step ? (words ? 0.5 : 0.45) : 0.35);
    }
  }
  // The job's own step time without the profiler, when a log (not a trace) gives one.
  std::optional<double> unprofiled;
  std::optional<EvidenceLine> unprofiled_line;
  for (const auto& m : ctx.facts.of<Measurement>())
    if (m.fact.quantity == "step time" && (m.fact.unit == "s" || m.fact.unit == "ms")) {
      unprofiled = seconds_of(m.fact);
      unprofiled_line = line("the job's own step time: " + figure(m.fact), m.where);
    }
  double mean_kernel_us = 0;
  for (const auto& g : ctx.facts.of<LaunchGaps>()) mean_kernel_us = std::max(mean_kernel_us, g.fact.mean_kernel_us);
  for (const auto& s : ctx.facts.of<StepPhases>()) {
    if (!s.fact.launch_gap_s || !s.fact.step_s || *s.fact.step_s <= 0) continue;
    const double share = *s.fact.launch_gap_s / *s.fact.step_s;
    if (share < 0.2) continue;
    double sc = share >= 0.4 ? 0.55 : 0.4;
    std::string says = fmt::format("the GPU idles between kernels {} of a {} step ({})", duration(*s.fact.launch_gap_s),
                                   duration(*s.fact.step_s), percent(share));
    const auto real_step = s.fact.step_unprofiled_s ? s.fact.step_unprofiled_s : unprofiled;
    double gaps = *s.fact.launch_gap_s;  // the part of the gaps the job would have without the profiler
    if (s.fact.profiled) {
      if (real_step && *real_step < *s.fact.step_s) {
        // The profiler adds host time to every launch; the difference between the steps is its overhead, and the gaps
        // it leaves are at most what remains.
        const double inflated = *s.fact.step_s - *real_step;
        const double real = std::max(0.0, *s.fact.launch_gap_s - inflated);
        gaps = real;
        says += fmt::format("; without the profiler the step is {} ({} shorter), so at most {} of the gaps are the job's own",
                            duration(*real_step), duration(inflated), duration(real));
        if (unprofiled_line) a.evidence.push_back(*unprofiled_line);
        if (real / *real_step < 0.2) {
          sc = 0.15;
          a.against.push_back(line("the gaps are the profiler's own overhead: the unprofiled step has no room for them", s.where));
        }
      } else if (mean_kernel_us > 0 && mean_kernel_us < 10 && share >= 0.5) {
        // Kernels of a few µs: even without a profiler the host launches each in about as long as it runs.
        sc = std::min(sc, 0.45);
        says += fmt::format("; compute kernels average {:.1f} µs, shorter than launching one takes, so the gaps are not "
                            "only the profiler's",
                            mean_kernel_us);
        a.needs.push_back({"the job's step time without the profiler", "the job's own step timing (or nsys profile, which adds less)",
                           "how much of the gaps the profiler added"});
      } else {
        sc = std::min(sc, 0.3);
        says += "; measured in a profiled step, whose host time the profiler inflates";
        a.needs.push_back({"the job's step time without the profiler", "the job's own step timing (or nsys profile, which adds less)",
                           "launch-bound for real against a profiler artefact"});
      }
    }
    a.evidence.push_back(line(says, s.where));
    if (sc > score) {
      score = sc;
      a.cost.seconds = gaps;
      a.cost.per = "step";
      const double step = real_step && *real_step < *s.fact.step_s ? *real_step : *s.fact.step_s;
      a.cost.share = std::min(1.0, gaps / step);
      a.cost.text = fmt::format("up to {} of idle between kernels per step ({} of the {} step{})", duration(gaps),
                                percent(*a.cost.share), duration(step),
                                real_step && *real_step < *s.fact.step_s ? ", the profiler's own overhead taken out" : "");
    }
  }
  for (const auto& g : ctx.facts.of<LaunchGaps>())
    if (score > 0 && g.fact.mean_kernel_us > 0 && a.evidence.size() < 4)
      a.evidence.push_back(line(fmt::format("{:.0f} gaps per step, median {:.1f} µs; compute kernels {:.1f} µs on average",
                                            g.fact.per_step, g.fact.median_us, g.fact.mean_kernel_us),
                                g.where));
  if (score == 0) return std::nullopt;
  a.score = score;
  a.summary = "kernels are too short for the host to keep the GPU busy: the launch rate sets the step";
  return a;
}

std::optional<Assessment> assess_straggler(const Context& ctx) {
  Assessment a = start("straggler");
  double score = 0;
  // Node health checks that measured a member below its threshold (a link, a GPU's bandwidth): that member is slower
  // than its peers, and a synchronous job runs at its speed.
  {
    std::size_t shown = 0;
    for (const auto& m : ctx.facts.of<Measurement>()) {
      if (m.fact.quantity != "health check" || !m.fact.higher_is_better) continue;
      const auto ex = m.fact.dims.find("expected");
      if (shown++ < 4)
        a.evidence.push_back(line(fmt::format("{}: {} measured against {} expected — below its peers", row_name(m.fact), figure(m.fact),
                                              ex == m.fact.dims.end() ? std::string("the threshold") : ex->second),
                                  m.where));
      score = std::max(score, 0.55);
    }
    if (score > 0) a.summary = "a member (a node, its links) measures below its peers in the health checks, and every step waits for it";
  }
  if (const auto c = first_claim(ctx, "one-slow-member")) {
    a.evidence.push_back(line("the text names one member slower than the others (\"" + c->fact.detail + "\"): in a synchronous "
                              "job every rank waits for it at every collective",
                              c->where));
    score = std::max(score, 0.45);
    if (a.summary.empty()) a.summary = "one member (a GPU, a node) is slower than the rest, and every step waits for it";
  }
  for (const auto& s : ctx.variants.pairs) {
    if (s.suspects.empty() || s.slow.size() < 1) continue;
    const std::string& prime = s.suspects.front();
    const int n = s.slow_pairs_of.at(prime);
    double sc = n >= 2 ? 0.75 : 0.45;
    a.evidence.push_back(line(fmt::format("every pair with {} is slow ({} pair(s), median {:.4g}) while pairs without it reach "
                                          "{:.4g}: a ring runs at its slowest member's speed",
                                          prime, n, s.slow_median, s.fast_median),
                              *s.slow.front().where));
    for (const auto& r : s.slow)
      if (std::find(r.m->members.begin(), r.m->members.end(), prime) != r.m->members.end() && a.evidence.size() < 4)
        a.evidence.push_back(line(fmt::format("slow: {} {}", r.m->dims.count("pair") ? r.m->dims.at("pair") : r.m->row, figure(*r.m)), *r.where));
    for (const auto& r : s.fast) {
      for (const auto& mem : r.m->members)
        if (s.slow_pairs_of.count(mem)) {
          a.evidence.push_back(line(fmt::format("fast: {} {} — {} is fine in this pair", r.m->dims.count("pair") ? r.m->dims.at("pair") : r.m->row,
                                                figure(*r.m), mem),
                                    *r.where));
          break;
        }
      if (a.evidence.size() >= 7) break;
    }
    // A note that both groups share (e.g. crossing a switch) is not what separates them.
    std::set<std::string> slow_notes, fast_notes;
    for (const auto& r : s.slow)
      if (r.m->dims.count("note")) slow_notes.insert(r.m->dims.at("note"));
    for (const auto& r : s.fast)
      if (r.m->dims.count("note")) fast_notes.insert(r.m->dims.at("note"));
    for (const auto& note : slow_notes)
      if (fast_notes.count(note))
        a.evidence.push_back(line("pairs marked '" + note + "' are among both the slow and the fast ones: not what makes them slow",
                                  *s.slow.front().where));
    if (!s.unexplained.empty()) {
      std::string others;
      for (const auto& r : s.unexplained)
        for (const auto& mem : r.m->members) others += (others.empty() ? "" : " or ") + mem;
      a.evidence.push_back(line(fmt::format("{} is slow without {}: a second suspect ({})",
                                            s.unexplained.front().m->dims.count("pair") ? s.unexplained.front().m->dims.at("pair")
                                                                                       : s.unexplained.front().m->row,
                                            prime, others),
                                *s.unexplained.front().where));
    }
    if (sc > score) {
      score = sc;
      a.summary = fmt::format("{} is slow: every measurement that includes it is about {:.0f} % below the others", prime,
                              (1 - (s.higher_is_better ? s.slow_median / s.fast_median : s.fast_median / s.slow_median)) * 100);
      a.cost.text = fmt::format("{:.4g} instead of {:.4g}{} on every pair (or ring) that includes {}", s.slow_median,
                                s.fast_median, s.slow.front().m->unit.empty() ? "" : " " + s.slow.front().m->unit, prime);
      if (s.slow.front().m->unit == "GB/s" || s.slow.front().m->unit.empty()) {
        a.cost.measured_gbps = s.slow_median;
        a.cost.ceiling_gbps = s.fast_median;
      }
      std::string list = prime;
      if (!s.unexplained.empty()) list += " (and one of the members of the other slow pairs)";
      a.fix = "take " + list + " out of service and test it: " + a.fix;
    }
  }
  double work_ratio = 0;  // the late rank's work outside communication over the fastest other rank's, the largest seen
  for (const auto& s : ctx.facts.of<Straggler>()) {
    if (s.fact.who == "varies") continue;
    if (s.fact.late_ms_per_step) {
      double step_ms = 0;
      for (const auto& p : ctx.facts.of<StepPhases>())
        if (p.where.source == s.where.source && p.fact.step_s) step_ms = *p.fact.step_s * 1e3;
      const double share = step_ms > 0 ? *s.fact.late_ms_per_step / step_ms : 0;
      // What the late rank does outside communication, against the others: a slow member spends longer there (its
      // compute, its data, its host); a rank that arrives late without doing more is noise or a host's scheduling.
      std::optional<double> own_work, others_work;
      for (const auto& p : ctx.facts.of<StepPhases>()) {
        if (!p.fact.rank || !p.fact.step_s || !p.fact.exposed_comm_s || !p.fact.profiled) continue;
        const double work = (*p.fact.step_s - *p.fact.exposed_comm_s) * 1e3;
        if (fmt::format("rank {}", *p.fact.rank) == s.fact.who) own_work = work;
        else others_work = others_work ? std::min(*others_work, work) : work;
      }
      // (Lateness is summed over the step's collectives, so it is no measure of the extra work itself: only whether
      // there is any, beyond 2 % of noise.)
      const bool works_no_longer = own_work && others_work && *own_work <= *others_work * 1.02;
      if (own_work && others_work && *others_work > 0) work_ratio = std::max(work_ratio, *own_work / *others_work);
      if (share >= 0.05 || (step_ms == 0 && *s.fact.late_ms_per_step >= 1)) {
        a.evidence.push_back(line(fmt::format("{} arrives {:.2f} ms late to the collectives per step{} ({})", s.fact.who,
                                              *s.fact.late_ms_per_step, step_ms > 0 ? " (" + percent(share) + " of the step)" : "",
                                              s.fact.basis),
                                  s.where));
        if (works_no_longer) {
          a.against.push_back(line(fmt::format("{} spends {:.2f} ms per step outside communication against {:.2f} ms for the "
                                               "fastest other rank: it does not work longer, so its lateness is the host's "
                                               "scheduling or noise, not a slow member",
                                               s.fact.who, *own_work, *others_work),
                                   s.where));
          if (0.3 > score) {
            score = 0.3;
            a.summary = s.fact.who + " arrives late to the collectives, without doing more work than the others";
          }
        } else if (0.6 > score) {
          score = 0.6;
          a.summary = s.fact.who + " is late to every collective: the other ranks wait for it";
          a.cost.seconds = *s.fact.late_ms_per_step / 1e3;
          a.cost.per = "step";
          if (step_ms > 0) a.cost.share = share;
          a.cost.text = fmt::format("the others wait about {:.2f} ms per step", *s.fact.late_ms_per_step);
        }
      }
    }
    if (s.fact.compute_skew && *s.fact.compute_skew >= 0.1) {
      a.evidence.push_back(line(fmt::format("{} computes {} slower than the fastest rank ({})", s.fact.who,
                                            percent(*s.fact.compute_skew), s.fact.basis),
                                s.where));
      if (0.5 > score) {
        score = 0.5;
        a.summary = s.fact.who + " computes slower than the others every step";
      }
    }
  }
  // CPU ranks sharing cores: which rank is late is the scheduler's choice, not a slower member — unless the late rank
  // does far more work than the others (1.5× and more: time-slicing alone spreads the ranks' work by less).
  if (score > 0 && work_ratio < 1.5)
    if (const auto sh = cpu_ranks_share_cores(ctx)) {
      a.against.push_back(line(fmt::format("{} CPU ranks share {} CPU(s): a rank late to a collective waited for a core, not for "
                                           "slower hardware (compute-contention)",
                                           sh->ranks, sh->cpus),
                               sh->line_cpus.where));
      score = std::min(score, 0.3);
    }
  // Clocks: a GPU throttled while the others are not.
  std::vector<Seen<GpuClocks>> throttled;
  const auto clocks = ctx.facts.of<GpuClocks>();
  for (const auto& c : clocks)
    for (const auto& r : c.fact.active_throttle_reasons)
      if (!contains(r, "Idle") && !contains(r, "Applications Clocks") && !contains(r, "Not Active")) {
        throttled.push_back(c);
        break;
      }
  if (!throttled.empty() && throttled.size() < clocks.size()) {
    for (const auto& t : throttled) {
      std::string reasons;
      for (const auto& r : t.fact.active_throttle_reasons) reasons += (reasons.empty() ? "" : ", ") + r;
      a.evidence.push_back(line(t.fact.gpu + " throttled: " + reasons, t.where));
    }
    if (0.5 > score) {
      score = 0.5;
      a.summary = throttled.front().fact.gpu + " runs throttled while the others do not";
    }
  }
  // A rank late on average while the slowest rank changes from step to step is imbalance, not one slow member.
  for (const auto& s : ctx.facts.of<Straggler>())
    if (s.fact.who == "varies" && score > 0) {
      a.against.push_back(line("the slowest rank changes from step to step (" + s.fact.basis + ")", s.where));
      score *= 0.5;
      break;
    }
  for (const auto& w : ctx.facts.of<WatchdogSummary>())
    if (w.fact.seq_mismatch && score < 0.35) {
      a.evidence.push_back(line("a rank stayed behind at an earlier collective: " + w.fact.verdict, w.where));
      score = 0.35;
      a.summary = "one rank fell behind the others";
    }
  if (score == 0) return std::nullopt;
  a.score = score;
  return a;
}

std::optional<Assessment> assess_load_imbalance(const Context& ctx) {
  Assessment a = start("load-imbalance");
  double score = 0;
  // The text says the ranks get unequal work (variable lengths, random sizes, uneven shards) in a multi-rank job.
  if (const auto c = first_claim(ctx, "uneven-work")) {
    a.evidence.push_back(line("the text says the ranks get unequal work per step: every step the others wait for whichever "
                              "rank drew the most",
                              c->where));
    score = std::max(score, 0.45);
  }
  for (const auto& s : ctx.facts.of<Straggler>())
    if (s.fact.who == "varies") {
      a.evidence.push_back(line("the slowest rank changes from step to step" +
                                    (s.fact.compute_skew ? fmt::format(", {} between the slowest and fastest", percent(*s.fact.compute_skew)) : "") +
                                    " (" + s.fact.basis + ")",
                                s.where));
      score = std::max(score, s.fact.compute_skew && *s.fact.compute_skew >= 0.1 ? 0.5 : 0.3);
    }
  if (score == 0) return std::nullopt;
  // The wait the ranks spend for each other per step: the cross-rank lateness of the traces.
  for (const auto& s : ctx.facts.of<Straggler>())
    if (s.fact.who != "varies" && s.fact.late_ms_per_step) {
      a.cost.seconds = *s.fact.late_ms_per_step / 1e3;
      a.cost.per = "step";
      a.cost.text = fmt::format("the ranks wait for each other about {:.2f} ms per step", *s.fact.late_ms_per_step);
    }
  if (a.cost.text.empty()) a.cost.text = "the fast ranks' wait for the slowest one, every step";
  if (score == 0) return std::nullopt;
  if (const auto sh = cpu_ranks_share_cores(ctx)) {
    a.against.push_back(line(fmt::format("{} CPU ranks share {} CPU(s): the slowest rank changes with the scheduler, not with "
                                         "the work (compute-contention)",
                                         sh->ranks, sh->cpus),
                             sh->line_cpus.where));
    score = std::min(score, 0.3);
  }
  a.score = score;
  a.summary = "ranks get unequal work per step: a different rank is slowest each time and the others wait";
  return a;
}

std::optional<Assessment> assess_compile_ddp_interaction(const Context& ctx) {
  Assessment a = start("compile-ddp-interaction");
  double score = 0;
  for (const auto& m : ctx.facts.of<FrameworkMessage>())
    if (m.fact.id == "compile-graph-break") {
      if (a.evidence.size() < 4) a.evidence.push_back(line("torch.compile split or recompiled the graph under DDP", m.where));
      score = 0.35;
    }
  if (const auto c = first_claim(ctx, "compile-ddp-slower")) {
    a.evidence.push_back(line("the text says training under torch.compile with DDP is slower than eager DDP: compiled "
                              "graphs run backward as one unit, so DDP's bucket hooks no longer fire during it",
                              c->where));
    score = std::max(score, 0.45);
  }
  if (score == 0) return std::nullopt;
  if (ctx.has<DdpConfig>() || ctx.ranks.value_or(0) > 1) raise(score, 0.1);
  a.score = score;
  a.summary = "torch.compile breaks the graph under DDP, which costs the bucket all-reduces their overlap";
  a.cost.text = "not measured here: recompilations and graph breaks cost compile time and overlap; time a step against "
                "eager DDP to see it";
  return a;
}

std::optional<Assessment> assess_compute_contention(const Context& ctx) {
  Assessment a = start("compute-contention");
  // Step breakdowns of one run at world size 1 and N (scalescope doctor's points).
  std::map<std::string, std::map<int, Seen<StepPhases>>> by_source;
  for (const auto& s : ctx.facts.of<StepPhases>())
    if (s.fact.world_size && s.fact.compute_s && s.fact.step_s && !s.fact.rank) by_source[s.where.source].emplace(*s.fact.world_size, s);
  double score = 0;
  for (const auto& [src, points] : by_source) {
    auto one = points.find(1);
    if (one == points.end()) continue;
    for (const auto& [n, p] : points) {
      if (n < 2) continue;
      const double extra = *p.fact.compute_s - *one->second.fact.compute_s;
      const double loss = *p.fact.step_s - *one->second.fact.step_s;
      if (extra <= 0.1 * *p.fact.step_s || loss <= 0 || extra < 0.5 * loss) continue;
      a.evidence.push_back(line(fmt::format("N={}: compute {} per step against {} for one rank alone: {} of the {} lost to scaling",
                                            n, duration(*p.fact.compute_s), duration(*one->second.fact.compute_s),
                                            duration(extra), duration(loss)),
                                p.where));
      if (0.5 > score) {
        score = 0.5;
        a.cost.seconds = extra;
        a.cost.per = "step";
        a.cost.share = extra / *p.fact.step_s;
        a.cost.text = fmt::format("{} of slower compute per step at N={} ({})", duration(extra), n, percent(*a.cost.share));
      }
    }
  }
  // Weak scaling on one node: each rank does the same work, yet its step grows with the number of ranks. What grows
  // is either communication (the expectation says how much it can) or the ranks' contention for what they share —
  // CPU cores and their threads, memory bandwidth, the PCIe root.
  if (score == 0 && ctx.span != Span::multi_node)
    for (const auto& s : ctx.variants.scaling) {
      if (s.how.find("weak") == std::string::npos || s.efficiency >= 0.75 || s.gpus < 2) continue;
      const auto& ex = ctx.expected;
      const bool comm_small = ex.step && ex.step->comm_ratio.high < 0.1;
      const bool comm_large = ex.step && ex.step->comm_ratio.low >= 0.3;
      if (comm_large) continue;
      a.evidence.push_back(line(fmt::format("{} per step at {} ranks against {} at one, the same work per rank: each rank's step "
                                            "grows {:.2f}× as ranks are added",
                                            figure(*s.row.m), s.gpus, figure(*s.base.m),
                                            step_seconds_of(*s.row.m) / step_seconds_of(*s.base.m)),
                                *s.row.where));
      if (comm_small && ex.summary) a.evidence.push_back(*ex.summary);
      const double sc = comm_small ? 0.5 : 0.4;
      if (sc > score) {
        score = sc;
        a.cost.seconds = step_seconds_of(*s.row.m) - step_seconds_of(*s.base.m);
        a.cost.per = s.row.m->unit == "it/s" ? "step" : per_of(s.row.m->quantity);
        a.cost.share = *a.cost.seconds / step_seconds_of(*s.row.m);
        a.cost.text = fmt::format("{} per {} beyond one rank's {} ({})", duration(*a.cost.seconds), a.cost.per,
                                  figure(*s.base.m), percent(*a.cost.share));
      }
      if (!comm_small)
        a.needs.push_back({"whether communication or the ranks' shared resources grow the step",
                           "the per-rank compute time at 1 and N ranks (scalescope profile, or a profiler trace per rank)",
                           "compute-contention (compute grows) against comm-bound causes (all-reduce grows)"});
    }
  // The loss shrinks as the per-GPU batch grows: a fixed cost per step, not compute slowed in proportion.
  if (score > 0 && score < 0.6)
    if (const auto bd = batch_dependent_scaling(ctx)) {
      score *= 0.5;
      a.against.push_back(line(fmt::format("at {} GPUs the larger per-GPU batch scales at {:.0f} % and the smaller at {:.0f} %: a cost "
                                           "fixed per step (communication), not compute slowed in proportion to its work",
                                           bd->large->gpus, 100 * bd->large->efficiency, 100 * bd->small->efficiency),
                               *bd->large->row.where));
    }
  // CPU ranks on fewer cores than they need: measured by the job itself (its traces and the CPUs it had).
  bool cpu_sharing = false;
  if (const auto sh = cpu_ranks_share_cores(ctx)) {
    a.evidence.push_back(sh->line_ranks);
    a.evidence.push_back(sh->line_cpus);
    a.evidence.push_back(line(fmt::format("{} CPU ranks × {} compute thread(s) each, plus their interpreters and gloo's threads, on "
                                          "{} CPU(s): the ranks take cores from each other every step",
                                          sh->ranks, sh->threads, sh->cpus),
                              sh->line_cpus.where));
    if (0.6 > score) {
      score = 0.6;
      a.cost.text = "not separable in one run: the step of one rank alone on these cores against each rank's step here shows it";
    }
    a.fix = fmt::format("give each rank its own cores: at most {} rank(s) on {} CPU(s) (torchrun --nproc_per_node), "
                        "OMP_NUM_THREADS / torch.set_num_threads at the cores per rank, or more CPUs",
                        std::max(1, sh->cpus / 2), sh->cpus);
    a.confirm = "run the job at one rank on the same host (torchrun --nproc_per_node 1) and compare its compute per step with "
                "each rank's here";
    cpu_sharing = true;
  }
  for (const auto& st : ctx.facts.of<Setting>())
    if (score > 0 && st.fact.name == "OMP_NUM_THREADS")
      a.evidence.push_back(line("OMP_NUM_THREADS=" + st.fact.value + ": the threads each rank's CPU work uses", st.where));
  if (score == 0) return std::nullopt;
  a.score = score;
  a.summary = cpu_sharing ? "the CPU ranks take cores from each other: every rank's compute waits for cores the others hold"
                          : "the ranks slow each other's compute (shared cores or memory bandwidth, or communication kernels "
                            "holding SMs)";
  return a;
}

}  // namespace scalescope::diagnose
