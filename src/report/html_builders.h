#pragma once
// What each command puts on its HTML page (report/html_report.h), from the results it already has: a doctor
// report, collective sweeps, a topology, profiler traces, predictions. Pure C++ over JSON and the analyses.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/sweep.h"
#include "analysis/trace_analysis.h"
#include "report/html_report.h"

namespace scalescope::report {

/// A scalescope.doctor/1 report as written (with "topology" and "diagnosis" when present): the speedup against
/// world size (measured, ideal, and predicted by src/predict from the one-rank point and the largest world size's
/// measured busbw), one waterfall per world size ≥ 2 (ideal step, exposed communication, compute, data wait,
/// other, measured), the topology matrix, the diagnosis, and provenance lines (backend, model, protocol). Missing
/// parts are left out. Throws nothing.
void add_doctor(HtmlPage& page, const nlohmann::json& doctor);

/// One sweep's busbw against size (out-of-place; in-place too when present), with `ceiling_gbps` as a flat line
/// when given. Throws nothing.
void add_sweep(HtmlPage& page, const analyze::Sweep& sweep, std::optional<double> ceiling_gbps, const std::string& ceiling_label);

/// The link-class matrix of a scalescope.topo/1 "topology" object (as topo::Topology's to_json writes it).
void add_topology(HtmlPage& page, const nlohmann::json& topology);

/// One step of each rank from its profiler trace: the step of median length among the analysis's steps of that
/// rank, its GPU kernels (NCCL's as communication), copies and memsets; a CPU rank's main-thread operators and its
/// collectives. Traces that cannot be read again are noted, not fatal. Throws nothing.
void add_lanes(HtmlPage& page, const analyze::TraceAnalysis& analysis);

/// A scalescope.predict/1 document: predicted speedup and efficiency against rank count, beside the ideal and the
/// measured points it carries. Throws nothing.
void add_predictions(HtmlPage& page, const nlohmann::json& predict);

}  // namespace scalescope::report
