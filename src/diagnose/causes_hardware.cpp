// Assessors of the hardware and topology causes: NVLink, PCIe links, host-bridge and cross-socket paths, ACS and
// the IOMMU, virtual machines, hidden GPUs, GPUDirect RDMA.

#include <algorithm>
#include <map>
#include <set>

#include "diagnose/causes_util.h"

namespace scalescope::diagnose {
namespace {

using namespace detail;

bool uniform_nvswitch_board(const topo::GpuSpec* gpu) {
  // HGX/DGX boards whose GPUs all meet through NVSwitch: every pair gets the same NV#. (DGX-1's V100 SXM2 hybrid cube
  // mesh mixes NV1 and NV2 by design, so it is not one of them.)
  return gpu && gpu->form == topo::GpuForm::sxm && gpu->nvlink_gen >= 3;
}

std::string pair_text(const LinkClass& l) { return l.a + "–" + l.b + " " + l.token; }

}  // namespace

std::optional<Assessment> assess_nvlink_degraded(const Context& ctx) {
  Assessment a = start("nvlink-degraded");
  double score = 0;
  // Per GPU: links the listing shows inactive (nvidia-smi nvlink -s "<inactive>"). Links missing from a listing are
  // not counted as down: a paste cut short ("Link 0: 25 GB/s ……") lists fewer links than the GPU has.
  std::map<std::string, std::pair<int, int>> up_of;  // gpu → (active, listed)
  std::map<std::string, const Provenance*> first;
  for (const auto& n : ctx.facts.of<NvlinkState>()) {
    auto& [up, all] = up_of[n.fact.gpu];
    ++all;
    up += n.fact.active ? 1 : 0;
    if (!n.fact.active || !first.count(n.fact.gpu)) first[n.fact.gpu] = &n.where;
  }
  // The links a board wires by design: all of them on SXM modules; on PCIe cards only those its bridges carry. The die
  // has more ports (NVLink 1: 4, 2: 6, 3: 12, 4 and 5: 18), and a tool lists the unwired ones as inactive.
  const topo::GpuSpec* g0 = ctx.gpu;
  const int die_ports = !g0 ? 0 : g0->nvlink_gen == 1 ? 4 : g0->nvlink_gen == 2 ? 6 : g0->nvlink_gen == 3 ? 12 : g0->nvlink_gen >= 4 ? 18 : 0;
  const int wired = !g0 ? 0
                    : (g0->form == topo::GpuForm::sxm || g0->form == topo::GpuForm::superchip) ? g0->nvlink_links
                                                                                                : g0->bridge_links;
  for (const auto& [g, c] : up_of) {
    if (c.first >= c.second) continue;
    const int inactive = c.second - c.first;
    if (g0 && die_ports > wired && wired > 0 && inactive <= die_ports - wired && (c.first == 0 || c.first >= wired)) {
      a.against.push_back(line(fmt::format("{}: {} NVLink(s) listed inactive — {} wires {} of its die's {} NVLinks, so {} are "
                                           "inactive by design, not down",
                                           g, inactive, g0->model, wired, die_ports, die_ports - wired),
                               *first[g]));
      continue;
    }
    const int links = ctx.gpu && ctx.gpu->nvlink_links > 0 ? std::max(ctx.gpu->nvlink_links, c.second) : c.second;
    a.evidence.push_back(line(fmt::format("{}: {} of its {} NVLinks inactive", g, c.second - c.first, links), *first[g]));
    score = std::max(score, 0.8);
  }
  // NV# counts: on NVSwitch boards every pair has the same count; fewer on some pairs means links down.
  const auto pairs = ctx.job_pairs();
  std::map<int, int> count_of;
  for (const auto& p : pairs)
    if (p.fact.nvlinks > 0) ++count_of[p.fact.nvlinks];
  if (uniform_nvswitch_board(ctx.gpu) && count_of.size() > 1) {
    const int usual = std::max_element(count_of.begin(), count_of.end(), [](auto& x, auto& y) { return x.second < y.second; })->first;
    for (const auto& p : pairs)
      if (p.fact.nvlinks > 0 && p.fact.nvlinks < usual) {
        if (a.evidence.size() < 6)
          a.evidence.push_back(line(fmt::format("{} while the other pairs of this {} board have NV{}", pair_text(p.fact),
                                                ctx.gpu->model, usual),
                                    p.where));
        score = std::max(score, 0.7);
      }
    if (score > 0 && ctx.gpu) {
      const double full = topo::expected_path_busbw(ctx.gpu, topo::Link{topo::LinkClass::nvlink, usual}).gbps;
      int worst = usual;
      for (const auto& [n, c] : count_of) worst = std::min(worst, n);
      const double low = topo::expected_path_busbw(ctx.gpu, topo::Link{topo::LinkClass::nvlink, worst}).gbps;
      if (full > 0) {
        a.cost.ceiling_gbps = full;
        a.cost.measured_gbps = low;
        a.cost.share = 1 - low / full;
        a.cost.text = fmt::format("a ring through the NV{} pair runs at about {} instead of {} (−{})", worst, gbps(low),
                                  gbps(full), percent(1 - low / full));
      }
    }
  }
  // Error and replay counters.
  for (const auto& c : ctx.facts.of<NvlinkCounter>())
    if (c.fact.value > 0) {
      if (a.evidence.size() < 8)
        a.evidence.push_back(line(fmt::format("{} link {}: {} = {}", c.fact.gpu, c.fact.link, c.fact.counter, c.fact.value), c.where));
      score = std::max(score, 0.35);
    }
  if (score == 0) {
    if (a.against.empty()) return std::nullopt;
    a.ruled_out = true;
    a.why_not = a.against.front().says;
    return a;
  }
  a.score = score;
  a.summary = "NVLink runs with fewer links (or errors) than the GPUs have: the ring runs at the slowest pair's speed";
  return a;
}

std::optional<Assessment> assess_pcie_link_degraded(const Context& ctx) {
  Assessment a = start("pcie-link-degraded");
  double score = 0;
  double worst_ratio = 1;
  for (const auto& p : ctx.facts.of<PcieLinkState>()) {
    const auto& f = p.fact;
    const auto link = pcie_reading(ctx, p);
    const int cap_w = link.cap_width, cap_g = link.cap_gen, cur_w = link.cur_width, cur_g = link.cur_gen;
    std::string name = f.device + (f.device_name ? " (" + *f.device_name + ")" : "");
    if (f.max_width && f.device_max_width && *f.max_width < *f.device_max_width) {
      a.evidence.push_back(line(fmt::format("{}: the slot allows x{} of the device's x{}", name, *f.max_width, *f.device_max_width), p.where));
      score = std::max(score, 0.75);
      worst_ratio = std::min(worst_ratio, double(*f.max_width) / *f.device_max_width);
    } else if (cur_w > 0 && cap_w > 0 && cur_w < cap_w) {
      a.evidence.push_back(line(fmt::format("{}: link width x{} of x{}", name, cur_w, cap_w), p.where));
      score = std::max(score, 0.7);
      worst_ratio = std::min(worst_ratio, double(cur_w) / cap_w);
    }
    if (f.max_gen && f.device_max_gen && *f.max_gen < *f.device_max_gen) {
      a.evidence.push_back(line(fmt::format("{}: the host allows PCIe Gen{} of the device's Gen{}", name, *f.max_gen, *f.device_max_gen), p.where));
      score = std::max(score, 0.6);
      worst_ratio = std::min(worst_ratio, topo::pcie_lane_gbps(*f.max_gen) / topo::pcie_lane_gbps(*f.device_max_gen));
    } else if (cur_g > 0 && cap_g > 0 && cur_g < cap_g) {
      if (link.busy) {
        a.evidence.push_back(line(fmt::format("{}: PCIe Gen{} of Gen{} while busy", name, cur_g, cap_g), p.where));
        score = std::max(score, 0.6);
        worst_ratio = std::min(worst_ratio, topo::pcie_lane_gbps(cur_g) / topo::pcie_lane_gbps(cap_g));
      } else {
        a.against.push_back(line(fmt::format("{}: Gen{} of Gen{}, read while idle (GPUs lower the generation when idle)", name, cur_g, cap_g), p.where));
        score = std::max(score, 0.2);
        a.needs.push_back({"the PCIe generation while the GPU is busy", "nvidia-smi -q -d PCIE   (during a job)",
                           "a link trained down (pcie-link-degraded) or idle power saving"});
      }
    }
  }
  if (score == 0) return std::nullopt;
  // On a job whose GPUs talk over NVLink, the PCIe link carries only host↔device copies.
  const auto pairs = ctx.job_pairs();
  const bool all_nvlink = !pairs.empty() && std::all_of(pairs.begin(), pairs.end(), [](const auto& p) { return p.fact.nvlinks > 0; });
  if (all_nvlink) {
    score *= 0.6;
    a.against.push_back(line("the job's GPUs talk over NVLink: the PCIe link carries only host↔device copies", pairs.front().where));
  }
  a.score = score;
  a.cost.share = 1 - worst_ratio;
  a.cost.text = fmt::format("the slowest link carries {} of its capability", percent(worst_ratio));
  a.summary = "a PCIe link runs below what the GPU and slot support";
  return a;
}

namespace {

// The host-bridge and cross-socket assessments share this: the job's GPU pairs of one class family, with no NVLink.
std::optional<Assessment> host_path(const Context& ctx, bool sys) {
  Assessment a = start(sys ? "cross-socket-path" : "pcie-host-bridge-path");
  auto wanted = [&](const LinkClass& l) {
    return sys ? l.token == "SYS" || l.token == "SOC" : l.token == "PHB" || l.token == "NODE";
  };
  std::vector<Seen<LinkClass>> hits;
  for (const auto& p : ctx.job_pairs())
    if (p.fact.nvlinks == 0 && wanted(p.fact)) hits.push_back(p);
  double score = 0;
  if (!hits.empty()) {
    score = ctx.job_gpus_from ? 0.55 : 0.45;
    if (ctx.job_gpus_from) a.evidence.push_back(*ctx.job_gpus_from);
    for (std::size_t i = 0; i < hits.size() && i < 4; ++i)
      a.evidence.push_back(line(fmt::format("{}: {} — no NVLink, {}", hits[i].fact.a + "–" + hits[i].fact.b, hits[i].fact.token,
                                            sys ? "the path crosses the CPU interconnect between sockets"
                                                : "the path crosses the CPU's PCIe host bridge(s)"),
                                hits[i].where));
    // A better class elsewhere in the matrix: the job could have used it.
    std::set<std::string> better;
    for (const auto& l : ctx.links)
      if (l.fact.a_is_gpu && l.fact.b_is_gpu && (l.fact.nvlinks > 0 || l.fact.token == "PIX" || l.fact.token == "PXB"))
        better.insert(l.fact.a + "–" + l.fact.b + " " + l.fact.token);
    if (!better.empty()) a.fix = "use GPUs joined by " + *better.begin() + (better.size() > 1 ? " (or another such pair)" : "") +
                                 "; " + a.fix;
  }
  // NCCL's own topology search names the path type.
  for (const auto& g : ctx.facts.of<GraphSearch>()) {
    const bool hit = sys ? g.fact.type_intra == "SYS" : g.fact.type_intra == "PHB" || g.fact.type_intra == "NODE";
    if (hit) {
      a.evidence.push_back(line("NCCL's graph search found intra-node paths of type " + g.fact.type_intra, g.where));
      score = std::max(score, 0.5);
    }
  }
  bool local_pair_slower = false;
  // The text compares two paths. Without peer-to-peer (GeForce boards, P2P disabled), NCCL stages every transfer through
  // host memory; two GPUs under one PCIe switch then share the switch's single uplink to the CPU for both GPUs' staged
  // copies, while GPUs on different sockets or root ports each use their own — so the switch-local pair is the slower
  // one, and the host bridge's path is what carries the traffic (PCIe: both copies cross one x16 uplink).
  for (const auto& c : ctx.facts.of<Claim>())
    if (c.fact.kind == "slower-path") {
      const bool local_slower = c.fact.detail == "local<far";
      const bool no_p2p = (ctx.gpu && !ctx.gpu->pcie_p2p) || ctx.expected.link.p2p == std::optional<bool>(false);
      if (local_slower && !sys) {
        a.evidence.push_back(line(std::string("the text says the pair under one PCIe switch (or one NUMA node) is slower than a pair "
                                              "across sockets") +
                                      (no_p2p ? ": without peer-to-peer on " + (ctx.gpu ? std::string(ctx.gpu->model) : std::string("these GPUs")) +
                                                    " every transfer is staged through host memory, and the two GPUs under one switch "
                                                    "share its single uplink to the CPU for it"
                                              : ": traffic between them goes up through the host bridge rather than across the switch"),
                                  c.where));
        score = std::max(score, no_p2p ? 0.6 : 0.45);
        local_pair_slower = true;
      } else if (local_slower && sys) {
        a.against.push_back(line("the text says the pair across sockets is the faster one", c.where));
        score *= 0.3;
      }
    }
  if (score == 0) return std::nullopt;
  // Cost: the class's ceiling against a switch path on the same GPU.
  const auto* gpu = ctx.gpu;
  const topo::Link here = sys ? topo::Link{topo::LinkClass::sys, 0} : topo::Link{topo::LinkClass::phb, 0};
  const auto ceiling = topo::expected_path_busbw(gpu, here);
  const auto sw = topo::expected_path_busbw(gpu, topo::Link{topo::LinkClass::pix, 0});
  if (ceiling.gbps > 0) {
    a.cost.ceiling_gbps = ceiling.gbps;
    a.cost.text = fmt::format("ceiling about {} ({}){}", gbps(ceiling.gbps), ceiling.basis,
                              sw.gbps > ceiling.gbps ? fmt::format(", against {} through one PCIe switch", gbps(sw.gbps)) : "");
  }
  if (gpu && gpu->nvlink_links == 0 && gpu->bridge_links == 0)
    a.evidence.push_back(line(std::string(gpu->model) + " has no NVLink: PCIe is the only path between these GPUs",
                              ctx.gpu_evidence ? ctx.gpu_evidence->where : Provenance{}));
  if (!sys) {
    a.summary = "the job's GPUs reach each other only through the CPU's PCIe host bridges, which forward peer traffic "
                "slower than a PCIe switch — and P2P through them can be slower than staging through host memory";
    a.needs.push_back({"NCCL's transport for this pair (Channel … via P2P/… or SHM)", "NCCL_DEBUG=INFO <the run>",
                       "whether P2P crosses the host bridges (then NCCL_P2P_LEVEL=PXB may help) or SHM is used already"});
  } else {
    a.summary = "the job's GPUs sit on different CPU sockets: peer traffic is staged through host memory across the "
                "CPU interconnect";
  }
  if (local_pair_slower)
    a.summary = "the GPUs under one PCIe switch reach each other through the CPU's host bridge (host-memory staging over the "
                "switch's one shared uplink), so that pair is slower than GPUs on separate root ports";
  // In a virtual machine the path classes are the hypervisor's picture, not the hardware's.
  if (!ctx.facts.of<HypervisorSeen>().empty() && score > 0) {
    a.against.push_back(line("a virtual machine: " + ctx.facts.of<HypervisorSeen>().front().fact.what +
                                 " — its topology matrix is the hypervisor's, not the PCIe tree's",
                             ctx.facts.of<HypervisorSeen>().front().where));
    score *= 0.7;
  }
  // A hang is not what a slow path does: the path sets a ceiling, it does not stop the job.
  for (const auto& c : ctx.facts.of<Claim>())
    if (c.fact.kind == "hang") {
      a.against.push_back(line("the job hangs — a path through the host is slower, it does not stop the job", c.where));
      score *= 0.5;
      break;
    }
  // Measured bandwidth at the switch-path level speaks against the path being the limit.
  for (const auto& p : ctx.plateaus)
    if (ctx.span != Span::multi_node && sw.gbps > 0 && p.fact.gbps >= 0.8 * sw.gbps) {
      a.against.push_back(line(fmt::format("measured {} already reaches a switch path's ceiling", gbps(p.fact.gbps)), p.where));
      score *= 0.5;
    }
  a.score = score;
  return a;
}

}  // namespace

std::optional<Assessment> assess_pcie_host_bridge_path(const Context& ctx) { return host_path(ctx, false); }
std::optional<Assessment> assess_cross_socket_path(const Context& ctx) { return host_path(ctx, true); }

std::optional<Assessment> assess_p2p_blocked_acs_iommu(const Context& ctx) {
  Assessment a = start("p2p-blocked-acs-iommu");
  double score = 0;
  int redirecting = 0, clean = 0;
  for (const auto& c : ctx.facts.of<AcsControl>()) {
    if (c.fact.req_redir || c.fact.cmplt_redir) {
      ++redirecting;
      if (a.evidence.size() < 5) {
        std::string who = c.fact.device.empty() ? "a PCIe bridge (the paste does not name it)" : c.fact.device;
        if (c.fact.device_name) who += " (" + *c.fact.device_name + ")";
        a.evidence.push_back(line(fmt::format("{}: ACS {}{}{} — peer requests are redirected up to the root complex",
                                              who, c.fact.req_redir ? "ReqRedir+ " : "", c.fact.cmplt_redir ? "CmpltRedir+ " : "",
                                              c.fact.upstream_fwd ? "UpstreamFwd+" : ""),
                                  c.where));
      }
    } else {
      ++clean;
    }
  }
  if (redirecting > 0) score = 0.8;
  else if (clean > 0)
    a.against.push_back(line(fmt::format("{} bridge(s) with ACS redirection off", clean), ctx.facts.of<AcsControl>().front().where));
  for (const auto& i : ctx.facts.of<IommuMode>())
    if (i.fact.mode == "translated" || i.fact.mode == "on") {
      a.evidence.push_back(line("IOMMU in translated mode: peer DMA goes through address translation", i.where));
      score = std::max(score, 0.4);
    } else if (i.fact.mode == "passthrough" || i.fact.mode == "off") {
      a.against.push_back(line("IOMMU " + i.fact.mode, i.where));
    }
  // P2P slower than staging through the host for a pair.
  std::map<std::pair<int, int>, std::pair<std::optional<double>, std::optional<double>>> bw;  // (on, off)
  std::map<std::pair<int, int>, const Provenance*> bw_where;
  for (const auto& m : ctx.facts.of<P2pMeasurement>())
    if (m.fact.gbps && !m.fact.bidirectional && m.fact.a != m.fact.b) {
      auto& e = bw[{m.fact.a, m.fact.b}];
      (m.fact.peer_access ? e.first : e.second) = m.fact.gbps;
      bw_where[{m.fact.a, m.fact.b}] = &m.where;
    }
  for (const auto& [pair, e] : bw)
    if (e.first && e.second && *e.first < 0.8 * *e.second) {
      if (a.evidence.size() < 8)
        a.evidence.push_back(line(fmt::format("GPU {} → {}: {} with P2P against {} staged through the host", pair.first,
                                              pair.second, gbps(*e.first), gbps(*e.second)),
                                  *bw_where[pair]));
      score = std::max(score, redirecting ? 0.85 : 0.6);
    }
  // doctor's A/B: the same all-reduce faster with NCCL_P2P_DISABLE=1 than with P2P, on this machine.
  for (const auto& c : ctx.variants.comparisons)
    if (c.dim == "p2p_probe" && c.worse_value == "on" && c.better_value == "off" && c.beyond_noise) {
      a.evidence.push_back(line(fmt::format("{} with P2P against {} with NCCL_P2P_DISABLE=1: peer-to-peer is slower than the path "
                                            "around it", figure(*c.worse.m), figure(*c.better.m)),
                                *c.worse.where));
      score = std::max(score, redirecting ? 0.85 : 0.65);
    }
  // Peer access that CUDA reports but that moves wrong bytes (a probe's checked copy): the redirection's signature.
  for (const auto& st : ctx.facts.of<P2pStatus>())
    if (st.fact.status == "copy failed") {
      a.evidence.push_back(line(fmt::format("{} → {}: CUDA reports peer access, but the peer copy arrived wrong", st.fact.a, st.fact.b),
                                st.where));
      score = std::max(score, 0.85);
    }
  // A job that hangs where NCCL would use PCIe peer-to-peer, and works with P2P off: the signature of peer traffic
  // that ACS redirection or the IOMMU swallows (NCCL's troubleshooting guide names ACS first for such hangs).
  std::optional<EvidenceLine> hang;
  for (const auto& c : ctx.facts.of<Claim>())
    if (c.fact.kind == "hang" && !hang) hang = line("the poster: it hangs" + (c.fact.detail.empty() ? "" : " (" + c.fact.detail + ")"), c.where);
  for (const auto& st : ctx.facts.of<Stall>())
    if (!hang) hang = line(st.fact.what + " (hung, stopped, or cut there)", st.where);
  bool pcie_p2p_path = false;
  std::optional<EvidenceLine> path_line;
  for (const auto& p : ctx.job_pairs())
    if (p.fact.nvlinks == 0 && (p.fact.token == "PIX" || p.fact.token == "PXB" || p.fact.token == "PHB" || p.fact.token == "NODE")) {
      pcie_p2p_path = true;
      if (!path_line) path_line = line(p.fact.a + "–" + p.fact.b + " " + p.fact.token + ": peer-to-peer over PCIe, no NVLink", p.where);
    }
  if (!pcie_p2p_path && ctx.links.empty() && ctx.gpu && ctx.gpu->nvlink_links == 0 && ctx.gpu->bridge_links == 0 && ctx.gpu->pcie_p2p) {
    pcie_p2p_path = true;  // no matrix: GPUs without NVLink that allow PCIe P2P talk over PCIe P2P
    path_line = line(std::string(ctx.gpu->model) + ": no NVLink, and the driver allows peer-to-peer over PCIe: NCCL uses P2P "
                     "over PCIe between them",
                     ctx.gpu_evidence ? ctx.gpu_evidence->where : Provenance{});
  }
  std::optional<EvidenceLine> p2p_off_works, works_on_sys;
  for (const auto& c : ctx.facts.of<Claim>()) {
    const bool p2p_setting = c.fact.detail.find("NCCL_P2P_DISABLE=1") != std::string::npos ||
                             c.fact.detail.find("NCCL_P2P_LEVEL") != std::string::npos ||
                             c.fact.detail.find("P2P") != std::string::npos;
    if ((c.fact.kind == "works-with" || c.fact.kind == "slow-with") && p2p_setting && !p2p_off_works)
      p2p_off_works = line("the poster: it works with " + c.fact.detail + " — peer-to-peer is what fails", c.where);
    if ((c.fact.kind == "works-on-path" && c.fact.detail.find("SYS") != std::string::npos) ||
        (c.fact.kind == "fails-on-path" && c.fact.detail.find("SYS") != std::string::npos && c.fact.detail.find("other") != std::string::npos))
      works_on_sys = line("the poster: it works only across sockets (SYS), where NCCL does not use P2P by default", c.where);
  }
  if (hang && (pcie_p2p_path || p2p_off_works)) {
    a.evidence.push_back(*hang);
    if (path_line) a.evidence.push_back(*path_line);
    double sc = pcie_p2p_path ? 0.45 : 0.35;
    if (p2p_off_works) {
      a.evidence.push_back(*p2p_off_works);
      raise(sc, 0.25);
    }
    if (works_on_sys) {
      a.evidence.push_back(*works_on_sys);
      raise(sc, 0.1);
    }
    score = std::max(score, sc);
    a.needs.push_back({"the ACS and IOMMU state of the PCIe path between the GPUs",
                       "sudo lspci -vvv | grep -e '^[0-9a-f]' -e ACSCtl; dmesg | grep -i -e DMAR -e IOMMU",
                       "ACS redirection or IOMMU translation (fix the platform) against a driver or NCCL bug"});
    a.needs.push_back({"peer-to-peer copies between the GPUs", "p2pBandwidthLatencyTest (CUDA samples)",
                       "P2P that hangs, corrupts or runs far slower than staging through the host"});
  }
  if (score == 0) {
    if (a.against.empty()) return std::nullopt;
    a.ruled_out = true;
    a.why_not = "ACS redirection is off on the bridges shown";
    return a;
  }
  a.score = score;
  a.summary = "PCIe ACS redirection (or the IOMMU) sends peer-to-peer traffic through the root complex instead of "
              "across the switch: P2P and GPUDirect RDMA slow down or fail";
  a.cost.text = "peer traffic at root-complex speed, or hangs and crashes with GPUDirect RDMA";
  if (redirecting > 0)
    a.needs.push_back({"which bridges carry ACS redirection (bus ids) and whether they are the switches above the GPUs "
                       "and NICs",
                       "sudo lspci -vvv | grep -e '^[0-9a-f]' -e ACSCtl", "the bridges to clear"});
  return a;
}

std::optional<Assessment> assess_virtualised_topology(const Context& ctx) {
  Assessment a = start("virtualised-topology");
  double score = 0;
  int signals = 0;
  std::set<std::string> hypervisors_said;
  for (const auto& h : ctx.facts.of<HypervisorSeen>()) {
    if (!hypervisors_said.insert(h.fact.what).second) continue;  // one sign, however often the text repeats it
    if (hypervisors_said.size() > 1) {
      a.evidence.push_back(line("a hypervisor: " + h.fact.what, h.where));
      continue;  // several words for one virtual machine are one signal
    }
    a.evidence.push_back(line("a hypervisor: " + h.fact.what, h.where));
    // Renting a cloud instance is no fault by itself: it needs a symptom (a flattened topology, a capability lost) to
    // be the cause; a hypervisor the evidence itself shows weighs more.
    const bool cloud_only = h.fact.what.rfind("a cloud instance", 0) == 0;
    score = std::max(score, cloud_only ? 0.25 : 0.5);
    ++signals;
  }
  if (const auto* t = ctx.setting("NCCL_TOPO_FILE")) {
    a.evidence.push_back(line("NCCL_TOPO_FILE=" + t->value + ": NCCL plans by a topology description, as virtual machines need", t->where));
    score = std::max(score, 0.45);
    ++signals;
  }
  for (const auto& s : ctx.variants.spreads)
    if (s.dim == "topology") {
      a.evidence.push_back(line(fmt::format("{} with topology {} against {} with {} ({}× apart{}): on the same hardware the "
                                            "topology NCCL is given, not the fabric, sets the bandwidth",
                                            figure(*s.best.m), s.best.m->dims.at("topology"), figure(*s.worst.m),
                                            s.worst.m->dims.at("topology"), fmt::format("{:.1f}", s.factor),
                                            s.fixed.empty() ? "" : ", " + conditions_text(s.fixed)),
                                *s.best.where));
      a.evidence.push_back(line("the slowest: " + row_name(*s.worst.m) + " " + figure(*s.worst.m), *s.worst.where));
      score = std::max(score, s.factor >= 3 ? 0.65 : 0.5);
      ++signals;
      if (!a.cost.measured_gbps && (s.best.m->unit == "GB/s")) {
        a.cost.measured_gbps = s.worst.m->value;
        a.cost.ceiling_gbps = s.best.m->value;
        a.cost.text = fmt::format("{} with the worst description against {} with the best", figure(*s.worst.m), figure(*s.best.m));
      }
      break;
    }
  // The same topology description, another NCCL version, a large factor: what NCCL detects in the guest changed.
  for (const auto& s : ctx.variants.spreads)
    if (s.dim == "nccl_version" && score > 0) {
      a.evidence.push_back(line(fmt::format("{} with NCCL {} against {} with NCCL {} ({}× apart{}): the newer NCCL no longer "
                                            "detects a capability inside the guest — typically GPUDirect RDMA",
                                            figure(*s.best.m), s.best.m->dims.at("nccl_version"), figure(*s.worst.m),
                                            s.worst.m->dims.at("nccl_version"), fmt::format("{:.1f}", s.factor),
                                            s.fixed.empty() ? "" : ", " + conditions_text(s.fixed)),
                                *s.worst.where));
      raise(score, 0.05);
      a.needs.push_back({"whether GPUDirect RDMA is used on the slow runs", "NCCL_DEBUG=INFO <the slow run> | grep -e GDRDMA -e 'GPU Direct RDMA'",
                         "GPUDirect RDMA undetected in the guest (gdr-unavailable under the VM) against another capability"});
      break;
    }
  // A matrix no physical server has: ≥ 4 GPUs, every GPU pair PHB, one affinity for all.
  const auto pairs = ctx.job_pairs();
  if (ctx.matrix_gpus.size() >= 4 && !pairs.empty() &&
      std::all_of(pairs.begin(), pairs.end(), [](const auto& p) { return p.fact.token == "PHB"; })) {
    std::set<std::string> affinities;
    for (const auto& d : ctx.facts.of<DeviceAffinity>())
      if (d.fact.device.rfind("GPU", 0) == 0 && d.fact.cpus) affinities.insert(*d.fact.cpus);
    if (affinities.size() <= 1) {
      a.evidence.push_back(line(fmt::format("all {} GPUs behind one host bridge (every pair PHB){}: a flattened, "
                                            "hypervisor-made PCI tree",
                                            ctx.matrix_gpus.size(), affinities.size() == 1 ? " with one CPU affinity" : ""),
                                pairs.front().where));
      score = std::max(score, 0.45);
      ++signals;
    }
  }
  if (score == 0) return std::nullopt;
  raise(score, 0.1 * (signals - 1));
  a.score = score;
  if (a.cost.text.empty())
    a.cost.text = "not measurable from this evidence: NCCL plans rings, NIC use and GPUDirect RDMA by the picture it is "
                  "given, so a wrong picture can cost a large factor of bandwidth (measure with and without a faithful "
                  "NCCL_TOPO_FILE)";
  a.summary = "the job runs where NCCL cannot see the real PCI topology (a virtual machine, or a topology description "
              "it is given): how NCCL plans paths — and whether it detects GPUDirect RDMA — depends on that picture";
  a.needs.push_back({"NCCL's view of the network paths", "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,NET <the run>",
                     "whether GPUDirect RDMA is detected (/GDRDMA on NET/IB channels) and which NICs each GPU uses"});
  return a;
}

std::optional<Assessment> assess_gpu_hidden(const Context& ctx) {
  Assessment a = start("gpu-hidden");
  double score = 0;
  std::optional<int> exist, visible;
  const Provenance *exist_at = nullptr, *visible_at = nullptr;
  for (const auto& c : ctx.facts.of<GpuCount>()) {
    if (c.fact.scope == "exist") exist = std::max(exist.value_or(0), c.fact.count), exist_at = &c.where;
    if (c.fact.scope == "cuda" || c.fact.scope == "nccl") visible = c.fact.count, visible_at = &c.where;
  }
  if (exist && visible && *visible < *exist) {
    a.evidence.push_back(line(fmt::format("{} GPU(s) exist", *exist), *exist_at));
    a.evidence.push_back(line(fmt::format("{} visible to CUDA/NCCL", *visible), *visible_at));
    score = ctx.setting("CUDA_VISIBLE_DEVICES") ? 0.4 : 0.7;
    if (ctx.setting("CUDA_VISIBLE_DEVICES"))
      a.against.push_back(line("CUDA_VISIBLE_DEVICES restricts the job on purpose", ctx.setting("CUDA_VISIBLE_DEVICES")->where));
  }
  // Ranks of one node each confined by the scheduler to one GPU (`srun --gpus-per-task 1`: a device cgroup per task):
  // no rank can reach another's GPU, so NCCL has no P2P or NVLink between them and copies through host memory.
  bool confined = false;
  // (Unless NCCL's own log shows the ranks joined peer to peer: then each rank does reach the others' GPUs.)
  bool p2p_seen = false;
  for (const auto& t : ctx.facts.of<TransportUse>()) p2p_seen = p2p_seen || t.fact.kind == "p2p" || t.fact.kind == "nvls";
  for (const auto& c : ctx.facts.of<GpuCount>()) {
    if (p2p_seen) break;
    if (c.fact.scope != "task" || c.fact.count != 1 || !ctx.ranks || *ctx.ranks < 2) continue;
    const bool one_node = !ctx.nodes || *ctx.nodes == 1 || *ctx.ranks / std::max(1, *ctx.nodes) >= 2;
    if (!one_node) continue;
    a.evidence.push_back(line(fmt::format("each of the {} ranks is confined to its own GPU (a device cgroup per task): the "
                                          "ranks' GPUs are hidden from each other, so NCCL cannot use P2P or NVLink between "
                                          "them and stages through host memory",
                                          *ctx.ranks),
                              c.where));
    score = std::max(score, 0.5);
    confined = true;
    break;
  }
  for (const auto& x : ctx.facts.of<XidEvent>())
    if (x.fact.code == 79 || x.fact.code == 74 || x.fact.code == 48) {
      a.evidence.push_back(line(fmt::format("Xid {} on {}: {}", x.fact.code, x.fact.bus_id, x.fact.text), x.where));
      score = std::max(score, x.fact.code == 79 ? 0.75 : 0.4);
    }
  if (score == 0) return std::nullopt;
  a.score = score;
  const bool fewer = exist && visible && *visible < *exist;
  a.summary = !fewer && confined ? "each rank sees only its own GPU: the GPUs are hidden from each other, so NCCL cannot "
                                   "join them directly"
                                 : "the job sees fewer GPUs than the machine has";
  a.cost.text = !fewer && confined ? "P2P and NVLink unused between the ranks: their traffic goes through host memory"
              : exist && visible && *visible < *exist
                    ? fmt::format("{} of {} GPUs unused by the job", *exist - *visible, *exist)
                    : "a GPU that fell off the bus stops every job that uses it (and the node's others, until it is reset)";
  return a;
}

std::optional<Assessment> assess_gdr_unavailable(const Context& ctx) {
  Assessment a = start("gdr-unavailable");
  double score = 0;
  int disabled = 0, enabled = 0;
  std::set<std::string> hcas;
  for (const auto& g : ctx.facts.of<GdrState>()) {
    (g.fact.enabled ? enabled : disabled) += 1;
    if (!g.fact.enabled && hcas.insert(g.fact.hca).second && a.evidence.size() < 4)
      a.evidence.push_back(line("GPU Direct RDMA disabled for HCA " + g.fact.hca, g.where));
  }
  if (disabled > 0) score = enabled == 0 ? 0.85 : 0.6;
  bool ib_used = false, ib_gdr = false, ib_no_gdr = false;
  for (const auto& t : ctx.facts.of<TransportUse>()) {
    if (t.fact.kind != "net" || t.fact.transport.find("Socket") != std::string::npos) continue;
    ib_used = true;
    (t.fact.gdrdma ? ib_gdr : ib_no_gdr) = true;
  }
  if (ib_gdr && ib_no_gdr) {
    // Some connections with GPUDirect RDMA and some without: one node (or one direction) lacks it.
    std::set<std::string> with, without;
    for (const auto& t : ctx.facts.of<TransportUse>()) {
      if (t.fact.kind != "net" || t.fact.transport.find("Socket") != std::string::npos) continue;
      const std::string who = t.fact.host ? "on " + *t.fact.host
                                          : fmt::format("rank {}'s {} side", t.fact.direction == "receive" ? t.fact.example_to : t.fact.example_from,
                                                        t.fact.direction.empty() ? "network" : t.fact.direction);
      if (t.fact.gdrdma) with.insert(who);
      else if (without.insert(who).second && a.evidence.size() < 6)
        a.evidence.push_back(line(fmt::format("{} connection(s) over {} {} without /GDRDMA", t.fact.connections, t.fact.transport, who), t.where));
    }
    for (const auto& t : ctx.facts.of<TransportUse>())
      if (t.fact.gdrdma) {
        a.evidence.push_back(line("while " + t.fact.transport + " connections elsewhere use /GDRDMA: GPUDirect RDMA works on one "
                                  "node or side and not on the other",
                                  t.where));
        break;
      }
    score = std::max(score, 0.65);
    a.needs.push_back({"the peer-memory module and PCIe placement on the node without GPUDirect RDMA",
                       "on that node: lsmod | grep -e nvidia_peermem -e nv_peer_mem; nvidia-smi topo -m",
                       "a missing module against a NIC too far from the GPU (NCCL_NET_GDR_LEVEL)"});
  } else if (ib_used && !ib_gdr) {
    for (const auto& t : ctx.facts.of<TransportUse>())
      if (t.fact.kind == "net" && t.fact.transport.find("Socket") == std::string::npos && !t.fact.gdrdma) {
        a.evidence.push_back(line(fmt::format("{} connections over {} without /GDRDMA", t.fact.connections, t.fact.transport), t.where));
        break;
      }
    score = std::max(score, 0.7);
  }
  if (ib_gdr && !ib_no_gdr) {
    for (const auto& t : ctx.facts.of<TransportUse>())
      if (t.fact.gdrdma) {
        a.against.push_back(line(t.fact.transport + " connections use /GDRDMA", t.where));
        break;
      }
    if (score == 0) return std::nullopt;
    score *= 0.6;
  }
  if (score == 0) return std::nullopt;
  if (ctx.span == Span::single_node && !ib_used) {
    // NCCL reports each HCA's GDR state at start-up whether or not the job ever uses the network.
    a.ruled_out = true;
    a.why_not = "a single-node job: NCCL's network carries no collective traffic, so GPUDirect RDMA does not matter (" +
                ctx.span_evidence.front().says + ")";
    return a;
  }
  if (const auto* s = ctx.setting("NCCL_NET_GDR_LEVEL"); s && s->judgement.turns_off == "gdr") {
    a.evidence.push_back(line(s->name + "=" + s->value + " turns GPUDirect RDMA off", s->where));
    a.fix = "remove " + s->name + "=" + s->value + "; " + a.fix;
  }
  for (const auto& v : ctx.facts.of<NcclVersion>()) {
    int maj = 0, min = 0, pat = 0;
    if (std::sscanf(v.fact.version.c_str(), "%d.%d.%d", &maj, &min, &pat) >= 2 &&
        (maj < 2 || (maj == 2 && (min < 22 || (min == 22 && pat <= 3))))) {
      a.evidence.push_back(line("NCCL " + v.fact.version + ": versions up to 2.22.3 detect only the legacy nv_peer_mem "
                                "module, not nvidia-peermem",
                                v.where));
      a.fix = "with nvidia-peermem loaded, use NCCL 2.23.4 or later (or load nv_peer_mem); " + a.fix;
      break;
    }
  }
  if (ctx.has<HypervisorSeen>()) a.fix += "; in a VM the peer-memory module and ATS/ACS settings must allow GDR in the guest";
  a.score = score;
  a.summary = "InfiniBand/RoCE is used without GPUDirect RDMA: every network message is staged through host memory, "
              "capping inter-node bandwidth far below the NICs";
  a.cost.text = "inter-node bandwidth limited by host-memory staging (often a fraction of the NICs' rate)";
  for (const auto& p : ctx.plateaus)
    if (ctx.span == Span::multi_node) a.cost.measured_gbps = p.fact.gbps;
  a.needs.push_back({"whether a peer-memory module is loaded", "lsmod | grep -e nvidia_peermem -e nv_peer_mem",
                     "a missing module against an NCCL too old to see the new one"});
  return a;
}

}  // namespace scalescope::diagnose
