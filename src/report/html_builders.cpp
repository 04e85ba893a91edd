#include "report/html_builders.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "readers/trace/trace_reader.h"
#include "predict/inputs.h"
#include "predict/step_model.h"
#include "report/json_fields.h"

namespace scalescope::report {

void add_topology(HtmlPage& page, const nlohmann::json& t) {
  try {
    if (!t.is_object() || !t.contains("matrix") || !t.contains("devices")) return;
    HtmlMatrix m;
    for (const auto& d : t["devices"]) m.labels.push_back(d.value("label", "?"));
    for (const auto& row : t["matrix"]) {
      std::vector<std::string> cells;
      for (const auto& c : row) cells.push_back(c.is_string() ? c.get<std::string>() : "");
      m.cells.push_back(std::move(cells));
    }
    if (!m.labels.empty()) page.topology = std::move(m);
  } catch (const std::exception&) {
  }
}

void add_doctor(HtmlPage& page, const nlohmann::json& j) {
  try {
    if (j.contains("diagnosis")) page.diagnosis = j["diagnosis"];
    if (j.contains("topology") && j["topology"].is_object()) add_topology(page, j["topology"].value("topology", nlohmann::json()));
    HtmlSeries measured{"measured", {}, "measured"}, ideal{"ideal (N×)", {}, "ideal"}, predicted{"predicted", {}, "predicted"};
    HtmlSeries eff{"measured", {}, "measured"};
    int max_n = 0;
    for (const auto& pt : j.value("points", nlohmann::json::array())) {
      const int n = pt.value("world_size", 0);
      if (n < 1 || !pt.contains("metrics")) continue;
      const double s = json_number(pt["metrics"], "speedup"), e = json_number(pt["metrics"], "efficiency");
      if (!std::isnan(s)) measured.points.emplace_back(n, s);
      if (!std::isnan(e)) eff.points.emplace_back(n, 100 * e);
      max_n = std::max(max_n, n);
      if (pt.contains("scaling_loss") && n >= 2) {
        const auto& l = pt["scaling_loss"];
        HtmlWaterfall w;
        w.title = fmt::format("N = {}: measured step against the ideal (ms per step)", n);
        w.start_label = "ideal";
        w.start = json_number(l, "ideal_s", 0) * 1e3;
        w.parts = {{"exposed comm", json_number(l, "exposed_comm_s", 0) * 1e3}, {"compute", json_number(l, "compute_s", 0) * 1e3},
                   {"data wait", json_number(l, "data_wait_s", 0) * 1e3}, {"other", json_number(l, "other_s", 0) * 1e3}};
        w.end_label = "measured";
        page.waterfalls.push_back(std::move(w));
      }
    }
    if (!measured.points.empty()) {
      // Predicted: the model from the one-rank point and the largest world size's measured busbw (src/predict).
      try {
        const auto run = predict::run_from_report(j, "doctor");
        double busbw = 0;
        for (const auto& pt : j["points"])
          if (pt.value("world_size", 0) >= 2 && pt.contains("result")) busbw = json_number(pt["result"], "all_reduce_busbw_GBps", 0);
        if (busbw > 0) {
          const auto link = predict::LinkModel::alpha_beta(busbw, "the run's measured all-reduce");
          for (int n = 1; n <= std::max(8, 2 * max_n); n *= 2) {
            predict::Scenario sc;
            sc.ranks = n;
            predicted.points.emplace_back(n, n == 1 ? 1.0 : predict::predict_step(run.profile, link, sc).speedup);
          }
        }
      } catch (const std::exception&) {
      }
      for (const auto& [n, s] : measured.points) ideal.points.emplace_back(n, n);
      for (const auto& [n, s] : predicted.points)
        if (n > max_n) ideal.points.emplace_back(n, n);
      std::sort(ideal.points.begin(), ideal.points.end());
      const bool wide = ideal.points.back().first / ideal.points.front().first >= 8;  // 1…8 ranks and more: a log axis
      HtmlChart c{"Speedup against one rank", "world size (ranks)", "speedup", wide, {ideal, measured}};
      if (!predicted.points.empty()) c.series.push_back(predicted);
      page.scaling.push_back(std::move(c));
      page.scaling.push_back(HtmlChart{"Scaling efficiency", "world size (ranks)", "efficiency %", wide, {eff}});
    }
    page.provenance.emplace_back("backend", fmt::format("{}, {} device(s)", j.value("backend", "?"), j.value("devices", 0)));
    for (const auto& pt : j.value("points", nlohmann::json::array()))
      if (pt.value("world_size", 0) == 1 && pt.contains("result")) {
        const auto& r = pt["result"];
        if (r.contains("device")) page.provenance.emplace_back("device", r.value("device", ""));
        if (r.contains("config")) {
          const auto& c = r["config"];
          if (c.contains("model")) page.provenance.emplace_back("model", c["model"].value("name", ""));
          if (c.contains("protocol"))
            page.provenance.emplace_back("protocol", fmt::format("{} warm-up round(s), {} timed round(s) of {} step(s); headline: mean of the middle rounds",
                                                                 c["protocol"].value("warmup_rounds", 0), c["protocol"].value("timed_rounds", 0),
                                                                 c["protocol"].value("steps_per_round", 0)));
        }
        if (r.contains("data")) page.provenance.emplace_back("data", r.value("data", ""));
      }
  } catch (const std::exception&) {
  }
}

void add_sweep(HtmlPage& page, const analyze::Sweep& sweep, std::optional<double> ceiling, const std::string& ceiling_label) {
  HtmlSeries oop{"out-of-place", {}, "measured"}, ip{"in-place", {}, "measured"};
  for (const auto& r : sweep.rows) {
    if (r.size_bytes == 0) continue;
    if (r.out_of_place.busbw_gbps) oop.points.emplace_back(static_cast<double>(r.size_bytes), *r.out_of_place.busbw_gbps);
    if (r.in_place.busbw_gbps) ip.points.emplace_back(static_cast<double>(r.size_bytes), *r.in_place.busbw_gbps);
  }
  if (oop.points.empty() && ip.points.empty()) return;
  HtmlChart c;
  c.title = fmt::format("{} — {}{}", std::string(comm::to_string(sweep.collective)), sweep.source,
                        sweep.ranks ? fmt::format(", {} ranks", *sweep.ranks) : "");
  c.x_label = "message size (bytes)";
  c.y_label = "busbw GB/s";
  c.log_x = true;
  if (!oop.points.empty()) c.series.push_back(oop);
  if (!ip.points.empty()) c.series.push_back(ip);
  if (ceiling && *ceiling > 0) {
    double lo = 1e300, hi = 0;
    for (const auto& s : c.series)
      for (auto [x, y] : s.points) lo = std::min(lo, x), hi = std::max(hi, x);
    c.series.push_back(HtmlSeries{ceiling_label.empty() ? "expected ceiling" : ceiling_label, {{lo, *ceiling}, {hi, *ceiling}}, "ceiling"});
  }
  page.busbw.push_back(std::move(c));
}

void add_lanes(HtmlPage& page, const analyze::TraceAnalysis& analysis) {
  std::vector<std::string> notes;
  for (std::size_t i = 0; i < analysis.ranks.size(); ++i) {
    const auto& ra = analysis.ranks[i];
    if (ra.steps.empty()) continue;
    // The step of median length.
    std::vector<const analyze::StepMetrics*> steps;
    for (const auto& s : ra.steps) steps.push_back(&s);
    std::sort(steps.begin(), steps.end(), [](auto* a, auto* b) { return a->step_ms < b->step_ms; });
    const auto& st = *steps[steps.size() / 2];
    try {
      const auto t = analyze::read_trace_file(ra.source);
      const std::int64_t a = static_cast<std::int64_t>(st.start_ms * 1e6), b = a + static_cast<std::int64_t>(st.step_ms * 1e6);
      HtmlLane lane;
      lane.name = fmt::format("rank {}", ra.rank);
      lane.step_ms = st.step_ms;
      const auto add = [&](std::int64_t s, std::int64_t e, const char* kind) {
        if (e <= a || s >= b) return;
        lane.segments.push_back({(std::max(s, a) - a) * 1e-6, (std::min(e, b) - a) * 1e-6, kind});
      };
      bool gpu = false;
      for (const auto& e : t.events) {
        if (e.kind == analyze::EventKind::kernel) {
          gpu = true;
          add(e.ts_ns, e.ts_ns + e.dur_ns, analyze::is_nccl_kernel_name(t.name_of(e)) ? "communication" : "compute");
        } else if (e.kind == analyze::EventKind::memcpy || e.kind == analyze::EventKind::memset) {
          gpu = true;
          add(e.ts_ns, e.ts_ns + e.dur_ns, "copy");
        }
      }
      if (!gpu) {  // a CPU rank: its busiest thread's operators, and its collectives
        std::size_t best = 0;
        const std::vector<std::pair<std::int64_t, std::int64_t>>* work = nullptr;
        for (const auto& [tid, iv] : t.cpu_work)
          if (iv.size() > best) best = iv.size(), work = &iv;
        if (work)
          for (auto [s, e] : *work) add(s, e, "cpu");
        for (const auto& e : t.events)
          if (e.collective >= 0 && e.dur_ns > 0) add(e.ts_ns, e.ts_ns + e.dur_ns, "communication");
      }
      // Keep the page small: at most 4000 intervals per lane (the shortest go first).
      if (lane.segments.size() > 4000) {
        std::sort(lane.segments.begin(), lane.segments.end(),
                  [](const auto& x, const auto& y) { return x.end_ms - x.start_ms > y.end_ms - y.start_ms; });
        lane.segments.resize(4000);
        notes.push_back(lane.name + ": only its 4000 longest intervals are drawn");
      }
      page.lanes.push_back(std::move(lane));
    } catch (const std::exception& e) {
      notes.push_back(fmt::format("{}: not drawn ({})", ra.source, e.what()));
    }
  }
  std::string note = "each rank's step of median length, on its own clock from the step's start";
  for (const auto& n : notes) note += "; " + n;
  page.lanes_note = note;
}

void add_predictions(HtmlPage& page, const nlohmann::json& p) {
  try {
    HtmlSeries pred{"predicted", {}, "predicted"}, ideal{"ideal (N×)", {}, "ideal"}, meas{"measured", {}, "measured"};
    HtmlSeries eff{"predicted", {}, "predicted"}, meas_eff{"measured", {}, "measured"};
    for (const auto& x : p.value("predictions", nlohmann::json::array())) {
      const int n = x.value("ranks", 0);
      if (n < 1) continue;
      pred.points.emplace_back(n, json_number(x, "speedup", 0));
      eff.points.emplace_back(n, 100 * json_number(x, "efficiency", 0));
      ideal.points.emplace_back(n, n);
      if (x.contains("measured_step_ms") && x.contains("step_ms") && x["measured_step_ms"].get<double>() > 0)
      {
        meas.points.emplace_back(n, json_number(x, "speedup", 0) * json_number(x, "step_ms", 0) / x["measured_step_ms"].get<double>());
        meas_eff.points.emplace_back(n, 100 * json_number(x, "efficiency", 0) * json_number(x, "step_ms", 0) / x["measured_step_ms"].get<double>());
      }
    }
    if (pred.points.empty()) return;
    const bool wide = pred.points.back().first / pred.points.front().first >= 8;  // 2…16 ranks and more: a log axis
    HtmlChart c{"Speedup against one rank", "ranks", "speedup", wide, {ideal, pred}};
    if (!meas.points.empty()) c.series.push_back(meas);
    page.scaling.push_back(std::move(c));
    HtmlChart e{"Scaling efficiency", "ranks", "efficiency %", wide, {eff}};
    if (!meas_eff.points.empty()) e.series.push_back(meas_eff);
    page.scaling.push_back(std::move(e));
    // Each prediction with its band (predict_band: the link's spread, the contention's range, the measured step's
    // spread and the model's error).
    const auto line = [](const nlohmann::json& x) {
      std::string band, eff_band;
      if (x.contains("step_ms_band") && x["step_ms_band"].is_array() && x["step_ms_band"].size() == 2)
        band = fmt::format(" ({:.2f}–{:.2f})", x["step_ms_band"][0].get<double>(), x["step_ms_band"][1].get<double>());
      if (x.contains("efficiency_band") && x["efficiency_band"].is_array() && x["efficiency_band"].size() == 2)
        eff_band = fmt::format(" ({:.0f}–{:.0f} %)", 100 * x["efficiency_band"][0].get<double>(), 100 * x["efficiency_band"][1].get<double>());
      return fmt::format("{:<16} step {:8.2f} ms{:<20} speedup {:6.2f}  efficiency {:5.1f} %{:<11} exposed {:6.2f} ms  {}\n",
                         x.value("label", ""), json_number(x, "step_ms", 0), band, json_number(x, "speedup", 0), 100 * json_number(x, "efficiency", 0),
                         eff_band, json_number(x, "exposed_comm_ms", 0), x.value("verdict", ""));
    };
    std::string predicted;
    for (const auto& x : p.value("predictions", nlohmann::json::array())) predicted += line(x);
    if (!predicted.empty()) page.tables.emplace_back("Predicted step, with its band", predicted);
    std::string text;
    for (const auto& x : p.value("what_if", nlohmann::json::array())) text += line(x);
    if (!text.empty()) page.tables.emplace_back("What if", text);
    page.provenance.emplace_back("input", p.value("input", ""));
    page.provenance.emplace_back("link", p.value("link", ""));
    for (const auto& a : p.value("assumptions", nlohmann::json::array())) page.provenance.emplace_back("assumed", a.get<std::string>());
  } catch (const std::exception&) {
  }
}

}  // namespace scalescope::report
