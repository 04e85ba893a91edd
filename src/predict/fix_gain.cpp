#include "predict/fix_gain.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "predict/inputs.h"
#include "predict/step_model.h"

namespace scalescope::predict {

namespace {

double number(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : NAN;
}

// The lowest expected busbw among the pairs of the first `ranks` GPUs (topology's "expected_gbps" matrix).
std::optional<double> expected_busbw(const nlohmann::json& report, int ranks) {
  if (!report.contains("topology") || !report["topology"].contains("expected_gbps")) return std::nullopt;
  const auto& m = report["topology"]["expected_gbps"];
  if (!m.is_array()) return std::nullopt;
  double low = 0;
  const int n = std::min<int>(ranks, static_cast<int>(m.size()));
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b)
      if (m[a].is_array() && b < static_cast<int>(m[a].size()) && m[a][b].is_number()) {
        const double g = m[a][b].get<double>();
        if (g > 0 && (low == 0 || g < low)) low = g;
      }
  if (low > 0) return low;
  return std::nullopt;
}

struct Measured {
  int ranks = 0;
  double step_s = 0, busbw_gbps = 0, one_step_s = 0;
  bool overlap = true;
};

std::string describe(const std::string& what, const Measured& m, double before_s, double after_s) {
  const double after = m.step_s * after_s / before_s;  // anchored to the measured step
  const double eff_before = m.one_step_s > 0 ? m.one_step_s / m.step_s : NAN;
  const double eff_after = m.one_step_s > 0 ? m.one_step_s / after : NAN;
  std::string out = fmt::format("{}: {:.2f} → {:.2f} ms per step at {} ranks", what, m.step_s * 1e3, after * 1e3, m.ranks);
  if (!std::isnan(eff_before)) out += fmt::format(", efficiency {:.0f} → {:.0f} %", 100 * eff_before, 100 * std::min(eff_after, 1.0));
  return out + " (scalescope predict's model)";
}

}  // namespace

void attach_fix_gains(diagnose::Diagnosis& d, const nlohmann::json& report) {
  try {
    const std::string schema = report.value("schema", "");
    RunInput run;
    Measured m;
    if (schema == "scalescope.doctor/1") {
      run = run_from_report(report, "doctor");
      // The largest world size measured.
      if (!report.contains("points") || !report["points"].is_array()) return;
      const nlohmann::json* last = nullptr;
      for (const auto& pt : report["points"])
        if (pt.value("world_size", 0) >= 2 && pt.contains("result") && pt["result"].is_object()) last = &pt;
      if (!last) return;
      const auto& pt = *last;
      const auto& r = pt["result"];
      m.ranks = pt["world_size"].get<int>();
      m.busbw_gbps = number(r, "all_reduce_busbw_GBps");
      m.overlap = r.contains("config") ? r["config"].value("overlap", true) : true;
      m.one_step_s = run.profile.step_s();
      const auto& s = r.value("step_s", nlohmann::json());
      m.step_s = s.is_object() ? s.value("trimmed_mean", s.value("mean", 0.0)) : (s.is_number() ? s.get<double>() : 0.0);
    } else if (schema == "scalescope.train/1") {
      const int ws = report.contains("config") ? report["config"].value("world_size", 0) : 0;
      if (ws < 2) return;
      auto one = report;
      one["config"]["world_size"] = 1;  // its own phases stand for one rank's compute
      run = run_from_report(one, "train");
      m.ranks = ws;
      m.busbw_gbps = number(report, "all_reduce_busbw_GBps");
      m.overlap = report["config"].value("overlap", true);
      m.step_s = run.profile.step_s();
      const auto& ph = report["phases"];
      // The rank's step includes its exposed communication: one rank's step is the rest.
      const double exposed = number(ph, "exposed_comm_s");
      m.one_step_s = std::isnan(exposed) ? 0 : m.step_s - exposed;
      run.profile.other_s = std::max(0.0, run.profile.other_s - (std::isnan(exposed) ? 0 : exposed));
    } else {
      return;
    }
    if (!(m.step_s > 0) || !(m.busbw_gbps > 0) || m.ranks < 2) return;
    const auto link = LinkModel::alpha_beta(m.busbw_gbps, "the run's measured all-reduce");
    Scenario now;
    now.ranks = m.ranks;
    now.overlap = m.overlap;
    const double before = predict_step(run.profile, link, now).step_s;
    if (!(before > 0)) return;
    const auto expected = expected_busbw(report, m.ranks);
    auto gain = [&](diagnose::Assessment& a) {
      const std::string& c = a.cause;
      if (c == "no-overlap" && !m.overlap) {
        Scenario s = now;
        s.overlap = true;
        a.predicted = describe("bucketed overlap on", m, before, predict_step(run.profile, link, s).step_s);
      } else if (c == "bandwidth-bound-gradients" && run.profile.grad_element_bytes >= 4) {
        Scenario s = now;
        s.grad_element_bytes = 2;
        a.predicted = describe("bf16 gradients", m, before, predict_step(run.profile, link, s).step_s);
      } else if (c == "comm-bound-small-model") {
        Scenario s = now;
        s.batch_factor = 2;
        const auto p2 = predict_step(run.profile, link, s);
        Scenario one = s;
        one.ranks = 1;
        const double one2 = predict_step(run.profile, link, one).step_s;
        a.predicted = fmt::format("per-rank batch x2: efficiency {:.0f} → {:.0f} % at {} ranks (scalescope predict's model)",
                                  100 * (m.one_step_s > 0 ? m.one_step_s / m.step_s : before), 100 * one2 / p2.step_s, m.ranks);
      } else if ((c == "nccl-env-override" || c == "pcie-host-bridge-path" || c == "cross-socket-path" ||
                  c == "p2p-blocked-acs-iommu" || c == "pcie-link-degraded" || c == "nvlink-degraded") &&
                 expected && *expected > 1.2 * m.busbw_gbps) {
        const auto fixed = LinkModel::alpha_beta(*expected, "the path's expected busbw");
        a.predicted = describe(fmt::format("the path at its expected {:.0f} GB/s instead of the measured {:.1f}", *expected, m.busbw_gbps),
                               m, before, predict_step(run.profile, fixed, now).step_s);
      }
    };
    if (d.primary) gain(*d.primary);
    for (auto& c : d.contributing) gain(c);
  } catch (const std::exception&) {
    // A report without what the model needs: the diagnosis stays as it is.
  }
}

}  // namespace scalescope::predict
