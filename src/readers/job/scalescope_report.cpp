#include "readers/job/scalescope_report.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/terminal_text.h"
#include "readers/job/capture.h"

namespace scalescope::analyze {

std::pair<std::string, nlohmann::json> summarize_scalescope_json(const nlohmann::json& j, const std::string& schema) {
  nlohmann::json s = {{"schema", schema}};
  std::string line;
  auto num = [&](const nlohmann::json& v) { return v.is_number() ? fmt::format("{:.4g}", v.get<double>()) : std::string("-"); };
  if (schema == "scalescope.doctor/1") {
    // doctor writes a report only once a world size was measured (a failed sweep keeps what was measured).
    const auto is_point = [](const nlohmann::json& p) {  // each point names its world size (doctor.cpp)
      return p.is_object() && p.contains("world_size") && p["world_size"].is_number_integer();
    };
    if (!j.contains("points") || !j["points"].is_array() || j["points"].empty() ||
        !std::all_of(j["points"].begin(), j["points"].end(), is_point))
      throw core::Error("a scalescope.doctor/1 report without measured points (each an object with its world_size): "
                        "doctor never writes one",
                        "pass the file doctor wrote (--out), not a hand-edited or truncated copy");
    if (j.contains("verdict") && j["verdict"].is_object()) {
      const auto& v = j["verdict"];
      std::string reasons;
      if (v.contains("reasons") && v["reasons"].is_array())
        for (const auto& r : v["reasons"]) if (r.is_string()) reasons += (reasons.empty() ? "" : "; ") + r.get<std::string>();
      const std::string verdict = v.value("verdict", std::string("?"));
      line = "verdict: " + verdict + (reasons.empty() ? "" : " — " + reasons);
      s["verdict"] = verdict;
      s["reasons"] = reasons;
    } else {
      line = "no verdict in the report (a single world size, or the sweep failed)";
    }
    if (j.contains("failure") && j["failure"].is_string()) line += "; failed: " + j["failure"].get<std::string>();
  } else if (schema == "scalescope.train/1") {
    // train writes a report only after a whole run: with its configuration and its step times (train_command.cpp).
    if (!j.contains("config") || !j["config"].is_object() || !j.contains("step_s") || !j["step_s"].is_object())
      throw core::Error("a scalescope.train/1 report without its config and step_s objects: train never writes one",
                        "pass the file train wrote (--out), not a hand-edited or truncated copy");
    const auto& c = j["config"];
    // The headline step time is the trimmed mean (middle 3 of 5 rounds), shown in ms like every other view.
    const nlohmann::json step = j.contains("step_s") && j["step_s"].is_object() ? j["step_s"].value("trimmed_mean", nlohmann::json())
                                                                                   : nlohmann::json();
    const bool has_busbw = j.contains("all_reduce_busbw_GBps") && j["all_reduce_busbw_GBps"].is_number();
    line = fmt::format("train: world size {}, step {} ms, {} tokens/s{}",
                       c.is_object() && c.contains("world_size") ? num(c["world_size"]) : "-",
                       step.is_number() ? fmt::format("{:.2f}", 1e3 * step.get<double>()) : "-",
                       j.contains("tokens_per_s") ? num(j["tokens_per_s"]) : "-",
                       has_busbw ? ", all-reduce busbw " + num(j["all_reduce_busbw_GBps"]) + " GB/s"
                                 : std::string(" (world size 1: no communication)"));
  } else if (schema == "scalescope.comm/1") {
    std::vector<nlohmann::json> reports;
    if (j.contains("reports") && j["reports"].is_array()) for (const auto& r : j["reports"]) reports.push_back(r);
    else reports.push_back(j);
    for (const auto& r : reports) {
      const auto a = r.contains("analysis") ? r["analysis"] : nlohmann::json();
      const auto p = a.is_object() && a.contains("plateau") ? a["plateau"] : nlohmann::json();
      const auto sw = r.contains("sweep") ? r["sweep"] : nlohmann::json();
      line += (line.empty() ? "" : "\n  ") + fmt::format("comm: {} plateau busbw {} GB/s",
                                                        sw.is_object() ? sw.value("collective", std::string("?")) : "?",
                                                        p.is_object() && p.contains("busbw_gbps") ? num(p["busbw_gbps"]) : "-");
    }
    if (line.empty()) line = "comm: no sweep in the report";
  } else if (schema == "scalescope.capture/1") {
    const auto steps = diagnose::unprofiled_step_ms(j);
    std::vector<double> sorted = steps;
    std::sort(sorted.begin(), sorted.end());
    line = fmt::format("capture of rank {} (of {}): {} optimizer steps", j.contains("rank") ? num(j["rank"]) : "?",
                       j.contains("world_size") ? num(j["world_size"]) : "?", j.contains("steps") ? num(j["steps"]) : "?");
    if (!sorted.empty()) line += fmt::format(", median {:.3f} ms over {} outside the profiler window", sorted[sorted.size() / 2], sorted.size());
    if (j.contains("window") && j["window"].is_object() && j["window"].contains("trace") && j["window"]["trace"].is_string())
      line += ", trace " + j["window"]["trace"].get<std::string>();
    if (j.contains("ddp") && j["ddp"].is_object())
      line += fmt::format("; DDP: bucket cap {} MB, find_unused_parameters {}", j["ddp"].contains("bucket_cap_mb") ? num(j["ddp"]["bucket_cap_mb"]) : "-",
                          j["ddp"].value("find_unused_parameters", false) ? "True" : "False");
    if (!j.value("ended", false)) line += " (the process did not reach its exit handler: the record is its last periodic write)";
  } else if (schema == "scalescope.job/1") {
    std::string cmd;
    if (j.contains("command") && j["command"].is_array())
      for (const auto& a : j["command"]) if (a.is_string()) cmd += (cmd.empty() ? "" : " ") + a.get<std::string>();
    line = fmt::format("job: {} — {} after {} s", cmd, j.value("ended", std::string("?")), j.contains("wall_s") ? num(j["wall_s"]) : "?");
    if (j.contains("left_running") && j["left_running"].is_array() && !j["left_running"].empty()) {
      std::string who;
      for (const auto& p : j["left_running"])
        if (p.is_object()) who += fmt::format("{}pid {} ({})", who.empty() ? "" : ", ", p.value("pid", 0),
                          core::terminal_text(p.value("command", std::string("?")), 120));
      line += fmt::format("; {} process(es) it started still running when it ended: {}", j["left_running"].size(), who);
    }
    if (j.contains("failure") && j["failure"].is_object() && j["failure"].contains("first_exception"))
      line += "; it FAILED: " + core::terminal_text(j["failure"].value("first_exception", std::string()), 300);
  } else if (schema == "scalescope.topo/1") {
    std::size_t findings = j.contains("findings") && j["findings"].is_array() ? j["findings"].size() : 0;
    line = fmt::format("topo: {} finding(s)", findings);
  } else {
    line = "a scalescope report of a schema this version does not summarise";
  }
  s["summary"] = line;
  return {line, s};
}

}  // namespace scalescope::analyze
