#include "predict/inputs.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <unordered_map>

#include <fmt/format.h>

#include "readers/input_kind.h"
#include "readers/nccl/nccl_profile.h"
#include "readers/nccl/nccl_tests_parser.h"
#include "analysis/trace_analysis.h"
#include "readers/trace/trace_reader.h"
#include "predict/trace_step.h"
#include "core/error.h"
#include "core/json_file.h"
#include "core/stats.h"

namespace scalescope::predict {

namespace {

double number(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : NAN;
}

// The step time of a train report: the trimmed mean of its timed rounds (the middle three of five, the protocol's
// figure), else the mean, else the phases' total.
double step_of(const nlohmann::json& r) {
  if (const auto it = r.find("step_s"); it != r.end()) {
    if (it->is_number()) return it->get<double>();
    if (it->is_object()) {
      const double t = number(*it, "trimmed_mean");
      if (!std::isnan(t)) return t;
      const double m = number(*it, "mean");
      if (!std::isnan(m)) return m;
    }
  }
  return r.contains("phases") && r["phases"].is_object() ? number(r["phases"], "total_s") : NAN;
}

/// The median absolute deviation over the median (for a normal spread ≈ half the inter-quartile range; a few slow
/// steps — a pause, a checkpoint — do not move it); 0 for fewer than 3 figures or a median ≤ 0.
double relative_spread(const std::vector<double>& v) {
  if (v.size() < 3) return 0;
  const double m = core::quantile(v, 0.5);
  if (!(m > 0)) return 0;
  std::vector<double> dev;
  for (double x : v) dev.push_back(std::abs(x - m));
  return core::quantile(dev, 0.5) / m;
}

RunInput from_train(const nlohmann::json& r, const std::string& source) {
  RunInput in;
  auto& p = in.profile;
  if (!r.contains("phases") || !r["phases"].is_object())
    throw core::Error(fmt::format("{}: the report has no \"phases\"", source), "pass a report scalescope train or doctor wrote");
  const auto& ph = r["phases"];
  const double fwd = number(ph, "forward_s"), bwd = number(ph, "backward_s"), opt = number(ph, "optimizer_s");
  const double step = step_of(r);
  if (std::isnan(fwd) || std::isnan(bwd) || std::isnan(opt) || std::isnan(step))
    throw core::Error(fmt::format("{}: the phases lack forward, backward, optimizer or the step time", source),
                      "pass a report of scalescope train or doctor");
  p.forward_s = fwd;
  p.backward_s = bwd;
  p.optimizer_s = opt;
  p.other_s = std::max(0.0, step - fwd - bwd - opt);
  if (const auto it = r.find("step_s"); it != r.end() && it->is_object()) {  // the rounds' coefficient of variation
    const double cv = number(*it, "cv");
    if (std::isfinite(cv) && cv > 0) p.step_spread = cv;
  }
  double total = 0;
  std::vector<double> sizes;
  if (r.contains("bucket_bytes") && r["bucket_bytes"].is_array())
    for (const auto& b : r["bucket_bytes"])
      if (b.is_number() && b.get<double>() > 0) sizes.push_back(b.get<double>()), total += b.get<double>();
  if (sizes.empty())
    throw core::Error(fmt::format("{}: the report lists no gradient buckets (\"bucket_bytes\")", source),
                      "pass a report of scalescope train or doctor from this version");
  double done = 0;
  for (double b : sizes) {
    done += b;
    p.buckets.push_back({b, bwd * done / total});
  }
  const double params = number(r, "parameters");
  if (params > 0) p.grad_element_bytes = std::max(1, static_cast<int>(std::lround(total / params)));
  if (const double t = number(r, "embedding_table_gradient_bytes"), g = number(r, "embedding_gather_bytes_per_rank");
      t > 0 && g > 0) {
    p.embedding_table_bytes = t;
    p.embedding_gather_bytes = g;
    const auto& config = r.value("config", nlohmann::json::object());
    const auto& engine = config.value("engine", config);
    p.embedding_exchange = engine.value("embedding_exchange", config.value("embedding_exchange", std::string("all-reduce")));
  }
  const auto& cfg = r.value("config", nlohmann::json::object());
  if (cfg.contains("model") && cfg["model"].is_object()) in.model = cfg["model"].value("name", "");
  p.basis = fmt::format("{}: one rank, {} step {:.2f} ms (forward {:.2f}, backward {:.2f}, optimizer {:.2f}), {} bucket(s), "
                        "{:.1f} MB in all", source, in.model.empty() ? "the" : in.model, step * 1e3, fwd * 1e3, bwd * 1e3,
                        opt * 1e3, sizes.size(), total / 1e6);
  // The DP engine's own ready times (rank 0, median of the timed steps), when the report has one per bucket.
  std::vector<double> ready;
  if (r.contains("bucket_ready_s") && r["bucket_ready_s"].is_array())
    for (const auto& t : r["bucket_ready_s"])
      if (t.is_number() && t.get<double>() >= 0) ready.push_back(t.get<double>());
  if (ready.size() == p.buckets.size()) {
    for (std::size_t k = 0; k < ready.size(); ++k) p.buckets[k].ready_s = std::min(ready[k], bwd);
    p.assumptions.push_back(fmt::format("bucket ready times measured by the DP engine (rank 0, median of the timed steps): the "
                                        "first {:.2f} ms, the last {:.2f} ms after backward began", ready.front() * 1e3,
                                        ready.back() * 1e3));
  } else {
    p.assumptions.push_back("buckets become ready at an even rate of gradient bytes over backward (the report has no "
                            "per-bucket ready times)");
  }
  return in;
}

double median_of(const nlohmann::json& a) {
  std::vector<double> v;
  if (a.is_array())
    for (const auto& x : a)
      if (x.is_number() && x.get<double>() > 0) v.push_back(x.get<double>());
  return v.empty() ? NAN : core::quantile(v, 0.5);
}

// DDP's logging data holds numbers as strings ("33693728, 33562624").
std::vector<double> numbers_in(const nlohmann::json& v) {
  std::vector<double> out;
  if (v.is_number()) out.push_back(v.get<double>());
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    std::size_t i = 0;
    while (i < s.size()) {
      char* end = nullptr;
      const double x = std::strtod(s.c_str() + i, &end);
      if (end == s.c_str() + i) {
        ++i;
        continue;
      }
      out.push_back(x);
      i = static_cast<std::size_t>(end - s.c_str());
    }
  }
  return out;
}

// `scalescope profile`'s capture of a one-rank PyTorch job: the job's own step (median outside the profiled
// window), DDP's buckets in its order (rebuilt_bucket_sizes, else bucket_sizes), and backward's share of forward +
// backward from DDP's logging data (timed by DDP at a sampled iteration).
RunInput from_capture(const nlohmann::json& c, const std::string& source) {
  RunInput in;
  auto& p = in.profile;
  if (c.value("world_size", 0) != 1)
    throw core::Error(fmt::format("{}: a capture at world size {}, not 1", source, c.value("world_size", 0)),
                      "profile the job at one rank: scalescope profile -- torchrun --nproc_per_node 1 train.py");
  // Steps outside the profiled window (the window's are inflated by the profiler).
  std::vector<double> steps;
  const auto& ms = c.value("step_ms", nlohmann::json::array());
  const auto& w = c.value("window", nlohmann::json::object());
  const int first = w.value("first", -1), count = w.value("count", 0), warmup = c.value("warmup", 0);
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const int k = static_cast<int>(i);
    if (k < warmup || (k >= first - 1 && k <= first + count)) continue;
    if (ms[i].is_number()) steps.push_back(ms[i].get<double>());
  }
  const double step = median_of(nlohmann::json(steps)) * 1e-3;
  p.step_spread = relative_spread(steps);
  if (std::isnan(step))
    throw core::Error(fmt::format("{}: no step times outside the profiled window", source),
                      "profile more steps than --warmup + --steps");
  const auto& log = c.value("ddp_logging", nlohmann::json::object());
  auto sizes = numbers_in(log.value("rebuilt_bucket_sizes", nlohmann::json()));
  if (sizes.empty()) sizes = numbers_in(log.value("bucket_sizes", nlohmann::json()));
  if (sizes.empty())
    throw core::Error(fmt::format("{}: no DDP bucket sizes in the capture (the job did not use DDP, or its logging data "
                                  "was not reached)", source),
                      "profile a DDP job for at least --warmup steps");
  const auto fwd_ns = numbers_in(log.value("avg_forward_compute_time", nlohmann::json()));
  const auto bwd_ns = numbers_in(log.value("avg_backward_compute_time", nlohmann::json()));
  double share = 2.0 / 3;  // backward = twice forward, when DDP timed neither
  // Times as DDP logged them: finite and non-negative, or not used (a damaged or hand-edited capture).
  const bool timed = !fwd_ns.empty() && !bwd_ns.empty() && std::isfinite(fwd_ns[0]) && std::isfinite(bwd_ns[0]) &&
                     fwd_ns[0] >= 0 && bwd_ns[0] >= 0 && fwd_ns[0] + bwd_ns[0] > 0;
  if (timed) share = bwd_ns[0] / (fwd_ns[0] + bwd_ns[0]);
  p.optimizer_s = 0.03 * step;
  p.backward_s = share * (step - p.optimizer_s);
  p.forward_s = step - p.optimizer_s - p.backward_s;
  double total = 0;
  for (double b : sizes) total += b;
  double done = 0;
  for (double b : sizes) {
    done += b;
    p.buckets.push_back({b, p.backward_s * done / total});
  }
  const std::string dtype = c.contains("ddp") ? c["ddp"].value("dtype", "") : "";
  p.grad_element_bytes = dtype.find("16") != std::string::npos ? 2 : (dtype.find("64") != std::string::npos ? 8 : 4);
  p.basis = fmt::format("{}: one PyTorch DDP rank, step {:.2f} ms (median of {} steps outside the profiled window), {} bucket(s), "
                        "{:.1f} MB in all ({})", source, step * 1e3, steps.size(), sizes.size(), total / 1e6, dtype);
  p.assumptions.push_back(fmt::format("backward {:.0f} % of forward + backward (DDP's logging data{}), the optimizer 3 % of "
                                      "the step", 100 * share,
                                      timed ? ", one sampled iteration"
                                            : fwd_ns.empty() || bwd_ns.empty() ? ": absent, 2/3 taken"
                                                                               : ": not finite or negative, so not used; 2/3 taken"));
  p.assumptions.push_back("buckets become ready at an even rate of gradient bytes over backward");
  return in;
}

}  // namespace

RunInput run_from_report(const nlohmann::json& report, const std::string& source) {
  const std::string schema = report.is_object() ? report.value("schema", "") : "";
  if (schema == "scalescope.train/1") {
    const int ws = report.contains("config") ? report["config"].value("world_size", 0) : 0;
    if (ws != 1)
      throw core::Error(fmt::format("{}: a run at world size {}, not 1", source, ws),
                        "predict starts from one rank: scalescope train --world-size 1 … --out run.json");
    return from_train(report, source);
  }
  if (schema == "scalescope.doctor/1") {
    const nlohmann::json* one = nullptr;
    std::vector<MeasuredPoint> measured;
    static const nlohmann::json kNone = nlohmann::json::array();
    const auto& points = report.contains("points") && report["points"].is_array() ? report["points"] : kNone;
    for (const auto& pt : points) {
      const int ws = pt.value("world_size", 0);
      if (ws == 1 && pt.contains("result")) one = &pt["result"];
      if (ws >= 2 && pt.contains("result")) {
        const double s = step_of(pt["result"]);
        if (!std::isnan(s)) measured.push_back({ws, s});
      }
    }
    if (!one)
      throw core::Error(fmt::format("{}: the doctor report has no world-size-1 point", source),
                        "run doctor from one rank (its default) and pass that report");
    auto in = from_train(*one, source + " (world size 1)");
    in.measured = std::move(measured);
    return in;
  }
  if (schema == "scalescope.capture/1") return from_capture(report, source);
  throw core::Error(fmt::format("{}: not a scalescope train, doctor or profile capture (schema '{}')", source, schema),
                    "pass the JSON that scalescope train --out or doctor --out wrote, or a one-rank profile job directory");
}

LinkModel link_from(const std::string& spec) {
  std::error_code ec;
  if (!std::filesystem::exists(spec, ec)) return LinkModel::named(spec);
  const auto input = analyze::read_input_file(spec);
  std::vector<analyze::Sweep> sweeps;
  const auto& d = input.detection;
  if (d.has(analyze::InputKind::nccl_tests)) {
    sweeps = analyze::parse_nccl_tests_tables(input.text, spec);
  } else if (d.has(analyze::InputKind::nccl_profile)) {
    const auto p = analyze::parse_nccl_profile(input.text, spec);
    if (auto sw = analyze::nccl_profile_sweep(p, comm::Collective::all_reduce)) sweeps.push_back(std::move(*sw));
  } else if (d.has(analyze::InputKind::scalescope_json) && d.schema == "scalescope.comm/1") {
    const auto j = nlohmann::json::parse(input.text);
    const auto take = [&](const nlohmann::json& r) {
      if (r.contains("sweep")) sweeps.push_back(r["sweep"].get<analyze::Sweep>());
    };
    if (j.contains("reports"))
      for (const auto& r : j["reports"]) take(r);
    else
      take(j);
  } else {
    throw core::Error(fmt::format("--link '{}': {} — not an all-reduce measurement", spec,
                                  d.kinds.empty() ? d.reason : "a " + std::string(analyze::to_string(d.kinds.front()))),
                      "pass scalescope comm --out JSON, an all_reduce_perf output or a named link (\"H200:NV18\")");
  }
  return LinkModel::from_sweeps(sweeps, spec);
}

namespace {

/// Bucket i ready (its gap before the last bucket's call) before backward's end, from a trace's step; false with the
/// reason when the trace's calls per step do not match the run's buckets.
bool apply_ready_times(RunInput& in, const TraceStep& ts, const std::string& trace_path, std::string* why) {
  auto& buckets = in.profile.buckets;
  if (buckets.empty()) {
    if (why) *why = "no buckets to time";
    return false;
  }
  if (ts.ready_before_end_s.size() != buckets.size()) {
    std::string counts;
    for (int c : ts.calls_per_step) counts += (counts.empty() ? "" : ", ") + std::to_string(c);
    if (why)
      *why = fmt::format("no profiled step has one all-reduce call per bucket ({} buckets; calls per step: {})",
                         buckets.size(), counts.empty() ? "none" : counts);
    return false;
  }
  const double backward = in.profile.backward_s;
  double earliest = 0;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    const double gap = ts.ready_before_end_s[i];
    buckets[i].ready_s = std::max(0.0, backward - gap);
    earliest = std::max(earliest, gap);
  }
  std::erase_if(in.profile.assumptions, [](const std::string& a) { return a.rfind("buckets become ready at an even rate", 0) == 0; });
  in.profile.assumptions.push_back(fmt::format(
      "bucket ready times measured in the trace ({}): the GPU end of the work each all-reduce waited for, before the "
      "last bucket's, median of {} step(s); the first bucket {:.2f} ms before backward's end{}",
      trace_path, ts.bucket_steps, earliest * 1e3,
      earliest > backward ? " (more than backward as measured: clipped to backward's start)" : ""));
  return true;
}

/// The trace's step, or false with the reader's or the step's reason.
bool read_trace_step(const std::string& trace_path, TraceStep& ts, std::string* why) {
  analyze::Trace t;
  try {
    t = analyze::read_trace_file(trace_path);
  } catch (const core::Error& e) {
    if (why) *why = e.what();
    return false;
  }
  return step_from_trace(t, ts, why);
}

}  // namespace

bool ready_times_from_trace(RunInput& in, const std::string& trace_path, std::string* why) {
  if (in.profile.buckets.empty()) {
    if (why) *why = "no buckets to time";
    return false;
  }
  TraceStep ts;
  if (!read_trace_step(trace_path, ts, why)) return false;
  return apply_ready_times(in, ts, trace_path, why);
}

namespace {

/// Every figure predict computes with, checked finite and in range: a hand-edited or damaged report must give an
/// error naming the figure, not a prediction of "inf ms". Throws core::Error.
void check_figures(const RunInput& run, const std::string& source) {
  const auto check = [&](double v, const std::string& what, bool positive) {
    if (!std::isfinite(v) || v < 0 || (positive && v == 0))
      throw core::Error(fmt::format("{}: {} is {}, not a {} number of seconds or bytes", source, what, v,
                                    positive ? "finite positive" : "finite non-negative"),
                        "pass the report as scalescope wrote it, from a run that completed");
  };
  const auto& p = run.profile;
  check(p.forward_s, "the forward time", false);
  check(p.backward_s, "the backward time", false);
  check(p.optimizer_s, "the optimizer time", false);
  if (!std::isfinite(p.other_s))  // the step less its phases: may be a little below 0 where they overlap
    throw core::Error(fmt::format("{}: the step's other time is {}, not a finite number of seconds", source, p.other_s),
                      "pass the report as scalescope wrote it, from a run that completed");
  check(p.step_s(), "the step time", true);
  check(p.embedding_table_bytes, "the embedding table's gradient bytes", false);
  check(p.embedding_gather_bytes, "the embedding's all-gathered bytes", false);
  for (std::size_t i = 0; i < p.buckets.size(); ++i) {
    check(p.buckets[i].bytes, fmt::format("bucket {}'s size", i), false);
    check(p.buckets[i].ready_s, fmt::format("bucket {}'s ready time", i), false);
  }
  for (const auto& m : run.measured) check(m.step_s, fmt::format("the measured step at {} ranks", m.ranks), true);
}

}  // namespace

namespace {

/// Whether `path` is a Kineto trace: detection on its head (a trace is recognised from it alone), so that a large
/// JSON of another kind beside it is not read whole. False for a file that cannot be read.
bool is_trace_file(const std::string& path) {
  try {
    return analyze::read_input_file(path, analyze::kDetectionHeadBytes).detection.has(analyze::InputKind::kineto_trace);
  } catch (const core::Error&) {
    return false;
  }
}

/// The Kineto traces in a directory (files whose head the input detection reads as one), sorted by name.
std::vector<std::string> traces_in(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file(ec)) continue;
    const auto name = entry.path().filename().string();
    if ((name.ends_with(".json") || name.ends_with(".json.gz")) && is_trace_file(entry.path().string()))
      out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// Rank 0's trace when one is named so ("rank0", "rank_0"), else the first by name.
std::string pick_trace(const std::vector<std::string>& traces) {
  for (const auto& t : traces) {
    const auto name = std::filesystem::path(t).filename().string();
    if (name.find("rank0.") != std::string::npos || name.find("rank_0.") != std::string::npos ||
        name.find("rank0_") != std::string::npos)
      return t;
  }
  return traces.front();
}

/// What the one-rank run is read from: a report, a job directory's capture, or a trace alone.
struct RunSource {
  std::string report;              ///< a train/doctor/capture JSON ("" for a trace alone)
  std::string trace;               ///< a Kineto trace ("" none)
  std::vector<std::string> others; ///< further traces of the directory, not used
};

RunSource locate(const std::string& path) {
  RunSource src;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    const auto capture = (std::filesystem::path(path) / "capture.rank0.json").string();
    if (std::filesystem::is_regular_file(capture, ec)) {
      src.report = capture;
      return src;
    }
    auto traces = traces_in(path);
    if (traces.empty())
      throw core::UsageError(fmt::format("'{}': neither a capture.rank0.json nor a PyTorch profiler trace (.json, "
                                         ".json.gz) in this directory", path),
                             "pass a train/doctor JSON, a one-rank torch.profiler trace, or the job directory of "
                             "scalescope profile --keep DIR at one rank");
    src.trace = pick_trace(traces);
    for (auto& t : traces)
      if (t != src.trace) src.others.push_back(std::move(t));
    return src;
  }
  if (!std::filesystem::is_regular_file(path, ec))
    throw core::UsageError(fmt::format("'{}': no such file or directory", path),
                           "pass a train/doctor JSON, a one-rank torch.profiler trace, or a scalescope profile job directory");
  if (path.ends_with(".gz") || is_trace_file(path))
    src.trace = path;
  else
    src.report = path;
  return src;
}

/// The trace of a capture's profiled window, "" when the capture names none.
std::string capture_trace(const nlohmann::json& report, const std::string& report_path) {
  if (report.is_object() && report.value("schema", "") == "scalescope.capture/1" && report.contains("window") &&
      report["window"].is_object() && report["window"].value("trace", nlohmann::json()).is_string())
    return (std::filesystem::path(report_path).parent_path() / report["window"]["trace"].get<std::string>()).string();
  return "";
}

/// forward / backward / optimizer as the trace's GPU timeline splits its step, applied to `p`'s step (the capture's,
/// over more steps than the profiled window): the same shares, the rest of the step as other.
void apply_phase_shares(StepProfile& p, const TraceStep& ts, const std::string& trace_path) {
  const double step = p.step_s();
  if (!(ts.step_s > 0) || !(step > 0)) return;
  const double k = step / ts.step_s;
  p.forward_s = ts.forward_s * k;
  p.backward_s = ts.backward_s * k;
  p.optimizer_s = ts.optimizer_s * k;
  p.other_s = step - p.compute_s();
  std::erase_if(p.assumptions, [](const std::string& a) { return a.rfind("backward ", 0) == 0 && a.find("the optimizer 3 %") != std::string::npos; });
  p.assumptions.push_back(fmt::format(
      "forward {:.0f} %, backward {:.0f} %, optimizer {:.0f} % of the step: the GPU timeline of the profiled window "
      "({}, median of {} step(s) of {:.2f} ms), applied to the step measured outside it",
      100 * ts.forward_s / ts.step_s, 100 * ts.backward_s / ts.step_s, 100 * ts.optimizer_s / ts.step_s, trace_path,
      ts.steps, ts.step_s * 1e3));
}

RunInput from_trace_step(const TraceStep& ts, const std::string& trace_path) {
  if (ts.bucket_bytes.empty())
    throw core::Error(fmt::format("{}: no DDP all-reduce call in the profiled steps, so no gradient buckets to predict "
                                  "with", trace_path),
                      "profile a DDP job (the model wrapped in DistributedDataParallel) at one rank under torchrun");
  for (double b : ts.bucket_bytes)
    if (!(b > 0))
      throw core::Error(fmt::format("{}: the all-reduce calls carry no sizes (record_param_comms' 'In msg nelems' and "
                                    "'dtype', which PyTorch 2.1 and later write)", trace_path),
                        "profile with a recent PyTorch, or pass the job directory of scalescope profile --keep DIR");
  for (double b : ts.bucket_bytes)
    if (b > 1e12)
      throw core::Error(fmt::format("{}: an all-reduce call of {:.3g} bytes: no DDP bucket holds a terabyte (the trace's "
                                    "'In msg nelems' or 'dtype' is damaged)", trace_path, b),
                        "profile the job again, or pass the job directory of scalescope profile --keep DIR");
  RunInput in;
  auto& p = in.profile;
  p.forward_s = ts.forward_s;
  p.backward_s = ts.backward_s;
  p.optimizer_s = ts.optimizer_s;
  p.other_s = std::max(0.0, ts.step_s - p.compute_s());
  p.step_spread = relative_spread(ts.periods_s);
  double total = 0;
  for (double b : ts.bucket_bytes) {
    total += b;
    p.buckets.push_back({b, 0});
  }
  p.grad_element_bytes = ts.element_bytes > 0 ? ts.element_bytes : 4;
  p.basis = fmt::format("{}: a PyTorch profiler trace of {}, step {:.2f} ms (median of {} profiled step(s), "
                        "paced by the {}), {} bucket(s), {:.1f} MB in all ({})", trace_path,
                        ts.world_size > 1 ? fmt::format("one rank of a {}-rank DDP job", ts.world_size) : "one DDP rank",
                        ts.step_s * 1e3, ts.steps,
                        ts.gpu_bound ? "GPU" : "host", ts.bucket_bytes.size(), total / 1e6,
                        ts.dtype.empty() ? "dtype not given" : ts.dtype);
  p.assumptions.push_back(fmt::format(
      "forward {:.2f} ms, backward {:.2f} ms, optimizer {:.2f} ms: the GPU timeline of the profiled steps (median), "
      "each to the GPU end of its last work; the rest of the step ({:.2f} ms) unchanged by scaling",
      ts.forward_s * 1e3, ts.backward_s * 1e3, ts.optimizer_s * 1e3, p.other_s * 1e3));
  p.assumptions.push_back(fmt::format(
      "the buckets as DDP formed them in the trace ({} all-reduce calls per step, {}): the trace does not give "
      "bucket_cap_mb, so a re-bucketing what-if assumes DDP's rule (first bucket 1 MiB)",
      ts.bucket_bytes.size(), ts.dtype.empty() ? "gradient dtype not given: 4 bytes per element taken" : "gradients in " + ts.dtype));
  if (ts.world_size > 1)
    p.assumptions.push_back(fmt::format(
        "NOT one rank alone: the trace is one rank of a {}-rank job, so its step already holds that job's all-reduces "
        "and waits; predicting from it counts communication twice — profile the job at one rank (torchrun "
        "--nproc_per_node 1) for a prediction that starts from compute alone", ts.world_size));
  // The buckets and their ready times come from the same steps of the trace: one ready time per bucket, always.
  apply_ready_times(in, ts, trace_path, nullptr);
  return in;
}

}  // namespace

std::vector<std::string> run_input_files(const std::string& path) {
  try {
    const auto src = locate(path);
    if (src.report.empty()) return {src.trace};
    std::vector<std::string> out{src.report};
    try {
      const auto trace = capture_trace(core::read_json_file(src.report, "the one-rank run"), src.report);
      if (!trace.empty()) out.push_back(trace);
    } catch (const std::exception&) {
    }
    return out;
  } catch (const std::exception&) {
    return {path};
  }
}

RunInput run_from_path(const std::string& path) {
  const auto src = locate(path);
  if (src.report.empty() && src.others.empty()) {  // one trace
    TraceStep ts;
    std::string why;
    if (!read_trace_step(src.trace, ts, &why))
      throw core::Error(fmt::format("{}: cannot read one rank's step from this trace: {}", src.trace, why),
                        "profile a few steps with torch.profiler (CPU and CUDA activities, a schedule, prof.step() each "
                        "step), or pass the job directory of scalescope profile --keep DIR");
    auto run = from_trace_step(ts, src.trace);  // names what it lacks (no DDP all-reduce call, no sizes)
    check_figures(run, src.trace);
    return run;
  }
  if (src.report.empty()) {  // a directory of traces: the first (rank 0's first) that gives a step with buckets
    std::vector<std::string> order{src.trace};
    order.insert(order.end(), src.others.begin(), src.others.end());
    TraceStep ts;
    std::string skipped;
    for (const auto& t : order) {
      std::string why;
      if (read_trace_step(t, ts, &why) && !ts.bucket_bytes.empty()) {
        auto run = from_trace_step(ts, t);
        run.profile.assumptions.push_back(fmt::format("{} trace(s) in the directory: the prediction starts from one rank's, "
                                                      "{}{}", order.size(), t,
                                                      skipped.empty() ? "" : " (not readable before it: " + skipped + ")"));
        check_figures(run, t);
        return run;
      }
      skipped += fmt::format("{}{}: {}", skipped.empty() ? "" : "; ", t, why.empty() ? "no DDP all-reduce call" : why);
    }
    throw core::Error(fmt::format("'{}': none of its {} traces gives one rank's step ({})", path, order.size(), skipped),
                      "profile a few steps with torch.profiler (CPU and CUDA activities, a schedule, prof.step() each "
                      "step), or pass one trace");
  }
  const auto report = core::read_json_file(src.report, "the one-rank run");
  auto run = run_from_report(report, src.report);
  check_figures(run, src.report);
  // A profile job's trace splits the step into its parts and times each bucket's readiness (DDP's all-reduce calls)
  // instead of DDP's one sampled iteration and the even-rate guess.
  if (const auto trace = capture_trace(report, src.report); !trace.empty()) {
    TraceStep ts;
    std::string why;
    if (read_trace_step(trace, ts, &why)) {
      apply_phase_shares(run.profile, ts, trace);
      apply_ready_times(run, ts, trace, &why);  // on failure, `why` says why
    }
    if (!why.empty())
      for (auto& a : run.profile.assumptions)
        if (a.rfind("buckets become ready at an even rate", 0) == 0) a += " (the trace could not time them: " + why + ")";
    check_figures(run, src.report);
  }
  return run;
}

}  // namespace scalescope::predict
