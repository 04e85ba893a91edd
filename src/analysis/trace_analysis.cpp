#include "analysis/trace_analysis.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <regex>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "core/error.h"
#include "core/terminal_text.h"

namespace scalescope::analyze {
namespace {

using comm::Collective;

// ---------------------------------------------------------------------------------------------------------
// Interval sets: sorted, disjoint [begin, end) lists of ns.

using Iv = std::pair<std::int64_t, std::int64_t>;
using Ivs = std::vector<Iv>;

Ivs unite(Ivs v) {
  std::sort(v.begin(), v.end());
  Ivs out;
  out.reserve(v.size());
  for (const auto& iv : v) {
    if (iv.second <= iv.first) continue;
    if (!out.empty() && iv.first <= out.back().second) out.back().second = std::max(out.back().second, iv.second);
    else out.push_back(iv);
  }
  return out;
}

Ivs unite2(const Ivs& a, const Ivs& b) {
  Ivs v;
  v.reserve(a.size() + b.size());
  v.insert(v.end(), a.begin(), a.end());
  v.insert(v.end(), b.begin(), b.end());
  return unite(std::move(v));
}

std::int64_t length(const Ivs& v) {
  std::int64_t n = 0;
  for (const auto& iv : v) n += iv.second - iv.first;
  return n;
}

Ivs intersect(const Ivs& a, const Ivs& b) {
  Ivs out;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const std::int64_t lo = std::max(a[i].first, b[j].first);
    const std::int64_t hi = std::min(a[i].second, b[j].second);
    if (lo < hi) out.emplace_back(lo, hi);
    if (a[i].second < b[j].second) ++i;
    else ++j;
  }
  return out;
}

Ivs subtract(const Ivs& a, const Ivs& b) {
  Ivs out;
  std::size_t j = 0;
  for (const auto& iv : a) {
    std::int64_t lo = iv.first;
    while (j < b.size() && b[j].second <= lo) ++j;
    std::size_t k = j;
    while (k < b.size() && b[k].first < iv.second) {
      if (b[k].first > lo) out.emplace_back(lo, b[k].first);
      lo = std::max(lo, b[k].second);
      ++k;
    }
    if (lo < iv.second) out.emplace_back(lo, iv.second);
  }
  return out;
}

/// The part of a sorted disjoint set inside [lo, hi).
Ivs clip(const Ivs& v, std::int64_t lo, std::int64_t hi) {
  Ivs out;
  auto it = std::lower_bound(v.begin(), v.end(), lo, [](const Iv& iv, std::int64_t x) { return iv.second <= x; });
  for (; it != v.end() && it->first < hi; ++it) {
    const std::int64_t a = std::max(it->first, lo), b = std::min(it->second, hi);
    if (a < b) out.emplace_back(a, b);
  }
  return out;
}

/// Length of [a, b) ∩ v, v sorted and disjoint.
std::int64_t overlap_with(const Ivs& v, std::int64_t a, std::int64_t b) { return length(clip(v, a, b)); }

/// Whether time `t` lies inside the sorted disjoint set `v`.
bool inside(const Ivs& v, std::int64_t t) { return !clip(v, t, t + 1).empty(); }

// Saturating arithmetic where adversarial traces could overflow: clock offsets (base times of different files)
// and sums over many steps. Real traces never come near the bounds.
std::int64_t sat_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}
std::int64_t sat_sub(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? INT64_MAX : INT64_MIN;
  return r;
}

double ms(std::int64_t ns) { return static_cast<double>(ns) / 1e6; }
double us(std::int64_t ns) { return static_cast<double>(ns) / 1e3; }

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains_icase(std::string_view s, std::string_view needle) {
  return lower(s).find(lower(needle)) != std::string::npos;
}

std::int64_t median(std::vector<std::int64_t> v) {
  const std::size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m), v.end());
  if (v.size() % 2 == 1) return v[m];
  const std::int64_t hi = v[m];
  const std::int64_t lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m));
  return lo + (hi - lo) / 2;
}

double quantile_sorted(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const double h = (static_cast<double>(v.size()) - 1) * q;
  const auto i = static_cast<std::size_t>(std::floor(h));
  if (i + 1 >= v.size()) return v.back();
  return v[i] + (h - static_cast<double>(i)) * (v[i + 1] - v[i]);
}

// ---------------------------------------------------------------------------------------------------------
// Per-rank extract.

enum class GpuClass : std::uint8_t { compute, comm, h2d, other_copy };

struct GpuOp {
  std::int64_t start = 0, end = 0;
  std::uint32_t name = 0;
  std::uint32_t launch = 0;  // index into names: "grid [..] block [..]", 0 when unknown
  std::int32_t stream = -1;
  GpuClass cls = GpuClass::compute;
};

struct CommOp {
  std::int32_t stream = -1;
  std::int64_t start = 0, end = 0;
  std::optional<Collective> kind;
  std::string kind_name;  // scalescope's name, or the trace's when unknown
  bool send_recv_kernel = false;
  std::string pg;
  std::optional<std::int64_t> seq;
  std::int64_t step = -1;   // ProfilerStep number of the launch
  std::int64_t ordinal = 0; // k-th of its pg (within its step when matching by steps)
  std::optional<std::int64_t> bytes;
  std::string dtype;
  std::optional<std::int64_t> ranks;
  std::string size_source;
  bool matched = false;
  std::int64_t late_ns = 0;
  std::int64_t wait_ns = 0;  // latest start − own start, ≤ duration
};

struct SyncPoint {
  std::int64_t begin = 0, end = 0;
  std::string label;
};

struct Step {
  std::string name;
  std::int64_t number = -1;
  std::int64_t begin = 0, end = 0;
};

struct RankData {
  RankAnalysis out;
  std::vector<std::string> names;
  std::vector<GpuOp> gpu;
  std::vector<CommOp> comms;
  std::vector<SyncPoint> syncs;  // by end
  Ivs compute, comm, h2d, other_copy, busy, dataloader, waits;
  std::vector<std::pair<Iv, std::size_t>> sync_gaps;  // idle gap → index into syncs of the first sync ending in it
  std::vector<Step> steps;
  std::optional<std::int64_t> base_time_ns;
  std::int64_t offset_ns = 0;  // added to local times for the common axis
  std::vector<std::pair<std::string, Iv>> ddp_events;  // DDP's own CPU ranges (see RankAnalysis::ddp_ranges)

  /// names[i], or `missing` for an index beyond them (names[0] is "": no name).
  std::string name_at(std::uint32_t i, const char* missing) const { return i < names.size() ? names[i] : missing; }
};

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

std::string step_label(const Step& s) { return s.name; }

/// nccl-tests' "size" of one collective from its metadata, bytes.
std::optional<std::int64_t> collective_bytes(std::optional<Collective> kind, const CollectiveArgs& c, int esize) {
  std::optional<std::int64_t> n = c.in_nelems;
  if (kind == Collective::all_gather && c.out_nelems) n = c.out_nelems;  // the whole output
  if (!n || *n < 0) return std::nullopt;
  if (*n > INT64_MAX / 16) return std::nullopt;
  return *n * esize;
}

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

// ---------------------------------------------------------------------------------------------------------
// Cross-rank matching and clock alignment.

bool synchronising(const CommOp& c) {
  return c.kind && *c.kind != Collective::send_recv && !(c.send_recv_kernel && *c.kind != Collective::all_to_all);
}

void match_across_ranks(std::vector<RankData*>& ranks, const TraceOptions& options, CrossRankAnalysis& cross) {
  const bool all_base = !ranks.empty() && std::all_of(ranks.begin(), ranks.end(), [](const RankData* r) { return r->base_time_ns.has_value(); });
  std::vector<std::int64_t> coarse(ranks.size(), 0);
  if (options.alignment != ClockAlignment::none && all_base)
    for (std::size_t i = 0; i < ranks.size(); ++i) coarse[i] = *ranks[i]->base_time_ns;
  for (std::size_t i = 0; i < ranks.size(); ++i) ranks[i]->offset_ns = coarse[i];
  std::string coarse_text = options.alignment != ClockAlignment::none && all_base ? "baseTimeNanoseconds"
                                                                                  : "timestamps as written";
  cross.alignment = coarse_text;
  if (ranks.size() < 2) return;

  // Keys: (pg, seq) or (pg, step, k-th) or (pg, k-th).
  const bool all_steps = std::all_of(ranks.begin(), ranks.end(), [](const RankData* r) { return r->out.steps_from_annotations; });
  std::map<std::string, std::vector<std::pair<std::size_t, std::size_t>>> groups;
  std::set<std::string> methods;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    std::map<std::pair<std::string, std::int64_t>, std::int64_t> counters;
    for (std::size_t k = 0; k < ranks[r]->comms.size(); ++k) {
      CommOp& c = ranks[r]->comms[k];
      std::string key;
      if (c.seq) {
        key = fmt::format("{}\x1fseq {}", c.pg, *c.seq);
        methods.insert("seq");
      } else if (all_steps) {
        c.ordinal = counters[{c.pg, c.step}]++;
        key = c.step >= 0 ? fmt::format("{}\x1fProfilerStep#{} #{}", c.pg, c.step, c.ordinal + 1)
                          : fmt::format("{}\x1foutside steps #{}", c.pg, c.ordinal + 1);
        methods.insert("step order");
      } else {
        c.ordinal = counters[{c.pg, -1}]++;
        key = fmt::format("{}\x1f#{}", c.pg, c.ordinal + 1);
        methods.insert("trace order");
      }
      groups[key].emplace_back(r, k);
    }
  }
  for (const auto& m : methods) cross.matching += (cross.matching.empty() ? "" : " + ") + m;

  struct Match {
    std::string key;
    std::vector<std::pair<std::size_t, std::size_t>> members;
  };
  std::vector<Match> matches;
  for (auto& [key, members] : groups) {
    std::set<std::size_t> seen;
    std::vector<std::pair<std::size_t, std::size_t>> uniq;
    for (const auto& m : members)
      if (seen.insert(m.first).second) uniq.push_back(m);
      else ++cross.unmatched;
    if (uniq.size() < 2) {
      cross.unmatched += static_cast<std::int64_t>(uniq.size());
      continue;
    }
    // Kinds must agree where known.
    std::optional<Collective> kind;
    bool agree = true;
    for (const auto& [r, k] : uniq) {
      const auto& c = ranks[r]->comms[k];
      if (c.kind && kind && *c.kind != *kind) agree = false;
      if (c.kind && !kind) kind = c.kind;
    }
    if (!agree) {
      cross.unmatched += static_cast<std::int64_t>(uniq.size());
      continue;
    }
    matches.push_back({key, std::move(uniq)});
  }
  cross.matched = static_cast<std::int64_t>(matches.size());
  if (matches.empty()) {
    cross.notes.push_back("no collective was found on two or more ranks: no waits, no straggler");
    return;
  }

  // Fine alignment: median of end differences to an already aligned rank.
  if (options.alignment == ClockAlignment::auto_) {
    std::vector<bool> aligned(ranks.size(), false);
    aligned[0] = true;
    std::int64_t used = 0;
    for (int pass = 0; pass < 2; ++pass) {  // pass 0: synchronising collectives; pass 1: send/recv too
      bool progress = true;
      while (progress) {
        progress = false;
        for (std::size_t r = 1; r < ranks.size(); ++r) {
          if (aligned[r]) continue;
          std::vector<std::int64_t> diffs;
          for (const auto& m : matches) {
            const CommOp* mine = nullptr;
            const CommOp* ref = nullptr;
            std::size_t ref_rank = 0;
            for (const auto& [q, k] : m.members) {
              const CommOp& c = ranks[q]->comms[k];
              if (pass == 0 && !synchronising(c)) continue;
              if (q == r) mine = &c;
              else if (aligned[q] && !ref) {
                ref = &c;
                ref_rank = q;
              }
            }
            if (mine && ref) diffs.push_back(sat_sub(sat_add(ref->end, ranks[ref_rank]->offset_ns), mine->end));
          }
          if (diffs.empty()) continue;
          used += static_cast<std::int64_t>(diffs.size());
          ranks[r]->offset_ns = median(std::move(diffs));
          aligned[r] = true;
          progress = true;
        }
      }
    }
    const auto n_aligned = std::count(aligned.begin(), aligned.end(), true);
    cross.alignment = fmt::format("{}, then collective ends (median offset over {} collective pairs; {} of {} ranks)",
                                  coarse_text, used, n_aligned, ranks.size());
    for (std::size_t r = 0; r < ranks.size(); ++r)
      if (!aligned[r])
        cross.notes.push_back(fmt::format("rank {} shares no collective with the others: its clock is the {} only",
                                          ranks[r]->out.rank, coarse_text));
  }

  // Waits.
  std::vector<MatchedCollective> all;
  for (const auto& m : matches) {
    std::int64_t earliest = INT64_MAX, latest = INT64_MIN;
    std::size_t er = 0, lr = 0;
    for (const auto& [r, k] : m.members) {
      const std::int64_t a = sat_add(ranks[r]->comms[k].start, ranks[r]->offset_ns);
      if (a < earliest) {
        earliest = a;
        er = r;
      }
      if (a > latest) {
        latest = a;
        lr = r;
      }
    }
    for (const auto& [r, k] : m.members) {
      CommOp& c = ranks[r]->comms[k];
      const std::int64_t a = sat_add(c.start, ranks[r]->offset_ns);
      c.matched = true;
      c.late_ns = sat_sub(a, earliest);
      c.wait_ns = std::clamp<std::int64_t>(sat_sub(latest, a), 0, c.end - c.start);
    }
    const CommOp& first = ranks[m.members.front().first]->comms[m.members.front().second];
    MatchedCollective mc;
    mc.process_group = first.pg;
    mc.collective = first.kind_name;
    mc.key = m.key.substr(m.key.find('\x1f') + 1);
    mc.earliest_rank = ranks[er]->out.rank;
    mc.latest_rank = ranks[lr]->out.rank;
    mc.spread_us = us(sat_sub(latest, earliest));
    all.push_back(std::move(mc));
  }
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.spread_us > b.spread_us; });
  if (all.size() > 10) all.resize(10);
  cross.worst = std::move(all);
  for (RankData* r : ranks) {
    Ivs w;
    for (const auto& c : r->comms)
      if (c.matched && c.wait_ns > 0) w.emplace_back(c.start, c.start + c.wait_ns);
    r->waits = unite(std::move(w));
  }
}

// ---------------------------------------------------------------------------------------------------------
// Per-step figures.

struct StepTotals {
  std::int64_t step = 0, busy = 0, compute = 0, comm = 0, copies = 0, overlap = 0, exposed = 0, straggler = 0,
               data = 0, host = 0, other = 0, syncs = 0, blocked = 0, gaps = 0, gap_ns = 0, gap_idle_ns = 0,
               collectives = 0, late = 0, wait = 0;
};

StepTotals measure_step(const RankData& d, const Step& s, std::map<std::string, HostSyncGroup>& groups,
                        std::vector<double>& gap_us) {
  StepTotals t;
  const std::int64_t b = s.begin, e = s.end;
  t.step = e - b;
  const Ivs window{{b, e}};
  const Ivs C = clip(d.compute, b, e), M = clip(d.comm, b, e), H = clip(d.h2d, b, e), O = clip(d.other_copy, b, e);
  const Ivs busy = clip(d.busy, b, e);
  const Ivs idle = subtract(window, busy);
  const Ivs CM = unite2(C, M);
  const Ivs exposed = subtract(M, C);
  t.busy = length(busy);
  t.compute = length(C);
  t.comm = length(M);
  t.copies = length(unite2(H, O));
  t.overlap = length(intersect(C, M));
  t.exposed = length(exposed);
  t.straggler = length(intersect(exposed, clip(d.waits, b, e)));
  const std::int64_t h2d_exposed = length(subtract(H, CM));
  const std::int64_t other_exposed = length(subtract(O, unite2(CM, H)));
  const Ivs DL = clip(d.dataloader, b, e);
  const Ivs idle_dl = intersect(idle, DL);
  const Ivs idle_rest = subtract(idle, DL);
  // Idle (outside data loading) in gaps where a host sync returned, attributed to that sync's label.
  std::int64_t host = 0;
  auto g = std::lower_bound(d.sync_gaps.begin(), d.sync_gaps.end(), b,
                            [](const auto& x, std::int64_t v) { return x.first.second <= v; });
  for (; g != d.sync_gaps.end() && g->first.first < e; ++g) {
    const std::int64_t n = length(intersect(idle_rest, clip(Ivs{g->first}, b, e)));
    host += n;
    groups[d.syncs[g->second].label].gpu_idle_ms += ms(n);
  }
  t.data = h2d_exposed + length(idle_dl);
  t.host = host;
  t.other = other_exposed + length(idle_rest) - host;
  auto sp_it = std::lower_bound(d.syncs.begin(), d.syncs.end(), b, [](const SyncPoint& x, std::int64_t v) { return x.end < v; });
  for (; sp_it != d.syncs.end() && sp_it->end < e; ++sp_it) {
    const SyncPoint& sp = *sp_it;
    ++t.syncs;
    t.blocked += sp.end - sp.begin;
    auto& grp = groups[sp.label];
    grp.label = sp.label;
    ++grp.count;
    grp.blocked_ms += ms(sp.end - sp.begin);
  }
  // Launch gaps: no compute kernel running, on any stream, between compute kernels that start in the window.
  // All streams merged rather than the busiest stream alone: a CUDA graph (torch.compile's reduce-overhead,
  // scalescope --cuda-graph) spreads one stream's kernels over several, so one stream shows the others' work
  // as gaps. d.compute is the union of the compute kernels' intervals, sorted and disjoint.
  // A block that began before the window but runs into it (kernels starting in the window merged into it) anchors
  // the first gap; the gap before it belongs to the previous window.
  Ivs gap_spans;
  auto k = std::upper_bound(d.compute.begin(), d.compute.end(), b,
                            [](std::int64_t v, const Iv& iv) { return v < iv.second; });  // first block ending after b
  std::int64_t reach = INT64_MIN;
  if (k != d.compute.end() && k->first < b) reach = (k++)->second;
  for (; k != d.compute.end() && k->first < e; ++k) {
    if (reach != INT64_MIN && k->first > reach) {
      ++t.gaps;
      t.gap_ns += k->first - reach;
      gap_us.push_back(us(k->first - reach));
      gap_spans.push_back({reach, k->first});
    }
    reach = k->second;
  }
  // The part of those gaps in which nothing at all runs on the GPU: launch latency and host delays, without
  // the waits for communication (the compute stream waiting on an all-reduce while NCCL's kernel runs).
  t.gap_idle_ns = length(intersect(gap_spans, idle));
  auto c_it = std::lower_bound(d.comms.begin(), d.comms.end(), b, [](const CommOp& x, std::int64_t v) { return x.start < v; });
  for (; c_it != d.comms.end() && c_it->start < e; ++c_it) {
    const CommOp& c = *c_it;
    ++t.collectives;
    t.late += c.late_ns;
    t.wait += c.wait_ns;
  }
  return t;
}

StepMetrics to_metrics(const StepTotals& t, double n) {
  StepMetrics m;
  auto f = [n](std::int64_t v) { return static_cast<double>(v) / 1e6 / n; };
  m.step_ms = f(t.step);
  m.gpu_busy_ms = f(t.busy);
  m.gpu_idle_ms = f(t.step - t.busy);
  m.compute_ms = f(t.compute);
  m.comm_ms = f(t.comm);
  m.memcpy_ms = f(t.copies);
  m.overlap_ms = f(t.overlap);
  m.exposed_comm_ms = f(t.exposed);
  m.straggler_wait_ms = f(t.straggler);
  m.data_wait_ms = f(t.data);
  m.host_sync_ms = f(t.host);
  m.other_ms = f(t.other);
  m.host_syncs = static_cast<double>(t.syncs) / n;
  m.host_sync_blocked_ms = f(t.blocked);
  m.launch_gaps = static_cast<double>(t.gaps) / n;
  m.launch_gap_ms = f(t.gap_ns);
  m.launch_gap_idle_ms = f(t.gap_idle_ns);
  m.collectives = static_cast<double>(t.collectives) / n;
  m.comm_late_ms = f(t.late);
  m.comm_wait_ms = f(t.wait);
  return m;
}

void add(StepTotals& a, const StepTotals& b) {
  for (auto [x, y] : {std::pair{&a.step, b.step}, {&a.busy, b.busy}, {&a.compute, b.compute}, {&a.comm, b.comm},
                      {&a.copies, b.copies}, {&a.overlap, b.overlap}, {&a.exposed, b.exposed},
                      {&a.straggler, b.straggler}, {&a.data, b.data}, {&a.host, b.host}, {&a.other, b.other},
                      {&a.syncs, b.syncs}, {&a.blocked, b.blocked}, {&a.gaps, b.gaps}, {&a.gap_ns, b.gap_ns}, {&a.gap_idle_ns, b.gap_idle_ns},
                      {&a.collectives, b.collectives}, {&a.late, b.late}, {&a.wait, b.wait}})
    *x = sat_add(*x, y);
}

Ivs step_union(const RankData& d) {
  Ivs v;
  for (const auto& s : d.steps)
    if (s.end > s.begin) v.push_back({s.begin, s.end});
  return unite(std::move(v));
}

/// Durations of the compute kernels that start inside a step window and overlap no communication kernel, by
/// (name, launch configuration) as text: the baseline's references.
using KernelDurations = std::map<std::pair<std::string, std::string>, std::vector<std::int64_t>>;

KernelDurations durations_without_comm(const RankData& d) {
  KernelDurations out;
  const Ivs steps = step_union(d);
  for (const auto& op : d.gpu) {
    if (op.cls != GpuClass::compute || op.name == 0 || op.end <= op.start || !inside(steps, op.start) ||
        overlap_with(d.comm, op.start, op.end) > 0)
      continue;
    out[{d.name_at(op.name, "?"), d.name_at(op.launch, "")}].push_back(op.end - op.start);
  }
  return out;
}

/// The median of `durations` when there are enough of them and they agree (one shape, not several sharing a
/// name): (p90 − p10) / median ≤ CommInterference::kMaxReferenceSpread, p10 and p90 by nearest rank.
std::optional<std::int64_t> reference_duration(std::vector<std::int64_t> durations) {
  if (durations.size() < CommInterference::kMinReferenceCalls) return std::nullopt;
  std::sort(durations.begin(), durations.end());
  const std::size_t n = durations.size();
  const auto at = [&](double q) { return durations[static_cast<std::size_t>(std::lround(q * static_cast<double>(n - 1)))]; };
  const std::int64_t med = median(durations);
  if (med <= 0 || static_cast<double>(at(0.9) - at(0.1)) > CommInterference::kMaxReferenceSpread * static_cast<double>(med))
    return std::nullopt;
  return med;
}

/// CommInterference of the compute kernels that start inside a step window of `d`, with the 1-rank baseline's
/// kernels as the fallback reference (null without a baseline); nullopt when no communication kernel overlaps a
/// step window.
std::optional<CommInterference> measure_interference(const RankData& d, const RankData* baseline) {
  const Ivs steps = step_union(d);
  if (steps.empty() || std::none_of(d.gpu.begin(), d.gpu.end(), [&](const GpuOp& op) {
        return op.cls == GpuClass::comm && overlap_with(steps, op.start, op.end) > 0;
      }))
    return std::nullopt;
  const double n = static_cast<double>(d.steps.size());
  struct Call {
    std::int64_t dur, overlap;
  };
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<Call>> by_kernel;  // (name, launch)
  std::int64_t overlap_without = 0, calls_without = 0;
  for (const auto& op : d.gpu) {
    if (op.cls != GpuClass::compute || op.end <= op.start || !inside(steps, op.start)) continue;
    const std::int64_t overlap = overlap_with(d.comm, op.start, op.end);
    if (op.name == 0) {  // no name to compare it by
      if (overlap > 0) {
        overlap_without = sat_add(overlap_without, overlap);
        ++calls_without;
      }
      continue;
    }
    by_kernel[{op.name, op.launch}].push_back({op.end - op.start, overlap});
  }
  const KernelDurations base = baseline ? durations_without_comm(*baseline) : KernelDurations{};
  CommInterference r;
  std::int64_t overlap_ns = 0, slowdown_ns = 0, vs_baseline_ns = 0, calls_with = 0;
  for (const auto& [key, calls] : by_kernel) {
    std::vector<std::int64_t> alone;
    std::int64_t overlap = 0, count = 0;
    for (const auto& c : calls) {
      if (c.overlap == 0) alone.push_back(c.dur);
      else {
        overlap = sat_add(overlap, c.overlap);
        ++count;
      }
    }
    if (count == 0) continue;
    KernelInterference k;
    k.name = d.name_at(key.first, "?");
    k.launch = d.name_at(key.second, "");
    std::optional<std::int64_t> reference = reference_duration(std::move(alone));
    k.reference = "rank";
    if (!reference) {  // the baseline's calls of the same launch configuration, or by name when one trace has none
      std::vector<std::int64_t> durations;
      if (auto it = base.find({k.name, k.launch}); it != base.end()) durations = it->second;
      else if (!k.launch.empty()) {
        if (auto bare = base.find({k.name, ""}); bare != base.end()) durations = bare->second;
      } else {
        for (auto it = base.lower_bound({k.name, ""}); it != base.end() && it->first.first == k.name; ++it)
          durations.insert(durations.end(), it->second.begin(), it->second.end());
      }
      if (!durations.empty()) {
        reference = reference_duration(std::move(durations));
        k.reference = "baseline";
      }
    }
    if (!reference) {
      overlap_without = sat_add(overlap_without, overlap);
      calls_without += count;
      continue;
    }
    // Communication beside a kernel can delay it by at most the time it runs beside it; more (or a saving of more)
    // is other work under the same name and launch configuration (a GEMM's k is not in its grid).
    std::int64_t slowdown = 0;
    for (const auto& c : calls)
      if (c.overlap > 0) slowdown = sat_add(slowdown, std::clamp(c.dur - *reference, -c.overlap, c.overlap));
    k.calls_per_step = static_cast<double>(count) / n;
    k.overlap_ms = ms(overlap) / n;
    k.slowdown_ms = ms(slowdown) / n;
    k.reference_us = us(*reference);
    if (k.reference == "baseline") vs_baseline_ns = sat_add(vs_baseline_ns, slowdown);
    r.kernels.push_back(std::move(k));
    calls_with += count;
    overlap_ns = sat_add(overlap_ns, overlap);
    slowdown_ns = sat_add(slowdown_ns, slowdown);
  }
  r.calls_with_reference = static_cast<double>(calls_with) / n;
  r.calls_without_reference = static_cast<double>(calls_without) / n;
  r.overlap_ms = ms(overlap_ns) / n;
  r.slowdown_ms = ms(slowdown_ns) / n;
  r.slowdown_vs_baseline_ms = ms(vs_baseline_ns) / n;
  r.overlap_without_reference_ms = ms(overlap_without) / n;
  std::stable_sort(r.kernels.begin(), r.kernels.end(),
                   [](const auto& a, const auto& b) { return a.slowdown_ms > b.slowdown_ms; });
  return r;
}

void finish_rank(RankData& d) {
  RankAnalysis& out = d.out;
  std::map<std::string, HostSyncGroup> groups;
  std::vector<double> gaps;
  StepTotals total;
  for (const auto& s : d.steps) {
    const StepTotals t = measure_step(d, s, groups, gaps);
    StepMetrics m = to_metrics(t, 1);
    m.name = step_label(s);
    m.number = s.number;
    m.start_ms = ms(s.begin);
    out.steps.push_back(m);
    add(total, t);
  }
  const double n = d.steps.empty() ? 1.0 : static_cast<double>(d.steps.size());
  out.mean = to_metrics(total, n);
  out.mean.name = "mean per step";
  for (auto& [label, g] : groups) {
    g.label = label;
    out.host_syncs.push_back(g);
  }
  std::sort(out.host_syncs.begin(), out.host_syncs.end(), [](const auto& a, const auto& b) {
    return a.gpu_idle_ms != b.gpu_idle_ms ? a.gpu_idle_ms > b.gpu_idle_ms : a.count > b.count;
  });
  // DDP's host ranges that start inside a step.
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> ddp;  // name → (calls, ns)
  for (const auto& [name, iv] : d.ddp_events)
    for (const auto& s : d.steps)
      if (iv.first >= s.begin && iv.first < s.end) {
        auto& [calls, ns] = ddp[name];
        ++calls;
        ns = sat_add(ns, iv.second - iv.first);
        break;
      }
  for (const auto& [name, v] : ddp)
    out.ddp_ranges.push_back({name, static_cast<double>(v.first) / n, ms(v.second) / n});
  std::sort(out.ddp_ranges.begin(), out.ddp_ranges.end(), [](const auto& a, const auto& b) { return a.ms_per_step > b.ms_per_step; });
  std::sort(gaps.begin(), gaps.end());
  out.launch_gaps.count = static_cast<std::int64_t>(gaps.size());
  out.launch_gaps.total_ms = ms(total.gap_ns);
  out.launch_gaps.p50_us = quantile_sorted(gaps, 0.5);
  out.launch_gaps.p95_us = quantile_sorted(gaps, 0.95);
  out.launch_gaps.max_us = gaps.empty() ? 0 : gaps.back();

  // Collectives by (kind, pg, size, dtype).
  std::map<std::tuple<std::string, std::string, std::int64_t, std::string>, std::size_t> index;
  struct Acc {
    double bytes = 0, ns = 0, m_bytes = 0, m_ns = 0;
  };
  std::vector<Acc> acc;
  for (const auto& c : d.comms) {
    const auto key = std::make_tuple(c.kind_name, c.pg, c.bytes.value_or(-1), c.dtype);
    auto [it, fresh] = index.emplace(key, out.collectives.size());
    if (fresh) {
      CollectiveGroup g;
      g.collective = c.kind_name;
      g.process_group = c.pg;
      g.bytes = c.bytes;
      g.dtype = c.dtype;
      g.ranks = c.ranks;
      g.size_source = c.size_source;
      out.collectives.push_back(g);
      acc.emplace_back();
    }
    CollectiveGroup& g = out.collectives[it->second];
    Acc& a = acc[it->second];
    ++g.count;
    g.total_us += us(c.end - c.start);
    if (c.bytes && c.end > c.start) {
      a.bytes += static_cast<double>(*c.bytes);
      a.ns += static_cast<double>(c.end - c.start);
      if (c.matched && c.end - c.start - c.wait_ns > 0) {
        a.m_bytes += static_cast<double>(*c.bytes);
        a.m_ns += static_cast<double>(c.end - c.start - c.wait_ns);
      }
    }
  }
  for (std::size_t i = 0; i < out.collectives.size(); ++i) {
    CollectiveGroup& g = out.collectives[i];
    const auto kind = collective_from_name(g.collective);
    if (!kind || !g.ranks || *g.ranks < 1) continue;
    const double factor = comm::bus_bandwidth_factor(*kind, static_cast<int>(std::min<std::int64_t>(*g.ranks, 1 << 20)));
    if (acc[i].ns > 0) g.busbw_gbps = acc[i].bytes / acc[i].ns * factor;  // bytes/ns = GB/s
    if (acc[i].m_ns > 0) g.busbw_after_wait_gbps = acc[i].m_bytes / acc[i].m_ns * factor;
  }
  std::stable_sort(out.collectives.begin(), out.collectives.end(),
                   [](const auto& a, const auto& b) { return a.total_us > b.total_us; });

  // Kernels by name, those that start inside the analysed steps.
  if (!d.steps.empty()) {
    const std::int64_t lo = d.steps.front().begin, hi = d.steps.back().end;
    std::map<std::uint32_t, std::size_t> by_name;
    std::int64_t all_ns = 0;
    std::vector<std::int64_t> ns;
    for (const auto& op : d.gpu) {
      if ((op.cls != GpuClass::compute && op.cls != GpuClass::comm) || op.start < lo || op.start >= hi) continue;
      auto [it, fresh] = by_name.emplace(op.name, out.kernels.size());
      if (fresh) {
        KernelGroup g;
        g.name = d.name_at(op.name, "?");
        g.comm = op.cls == GpuClass::comm;
        out.kernels.push_back(g);
        ns.push_back(0);
      }
      ++out.kernels[it->second].count;
      ns[it->second] = sat_add(ns[it->second], op.end - op.start);
      all_ns = sat_add(all_ns, op.end - op.start);
    }
    for (std::size_t i = 0; i < out.kernels.size(); ++i) {
      KernelGroup& g = out.kernels[i];
      g.total_ms = ms(ns[i]);
      g.per_step_ms = g.total_ms / static_cast<double>(d.steps.size());
      g.per_step_count = static_cast<double>(g.count) / static_cast<double>(d.steps.size());
      g.mean_us = g.count > 0 ? us(ns[i]) / static_cast<double>(g.count) : 0;
      g.share = all_ns > 0 ? static_cast<double>(ns[i]) / static_cast<double>(all_ns) : 0;
    }
    std::stable_sort(out.kernels.begin(), out.kernels.end(),
                     [](const auto& a, const auto& b) { return a.total_ms > b.total_ms; });
  }
  out.clock_offset_us = us(d.offset_ns);
}

Waterfall make_waterfall(const StepMetrics& m, const StepMetrics* base) {
  Waterfall w;
  w.measured_ms = m.step_ms;
  const double exposed_net = m.exposed_comm_ms - m.straggler_wait_ms;
  if (!base) {
    w.ideal_ms = m.compute_ms;
    w.ideal_source = "the rank's own compute time, as no baseline was given";
    w.exposed_comm_ms = exposed_net;
    w.straggler_wait_ms = m.straggler_wait_ms;
    w.data_wait_ms = m.data_wait_ms;
    w.host_sync_ms = m.host_sync_ms;
    w.other_ms = m.other_ms;
    return w;
  }
  w.ideal_ms = base->step_ms;
  w.ideal_source = "1-rank baseline step";
  w.compute_ms = m.compute_ms - base->compute_ms;
  w.exposed_comm_ms = exposed_net - (base->exposed_comm_ms - base->straggler_wait_ms);
  w.straggler_wait_ms = m.straggler_wait_ms - base->straggler_wait_ms;
  w.data_wait_ms = m.data_wait_ms - base->data_wait_ms;
  w.host_sync_ms = m.host_sync_ms - base->host_sync_ms;
  w.other_ms = m.other_ms - base->other_ms;
  return w;
}

RankTimeline make_timeline(const RankData& d) {
  RankTimeline tl;
  tl.rank = d.out.rank;
  tl.names = d.names;
  std::map<std::string, std::uint32_t> tracks;
  auto track = [&](const std::string& name) {
    auto [it, fresh] = tracks.emplace(name, static_cast<std::uint32_t>(tl.tracks.size()));
    if (fresh) tl.tracks.push_back(name);
    return it->second;
  };
  std::map<std::string, std::uint32_t> extra;
  auto name_id = [&](const std::string& n) {
    auto [it, fresh] = extra.emplace(n, static_cast<std::uint32_t>(tl.names.size()));
    if (fresh) tl.names.push_back(n);
    return it->second;
  };
  const std::int64_t off = d.offset_ns;
  const std::uint32_t steps = track("steps");
  for (const auto& s : d.steps) tl.slices.push_back({sat_add(s.begin, off), s.end - s.begin, name_id(s.name), steps});
  for (const auto& op : d.gpu) {
    const char* what = op.cls == GpuClass::compute ? "compute" : op.cls == GpuClass::comm ? "communication" : "memcpy";
    tl.slices.push_back({sat_add(op.start, off), op.end - op.start, op.name, track(fmt::format("{} stream {}", what, op.stream))});
  }
  for (const auto& c : d.comms) {
    if (c.wait_ns <= 0) continue;
    tl.slices.push_back({sat_add(c.start, off), c.wait_ns, name_id("waiting for the last rank"),
                         track(fmt::format("communication stream {}", c.stream))});
  }
  if (!d.syncs.empty()) {
    const std::uint32_t st = track("host syncs");
    for (const auto& s : d.syncs) tl.slices.push_back({sat_add(s.begin, off), s.end - s.begin, name_id(s.label), st});
  }
  return tl;
}

std::string pct(double part, double whole) { return whole > 0 ? fmt::format("{:.0f} %", 100.0 * part / whole) : "-"; }

/// GPU busy share below which a 1-rank baseline counts as CPU- or launch-bound (a judgement, not a published
/// threshold: a GPU-bound training step keeps its GPU ≥ 90 % busy, e.g. 97.6 % for gpt-1.3b on H200 in RESULTS).
constexpr double kBusyBaselineShare = 0.85;

void add_findings(TraceAnalysis& a) {
  auto add_f = [&](std::string sev, std::string text) { a.findings.push_back({std::move(sev), std::move(text)}); };
  const std::vector<RankAnalysis>& R = a.ranks;
  // Straggler: the rank that waits most, and who it waits for.
  if (a.cross.straggler) {
    const RankAnalysis* waiter = nullptr;
    for (const auto& r : R)
      if (r.rank != *a.cross.straggler && r.has_gpu && (!waiter || r.mean.comm_wait_ms > waiter->mean.comm_wait_ms))
        waiter = &r;
    if (waiter && waiter->mean.comm_wait_ms > 0 && waiter->mean.step_ms > 0) {
      const double share = waiter->mean.comm_wait_ms / waiter->mean.step_ms;
      if (share >= 0.01)
        add_f(share >= 0.05 ? "problem" : "warning",
              fmt::format("rank {} waits {:.2f} ms per step for the others: rank {} is the straggler (it starts its "
                          "collectives {:.2f} ms per step after the first rank; {:.2f} ms per step of the wait is "
                          "exposed)",
                          waiter->rank, waiter->mean.comm_wait_ms, *a.cross.straggler,
                          a.cross.straggler_late_ms_per_step, waiter->mean.straggler_wait_ms));
    }
  }
  // One finding per kind of loss, naming the worst rank and how many ranks share it.
  auto share_finding = [&](double threshold, double problem_share, auto value_of, auto text_of) {
    std::vector<const RankAnalysis*> hit;
    const RankAnalysis* worst = nullptr;
    for (const auto& r : R) {
      if (!r.has_gpu || r.mean.step_ms <= 0) continue;
      const double share = value_of(r) / r.mean.step_ms;
      if (share < threshold) continue;
      hit.push_back(&r);
      if (!worst || share > value_of(*worst) / worst->mean.step_ms) worst = &r;
    }
    if (!worst) return;
    const double share = value_of(*worst) / worst->mean.step_ms;
    std::string who = hit.size() == 1 ? fmt::format("rank {}", worst->rank)
                                      : fmt::format("{} of {} ranks (worst: rank {})", hit.size(), R.size(), worst->rank);
    add_f(share >= problem_share ? "problem" : "warning", who + ": " + text_of(*worst));
  };
  share_finding(0.10, 0.30, [](const RankAnalysis& r) { return r.mean.exposed_comm_ms - r.mean.straggler_wait_ms; },
                [](const RankAnalysis& r) {
                  const double x = r.mean.exposed_comm_ms - r.mean.straggler_wait_ms;
                  const auto ov = r.mean.overlap_fraction();
                  return fmt::format("exposed communication is {} of the step ({:.2f} ms per step; overlap {}): "
                                     "bucket sizes / overlap — larger DDP buckets (bucket_cap_mb), all-reduce started "
                                     "during backward, fewer and larger collectives",
                                     pct(x, r.mean.step_ms), x, ov ? pct(*ov, 1) : std::string("-"));
                });
  share_finding(0.01, 0.10, [](const RankAnalysis& r) { return r.mean.host_syncs >= 1 ? r.mean.host_sync_ms : 0.0; },
                [](const RankAnalysis& r) {
                  const std::string what = r.host_syncs.empty() ? std::string() : " (mostly " + r.host_syncs.front().label + ")";
                  return fmt::format("{:.1f} host syncs per step{} cost {:.2f} ms of GPU idle per step ({} of the "
                                     "step): avoid .item()/.cpu() and blocking copies inside the step",
                                     r.mean.host_syncs, what, r.mean.host_sync_ms, pct(r.mean.host_sync_ms, r.mean.step_ms));
                });
  // Overlap is not free: compute slowed beside communication (counted as compute, not as exposed communication).
  share_finding(CommInterference::kFindingShare, CommInterference::kProblemShare,
                [](const RankAnalysis& r) { return r.interference ? std::max(0.0, r.interference->slowdown_ms) : 0.0; },
                [](const RankAnalysis& r) { return interference_text(*r.interference, r.mean.step_ms); });
  share_finding(0.05, 0.20, [](const RankAnalysis& r) { return r.mean.data_wait_ms; }, [](const RankAnalysis& r) {
    return fmt::format("data wait is {} of the step ({:.2f} ms per step): more DataLoader workers, pin_memory=True and "
                       "non_blocking copies, prefetching",
                       pct(r.mean.data_wait_ms, r.mean.step_ms), r.mean.data_wait_ms);
  });
  share_finding(0.10, 0.30, [](const RankAnalysis& r) { return r.mean.other_ms; }, [](const RankAnalysis& r) {
    return fmt::format("the GPU idles {} of the step outside communication, data loading and syncs ({:.2f} ms per "
                       "step; {:.0f} launch gaps per step between compute kernels, p95 {:.1f} µs): launch-bound or "
                       "CPU-bound — CUDA graphs, torch.compile, larger batches, less Python per step",
                       pct(r.mean.other_ms, r.mean.step_ms), r.mean.other_ms, r.mean.launch_gaps, r.launch_gaps.p95_us);
  });
  // A baseline whose GPU idles is CPU- or launch-bound (the profiler's own per-operator cost can make it so):
  // the speedup against it then measures the host as much as the GPUs.
  if (a.baseline && a.baseline->has_gpu && a.metrics && a.baseline->mean.step_ms > 0) {
    const double busy = a.baseline->mean.gpu_busy_ms / a.baseline->mean.step_ms;
    if (busy < kBusyBaselineShare)
      add_f("warning",
            fmt::format("the 1-rank baseline's GPU was busy only {} of its steps{}: that run was CPU- or "
                        "launch-bound (profiling adds CPU time to every operator), so the speedup {:.2f} against it "
                        "says as much about the host as about the GPUs — compare unprofiled step times (scalescope "
                        "doctor, or the job's own timer)",
                        pct(busy, 1),
                        a.baseline->mean.launch_gaps >= 1
                            ? fmt::format(" ({:.0f} launch gaps per step)", a.baseline->mean.launch_gaps)
                            : std::string(),
                        a.metrics->speedup));
  }
  for (const auto& r : R)
    if (!r.has_gpu)
      add_f("info", fmt::format("rank {} has no GPU activity{}: a CPU-only rank, its GPU figures are absent", r.rank,
                                r.backend.empty() ? "" : " (backend " + r.backend + ")"));
  if (a.metrics && a.world_size)
    for (const auto& near : diagnose::near_thresholds(*a.world_size, a.metrics->speedup, a.metrics->comm_ratio))
      add_f("info", near + ": another run could get another verdict; compare several steps or runs before acting");
  if (a.world_size && *a.world_size > static_cast<int>(R.size()) && R.size() >= 1)
    add_f("info", fmt::format("{} of {} ranks analysed: waits and the straggler are among these ranks only", R.size(),
                              *a.world_size));
}

}  // namespace

std::optional<double> StepMetrics::overlap_fraction() const {
  if (comm_ms <= 0) return std::nullopt;
  return overlap_ms / comm_ms;
}

double Waterfall::parts_ms() const {
  return compute_ms + exposed_comm_ms + straggler_wait_ms + data_wait_ms + host_sync_ms + other_ms;
}

std::vector<KernelDelta> kernel_deltas(const RankAnalysis& rank, const RankAnalysis& baseline) {
  std::map<std::string, KernelDelta> by_name;
  for (const auto& k : baseline.kernels) {
    KernelDelta& d = by_name[k.name];
    d.name = k.name;
    d.comm = k.comm;
    d.baseline_ms = k.per_step_ms;
  }
  for (const auto& k : rank.kernels) {
    KernelDelta& d = by_name[k.name];
    d.name = k.name;
    d.comm = d.comm || k.comm;
    d.rank_ms = k.per_step_ms;
  }
  std::vector<KernelDelta> out;
  out.reserve(by_name.size());
  for (auto& [name, d] : by_name) out.push_back(std::move(d));
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return std::abs(a.delta_ms()) > std::abs(b.delta_ms()); });
  return out;
}

bool is_nccl_kernel_name(std::string_view name) {
  if (name.size() < 4) return false;
  const std::string p = lower(name.substr(0, 4));
  // NCCL's one-rank all-reduce (onerank.cu, oneRankReduce<…>) is a file-static kernel whose
  // name starts with the compiler's "__nv_static_" prefix instead of "nccl".
  return p == "nccl" || p == "rccl" || lower(name).find("onerankreduce") != std::string::npos;
}

std::optional<int> dtype_size(std::string_view dtype) {
  static const std::map<std::string, int> sizes = {
      {"float", 4}, {"float32", 4}, {"int", 4}, {"int32", 4}, {"uint32", 4}, {"unsigned int", 4},
      {"double", 8}, {"float64", 8}, {"long", 8}, {"int64", 8}, {"long int", 8}, {"long long", 8},
      {"uint64", 8}, {"unsigned long", 8}, {"complexfloat", 8}, {"complexdouble", 16},
      {"half", 2}, {"float16", 2}, {"c10::half", 2}, {"bfloat16", 2}, {"c10::bfloat16", 2}, {"short", 2},
      {"int16", 2}, {"short int", 2}, {"uint16", 2}, {"complexhalf", 4},
      {"char", 1}, {"int8", 1}, {"signed char", 1}, {"byte", 1}, {"uint8", 1}, {"unsigned char", 1},
      {"bool", 1}, {"float8_e4m3fn", 1}, {"float8_e5m2", 1}, {"float8_e4m3fnuz", 1}, {"float8_e5m2fnuz", 1},
      {"c10::float8_e4m3fn", 1}, {"c10::float8_e5m2", 1}};
  auto it = sizes.find(lower(dtype));
  if (it == sizes.end()) return std::nullopt;
  return it->second;
}

std::optional<Collective> collective_from_name(std::string_view name) {
  std::string n = lower(name);
  // Kernel names: ncclKernel_AllReduce_…, ncclDevKernel_AllGather_…; keep the op part before the signature.
  if (auto paren = n.find('('); paren != std::string::npos) n.resize(paren);
  std::string s;
  for (char c : n)
    if (c != '_' && c != ' ' && c != ':') s += c;
  for (const char* p : {"nccldevkernel", "ncclkernel", "rccldevkernel", "rcclkernel", "nccl", "c10d"})
    if (s.rfind(p, 0) == 0) {
      s = s.substr(std::strlen(p));
      break;
    }
  if (s.rfind("generic", 0) == 0) return std::nullopt;
  // Order matters: "reducescatter" before "reduce", "allreduce" before "reduce".
  if (s.find("allreduce") != std::string::npos) return Collective::all_reduce;
  if (s.find("reducescatter") != std::string::npos) return Collective::reduce_scatter;
  if (s.find("allgather") != std::string::npos) return Collective::all_gather;
  if (s.find("alltoall") != std::string::npos) return Collective::all_to_all;
  if (s.find("broadcast") != std::string::npos) return Collective::broadcast;
  if (s.find("sendrecv") != std::string::npos || s == "send" || s == "recv" || s.rfind("send", 0) == 0 ||
      s.rfind("recv", 0) == 0)
    return Collective::send_recv;
  if (s.rfind("reduce", 0) == 0) return Collective::reduce;
  return std::nullopt;
}

TraceAnalysis analyze_traces(std::vector<Trace> traces, const Trace* baseline, const TraceOptions& options) {
  TraceAnalysis a;
  std::vector<RankData> data;
  data.reserve(traces.size());
  for (std::size_t i = 0; i < traces.size(); ++i) {
    const std::string src = traces[i].source;
    data.push_back(extract(std::move(traces[i]), i, src, options.step_windows));
  }
  traces.clear();
  std::stable_sort(data.begin(), data.end(), [](const RankData& x, const RankData& y) { return x.out.rank < y.out.rank; });
  for (std::size_t i = 1; i < data.size(); ++i)
    if (data[i].out.rank == data[i - 1].out.rank)
      data[i].out.warnings.push_back(fmt::format("rank {} appears in more than one file ({} and {})", data[i].out.rank,
                                                 data[i - 1].out.source, data[i].out.source));

  std::vector<RankData*> gpu_ranks;
  for (auto& d : data)
    if (d.out.has_gpu) gpu_ranks.push_back(&d);
  match_across_ranks(gpu_ranks, options, a.cross);

  std::optional<RankData> base;
  if (baseline) {
    Trace copy = *baseline;
    base = extract(std::move(copy), 0, baseline->source, options.step_windows);
    finish_rank(*base);
    base->out.waterfall = make_waterfall(base->out.mean, nullptr);
  }
  const StepMetrics* base_mean = base && base->out.has_gpu ? &base->out.mean : nullptr;
  for (auto& d : data) {
    finish_rank(d);
    if (d.out.has_gpu) d.out.waterfall = make_waterfall(d.out.mean, base_mean);
    d.out.interference = measure_interference(d, base ? &*base : nullptr);
  }

  // Straggler: the largest mean lateness per step.
  if (a.cross.matched > 0) {
    const RankData* s = nullptr;
    for (const RankData* d : gpu_ranks)
      if (!s || d->out.mean.comm_late_ms > s->out.mean.comm_late_ms) s = d;
    if (s && s->out.mean.comm_late_ms > 0) {
      a.cross.straggler = s->out.rank;
      a.cross.straggler_late_ms_per_step = s->out.mean.comm_late_ms;
    }
  }

  // World size: distributedInfo when the ranks agree, else the number of ranks.
  std::set<std::int64_t> ws;
  for (const auto& d : data)
    if (d.out.world_size) ws.insert(*d.out.world_size);
  if (ws.size() == 1 && *ws.begin() > 0 && *ws.begin() < (1 << 24)) a.world_size = static_cast<int>(*ws.begin());
  else if (!data.empty()) a.world_size = static_cast<int>(data.size());
  if (ws.size() > 1) a.cross.notes.push_back("the traces disagree on world_size: the number of traces is used");

  // Verdict against the baseline.
  if (!base) {
    a.verdict_note = "no 1-rank baseline trace given: no speedup, comm ratio or verdict";
  } else if (!base_mean) {
    a.verdict_note = "the baseline trace has no GPU activity: no verdict";
  } else if (gpu_ranks.empty()) {
    a.verdict_note = "no rank trace has GPU activity: no verdict";
  } else if (!a.world_size || *a.world_size < 2) {
    a.verdict_note = "world size 1: a single rank has no scaling to judge";
  } else {
    try {
      const int n = *a.world_size;
      core::ScalingSample b1, bn;
      b1.world_size = 1;
      b1.step_seconds = base_mean->step_ms / 1e3;
      b1.compute_seconds = base_mean->compute_ms / 1e3;
      b1.tokens_per_step = 1;
      double tn = 0, comm = 0, exposed = 0, count = 0, compute = 0;
      for (const RankData* d : gpu_ranks) {
        tn = std::max(tn, d->out.mean.step_ms);
        comm += d->out.mean.comm_ms;
        exposed += d->out.mean.exposed_comm_ms;
        count += d->out.mean.collectives;
        compute += d->out.mean.compute_ms;
      }
      const double k = static_cast<double>(gpu_ranks.size());
      bn.world_size = n;
      bn.step_seconds = tn / 1e3;
      bn.compute_seconds = compute / k / 1e3;
      bn.all_reduce_seconds = comm / k / 1e3;
      bn.all_reduce_count = bn.all_reduce_seconds > 0 ? std::max(1, static_cast<int>(std::lround(count / k))) : 0;
      bn.exposed_comm_seconds = exposed / k / 1e3;
      bn.tokens_per_step = options.mode == core::ScalingMode::weak ? n : 1;
      a.metrics = core::scaling_metrics(options.mode, b1, bn);
      a.verdict = diagnose::judge(n, a.metrics->speedup, a.metrics->comm_ratio);
    } catch (const core::Error& e) {
      a.metrics.reset();
      a.verdict_note = std::string("no verdict: ") + e.what();
    }
  }

  if (options.keep_timeline)
    for (const auto& d : data) a.timelines.push_back(make_timeline(d));
  for (auto& d : data) a.ranks.push_back(std::move(d.out));
  if (base) a.baseline = std::move(base->out);
  add_findings(a);
  return a;
}

TraceAnalysis analyze_trace_files(const std::vector<std::string>& paths, const TraceOptions& options) {
  std::vector<FileError> errors;
  // Reads one trace; a file that cannot be read, or holds nothing the analysis uses, becomes its error.
  auto read_usable = [&](const std::string& p, bool baseline) -> std::optional<Trace> {
    const std::string role = baseline ? "baseline " : "";
    try {
      Trace t = read_trace_file(p, options.read);
      if (baseline && t.distributed && t.distributed->world_size && *t.distributed->world_size > 1) {
        errors.push_back({p, fmt::format("baseline '{}' is rank {} of a {}-rank job (its distributedInfo), not a run on "
                                         "one rank", p, t.distributed->rank.value_or(-1), *t.distributed->world_size),
                          "profile the same job with world size 1 and pass that trace as --baseline"});
        return std::nullopt;
      }
      if (!t.events.empty()) return t;
      errors.push_back({p, role + "'" + p + "' holds no event the analysis uses (no GPU activity, no ProfilerStep#N, "
                               "no collectives)",
                        baseline ? "pass a torch.profiler trace of the same job on one rank (activities=[CPU, CUDA])"
                                 : "profile with torch.profiler and activities=[CPU, CUDA] over a few training steps"});
    } catch (const core::Error& e) {
      errors.push_back({p, baseline ? std::string("baseline: ") + e.what() : std::string(e.what()), e.remedy()});
    } catch (const std::bad_alloc&) {
      errors.push_back({p, "out of memory while reading " + role + "'" + p + "'",
                        baseline ? "pass a smaller baseline trace" : "analyse fewer or smaller traces at once"});
    }
    return std::nullopt;
  };
  std::vector<Trace> traces;
  for (const auto& p : paths)
    if (auto t = read_usable(p, false)) traces.push_back(std::move(*t));
  std::optional<Trace> base;
  if (options.baseline_path) base = read_usable(*options.baseline_path, true);
  TraceAnalysis a = analyze_traces(std::move(traces), base ? &*base : nullptr, options);
  if (options.baseline_path && !base)
    a.verdict_note = "the baseline trace could not be used (see its error): no speedup, comm ratio or verdict";
  a.errors.insert(a.errors.begin(), errors.begin(), errors.end());
  return a;
}

// ---------------------------------------------------------------------------------------------------------
// JSON.

namespace {
nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }
nlohmann::json opt(const std::optional<std::int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

// Text that may hold bytes from outside (file paths, keys quoted in warnings) as valid UTF-8: every byte that does
// not start a well-formed sequence becomes U+FFFD, so that dump() never throws.
std::string utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size();
    for (std::size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok && n >= 3) {  // no overlong forms, surrogates or code points above U+10FFFF
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0) && !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::vector<std::string> utf8(const std::vector<std::string>& v) {
  std::vector<std::string> out;
  out.reserve(v.size());
  for (const auto& s : v) out.push_back(utf8(s));
  return out;
}
}  // namespace

void to_json(nlohmann::json& j, const StepMetrics& s) {
  j = {{"name", s.name},
       {"number", s.number},
       {"start_ms", s.start_ms},
       {"step_ms", s.step_ms},
       {"gpu_busy_ms", s.gpu_busy_ms},
       {"gpu_idle_ms", s.gpu_idle_ms},
       {"compute_ms", s.compute_ms},
       {"comm_ms", s.comm_ms},
       {"memcpy_ms", s.memcpy_ms},
       {"overlap_ms", s.overlap_ms},
       {"overlap_fraction", opt(s.overlap_fraction())},
       {"exposed_comm_ms", s.exposed_comm_ms},
       {"straggler_wait_ms", s.straggler_wait_ms},
       {"data_wait_ms", s.data_wait_ms},
       {"host_sync_ms", s.host_sync_ms},
       {"other_ms", s.other_ms},
       {"host_syncs", s.host_syncs},
       {"host_sync_blocked_ms", s.host_sync_blocked_ms},
       {"launch_gaps", s.launch_gaps},
       {"launch_gap_idle_ms", s.launch_gap_idle_ms},
       {"launch_gap_ms", s.launch_gap_ms},
       {"collectives", s.collectives},
       {"comm_late_ms", s.comm_late_ms},
       {"comm_wait_ms", s.comm_wait_ms}};
}

void to_json(nlohmann::json& j, const Waterfall& w) {
  j = {{"measured_ms", w.measured_ms},   {"ideal_ms", w.ideal_ms},
       {"ideal_source", w.ideal_source}, {"loss_ms", w.loss_ms()},
       {"compute_ms", w.compute_ms},     {"exposed_comm_ms", w.exposed_comm_ms},
       {"straggler_wait_ms", w.straggler_wait_ms}, {"data_wait_ms", w.data_wait_ms},
       {"host_sync_ms", w.host_sync_ms}, {"other_ms", w.other_ms}};
}

void to_json(nlohmann::json& j, const RankAnalysis& r) {
  j = {{"source", utf8(r.source)},
       {"rank", r.rank},
       {"rank_source", r.rank_source},
       {"world_size", opt(r.world_size)},
       {"backend", r.backend},
       {"nccl_version", r.nccl_version},
       {"device", r.device},
       {"device_name", r.device_name},
       {"compute_stream", r.compute_stream},
       {"has_gpu", r.has_gpu},
       {"cpu_ranks", r.cpu_ranks},
       {"steps_from_annotations", r.steps_from_annotations},
       {"step_windows", r.step_windows},
       {"steps", r.steps},
       {"mean", r.mean},
       {"clock_offset_us", r.clock_offset_us},
       {"json_bytes", r.json_bytes},
       {"events_read", r.events_read},
       {"events_kept", r.events_kept},
       {"warnings", utf8(r.warnings)}};
  j["waterfall"] = r.has_gpu ? nlohmann::json(r.waterfall) : nlohmann::json(nullptr);
  if (!r.has_gpu)
    for (const char* k : {"gpu_busy_ms", "gpu_idle_ms", "compute_ms", "comm_ms", "memcpy_ms", "overlap_ms",
                          "exposed_comm_ms", "straggler_wait_ms", "data_wait_ms", "host_sync_ms", "other_ms"})
      j["mean"][k] = nullptr;
  auto& dr = j["ddp_ranges"] = nlohmann::json::array();
  for (const auto& c : r.ddp_ranges)
    dr.push_back({{"name", utf8(c.name)}, {"calls_per_step", c.calls_per_step}, {"ms_per_step", c.ms_per_step}});
  auto& hs = j["host_syncs"] = nlohmann::json::array();
  for (const auto& g : r.host_syncs)
    hs.push_back({{"label", g.label}, {"count", g.count}, {"blocked_ms", g.blocked_ms}, {"gpu_idle_ms", g.gpu_idle_ms}});
  j["launch_gaps"] = {{"count", r.launch_gaps.count}, {"total_ms", r.launch_gaps.total_ms},
                      {"p50_us", r.launch_gaps.p50_us}, {"p95_us", r.launch_gaps.p95_us},
                      {"max_us", r.launch_gaps.max_us}};
  auto& cs = j["collectives"] = nlohmann::json::array();
  for (const auto& c : r.collectives)
    cs.push_back({{"collective", c.collective}, {"process_group", c.process_group}, {"bytes", opt(c.bytes)},
                  {"dtype", c.dtype}, {"ranks", opt(c.ranks)}, {"count", c.count}, {"total_us", c.total_us},
                  {"busbw_gbps", opt(c.busbw_gbps)}, {"busbw_after_wait_gbps", opt(c.busbw_after_wait_gbps)},
                  {"size_source", c.size_source}});
  j["kernel_names"] = r.kernels.size();  // "kernels" lists the largest kMaxKernelsInJson; the rest: 1 − Σ share
  auto& ks = j["kernels"] = nlohmann::json::array();
  for (std::size_t i = 0; i < r.kernels.size() && i < kMaxKernelsInJson; ++i) {
    const auto& k = r.kernels[i];
    ks.push_back({{"name", utf8(k.name)}, {"comm", k.comm}, {"count", k.count}, {"total_ms", k.total_ms},
                  {"per_step_ms", k.per_step_ms}, {"per_step_count", k.per_step_count}, {"mean_us", k.mean_us},
                  {"share", k.share}});
  }
  j["comm_interference"] = r.interference ? nlohmann::json(*r.interference) : nlohmann::json(nullptr);
}

std::string interference_text(const CommInterference& c, double step_ms) {
  std::string text = fmt::format(
      "compute kernels ran {:.2f} ms per step longer while communication kernels ran beside them ({} of the step, "
      "{:.2f} ms per ms of overlap, against each kernel's median without communication beside it",
      c.slowdown_ms, pct(c.slowdown_ms, step_ms), c.slowdown_per_overlap());
  if (c.slowdown_vs_baseline_ms != 0)
    text += fmt::format("; {:.2f} ms of it measured against the 1-rank baseline, so it also includes what running on "
                        "more ranks costs without communication",
                        c.slowdown_vs_baseline_ms);
  text += ")";
  if (c.calls_without_reference > 0)
    text += fmt::format("; {:.1f} more calls per step overlap it for {:.2f} ms without a reference to judge them by",
                        c.calls_without_reference, c.overlap_without_reference_ms);
  if (!c.kernels.empty() && c.kernels.front().slowdown_ms > 0) {
    const KernelInterference& k = c.kernels.front();
    text += fmt::format("; most in {} ({:+.2f} ms per step, {:.2f} of its overlap{})", core::terminal_text(k.name, 80),
                        k.slowdown_ms, k.slowdown_per_overlap(),
                        k.slowed_by_about_its_overlap()
                            ? ": about its whole overlap, as for a kernel whose blocks fill every SM in one wave and "
                              "wait for the SMs that communication holds"
                            : "");
  }
  return text + ". Overlap hides communication but costs this: with a baseline it is part of the waterfall's compute, "
                "never of exposed communication";
}

void to_json(nlohmann::json& j, const CommInterference& c) {
  j = {{"calls_with_reference_per_step", c.calls_with_reference},
       {"calls_without_reference_per_step", c.calls_without_reference},
       {"overlap_ms_per_step", c.overlap_ms},
       {"slowdown_ms_per_step", c.slowdown_ms},
       {"slowdown_vs_baseline_ms_per_step", c.slowdown_vs_baseline_ms},
       {"slowdown_per_overlap", c.slowdown_per_overlap()},
       {"overlap_without_reference_ms_per_step", c.overlap_without_reference_ms},
       {"kernel_count", c.kernels.size()}};
  auto& ks = j["kernels"] = nlohmann::json::array();
  for (std::size_t i = 0; i < c.kernels.size() && i < kMaxKernelsInJson; ++i) {
    const auto& k = c.kernels[i];
    ks.push_back({{"name", utf8(k.name)},
                  {"launch", k.launch.empty() ? nlohmann::json(nullptr) : nlohmann::json(utf8(k.launch))},
                  {"calls_per_step", k.calls_per_step},
                  {"overlap_ms_per_step", k.overlap_ms},
                  {"slowdown_ms_per_step", k.slowdown_ms},
                  {"slowdown_per_overlap", k.slowdown_per_overlap()},
                  {"reference_us", k.reference_us},
                  {"reference", k.reference}});
  }
}

void to_json(nlohmann::json& j, const KernelDelta& d) {
  j = {{"name", utf8(d.name)}, {"comm", d.comm}, {"baseline_ms_per_step", d.baseline_ms}, {"ms_per_step", d.rank_ms},
       {"delta_ms_per_step", d.delta_ms()}};
}

void to_json(nlohmann::json& j, const TraceAnalysis& a) {
  j = {{"schema", TraceAnalysis::kSchema}, {"ranks", a.ranks}};
  j["baseline"] = a.baseline ? nlohmann::json(*a.baseline) : nlohmann::json(nullptr);
  auto& kd = j["kernel_deltas_vs_baseline"] = nlohmann::json::array();  // per rank, the 20 largest changes
  if (a.baseline)
    for (const auto& r : a.ranks) {
      nlohmann::json kernels = nlohmann::json::array();
      const auto deltas = kernel_deltas(r, *a.baseline);
      for (std::size_t i = 0; i < deltas.size() && i < 20; ++i) kernels.push_back(deltas[i]);
      kd.push_back({{"rank", r.rank}, {"kernels", std::move(kernels)}});
    }
  j["world_size"] = a.world_size ? nlohmann::json(*a.world_size) : nlohmann::json(nullptr);
  auto& c = j["cross_rank"];
  c = {{"alignment", a.cross.alignment}, {"matching", a.cross.matching}, {"matched", a.cross.matched},
       {"unmatched", a.cross.unmatched}, {"notes", utf8(a.cross.notes)}};
  c["straggler"] = a.cross.straggler ? nlohmann::json(*a.cross.straggler) : nlohmann::json(nullptr);
  c["straggler_late_ms_per_step"] = a.cross.straggler_late_ms_per_step;
  auto& w = c["worst"] = nlohmann::json::array();
  for (const auto& m : a.cross.worst)
    w.push_back({{"process_group", m.process_group}, {"collective", m.collective}, {"key", m.key},
                 {"earliest_rank", m.earliest_rank}, {"latest_rank", m.latest_rank}, {"spread_us", m.spread_us}});
  j["metrics"] = a.metrics ? nlohmann::json(*a.metrics) : nlohmann::json(nullptr);
  j["verdict"] = a.verdict ? nlohmann::json(*a.verdict) : nlohmann::json(nullptr);
  j["verdict_note"] = a.verdict_note;
  auto& f = j["findings"] = nlohmann::json::array();
  for (const auto& x : a.findings) f.push_back({{"severity", x.severity}, {"text", utf8(x.text)}});
  auto& e = j["errors"] = nlohmann::json::array();
  for (const auto& x : a.errors) e.push_back({{"path", utf8(x.path)}, {"cause", utf8(x.cause)}, {"remedy", utf8(x.remedy)}});
}

}  // namespace scalescope::analyze
