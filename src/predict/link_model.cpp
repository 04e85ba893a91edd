#include "predict/link_model.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/stats.h"
#include "core/suggest.h"
#include "knowledge/hardware.h"
#include "topo/smi_topo_parser.h"

namespace scalescope::predict {

namespace {

double ring_factor(int n) { return n <= 1 ? 0 : 2.0 * (n - 1) / n; }

// One ring step's latency, seconds: 2 × H200 over NVLink, 8 B all-reduce, 20.7 µs (../shared/anchors.md), which
// a 2-rank ring spends in one step.
constexpr double kNamedAlphaS = 20.7e-6;

}  // namespace

std::optional<double> parse_port_gbit(std::string_view text) {
  const std::string t(text);
  if (t.empty() || t.find_first_not_of("0123456789.eE+-") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || errno == ERANGE || !std::isfinite(v) || !(v >= kMinPortGbit) || v > kMaxPortGbit) return std::nullopt;
  return v;
}

LinkModel LinkModel::from_sweeps(const std::vector<analyze::Sweep>& sweeps, const std::string& source) {
  LinkModel m;
  std::vector<std::string> skipped;
  std::vector<double> halves;  // |out-of-place − in-place| / their sum, rows of ≥ 1 MiB
  for (const auto& sw : sweeps) {
    if (sw.collective != comm::Collective::all_reduce) continue;
    for (const auto& w : sw.warnings) m.warnings_.push_back(sw.source + ": " + w);
    if (!sw.ranks || *sw.ranks < 2) {
      skipped.push_back(sw.source + ": " + (sw.ranks ? "one rank" : "no rank count"));
      continue;
    }
    Table t;
    for (const auto& r : sw.rows) {
      const auto& tm = r.out_of_place.time_us ? r.out_of_place : r.in_place;
      if (r.size_bytes == 0 || !tm.time_us) continue;
      if (!std::isfinite(*tm.time_us) || *tm.time_us <= 0) {  // the parser refuses these; a JSON sweep may hold them
        m.warnings_.push_back(fmt::format("{}: the row of {} B has a time of {} µs; not used", sw.source, r.size_bytes, *tm.time_us));
        continue;
      }
      t.points.emplace_back(static_cast<double>(r.size_bytes), *tm.time_us * 1e-6);
      const auto& a = r.out_of_place.time_us;
      const auto& b = r.in_place.time_us;
      if (r.size_bytes >= (1u << 20) && a && b && std::isfinite(*a) && std::isfinite(*b) && *a > 0 && *b > 0)
        halves.push_back(std::abs(*a - *b) / (*a + *b));
    }
    if (t.points.empty()) {
      skipped.push_back(sw.source + ": no timed row");
      continue;
    }
    std::sort(t.points.begin(), t.points.end());
    m.tables_[*sw.ranks] = std::move(t);
  }
  if (m.tables_.empty())
    throw core::Error(fmt::format("{}: no all-reduce sweep with a rank count ≥ 2 and timed rows{}", source,
                                  skipped.empty() ? "" : " (" + fmt::format("{}", fmt::join(skipped, "; ")) + ")"),
                      "pass `scalescope comm --out` JSON or an all_reduce_perf output from the job's machine");
  std::vector<std::string> ns;
  for (const auto& [n, t] : m.tables_)
    ns.push_back(fmt::format("{} ranks ({} sizes, {:.0f} B – {:.0f} B)", n, t.points.size(), t.points.front().first,
                             t.points.back().first));
  m.description_ = fmt::format("all-reduce measured in {}: {}", source, fmt::join(ns, ", "));
  m.spread_ = std::max(kMinLinkSpread, halves.empty() ? 0.0 : 2 * core::quantile(halves, 0.5));
  return m;
}

LinkModel LinkModel::named(std::string_view name) {
  LinkModel m;
  const auto colon = name.rfind(':');
  const auto usage = [&] {
    return core::UsageError(fmt::format("--link '{}': not a measured file nor a named link", name),
                            "give a comm JSON or nccl-tests output, or GPU:PATH (\"H200:NV18\", \"A100:NV12\", \"RTX 4090:PHB\") "
                            "or net:GBIT (\"net:25\", \"net:400\")");
  };
  if (colon == std::string_view::npos || colon == 0 || colon + 1 >= name.size()) throw usage();
  const std::string left(name.substr(0, colon)), right(name.substr(colon + 1));
  if (left == "net") {
    const auto rate = parse_port_gbit(right);
    if (!rate)
      throw core::UsageError(fmt::format("--link '{}': '{}' is no port's line rate", name, right),
                             fmt::format("give the port's rate in Gb/s, from {:g} to {:g} (\"net:25\", \"net:400\")", kMinPortGbit, kMaxPortGbit));
    const double gbit = *rate;
    m.busbw_gbps_ = topo::nic_busbw_gbps(gbit);
    m.description_ = fmt::format("a {:g} Gb/s network port: {:.1f} GB/s all-reduce busbw (line / 8 × {:.2f})", gbit,
                                 m.busbw_gbps_, topo::kNicBusbwEfficiency);
  } else {
    const auto link = topo::parse_link_token(right);
    if (!link) throw usage();
    std::string note;
    const auto* gpu = gpu_for_link(left, name, link, &note);
    if (!note.empty()) m.assumptions_.push_back(note);
    const auto ceiling = topo::expected_path_busbw(gpu, *link);
    if (!(ceiling.gbps > 0)) throw core::UsageError(fmt::format("--link '{}': {}", name, ceiling.basis), "name another path");
    m.busbw_gbps_ = ceiling.gbps;
    m.description_ = ceiling.basis;
  }
  m.alpha_s_ = kNamedAlphaS;
  m.spread_ = kNamedLinkSpread;
  m.assumptions_.push_back(fmt::format("named link: busbw {:.1f} GB/s at every size above the latency, and {:.1f} µs per ring "
                                       "step (measured on 2 × H200 NVLink only); the band takes that busbw as known to "
                                       "±{:.0f} %", m.busbw_gbps_, kNamedAlphaS * 1e6, 100 * kNamedLinkSpread));
  return m;
}

const topo::GpuSpec* gpu_for_link(const std::string& name, std::string_view link, const std::optional<topo::Link>& path,
                                  std::string* note) {
  if (const auto* g = topo::find_gpu(name)) return g;
  const auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  std::vector<std::string> all;
  std::vector<const topo::GpuSpec*> holding;
  for (const auto& g : topo::gpu_table()) {
    all.emplace_back(g.model);
    if (lower(std::string(g.model)).find(lower(name)) != std::string::npos) holding.push_back(&g);
  }
  // The path decides between the forms of one name: NV18 is the H100 with 18 NVLinks, PHB the PCIe card.
  if (holding.size() > 1 && path) {
    std::vector<const topo::GpuSpec*> fit;
    std::string why;
    if (path->cls == topo::LinkClass::nvlink) {
      for (const auto* g : holding)
        if (g->nvlink_links == path->nvlinks || g->bridge_links == path->nvlinks) fit.push_back(g);
      why = fmt::format("the only one with {} NVLinks", path->nvlinks);
    } else if (path->cls != topo::LinkClass::self && path->cls != topo::LinkClass::unknown) {
      for (const auto* g : holding)
        if (g->form == topo::GpuForm::pcie) fit.push_back(g);
      why = "the only PCIe card of that name";
    }
    if (fit.size() == 1) {
      if (note) *note = fmt::format("'{}' read as '{}': {} in the hardware table (name it to choose another)", name, fit.front()->model, why);
      return fit.front();
    }
  }
  std::vector<std::string> names_held;
  for (const auto* g : holding) names_held.emplace_back(g->model);
  std::string names;
  if (!names_held.empty()) names = fmt::format("{}", fmt::join(names_held, ", "));
  else if (const auto c = core::closest_name(name, all); !c.empty()) names = c;
  throw core::UsageError(
      fmt::format("--link '{}': GPU '{}' is {} the hardware table{}", link, name, holding.size() > 1 ? "more than one model of" : "not in",
                  names.empty() ? "" : fmt::format(" (did you mean {}{}?)", holding.size() > 1 ? "one of: " : "", names)),
      fmt::format("name one model as `scalescope knowledge gpus` lists it, e.g. --link \"{}:{}\"",
                  names_held.empty() ? "H100 SXM5" : names_held.front(), path ? topo::to_string(*path) : "NV18"));
}

LinkModel LinkModel::alpha_beta(double busbw_gbps, const std::string& description) {
  if (!std::isfinite(busbw_gbps) || !(busbw_gbps > 0) || busbw_gbps > 1e5)
    throw core::UsageError(fmt::format("a link's busbw must be a finite figure above 0 and at most 100000 GB/s, not {}", busbw_gbps),
                           "give a measured busbw");
  LinkModel m;
  m.busbw_gbps_ = busbw_gbps;
  m.alpha_s_ = kNamedAlphaS;
  m.spread_ = kMinLinkSpread;
  m.description_ = description;
  m.assumptions_.push_back(fmt::format("busbw {:.1f} GB/s at every size above the latency, {:.1f} µs per ring step", busbw_gbps,
                                       kNamedAlphaS * 1e6));
  return m;
}

double LinkModel::interpolate(const Table& t, double bytes) {
  const auto& p = t.points;
  if (bytes <= p.front().first) return p.front().second;
  if (bytes >= p.back().first) {
    if (p.size() == 1) return p.back().second * bytes / p.back().first;
    // the largest size's bandwidth for the rest
    return p.back().second + (bytes - p.back().first) * (p.back().second / p.back().first);
  }
  const auto hi = std::lower_bound(p.begin(), p.end(), std::make_pair(bytes, 0.0));
  const auto lo = hi - 1;
  const double x0 = std::log(lo->first), x1 = std::log(hi->first), y0 = std::log(lo->second), y1 = std::log(hi->second);
  return std::exp(y0 + (y1 - y0) * (std::log(bytes) - x0) / (x1 - x0));
}

LinkModel LinkModel::with_network(int gpus_per_node, double gbit, int ports) const {
  if (gpus_per_node < 1 || ports < 1 || !std::isfinite(gbit) || !(gbit >= kMinPortGbit) || gbit > kMaxPortGbit)
    throw core::UsageError("a network needs ≥ 1 GPU per node, ≥ 1 port and a line rate above 0",
                           "give --gpus-per-node 8 --network net:400x8");
  LinkModel m = *this;
  m.gpus_per_node_ = gpus_per_node;
  m.net_busbw_gbps_ = ports * topo::nic_busbw_gbps(gbit);
  m.description_ += fmt::format("; between nodes of {} GPUs: {} × {:g} Gb/s port(s), {:.1f} GB/s busbw per node", gpus_per_node,
                                ports, gbit, m.net_busbw_gbps_);
  m.assumptions_.push_back(fmt::format(
      "beyond {} GPUs, per message the faster of NCCL's two algorithms, as its tuner picks: ring (one step per rank; busbw the "
      "lower of the node's inside busbw and {:.1f} GB/s) or tree (one node's latency + 2·⌈log2 nodes⌉ × {:.1f} µs; {:.0f} % of "
      "that busbw)", gpus_per_node, m.net_busbw_gbps_, kNamedAlphaS * 1e6, 100 * kTreeBandwidthShare));
  return m;
}

LinkModel::Cost LinkModel::costs(double bytes, int ranks) const {
  Cost c;
  if (ranks <= 1 || bytes <= 0) return c;
  if (!(gpus_per_node_ > 0 && ranks > gpus_per_node_)) {
    c.ring_s = c.tree_s = inside_s(bytes, ranks);  // one node: NCCL's ring (its tree inside a node is a chain)
    return c;
  }
  const int nodes = (ranks + gpus_per_node_ - 1) / gpus_per_node_;
  const int g = gpus_per_node_;
  double inside_busbw = 1e30;  // GB/s
  if (g >= 2) {
    const double t = inside_s(bytes, g) - inside_s(1, g);
    if (t > 0) inside_busbw = bytes * ring_factor(g) / t / 1e9;
  }
  const double busbw = std::min(inside_busbw, net_busbw_gbps_);
  // Ring over every rank: one step per rank, the slower of the node's inside busbw and its network.
  const double ring_latency = (g >= 2 ? inside_s(1, g) / (g - 1) : kNamedAlphaS) * (ranks - 1);
  c.ring_s = ring_latency + bytes * ring_factor(ranks) / (busbw * 1e9);
  // Tree between nodes: one node's latency, then up and down a binary tree of nodes; NCCL's tuner gives the tree
  // less bandwidth than the ring for the same links (kTreeBandwidthShare).
  const double tree_latency = (g >= 2 ? inside_s(1, g) : 0) + 2 * std::ceil(std::log2(nodes)) * kNamedAlphaS;
  c.tree_s = tree_latency + bytes * ring_factor(ranks) / (kTreeBandwidthShare * busbw * 1e9);
  return c;
}

double LinkModel::all_reduce_s(double bytes, int ranks) const {
  const Cost c = costs(bytes, ranks);
  return std::min(c.ring_s, c.tree_s) * scale_;
}

LinkModel LinkModel::scaled(double factor) const {
  if (!std::isfinite(factor) || !(factor > 0))
    throw core::UsageError(fmt::format("a link's time factor must be a finite figure above 0, not {}", factor), "");
  LinkModel m = *this;
  m.scale_ *= factor;
  return m;
}

std::string LinkModel::algorithm(double bytes, int ranks) const {
  if (ranks <= 1 || !(gpus_per_node_ > 0 && ranks > gpus_per_node_)) return "ring";
  const Cost c = costs(bytes, ranks);
  return c.tree_s < c.ring_s ? "tree" : "ring";
}

double LinkModel::inside_s(double bytes, int ranks) const {
  if (ranks <= 1 || bytes <= 0) return 0;
  if (tables_.empty()) return alpha_s_ * (ranks - 1) + bytes * ring_factor(ranks) / (busbw_gbps_ * 1e9);
  if (const auto it = tables_.find(ranks); it != tables_.end()) return interpolate(it->second, bytes);
  // nearest measured rank count
  int n0 = tables_.begin()->first;
  for (const auto& [n, t] : tables_)
    if (std::abs(n - ranks) < std::abs(n0 - ranks)) n0 = n;
  const auto& t = tables_.at(n0);
  const double alpha0 = t.points.front().second;
  const double total0 = interpolate(t, bytes);
  const double bw0 = std::max(0.0, total0 - alpha0);
  return alpha0 * (ranks - 1) / (n0 - 1) + bw0 * ring_factor(ranks) / ring_factor(n0);
}

std::vector<int> LinkModel::measured_ranks() const {
  std::vector<int> out;
  for (const auto& [n, t] : tables_) out.push_back(n);
  return out;
}

}  // namespace scalescope::predict
