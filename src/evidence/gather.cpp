#include "evidence/gather.h"

#include "evidence/run.h"

namespace scalescope::diagnose {

Evidence gather_evidence(const std::vector<std::string>& paths, const std::string& baseline,
                         const analyze::TraceOptions& trace_options) {
  evidence::RunOptions options;
  options.baseline = baseline.empty() ? trace_options.baseline_path.value_or("") : baseline;
  options.strong = trace_options.mode == core::ScalingMode::strong;
  options.step_windows = trace_options.step_windows;
  options.trace_read = trace_options.read;
  auto a = evidence::run_files(paths, options);
  Evidence ev;
  for (auto& r : a.files) {
    FileEvidence fe;
    fe.path = r.path;
    for (auto k : r.detection.kinds) fe.kinds.push_back(std::string(analyze::to_string(k)));
    fe.facts = r.facts.size();
    fe.notes = std::move(r.notes);
    if (!r.errors.empty()) fe.error = r.errors.front().cause;
    ev.files.push_back(std::move(fe));
  }
  ev.facts = std::move(a.facts);
  return ev;
}

Diagnosis diagnose_files(const std::vector<std::string>& paths) { return diagnose(gather_evidence(paths).facts); }

}  // namespace scalescope::diagnose
