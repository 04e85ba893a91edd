// One rank's record from its trace (trace_analysis_internal.h's extract): the GPU operations and their classes
// (compute, communication, copies), the collectives with their process group, sequence number and size, host
// synchronisations and blocking copies, data-loader and DDP ranges, the steps and their windows.

#include "analysis/trace_analysis_internal.h"

#include <cstring>
#include <map>
#include <regex>
#include <set>
#include <unordered_map>

namespace scalescope::analyze::trace_analysis_internal {
namespace {

std::optional<int> rank_from_file_name(const std::string& path) {
  const std::string base = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  static const std::regex re(R"((?:rank|worker)[-_]?(\d{1,6}))", std::regex::icase);
  std::smatch m;
  if (std::regex_search(base, m, re)) return std::stoi(m[1].str());
  return std::nullopt;
}

bool is_sync_call(std::string_view n) { return n.find("Synchronize") != std::string_view::npos; }

// cudaMemcpy, cudaMemcpy2D, cudaMemcpyToSymbol… and cuMemcpyDtoH: blocking copies (the Async variants are not).
bool is_blocking_copy_call(std::string_view n) {
  return (starts_with(n, "cudaMemcpy") || starts_with(n, "cuMemcpy")) && n.find("Async") == std::string_view::npos &&
         n.find("Peer") == std::string_view::npos;
}

/// nccl-tests' "size" of one collective from its metadata, bytes.
std::optional<std::int64_t> collective_bytes(std::optional<Collective> kind, const CollectiveArgs& c, int esize) {
  std::optional<std::int64_t> n = c.in_nelems;
  if (kind == Collective::all_gather && c.out_nelems) n = c.out_nelems;  // the whole output
  if (!n || *n < 0) return std::nullopt;
  if (*n > INT64_MAX / 16) return std::nullopt;
  return *n * esize;
}

}  // namespace

RankData extract(Trace&& t, std::size_t file_index, const std::string& path, StepWindows windows) {
  RankData d;
  RankAnalysis& out = d.out;
  out.source = path;
  out.json_bytes = t.json_bytes;
  out.events_read = t.events_read;
  out.events_kept = t.events.size();
  out.warnings = t.warnings;
  d.base_time_ns = t.base_time_ns;
  if (t.distributed) {
    out.world_size = t.distributed->world_size;
    out.backend = t.distributed->backend;
    out.nccl_version = t.distributed->nccl_version;
  }
  if (t.distributed && t.distributed->rank && *t.distributed->rank >= 0 && *t.distributed->rank < (1 << 30)) {
    out.rank = static_cast<int>(*t.distributed->rank);
    out.rank_source = "distributedInfo";
  } else if (auto r = rank_from_file_name(path)) {
    out.rank = *r;
    out.rank_source = "file name";
  } else {
    out.rank = static_cast<int>(file_index);
    out.rank_source = "file order";
  }
  if (!t.distributed) out.warnings.push_back("no distributedInfo: rank " + std::to_string(out.rank) + " taken from the " + out.rank_source);

  // The device analysed: the one with the most GPU time (a rank drives one GPU; others are profiler noise).
  std::map<int, std::int64_t> device_time;
  auto device_of = [&](const TraceEvent& e) -> int {
    if (e.device >= 0) return e.device;
    const TraceId& pid = t.ids[e.pid];
    if (!pid.is_string && pid.number >= 0 && pid.number < 1024) return static_cast<int>(pid.number);
    return 0;
  };
  for (const auto& e : t.events)
    if (is_gpu_activity(e.kind))
      device_time[device_of(e)] += std::max<std::int64_t>(e.dur_ns, 1);
  if (!device_time.empty()) {
    out.device = std::max_element(device_time.begin(), device_time.end(),
                                  [](const auto& a, const auto& b) { return a.second < b.second; })->first;
    out.has_gpu = true;
    if (device_time.size() > 1)
      out.warnings.push_back(fmt::format("GPU activity on {} devices; device {} (most GPU time) analysed",
                                         device_time.size(), out.device));
    if (t.device_properties)
      for (const auto& p : *t.device_properties)
        if (p.id == out.device) out.device_name = p.name;
  }

  // Links: External id → collective metadata of a CPU op (record_param_comms); correlation → launch call;
  // per CPU thread, the nccl:* / record_param_comms ranges (by start), the item() ranges and data loading.
  std::unordered_map<std::int64_t, std::int32_t> coll_by_external;
  std::unordered_map<std::int64_t, std::size_t> call_by_corr;  // runtime/driver call (its event) by correlation
  std::map<std::uint32_t, std::vector<std::pair<Iv, std::int32_t>>> coll_ranges;
  std::map<std::uint32_t, Ivs> item_ranges;
  Ivs dataloader;
  std::vector<Step> steps;
  std::int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const TraceEvent& e = t.events[i];
    const std::string_view name = t.names[e.name];
    const std::int64_t end = e.ts_ns + e.dur_ns;
    lo = std::min(lo, e.ts_ns);
    hi = std::max(hi, end);
    switch (e.kind) {
      case EventKind::cpu_op:
      case EventKind::user_annotation:
        if (e.collective >= 0) {
          if (e.external_id >= 0) coll_by_external.emplace(e.external_id, e.collective);
          coll_ranges[e.tid].push_back({{e.ts_ns, end}, e.collective});
        }
        if (name == "aten::item" || name == "aten::_local_scalar_dense") item_ranges[e.tid].emplace_back(e.ts_ns, end);
        if (contains_icase(name, "dataloader")) dataloader.emplace_back(e.ts_ns, end);
        if (starts_with(name, "DistributedDataParallel.") || name.find("ddp.reducer::") != std::string_view::npos ||
            starts_with(name, "_DDPSink"))
          if (d.ddp_events.size() < 1000000) d.ddp_events.push_back({std::string(name), {e.ts_ns, end}});
        if (starts_with(name, "ProfilerStep#")) {
          Step s;
          s.name = std::string(name);
          s.begin = e.ts_ns;
          s.end = end;
          try {
            s.number = std::stoll(std::string(name.substr(13)));
          } catch (...) {
            s.number = -1;
          }
          if (s.end > s.begin) steps.push_back(s);
        }
        break;
      case EventKind::cuda_runtime:
      case EventKind::cuda_driver:
        if (e.correlation >= 0) call_by_corr.emplace(e.correlation, i);
        break;
      default:
        break;
    }
  }
  for (auto& [tid, v] : coll_ranges) std::sort(v.begin(), v.end());
  for (auto& [tid, v] : item_ranges) v = unite(std::move(v));
  d.dataloader = unite(std::move(dataloader));

  // Steps: one per ProfilerStep number (a duplicate on another thread keeps the longer), by start.
  std::map<std::int64_t, Step> by_number;
  for (auto& s : steps) {
    auto [it, fresh] = by_number.emplace(s.number, s);
    if (!fresh && s.end - s.begin > it->second.end - it->second.begin) it->second = s;
  }
  for (auto& [n, s] : by_number) d.steps.push_back(s);
  std::sort(d.steps.begin(), d.steps.end(), [](const Step& a, const Step& b) { return a.begin < b.begin; });
  out.steps_from_annotations = !d.steps.empty();
  if (d.steps.empty() && lo < hi) {
    d.steps.push_back(Step{"whole trace", -1, lo, hi});
    out.warnings.push_back("no ProfilerStep#N annotations: the whole trace is analysed as one step");
  }
  auto step_of = [&](std::int64_t ts) -> std::int64_t {
    if (!out.steps_from_annotations) return -1;
    auto it = std::upper_bound(d.steps.begin(), d.steps.end(), ts, [](std::int64_t x, const Step& s) { return x < s.begin; });
    if (it == d.steps.begin()) return -1;
    --it;
    return ts < it->end ? it->number : -1;
  };

  // Without ProfilerStep#N (a profiler run without a schedule, the legacy export): a step ends where the optimizer's
  // step ends, on the thread that runs the optimizer (the Optimizer.step#… range PyTorch records around every step).
  if (!out.steps_from_annotations) {
    std::map<std::uint32_t, std::vector<std::int64_t>> ends_by_thread;
    for (const auto& e : t.events)
      if ((e.kind == EventKind::cpu_op || e.kind == EventKind::user_annotation) && starts_with(t.names[e.name], "Optimizer.step#"))
        ends_by_thread[e.tid].push_back(e.ts_ns + e.dur_ns);
    std::vector<std::int64_t> ends;
    for (auto& [tid, v] : ends_by_thread)
      if (v.size() > ends.size()) ends = v;
    if (ends.size() >= 2) {
      std::sort(ends.begin(), ends.end());
      d.steps.clear();
      for (std::size_t i = 1; i < ends.size(); ++i)
        d.steps.push_back(Step{fmt::format("ProfilerStep#{}", i), static_cast<std::int64_t>(i), ends[i - 1], ends[i]});
      out.steps_from_annotations = true;
      std::erase(out.warnings, std::string("no ProfilerStep#N annotations: the whole trace is analysed as one step"));
      out.warnings.push_back(fmt::format("no ProfilerStep#N annotations: {} steps taken between the ends of consecutive "
                                         "optimizer steps (Optimizer.step#…)", d.steps.size()));
    }
  }

  // CPU ranks (gloo, MPI): no GPU activity, but CPU collectives or operators. See RankAnalysis::cpu_ranks.
  if (!out.has_gpu && !t.cpu_work.empty()) {
    std::uint32_t main_tid = 0;
    std::int64_t most = -1;
    for (const auto& [tid, v] : t.cpu_work) {
      std::int64_t total = 0;
      for (const auto& [b, e] : v) total += e - b;
      if (total > most) most = total, main_tid = tid;
    }
    std::vector<Iv> comm_ranges, c10d_ranges;
    std::vector<std::pair<std::int64_t, std::string>> comm_names, c10d_names;
    for (const auto& e : t.events) {
      if (e.kind != EventKind::cpu_op && e.kind != EventKind::user_annotation) continue;
      const std::string_view name = t.names[e.name];
      if (is_cpu_collective_name(name)) {
        comm_ranges.emplace_back(e.ts_ns, e.ts_ns + e.dur_ns);
        comm_names.emplace_back(e.ts_ns, std::string(name.substr(name.find(':') + 1)));
      } else if (starts_with(name, "c10d::") && e.tid == main_tid) {
        c10d_ranges.emplace_back(e.ts_ns, e.ts_ns + e.dur_ns);
        c10d_names.emplace_back(e.ts_ns, std::string(name.substr(6)));
      }
    }
    if (comm_ranges.empty()) comm_ranges = std::move(c10d_ranges), comm_names = std::move(c10d_names);
    if (!comm_ranges.empty()) {
      out.has_gpu = out.cpu_ranks = true;
      out.device = 0;
      out.device_name = "CPU";
      const auto main_name = static_cast<std::uint32_t>(t.names.size());
      t.names.push_back("CPU operators of the main thread");
      const Ivs work = subtract(Ivs(t.cpu_work[main_tid].begin(), t.cpu_work[main_tid].end()), d.dataloader);
      for (const auto& [b, e] : work) d.gpu.push_back(GpuOp{b, e, main_name, 0, 0, GpuClass::compute});
      out.compute_stream = 0;
      for (std::size_t i = 0; i < comm_ranges.size(); ++i) {
        const auto name = static_cast<std::uint32_t>(t.names.size());
        t.names.push_back(comm_names[i].second);
        d.gpu.push_back(GpuOp{comm_ranges[i].first, comm_ranges[i].second, name, 0, 1, GpuClass::comm});
        CommOp c;
        c.stream = 1;
        c.start = comm_ranges[i].first;
        c.end = comm_ranges[i].second;
        c.kind = collective_from_name(comm_names[i].second);
        c.kind_name = c.kind ? std::string(comm::to_string(*c.kind)) : comm_names[i].second;
        c.pg = "cpu";
        c.step = step_of(c.start);
        c.ranks = out.world_size;
        d.comms.push_back(std::move(c));
      }
      std::sort(d.comms.begin(), d.comms.end(), [](const CommOp& a, const CommOp& b) { return a.start < b.start; });
    }
  }

  // World size and PG sizes for busbw when a collective does not carry its group size.
  std::map<std::string, std::int64_t> pg_size;
  if (t.distributed)
    for (const auto& pg : t.distributed->pg_config)
      if (pg.size) pg_size[pg.name] = *pg.size;
  bool assumed_world = false;

  // GPU operations of the analysed device.
  std::map<std::int32_t, std::int64_t> compute_by_stream;
  std::map<std::int64_t, Iv> launched_in_step;  // step number → span of the GPU work launched in its CPU range
  for (const auto& e : t.events) {
    if (!is_gpu_activity(e.kind)) continue;
    if (device_of(e) != out.device) continue;
    GpuOp op;
    op.start = e.ts_ns;
    op.end = e.ts_ns + e.dur_ns;
    op.name = e.name;
    op.launch = e.launch;
    op.stream = e.stream >= 0 ? e.stream
                              : (!t.ids[e.tid].is_string && t.ids[e.tid].number >= 0 && t.ids[e.tid].number < INT32_MAX
                                     ? static_cast<std::int32_t>(t.ids[e.tid].number)
                                     : -1);
    const std::string_view name = t.names[e.name];
    if (e.kind == EventKind::kernel) {
      op.cls = (is_nccl_kernel_name(name) || e.collective >= 0) ? GpuClass::comm : GpuClass::compute;
    } else if (e.kind == EventKind::memcpy) {
      op.cls = name.find("HtoD") != std::string_view::npos ? GpuClass::h2d : GpuClass::other_copy;
    } else {
      op.cls = GpuClass::other_copy;
    }
    if (op.cls == GpuClass::compute) compute_by_stream[op.stream] += e.dur_ns;
    d.gpu.push_back(op);
    // The API call that issued it (a launch, copy or memset), linked by correlation: it says the step.
    const TraceEvent* call = nullptr;
    if (e.correlation >= 0)
      if (auto it = call_by_corr.find(e.correlation); it != call_by_corr.end()) call = &t.events[it->second];
    if (call && out.steps_from_annotations)
      if (const std::int64_t step = step_of(call->ts_ns); step >= 0) {
        auto [span, fresh] = launched_in_step.try_emplace(step, Iv{op.start, op.end});
        if (!fresh) span->second = {std::min(span->second.first, op.start), std::max(span->second.second, op.end)};
      }
    if (op.cls != GpuClass::comm) continue;

    // Its collective metadata: on the kernel, on the CPU op with the same External id, or on the nccl:* range
    // that encloses the launch on the launching thread; else what the kernel name says.
    CommOp c;
    c.stream = op.stream;
    c.start = op.start;
    c.end = op.end;
    std::int32_t coll = e.collective;
    if (coll < 0 && e.external_id >= 0)
      if (auto it = coll_by_external.find(e.external_id); it != coll_by_external.end()) coll = it->second;
    std::int64_t launch_ts = e.ts_ns;
    if (call && t.names[call->name].find("Launch") != std::string_view::npos) {
      launch_ts = call->ts_ns;
      if (coll < 0) {
        if (auto r = coll_ranges.find(call->tid); r != coll_ranges.end()) {
          const auto& v = r->second;
          auto up = std::upper_bound(v.begin(), v.end(), std::make_pair(Iv{call->ts_ns, INT64_MAX}, INT32_MAX));
          for (int k = 0; k < 16 && up != v.begin(); ++k) {
            --up;
            if (up->first.first <= call->ts_ns && call->ts_ns <= up->first.second) {
              coll = up->second;
              break;
            }
          }
        }
      }
    }
    c.step = step_of(launch_ts);
    c.send_recv_kernel = name.find("SendRecv") != std::string_view::npos;
    const CollectiveArgs* meta = coll >= 0 ? &t.collectives[static_cast<std::size_t>(coll)] : nullptr;
    if (meta) c.kind = collective_from_name(meta->collective);
    if (!c.kind) c.kind = collective_from_name(name);
    c.kind_name = c.kind ? std::string(comm::to_string(*c.kind))
                         : (meta && !meta->collective.empty() ? meta->collective : std::string("unknown"));
    c.pg = meta && !meta->pg_name.empty() ? "pg " + meta->pg_name : "stream " + std::to_string(op.stream);
    if (meta) {
      c.seq = meta->seq;
      c.dtype = meta->dtype;
      if (auto es = dtype_size(meta->dtype)) {
        c.bytes = collective_bytes(c.kind, *meta, *es);
        if (c.bytes) c.size_source = meta->from_input_dims ? "annotation Input Dims" : "NCCL metadata";
      }
      c.ranks = meta->group_size;
      if (!c.ranks && !meta->pg_name.empty())
        if (auto it = pg_size.find(meta->pg_name); it != pg_size.end()) c.ranks = it->second;
    }
    if (!c.ranks && out.world_size) {
      c.ranks = out.world_size;
      assumed_world = true;
    }
    d.comms.push_back(std::move(c));
  }
  if (assumed_world)
    out.warnings.push_back("some collectives carry no group size: the world size is used for their busbw factor");

  // Step windows on the GPU side (StepWindows::gpu_launches). Collectives keep the step of their launch (above),
  // which is what matching across ranks needs.
  out.step_windows = out.steps_from_annotations ? "ProfilerStep#N CPU ranges" : "whole trace";
  if (windows == StepWindows::gpu_launches && out.steps_from_annotations && out.has_gpu && !out.cpu_ranks) {
    std::vector<Iv> spans;
    std::string missing;
    for (const Step& s : d.steps) {
      auto it = launched_in_step.find(s.number);
      if (it == launched_in_step.end() || s.number < 0) {
        missing = s.name;
        break;
      }
      if (!spans.empty() && it->second.first <= spans.back().first) {
        missing = s.name + " (its GPU work starts before the previous step's)";
        break;
      }
      spans.push_back(it->second);
    }
    if (missing.empty()) {
      for (std::size_t k = 0; k < d.steps.size(); ++k) {
        d.steps[k].begin = spans[k].first;
        d.steps[k].end = k + 1 < spans.size() ? spans[k + 1].first : spans[k].second;
      }
      out.step_windows = "GPU work launched in each step";
    } else {
      out.warnings.push_back("steps are the ProfilerStep#N CPU ranges: no GPU work is linked to a launch in " +
                             missing + ", so the GPU-side windows cannot be drawn");
    }
  }
  std::sort(d.gpu.begin(), d.gpu.end(), [](const GpuOp& a, const GpuOp& b) { return a.start < b.start; });
  std::sort(d.comms.begin(), d.comms.end(), [](const CommOp& a, const CommOp& b) { return a.start < b.start; });
  if (!compute_by_stream.empty())
    out.compute_stream = std::max_element(compute_by_stream.begin(), compute_by_stream.end(),
                                          [](const auto& a, const auto& b) { return a.second < b.second; })->first;

  Ivs compute, comm, h2d, other;
  for (const auto& op : d.gpu) {
    const Iv iv{op.start, op.end};
    switch (op.cls) {
      case GpuClass::compute:
        compute.push_back(iv);
        break;
      case GpuClass::comm: comm.push_back(iv); break;
      case GpuClass::h2d: h2d.push_back(iv); break;
      case GpuClass::other_copy: other.push_back(iv); break;
    }
  }
  d.compute = unite(std::move(compute));
  d.comm = unite(std::move(comm));
  d.h2d = unite(std::move(h2d));
  d.other_copy = unite(std::move(other));
  d.busy = unite2(unite2(d.compute, d.comm), unite2(d.h2d, d.other_copy));

  // Host synchronisation points, by the thread they block, labelled by what issued them.
  std::map<std::uint32_t, std::vector<std::size_t>> api_by_tid;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const TraceEvent& e = t.events[i];
    if (e.kind == EventKind::cuda_runtime || e.kind == EventKind::cuda_driver) api_by_tid[e.tid].push_back(i);
  }
  for (auto& [tid, idx] : api_by_tid) {
    std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return t.events[a].ts_ns < t.events[b].ts_ns; });
    const Ivs* items = item_ranges.count(tid) ? &item_ranges[tid] : nullptr;
    for (std::size_t k = 0; k < idx.size(); ++k) {
      const TraceEvent& e = t.events[idx[k]];
      const std::string_view name = t.names[e.name];
      const bool sync = is_sync_call(name);
      if (!sync && !is_blocking_copy_call(name)) continue;
      SyncPoint s{e.ts_ns, e.ts_ns + e.dur_ns, std::string(name)};
      bool in_item = false;
      if (items) {
        auto it = std::upper_bound(items->begin(), items->end(), Iv{e.ts_ns, INT64_MAX});
        if (it != items->begin() && std::prev(it)->second >= e.ts_ns) in_item = true;
      }
      if (in_item) s.label = "aten::item";
      else if (!sync) s.label = "blocking copy (" + std::string(name) + ")";
      else if (k > 0 && t.names[t.events[idx[k - 1]].name].find("MemcpyAsync") != std::string_view::npos)
        s.label = "blocking copy (cudaMemcpyAsync + sync)";
      d.syncs.push_back(std::move(s));
    }
  }
  std::sort(d.syncs.begin(), d.syncs.end(), [](const SyncPoint& a, const SyncPoint& b) { return a.end < b.end; });

  // GPU idle gaps in which a host sync returned (10 µs slack for the CPU/GPU clock conversion of CUPTI).
  constexpr std::int64_t kSyncSlackNs = 10'000;
  if (!d.busy.empty()) {
    for (std::size_t i = 0; i + 1 < d.busy.size(); ++i) {
      const Iv gap{d.busy[i].second, d.busy[i + 1].first};
      auto it = std::lower_bound(d.syncs.begin(), d.syncs.end(), gap.first - kSyncSlackNs,
                                 [](const SyncPoint& s, std::int64_t x) { return s.end < x; });
      if (it != d.syncs.end() && it->end <= gap.second)
        d.sync_gaps.push_back({gap, static_cast<std::size_t>(it - d.syncs.begin())});
    }
    // After the last GPU activity, to the end of the trace.
    const Iv tail{d.busy.back().second, std::max(hi, d.busy.back().second)};
    auto it = std::lower_bound(d.syncs.begin(), d.syncs.end(), tail.first - kSyncSlackNs,
                               [](const SyncPoint& s, std::int64_t x) { return s.end < x; });
    if (tail.second > tail.first && it != d.syncs.end() && it->end <= tail.second)
      d.sync_gaps.push_back({tail, static_cast<std::size_t>(it - d.syncs.begin())});
  }
  d.names = std::move(t.names);
  return d;
}

}  // namespace scalescope::analyze::trace_analysis_internal
