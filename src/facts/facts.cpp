#include "facts/facts.h"

#include <type_traits>

#include "text/log_text.h"

namespace scalescope::diagnose {
namespace {

using analyze::to_valid_utf8;
using nlohmann::json;

// A field's JSON: strings repaired to valid UTF-8, optionals null when absent, vectors and maps element-wise.
json value(const std::string& s) { return to_valid_utf8(s); }
json value(bool b) { return b; }
template <class T>
  requires std::is_arithmetic_v<T>
json value(T v) {
  return v;
}
template <class T>
json value(const std::optional<T>& v) {
  return v ? value(*v) : json();
}
template <class T>
json value(const std::vector<T>& v) {
  json a = json::array();
  for (const auto& e : v) a.push_back(value(e));
  return a;
}
json value(const std::map<std::string, std::string>& m) {
  json o = json::object();
  for (const auto& [k, v] : m) o[to_valid_utf8(k)] = to_valid_utf8(v);
  return o;
}

// Writes name/value pairs into j: put(j, "a", x, "b", y…).
void put(json&) {}
template <class V, class... Rest>
void put(json& j, const char* name, const V& v, const Rest&... rest) {
  j[name] = value(v);
  put(j, rest...);
}

void fields(json& j, const GpuSeen& f) { put(j, "name", f.name, "index", f.index, "bus_id", f.bus_id, "host", f.host, "rank", f.rank); }
void fields(json& j, const GpuCount& f) { put(j, "count", f.count, "scope", f.scope, "host", f.host); }
void fields(json& j, const LinkClass& f) {
  put(j, "a", f.a, "b", f.b, "a_is_gpu", f.a_is_gpu, "b_is_gpu", f.b_is_gpu, "token", f.token, "nvlinks", f.nvlinks);
}
void fields(json& j, const DeviceAffinity& f) {
  put(j, "device", f.device, "cpus", f.cpus, "cpu_count", f.cpu_count, "numa", f.numa, "nic_name", f.nic_name);
}
void fields(json& j, const NvlinkState& f) {
  put(j, "gpu", f.gpu, "gpu_name", f.gpu_name, "link", f.link, "active", f.active, "gbps", f.gbps, "version", f.version);
}
void fields(json& j, const NvlinkCounter& f) { put(j, "gpu", f.gpu, "link", f.link, "counter", f.counter, "value", f.value); }
void fields(json& j, const PcieLinkState& f) {
  put(j, "device", f.device, "device_name", f.device_name, "current_gen", f.current_gen, "max_gen", f.max_gen,
      "device_max_gen", f.device_max_gen, "current_width", f.current_width, "max_width", f.max_width,
      "device_max_width", f.device_max_width, "under_load", f.under_load, "downgraded", f.downgraded);
}
void fields(json& j, const AcsControl& f) {
  put(j, "device", f.device, "device_name", f.device_name, "src_valid", f.src_valid, "trans_blk", f.trans_blk,
      "req_redir", f.req_redir, "cmplt_redir", f.cmplt_redir, "upstream_fwd", f.upstream_fwd, "egress_ctrl",
      f.egress_ctrl, "direct_trans", f.direct_trans);
}
void fields(json& j, const IommuMode& f) { put(j, "mode", f.mode); }
void fields(json& j, const P2pStatus& f) { put(j, "a", f.a, "b", f.b, "status", f.status, "access", f.access); }
void fields(json& j, const P2pMeasurement& f) {
  put(j, "a", f.a, "b", f.b, "peer_access", f.peer_access, "bidirectional", f.bidirectional, "gbps", f.gbps,
      "latency_us", f.latency_us);
}
void fields(json& j, const XidEvent& f) { put(j, "bus_id", f.bus_id, "code", f.code, "text", f.text); }
void fields(json& j, const GpuClocks& f) {
  put(j, "gpu", f.gpu, "sm_mhz", f.sm_mhz, "max_sm_mhz", f.max_sm_mhz, "power_w", f.power_w, "power_limit_w",
      f.power_limit_w, "temperature_c", f.temperature_c, "active_throttle_reasons", f.active_throttle_reasons);
}
void fields(json& j, const NicSeen& f) {
  put(j, "name", f.name, "line_gbit", f.line_gbit, "link_layer", f.link_layer, "state", f.state, "used_by", f.used_by);
}
void fields(json& j, const HypervisorSeen& f) { put(j, "what", f.what); }
void fields(json& j, const Setting& f) { put(j, "name", f.name, "value", f.value, "origin", f.origin); }
void fields(json& j, const NcclVersion& f) { put(j, "version", f.version); }
void fields(json& j, const TransportUse& f) {
  put(j, "transport", f.transport, "transport_kind", f.kind, "gdrdma", f.gdrdma, "connections", f.connections,
      "example_from", f.example_from, "example_to", f.example_to, "host", f.host, "direction", f.direction);
}
void fields(json& j, const NetworkChosen& f) { put(j, "network", f.network, "devices", f.devices); }
void fields(json& j, const NetNoDevice& f) { put(j, "provider", f.provider); }
void fields(json& j, const GdrState& f) { put(j, "hca", f.hca, "enabled", f.enabled); }
void fields(json& j, const NcclWarning& f) { put(j, "category", f.category, "location", f.location, "message", f.message); }
void fields(json& j, const NcclFailure& f) { put(j, "code", f.code, "name", f.name, "reporter", f.reporter, "phase", f.phase); }
void fields(json& j, const GraphSearch& f) {
  put(j, "pattern", f.pattern, "channels", f.channels, "speed_intra_gbps", f.speed_intra_gbps, "speed_inter_gbps",
      f.speed_inter_gbps, "type_intra", f.type_intra, "type_inter", f.type_inter);
}
void fields(json& j, const P2pSupport& f) { put(j, "supported", f.supported); }
void fields(json& j, const WorldShape& f) {
  put(j, "ranks", f.ranks, "nodes", f.nodes, "ranks_per_node", f.ranks_per_node, "gpus_per_process", f.gpus_per_process,
      "processes", f.processes, "hosts", f.hosts, "basis", f.basis);
}
void fields(json& j, const Launch& f) {
  put(j, "launcher", f.launcher, "nproc_per_node", f.nproc_per_node, "nnodes", f.nnodes, "np", f.np, "hostfile",
      f.hostfile, "program", f.program, "args", f.args);
}
void fields(json& j, const ModelSeen& f) { put(j, "name", f.name, "parameters", f.parameters, "dtype", f.dtype); }
void fields(json& j, const BatchSize& f) {
  put(j, "per_device", f.per_device, "global", f.global, "gradient_accumulation", f.gradient_accumulation);
}
void fields(json& j, const FrameworkMessage& f) { put(j, "id", f.id, "framework", f.framework); }
void fields(json& j, const DdpConfig& f) {
  put(j, "find_unused_parameters", f.find_unused_parameters, "static_graph", f.static_graph,
      "gradient_as_bucket_view", f.gradient_as_bucket_view, "overlap", f.overlap, "bucket_cap_mb", f.bucket_cap_mb, "bucket_bytes",
      f.bucket_bytes, "world_size", f.world_size, "dtype", f.dtype, "forward_ms", f.forward_ms,
      "backward_compute_ms", f.backward_compute_ms, "backward_comm_ms", f.backward_comm_ms,
      "backward_comm_compute_overlap_ms", f.backward_comm_compute_overlap_ms);
}
void fields(json& j, const WatchdogTimeout& f) {
  put(j, "rank", f.rank, "process_group", f.process_group, "op", f.op, "seq", f.seq, "numel_in", f.numel_in,
      "numel_out", f.numel_out, "timeout_ms", f.timeout_ms, "elapsed_ms", f.elapsed_ms);
}
void fields(json& j, const WatchdogSummary& f) {
  put(j, "op_mismatch", f.op_mismatch, "seq_mismatch", f.seq_mismatch, "behind_rank", f.behind_rank,
      "reporting_ranks", f.reporting_ranks, "verdict", f.verdict);
}
void fields(json& j, const TrainingEnded& f) { put(j, "framework", f.framework); }
void fields(json& j, const Stall& f) { put(j, "what", f.what); }
void fields(json& j, const ProcessFailure& f) { put(j, "what", f.what); }
void fields(json& j, const JobFailed& f) {
  put(j, "ended", f.ended, "exception", f.exception, "rank", f.rank, "failed_ranks", f.failed_ranks, "frame", f.frame,
      "launcher_crash", f.launcher_crash);
}
void fields(json& j, const ProfileRow& f) {
  put(j, "function", f.function, "file", f.file, "file_line", f.file_line, "calls", f.calls, "primitive_calls",
      f.primitive_calls, "tottime_s", f.tottime_s, "cumtime_s", f.cumtime_s);
}
void fields(json& j, const Claim& f) { put(j, "claim", f.kind, "detail", f.detail); }
void fields(json& j, const BusbwPlateau& f) {
  put(j, "collective", f.collective, "gbps", f.gbps, "from_bytes", f.from_bytes, "to_bytes", f.to_bytes, "sizes",
      f.sizes, "saturated", f.saturated, "peak_gbps", f.peak_gbps, "ranks", f.ranks, "latency_us", f.latency_us,
      "reported_average_gbps", f.reported_average_gbps, "wrong_rows", f.wrong_rows);
}
void fields(json& j, const Measurement& f) {
  put(j, "quantity", f.quantity, "unit", f.unit, "value", f.value, "higher_is_better", f.higher_is_better, "dims",
      f.dims, "members", f.members, "row", f.row, "table", f.table);
}
void fields(json& j, const StepPhases& f) {
  put(j, "world_size", f.world_size, "rank", f.rank, "step_s", f.step_s, "compute_s", f.compute_s, "forward_s",
      f.forward_s, "backward_s", f.backward_s, "optimizer_s", f.optimizer_s, "all_reduce_s", f.all_reduce_s,
      "exposed_comm_s", f.exposed_comm_s, "data_wait_s", f.data_wait_s, "host_sync_s", f.host_sync_s,
      "launch_gap_s", f.launch_gap_s, "other_s", f.other_s, "gpu_busy_s", f.gpu_busy_s, "step_unprofiled_s",
      f.step_unprofiled_s, "profiled", f.profiled, "cpu_rank", f.cpu_rank, "basis", f.basis);
}
void fields(json& j, const ScalingPoint& f) {
  put(j, "world_size", f.world_size, "speedup", f.speedup, "efficiency", f.efficiency, "comm_ratio", f.comm_ratio,
      "overlap", f.overlap, "verdict", f.verdict, "mode", f.mode);
}
void fields(json& j, const Straggler& f) {
  put(j, "who", f.who, "late_ms_per_step", f.late_ms_per_step, "compute_skew", f.compute_skew, "basis", f.basis);
}
void fields(json& j, const HostSync& f) {
  put(j, "label", f.label, "per_step", f.per_step, "gpu_idle_ms_per_step", f.gpu_idle_ms_per_step,
      "blocked_ms_per_step", f.blocked_ms_per_step);
}
void fields(json& j, const LaunchGaps& f) {
  put(j, "per_step", f.per_step, "idle_ms_per_step", f.idle_ms_per_step, "median_us", f.median_us, "mean_kernel_us",
      f.mean_kernel_us, "profiled", f.profiled);
}
void fields(json& j, const CodeUse& f) {
  put(j, "construct", f.construct, "detail", f.detail, "in_loop", f.in_loop, "value", f.value);
}
void fields(json& j, const CpuOpTime& f) { put(j, "name", f.name, "ms_per_step", f.ms_per_step, "calls_per_step", f.calls_per_step); }

}  // namespace

void FactSet::append(FactSet&& other) {
  if (facts_.empty()) {
    facts_ = std::move(other.facts_);
    return;
  }
  facts_.reserve(facts_.size() + other.facts_.size());
  for (auto& f : other.facts_) facts_.push_back(std::move(f));
  other.facts_.clear();
}

std::string kind_of(const FactValue& value) {
  return std::visit([](const auto& f) { return std::string(std::decay_t<decltype(f)>::kKind); }, value);
}

Provenance at(const std::string& source, std::size_t line, std::string_view line_text) {
  return {source, line, analyze::excerpt(line_text)};
}

void to_json(json& j, const Provenance& p) {
  j = {{"source", to_valid_utf8(p.source)}, {"line", p.line}, {"excerpt", to_valid_utf8(p.excerpt)}};
}

void to_json(json& j, const Fact& fact) {
  j = json::object();
  j["kind"] = kind_of(fact.value);
  std::visit([&](const auto& f) { fields(j, f); }, fact.value);
  j["source"] = to_valid_utf8(fact.where.source);
  j["line"] = fact.where.line;
  j["excerpt"] = to_valid_utf8(fact.where.excerpt);
}

void to_json(json& j, const FactSet& facts) {
  json a = json::array();
  for (const auto& f : facts.all()) a.push_back(f);
  j = {{"facts", std::move(a)}};
}

}  // namespace scalescope::diagnose
