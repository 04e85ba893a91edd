#include "report/answer.h"

#include <cmath>

#include <fmt/format.h>

#include "report/json_fields.h"

namespace scalescope::report {

namespace {

using json = nlohmann::json;

/// j[key] as a finite number, or NaN.
double num(const json& j, const char* key) {
  const double v = json_number(j, key);
  return std::isfinite(v) ? v : std::nan("");
}

/// "s" with a full stop at its end (none added after one of .!?).
std::string sentence(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.pop_back();
  if (!s.empty() && s.back() != '.' && s.back() != '!' && s.back() != '?') s += '.';
  return s;
}

std::string pct(double share) { return fmt::format("{:.1f} %", 100 * share); }

/// The verdict object ({"verdict", "reasons"}) or string of a document, as "healthy (reason; reason)".
std::string verdict_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_object()) return "";
  std::string out = json_string(v, "verdict");
  if (out.empty()) return "";
  std::string reasons;
  if (v.contains("reasons") && v["reasons"].is_array())
    for (const auto& r : v["reasons"])
      if (r.is_string()) reasons += (reasons.empty() ? "" : "; ") + r.get<std::string>();
  return reasons.empty() ? out : out + " (" + reasons + ")";
}

/// The headline of a diagnosis's primary cause: "host-sync: the host waits … — 754 µs … per step (6.3 %)".
void from_primary(Answer& a, const json& primary) {
  a.kind = "cause";
  const std::string cause = json_string(primary, "cause");
  a.headline = sentence(fmt::format("the primary cause is {}: {}", cause, json_string(primary, "summary")));
  if (primary.contains("cost") && primary["cost"].is_object()) a.cost = json_string(primary["cost"], "text");
  a.fix = json_string(primary, "fix");
  if (cause == "no-defect") a.headline = sentence("no defect: " + json_string(primary, "summary"));
}

/// The failure object of a diagnosis (diagnose::Diagnosis::failure as JSON).
void from_failure(Answer& a, const json& f) {
  a.kind = "failure";
  const bool launcher = f.contains("launcher_crash") && f["launcher_crash"].is_boolean() && f["launcher_crash"].get<bool>();
  const std::string who = f.contains("rank") && f["rank"].is_number_integer() ? fmt::format("rank {}: ", f["rank"].get<int>()) : "";
  const std::string what = json_string(f, "exception").empty() ? "no exception in its output" : json_string(f, "exception");
  a.headline = sentence(fmt::format("the job FAILED ({}): {}{}", json_string(f, "ended"),
                                    launcher ? "the launcher itself failed before starting any worker: " : who, what));
  a.cost = "the run measured nothing: its scaling cannot be judged until it runs";
  a.fix = json_string(f, "fix");
}

}  // namespace

Answer answer_of_analysis(const json& analysis, const std::string& command) {
  Answer a;
  a.command = command;
  const json diagnosis = analysis.is_object() && analysis.contains("diagnosis") ? analysis["diagnosis"] : json();
  const json trace = analysis.is_object() && analysis.contains("combined") && analysis["combined"].is_object() &&
                             analysis["combined"].contains("trace")
                         ? analysis["combined"]["trace"]
                         : json();
  if (diagnosis.is_object() && diagnosis.contains("failure") && diagnosis["failure"].is_object()) {
    from_failure(a, diagnosis["failure"]);
  } else if (diagnosis.is_object() && diagnosis.contains("primary") && diagnosis["primary"].is_object()) {
    from_primary(a, diagnosis["primary"]);
  } else if (trace.is_object() && !verdict_text(trace.value("verdict", json())).empty()) {
    a.kind = "verdict";
    a.headline = sentence("the seed's verdict: " + verdict_text(trace["verdict"]) + "; no single cause stands out");
  } else {
    a.kind = "undecided";
    a.headline = "no cause of slow scaling stands out in these inputs.";
    if (diagnosis.is_object() && diagnosis.contains("missing_evidence") && diagnosis["missing_evidence"].is_array() &&
        !diagnosis["missing_evidence"].empty()) {
      const auto& m = diagnosis["missing_evidence"][0];
      a.fix = fmt::format("{}: {}", json_string(m, "what"), json_string(m, "command"));
    }
  }
  // Figures: each rank's mean step from the traces, and where its time went.
  if (trace.is_object() && trace.contains("ranks") && trace["ranks"].is_array()) {
    for (const auto& r : trace["ranks"]) {
      if (!r.is_object() || !r.contains("mean") || !r["mean"].is_object()) continue;
      const auto& m = r["mean"];
      const double step = num(m, "step_ms");
      if (std::isnan(step) || step <= 0) continue;
      const bool cpu = r.contains("cpu_ranks") && r["cpu_ranks"].is_boolean() && r["cpu_ranks"].get<bool>();
      const int rank = r.contains("rank") && r["rank"].is_number_integer() ? r["rank"].get<int>() : -1;
      std::string v = fmt::format("{:.2f} ms", step);
      const double exposed = num(m, "exposed_comm_ms"), idle = num(m, "gpu_idle_ms");
      if (!std::isnan(exposed)) v += fmt::format(", exposed communication {:.2f} ms ({})", exposed, pct(exposed / step));
      if (!cpu && !std::isnan(idle)) v += fmt::format(", GPU idle {:.2f} ms ({})", idle, pct(idle / step));
      a.figures.push_back({rank >= 0 ? fmt::format("step, rank {}", rank) : "step", v});
      if (a.figures.size() >= 8) break;
    }
    if (trace.contains("metrics") && trace["metrics"].is_object()) {
      const auto& m = trace["metrics"];
      if (!std::isnan(num(m, "speedup"))) a.figures.push_back({"speedup", fmt::format("{:.2f}", num(m, "speedup"))});
      if (!std::isnan(num(m, "efficiency"))) a.figures.push_back({"efficiency", pct(num(m, "efficiency"))});
      if (!std::isnan(num(m, "comm_ratio"))) a.figures.push_back({"comm ratio", pct(num(m, "comm_ratio"))});
    }
  }
  if (diagnosis.is_object() && !json_string(diagnosis, "ceiling").empty()) a.figures.push_back({"ceiling", json_string(diagnosis, "ceiling")});
  return a;
}

Answer answer_of_doctor(const json& doctor) {
  Answer a;
  a.command = "doctor";
  const json verdict = doctor.is_object() ? doctor.value("verdict", json()) : json();
  const std::string v = verdict_text(verdict);
  a.kind = v.empty() ? "undecided" : "verdict";
  a.headline = v.empty() ? "doctor measured no scaling to judge (one world size only)." : sentence("verdict: " + v);
  const json diagnosis = doctor.is_object() ? doctor.value("diagnosis", json()) : json();
  if (diagnosis.is_object() && diagnosis.contains("primary") && diagnosis["primary"].is_object()) {
    const auto& p = diagnosis["primary"];
    a.headline = sentence(a.headline.substr(0, a.headline.size() - 1) + "; " +
                          (json_string(p, "cause") == "no-defect" ? std::string("no defect: ") + json_string(p, "summary")
                                                          : "the primary cause is " + json_string(p, "cause") + ": " + json_string(p, "summary")));
    if (p.contains("cost") && p["cost"].is_object()) a.cost = json_string(p["cost"], "text");
    a.fix = json_string(p, "fix");
  }
  if (doctor.is_object() && doctor.contains("points") && doctor["points"].is_array())
    for (const auto& pt : doctor["points"]) {
      if (!pt.is_object()) continue;
      const int n = pt.contains("world_size") && pt["world_size"].is_number_integer() ? pt["world_size"].get<int>() : 0;
      double step = std::nan("");
      if (pt.contains("result") && pt["result"].is_object() && pt["result"].contains("step_s") && pt["result"]["step_s"].is_object())
        step = num(pt["result"]["step_s"], "trimmed_mean") * 1e3;
      std::string val = std::isnan(step) ? std::string() : fmt::format("step {:.2f} ms", step);
      if (n >= 2 && pt.contains("metrics") && pt["metrics"].is_object()) {
        const auto& m = pt["metrics"];
        if (!std::isnan(num(m, "speedup")))
          val += fmt::format("{}speedup {:.2f}, efficiency {}", val.empty() ? "" : ", ", num(m, "speedup"), pct(num(m, "efficiency")));
        if (!std::isnan(num(m, "comm_ratio"))) val += fmt::format(", comm ratio {}", pct(num(m, "comm_ratio")));
      }
      if (!val.empty()) a.figures.push_back({fmt::format("world size {}", n), val});
    }
  return a;
}

Answer answer_of_prediction(const json& predict) {
  Answer a;
  a.command = "predict";
  a.kind = "prediction";
  const json* last = nullptr;
  if (predict.is_object() && predict.contains("predictions") && predict["predictions"].is_array())
    for (const auto& p : predict["predictions"]) {
      if (!p.is_object()) continue;
      last = &p;
      std::string val = fmt::format("step {:.2f} ms", num(p, "step_ms"));
      if (p.contains("step_ms_band") && p["step_ms_band"].is_array() && p["step_ms_band"].size() == 2)
        val += fmt::format(" ({:.2f}–{:.2f})", p["step_ms_band"][0].get<double>(), p["step_ms_band"][1].get<double>());
      val += fmt::format(", efficiency {}", pct(num(p, "efficiency")));
      if (p.contains("efficiency_band") && p["efficiency_band"].is_array() && p["efficiency_band"].size() == 2)
        val += fmt::format(" ({:.0f}–{:.0f} %)", 100 * p["efficiency_band"][0].get<double>(), 100 * p["efficiency_band"][1].get<double>());
      if (!json_string(p, "verdict").empty()) val += ", " + json_string(p, "verdict");
      a.figures.push_back({json_string(p, "label").empty() ? fmt::format("{} ranks", num(p, "ranks")) : json_string(p, "label"), val});
    }
  if (!last) {
    a.kind = "undecided";
    a.headline = "nothing was predicted.";
    return a;
  }
  const auto& p = *last;
  std::string band;
  if (p.contains("efficiency_band") && p["efficiency_band"].is_array() && p["efficiency_band"].size() == 2)
    band = fmt::format(" (band {:.0f}–{:.0f} %)", 100 * p["efficiency_band"][0].get<double>(), 100 * p["efficiency_band"][1].get<double>());
  std::string link = json_string(predict, "link");  // "NV18 between H200 SXM: 18 links × …": its name, before the colon
  if (const auto colon = link.find(':'); colon != std::string::npos) link.resize(colon);
  if (link.size() > 60) link.clear();
  a.headline = sentence(fmt::format("on {} ranks{} this job should run at {} scaling efficiency{}, a step of {:.2f} ms, "
                                    "comm ratio {}: {}",
                                    num(p, "ranks"), link.empty() ? "" : " over " + link, pct(num(p, "efficiency")), band,
                                    num(p, "step_ms"), pct(num(p, "comm_ratio")), json_string(p, "verdict").empty() ? "no verdict" : json_string(p, "verdict")));
  if (!std::isnan(num(p, "exposed_comm_ms")))
    a.cost = fmt::format("{:.2f} ms of communication per step not hidden behind backward", num(p, "exposed_comm_ms"));
  return a;
}

std::string render_answer(const Answer& a) {
  std::string o = "answer: " + a.headline + "\n";
  if (!a.cost.empty()) o += "  cost: " + a.cost + "\n";
  if (!a.fix.empty()) o += "  fix: " + a.fix + "\n";
  for (const auto& f : a.figures) o += "  " + f.label + ": " + f.value + "\n";
  return o + "\n";
}

json answer_json(const Answer& a) {
  json figures = json::array();
  for (const auto& f : a.figures) figures.push_back({{"label", f.label}, {"value", f.value}});
  return {{"kind", a.kind}, {"headline", a.headline}, {"cost", a.cost}, {"fix", a.fix}, {"figures", figures}};
}

}  // namespace scalescope::report
