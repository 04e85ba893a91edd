#include "predict/inputs.h"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "analyze/input_kind.h"
#include "analyze/nccl_profile.h"
#include "analyze/nccl_tests_parser.h"
#include "core/error.h"

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
  const auto& cfg = r.value("config", nlohmann::json::object());
  if (cfg.contains("model") && cfg["model"].is_object()) in.model = cfg["model"].value("name", "");
  p.basis = fmt::format("{}: one rank, {} step {:.2f} ms (forward {:.2f}, backward {:.2f}, optimizer {:.2f}), {} bucket(s) "
                        "of {:.1f} MB", source, in.model.empty() ? "the" : in.model, step * 1e3, fwd * 1e3, bwd * 1e3,
                        opt * 1e3, sizes.size(), total / 1e6);
  p.assumptions.push_back("buckets become ready at an even rate of gradient bytes over backward (the report has no "
                          "per-bucket ready times)");
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
  throw core::Error(fmt::format("{}: not a scalescope train or doctor report (schema '{}')", source, schema),
                    "pass the JSON that scalescope train --out or doctor --out wrote");
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

}  // namespace scalescope::predict
