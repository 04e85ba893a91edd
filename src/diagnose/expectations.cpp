#include "diagnose/expectations.h"

#include <cstdlib>

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "diagnose/causes_util.h"
#include "diagnose/context.h"

namespace scalescope::diagnose {
namespace {

using namespace detail;
using knowledge::LinkAssumption;

// What the job's logs and settings say of peer-to-peer: NCCL_P2P_DISABLE, or the transports NCCL chose.
std::optional<bool> p2p_in_use(const Context& ctx) {
  if (const auto* p = ctx.setting("NCCL_P2P_DISABLE"); p && p->judgement.turns_off == "p2p") return false;
  bool p2p = false, shm = false;
  for (const auto& t : ctx.facts.of<TransportUse>()) {
    p2p = p2p || t.fact.kind == "p2p";
    shm = shm || t.fact.kind == "shm";
  }
  if (p2p) return true;
  if (shm) return false;
  return std::nullopt;
}

// The link of the job: a topology matrix first, then what the text says, then the platform's design.
void find_link(const Context& ctx, JobExpectation& e) {
  e.link.p2p = p2p_in_use(ctx);
  // 1. The matrix: the slowest path among the job's GPUs.
  std::optional<topo::Link> worst;
  Provenance worst_where;
  const auto pairs = ctx.job_pairs();
  for (const auto& p : pairs) {
    topo::Link l{};
    const auto& t = p.fact.token;
    if (p.fact.nvlinks > 0) l = {topo::LinkClass::nvlink, p.fact.nvlinks};
    else if (t == "PIX") l = {topo::LinkClass::pix, 0};
    else if (t == "PXB") l = {topo::LinkClass::pxb, 0};
    else if (t == "PHB") l = {topo::LinkClass::phb, 0};
    else if (t == "NODE") l = {topo::LinkClass::node, 0};
    else if (t == "SYS" || t == "SOC") l = {topo::LinkClass::sys, 0};
    else continue;
    if (!worst || topo::quality(l) < topo::quality(*worst)) {
      worst = l;
      worst_where = p.where;
    }
  }
  if (worst && ctx.span != Span::multi_node) {
    e.link.kind = worst->cls == topo::LinkClass::nvlink ? LinkAssumption::Kind::nvlink : LinkAssumption::Kind::pcie;
    e.link.path = *worst;
    e.link.nvswitch = knowledge::through_nvswitch(ctx.gpu);
    e.link.said = fmt::format("the slowest path between the job's GPUs is {} (topology matrix)", topo::to_string(*worst));
    e.link_line = line(e.link.said, worst_where);
    return;
  }
  // 2. Between nodes: a stated or listed network rate.
  if (ctx.span == Span::multi_node) {
    std::optional<double> rate;
    const Provenance* where = nullptr;
    for (const auto& n : ctx.facts.of<NicSeen>())
      if (n.fact.line_gbit && (!rate || *n.fact.line_gbit < *rate)) {
        rate = n.fact.line_gbit;
        where = &n.where;
      }
    bool socket = false, rdma = false;
    for (const auto& t : ctx.facts.of<TransportUse>()) {
      socket = socket || t.fact.transport.find("Socket") != std::string::npos;
      rdma = rdma || t.fact.transport.find("IB") != std::string::npos;
    }
    for (const auto& c : ctx.facts.of<Claim>())
      if (c.fact.kind == "link") {
        socket = socket || c.fact.detail == "ethernet";
        rdma = rdma || c.fact.detail == "infiniband";
      }
    if (rate) {
      e.link.kind = LinkAssumption::Kind::network;
      e.link.network_gbit = *rate;
      e.link.socket = socket && !rdma;
      e.link.nodes = ctx.nodes.value_or(0);
      e.link.said = fmt::format("the nodes are joined at {:.0f} Gb/s", *rate);
      e.link_line = line(e.link.said, *where);
    }
    return;
  }
  // 3. One node: the poster's words.
  const topo::GpuSpec* g = ctx.gpu;
  std::optional<Seen<Claim>> no_nv, nv, pcie;
  for (const auto& c : ctx.facts.of<Claim>()) {
    if (c.fact.kind != "link") continue;
    if (c.fact.detail == "no-nvlink" && !no_nv) no_nv.emplace(c);
    if ((c.fact.detail == "nvlink" || c.fact.detail == "nvswitch") && !nv) nv.emplace(c);
    if (c.fact.detail == "pcie" && !pcie) pcie.emplace(c);
  }
  auto pcie_link = [&](const std::string& why, const Provenance& where) {
    e.link.kind = LinkAssumption::Kind::pcie;
    // Two PCIe cards of a workstation or server meet at the CPU's root complex unless a switch is named: PHB.
    e.link.path = {topo::LinkClass::phb, 0};
    e.link.said = why + (g && !g->pcie_p2p ? " (this GPU has no peer-to-peer over PCIe: NCCL stages through host memory)"
                                           : " (the GPUs assumed to meet at the CPU's host bridge, PHB)");
    e.link_line = line(e.link.said, where);
  };
  if (no_nv) {
    pcie_link("the text says the GPUs have no NVLink: PCIe", no_nv->where);
    return;
  }
  if (nv && g) {
    const int links = g->nvlink_links > 0 ? g->nvlink_links : g->bridge_links;
    if (links > 0) {
      e.link.kind = LinkAssumption::Kind::nvlink;
      e.link.path = {topo::LinkClass::nvlink, links};
      e.link.nvswitch = knowledge::through_nvswitch(g);
      e.link.said = fmt::format("the text names NVLink: {} links of {}", links, g->model);
      e.link_line = line(e.link.said, nv->where);
      return;
    }
  }
  if (pcie) {
    pcie_link("the text names PCIe", pcie->where);
    return;
  }
  // 4. The platform's design, said as an assumption.
  if (g && ctx.gpu_evidence) {
    if ((g->form == topo::GpuForm::sxm || g->form == topo::GpuForm::superchip) && g->nvlink_links > 0) {
      e.link.kind = LinkAssumption::Kind::nvlink;
      e.link.path = {topo::LinkClass::nvlink, g->nvlink_links};
      e.link.nvswitch = knowledge::through_nvswitch(g);
      e.link.said = fmt::format("assumed: {} boards join their GPUs with all {} NVLinks (no topology given)", g->model, g->nvlink_links);
    } else {
      pcie_link(fmt::format("assumed: {} cards meet over PCIe (no NVLink named, no topology given)", g->model), ctx.gpu_evidence->where);
      e.link.said = "assumed: " + e.link.said.substr(std::string_view("assumed: ").size());
    }
    e.link_line = line(e.link.said, ctx.gpu_evidence->where);
  }
}

}  // namespace

JobExpectation expect_job(const Context& ctx) {
  JobExpectation e;
  // ---- the model: the first one the table knows ----
  for (const auto& m : ctx.facts.of<ModelSeen>()) {
    if (const auto* spec = knowledge::find_model(m.fact.name)) {
      e.model = spec;
      e.model_line = line(fmt::format("model {}: {:.3g} parameters, {:.3g} GFLOP forward per {} ({})", spec->name, spec->params,
                                      spec->forward_gflops_per_unit, spec->unit, spec->input),
                          m.where);
      break;
    }
  }
  // ---- the GPU count and the measured speedup there ----
  for (const auto& s : ctx.variants.scaling)
    if (s.gpus >= 2 && s.gpus >= e.gpus) {
      e.gpus = s.gpus;
      e.measured_speedup = s.speedup;
      e.speedup_line = line(fmt::format("measured: {} at {} GPUs against {} at 1 ({}): speedup {:.2f}", figure(*s.row.m), s.gpus,
                                        figure(*s.base.m), s.how, s.speedup),
                            *s.row.where);
    }
  for (const auto& s : ctx.facts.of<ScalingPoint>())
    if (s.fact.world_size >= 2 && !e.measured_speedup) {
      e.gpus = s.fact.world_size;
      e.measured_speedup = s.fact.speedup;
      // (A count of nodes or machines where the text lists its speedups per node: "4 nodes → 3.9x".)
      const bool per_machine = s.fact.mode.find("of the nodes") != std::string::npos ||
                               s.fact.mode.find("of the machines") != std::string::npos ||
                               s.fact.mode.find("of the servers") != std::string::npos ||
                               s.fact.mode.find("of the instances") != std::string::npos;
      e.speedup_line = line(fmt::format("{} {}: speedup {:.2f} over one ({})", s.fact.world_size, per_machine ? "nodes" : "GPUs",
                                        s.fact.speedup,
                                        s.fact.mode.rfind("stated", 0) == 0 ? "as the text states it" : s.fact.mode + " scaling"),
                            s.where);
    }
  // The GPU count the text states ("2x H100 SXM5"), when no run or table gives one.
  std::optional<int> stated;
  for (const auto& c : ctx.facts.of<GpuCount>())
    if (c.fact.scope == "stated") stated = std::max(stated.value_or(0), c.fact.count);
  if (e.gpus == 0 && ctx.ranks && *ctx.ranks >= 2) e.gpus = *ctx.ranks;
  if (e.gpus == 0 && stated && *stated >= 2) e.gpus = *stated;
  // Else the largest GPU count a measured figure is given at ("2x RTX 3090" beside a table of runs).
  if (e.gpus == 0)
    for (const auto& m : ctx.facts.of<Measurement>())
      if (auto it = m.fact.dims.find("gpus"); it != m.fact.dims.end())
        if (const int n = std::atoi(it->second.c_str()); n >= 2 && n <= 1024) e.gpus = std::max(e.gpus, n);
  // A speedup the evidence gives as a figure of its own (a table's "Speedup" column: "DDP | 1.93x"), at that count.
  if (!e.measured_speedup && e.gpus >= 2)
    for (const auto& m : ctx.facts.of<Measurement>())
      if (m.fact.quantity == "speedup" && m.fact.value > 1.0 && m.fact.value <= e.gpus * 1.05 &&
          (!e.measured_speedup || m.fact.value > *e.measured_speedup)) {
        e.measured_speedup = m.fact.value;
        e.speedup_line = line(fmt::format("speedup {:.2f} as stated ({}), at the {} GPUs the evidence names", m.fact.value,
                                          row_name(m.fact), e.gpus),
                              m.where);
      }
  // The same time per iteration on N GPUs as on one (its it/s, its ETA), where each rank keeps its own batch (DDP and
  // its kin; not DataParallel, which splits one batch over the GPUs): N times the samples go through in that time —
  // linear weak scaling. It stands in for a "no faster" the same text states, which counted iterations, not samples.
  if (const auto c = first_claim(ctx, "same-per-iteration"); c && e.gpus < 2 && !c->fact.detail.empty())
    e.gpus = std::atoi(c->fact.detail.c_str());  // the count the sentence (or the one before) gave
  // (Not where a table of GPU counts or a throughput the job measured gives the scaling: those are its own figures.)
  bool throughput_measured = false;
  for (const auto& m : ctx.facts.of<Measurement>()) throughput_measured = throughput_measured || m.fact.quantity == "throughput";
  if (const auto c = first_claim(ctx, "same-per-iteration");
      c && e.gpus >= 2 && !data_parallel_in_use(ctx) && ctx.variants.scaling.empty() && !throughput_measured &&
      (!e.measured_speedup || *e.measured_speedup <= 1.05)) {
    e.measured_speedup = e.gpus;
    e.speedup_inferred = true;
    e.speedup_line = line(fmt::format("the same time per iteration on {} GPUs as on one: each GPU processes its own batch "
                                      "in it, so {} times the samples per second (weak scaling); a schedule counted in "
                                      "iterations takes as long, over {} times the data",
                                      e.gpus, e.gpus, e.gpus),
                          c->where);
  }
  // ---- the link and its busbw ----
  find_link(ctx, e);
  e.busbw = knowledge::expected_busbw(ctx.gpu, e.link);
  // ---- the step ----
  if (e.model && e.busbw.known()) {
    knowledge::StepInputs in;
    in.model = e.model;
    in.gpu = ctx.gpu;
    in.gpus = std::max(2, e.gpus);
    in.busbw = e.busbw;
    for (const auto& b : ctx.facts.of<BatchSize>())
      if (b.fact.per_device) {
        in.units_per_gpu = *b.fact.per_device * (e.model->unit == "token" ? e.model->context.value_or(512) : 1.0);
        break;
      }
    for (const auto& c : ctx.facts.of<Claim>())
      if (c.fact.kind == "precision") {
        in.precision = c.fact.detail == "fp32" ? knowledge::Precision::fp32 : knowledge::Precision::mixed16;
        break;
      }
    // One GPU's measured step, when a table of GPU counts gives it per step.
    for (const auto& s : ctx.variants.scaling)
      if (s.base.m->quantity == "step time" && (s.base.m->unit == "s" || s.base.m->unit == "ms")) {
        in.measured_compute_s = seconds_of(*s.base.m);
        break;
      }
    const auto step = knowledge::expect_step(in);
    if (step.comm_ratio.known()) {
      e.step = step;
      const Provenance& where = e.model_line ? e.model_line->where : e.link_line->where;
      e.summary = line(fmt::format("expected for {} on {} GPUs{}: {:.3g} GB of gradients per step at {}–{} of busbw ({}) take "
                                   "{}–{}; compute per step {}–{}: comm ratio {}–{}",
                                   e.model->name, in.gpus, ctx.gpu ? " of " + std::string(ctx.gpu->model) : "",
                                   step.gradient_bytes.high / 1e9, gbps(e.busbw.low), gbps(e.busbw.high), e.link.said,
                                   duration(step.allreduce_s.low), duration(step.allreduce_s.high), duration(step.compute_s.low),
                                   duration(step.compute_s.high), percent(step.comm_ratio.low), percent(step.comm_ratio.high)),
                       where);
    }
  }
  return e;
}

}  // namespace scalescope::diagnose
