// The trace analysis's entry points (trace_analysis.h): the traces read, each rank's record extracted, the
// collectives matched across ranks, each rank's figures and waterfall, the straggler, the world size, the verdict
// against the baseline, and the findings — each step in its own file (trace_analysis_internal.h says which);
// and the kernel-name and dtype helpers the trace reader's events are classified by.

#include "analysis/trace_analysis.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>

#include "analysis/trace_analysis_internal.h"
#include "core/error.h"

namespace scalescope::analyze {

using comm::Collective;
using trace_analysis_internal::add_findings;
using trace_analysis_internal::extract;
using trace_analysis_internal::finish_rank;
using trace_analysis_internal::lower;
using trace_analysis_internal::make_timeline;
using trace_analysis_internal::make_waterfall;
using trace_analysis_internal::match_across_ranks;
using trace_analysis_internal::measure_interference;
using trace_analysis_internal::RankData;

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

}  // namespace scalescope::analyze
