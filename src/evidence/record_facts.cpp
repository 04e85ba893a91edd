#include "evidence/record_facts.h"

#include "readers/job/capture.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "text/log_text.h"

namespace scalescope::diagnose {
namespace {

using analyze::excerpt;

bool has(const std::string& s, std::string_view p) { return s.find(p) != std::string::npos; }

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Provenance nccl_at(const analyze::NcclLog& log, std::size_t line) {
  auto it = log.evidence_lines.find(line);
  return {log.source, line, it == log.evidence_lines.end() ? std::string() : excerpt(it->second)};
}

}  // namespace

std::string nccl_warning_category(const std::string& message) {
  const std::string m = lower(message);
  const bool shm = has(m, "shm") || has(m, "shared memory") || has(m, "/dev/shm") || has(m, "nccl-shm");
  if ((has(m, "posix_fallocate") || has(m, "no space left") || has(m, "ftruncate")) && (shm || has(m, "fallocate")))
    return "shm-space";
  if (shm && (has(m, "error while creating") || has(m, "shm_open") || has(m, "unable to allocate") || has(m, "failed")))
    return "shm-create";
  if (has(m, "cuda failure") || has(m, "cuda error") || has(m, "cudaerror")) return "cuda";
  if (has(m, "net/ib") || has(m, "ibv_") || has(m, "completion") || has(m, "infiniband")) return "ib";
  if (has(m, "socket") || has(m, "connect") || has(m, "bootstrap") || has(m, "connection reset") || has(m, "recv")) return "socket";
  if (has(m, "p2p") || has(m, "cudaipc") || has(m, "peer access") || has(m, "ipc handle")) return "p2p";
  if (has(m, "proxy")) return "proxy";
  return "other";
}

Reading facts_from_nccl_log(const analyze::NcclLog& log) {
  Reading r;
  std::set<std::string> versions;
  for (const auto& v : log.versions)
    if (versions.insert(v.version).second) r.facts.add(NcclVersion{v.version}, nccl_at(log, v.line));
  for (const auto& s : log.settings)
    r.facts.add(Setting{s.name, s.value, s.by_environment ? "nccl: set by environment" : "nccl: set"}, nccl_at(log, s.line));
  // Transports: one fact per (transport, GDR, host, direction), counting its connection lines.
  std::map<std::tuple<std::string, bool, std::string, std::string>, std::size_t> first_index;
  std::vector<std::pair<TransportUse, std::size_t>> transports;
  for (const auto& c : log.connections) {
    auto key = std::make_tuple(c.transport, c.gdrdma, c.origin.host.value_or(""), c.direction.value_or(""));
    auto it = first_index.find(key);
    if (it == first_index.end()) {
      TransportUse t;
      t.transport = c.transport;
      t.kind = std::string(analyze::to_string(c.kind));
      t.gdrdma = c.gdrdma;
      t.example_from = c.from_rank;
      t.example_to = c.to_rank;
      t.host = c.origin.host;
      t.direction = c.direction.value_or("");
      first_index[key] = transports.size();
      transports.push_back({t, c.line});
      it = first_index.find(key);
    }
    ++transports[it->second].first.connections;
  }
  for (auto& [t, line] : transports) r.facts.add(std::move(t), nccl_at(log, line));
  // The network: "Using network X", with the devices of that provider.
  std::map<std::string, std::vector<std::string>> devices_of;
  for (const auto& d : log.net_devices) {
    auto& v = devices_of[d.provider];
    for (const auto& x : d.devices)
      if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
    for (const auto& x : d.devices) {
      NicSeen n;
      n.name = x.substr(0, x.find_first_of(":<"));
      if (has(x, "/RoCE")) n.link_layer = "RoCE";
      else if (has(x, "/IB")) n.link_layer = "IB";
      else if (d.provider == "Socket") n.link_layer = "Ethernet";
      n.used_by = "NCCL NET/" + d.provider;
      r.facts.add(std::move(n), nccl_at(log, d.line));
    }
  }
  std::set<std::string> networks;
  for (const auto& e : log.net_events) {
    if (e.kind == analyze::NcclNetEvent::Kind::using_network && networks.insert(e.text).second) {
      NetworkChosen n;
      n.network = e.text;
      if (auto it = devices_of.find(e.text); it != devices_of.end()) n.devices = it->second;
      r.facts.add(std::move(n), nccl_at(log, e.line));
    } else if (e.kind == analyze::NcclNetEvent::Kind::no_device) {
      r.facts.add(NetNoDevice{e.text}, nccl_at(log, e.line));
    }
  }
  // A socket device list without a "Using network" line (older NCCL) still names the network.
  if (networks.empty())
    for (const auto& d : log.net_devices)
      if (networks.insert(d.provider).second) r.facts.add(NetworkChosen{d.provider, devices_of[d.provider]}, nccl_at(log, d.line));
  for (const auto& g : log.gdr_lines) r.facts.add(GdrState{g.hca, g.enabled}, nccl_at(log, g.line));
  std::set<int> codes;
  for (const auto& w : log.warnings) {
    NcclWarning f;
    f.category = nccl_warning_category(w.message);
    f.location = w.location;
    f.message = w.message;
    r.facts.add(std::move(f), nccl_at(log, w.line));
    for (const auto& u : w.unwind)
      if (u.code > 0 && codes.insert(u.code).second) {
        NcclFailure fail;
        fail.code = u.code;
        fail.name = analyze::nccl_result_name(u.code);
        fail.reporter = "nccl";
        r.facts.add(std::move(fail), nccl_at(log, u.line));
      }
  }
  // The communicators' shape.
  std::optional<int> nranks, nnodes, local;
  std::size_t comm_line = 0;
  for (const auto& c : log.communicators) {
    if (c.nranks && (!nranks || *c.nranks > *nranks)) nranks = c.nranks, comm_line = c.line;
    if (c.nnodes) nnodes = std::max(nnodes.value_or(0), *c.nnodes);
    if (c.local_ranks) local = std::max(local.value_or(0), *c.local_ranks);
  }
  std::vector<std::string> hosts;
  for (const auto& p : log.processes)
    if (p.host && std::find(hosts.begin(), hosts.end(), *p.host) == hosts.end()) hosts.push_back(*p.host);
  if (nranks || nnodes || hosts.size() > 1) {
    WorldShape w;
    w.ranks = nranks;
    w.nodes = nnodes;
    w.ranks_per_node = local;
    w.hosts = hosts;
    if (!nnodes && hosts.size() > 1) w.nodes = static_cast<int>(hosts.size());
    w.basis = nnodes ? "NCCL communicator (nNodes, localRanks)" : nranks ? "NCCL communicator" : "hosts of the NCCL log";
    r.facts.add(std::move(w), nccl_at(log, comm_line ? comm_line : log.processes.front().first_line));
  } else if (log.processes.size() == 1 && log.processes.front().devices.size() > 1) {
    // One process driving several GPUs (nccl-tests -g N, ncclCommInitAll): one node.
    WorldShape w;
    w.processes = 1;
    w.nodes = 1;
    w.ranks = static_cast<int>(log.processes.front().devices.size());
    w.hosts = hosts;
    w.basis = fmt::format("one process in the NCCL log drives devices {}", fmt::join(log.processes.front().devices, ", "));
    r.facts.add(std::move(w), nccl_at(log, log.processes.front().first_line));
  }
  for (const auto& g : log.graph_patterns) {
    GraphSearch s;
    s.pattern = g.pattern;
    s.channels = g.channels;
    s.speed_intra_gbps = g.speed_intra;
    s.speed_inter_gbps = g.speed_inter;
    s.type_intra = g.type_intra;
    s.type_inter = g.type_inter;
    r.facts.add(std::move(s), nccl_at(log, g.line));
  }
  for (const auto& c : log.p2p_checks)
    if (c.intra_node_p2p_support) r.facts.add(P2pSupport{*c.intra_node_p2p_support}, nccl_at(log, c.line));
  return r;
}

Reading facts_from_watchdog(std::span<const analyze::WatchdogLog> logs, const analyze::WatchdogAnalysis& analysis) {
  Reading r;
  Provenance first;
  for (const auto& log : logs)
    for (const auto& t : log.timeouts) {
      WatchdogTimeout f;
      f.rank = t.global_rank ? t.global_rank : t.group_rank;
      f.process_group = t.process_group;
      f.op = t.op_type;
      f.seq = t.seq_num;
      f.numel_in = t.numel_in;
      f.numel_out = t.numel_out;
      f.timeout_ms = t.timeout_ms;
      f.elapsed_ms = t.elapsed_ms;
      auto it = log.evidence_lines.find(t.line);
      Provenance p{log.source, t.line, it == log.evidence_lines.end() ? std::string() : excerpt(it->second)};
      if (first.source.empty()) first = p;
      r.facts.add(std::move(f), std::move(p));
    }
  // The watchdog's other error lines (a timeout whose WorkNCCL line was cut off, "… watchdog thread terminated with
  // exception"): a job that died in a collective, what is known of it.
  for (const auto& log : logs)
    if (log.timeouts.empty())
      for (const auto& [line_no, text] : log.other_errors) {
        r.facts.add(ProcessFailure{"PyTorch's NCCL watchdog: " + excerpt(text)}, Provenance{log.source, line_no, excerpt(text)});
        break;
      }
  if (!first.source.empty()) {
    WatchdogSummary s;
    s.op_mismatch = analysis.op_mismatch;
    s.seq_mismatch = analysis.seq_mismatch;
    std::set<std::string> ranks;
    for (const auto& x : analysis.ranks) ranks.insert(x.rank);
    s.reporting_ranks = static_cast<int>(ranks.size());
    if (!analysis.behind.empty()) {
      const auto& b = analysis.behind.front();
      const auto sp = b.find_last_of(' ');
      try {
        s.behind_rank = std::stoi(b.substr(sp + 1));
      } catch (...) {
      }
    }
    s.verdict = analysis.verdict;
    r.facts.add(std::move(s), first);
  }
  return r;
}

Reading facts_from_sweep(const analyze::Sweep& sweep, const analyze::SweepAnalysis& a, const std::string& source) {
  Reading r;
  const Provenance where{source, 0, sweep.source};
  if (sweep.nccl_version) r.facts.add(NcclVersion{*sweep.nccl_version}, where);
  if (!a.plateau) return r;
  BusbwPlateau p;
  p.collective = std::string(comm::to_string(sweep.collective));
  p.gbps = a.plateau->busbw_gbps;
  p.from_bytes = a.plateau->from_bytes;
  p.to_bytes = a.plateau->to_bytes;
  p.sizes = a.plateau->sizes;
  p.saturated = a.plateau->saturated;
  p.peak_gbps = a.plateau->peak_busbw_gbps;
  p.ranks = sweep.ranks;
  if (a.latency) p.latency_us = a.latency->mean_time_us;
  p.reported_average_gbps = sweep.reported_avg_busbw_gbps;
  p.wrong_rows = sweep.rows_with_wrong_elements;
  r.facts.add(std::move(p), {source, 0, fmt::format("{}: plateau {:.1f} GB/s from {} to {} bytes", sweep.source, a.plateau->busbw_gbps,
                                                    a.plateau->from_bytes, a.plateau->to_bytes)});
  if (sweep.ranks) {
    WorldShape w;
    w.ranks = sweep.ranks;
    w.basis = "nccl-tests rank count";
    r.facts.add(std::move(w), where);
  }
  return r;
}

Reading facts_from_nccl_profile(const analyze::NcclProfile& p, const std::string& source) {
  Reading r;
  std::set<comm::Collective> done;
  for (const auto& op : p.ops)
    if (const auto c = analyze::collective_of_nccl_op(op.op); c && done.insert(*c).second)
      if (const auto sw = analyze::nccl_profile_sweep(p, *c)) {
        auto part = facts_from_sweep(*sw, analyze::analyze_sweep(*sw), source);
        r.facts.append(std::move(part.facts));
      }
  if (p.nranks > 0) {
    WorldShape w;
    w.ranks = p.nranks;
    if (p.nnodes > 0) w.nodes = p.nnodes;
    w.basis = "NCCL profiler plugin";
    r.facts.add(std::move(w), {source, 1, fmt::format("rank {} of {} on {} node(s)", p.rank, p.nranks, p.nnodes)});
  }
  return r;
}

Reading facts_from_topology(const topo::Topology& t, const std::string& source) {
  Reading r;
  const auto& d = t.devices;
  for (std::size_t i = 0; i < d.size(); ++i)
    for (std::size_t j = i + 1; j < d.size(); ++j) {
      const auto& l = t.links.at(i).at(j);
      if (l.cls == topo::LinkClass::unknown || l.cls == topo::LinkClass::self) continue;
      LinkClass f;
      f.a = d[i].label;
      f.b = d[j].label;
      f.a_is_gpu = d[i].kind == topo::DeviceKind::gpu;
      f.b_is_gpu = d[j].kind == topo::DeviceKind::gpu;
      f.token = topo::to_string(l);
      f.nvlinks = l.cls == topo::LinkClass::nvlink ? l.nvlinks : 0;
      r.facts.add(std::move(f), {source, 0, fmt::format("{} – {}: {}", d[i].label, d[j].label, topo::to_string(l))});
    }
  int gpus = 0;
  for (const auto& dev : d) {
    if (dev.kind == topo::DeviceKind::gpu) ++gpus;
    if (dev.cpu_affinity || dev.numa || (dev.kind == topo::DeviceKind::nic && !dev.name.empty())) {
      DeviceAffinity a;
      a.device = dev.label;
      if (dev.cpu_affinity) {
        a.cpus = dev.cpu_affinity->to_string();
        a.cpu_count = dev.cpu_affinity->count();
      }
      if (dev.numa && !dev.numa->empty()) {
        std::string list;
        for (int n : *dev.numa) list += (list.empty() ? "" : ",") + std::to_string(n);
        a.numa = list;
      }
      if (dev.kind == topo::DeviceKind::nic && !dev.name.empty()) a.nic_name = dev.name;
      r.facts.add(std::move(a), {source, 0, dev.label + (dev.cpu_affinity ? " CPU affinity " + dev.cpu_affinity->to_string() : "")});
    }
    if (dev.kind == topo::DeviceKind::gpu && !dev.name.empty()) {
      GpuSeen g;
      g.name = dev.name;
      g.index = dev.index;
      if (!dev.bus_id.empty()) g.bus_id = dev.bus_id;
      r.facts.add(std::move(g), {source, 0, dev.label + " " + dev.name});
    }
    if (dev.kind == topo::DeviceKind::nic && !dev.name.empty()) {
      NicSeen n;
      n.name = dev.name;
      r.facts.add(std::move(n), {source, 0, dev.label + " = " + dev.name});
    }
    if (dev.pcie.current_gen > 0 || dev.pcie.current_width > 0) {
      PcieLinkState p;
      p.device = dev.label;
      if (!dev.name.empty()) p.device_name = dev.name;
      if (dev.pcie.current_gen) p.current_gen = dev.pcie.current_gen;
      if (dev.pcie.max_gen) p.max_gen = dev.pcie.max_gen;
      if (dev.pcie.gpu_max_gen) p.device_max_gen = dev.pcie.gpu_max_gen;
      if (dev.pcie.current_width) p.current_width = dev.pcie.current_width;
      if (dev.pcie.max_width) p.max_width = dev.pcie.max_width;
      r.facts.add(std::move(p), {source, 0, fmt::format("{} PCIe Gen{} x{} (max Gen{} x{})", dev.label, dev.pcie.current_gen,
                                                        dev.pcie.current_width, dev.pcie.max_gen, dev.pcie.max_width)});
    }
    for (const auto& n : dev.nvlinks) {
      NvlinkState s;
      s.gpu = dev.label;
      if (!dev.name.empty()) s.gpu_name = dev.name;
      s.link = n.link;
      s.active = n.active;
      if (n.version) s.version = n.version;
      r.facts.add(std::move(s), {source, 0, fmt::format("{} NVLink {} {}", dev.label, n.link, n.active ? "active" : "inactive")});
      for (const auto& [counter, value] : n.errors)
        if (value > 0)  // zero counters are the normal state: only errors become facts
          r.facts.add(NvlinkCounter{dev.label, n.link, counter, value},
                      {source, 0, fmt::format("{} NVLink {}: {} = {} (NVML)", dev.label, n.link, counter, value)});
    }
  }
  if (gpus > 0) r.facts.add(GpuCount{gpus, t.live ? "cuda-matrix" : "matrix", std::nullopt}, {source, 0, fmt::format("{} GPU rows", gpus)});
  if (t.live) {
    if (t.live->nvml_gpu_count >= 0)
      r.facts.add(GpuCount{t.live->nvml_gpu_count, "exist", std::nullopt}, {source, 0, "NVML: " + t.live->nvml_message});
    if (t.live->cuda_built) r.facts.add(GpuCount{t.live->cuda_gpu_count, "cuda", std::nullopt}, {source, 0, "CUDA: " + t.live->cuda_message});
    if (t.live->cuda_visible_devices_set)
      r.facts.add(Setting{"CUDA_VISIBLE_DEVICES", t.live->cuda_visible_devices, "environment"},
                  {source, 0, "CUDA_VISIBLE_DEVICES=" + t.live->cuda_visible_devices});
  }
  return r;
}

Reading facts_from_traces(const analyze::TraceAnalysis& a) {
  Reading r;
  auto rank_facts = [&](const analyze::RankAnalysis& rk, bool baseline) {
    const Provenance where{rk.source, 0, fmt::format("{} rank {} ({} step(s))", baseline ? "baseline" : "trace", rk.rank, rk.steps.size())};
    if (!rk.device_name.empty() && !rk.cpu_ranks) r.facts.add(GpuSeen{rk.device_name, rk.device >= 0 ? std::optional<int>(rk.device) : std::nullopt,
                                                     std::nullopt, std::nullopt, rk.rank},
                                             where);
    if (!rk.nccl_version.empty()) r.facts.add(NcclVersion{rk.nccl_version}, where);
    if (!rk.has_gpu) return;
    const auto& m = rk.mean;
    StepPhases s;
    s.world_size = baseline ? 1 : (a.world_size ? std::optional<int>(*a.world_size) : std::nullopt);
    s.rank = rk.rank;
    s.step_s = m.step_ms / 1e3;
    s.compute_s = m.compute_ms / 1e3;
    if (m.comm_ms > 0) s.all_reduce_s = m.comm_ms / 1e3;
    s.exposed_comm_s = m.exposed_comm_ms / 1e3;
    s.data_wait_s = m.data_wait_ms / 1e3;
    s.host_sync_s = m.host_sync_ms / 1e3;
    // A CPU rank's gaps between operators are the interpreter's time, not kernel launches.
    if (!rk.cpu_ranks) s.launch_gap_s = m.launch_gap_idle_ms / 1e3;
    s.other_s = m.other_ms / 1e3;
    s.gpu_busy_s = m.gpu_busy_ms / 1e3;
    s.profiled = true;
    s.cpu_rank = rk.cpu_ranks;
    s.basis = fmt::format("{}profiler trace of {}rank {}, mean of {} step(s)", baseline ? "1-rank baseline " : "",
                          rk.cpu_ranks ? "CPU " : "", rk.rank, rk.steps.size());
    r.facts.add(std::move(s), where);
    const double steps = std::max<double>(1, static_cast<double>(rk.steps.size()));
    for (const auto& c : rk.ddp_ranges) r.facts.add(CpuOpTime{c.name, c.ms_per_step, c.calls_per_step}, where);
    for (const auto& h : rk.host_syncs)
      r.facts.add(HostSync{h.label, h.count / steps, h.gpu_idle_ms / steps, h.blocked_ms / steps}, where);
    if (rk.launch_gaps.count > 0 && !rk.cpu_ranks) {
      LaunchGaps g;
      g.per_step = rk.launch_gaps.count / steps;
      g.idle_ms_per_step = m.launch_gap_idle_ms;
      g.median_us = rk.launch_gaps.p50_us;
      double kernel_ms = 0, kernels = 0;
      for (const auto& k : rk.kernels)
        if (!k.comm) kernel_ms += k.total_ms, kernels += static_cast<double>(k.count);
      g.mean_kernel_us = kernels > 0 ? kernel_ms * 1e3 / kernels : 0;
      r.facts.add(std::move(g), where);
    }
  };
  for (const auto& rk : a.ranks) rank_facts(rk, false);
  if (a.baseline) rank_facts(*a.baseline, true);
  if (a.world_size && *a.world_size > 1) {
    WorldShape w;
    w.ranks = a.world_size;
    w.basis = "profiler traces (distributedInfo)";
    r.facts.add(std::move(w), {a.ranks.empty() ? "" : a.ranks.front().source, 0, fmt::format("world size {}", *a.world_size)});
  }
  if (a.cross.straggler && a.ranks.size() > 1) {
    std::string src;
    for (const auto& rk : a.ranks)
      if (rk.rank == *a.cross.straggler) src = rk.source;
    r.facts.add(Straggler{fmt::format("rank {}", *a.cross.straggler), a.cross.straggler_late_ms_per_step, std::nullopt,
                          "profiler traces, collectives matched by " + a.cross.matching},
                {src, 0, fmt::format("rank {} latest to the matched collectives", *a.cross.straggler)});
  }
  // The slowest rank by compute, step by step: always the same one (a straggler) or changing (imbalance).
  if (a.ranks.size() > 1) {
    std::size_t steps = a.ranks.front().steps.size();
    for (const auto& rk : a.ranks) steps = std::min(steps, rk.steps.size());
    if (steps >= 3) {
      std::map<int, int> slowest;
      double spread = 0;
      for (std::size_t i = 0; i < steps; ++i) {
        double hi = -1, lo = 1e300;
        int who = -1;
        for (const auto& rk : a.ranks) {
          const double c = rk.steps[i].compute_ms;
          if (c > hi) hi = c, who = rk.rank;
          lo = std::min(lo, c);
        }
        ++slowest[who];
        if (lo > 0) spread += (hi - lo) / lo;
      }
      spread /= static_cast<double>(steps);
      auto top = std::max_element(slowest.begin(), slowest.end(), [](auto& x, auto& y) { return x.second < y.second; });
      const Provenance where{a.ranks.front().source, 0, fmt::format("compute per step on {} ranks over {} steps", a.ranks.size(), steps)};
      if (spread >= 0.05) {
        if (top->second >= 0.8 * static_cast<double>(steps))
          r.facts.add(Straggler{fmt::format("rank {}", top->first), std::nullopt, spread,
                                fmt::format("slowest in compute in {} of {} traced steps", top->second, steps)},
                      where);
        else if (top->second <= 0.6 * static_cast<double>(steps))
          r.facts.add(Straggler{"varies", std::nullopt, spread,
                                fmt::format("{} different ranks slowest over {} traced steps", slowest.size(), steps)},
                      where);
      }
    }
  }
  if (a.metrics && a.verdict) {
    ScalingPoint p;
    p.world_size = a.world_size.value_or(static_cast<int>(a.ranks.size()));
    p.speedup = a.metrics->speedup;
    p.efficiency = a.metrics->efficiency;
    p.comm_ratio = a.metrics->comm_ratio;
    p.overlap = a.metrics->overlap_fraction;
    p.verdict = std::string(diagnose::to_string(a.verdict->verdict));
    r.facts.add(std::move(p), {a.ranks.empty() ? "" : a.ranks.front().source, 0, "traces against the 1-rank baseline"});
  }
  return r;
}

namespace {

double num(const nlohmann::json& j, const char* key, double fallback = 0) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return fallback;
  return j[key].get<double>();
}

// The facts of one train/1 result.
void train_facts(Reading& r, const nlohmann::json& t, const std::string& source, std::optional<int> world_size_hint) {
  if (!t.is_object()) return;
  const auto& cfg = t.contains("config") ? t["config"] : nlohmann::json::object();
  const int n = cfg.is_object() && cfg.contains("world_size") && cfg["world_size"].is_number_integer() ? cfg["world_size"].get<int>()
                                                                                                     : world_size_hint.value_or(1);
  const Provenance where{source, 0, fmt::format("scalescope train result, world size {}", n)};
  const auto& ph = t.contains("phases") ? t["phases"] : nlohmann::json::object();
  StepPhases s;
  s.world_size = n;
  double step = 0;
  if (t.contains("step_s") && t["step_s"].is_object()) step = num(t["step_s"], "trimmed_mean");
  if (step <= 0) step = num(ph, "total_s");
  if (step > 0) s.step_s = step;
  s.compute_s = num(ph, "compute_s");
  s.forward_s = num(ph, "forward_s");
  s.backward_s = num(ph, "backward_s");
  s.optimizer_s = num(ph, "optimizer_s");
  s.data_wait_s = num(ph, "data_wait_s");
  if (n > 1) {
    s.all_reduce_s = num(ph, "all_reduce_s") + num(ph, "all_gather_s");
    s.exposed_comm_s = num(ph, "exposed_comm_s");
  }
  s.basis = "scalescope train (" + std::string(t.value("timing_source", "")) + ")";
  r.facts.add(std::move(s), where);
  const std::string device = t.value("device", "");
  if (!device.empty() && cfg.value("backend", "") == "gpu") r.facts.add(GpuSeen{device, std::nullopt, std::nullopt, std::nullopt, std::nullopt}, where);
  if (cfg.contains("model") && cfg["model"].is_object()) {
    ModelSeen m;
    m.name = cfg["model"].value("name", std::string("scalescope model"));
    if (t.contains("parameters") && t["parameters"].is_number()) m.parameters = t["parameters"].get<double>();
    r.facts.add(std::move(m), where);
  }
  WorldShape w;
  w.ranks = n;
  w.nodes = 1;
  w.processes = n;
  w.basis = "scalescope train (one node)";
  r.facts.add(std::move(w), where);
  if (n > 1 && t.contains("rank_compute_s")) {
    const double lo = num(t["rank_compute_s"], "min"), hi = num(t["rank_compute_s"], "max");
    if (lo > 0 && hi > lo * 1.1)
      r.facts.add(Straggler{"the slowest rank", std::nullopt, hi / lo - 1, "scalescope train: per-rank compute"}, where);
  }
  if (t.contains("bucket_bytes") && t["bucket_bytes"].is_array() && n > 1) {
    DdpConfig d;
    if (cfg.contains("overlap") && cfg["overlap"].is_boolean()) d.overlap = cfg["overlap"].get<bool>();
    for (const auto& b : t["bucket_bytes"])
      if (b.is_number_unsigned()) d.bucket_bytes.push_back(b.get<std::uint64_t>());
    d.world_size = n;
    r.facts.add(std::move(d), where);
  }
}

}  // namespace

Reading facts_from_scalescope_json(const nlohmann::json& j, const std::string& source) {
  Reading r;
  try {
    const std::string schema = j.value("schema", "");
    if (schema == "scalescope.capture/1") {
      return facts_from_capture(j, source);
    } else if (schema == "scalescope.job/1") {
      return facts_from_job(j, source);
    } else if (schema == "scalescope.train/1") {
      train_facts(r, j, source, std::nullopt);
    } else if (schema == "scalescope.doctor/1") {
      const std::string mode = j.value("scaling", "weak");
      for (const auto& p : j.value("points", nlohmann::json::array())) {
        const int n = p.value("world_size", 0);
        train_facts(r, p.value("result", nlohmann::json::object()), source, n);
        if (n >= 2 && p.contains("metrics")) {
          const auto& m = p["metrics"];
          ScalingPoint s;
          s.world_size = n;
          s.speedup = num(m, "speedup");
          s.efficiency = num(m, "efficiency");
          if (m.contains("comm_ratio") && m["comm_ratio"].is_number()) s.comm_ratio = m["comm_ratio"].get<double>();
          if (m.contains("overlap_fraction") && m["overlap_fraction"].is_number()) s.overlap = m["overlap_fraction"].get<double>();
          if (p.contains("verdict") && p["verdict"].is_object()) s.verdict = p["verdict"].value("verdict", "");
          s.mode = mode;
          r.facts.add(std::move(s), {source, 0, fmt::format("scalescope doctor, world size {}", n)});
        }
      }
    } else if (schema == "scalescope.comm/1") {
      auto one = [&](const nlohmann::json& rep) {
        if (!rep.contains("sweep")) return;
        const auto sweep = rep["sweep"].get<analyze::Sweep>();
        auto part = facts_from_sweep(sweep, analyze::analyze_sweep(sweep), source);
        r.facts.append(std::move(part.facts));
      };
      if (j.contains("reports") && j["reports"].is_array())
        for (const auto& rep : j["reports"]) one(rep);
      else
        one(j);
    } else if (schema == "scalescope.topo/1") {
      const auto& t = j.contains("topology") ? j["topology"] : j;
      const auto devices = t.value("devices", nlohmann::json::array());
      const auto matrix = t.value("matrix", nlohmann::json::array());
      for (std::size_t a = 0; a < devices.size() && a < matrix.size(); ++a)
        for (std::size_t b = a + 1; b < devices.size() && b < matrix[a].size(); ++b) {
          const std::string tok = matrix[a][b].is_string() ? matrix[a][b].get<std::string>() : "";
          if (tok.empty() || tok == "?" || tok == "X") continue;
          LinkClass f;
          f.a = devices[a].value("label", "");
          f.b = devices[b].value("label", "");
          f.a_is_gpu = devices[a].value("kind", "gpu") == "gpu";
          f.b_is_gpu = devices[b].value("kind", "gpu") == "gpu";
          f.token = tok;
          if (tok.rfind("NV", 0) == 0) {
            try {
              f.nvlinks = std::stoi(tok.substr(2));
            } catch (...) {
            }
          }
          r.facts.add(std::move(f), {source, 0, f.a + " – " + f.b + ": " + tok});
        }
      for (const auto& d : devices)
        if (d.value("kind", "gpu") == "gpu" && !d.value("name", "").empty())
          r.facts.add(GpuSeen{d.value("name", ""), std::nullopt, std::nullopt, std::nullopt, std::nullopt}, {source, 0, d.value("label", "")});
    }
  } catch (const std::exception& e) {
    r.notes.push_back(std::string("part of the report could not be read: ") + e.what());
  }
  return r;
}

}  // namespace scalescope::diagnose
