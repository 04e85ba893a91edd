// Assessors of the two communication causes: the gradient all-reduce against compute, from measured scaling,
// step breakdowns, the expectation of the job (diagnose/expectations.h) and the words of the evidence — whether the
// compute per step is too short to hide it (comm-bound-small-model) or the link too slow for its bytes
// (bandwidth-bound-gradients).

#include <algorithm>
#include <map>
#include <optional>

#include "diagnose/causes_util.h"

namespace scalescope::diagnose {
namespace {

using namespace detail;

bool transport_toggle(const std::string& dim) {
  return dim == "nvlink" || dim == "p2p" || dim == "shm" || dim == "ib" || dim == "roce" || dim == "rdma" || dim == "gdr";
}

// ---- communication against compute: what the evidence says, shared by the two comm causes ----
struct CommPicture {
  std::vector<EvidenceLine> lines;
  double strength = 0;               ///< how sure it is that communication dominates the step
  Cost cost;
  bool fast_link_still_poor = false; ///< the best (fast-link) variant scales poorly while a slower link is worse
  bool slow_link_only = false;       ///< the fast link scales well, a slower one does not
  std::optional<double> params;
  std::optional<EvidenceLine> params_line;
  // From the expectation (diagnose/expectations.h), when the model and the link are known:
  bool expected = false;             ///< an expected comm ratio was computed
  bool comm_explains = false;        ///< the expected all-reduce can take ≥ 30 % of compute
  bool comm_cannot_explain = false;  ///< the expected all-reduce is < 10 % of compute even at its worst
  bool long_allreduce = false;       ///< the all-reduce alone takes ≥ kLongAllReduceS per step: the link is short
  bool network = false;              ///< the gradients cross a network between nodes
  bool small_workload = false;       ///< the text calls the workload small (CIFAR, MNIST, "small model")
  bool slow_network = false;         ///< a network of at most 25 Gb/s between the nodes is in the evidence
};

CommPicture comm_picture(const Context& ctx) {
  CommPicture p;
  for (const auto& m : ctx.facts.of<ModelSeen>())
    if (m.fact.parameters && (!p.params || *m.fact.parameters > *p.params)) {
      p.params = m.fact.parameters;
      p.params_line = line(m.fact.name.empty() ? fmt::format("a model of {:.3g} parameters, as the text says", *m.fact.parameters)
                                               : fmt::format("model {}: {:.3g} parameters", m.fact.name, *m.fact.parameters),
                           m.where);
    }
  // 1. Tables per GPU count: the best variant at each N.
  std::map<std::pair<std::string, std::string>, const ScalingRow*> best;  // (source, table) → best multi-GPU row
  for (const auto& s : ctx.variants.scaling) {
    auto key = std::make_pair(s.row.where->source, s.row.m->table);
    if (!best.count(key) || s.speedup / s.gpus > best[key]->speedup / best[key]->gpus) best[key] = &s;
  }
  for (const auto& [key, s] : best) {
    const bool poor = s->speedup < 0.6 * s->gpus;   // the seed's "investigate" at 2 GPUs (1.2), scaled by N/2
    const bool good = s->speedup > 0.85 * s->gpus;  // the seed's "healthy" at 2 GPUs (1.7)
    // Variants of the same table with a transport turned off, worse beyond noise.
    const Comparison* slower_link = nullptr;
    for (const auto& c : ctx.variants.comparisons)
      if (transport_toggle(c.dim) && c.worse_value == "off" && c.beyond_noise && c.worse.where->source == key.first &&
          c.worse.m->table == key.second)
        slower_link = &c;
    if (poor) {
      p.lines.push_back(line(fmt::format("best {}-GPU variant {}: speedup {:.2f} ({} efficiency) against {} on one GPU ({})",
                                         s->gpus, row_name(*s->row.m), s->speedup, percent(s->efficiency), figure(*s->base.m),
                                         s->how),
                             *s->row.where));
      p.strength = std::max(p.strength, slower_link ? 0.6 : 0.4);
      if (slower_link) {
        p.fast_link_still_poor = true;
        p.lines.push_back(line(fmt::format("with {} off it is {:.2f}× worse ({} {}): the step is sensitive to the link, "
                                           "so communication is what it waits for",
                                           slower_link->dim, slower_link->ratio, row_name(*slower_link->worse.m),
                                           figure(*slower_link->worse.m)),
                               *slower_link->worse.where));
      }
      const auto& base = *s->base.m;
      const auto& row = *s->row.m;
      if (!row.higher_is_better && (row.unit == "s" || row.unit == "ms")) {
        const double measured = seconds_of(row);
        const double ideal = s->how.find("weak") != std::string::npos ? seconds_of(base) : seconds_of(base) / s->gpus;
        p.cost.seconds = measured - ideal;
        p.cost.per = per_of(row.quantity);
        p.cost.share = (measured - ideal) / measured;
        p.cost.text = fmt::format("{} per {} beyond the ideal {} ({} of the measured {})", duration(measured - ideal), p.cost.per,
                                  duration(ideal), percent(*p.cost.share), duration(measured));
      } else {
        p.cost.text = fmt::format("speedup {:.2f} of an ideal {}", s->speedup, s->gpus);
      }
    } else if (good && slower_link) {
      p.slow_link_only = true;
      p.strength = std::max(p.strength, 0.45);
      p.lines.push_back(line(fmt::format("{} scales well ({} efficiency) but {} with {} off is {:.2f}× worse", row_name(*s->row.m),
                                         percent(s->efficiency), row_name(*slower_link->worse.m), slower_link->dim,
                                         slower_link->ratio),
                             *slower_link->worse.where));
    }
  }
  // 1b. The same GPUs on one node and spread over several (variants of one table that differ only in their node
  // count): the multi-node run slower by 30 % or more is what the network between the nodes costs every step.
  for (const auto& c : ctx.variants.comparisons) {
    if (c.dim != "nodes" || !c.beyond_noise || c.ratio < 1.3) continue;
    int worse_nodes = 0, better_nodes = 0;
    try {
      worse_nodes = std::stoi(c.worse_value);
      better_nodes = std::stoi(c.better_value);
    } catch (...) {
      continue;
    }
    if (worse_nodes <= better_nodes) continue;
    p.lines.push_back(line(fmt::format("the same run on {} nodes is {:.2f}× slower than on {} ({} against {}): the network between "
                                       "the nodes carries every step's gradients",
                                       worse_nodes, c.ratio, better_nodes, figure(*c.worse.m), figure(*c.better.m)),
                           *c.worse.where));
    p.strength = std::max(p.strength, 0.5);
    p.network = true;
    if (!p.cost.seconds && !c.worse.m->higher_is_better && (c.worse.m->unit == "s" || c.worse.m->unit == "ms")) {
      const double worse = seconds_of(*c.worse.m), better = seconds_of(*c.better.m);
      p.cost.seconds = worse - better;
      p.cost.per = per_of(c.worse.m->quantity);
      p.cost.share = (worse - better) / worse;
      p.cost.text = fmt::format("{} per {} beyond the one-node run's {} ({} of the measured {})", duration(worse - better),
                                p.cost.per, duration(better), percent(*p.cost.share), duration(worse));
    }
    break;
  }
  // 2. Scaling points of scalescope's own runs and of traces with a baseline.
  for (const auto& s : ctx.facts.of<ScalingPoint>())
    if (s.fact.world_size >= 2 && s.fact.comm_ratio && *s.fact.comm_ratio > 0.3) {
      // A high comm ratio costs the step only the part that backward does not hide.
      const bool hidden = s.fact.overlap && *s.fact.overlap >= 0.7;
      p.lines.push_back(line(fmt::format("N={}: comm ratio {} (all-reduce time / 1-rank compute), speedup {:.2f}{}", s.fact.world_size,
                                         percent(*s.fact.comm_ratio), s.fact.speedup,
                                         hidden ? fmt::format(" — but {} of it overlaps backward", percent(*s.fact.overlap)) : ""),
                             s.where));
      p.strength = std::max(p.strength, hidden ? 0.3 : *s.fact.comm_ratio > 0.6 ? 0.6 : 0.5);
    }
  // 3. Step breakdowns: exposed communication a large share of a multi-rank step.
  for (const auto& s : ctx.facts.of<StepPhases>())
    if (s.fact.world_size.value_or(2) >= 2 && s.fact.step_s && s.fact.exposed_comm_s && *s.fact.step_s > 0) {
      const double share = *s.fact.exposed_comm_s / *s.fact.step_s;
      if (share >= 0.3) {
        p.lines.push_back(line(fmt::format("exposed communication {} of a {} step ({}){}", duration(*s.fact.exposed_comm_s),
                                           duration(*s.fact.step_s), percent(share), s.fact.basis.empty() ? "" : ", " + s.fact.basis),
                               s.where));
        p.strength = std::max(p.strength, share >= 0.5 ? 0.6 : 0.5);
        if (!p.cost.seconds) {
          p.cost.seconds = *s.fact.exposed_comm_s;
          p.cost.per = "step";
          p.cost.share = share;
          p.cost.text = fmt::format("{} of exposed communication per step ({})", duration(*s.fact.exposed_comm_s), percent(share));
        }
        break;
      }
    }
  // 4a. Communication's share of a multi-GPU step as the evidence states it: a time per step beside the step's own
  // ("communication time per step 11.24 ms" of "DDP step time 26.36 ms"), or a share ("communication overhead 42.6 %").
  if (p.strength == 0) {
    std::optional<Seen<Measurement>> comm, share, step;
    for (const auto& m : ctx.facts.of<Measurement>()) {
      const bool time = m.fact.unit == "s" || m.fact.unit == "ms";
      if (m.fact.quantity == "communication time" && time && !comm) comm.emplace(m);
      if (m.fact.quantity == "communication time" && m.fact.unit == "%" && m.fact.value <= 100 && !share) share.emplace(m);
    }
    if (comm)
      for (const auto& m : ctx.facts.of<Measurement>())
        if (m.fact.quantity == "step time" && (m.fact.unit == "s" || m.fact.unit == "ms") && m.where.source == comm->where.source &&
            (!step || seconds_of(m.fact) > seconds_of(step->fact)))
          step.emplace(m);
    std::optional<double> part;
    if (comm && step && seconds_of(step->fact) > seconds_of(comm->fact)) part = seconds_of(comm->fact) / seconds_of(step->fact);
    else if (share) part = share->fact.value / 100;
    if (part && *part >= 0.3) {
      if (comm && step)
        p.lines.push_back(line(fmt::format("communication {} of a {} step ({}), as measured", figure(comm->fact), figure(step->fact),
                                           percent(*part)),
                               comm->where));
      else
        p.lines.push_back(line(fmt::format("communication {} of the step, as measured", percent(*part)), share->where));
      p.strength = *part >= 0.5 ? 0.55 : 0.5;
      p.cost.share = *part;
      if (comm && step) {
        p.cost.seconds = seconds_of(comm->fact);
        p.cost.per = "step";
      }
      p.cost.text = fmt::format("communication is {} of the step", percent(*part));
    }
  }
  // 4. A multi-GPU job whose GPUs idle most of the step in its best variant, with the step sensitive to the transport.
  for (const auto& k : ctx.variants.constant_compute) {
    const double busy = seconds_of(*k.fast_busy.m), step = seconds_of(*k.fast_step.m);
    if (step <= 0 || busy >= step) continue;
    const double idle = 1 - busy / step;
    if (idle < 0.3) continue;
    p.lines.push_back(line(fmt::format("even the faster variant {} leaves the GPUs idle {} of its {} step ({} busy): "
                                       "communication still dominates",
                                       row_name(*k.fast_step.m), percent(idle), figure(*k.fast_step.m), figure(*k.fast_busy.m)),
                           *k.fast_busy.where));
    p.strength = std::max(p.strength, 0.45);
    if (!p.cost.seconds) {
      p.cost.seconds = step - busy;
      p.cost.per = per_of(k.fast_step.m->quantity);
      p.cost.share = idle;
      p.cost.text = fmt::format("{} of the {} {} beyond GPU busy time in the faster variant", duration(step - busy),
                                duration(step), p.cost.per);
    }
  }
  // 5. What this model's gradients over this link should cost against its compute (the expectation engine).
  const auto& ex = ctx.expected;
  if (ex.step && ex.summary) {
    const auto& st = *ex.step;
    p.expected = true;
    p.network = ex.link.kind == knowledge::LinkAssumption::Kind::network;
    p.long_allreduce = st.allreduce_s.low >= kLongAllReduceS;
    const bool poor = ex.measured_speedup && ex.gpus >= 2 && *ex.measured_speedup < 0.75 * ex.gpus;
    bool slow_claim = false;
    for (const auto& c : ctx.facts.of<Claim>()) slow_claim = slow_claim || c.fact.kind == "slow";
    if (st.comm_ratio.high >= 0.3) {
      p.comm_explains = true;
      if (poor || slow_claim || st.comm_ratio.low >= 0.5) {
        if (ex.speedup_line && p.lines.empty()) p.lines.push_back(*ex.speedup_line);
        p.lines.push_back(*ex.summary);
        if (ex.link_line) p.lines.push_back(*ex.link_line);
        p.strength = std::max(p.strength, poor ? (st.comm_ratio.low >= 0.3 ? 0.6 : 0.5) : 0.4);
        if (!p.cost.seconds && poor && ex.measured_speedup)
          p.cost.text = fmt::format("speedup {:.2f} of an ideal {}; the expected all-reduce alone is {}–{} per step", *ex.measured_speedup,
                                    ex.gpus, duration(st.allreduce_s.low), duration(st.allreduce_s.high));
      }
    } else if (st.comm_ratio.high < 0.1 && poor) {
      p.comm_cannot_explain = true;
      p.strength *= 0.5;
    }
  }
  // 5b. Scaling stated in words that falls far short, for a workload the text calls small (CIFAR, MNIST, "small model"):
  // compute per step too short to hide the gradients.
  {
    const auto small = first_claim(ctx, "small-workload");
    for (const auto& sp : ctx.facts.of<ScalingPoint>())
      if (sp.fact.mode.rfind("stated", 0) == 0 && sp.fact.world_size >= 2 && sp.fact.efficiency < 0.6) {
        p.lines.push_back(line(fmt::format("{} GPUs: speedup {:.2f} over one, as the text states", sp.fact.world_size, sp.fact.speedup),
                               sp.where));
        if (small) {
          p.lines.push_back(line("a workload the text calls small (small inputs or model): little compute per step to hide "
                                 "the gradient all-reduce behind",
                                 small->where));
          p.strength = std::max(p.strength, 0.5);
          p.small_workload = true;
        } else if (ctx.span == Span::multi_node) {
          p.strength = std::max(p.strength, 0.45);
        }
        break;
      }
  }
  // 5c. No gain said in words ("the time is almost the same as on one GPU") for a small workload on several GPUs or nodes.
  if (p.strength == 0)
    if (const auto small = first_claim(ctx, "small-workload"), same = first_claim(ctx, "no-gain");
        small && same && (ctx.ranks.value_or(0) >= 2 || ctx.nodes.value_or(0) >= 2 || ctx.expected.gpus >= 2)) {
      p.lines.push_back(line("the text says more GPUs gave no gain", same->where));
      p.lines.push_back(line("a workload the text calls small (small inputs or model): little compute per step to hide the "
                             "gradient all-reduce behind",
                             small->where));
      p.strength = 0.5;
      p.small_workload = true;
    }
  // A workload the text calls small is small however its scaling was measured (a table per GPU count as much as a
  // speedup stated in words): short compute per step, whatever link carries its gradients.
  if (!p.small_workload && p.strength > 0)
    if (const auto small = first_claim(ctx, "small-workload")) {
      p.lines.push_back(line("a workload the text calls small (small inputs or model): little compute per step to hide "
                             "the gradient all-reduce behind",
                             small->where));
      p.small_workload = true;
    }
  // 6. Between nodes, with nothing to compute the expectation from: a multi-node job that scales poorly, or one whose
  // text names communication as the bottleneck, over a network of at most 25 Gb/s (≤ 3 GB/s: a 100 M-parameter model's
  // 0.4 GB of gradients alone take over 0.1 s per step) — the network carries every step's gradients.
  if (!p.expected && ctx.span == Span::multi_node) {
    p.network = true;
    const auto said = first_claim(ctx, "comm-suspected");
    std::optional<Seen<NicSeen>> slow_net;
    double fastest = 0;
    for (const auto& n : ctx.facts.of<NicSeen>()) {
      if (n.fact.line_gbit) fastest = std::max(fastest, *n.fact.line_gbit);
      if (n.fact.line_gbit && *n.fact.line_gbit <= 25 && !slow_net) slow_net.emplace(n);
    }
    // A data fabric of 100 Gb/s or more beside it (InfiniBand or RoCE beside a management Ethernet) is what NCCL uses
    // (it prefers IB/RoCE verbs to sockets): the slow network is not the job's.
    if (fastest >= 100) slow_net.reset();
    if (said) p.lines.push_back(line("the text names communication as the bottleneck", said->where));
    if (slow_net)
      p.lines.push_back(line(fmt::format("the nodes are joined at {:.0f} Gb/s: at most {} of all-reduce busbw between them",
                                         *slow_net->fact.line_gbit, gbps(topo::nic_busbw_gbps(*slow_net->fact.line_gbit))),
                             slow_net->where));
    // At 1 Gb/s or less (≤ 0.12 GB/s of busbw) even a 10 M-parameter model's 40 MB of FP32 gradients take over 0.3 s
    // per step: the network sets the step for any model worth spreading over nodes, stated slowness or not.
    const bool crawling = slow_net && *slow_net->fact.line_gbit <= 1.0;
    if (crawling)
      p.lines.push_back(line("at 1 Gb/s or less, even 40 MB of gradients (a 10 M-parameter model in FP32) take over 0.3 s "
                             "per step between the nodes",
                             slow_net->where));
    // Slowness said in words ("scales poorly across nodes") over such a network: the network carries what is slow.
    const auto slow_said = first_claim(ctx, "slow");
    if (slow_net && slow_said && !said && p.strength == 0 && !crawling)
      p.lines.push_back(line("the text says the job is slow or scales poorly", slow_said->where));
    if (slow_net && (said || p.strength > 0 || crawling || slow_said)) p.strength = std::max(p.strength, 0.5);
    else if (said) p.strength = std::max(p.strength, 0.4);
    if (!ctx.span_evidence.empty()) p.lines.push_back(ctx.span_evidence.front());
    p.slow_network = slow_net.has_value();
  }
  return p;
}


}  // namespace

std::optional<Assessment> assess_comm_bound_small_model(const Context& ctx) {
  const auto p = comm_picture(ctx);
  // no_sync() over the accumulation micro-batches made it scale: an all-reduce on every micro-batch is communication
  // far more often than compute can hide, which is this cause's own fix.
  const auto no_sync = fixed_by(ctx, "no-sync");
  const auto batch_dependence = batch_dependent_scaling(ctx);
  if (p.strength == 0 && !no_sync && !batch_dependence) return std::nullopt;
  Assessment a = start("comm-bound-small-model");
  a.evidence = p.lines;
  a.cost = p.cost;
  double score = p.strength;
  if (no_sync) {
    a.evidence.push_back(line("the text says no_sync() around the accumulation micro-batches made it work as it should: "
                              "without it every micro-batch all-reduced the gradients, too little compute between them to "
                              "hide that",
                              no_sync->where));
    score = std::max(score, 0.55);
  }
  if (auto dp = data_parallel_in_use(ctx)) {
    score *= 0.6;
    a.against.push_back(line("the job runs under DataParallel: its replication and scatter every step, not a gradient "
                             "all-reduce, is what scales badly (dataparallel-not-ddp)",
                             *dp));
  }
  if (p.small_workload && (!p.network || !p.slow_network)) {
    // A small workload: its compute is short wherever its gradients go, unless a slow network is known to carry them.
    raise(score, 0.05);
  } else if (!p.expected && p.network) {
    score *= 0.6;
    a.against.push_back(line("the gradients cross a network between nodes, an order of magnitude slower than the links inside "
                             "one: the link, not the shortness of compute, is the likelier limit (bandwidth-bound-gradients)",
                             p.lines.empty() ? Provenance{} : p.lines.front().where));
  } else if (p.expected) {
    // The expectation decides which side is short: an all-reduce that no usual step hides, or gradients over a network
    // between nodes, point at the link (bandwidth-bound-gradients); a short one that still rivals compute points at
    // the compute per step being small.
    if (p.long_allreduce || p.network) {
      score *= 0.6;
      a.against.push_back(line(fmt::format("the gradient all-reduce alone is expected to take ≥ {} per step{}: the link, not the "
                                           "shortness of compute, is what limits (bandwidth-bound-gradients)",
                                           duration(kLongAllReduceS), p.network ? " over the network" : ""),
                               ctx.expected.summary->where));
    } else if (p.comm_explains) {
      raise(score, 0.1);
    }
    if (p.comm_cannot_explain)
      a.against.push_back(line("the expected all-reduce is under 10 % of compute: communication cannot explain the loss",
                               ctx.expected.summary->where));
  } else if (p.params) {
    if (*p.params >= 1e9) {
      score *= 0.4;
      a.against.push_back(line("a model of a billion parameters or more: its gradient volume, not its short compute, is the "
                               "likelier limit (bandwidth-bound-gradients)",
                               p.params_line->where));
    } else {
      a.evidence.push_back(*p.params_line);
      if (*p.params < 5e8) raise(score, 0.05);
    }
  } else if (p.slow_link_only) {
    score *= 0.5;
  } else if (!p.fast_link_still_poor) {
    score *= 0.8;
    a.needs.push_back({"the model's size and one step's compute time", "the training script's model and batch, or scalescope analyze on a profiler trace",
                       "a small model whose compute is too short (comm-bound-small-model) or a large gradient (bandwidth-bound-gradients)"});
  }
  // The same GPU count scales clearly better at a larger per-GPU batch: what is lost is a fixed cost per step, which
  // more compute per step hides — this cause's own signature and fix.
  if (const auto& bd = batch_dependence; bd && !p.long_allreduce) {
    a.evidence.push_back(line(fmt::format("at {} GPUs: {:.0f} % efficiency at {} {} against {:.0f} % at {}: the loss is a cost "
                                          "fixed per step that more compute per step hides",
                                          bd->large->gpus, 100 * bd->large->efficiency,
                                          bd->dim == "global_batch" ? "global batch" : "per-GPU batch", bd->large->conditions.at(bd->dim),
                                          100 * bd->small->efficiency, bd->small->conditions.at(bd->dim)),
                              *bd->large->row.where));
    score = std::max(score, 0.45);
    raise(score, 0.1);
  }
  // All of its gradients in one DDP bucket: one all-reduce after backward, nothing for backward to hide it behind.
  if (const auto m = model_with_params(ctx); m && fits_one_bucket(m->params) && !p.network) {
    raise(score, 0.1);
    a.evidence.push_back(line(one_bucket_model(*m) + " fit one DDP bucket (25 MB), so the all-reduce starts only when "
                                                     "backward ends and adds to every step",
                              m->where));
  }
  a.score = score;
  a.summary = p.fast_link_still_poor
                  ? "communication per step rivals compute even on the fastest link: the model's compute per step is too "
                    "short to hide the gradient all-reduce (expected for this workload, not a fault)"
                  : "communication dominates the step: compute per step is too short to hide the gradient all-reduce";
  if (p.fast_link_still_poor)
    a.fix = "more work per GPU (a larger per-GPU batch or sequence), gradient accumulation with no_sync(), or fewer GPUs; "
            "keep DDP (not DataParallel) and the fastest link";
  return a;
}

std::optional<Assessment> assess_bandwidth_bound_gradients(const Context& ctx) {
  const auto p = comm_picture(ctx);
  if (p.strength == 0) return std::nullopt;
  Assessment a = start("bandwidth-bound-gradients");
  a.evidence = p.lines;
  a.cost = p.cost;
  double score = p.strength;
  if (auto dp = data_parallel_in_use(ctx)) {
    score *= 0.6;
    a.against.push_back(line("the job runs under DataParallel, which exchanges no gradients over a network link", *dp));
  }
  if (p.expected) {
    if (p.long_allreduce || p.network) raise(score, 0.1);
    else score *= 0.6;
  } else if (p.network && p.small_workload && !p.slow_network) {
    score *= 0.8;  // a small workload between nodes of an unknown network: short compute, more than a short link
  } else if (p.network) {
    raise(score, 0.05);
  } else if (p.params) {
    if (*p.params >= 1e9) {
      a.evidence.insert(a.evidence.begin(), *p.params_line);
      const int bytes_per = 2;  // bf16/fp16 gradients, the common case for models this size
      a.evidence.push_back(line(fmt::format("its gradient is about {:.1f} GB per step in 16-bit (2(N−1)/N of it crosses each "
                                            "link)",
                                            *p.params * bytes_per / 1e9),
                                p.params_line->where));
    } else {
      score *= 0.5;
    }
  } else if (p.fast_link_still_poor) {
    score *= 0.6;
    a.against.push_back(line("the fast-link variant scales no better: a faster link does not fix it, so the gradient's bytes "
                             "are not what limits it",
                             p.lines.front().where));
  } else if (!p.slow_link_only) {
    score *= 0.8;
  }
  a.score = score;
  a.summary = "the gradient all-reduce saturates the link: communication, not compute, sets the step";
  return a;
}


}  // namespace scalescope::diagnose
