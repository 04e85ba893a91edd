// The trace analysis as JSON (trace_analysis.h's to_json overloads): steps, waterfalls, ranks, the interference
// of communication with compute and its sentence, kernel deltas, the whole analysis; text from outside made valid
// UTF-8 first.

#include "analysis/trace_analysis.h"

#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "analysis/trace_analysis_internal.h"
#include "core/terminal_text.h"

namespace scalescope::analyze {

using trace_analysis_internal::pct;

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
