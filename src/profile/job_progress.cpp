#include "profile/job_progress.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace scalescope::profile {

std::string CaptureProgress::stage() const {
  if (trace_written) return "window captured";
  if (window == 0) return "running";
  return steps <= warmup ? "warm-up" : "profiled window";
}

std::optional<CaptureProgress> read_capture_progress(const std::string& job_dir, int window_steps) {
  std::ifstream in(job_dir + "/capture.rank0.json");
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  const auto j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  CaptureProgress p;
  p.window = window_steps;
  const auto number = [&](const nlohmann::json& v) { return v.is_number_integer() ? v.get<int>() : 0; };
  p.steps = number(j.value("steps", nlohmann::json()));
  p.warmup = number(j.value("warmup", nlohmann::json()));
  if (const auto w = j.find("window"); w != j.end() && w->is_object()) {
    p.window_done = number(w->value("count", nlohmann::json()));
    p.trace_written = w->value("trace", nlohmann::json()).is_string();
  }
  return p;
}

}  // namespace scalescope::profile
