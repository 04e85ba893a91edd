#include "evidence/gather.h"

#include <nlohmann/json.hpp>

#include "readers/job/launch_env.h"
#include "readers/nccl/nccl_log.h"
#include "readers/nccl/nccl_tests_parser.h"
#include "readers/nccl/nccl_tests_preamble.h"
#include "readers/job/python_profile.h"
#include "readers/code/python_code.h"
#include "readers/prose/report_text.h"
#include "analysis/sweep_analysis.h"
#include "readers/system/system_tools.h"
#include "readers/tables/tables.h"
#include "readers/job/training_log.h"
#include "readers/job/watchdog.h"
#include "core/error.h"
#include "evidence/record_facts.h"
#include "topo/smi_topo_parser.h"

namespace scalescope::diagnose {
namespace {

void take(Reading& into, Reading&& part) {
  into.facts.append(std::move(part.facts));
  for (auto& n : part.notes) into.notes.push_back(std::move(n));
}

}  // namespace

Reading facts_of_text(const analyze::InputFile& input) {
  using analyze::InputKind;
  Reading r;
  const auto& text = input.text;
  const auto& path = input.path;
  for (auto kind : input.detection.kinds) {
    try {
      switch (kind) {
        case InputKind::kineto_trace: break;  // read with the other traces
        case InputKind::nccl_log: take(r, facts_from_nccl_log(analyze::parse_nccl_log(text, path))); break;
        case InputKind::watchdog: {
          const auto log = analyze::parse_watchdog(text, path);
          take(r, facts_from_watchdog(std::span(&log, 1), analyze::analyze_watchdog(std::span(&log, 1))));
          break;
        }
        case InputKind::nccl_tests: {
          for (const auto& sweep : analyze::parse_nccl_tests_tables(text, path))
            take(r, facts_from_sweep(sweep, analyze::analyze_sweep(sweep), path));
          take(r, analyze::read_nccl_tests_preamble(text, path, true));
          break;
        }
        case InputKind::nccl_tests_header: take(r, analyze::read_nccl_tests_preamble(text, path, false)); break;
        case InputKind::smi_topo: {
          auto reading = topo::parse_smi_topo(text, "file " + path);
          take(r, facts_from_topology(reading.topology, path));
          for (auto& w : reading.warnings) r.notes.push_back(std::move(w));
          break;
        }
        case InputKind::scalescope_json: take(r, facts_from_scalescope_json(nlohmann::json::parse(text), path)); break;
        case InputKind::training_log: take(r, analyze::read_training_log(text, path)); break;
        case InputKind::launch_command: take(r, analyze::read_commands(text, path)); break;
        case InputKind::environment: take(r, analyze::read_environment(text, path)); break;
        case InputKind::measurement_table: take(r, analyze::read_measurement_tables(text, path)); break;
        case InputKind::python_profile: take(r, analyze::read_python_profile(text, path)); break;
        case InputKind::system_tools: take(r, analyze::read_system_tools(text, path)); break;
        case InputKind::python_code: take(r, analyze::read_python_code(text, path)); break;
        case InputKind::report_text: take(r, analyze::read_report_text(text, path)); break;
        case InputKind::nccl_profile: take(r, facts_from_nccl_profile(analyze::parse_nccl_profile(text, path), path)); break;
      }
    } catch (const std::exception& e) {
      r.notes.push_back(std::string(analyze::to_string(kind)) + ": " + e.what());
    }
  }
  return r;
}

Evidence gather_evidence(const std::vector<std::string>& paths, const std::string& baseline,
                         const analyze::TraceOptions& trace_options) {
  Evidence ev;
  std::vector<std::string> traces;
  std::vector<analyze::WatchdogLog> watchdogs;
  for (const auto& path : paths) {
    FileEvidence fe;
    fe.path = path;
    analyze::InputFile input;
    try {
      input = analyze::read_input_file(path);
    } catch (const core::Error& e) {
      fe.error = e.what();
      ev.files.push_back(std::move(fe));
      continue;
    } catch (const std::bad_alloc&) {
      fe.error = "out of memory while reading it";
      ev.files.push_back(std::move(fe));
      continue;
    }
    for (auto k : input.detection.kinds) fe.kinds.push_back(std::string(analyze::to_string(k)));
    if (input.detection.kinds.empty()) {
      fe.error = input.detection.reason;
      ev.files.push_back(std::move(fe));
      continue;
    }
    if (input.detection.has(analyze::InputKind::kineto_trace)) traces.push_back(path);
    if (input.detection.has(analyze::InputKind::watchdog)) watchdogs.push_back(analyze::parse_watchdog(input.text, path));
    auto r = facts_of_text(input);
    fe.facts = r.facts.size();
    fe.notes = std::move(r.notes);
    ev.facts.append(std::move(r.facts));
    ev.files.push_back(std::move(fe));
  }
  if (watchdogs.size() > 1) {
    // Across files: only the summary (each file's timeouts are in already).
    auto r = facts_from_watchdog(watchdogs, analyze::analyze_watchdog(watchdogs));
    for (const auto& f : r.facts.all())
      if (std::holds_alternative<WatchdogSummary>(f.value)) ev.facts.add(f);
  }
  if (!traces.empty()) {
    auto options = trace_options;
    if (!baseline.empty()) options.baseline_path = baseline;
    const auto a = analyze::analyze_trace_files(traces, options);
    auto r = facts_from_traces(a);
    for (auto& fe : ev.files)
      for (const auto& e : a.errors)
        if (e.path == fe.path && fe.facts == 0) fe.error = e.cause;
    ev.facts.append(std::move(r.facts));
  }
  return ev;
}

Diagnosis diagnose_files(const std::vector<std::string>& paths) { return diagnose(gather_evidence(paths).facts); }

}  // namespace scalescope::diagnose
