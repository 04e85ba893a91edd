// Assessors of the environment and configuration causes: NCCL settings, the socket fallback, container shared
// memory and IPC, collective mismatches.

#include <algorithm>
#include <cctype>
#include <set>

#include "diagnose/causes_util.h"

namespace scalescope::diagnose {
namespace {

using namespace detail;

bool contains(const std::string& s, std::string_view p) { return s.find(p) != std::string::npos; }

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Feature toggles of table rows that are NCCL transports.
bool transport_toggle(const std::string& dim) {
  return dim == "nvlink" || dim == "p2p" || dim == "shm" || dim == "ib" || dim == "roce" || dim == "rdma" || dim == "gdr" ||
         dim == "nvls";
}

bool table_has_scaling(const Context& ctx, const Row& r) {
  for (const auto& s : ctx.variants.scaling)
    if (s.row.where->source == r.where->source && s.row.m->table == r.m->table) return true;
  return false;
}

bool socket_network(const Context& ctx) {
  for (const auto& n : ctx.facts.of<NetworkChosen>())
    if (n.fact.network == "Socket") return true;
  for (const auto& t : ctx.facts.of<TransportUse>())
    if (contains(t.fact.transport, "Socket")) return true;
  return false;
}

// Settings that show the job was set up for RDMA between nodes: IB/RoCE choices, and NCCL_IB_DISABLE=0 or
// NCCL_IB_CUDA_SUPPORT set on purpose (their values are NCCL's defaults, but nobody sets them without wanting IB).
std::vector<const Context::SettingView*> rdma_settings(const Context& ctx) {
  std::vector<const Context::SettingView*> out;
  for (const char* n : {"NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_IB_TC", "NCCL_IB_SL", "NCCL_NET_GDR_LEVEL",
                        "NCCL_IB_QPS_PER_CONNECTION", "NCCL_IB_CUDA_SUPPORT", "NCCL_IB_TIMEOUT"})
    if (const auto* s = ctx.setting(n)) out.push_back(s);
  if (const auto* s = ctx.setting("NCCL_IB_DISABLE"); s && s->judgement.effect == SettingEffect::default_value) out.push_back(s);
  return out;
}

}  // namespace

std::optional<Assessment> assess_nccl_env_override(const Context& ctx) {
  Assessment a = start("nccl-env-override");
  double score = 0;
  std::vector<std::string> culprits;
  // A setting the text says makes the job slower ("with NCCL_SHM_DISABLE=1 performance drops"): what it turns off is the
  // faster path this machine has, so it is the slowdown's cause (judged against NCCL's default like any setting).
  for (const auto& c : ctx.facts.of<Claim>()) {
    if (c.fact.kind != "slow-with") continue;
    const auto eq = c.fact.detail.find('=');
    if (eq == std::string::npos || c.fact.detail.rfind("NCCL_", 0) != 0) continue;
    const auto j = judge_setting(c.fact.detail.substr(0, eq), c.fact.detail.substr(eq + 1));
    if (j.effect != SettingEffect::slows) continue;
    a.evidence.push_back(line(c.fact.detail + " makes it slower, as the text says: " + j.what_it_does, c.where));
    score = std::max(score, 0.55);
    culprits.push_back(c.fact.detail);
  }
  // Settings read from files or logs.
  for (const auto& [name, s] : ctx.settings) {
    if (s.judgement.effect != SettingEffect::slows) {
      if (s.judgement.effect == SettingEffect::default_value && name.rfind("NCCL_", 0) == 0 &&
          (name == "NCCL_IB_DISABLE" || name == "NCCL_P2P_DISABLE" || name == "NCCL_SHM_DISABLE"))
        a.against.push_back(line(name + "=" + s.value + " is NCCL's default: no override", s.where));
      continue;
    }
    // The same name given several values in one file: the runs a text compares, not the job's environment.
    if (s.values_in_source.size() >= 2) {
      std::string values;
      for (const auto& v : s.values_in_source) values += (values.empty() ? "" : ", ") + v;
      a.against.push_back(line(fmt::format("{} takes {} values in one file ({}): variants compared, not the one setting of a "
                                           "job",
                                           name, s.values_in_source.size(), values),
                               s.where));
      continue;
    }
    double sc = 0.5;
    std::string says = name + "=" + s.value + " (default " + s.judgement.default_text + "): " + s.judgement.what_it_does;
    // Its effect visible elsewhere in the evidence.
    const auto& off = s.judgement.turns_off;
    if (off == "ib") {
      if (socket_network(ctx)) {
        raise(sc, 0.25);
        says += "; the log shows the socket network in use";
        a.explains.push_back("net-socket-fallback");
      }
      if (ctx.span == Span::single_node) {
        sc = 0.2;
        says += "; a single-node job has no inter-node traffic for it to slow";
      }
    } else if (off == "p2p") {
      for (const auto& t : ctx.facts.of<TransportUse>())
        if (t.fact.kind == "shm" || (t.fact.kind == "net" && ctx.span != Span::multi_node)) {
          raise(sc, 0.2);
          says += "; the log shows " + t.fact.transport + " between GPUs of one node";
          break;
        }
      if (ctx.gpu && ctx.gpu->nvlink_links > 0) says += "; these GPUs have NVLink, which P2P would use";
    } else if (off == "shm") {
      for (const auto& t : ctx.facts.of<TransportUse>())
        if (t.fact.kind == "net" && ctx.span != Span::multi_node) {
          raise(sc, 0.2);
          says += "; the log shows network connections between GPUs of one node";
          break;
        }
    } else if (off == "gdr") {
      a.explains.push_back("gdr-unavailable");
    }
    a.evidence.push_back(line(says, s.where));
    culprits.push_back(name + "=" + s.value);
    score = std::max(score, sc);
  }
  // A/B measurements of a transport turned off.
  for (const auto& c : ctx.variants.comparisons) {
    if (!transport_toggle(c.dim) || c.worse_value != "off" || c.better_value != "on" || !c.beyond_noise) continue;
    if (c.worse.m->unit == "%") continue;  // a share (GPU idle %) moves with the time it is a share of: not a cost
    const bool experiment = table_has_scaling(ctx, c.worse);
    double sc = experiment ? 0.35 : (c.ratio >= 1.5 ? 0.7 : 0.6);
    const std::string setting = setting_turning_off(c.dim);
    a.evidence.push_back(line(fmt::format("{} {} against {} {}: {:.2f}× {} with {} off{}", row_name(*c.worse.m),
                                          figure(*c.worse.m), row_name(*c.better.m), figure(*c.better.m), c.ratio,
                                          c.worse.m->higher_is_better ? "lower" : "longer", c.dim,
                                          experiment ? " (a variant beside the scaling runs)" : ""),
                              *c.worse.where));
    if (!setting.empty() && std::find(culprits.begin(), culprits.end(), setting) == culprits.end()) culprits.push_back(setting);
    if (c.dim == "ib" || c.dim == "roce" || c.dim == "rdma") a.explains.push_back("net-socket-fallback");
    if (sc > score) {
      score = sc;
      const bool time = !c.worse.m->higher_is_better;
      if (time && (c.worse.m->unit == "s" || c.worse.m->unit == "ms")) {
        const double extra = seconds_of(*c.worse.m) - seconds_of(*c.better.m);
        a.cost.seconds = extra;
        a.cost.per = per_of(c.quantity);
        a.cost.share = extra / seconds_of(*c.worse.m);
        a.cost.text = fmt::format("{} per {} ({} of the slow variant's time), from the measured A/B", duration(extra),
                                  a.cost.per, percent(*a.cost.share));
      } else {
        a.cost.text = fmt::format("{:.2f}× in the measured A/B", c.ratio);
      }
    }
    // Constant compute while the step grew: the difference is communication.
    for (const auto& k : ctx.variants.constant_compute)
      if (k.slow_step.m == c.worse.m) {
        a.evidence.push_back(line(fmt::format("{} stays {} in both rows: the extra {} per step is not compute but "
                                              "time the GPUs wait for communication",
                                              k.slow_busy.m->quantity, figure(*k.slow_busy.m), duration(k.extra_s)),
                                  *k.slow_busy.where));
        if (!experiment) raise(score, 0.05);
      }
  }
  // No setting shown, yet SHM between GPUs of one node that have active NVLinks (nccl-tests#228): NVLink peer access
  // is not blocked by ACS or the IOMMU, so P2P was turned off by configuration the evidence does not show.
  if (culprits.empty() && ctx.span != Span::multi_node) {
    int nvlinks = 0;
    std::optional<Provenance> nvlink_where;
    for (const auto& n : ctx.facts.of<NvlinkState>())
      if (n.fact.active) {
        ++nvlinks;
        if (!nvlink_where) nvlink_where = n.where;
      }
    for (const auto& l : ctx.facts.of<LinkClass>())
      if (l.fact.nvlinks > 0 && l.fact.a_is_gpu && l.fact.b_is_gpu) {
        nvlinks += l.fact.nvlinks;
        if (!nvlink_where) nvlink_where = l.where;
      }
    std::optional<Seen<TransportUse>> shm;
    bool p2p = false;
    for (const auto& t : ctx.facts.of<TransportUse>()) {
      if (t.fact.kind == "shm" && !shm) shm.emplace(t);
      if (t.fact.kind == "p2p") p2p = true;
    }
    if (nvlinks > 0 && shm && !p2p) {
      score = 0.45;
      a.evidence.push_back(line(fmt::format("NCCL connects GPUs of one node through SHM ({} connection(s)) and never through P2P",
                                            shm->fact.connections), shm->where));
      a.evidence.push_back(line(fmt::format("{} active NVLink(s) between these GPUs: P2P over NVLink is not blocked by ACS or "
                                            "the IOMMU, so it was turned off by configuration", nvlinks), *nvlink_where));
      culprits.push_back("NCCL_P2P_DISABLE or NCCL_P2P_LEVEL (not in the evidence)");
      a.needs.push_back({"the job's NCCL settings", "env | grep ^NCCL_; cat /etc/nccl.conf ~/.nccl.conf",
                         "which setting turned P2P off"});
    }
  }
  if (score == 0) {
    if (a.against.empty()) return std::nullopt;
    a.ruled_out = true;
    a.why_not = a.against.front().says;
    return a;
  }
  a.score = score;
  std::string list;
  for (const auto& c : culprits) list += (list.empty() ? "" : ", ") + c;
  a.summary = "an NCCL setting (" + list + ") forces a slower path than this machine has";
  a.fix = "remove " + list + " from the job's environment (launch script, ~/.nccl.conf, /etc/nccl.conf)" +
          (contains(list, "NCCL_IB_DISABLE") ? " — NCCL's IB transport is also its RoCE transport" : "") +
          ", or keep it only where a measurement shows it helps";
  if (a.cost.text.empty()) a.cost.text = "the path it forces against the one it turns off (measure with and without)";
  a.needs.push_back({"NCCL's transports with the setting removed", "NCCL_DEBUG=INFO <the run>   (Channel … via …, Using network …)",
                     "whether the faster path is then used"});
  return a;
}

std::optional<Assessment> assess_net_socket_fallback(const Context& ctx) {
  Assessment a = start("net-socket-fallback");
  double score = 0;
  std::size_t socket_connections = 0;
  for (const auto& t : ctx.facts.of<TransportUse>())
    if (contains(t.fact.transport, "Socket")) {
      socket_connections += t.fact.connections;
      a.evidence.push_back(line(fmt::format("{} connection(s) over {}", t.fact.connections, t.fact.transport), t.where));
    }
  for (const auto& n : ctx.facts.of<NetNoDevice>())
    a.evidence.push_back(line("NET/" + n.fact.provider + ": no device found — NCCL sees no RDMA device", n.where));
  bool chose_socket = false;
  for (const auto& n : ctx.facts.of<NetworkChosen>())
    if (n.fact.network == "Socket") {
      chose_socket = true;
      std::string devs;
      for (const auto& d : n.fact.devices) devs += (devs.empty() ? "" : ", ") + d;
      a.evidence.push_back(line("NCCL chose its socket network" + (devs.empty() ? "" : " (" + devs + ")"), n.where));
    }
  // Measured bandwidth at socket speed beside the socket network (a table of busbw over "Socket").
  std::optional<EvidenceLine> socket_speed;
  for (const auto& m : ctx.facts.of<Measurement>())
    if ((m.fact.quantity == "busbw" || m.fact.quantity == "bandwidth" || m.fact.quantity == "algbw") && m.fact.unit == "GB/s" &&
        m.fact.value < 12 && m.fact.higher_is_better) {
      const auto net = m.fact.dims.find("network");
      if ((net != m.fact.dims.end() && net->second == "Socket") || chose_socket || socket_connections > 0)
        socket_speed = line(fmt::format("{} {}: the speed of TCP sockets, not of an RDMA port (12–48 GB/s)", row_name(m.fact),
                                        figure(m.fact)),
                            m.where);
    }
  if (!chose_socket && socket_connections == 0 && !ctx.has<NetNoDevice>()) {
    // Only a very low multi-node plateau hints at sockets.
    for (const auto& p : ctx.plateaus)
      if (ctx.span == Span::multi_node && p.fact.saturated && p.fact.gbps < 5) {
        a.evidence.push_back(line(fmt::format("a multi-node all-reduce plateau of {}: socket speed, not RDMA", gbps(p.fact.gbps)), p.where));
        score = 0.4;
      }
    if (score == 0) return std::nullopt;
  }
  const auto rdma = rdma_settings(ctx);
  if (score == 0) {
    if (ctx.span == Span::multi_node) {
      score = socket_connections > 0 ? 0.85 : 0.75;
      for (std::size_t i = 0; i < ctx.span_evidence.size() && i < 2; ++i) a.evidence.push_back(ctx.span_evidence[i]);
    } else if (ctx.span == Span::single_node) {
      a.ruled_out = true;
      a.why_not = "a single-node job: NCCL's socket network then carries only its bootstrap, no collective traffic";
      for (const auto& e : ctx.span_evidence) a.against.push_back(e);
      return a;
    } else if (!rdma.empty()) {
      score = 0.65;
    } else {
      score = 0.3;
      a.needs.push_back({"how many nodes the job spans", "the launch command (torchrun --nnodes, srun -N, mpirun -np/--hostfile)",
                         "a multi-node job (sockets cap it) or a single-node one (not affected)"});
    }
  }
  for (const auto* s : rdma)
    a.evidence.push_back(line(s->name + "=" + s->value + ": the job was set up for RDMA", s->where));
  // Set up for RDMA, and NCCL found no device or chose sockets anyway: the devices are not visible where it runs.
  if (!rdma.empty() && ctx.span != Span::single_node && (ctx.has<NetNoDevice>() || chose_socket)) score = std::max(score, 0.7);
  if (socket_speed) {
    a.evidence.push_back(*socket_speed);
    score = std::max(score, ctx.span == Span::single_node ? score : 0.6);
  }
  for (const auto& c : ctx.facts.of<Claim>())
    if (c.fact.kind == "container" && score > 0) {
      a.evidence.push_back(line("the job runs in a container (" + c.fact.detail + "): the RDMA devices (/dev/infiniband) and "
                                "verbs libraries must be passed into it",
                                c.where));
      a.fix = "pass the RDMA devices into the container (--device /dev/infiniband, --cap-add IPC_LOCK, the rdma-core / "
              "libibverbs packages in the image); " + a.fix;
      break;
    }
  // An interface filter that did not match what NCCL used.
  if (const auto* ifn = ctx.setting("NCCL_SOCKET_IFNAME"))
    for (const auto& n : ctx.facts.of<NetworkChosen>())
      for (const auto& d : n.fact.devices) {
        const std::string dev = d.substr(0, d.find(':'));
        if (!dev.empty() && lower(dev).find(lower(ifn->value.substr(0, ifn->value.find(',')))) == std::string::npos &&
            ifn->value.find('^') == std::string::npos) {
          a.evidence.push_back(line(fmt::format("NCCL_SOCKET_IFNAME={} but NCCL used {} (the filter did not match, or the "
                                                "settings and the log come from different runs)",
                                                ifn->value, dev),
                                    ifn->where));
          break;
        }
      }
  if (const auto* ib = ctx.setting("NCCL_IB_DISABLE"); ib && ib->judgement.turns_off == "ib")
    a.against.push_back(line("NCCL_IB_DISABLE=" + ib->value + " asks for it (see nccl-env-override)", ib->where));
  a.score = score;
  a.summary = "traffic between nodes goes over TCP sockets: NCCL found no usable RDMA device";
  a.cost.text = "socket transport: about 1–3 GB/s per NIC, against 12–48 GB/s per RDMA port";
  a.needs.push_back({"whether the RDMA devices are visible where the job runs", "ibv_devinfo; ls /sys/class/infiniband",
                     "devices missing (container, driver) or present but filtered"});
  return a;
}

std::optional<Assessment> assess_container_ipc_shm(const Context& ctx) {
  Assessment a = start("container-ipc-shm");
  double score = 0;
  for (const auto& w : ctx.facts.of<NcclWarning>())
    if (w.fact.category == "shm-space" || w.fact.category == "shm-create") {
      if (a.evidence.size() < 4) a.evidence.push_back(line("NCCL could not create its shared-memory segment: " + w.fact.message, w.where));
      score = std::max(score, w.fact.category == "shm-space" ? 0.9 : 0.85);
    }
  // Told in words: the shared-memory segment could not be created (the WARN line's message, not pasted).
  if (score == 0)
    if (const auto c = first_claim(ctx, "shm-failed")) {
      a.evidence.push_back(line("the poster: NCCL could not create its shared-memory segment under /dev/shm", c->where));
      score = 0.6;
    }
  // Measured on the machine (doctor's platform probe): a small /dev/shm, a private IPC namespace.
  bool small_shm = false;
  for (const auto& c : ctx.facts.of<Claim>())
    if (c.fact.kind == "shm-small" || c.fact.kind == "ipc-private") {
      a.evidence.push_back(line(c.fact.detail + (c.fact.kind == "shm-small" ? " (NCCL's SHM transport needs tens of MiB per rank pair and channel)" : ""),
                                c.where));
      small_shm = small_shm || c.fact.kind == "shm-small";
    }
  if (small_shm && score > 0) raise(score, 0.05);
  bool shm_used = false;
  for (const auto& t : ctx.facts.of<TransportUse>())
    if (t.fact.kind == "shm" && (score > 0 || small_shm)) {
      a.evidence.push_back(line(fmt::format("NCCL uses its SHM transport ({} connection(s))", t.fact.connections), t.where));
      shm_used = true;
      break;
    }
  if (score == 0 && small_shm) {
    // No failure seen yet: a risk for jobs whose ranks share this node through SHM.
    score = shm_used ? 0.5 : 0.3;
    a.needs.push_back({"NCCL's WARN lines", "NCCL_DEBUG=INFO <the run>   (posix_fallocate, 'Error while creating shared memory segment')",
                       "whether NCCL runs out of /dev/shm"});
  }
  if (score == 0) {
    // A system error at init, on one node: the shared-memory set-up is the usual cause.
    for (const auto& f : ctx.facts.of<NcclFailure>()) {
      const bool system = (f.fact.code && *f.fact.code == 2) || contains(lower(f.fact.name), "system error");
      if (!system) continue;
      if (a.evidence.size() < 3) a.evidence.push_back(line("NCCL failed with '" + f.fact.name + "' (" + f.fact.reporter + ")", f.where));
      score = 0.45;
    }
    if (score == 0) return std::nullopt;
    if (ctx.span == Span::multi_node) {
      score = 0.25;
      a.against.push_back(line("a multi-node job: a system error is as likely a socket or network failure", ctx.span_evidence.front().where));
    } else if (ctx.span == Span::single_node) {
      raise(score, 0.05);
      a.evidence.push_back(line("one node: no network between ranks, so the intra-node (shared-memory) set-up is where a "
                                "system error comes from",
                                ctx.span_evidence.front().where));
    }
    if (ctx.gpu && !ctx.gpu->pcie_p2p) {
      raise(score, 0.05);
      a.evidence.push_back(line(std::string(ctx.gpu->model) + " allows no peer-to-peer over PCIe: NCCL falls back to its "
                                "shared-memory transport between these GPUs",
                                ctx.gpu_evidence->where));
    }
    if (ctx.ranks && *ctx.ranks > 1 && ctx.span != Span::multi_node)
      a.evidence.push_back(line(fmt::format("{} GPUs in the job", *ctx.ranks), ctx.span_evidence.empty() ? Provenance{} : ctx.span_evidence.front().where));
    a.needs.push_back({"NCCL's WARN lines", "NCCL_DEBUG=INFO <the run>   (posix_fallocate, 'Error while creating shared memory segment', shm_open)",
                       "shared memory (container-ipc-shm) against another system-call failure"});
    a.needs.push_back({"the container's /dev/shm and IPC flags", "df -h /dev/shm; docker inspect <container> | grep -e ShmSize -e IpcMode",
                       "a small /dev/shm or a private IPC namespace"});
  }
  for (const auto& c : ctx.facts.of<Claim>())
    if (c.fact.kind == "container" && c.fact.detail.find("--ipc=host") != std::string::npos) {
      a.against.push_back(line("the container runs with --ipc=host: it shares the host's IPC namespace and /dev/shm", c.where));
      score *= 0.5;
      break;
    }
  for (const auto& c : ctx.facts.of<Claim>())
    if (c.fact.kind == "container" && c.fact.detail.find("--ipc=host") == std::string::npos && score > 0 &&
        std::none_of(a.evidence.begin(), a.evidence.end(), [](const EvidenceLine& e) { return e.says.find("container") != std::string::npos; })) {
      a.evidence.push_back(line("the job runs in a container (" + c.fact.detail + ")", c.where));
      raise(score, 0.05);
      break;
    }
  if (score < kContributingScore && score > 0 && a.evidence.empty()) return std::nullopt;
  a.score = score;
  a.summary = "the container's /dev/shm is too small (or its IPC namespace is private) for NCCL's shared-memory buffers";
  a.cost.text = "the job fails or hangs at NCCL init: it cannot run at all";
  return a;
}

std::optional<Assessment> assess_collective_mismatch(const Context& ctx) {
  Assessment a = start("collective-mismatch");
  double score = 0;
  for (const auto& s : ctx.facts.of<WatchdogSummary>()) {
    if (s.fact.op_mismatch) {
      a.evidence.push_back(line("ranks stuck in different collectives at the same sequence number: " + s.fact.verdict, s.where));
      score = std::max(score, 0.85);
    } else if (s.fact.seq_mismatch) {
      a.evidence.push_back(line("ranks stuck at different sequence numbers: " + s.fact.verdict, s.where));
      score = std::max(score, 0.45);
    }
  }
  const auto timeouts = ctx.facts.of<WatchdogTimeout>();
  std::set<int> reporting;
  for (const auto& t : timeouts)
    if (t.fact.rank) reporting.insert(*t.fact.rank);
  for (const auto& t : timeouts) {
    const auto& f = t.fact;
    if (!f.elapsed_ms || !f.timeout_ms || *f.elapsed_ms < *f.timeout_ms) continue;
    double sc = 0.4;
    std::string says = fmt::format("{} ran {} ms against a {} ms limit: no progress at all, not slowness",
                                   f.op.value_or("a collective") + (f.rank ? fmt::format(" on rank {}", *f.rank) : ""), *f.elapsed_ms,
                                   *f.timeout_ms);
    a.evidence.push_back(line(says, t.where));
    if ((f.numel_in && *f.numel_in == 1) || (f.op && contains(lower(*f.op), "barrier"))) {
      raise(sc, 0.15);
      a.evidence.push_back(line(f.numel_in ? "a 1-element all-reduce: the shape of a barrier" : "a barrier", t.where));
    }
    for (const auto& e : ctx.facts.of<TrainingEnded>())
      if (e.where.source == t.where.source && e.where.line < t.where.line) {
        raise(sc, 0.2);
        a.evidence.push_back(line("after the training loop had ended: a collective issued by end-of-training code (a "
                                  "checkpoint save, a final sync) that not every rank ran",
                                  e.where));
        break;
      }
    if (reporting.size() == 1 && (!ctx.ranks || *ctx.ranks > 1)) {
      raise(sc, 0.1);
      a.evidence.push_back(line(fmt::format("only rank {} reports it: the other ranks were not in this collective", *reporting.begin()), t.where));
    }
    score = std::max(score, sc);
    break;
  }
  // The poster names a code path only one rank runs (validation, a checkpoint, logging on rank 0) and the job hangs.
  bool hang = ctx.has<Stall>();
  for (const auto& c : ctx.facts.of<Claim>()) hang = hang || c.fact.kind == "hang";
  for (const auto& c : ctx.facts.of<Claim>())
    if (c.fact.kind == "one-rank-path") {
      a.evidence.push_back(line("a code path only one rank runs: \"" + c.fact.detail + "\"", c.where));
      score = std::max(score, hang || !timeouts.empty() ? 0.55 : 0.3);
      if (hang) a.evidence.push_back(line("and the job hangs: the other ranks never issue that path's collectives", c.where));
      break;
    }
  // A hang or timeout where ranks' code paths part (evaluation, validation, an epoch's end, a save): the ranks that run
  // that code issue collectives the others never do, so the watchdog fires — the most common cause of such hangs.
  if (const auto c = first_claim(ctx, "hang-at-boundary")) {
    a.evidence.push_back(line("the job hangs or times out at " + c->fact.detail + ": a point where ranks can take different code "
                              "paths (work only rank 0 does, uneven batches), so one rank waits in a collective the others "
                              "never issue",
                              c->where));
    score = std::max(score, 0.45);
    a.needs.push_back({"which collective each rank was in when it stopped",
                       "TORCH_DISTRIBUTED_DEBUG=DETAIL and the watchdog messages of every rank (or py-spy dump of each rank)",
                       "collective-mismatch (ranks in different collectives) against a network fault (all in the same one)"});
  }
  if (score == 0) return std::nullopt;
  // Network failures around the timeout point elsewhere.
  for (const auto& w : ctx.facts.of<NcclWarning>())
    if (w.fact.category == "ib" || w.fact.category == "socket") {
      a.against.push_back(line("a network error in the same run: " + w.fact.message, w.where));
      score *= 0.7;
      break;
    }
  a.score = score;
  a.summary = "one rank issued a collective the others never issued (or in another order): it waited for partners "
              "until the watchdog killed the job";
  for (const auto& t : timeouts)
    if (t.fact.timeout_ms) {
      a.cost.seconds = *t.fact.timeout_ms / 1e3;
      a.cost.per = "occurrence";
      a.cost.text = fmt::format("the whole watchdog timeout ({}) of idle allocation, then a failed job", duration(*t.fact.timeout_ms / 1e3));
      break;
    }
  a.needs.push_back({"the last collectives of every rank", "TORCH_DISTRIBUTED_DEBUG=DETAIL TORCH_NCCL_TRACE_BUFFER_SIZE=2000 <the job>",
                     "which rank issued the extra collective, and from where"});
  return a;
}

}  // namespace scalescope::diagnose
