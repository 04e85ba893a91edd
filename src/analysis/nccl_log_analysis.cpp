// Findings over parsed NCCL logs (analyze_nccl_logs) and their JSON form.

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "analysis/nccl_log_analysis.h"

namespace scalescope::analyze {
namespace {

constexpr std::size_t kMaxEvidence = 6;

bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

class Collector {
 public:
  explicit Collector(std::span<const NcclLog> logs) : logs_(logs) {}

  Evidence evidence(std::size_t log, std::size_t line) const {
    const auto& l = logs_[log];
    auto it = l.evidence_lines.find(line);
    return {l.source, line, it != l.evidence_lines.end() ? it->second : std::string()};
  }

  void add(std::vector<LogFinding>& out, Severity s, std::string title, std::string detail, std::string remedy,
           const std::vector<std::pair<std::size_t, std::size_t>>& lines) const {
    LogFinding f{s, std::move(title), std::move(detail), std::move(remedy), {}};
    for (std::size_t i = 0; i < lines.size() && i < kMaxEvidence; ++i) f.evidence.push_back(evidence(lines[i].first, lines[i].second));
    if (lines.size() > kMaxEvidence) f.detail += fmt::format(" ({} lines in all; the first {} are shown)", lines.size(), kMaxEvidence);
    out.push_back(std::move(f));
  }

 private:
  std::span<const NcclLog> logs_;
};

// A setting's value as a number, when it is one.
std::optional<long long> setting_number(const std::string& v) {
  if (v.empty() || v.size() > 18) return std::nullopt;
  long long x = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return std::nullopt;
    x = x * 10 + (c - '0');
  }
  return x;
}

std::string ib_completion_meaning(int code) {
  // ibv_wc_status (libibverbs verbs.h).
  switch (code) {
    case 5: return "work request flushed (IBV_WC_WR_FLUSH_ERR): the queue pair had already failed; look for the first error before it";
    case 4: return "local protection error (IBV_WC_LOC_PROT_ERR): a memory registration problem";
    case 10: return "remote access error (IBV_WC_REM_ACCESS_ERR): the peer rejected the access (memory registration, GDR)";
    case 12: return "transport retry counter exceeded (IBV_WC_RETRY_EXC_ERR): the peer did not acknowledge — a link, cable, switch or routing problem, or the peer process died";
    case 13: return "receiver-not-ready retry counter exceeded (IBV_WC_RNR_RETRY_EXC_ERR): the peer did not post receives in time";
    default: return "an InfiniBand/RoCE work completion error (ibv_wc_status)";
  }
}

bool socket_failure(std::string_view m) {
  for (std::string_view s : {"Connection reset by peer", "Connection refused", "connection abort", "Connection closed by remote peer",
                             "Connection timed out", "No route to host", "Broken pipe", "Network is unreachable"})
    if (contains(m, s)) return true;
  return false;
}

}  // namespace

NcclLogAnalysis analyze_nccl_logs(std::span<const NcclLog> logs, const NcclFindingOptions& options) {
  NcclLogAnalysis a;
  Collector ev(logs);
  using Lines = std::vector<std::pair<std::size_t, std::size_t>>;  // (log index, line)

  std::set<std::string> versions, hosts_seen;
  std::set<int> ranks;
  std::map<std::string, Lines> version_lines;
  std::size_t processes = 0;
  for (std::size_t li = 0; li < logs.size(); ++li) {
    const auto& log = logs[li];
    a.sources.push_back(log.source);
    processes += log.processes.size();
    for (const auto& v : log.versions) {
      versions.insert(v.version);
      version_lines[v.version].push_back({li, v.line});
    }
    for (const auto& p : log.processes)
      if (p.host && hosts_seen.insert(*p.host).second) a.hosts.push_back(*p.host);
    for (const auto& c : log.communicators) {
      if (c.rank) ranks.insert(*c.rank);
      if (c.nranks) a.nranks = std::max(a.nranks.value_or(0), *c.nranks);
    }
    for (const auto& c : log.collectives)
      if (c.nranks) a.nranks = std::max(a.nranks.value_or(0), *c.nranks);
    for (const auto& c : log.connections) {
      ++a.transports[c.transport];
      if (c.gdrdma) ++a.gdrdma_connections;
    }
    for (const auto& r : log.rings)
      if (r.channels) a.channels = std::max(a.channels.value_or(0), *r.channels);
    for (const auto& c : log.channel_counts)
      if (c.coll) a.channels = std::max(a.channels.value_or(0), *c.coll);
    a.warnings += log.warnings.size();
  }
  a.versions.assign(versions.begin(), versions.end());
  a.ranks.assign(ranks.begin(), ranks.end());
  a.processes = processes;
  std::set<std::string> nets;
  auto add_net = [&](const std::string& n) {
    if (!n.empty() && nets.insert(n).second) a.networks.push_back(n);
  };
  for (const auto& log : logs) {
    for (const auto& e : log.net_events)
      if (e.kind == NcclNetEvent::Kind::using_network) add_net(e.text);
    for (const auto& d : log.net_devices) add_net(d.provider);
    for (const auto& e : log.net_events)  // "NET/OFI Initializing aws-ofi-nccl …": the plugin's provider name
      if (e.kind == NcclNetEvent::Kind::plugin && e.text.rfind("NET/", 0) == 0)
        if (auto name = e.text.substr(4, e.text.find_first_of(" :", 4) - 4); name != "Plugin") add_net(name);
    for (const auto& c : log.connections)
      if (c.kind == TransportKind::net) add_net(c.transport.substr(4));
  }

  std::vector<LogFinding> f;

  // ---- version mismatch ----
  if (versions.size() > 1) {
    Lines lines;
    std::string list;
    for (const auto& [v, ls] : version_lines) {
      lines.push_back(ls.front());
      list += (list.empty() ? "" : ", ") + fmt::format("{} ({} line(s))", v, ls.size());
    }
    ev.add(f, Severity::error, "NCCL version mismatch between processes: " + list,
           "Ranks of one job must run the same NCCL: different versions can disagree on the wire protocol, "
           "algorithms and channel counts, which hangs or corrupts collectives.",
           "install one NCCL version on every node (check the PyTorch wheel's bundled NCCL versus a system "
           "libnccl, LD_LIBRARY_PATH and containers)",
           lines);
  }

  // ---- settings ----
  const NcclSetting* p2p_disable = nullptr;
  std::size_t p2p_disable_log = 0;
  Lines overrides;
  std::vector<std::string> override_names;
  for (std::size_t li = 0; li < logs.size(); ++li) {
    for (const auto& s : logs[li].settings) {
      const bool p2p_off = (s.name == "NCCL_P2P_DISABLE" && setting_number(s.value).value_or(0) != 0) ||
                           (s.name == "NCCL_P2P_LEVEL" && (s.value == "LOC" || s.value == "0"));
      if (p2p_off && !p2p_disable) {
        p2p_disable = &s;
        p2p_disable_log = li;
      }
      static const std::set<std::string> perf = {"NCCL_ALGO", "NCCL_PROTO", "NCCL_MAX_NCHANNELS", "NCCL_MIN_NCHANNELS",
                                                 "NCCL_NTHREADS", "NCCL_BUFFSIZE", "NCCL_NET_GDR_LEVEL", "NCCL_P2P_LEVEL",
                                                 "NCCL_SHM_DISABLE", "NCCL_CROSS_NIC", "NCCL_NVLS_ENABLE", "NCCL_IB_DISABLE",
                                                 "NCCL_MAX_NRINGS", "NCCL_MIN_NRINGS", "NCCL_NET_GDR_READ", "NCCL_COLLNET_ENABLE",
                                                 "NCCL_P2P_NET_CHUNKSIZE", "NCCL_NCHANNELS_PER_NET_PEER"};
      const std::string entry = s.name + "=" + s.value;
      if (perf.count(s.name) && !p2p_off &&
          std::find(override_names.begin(), override_names.end(), entry) == override_names.end()) {
        override_names.push_back(entry);
        overrides.push_back({li, s.line});
      }
    }
  }
  if (p2p_disable) {
    ev.add(f, Severity::warning,
           fmt::format("P2P disabled by the environment ({}={})", p2p_disable->name, p2p_disable->value),
           "NCCL will not use NVLink or PCIe peer-to-peer between GPUs of one node: their traffic goes through host "
           "memory (SHM) or the network instead, typically several times slower.",
           fmt::format("unset {} unless it works around a known fault; if it does (e.g. PCIe ACS/IOMMU blocking P2P, "
                       "a driver bug), fix that and re-enable P2P",
                       p2p_disable->name),
           {{p2p_disable_log, p2p_disable->line}});
  }
  for (std::size_t li = 0; li < logs.size(); ++li)
    for (const auto& s : logs[li].settings)
      if (s.name == "NCCL_IB_DISABLE" && setting_number(s.value).value_or(0) != 0) {
        ev.add(f, Severity::warning, fmt::format("InfiniBand/RoCE disabled by the environment (NCCL_IB_DISABLE={})", s.value),
               "Traffic between nodes goes over TCP sockets (or a net plugin) instead of RDMA.",
               "unset NCCL_IB_DISABLE on clusters with an IB or RoCE fabric", {{li, s.line}});
        li = logs.size() - 1;
        break;
      }
  if (!overrides.empty()) {
    std::string list;
    for (const auto& o : override_names) list += (list.empty() ? "" : ", ") + o;
    ev.add(f, Severity::info, "NCCL tuning overridden by settings: " + list,
           "These replace NCCL's own choices of algorithm, protocol, channels or paths; a value that helped one "
           "machine or NCCL version can cost bandwidth on another.",
           "measure with and without them (scalescope comm or nccl-tests) before keeping them", overrides);
  }

  // ---- P2P / SHM ----
  Lines shm_lines, nvl_lines, p2p_unsupported;
  std::set<std::pair<int, int>> shm_pairs;
  std::size_t p2p_connections = 0;
  for (std::size_t li = 0; li < logs.size(); ++li) {
    for (const auto& c : logs[li].connections) {
      if (c.kind == TransportKind::shm) {
        if (shm_lines.size() < 64) shm_lines.push_back({li, c.line});
        shm_pairs.insert({std::min(c.from_rank, c.to_rank), std::max(c.from_rank, c.to_rank)});
      }
      if (c.kind == TransportKind::p2p) ++p2p_connections;
    }
    for (const auto& g : logs[li].graph_patterns)
      if (g.type_intra == "NVL" || g.type_inter == "NVL") nvl_lines.push_back({li, g.line});
    for (const auto& c : logs[li].p2p_checks)
      if (c.intra_node_p2p_support == false) p2p_unsupported.push_back({li, c.line});
  }
  if (!shm_lines.empty()) {
    std::string pairs;
    std::size_t shown = 0;
    for (const auto& [x, y] : shm_pairs) {
      if (shown++ == 8) { pairs += ", …"; break; }
      pairs += (pairs.empty() ? "" : ", ") + fmt::format("{}-{}", x, y);
    }
    std::string why;
    Lines lines;
    if (p2p_disable) {
      why = fmt::format("disabled by {}={} at line {}", p2p_disable->name, p2p_disable->value, p2p_disable->line);
      lines.push_back({p2p_disable_log, p2p_disable->line});
    } else if (!p2p_unsupported.empty()) {
      why = fmt::format("not supported between these GPUs (intraNodeP2pSupport 0 at line {})", p2p_unsupported.front().second);
      lines.push_back(p2p_unsupported.front());
    } else if (p2p_connections > 0) {
      why = "not available between these GPUs, while other pairs use it";
    } else {
      why = "not available; the log does not say why";
    }
    std::string title = fmt::format("SHM used between ranks of one node (rank pairs {}): P2P not used ({})", pairs, why);
    std::string detail = "SHM copies every message through host memory: on NVLink systems that is an order of "
                         "magnitude slower than P2P, on PCIe roughly half.";
    if (!p2p_disable && p2p_unsupported.empty() && p2p_connections == 0)
      detail += " Possible reasons: no NVLink and no PCIe P2P path NCCL accepts, P2P blocked by ACS/IOMMU or "
                "virtualisation, or a setting the log does not show.";
    if (!p2p_disable && p2p_unsupported.empty() && p2p_connections > 0)
      detail += " A mix of P2P and SHM inside one node typically means GPUs on different CPU sockets or PCIe root "
                "complexes, where NCCL does not use P2P by default.";
    if (!nvl_lines.empty()) {
      title += "; the log shows NVLink paths";
      detail += fmt::format(" NCCL's own topology search found NVLink (type NVL at line {}), so traffic goes through "
                            "host memory although the GPUs have NVLink.", nvl_lines.front().second);
      lines.push_back(nvl_lines.front());
    }
    for (const auto& l : shm_lines) lines.push_back(l);
    ev.add(f, Severity::warning, title, detail,
           p2p_disable ? fmt::format("unset {} and rerun", p2p_disable->name)
                       : "check `nvidia-smi topo -m` (scalescope topo) for the path between those GPUs; with PCIe "
                         "switches, disable ACS; in VMs enable P2P passthrough; NCCL_P2P_LEVEL=SYS forces P2P across "
                         "sockets (measure it)",
           lines);
  } else if (!p2p_unsupported.empty()) {
    ev.add(f, Severity::warning, "NCCL reports no P2P support between some GPUs of a node (intraNodeP2pSupport 0)",
           "Between GPUs without P2P, NCCL copies through host memory (SHM) or its proxy thread; collectives "
           "between them get a fraction of the link bandwidth.",
           "check `nvidia-smi topo -m` and `nvidia-smi topo -p2p r` (scalescope topo); on PCIe systems disable ACS; "
           "in VMs enable P2P passthrough",
           p2p_unsupported);
  }

  // ---- network ----
  Lines socket_conn, ib_no_gdr, socket_using;
  bool other_net_devices = false, socket_devices = false;
  Lines socket_device_lines;
  std::size_t net_connections = 0;
  for (std::size_t li = 0; li < logs.size(); ++li) {
    for (const auto& c : logs[li].connections) {
      if (c.kind != TransportKind::net) continue;
      ++net_connections;
      if (c.transport == "NET/Socket") socket_conn.push_back({li, c.line});
      if (c.transport.rfind("NET/IB", 0) == 0 && !c.gdrdma) ib_no_gdr.push_back({li, c.line});
    }
    for (const auto& e : logs[li].net_events)
      if (e.kind == NcclNetEvent::Kind::using_network && e.text == "Socket") socket_using.push_back({li, e.line});
    for (const auto& d : logs[li].net_devices) {
      if (d.provider == "Socket") {
        socket_devices = true;
        socket_device_lines.push_back({li, d.line});
      } else {
        other_net_devices = true;
      }
    }
  }
  if (!socket_conn.empty()) {
    ev.add(f, Severity::warning, "NCCL fell back to sockets (NET/Socket) — no IB/RDMA network between these ranks",
           fmt::format("{} network connection line(s) use TCP sockets: inter-node collectives are limited by the "
                       "Ethernet interface and the CPU copying the data (often 1-3 GB/s per NIC, versus 25-50 GB/s "
                       "per NDR IB port with GPUDirect RDMA).",
                       socket_conn.size()),
           "if the nodes have IB or RoCE NICs: check that NCCL_IB_DISABLE is not set, that the rdma-core/ibverbs "
           "libraries and NIC devices are visible (in containers: --device /dev/infiniband, IPC_LOCK) and "
           "NCCL_IB_HCA; on AWS EFA or GCP use the provider's NCCL net plugin",
           socket_conn);
  } else if (!socket_using.empty() || (socket_devices && !other_net_devices && net_connections == 0)) {
    Lines lines = socket_using;
    for (const auto& l : socket_device_lines) lines.push_back(l);
    // Several hosts, or a communicator over several nodes: the socket network carries the job's inter-node traffic.
    std::set<std::string> hosts;
    int nodes = 0;
    for (const auto& log : logs) {
      for (const auto& p : log.processes)
        if (p.host) hosts.insert(*p.host);
      for (const auto& c : log.communicators)
        if (c.nnodes) nodes = std::max(nodes, *c.nnodes);
    }
    if (hosts.size() > 1 || nodes > 1)
      ev.add(f, Severity::warning, "NCCL chose its socket network for a job over several nodes: inter-node traffic goes over TCP",
             fmt::format("The log shows {}: collectives between them run over TCP sockets (a few GB/s per NIC, with the "
                         "CPU copying every byte) instead of IB/RoCE RDMA.",
                         nodes > 1 ? fmt::format("{} nodes", nodes) : fmt::format("{} hosts", hosts.size())),
             "make the IB/RoCE devices visible to NCCL (ibv_devinfo must list them; in containers pass /dev/infiniband) "
             "or install the cloud's net plugin; keep NCCL_IB_DISABLE unset",
             lines);
    else
      ev.add(f, Severity::info, "NCCL chose its socket network (no IB/RDMA device was used)",
             "This matters only for traffic between nodes. The log shows one host and no connection over the network: "
             "if the job ran on one node it is not affected; if other nodes took part, their traffic goes over TCP.",
             "for multi-node runs make the IB/RoCE devices visible to NCCL (or install the cloud's net plugin)", lines);
  }
  if (!ib_no_gdr.empty()) {
    ev.add(f, Severity::warning, "InfiniBand used without GPUDirect RDMA (no /GDRDMA on NET/IB connections)",
           "Without GDRDMA the NIC cannot read or write GPU memory: NCCL stages every message through host memory, "
           "costing bandwidth and CPU time.",
           "load the nvidia-peermem kernel module (nv_peer_mem on old drivers); check NCCL_NET_GDR_LEVEL and how far "
           "the NIC is from the GPU in `nvidia-smi topo -m` (GDR is used up to PXB by default)",
           ib_no_gdr);
  }

  // ---- WARN lines ----
  std::map<int, Lines> ib_errors;
  Lines socket_warns, cuda_warns, proxy_warns, other_warns;
  std::set<std::string> peers, cuda_errors;
  std::set<int> unwind_codes;
  for (std::size_t li = 0; li < logs.size(); ++li) {
    for (const auto& w : logs[li].warnings) {
      for (const auto& u : w.unwind) unwind_codes.insert(u.code);
      const std::string& m = w.message;
      if (auto p = m.find("with error "); p != std::string::npos && contains(m, "completion")) {
        if (auto code = leading_decimal(std::string_view(m).substr(p + 11))) {
          ib_errors[static_cast<int>(std::min<std::uint64_t>(code->first, 1000))].push_back({li, w.line});
          continue;
        }
      }
      if (socket_failure(m)) {
        socket_warns.push_back({li, w.line});
        // The peer as NCCL prints it: "192.0.2.2<45763>", "node1<57557>".
        std::size_t b = 0;
        while (b < m.size()) {
          std::size_t e = m.find_first_of(" ,", b);
          if (e == std::string::npos) e = m.size();
          const std::string tok = m.substr(b, e - b);
          const auto lt = tok.find('<');
          if (lt != std::string::npos && lt > 0 && tok.size() > lt + 2 && tok.back() == '>' && peers.size() < 64)
            peers.insert(tok);
          b = e + 1;
        }
        continue;
      }
      if (auto p = m.find("Cuda failure"); p != std::string::npos) {
        cuda_warns.push_back({li, w.line});
        cuda_errors.insert(m.substr(p));
        continue;
      }
      if (contains(m, "Proxy") || contains(m, "Service thread") || contains(m, "proxy") || contains(m, "recv failed")) {
        proxy_warns.push_back({li, w.line});
        continue;
      }
      other_warns.push_back({li, w.line});
    }
  }
  std::string codes;
  for (int c : unwind_codes) codes += (codes.empty() ? "" : "; ") + fmt::format("{} = {}", c, nccl_result_name(c));
  const std::string unwound = codes.empty() ? "" : " The errors unwound as " + codes + ".";
  for (const auto& [code, lines] : ib_errors)
    ev.add(f, Severity::error, fmt::format("IB completion error {} ({} time(s))", code, lines.size()),
           "NCCL's InfiniBand transport got a failed work completion: " + ib_completion_meaning(code) + "." + unwound,
           code == 12 ? "check the links and switch ports between the two hosts (ibstat, ibdiagnet, port error "
                        "counters), that the peer process was still alive, and NCCL_IB_TIMEOUT/NCCL_IB_RETRY_CNT on "
                        "congested fabrics"
                      : "check the IB fabric and the peer (ibstat, ibdiagnet, dmesg on both hosts)",
           lines);
  if (!socket_warns.empty()) {
    std::string list;
    std::size_t shown = 0;
    for (const auto& p : peers) {
      if (shown++ == 6) { list += ", …"; break; }
      list += (list.empty() ? "" : ", ") + p;
    }
    ev.add(f, Severity::error,
           fmt::format("socket connection failures ({} WARN line(s){})", socket_warns.size(), list.empty() ? "" : "; peers " + list),
           "A TCP connection used by NCCL's bootstrap or proxy was refused, reset or closed by the other side: most "
           "often the peer process had already died (look for its first error: this is a consequence), else a "
           "firewall, a wrong interface (NCCL_SOCKET_IFNAME) or an unreachable address." + unwound,
           "find the rank that failed first (earliest timestamp, or its own WARN); check NCCL_SOCKET_IFNAME names an "
           "interface that reaches every node, and firewalls between the nodes",
           socket_warns);
  }
  if (!cuda_warns.empty()) {
    std::string list;
    for (const auto& c : cuda_errors) list += (list.empty() ? "" : ", ") + c;
    ev.add(f, Severity::error, "CUDA failure inside NCCL: " + list,
           "A CUDA call NCCL made failed; NCCL aborts the operation (the proxy WARN lines that follow are its "
           "consequences)." + unwound,
           "rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P,SHM to see which transport set-up failed; check the "
           "driver/CUDA versions, cuMem/IPC support in containers (NCCL_CUMEM_ENABLE) and dmesg for Xid errors",
           cuda_warns);
  }
  if (!proxy_warns.empty())
    ev.add(f, Severity::error, fmt::format("NCCL proxy failures ({} WARN line(s))", proxy_warns.size()),
           "NCCL's proxy thread, which drives network and some P2P/SHM transfers, could not complete an operation." + unwound,
           "look at the WARN lines just before these: the proxy reports what another part failed at", proxy_warns);
  if (!other_warns.empty())
    ev.add(f, Severity::warning, fmt::format("{} other NCCL WARN line(s)", other_warns.size()),
           "NCCL reported a problem; the lines say what." + unwound, "read the WARN lines shown", other_warns);

  // ---- init time ----
  Lines slow;
  double slowest = 0;
  for (std::size_t li = 0; li < logs.size(); ++li)
    for (const auto& c : logs[li].communicators)
      if (c.init_seconds && *c.init_seconds > options.slow_init_seconds) {
        slow.push_back({li, c.line});
        slowest = std::max(slowest, *c.init_seconds);
      }
  if (!slow.empty())
    ev.add(f, Severity::warning,
           fmt::format("communicator init took up to {:.1f} s ({} communicator(s) above {:.0f} s)", slowest, slow.size(),
                       options.slow_init_seconds),
           "Slow init usually comes from the bootstrap (a slow or wrong interface, DNS), topology detection, or "
           "ranks that reached init at different times; the phases in the 'Init timings' line say which.",
           "compare the phases (bootstrap, topo, connections) across ranks; set NCCL_SOCKET_IFNAME to the fast "
           "interface; make sure every rank reaches init together",
           slow);

  // ---- COLL: where each process stopped ----
  std::map<std::pair<std::optional<std::string>, std::optional<std::int64_t>>, std::pair<std::uint64_t, std::pair<std::size_t, std::size_t>>> last;
  for (std::size_t li = 0; li < logs.size(); ++li)
    for (const auto& c : logs[li].collectives) {
      if (!c.origin.pid || !c.op_count) continue;
      auto key = std::pair{c.origin.host, c.origin.pid};
      auto it = last.find(key);
      if (it == last.end() || *c.op_count >= it->second.first) last[key] = {*c.op_count, {li, c.line}};
    }
  if (last.size() > 1) {
    std::uint64_t lo = UINT64_MAX, hi = 0;
    for (const auto& [k, v] : last) lo = std::min(lo, v.first), hi = std::max(hi, v.first);
    if (lo != hi) {
      Lines lines;
      std::string behind;
      for (const auto& [k, v] : last)
        if (v.first == lo) {
          lines.push_back(v.second);
          if (behind.size() < 200) behind += (behind.empty() ? "" : ", ") + k.first.value_or("?") + fmt::format(":{}", *k.second);
        }
      for (const auto& [k, v] : last)
        if (v.first == hi && lines.size() < kMaxEvidence) lines.push_back(v.second);
      ev.add(f, Severity::info,
             fmt::format("the last collective seen differs between processes: opCount {:#x} on {} versus {:#x} elsewhere",
                         lo, behind, hi),
             "COLL lines show the last collective each process launched. In a hang, the process that is behind is "
             "the one to inspect (it never launched the next collective); a log cut short shows the same pattern, "
             "so check that the log covers the end of the run.",
             "look at what the processes that are behind were doing (py-spy dump, their own output)", lines);
    }
  }

  std::stable_sort(f.begin(), f.end(), [](const LogFinding& x, const LogFinding& y) {
    return static_cast<int>(x.severity) > static_cast<int>(y.severity);
  });
  a.findings = std::move(f);
  return a;
}

void to_json(nlohmann::json& j, const NcclLogAnalysis& a) {
  nlohmann::json sources = nlohmann::json::array(), hosts = nlohmann::json::array();
  for (const auto& s : a.sources) sources.push_back(to_valid_utf8(s));
  for (const auto& h : a.hosts) hosts.push_back(to_valid_utf8(h));
  nlohmann::json transports = nlohmann::json::object();
  for (const auto& [k, v] : a.transports) transports[to_valid_utf8(k)] = v;
  nlohmann::json nets = nlohmann::json::array();
  for (const auto& n : a.networks) nets.push_back(to_valid_utf8(n));
  j = {{"sources", sources}, {"versions", a.versions}, {"hosts", hosts}, {"processes", a.processes},
       {"nranks", optional_json(a.nranks)}, {"ranks", a.ranks}, {"transports", transports},
       {"gdrdma_connections", a.gdrdma_connections}, {"channels", optional_json(a.channels)},
       {"warnings", a.warnings}, {"networks", nets}, {"findings", a.findings}};
}

}  // namespace scalescope::analyze
