#include "predict/trace_step.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "analysis/trace_analysis.h"
#include "core/stats.h"

namespace scalescope::predict {

namespace {

struct Range {
  std::int64_t begin = 0, end = 0;
  bool holds(std::int64_t ts) const { return ts >= begin && ts < end; }
};

struct Launch {
  std::int64_t ts = 0;
  std::uint32_t tid = 0;
};

enum class Part { forward, backward, optimizer };

// Per step: the GPU end of each part's work, the first GPU start, the step's last GPU end.
struct StepGpu {
  std::int64_t first_start = INT64_MAX, end = INT64_MIN;
  std::int64_t part_end[3] = {INT64_MIN, INT64_MIN, INT64_MIN};
  std::int64_t first_backward_launch = INT64_MAX;
  bool any = false;
};

double median(std::vector<double> v) { return v.empty() ? 0.0 : core::quantile(v, 0.5); }

}  // namespace

bool step_from_trace(const analyze::Trace& t, TraceStep& out, std::string* why) {
  const auto fail = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  out = TraceStep{};
  if (t.distributed && t.distributed->world_size) out.world_size = static_cast<int>(*t.distributed->world_size);
  std::vector<Range> steps, optimizer;
  std::uint32_t main_tid = 0;
  for (const auto& e : t.events) {
    if (e.kind != analyze::EventKind::user_annotation && e.kind != analyze::EventKind::cpu_op) continue;
    const auto& name = t.names[e.name];
    if (name.rfind("ProfilerStep#", 0) == 0) {
      steps.push_back({e.ts_ns, e.ts_ns + e.dur_ns});
      main_tid = e.tid;
    } else if (name.rfind("Optimizer.step#", 0) == 0) {
      optimizer.push_back({e.ts_ns, e.ts_ns + e.dur_ns});
    }
  }
  if (steps.empty()) return fail("the trace has no ProfilerStep#N ranges (torch.profiler with a schedule and prof.step())");
  std::sort(steps.begin(), steps.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  // Threads the autograd engine named for its GPU work ("thread 1705 (pt_autograd_0)").
  std::vector<std::uint32_t> autograd;
  for (const auto& [key, name] : t.thread_names)
    if (name.find("pt_autograd") != std::string::npos) autograd.push_back(key.second);
  const auto is_backward_thread = [&](std::uint32_t tid) {
    return tid != main_tid || std::find(autograd.begin(), autograd.end(), tid) != autograd.end();
  };
  std::unordered_map<std::int64_t, Launch> launches;  // correlation → the launch call
  for (const auto& e : t.events)
    if ((e.kind == analyze::EventKind::cuda_runtime || e.kind == analyze::EventKind::cuda_driver) && e.correlation >= 0)
      launches[e.correlation] = {e.ts_ns, e.tid};
  const auto step_of = [&](std::int64_t ts) -> int {
    auto it = std::upper_bound(steps.begin(), steps.end(), ts, [](std::int64_t v, const Range& r) { return v < r.begin; });
    if (it == steps.begin()) return -1;
    --it;
    return it->holds(ts) ? static_cast<int>(it - steps.begin()) : -1;
  };
  const auto in_optimizer = [&](std::int64_t ts) {
    return std::any_of(optimizer.begin(), optimizer.end(), [&](const Range& r) { return r.holds(ts); });
  };
  // First pass: backward's first launch per step (forward is what the host launched before it).
  std::vector<StepGpu> gpu(steps.size());
  struct Activity {
    int step;
    std::int64_t launch, begin, end;
    bool backward, optimizer;
  };
  std::vector<Activity> acts;
  for (const auto& e : t.events) {
    if (!analyze::is_gpu_activity(e.kind)) continue;
    const auto l = launches.find(e.correlation);
    if (l == launches.end()) continue;
    const int k = step_of(l->second.ts);
    if (k < 0) continue;
    const bool bwd = is_backward_thread(l->second.tid);
    const bool opt = !bwd && in_optimizer(l->second.ts);
    acts.push_back({k, l->second.ts, e.ts_ns, e.ts_ns + e.dur_ns, bwd, opt});
    if (bwd) gpu[k].first_backward_launch = std::min(gpu[k].first_backward_launch, l->second.ts);
  }
  if (acts.empty()) return fail("no GPU work was launched inside the trace's ProfilerStep#N ranges (a CPU-only job?)");
  for (const auto& a : acts) {
    auto& g = gpu[a.step];
    g.any = true;
    g.first_start = std::min(g.first_start, a.begin);
    g.end = std::max(g.end, a.end);
    const Part p = a.backward ? Part::backward
                   : a.optimizer ? Part::optimizer
                   : a.launch < g.first_backward_launch ? Part::forward
                                                        : Part::optimizer;  // after backward, outside a range: the step's tail
    auto& pe = g.part_end[static_cast<int>(p)];
    pe = std::max(pe, a.end);
  }
  std::vector<double> fwd, bwd, opt;
  int gpu_paced = 0;
  std::int64_t previous_end = INT64_MIN;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const auto& g = gpu[k];
    if (!g.any) continue;
    const std::int64_t start = previous_end == INT64_MIN ? g.first_start : previous_end;
    previous_end = g.end;
    const double host = static_cast<double>(steps[k].end - steps[k].begin) * 1e-9;
    const double device = static_cast<double>(g.end - start) * 1e-9;
    out.periods_s.push_back(std::max(host, device));
    gpu_paced += device >= host;
    if (g.part_end[1] == INT64_MIN) continue;  // no backward in this step
    const std::int64_t f_end = g.part_end[0] == INT64_MIN ? start : std::max(start, g.part_end[0]);
    const std::int64_t b_end = std::max(f_end, g.part_end[1]);
    const std::int64_t o_end = g.part_end[2] == INT64_MIN ? b_end : std::max(b_end, g.part_end[2]);
    fwd.push_back(static_cast<double>(f_end - start) * 1e-9);
    bwd.push_back(static_cast<double>(b_end - f_end) * 1e-9);
    opt.push_back(static_cast<double>(o_end - b_end) * 1e-9);
  }
  if (bwd.empty())
    return fail("no step has GPU work launched by the autograd engine's thread (no backward in the profiled steps)");
  out.steps = static_cast<int>(out.periods_s.size());
  out.step_s = median(out.periods_s);
  out.forward_s = median(fwd);
  out.backward_s = median(bwd);
  out.optimizer_s = median(opt);
  out.gpu_bound = 2 * gpu_paced >= out.steps;

  // DDP's all-reduce calls per step: their sizes (record_param_comms' arguments) and, for readiness, the GPU end of
  // the last work launched before each call. The reducer's "nccl:all_reduce" range marks the call where present.
  std::vector<std::pair<std::int64_t, std::int64_t>> launched;  // (launch start, GPU end), in launch order
  for (const auto& a : acts) launched.emplace_back(a.launch, a.end);
  std::sort(launched.begin(), launched.end());
  bool annotated = false;
  for (const auto& e : t.events)
    annotated |= e.kind == analyze::EventKind::user_annotation && t.names[e.name] == "nccl:all_reduce";
  struct Call {
    std::int64_t ts, ready;
    double bytes;
    std::string dtype;
  };
  std::vector<std::vector<Call>> calls(steps.size());
  struct Sized {
    std::int64_t begin, end;
    const analyze::CollectiveArgs* args;
  };
  std::vector<Sized> sizes;  // record_param_comms of all-reduces, by start
  for (const auto& e : t.events)
    if (e.collective >= 0 && t.names[e.name] == "record_param_comms") {
      const auto& c = t.collectives[static_cast<std::size_t>(e.collective)];
      if (c.collective == "allreduce" || c.collective == "all_reduce") sizes.push_back({e.ts_ns, e.ts_ns + e.dur_ns, &c});
    }
  std::sort(sizes.begin(), sizes.end(), [](const Sized& a, const Sized& b) { return a.begin < b.begin; });
  for (const auto& e : t.events) {
    const auto& name = t.names[e.name];
    const bool call = annotated ? (e.kind == analyze::EventKind::user_annotation && name == "nccl:all_reduce")
                                : (e.kind == analyze::EventKind::cpu_op && name == "c10d::allreduce_");
    if (!call) continue;
    const int k = step_of(e.ts_ns);
    if (k < 0) continue;
    const auto before = std::lower_bound(launched.begin(), launched.end(), std::make_pair(e.ts_ns, std::int64_t{0}));
    if (before == launched.begin()) continue;
    Call c{e.ts_ns, std::prev(before)->second, 0, ""};
    // The call's arguments: the last record_param_comms that began before the call ended and overlaps it (PyTorch
    // opens it around the reducer's "nccl:all_reduce" range, inside c10d::allreduce_).
    const std::int64_t call_end = e.ts_ns + std::max<std::int64_t>(e.dur_ns, 1);
    auto s = std::lower_bound(sizes.begin(), sizes.end(), call_end, [](const Sized& p, std::int64_t v) { return p.begin < v; });
    if (s != sizes.begin() && std::prev(s)->end >= e.ts_ns) {
      const auto& args = *std::prev(s)->args;
      const auto es = analyze::dtype_size(args.dtype);
      if (args.in_nelems && es) c.bytes = static_cast<double>(*args.in_nelems) * *es;
      c.dtype = args.dtype;
    }
    calls[static_cast<std::size_t>(k)].push_back(std::move(c));
  }
  std::map<std::size_t, int> counts;
  for (const auto& s : calls) {
    out.calls_per_step.push_back(static_cast<int>(s.size()));
    if (!s.empty()) ++counts[s.size()];
  }
  if (counts.empty()) return true;  // no DDP all-reduce: the step is still read
  const std::size_t n = std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
                          return a.second < b.second || (a.second == b.second && a.first < b.first);
                        })->first;
  std::vector<std::vector<double>> before_end(n);
  bool first = true;
  for (auto& s : calls) {
    if (s.size() != n) continue;
    std::sort(s.begin(), s.end(), [](const Call& a, const Call& b) { return a.ts < b.ts; });
    if (first) {  // sizes and dtype from the first such step (DDP's buckets are fixed after its first iteration)
      for (const auto& c : s) out.bucket_bytes.push_back(c.bytes);
      out.dtype = s.front().dtype;
      out.element_bytes = analyze::dtype_size(out.dtype).value_or(0);
      first = false;
    }
    std::int64_t last = INT64_MIN;
    for (const auto& c : s) last = std::max(last, c.ready);
    for (std::size_t i = 0; i < n; ++i) before_end[i].push_back(static_cast<double>(last - s[i].ready) * 1e-9);
    ++out.bucket_steps;
  }
  for (auto& v : before_end) out.ready_before_end_s.push_back(std::max(0.0, median(v)));
  return true;
}

}  // namespace scalescope::predict
