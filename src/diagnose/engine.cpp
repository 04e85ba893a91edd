#include "diagnose/engine.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "text/log_text.h"
#include "core/terminal_text.h"
#include "diagnose/catalogue.h"
#include "diagnose/causes_util.h"
#include "diagnose/context.h"
#include "knowledge/expect.h"
#include "knowledge/launcher_failures.h"

namespace scalescope::diagnose {
namespace {

using namespace detail;

// ---- judging figures against ceilings, for no-defect ----

/// One figure judged against what the hardware should give.
struct Judgement {
  bool met = false;
  EvidenceLine line;
  std::string ceiling;      ///< the ceiling in words, with its source
  double weight = 0.6;      ///< how firmly it supports no-defect (a measured plateau more than a topology)
  bool measured = false;    ///< a figure the job measured (a plateau, a speedup, MFU), not a topology or a reading
};

// Network rail configurations a multi-node plateau is consistent with: k ports of a standard rate per node whose
// practical busbw (topo::nic_busbw_gbps) lies within −12 % / +8 % of the plateau.
std::vector<std::string> consistent_rails(double plateau, int min_rails) {
  std::vector<std::string> out;
  for (double rate : {100.0, 200.0, 400.0, 800.0})
    for (int k : {1, 2, 4, 8}) {
      if (k < min_rails) continue;
      const double expected = topo::expected_network_busbw(k, rate).gbps;
      if (expected > 0 && plateau >= 0.88 * expected && plateau <= 1.08 * expected)
        out.push_back(fmt::format("{} × {:.0f} Gb/s ({})", k, rate, gbps(expected)));
    }
  return out;
}

std::vector<Judgement> judgements(const Context& ctx) {
  std::vector<Judgement> out;
  const auto pairs = ctx.job_pairs();
  // The slowest path among the job's GPUs, if the matrix shows them.
  std::optional<topo::Link> worst;
  for (const auto& p : pairs) {
    topo::Link l{};
    if (p.fact.nvlinks > 0) l = {topo::LinkClass::nvlink, p.fact.nvlinks};
    else if (p.fact.token == "PIX") l = {topo::LinkClass::pix, 0};
    else if (p.fact.token == "PXB") l = {topo::LinkClass::pxb, 0};
    else if (p.fact.token == "PHB") l = {topo::LinkClass::phb, 0};
    else if (p.fact.token == "NODE") l = {topo::LinkClass::node, 0};
    else if (p.fact.token == "SYS" || p.fact.token == "SOC") l = {topo::LinkClass::sys, 0};
    else continue;
    if (!worst || topo::quality(l) < topo::quality(*worst)) worst = l;
  }

  const std::size_t first_plateau = out.size();
  for (const auto& p : ctx.plateaus) {
    const auto& f = p.fact;
    if (f.wrong_rows > 0) {
      out.push_back({false, line(fmt::format("{} rows of this sweep report wrong elements: the run failed its data check", f.wrong_rows), p.where), "", 0});
      continue;
    }
    std::string avg_note;
    if (f.reported_average_gbps && *f.reported_average_gbps < 0.9 * f.gbps)
      avg_note = fmt::format("; the footer's average {} averages every size down to {} B and is not the peak",
                             gbps(*f.reported_average_gbps), f.from_bytes > 0 ? std::to_string(f.from_bytes) : "the smallest");
    if (ctx.span == Span::multi_node) {
      std::optional<double> nic_rate;
      int nics = 0;
      std::set<std::string> names;
      for (const auto& n : ctx.facts.of<NicSeen>())
        if (n.fact.line_gbit && names.insert(n.fact.name).second) {
          nic_rate = nic_rate ? std::min(*nic_rate, *n.fact.line_gbit) : *n.fact.line_gbit;
          ++nics;
        }
      if (nic_rate && nics > 0) {
        const auto c = topo::expected_network_busbw(nics, *nic_rate);
        const double ratio = f.gbps / c.gbps;
        if (ctx.nodes && *ctx.nodes == 2 && ratio > 1.1) {
          out.push_back({true, line(fmt::format("{} {} plateau above the {} the {} NIC(s) per node carry: on exactly two "
                                                "nodes NCCL's Tree algorithm sends less over the network than nccl-tests' "
                                                "busbw formula assumes — expected, not an error",
                                                f.collective, gbps(f.gbps), gbps(c.gbps), nics),
                                    p.where),
                         fmt::format("{} per node over the network (NCCL_ALGO=Ring measures it)", gbps(c.gbps)), 0.6});
        } else {
          out.push_back({ratio >= 0.8, line(fmt::format("{} plateau {} = {} of the {} that {} × {:.0f} Gb/s NICs per node carry{}",
                                                        f.collective, gbps(f.gbps), percent(ratio), gbps(c.gbps), nics, *nic_rate, avg_note),
                                            p.where),
                         c.basis.empty() ? gbps(c.gbps) : c.basis, ratio >= 0.8 ? 0.7 : 0});
        }
      } else {
        // Nodes of SXM GPUs (HGX/DGX boards) carry one NIC per GPU or per two GPUs: fewer than 4 rails on them is not
        // what such a node has, so a plateau that only 1 or 2 ports explain is not judged healthy.
        const bool sxm = ctx.gpu && (ctx.gpu->form == topo::GpuForm::sxm || ctx.gpu->form == topo::GpuForm::superchip);
        const int min_rails = sxm ? std::min(4, ctx.ranks_per_node.value_or(8)) : 1;
        auto rails = consistent_rails(f.gbps, min_rails);
        if (f.saturated && rails.empty() && !consistent_rails(f.gbps, 1).empty()) {
          out.push_back({false, line(fmt::format("multi-node {} plateau {}: only {} per node would carry that, fewer NICs than "
                                                 "nodes of {} usually have (one per GPU or per two GPUs)",
                                                 f.collective, gbps(f.gbps), consistent_rails(f.gbps, 1).front(), ctx.gpu->model),
                                     p.where),
                         "", 0});
          continue;
        }
        if (f.saturated && !rails.empty()) {
          std::string list;
          for (const auto& r : rails) list += (list.empty() ? "" : ", ") + r;
          out.push_back({true, line(fmt::format("multi-node {} plateau {} over {} sizes up to {} MB: flat (saturated), at "
                                                "the practical rate of {} per node (about 12 GB/s per 100 Gb/s port){}",
                                                f.collective, gbps(f.gbps), f.sizes, f.to_bytes / 1000000, list, avg_note),
                                    p.where),
                         fmt::format("the network between nodes: {} of all-reduce busbw is what {} per node carry at NCCL's "
                                     "~96 % of line rate (rule of thumb: 12 GB/s per 100 Gb/s port, "
                                     "github.com/NVIDIA/nccl-tests/issues/119); the NIC count and rate are not in the evidence",
                                     gbps(f.gbps), list),
                         0.5});
        }
      }
      continue;
    }
    // One node: the slowest path among the job's GPUs, or the model's full NVLink when no matrix was given.
    std::optional<topo::Link> path = worst;
    std::string assumed;
    if (!path && ctx.gpu && ctx.gpu->nvlink_links > 0 && ctx.gpu->form == topo::GpuForm::sxm) {
      path = topo::Link{topo::LinkClass::nvlink, ctx.gpu->nvlink_links};
      assumed = " (assumed: every pair through NVSwitch with all links; give `nvidia-smi topo -m` to check)";
    }
    // No matrix and no known span: the link the expectation assumed (the poster's words or the platform's design),
    // for a plateau of at most one node's GPUs.
    if ((!path || ctx.span == Span::unknown) && ctx.span != Span::multi_node && ctx.gpu && ctx.expected.busbw.known() &&
        (ctx.expected.link.kind == knowledge::LinkAssumption::Kind::nvlink ||
         ctx.expected.link.kind == knowledge::LinkAssumption::Kind::pcie) &&
        f.ranks.value_or(2) <= 8) {
      const auto& band = ctx.expected.busbw;
      const bool met = f.gbps >= band.low;
      out.push_back({met,
                     line(fmt::format("{} busbw {} against the {}–{} expected ({}){}", f.collective, gbps(f.gbps), gbps(band.low),
                                      gbps(band.high), ctx.expected.link.said, avg_note),
                          p.where),
                     band.basis, met ? 0.65 : 0});
      continue;
    }
    if (!path || ctx.span == Span::unknown) continue;
    const auto c = topo::expected_path_busbw(ctx.gpu, *path);
    if (c.gbps <= 0) continue;
    const double ratio = f.gbps / c.gbps;
    out.push_back({ratio >= 0.8,
                   line(fmt::format("{} plateau {} = {} of the {} ceiling of {}{}{}", f.collective, gbps(f.gbps), percent(ratio),
                                    gbps(c.gbps), topo::to_string(*path), assumed, avg_note),
                        p.where),
                   c.basis, ratio >= 0.8 ? 0.7 : 0});
  }

  const std::size_t plateau_end = out.size();
  for (std::size_t k = first_plateau; k < plateau_end; ++k) out[k].measured = true;
  // The topology itself: the job's GPUs joined as the platform should join them.
  if (!pairs.empty()) {
    std::set<int> nv;
    bool all_nvlink = true, all_switch = true;
    for (const auto& p : pairs) {
      if (p.fact.nvlinks > 0) nv.insert(p.fact.nvlinks);
      else all_nvlink = false;
      if (p.fact.token != "PIX" && p.fact.token != "PXB" && p.fact.nvlinks == 0) all_switch = false;
    }
    std::string nic_text;
    // Each GPU's nearest NIC.
    std::map<std::string, std::string> nearest;
    bool any_nic = false;
    for (const auto& l : ctx.links) {
      const bool gpu_nic = l.fact.a_is_gpu != l.fact.b_is_gpu;
      if (!gpu_nic) continue;
      any_nic = true;
      const std::string& g = l.fact.a_is_gpu ? l.fact.a : l.fact.b;
      const std::string& t = l.fact.token;
      auto rank = [](const std::string& x) { return x == "PIX" ? 0 : x == "PXB" ? 1 : x == "PHB" ? 2 : x == "NODE" ? 3 : 4; };
      if (!nearest.count(g) || rank(t) < rank(nearest[g])) nearest[g] = t;
    }
    bool nics_close = any_nic;
    for (const auto& g : ctx.job_gpus)
      if (!nearest.count(g) || (nearest[g] != "PIX" && nearest[g] != "PXB")) nics_close = false;
    if (any_nic && nics_close) nic_text = "; every GPU has a NIC under its own PCIe switch (PIX/PXB), where GPUDirect RDMA works";
    if ((all_nvlink && nv.size() == 1) || (all_switch && !all_nvlink)) {
      const topo::Link l = all_nvlink ? topo::Link{topo::LinkClass::nvlink, *nv.begin()} : topo::Link{topo::LinkClass::pxb, 0};
      const auto c = topo::expected_path_busbw(ctx.gpu, l);
      const std::string what = all_nvlink ? fmt::format("NV{} between every pair of the job's {} GPUs", *nv.begin(), ctx.job_gpus.size())
                                          : "a PCIe switch between every pair of the job's GPUs";
      const bool nics_bad = any_nic && !nics_close;
      std::set<std::string> nic_labels;
      for (const auto& l2 : ctx.links) {
        if (!l2.fact.a_is_gpu) nic_labels.insert(l2.fact.a);
        if (!l2.fact.b_is_gpu) nic_labels.insert(l2.fact.b);
      }
      std::string ceiling = "inside a node " + (c.gbps > 0 ? gbps(c.gbps) + " of all-reduce busbw (" + c.basis + ")" : std::string("the link's rate"));
      if (any_nic)
        ceiling += fmt::format("; between nodes, the {} NIC(s) per node at their line rate (about 12 GB/s of busbw per "
                               "100 Gb/s port; the rate is not in the matrix)",
                               nic_labels.size());
      // NICs far from the GPUs matter between nodes (GPUDirect RDMA); a job of one node does not use them.
      out.push_back({!(nics_bad && ctx.span == Span::multi_node), line(what + nic_text, pairs.front().where), ceiling, 0.5});
    }
  }

  // One rank whose GPU is busy almost the whole step: nothing lost to the host, data or launches.
  for (const auto& s : ctx.facts.of<StepPhases>())
    if (s.fact.world_size.value_or(1) == 1 && s.fact.gpu_busy_s && s.fact.step_s && *s.fact.step_s > 0 &&
        s.fact.rank.value_or(0) == 0) {
      const double busy = *s.fact.gpu_busy_s / *s.fact.step_s;
      if (busy >= 0.9)
        out.push_back({true, line(fmt::format("the GPU is busy {} of the {} step ({}): no time lost to the host, data "
                                              "loading or kernel launches",
                                              percent(busy), duration(*s.fact.step_s), s.fact.basis),
                                  s.where),
                       "the GPU's own compute: the step is as fast as its kernels" +
                           (ctx.gpu && ctx.gpu->dense_bf16_tflops > 0
                                ? fmt::format(" (the {} does {:.0f} TFLOP/s of dense 16-bit math at most; compare the "
                                              "model's FLOPs per step)",
                                              ctx.gpu->model, ctx.gpu->dense_bf16_tflops)
                                : std::string()),
                       0.55});
      else if (busy < 0.6)
        out.push_back({false, line(fmt::format("the GPU is idle {} of the step", percent(1 - busy)), s.where), "", 0});
    }

  std::size_t from = out.size();
  // Scaling measured by scalescope or a baseline trace.
  for (const auto& s : ctx.facts.of<ScalingPoint>())
    if (s.fact.world_size >= 2 && s.fact.verdict) {
      const bool ok = *s.fact.verdict == "healthy";
      out.push_back({ok, line(fmt::format("N={}: speedup {:.2f}, efficiency {}{} — verdict {}", s.fact.world_size, s.fact.speedup,
                                          percent(s.fact.efficiency),
                                          s.fact.comm_ratio ? ", comm ratio " + percent(*s.fact.comm_ratio) : "", *s.fact.verdict),
                              s.where),
                     "the seed's rule: healthy when comm ratio < 15 % and 2-GPU speedup > 1.7", ok ? 0.7 : 0});
    }
  // Scaling the evidence states (a speedup in words or a table's speedup column at the job's GPU count), when no
  // measured verdict or table of GPU counts judges it: the brief's rule of thumb, healthy at ≥ 85 % efficiency (a
  // 2-GPU speedup above 1.7); below 70 % it is a loss to explain, not the ceiling.
  {
    const auto& ex = ctx.expected;
    bool judged = !ctx.variants.scaling.empty();
    for (const auto& s : ctx.facts.of<ScalingPoint>()) judged = judged || s.fact.verdict.has_value();
    if (!judged && ex.measured_speedup && ex.gpus >= 2 && ex.speedup_line) {
      const double eff = *ex.measured_speedup / ex.gpus;
      // What this job's communication costs by the expectation (knowledge/expect.h: its gradient all-reduce on its link
      // against its compute): at worst, nothing overlapped, the efficiency band's low end. Judged in the grey band
      // (70–85 %) only: below it a loss to explain, above it healthy whatever the expectation.
      const bool expected_loss =
          ex.step && ex.step->efficiency.known() && eff >= 0.7 && eff < 0.85 && eff >= 0.9 * ex.step->efficiency.low;
      if (eff >= 0.85)
        out.push_back({true, line(fmt::format("{} ({} efficiency)", ex.speedup_line->says, percent(eff)), ex.speedup_line->where),
                       fmt::format("ideal {} on {} GPUs; healthy data-parallel scaling reaches 85–95 % of it", ex.gpus, ex.gpus), 0.55});
      else if (expected_loss)
        out.push_back({true, line(fmt::format("{} ({} efficiency): within what this job's communication costs — {} expected "
                                              "({} to {} of the gradient all-reduce hidden)",
                                              ex.speedup_line->says, percent(eff),
                                              fmt::format("{}–{}", percent(ex.step->efficiency.low), percent(ex.step->efficiency.high)),
                                              "none", "all"),
                                  ex.speedup_line->where),
                       ex.summary ? ex.summary->says : "the expected all-reduce against compute", 0.55});
      else if (eff < 0.7)
        out.push_back({false, line(fmt::format("{} ({} efficiency)", ex.speedup_line->says, percent(eff)), ex.speedup_line->where), "", 0});
    }
  }
  for (std::size_t k = from; k < out.size(); ++k) out[k].measured = !ctx.expected.speedup_inferred;
  // A PCIe link below its generation while the GPU idles, at its full width: the GPU lowers the generation to save power
  // and raises it under load (nvidia-smi -q's "Current" against "Max"); what it does under load is what matters.
  for (const auto& p : ctx.facts.of<PcieLinkState>()) {
    const auto link = pcie_reading(ctx, p);
    if (link.cur_gen == 0 || link.cap_gen == 0 || link.cur_gen >= link.cap_gen) continue;
    if (link.cur_width > 0 && link.cap_width > 0 && link.cur_width < link.cap_width) continue;  // a narrower link is judged by its cause
    const bool busy = link.busy;
    out.push_back({!busy,
                   line(fmt::format("{}: PCIe Gen{} of Gen{}{}", p.fact.device, link.cur_gen, link.cap_gen,
                                    busy ? " while busy" : ", read while the GPU idles: GPUs lower the link's generation when idle and raise it under load"),
                        p.where),
                   busy ? "" : "the link's generation under load (nvidia-smi -q -d PCIE during a job); the width is what an idle reading can show wrong",
                   busy ? 0.0 : 0.5});
  }
  // A bandwidth the text states of NVLink itself ("the bandwidth of NVLink on H800 is 160 GB/s … instead of 400 GB/s"),
  // set against the GPU's NVLink rate per direction (links × GB/s per link, data/gpus.json): NVLink carries about
  // 80–90 % of that as data, and a datasheet's total adds both directions. Not a busbw (that has its plateau).
  if (ctx.gpu && ctx.gpu->nvlink_links > 0 && ctx.gpu->nvlink_link_gbps > 0) {
    const double per_direction = ctx.gpu->nvlink_links * ctx.gpu->nvlink_link_gbps;
    std::set<std::pair<std::string, std::size_t>> nvlink_lines;
    for (const auto& c : ctx.facts.of<Claim>())
      if (c.fact.kind == "link" && c.fact.detail == "nvlink") nvlink_lines.insert({c.where.source, c.where.line});
    for (const auto& m : ctx.facts.of<Measurement>()) {
      if (m.fact.quantity != "bandwidth" || m.fact.unit != "GB/s" || !nvlink_lines.count({m.where.source, m.where.line}))
        continue;
      const double r = m.fact.value / per_direction;
      if (r >= 1.8 && r <= 2.2)
        out.push_back({true, line(fmt::format("{} of NVLink on the {} is its datasheet's total, both directions added: {} NVLinks × "
                                              "{} per direction = {} each way",
                                              gbps(m.fact.value), ctx.gpu->model, ctx.gpu->nvlink_links,
                                              gbps(ctx.gpu->nvlink_link_gbps), gbps(per_direction)),
                                  m.where),
                       "", 0.5});
      else if (r >= 0.7 && r <= 1.1) {
        out.push_back({true, line(fmt::format("{} of NVLink on the {} = {} of its {} per direction ({} NVLinks × {}): the data "
                                              "rate NVLink delivers after its protocol's overhead",
                                              gbps(m.fact.value), ctx.gpu->model, percent(r), gbps(per_direction),
                                              ctx.gpu->nvlink_links, gbps(ctx.gpu->nvlink_link_gbps)),
                                  m.where),
                       fmt::format("the {}'s NVLink: {} per direction ({} links; data/gpus.json)", ctx.gpu->model,
                                   gbps(per_direction), ctx.gpu->nvlink_links),
                       0.55});
        out.back().measured = true;
      } else if (r < 0.6) {
        out.push_back({false, line(fmt::format("{} of NVLink on the {}: {} of its {} per direction", gbps(m.fact.value),
                                               ctx.gpu->model, percent(r), gbps(per_direction)),
                                   m.where),
                       "", 0});
      }
    }
  }
  // A busbw said to exceed the network's on exactly two nodes: NCCL's tree sends each node's half over the network
  // once, so busbw (computed as for a ring) is above the NIC's rate — expected, not an error.
  if (const auto c = first_claim(ctx, "busbw-above-link"); c && ctx.nodes && *ctx.nodes == 2)
    out.push_back({true, line("busbw above the network's rate on exactly two nodes: NCCL's Tree algorithm sends less over "
                              "the network than the busbw formula (2(n−1)/n of the data per rank) assumes",
                              c->where),
                   "the network between the nodes (NCCL_ALGO=Ring measures it alone)", 0.55});
  from = out.size();
  // Model FLOPs utilisation measured on several GPUs (a table's MFU column, "57 % MFU"): dense training reaches
  // 25–55 % of peak (knowledge/expect.h kMfuLow/kMfuHigh, the PaLM paper's and public runs' range). At 40 % or more
  // the GPUs compute at the top of it, communication included: nothing to fix.
  for (const auto& m : ctx.facts.of<Measurement>()) {
    if (m.fact.quantity != "MFU") continue;
    const double mfu = m.fact.unit == "%" ? m.fact.value / 100 : m.fact.value;
    if (!(mfu > 0 && mfu <= 1) || ctx.expected.gpus < 2) continue;
    if (mfu >= 0.4)
      out.push_back({true, line(fmt::format("MFU {} on {} GPUs: at the top of the {}–{} dense training reaches", percent(mfu),
                                            ctx.expected.gpus, percent(knowledge::kMfuLow), percent(knowledge::kMfuHigh)),
                                m.where),
                     "the GPUs' own math rate: MFU near 55 % leaves little to gain from communication or input", 0.55});
    break;
  }
  for (std::size_t k = from; k < out.size(); ++k) out[k].measured = true;
  // A health check that failed is a fault found, whatever the other figures say.
  for (const auto& c : ctx.facts.of<Claim>())
    if (c.fact.kind == "health-check-failed") {
      out.push_back({false, line("a node health check failed: " + c.fact.detail, c.where), "", 0});
      break;
    }
  from = out.size();
  // Scaling from tables.
  for (const auto& s : ctx.variants.scaling) {
    // Far above ideal is not healthy scaling but rows that do not compare (a different batch, a hypothetical figure).
    if (s.efficiency >= 0.85 && s.efficiency <= 1.15)
      out.push_back({true, line(fmt::format("{} on {} GPUs: speedup {:.2f} ({} efficiency)", row_name(*s.row.m), s.gpus, s.speedup,
                                            percent(s.efficiency)),
                                *s.row.where),
                     fmt::format("ideal {} on {} GPUs", s.gpus, s.gpus), 0.6});
  }
  for (std::size_t k = from; k < out.size(); ++k) out[k].measured = true;
  return out;
}

/// Whether a cause below the primary's score may still be named: the job measurably lost speed (a measured, not
/// inferred, speedup under 70 % efficiency: below the 0.85·N that verdict.h calls healthy, past its grey band),
/// and the best live cause
/// explains that loss with a cost of its own and leads the next by a clear margin.
bool leans_to(const Context& ctx, const std::vector<Assessment>& live) {
  const auto& ex = ctx.expected;
  if (!ex.measured_speedup || ex.gpus < 2 || ex.speedup_inferred || !ex.speedup_line) return false;
  if (*ex.measured_speedup / ex.gpus >= 0.7) return false;
  const Assessment& top = live.front();
  if (!top.cost.seconds && !top.cost.share) return false;
  return live.size() == 1 || top.score - live[1].score >= 0.05;
}

bool better(const Assessment& x, const Assessment& y) {
  if (std::abs(x.score - y.score) > 1e-9) return x.score > y.score;
  return x.cost.seconds.value_or(0) > y.cost.seconds.value_or(0);
}

std::string safe(const std::string& s, std::size_t n = 400) { return core::terminal_text(s, n); }

std::string where_text(const Provenance& p) {
  if (p.source.empty()) return "";
  return p.line > 0 ? fmt::format("{}:{}", p.source, p.line) : p.source;
}

}  // namespace

std::string confidence_label(double score) { return score >= 0.75 ? "high" : score >= 0.5 ? "medium" : "low"; }

Diagnosis diagnose(const FactSet& facts) {
  Diagnosis d;
  {
    std::map<std::string, std::size_t> per_source;
    std::vector<std::string> order;
    for (const auto& f : facts.all()) {
      if (!per_source.count(f.where.source)) order.push_back(f.where.source);
      ++per_source[f.where.source];
    }
    for (const auto& s : order) d.considered.push_back(fmt::format("{} ({} fact{})", s.empty() ? "(derived)" : s, per_source[s],
                                                                  per_source[s] == 1 ? "" : "s"));
  }
  const Context ctx(facts);
  std::vector<Assessment> live;
  for (const auto& c : cause_catalogue()) {
    if (!c.assess) continue;
    auto r = c.assess(ctx);
    if (!r) continue;
    if (r->ruled_out) d.ruled_out.push_back(std::move(*r));
    else if (r->score > 0) live.push_back(std::move(*r));
  }
  // Ranks that compute on CPUs (a gloo job's traces, no GPU seen): fixes and checks in CPU words where the catalogue
  // has them.
  {
    bool cpu = false, gpu = ctx.has<GpuSeen>();
    for (const auto& p : facts.of<StepPhases>()) (p.fact.cpu_rank ? cpu : gpu) = true;
    if (cpu && !gpu)
      for (auto& a : live)
        if (const auto* info = find_cause(a.cause)) {
          if (!info->cpu_fix.empty() && a.fix == info->fix) a.fix = std::string(info->cpu_fix);
          if (!info->cpu_confirm.empty() && a.confirm == info->confirm) a.confirm = std::string(info->cpu_confirm);
        }
  }
  // One rank: no collective traffic crosses a link, so no cause of slow or failing communication applies (a
  // single-GPU job's NCCL log still reports its network, GDR state and settings).
  if (ctx.ranks && *ctx.ranks == 1) {
    static const std::set<std::string> communication = {
        "nvlink-degraded", "pcie-host-bridge-path", "cross-socket-path", "p2p-blocked-acs-iommu", "virtualised-topology",
        "gdr-unavailable", "nccl-env-override", "net-socket-fallback", "container-ipc-shm", "collective-mismatch",
        "comm-bound-small-model", "bandwidth-bound-gradients", "no-overlap", "straggler", "load-imbalance"};
    for (auto it = live.begin(); it != live.end();) {
      if (!communication.count(it->cause)) {
        ++it;
        continue;
      }
      it->ruled_out = true;
      it->why_not = "the job has one rank: no collective traffic crosses a link";
      d.ruled_out.push_back(std::move(*it));
      it = live.erase(it);
    }
  }
  // A cause of slow scaling explains a loss: where the evidence shows none, a cause whose cost nothing measured is a
  // risk, contributing at most — not this job's answer. Failures (a crash, a hang, a GPU gone) are never risks.
  static const std::set<std::string> failures = {"container-ipc-shm", "collective-mismatch", "gpu-hidden"};
  auto as_risk = [](Assessment& a, EvidenceLine why) {
    a.score = std::min(a.score * 0.5, kPrimaryScore - 0.01);
    a.against.push_back(std::move(why));
  };
  // The job scaling well: a measured or stated speedup at 85 % efficiency or more.
  if (const auto& ex = ctx.expected; ex.measured_speedup && ex.gpus >= 2 && ex.speedup_line && !ex.speedup_inferred) {
    const double eff = *ex.measured_speedup / ex.gpus;
    if (eff >= 0.85)
      for (auto& a : live)
        if (!failures.count(a.cause) && !a.cost.seconds && !a.cost.share)
          as_risk(a, line(fmt::format("the job scales well: {} ({} efficiency)", ex.speedup_line->says, percent(eff)),
                          ex.speedup_line->where));
  }
  // Likewise where every figure the evidence measured is judged at what its hardware gives (a busbw plateau at the
  // path's or the network's ceiling, scaling at ≥ 85 % efficiency, MFU at the top of the range) and none below it: a
  // cause whose cost nothing measured is a risk beside figures that show no loss, not the answer.
  // (The judgements are those of no-defect below, made once.)
  const auto js = judgements(ctx);
  {
    const bool none_failed = std::none_of(js.begin(), js.end(), [](const Judgement& j) { return !j.met; });
    const Judgement* firm = nullptr;
    for (const auto& j : js)
      if (j.met && j.measured && (!firm || j.weight > firm->weight)) firm = &j;
    if (none_failed && firm)
      for (auto& a : live)
        if (!failures.count(a.cause) && !a.cost.seconds && !a.cost.share && !a.cost.measured_gbps && a.score >= kPrimaryScore)
          as_risk(a, line("the measured figures are what this hardware gives: " + firm->line.says, firm->line.where));
  }
  // A cause that explains another (a setting behind a fallback) ranks above it: the effect's evidence is its too.
  for (auto& a : live)
    for (const auto& id : a.explains)
      for (const auto& b : live)
        if (b.cause == id && b.score >= a.score) a.score = std::min(1.0, b.score + 0.01);
  std::stable_sort(live.begin(), live.end(), better);
  // Alternative explanations of one symptom: only the better one is shown (the other's evidence is the same).
  const std::vector<std::pair<std::string, std::string>> alternatives = {{"comm-bound-small-model", "bandwidth-bound-gradients"}};
  for (const auto& [x, y] : alternatives) {
    auto ix = std::find_if(live.begin(), live.end(), [&](const Assessment& a) { return a.cause == x; });
    auto iy = std::find_if(live.begin(), live.end(), [&](const Assessment& a) { return a.cause == y; });
    if (ix != live.end() && iy != live.end()) live.erase(ix < iy ? iy : ix);
  }

  std::size_t next = 0;
  if (!live.empty() && live.front().score >= kPrimaryScore) {
    d.primary = live.front();
    next = 1;
  } else if (!live.empty() && live.front().score >= kContributingScore && leans_to(ctx, live)) {
    // No cause reached the primary's score, but the job measurably lost speed and one cause explains that loss with
    // a cost of its own, clearly ahead of the rest: the answer the evidence leans to, named at low confidence beside
    // what would decide it (an expert names the likeliest cause of a measured loss rather than none).
    d.primary = live.front();
    d.primary->against.push_back(line("named on circumstantial evidence: nothing reached the score of a firm answer; the "
                                      "measurements under 'missing evidence' decide",
                                      Provenance{}));
    next = 1;
  }
  for (std::size_t i = next; i < live.size() && d.contributing.size() < 6; ++i) {
    if (live[i].score < kContributingScore) break;
    Assessment a = live[i];
    if (d.primary && std::find(d.primary->explains.begin(), d.primary->explains.end(), a.cause) != d.primary->explains.end())
      a.summary += " (a consequence of " + d.primary->cause + ")";
    d.contributing.push_back(std::move(a));
  }

  if (!d.primary) {
    bool failed = false;
    double weight = 0;
    for (const auto& j : js) {
      if (!j.met) failed = true;
      else weight = std::max(weight, j.weight);
    }
    if (!js.empty() && !failed && weight > 0) {
      Assessment a = start("no-defect");
      // A multi-node plateau judged without the NICs' count and rate: say what would pin the ceiling down.
      if (ctx.span == Span::multi_node && !ctx.plateaus.empty() && !ctx.has<NicSeen>())
        a.needs.push_back({"the NICs per node and their rate", "ibstat   (or ibv_devinfo -v; on each node)",
                           "which of the rail configurations the plateau matches, so the ceiling is known rather than inferred"});
      a.score = weight;
      for (const auto& j : js) a.evidence.push_back(j.line);
      a.summary = "the figures are what this hardware and workload should give: nothing to fix";
      std::set<std::string> said;
      for (const auto& j : js)
        if (!j.ceiling.empty() && said.insert(j.ceiling).second) d.ceiling += (d.ceiling.empty() ? "" : "; ") + j.ceiling;
      a.cost.text = "none";
      a.fix = "nothing to fix; more speed has to come from the ceiling itself: " + (d.ceiling.empty() ? "the hardware" : d.ceiling);
      a.confirm = "";
      d.primary = std::move(a);
    } else {
      for (const auto& j : js)
        if (!j.met)
          d.missing_evidence.push_back({"why " + j.line.says, "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,ENV <the run>",
                                        "the transport, settings and topology NCCL used for this figure"});
    }
  }
  // What would confirm the causes shown.
  std::set<std::string> asked;
  auto ask = [&](const std::vector<MissingEvidence>& needs) {
    for (const auto& n : needs)
      if (asked.insert(n.command).second) d.missing_evidence.push_back(n);
  };
  if (d.primary) ask(d.primary->needs);
  for (const auto& c : d.contributing) ask(c.needs);
  // A job that failed by itself: its failure is the first finding; nothing about its scaling is asked for until it runs.
  for (const auto& f : facts.of<JobFailed>()) {
    JobFailure jf{f.fact.ended, f.fact.exception, f.fact.rank, f.fact.failed_ranks, f.fact.launcher_crash, "", "", f.where};
    if (const auto* k = knowledge::known_launcher_failure(f.fact.exception, f.fact.frame)) {
      jf.fix = k->fix;
      jf.fix_source = k->source;
    }
    d.failure = std::move(jf);
    break;
  }
  if (d.failure) return d;
  if (!d.primary && facts.empty())
    d.missing_evidence.push_back({"evidence about the run", "NCCL_DEBUG=INFO <the run> > nccl.log; nvidia-smi topo -m > topo.txt; "
                                  "the training log with its step times per GPU count",
                                  "every cause: none of the inputs gave a fact"});
  else if (!d.primary) {
    if (!ctx.has<LinkClass>())
      d.missing_evidence.push_back({"the GPU topology", "nvidia-smi topo -m", "which paths the GPUs use (NVLink, PCIe switch, host bridge, sockets)"});
    if (!ctx.has<StepPhases>() && !ctx.has<Measurement>() && !ctx.has<BusbwPlateau>())
      d.missing_evidence.push_back({"measured step times at 1 and N GPUs, or an nccl-tests sweep", "scalescope doctor (or all_reduce_perf -b 1M -e 1G -f 2 -g <GPUs>)",
                                    "whether anything is slower than the hardware allows"});
  }
  return d;
}

void to_json(nlohmann::json& j, const Assessment& a) {
  using analyze::to_valid_utf8;
  auto lines = [](const std::vector<EvidenceLine>& v) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : v)
      out.push_back({{"says", to_valid_utf8(e.says)}, {"source", to_valid_utf8(e.where.source)}, {"line", e.where.line},
                     {"excerpt", to_valid_utf8(e.where.excerpt)}});
    return out;
  };
  nlohmann::json cost = {{"seconds", analyze::optional_json(a.cost.seconds)},
                         {"per", a.cost.per.empty() ? nlohmann::json() : nlohmann::json(a.cost.per)},
                         {"share", analyze::optional_json(a.cost.share)},
                         {"measured_gbps", analyze::optional_json(a.cost.measured_gbps)},
                         {"ceiling_gbps", analyze::optional_json(a.cost.ceiling_gbps)},
                         {"text", to_valid_utf8(a.cost.text)}};
  j = {{"cause", a.cause},
       {"confidence", confidence_label(a.score)},
       {"score", std::round(a.score * 100) / 100},
       {"summary", to_valid_utf8(a.summary)},
       {"cost", cost},
       {"evidence", lines(a.evidence)},
       {"against", lines(a.against)},
       {"fix", to_valid_utf8(a.fix)},
       {"predicted", a.predicted.empty() ? nlohmann::json() : nlohmann::json(to_valid_utf8(a.predicted))},
       {"confirm", a.confirm.empty() ? nlohmann::json() : nlohmann::json(to_valid_utf8(a.confirm))},
       {"explains", a.explains}};
}

void to_json(nlohmann::json& j, const Diagnosis& d) {
  using analyze::to_valid_utf8;
  nlohmann::json contributing = nlohmann::json::array(), ruled = nlohmann::json::array(), missing = nlohmann::json::array(),
                 considered = nlohmann::json::array();
  for (const auto& c : d.contributing) contributing.push_back(c);
  for (const auto& r : d.ruled_out) ruled.push_back({{"cause", r.cause}, {"why", to_valid_utf8(r.why_not)}});
  for (const auto& m : d.missing_evidence)
    missing.push_back({{"what", to_valid_utf8(m.what)}, {"command", to_valid_utf8(m.command)}, {"decides", to_valid_utf8(m.decides)}});
  for (const auto& c : d.considered) considered.push_back(to_valid_utf8(c));
  nlohmann::json failure;
  if (d.failure) {
    const auto& f = *d.failure;
    failure = {{"ended", to_valid_utf8(f.ended)},
               {"exception", f.exception.empty() ? nlohmann::json() : nlohmann::json(to_valid_utf8(f.exception))},
               {"rank", f.rank ? nlohmann::json(*f.rank) : nlohmann::json()},
               {"failed_ranks", f.failed_ranks},
               {"launcher_crash", f.launcher_crash},
               {"fix", f.fix.empty() ? nlohmann::json() : nlohmann::json(to_valid_utf8(f.fix))},
               {"fix_source", f.fix_source.empty() ? nlohmann::json() : nlohmann::json(to_valid_utf8(f.fix_source))},
               {"source", to_valid_utf8(f.where.source)},
               {"line", f.where.line}};
  }
  j = {{"failure", failure},
       {"primary", d.primary ? nlohmann::json(*d.primary) : nlohmann::json()},
       {"contributing", contributing},
       {"ruled_out", ruled},
       {"missing_evidence", missing},
       {"ceiling", d.ceiling.empty() ? nlohmann::json() : nlohmann::json(to_valid_utf8(d.ceiling))},
       {"considered", considered}};
}

std::string render(const Diagnosis& d) {
  std::string out = "diagnosis:\n";
  auto evidence = [&](const std::vector<EvidenceLine>& v, const char* head, std::size_t max) {
    if (v.empty()) return;
    out += fmt::format("    {}:\n", head);
    for (std::size_t i = 0; i < v.size() && i < max; ++i) {
      const auto w = where_text(v[i].where);
      out += fmt::format("      - {}{}\n", safe(v[i].says), w.empty() ? "" : "  [" + safe(w, 120) + "]");
    }
    if (v.size() > max) out += fmt::format("      … {} more in the JSON report\n", v.size() - max);
  };
  if (d.failure) {
    const auto& f = *d.failure;
    if (f.launcher_crash)
      out += fmt::format("  the job FAILED ({}): the launcher itself failed before starting any worker: {}\n", safe(f.ended),
                         f.exception.empty() ? "(no exception in its output)" : safe(f.exception, 300));
    else
      out += fmt::format("  the job FAILED ({}): {}{}\n", safe(f.ended), f.rank ? fmt::format("rank {}: ", *f.rank) : "",
                         f.exception.empty() ? "no exception in its output (a signal, or a crash below Python)" : safe(f.exception, 300));
    if (!f.failed_ranks.empty() && !f.launcher_crash)
      out += fmt::format("    ranks the launcher lists as failed: {} (the first to be observed, not always the first to fail)\n",
                         fmt::join(f.failed_ranks, ", "));
    if (!f.fix.empty()) out += fmt::format("    fix: {}\n    known from: {}\n", safe(f.fix, 400), safe(f.fix_source, 400));
    else out += "    fix: the exception above first (what follows it in the job's log is mostly its consequence); then run again\n";
  }
  if (d.primary) {
    const auto& p = *d.primary;
    out += fmt::format("  primary: {} (confidence {}) — {}\n", p.cause, confidence_label(p.score), safe(p.summary));
    if (!p.cost.text.empty() && p.cause != "no-defect") out += fmt::format("    cost: {}\n", safe(p.cost.text));
    evidence(p.evidence, "evidence", 8);
    evidence(p.against, "against", 4);
    if (p.cause == "no-defect") {
      if (!d.ceiling.empty()) out += fmt::format("    ceiling: {}\n", safe(d.ceiling, 600));
    } else {
      out += fmt::format("    fix: {}\n", safe(p.fix, 600));
      if (!p.predicted.empty()) out += fmt::format("    predicted: {}\n", safe(p.predicted, 400));
      if (!p.confirm.empty()) out += fmt::format("    confirm: {}\n", safe(p.confirm));
    }
  } else if (d.failure) {
    out += "  primary: none — nothing else in the evidence names a cause of slow scaling: a run that failed measured none\n";
  } else {
    out += "  primary: none — the evidence does not single out a cause\n";
  }
  if (!d.contributing.empty()) {
    out += "  contributing:\n";
    for (const auto& c : d.contributing) {
      out += fmt::format("    - {} ({}): {}\n", c.cause, confidence_label(c.score), safe(c.summary));
      if (!c.cost.text.empty()) out += fmt::format("      cost: {}\n", safe(c.cost.text));
      if (!c.evidence.empty()) {
        const auto w = where_text(c.evidence.front().where);
        out += fmt::format("      evidence: {}{}\n", safe(c.evidence.front().says), w.empty() ? "" : "  [" + safe(w, 120) + "]");
      }
      out += fmt::format("      fix: {}\n", safe(c.fix, 400));
      if (!c.predicted.empty()) out += fmt::format("      predicted: {}\n", safe(c.predicted, 400));
    }
  }
  if (!d.ruled_out.empty()) {
    out += "  ruled out:\n";
    for (const auto& r : d.ruled_out) out += fmt::format("    - {}: {}\n", r.cause, safe(r.why_not));
  }
  if (!d.missing_evidence.empty()) {
    out += "  missing evidence:\n";
    for (const auto& m : d.missing_evidence)
      out += fmt::format("    - {} — run: {}{}\n", safe(m.what), safe(m.command), m.decides.empty() ? "" : " (decides: " + safe(m.decides) + ")");
  }
  return out;
}

}  // namespace scalescope::diagnose
