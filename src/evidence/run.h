#pragma once
// The library entry point of the explaining side: the files of one call → their records, their facts and the
// diagnosis. `scalescope analyze` and `scalescope profile` (over its job directory) call run() with files,
// `scalescope doctor` with what it measured (Measured: its report, the live topology, its probes' facts); the reports
// (report/analysis_report.h) render what it returns; the commands only parse flags, check outputs, call and print.
//
// Each file is read once and each of its kinds parsed once: the record a reader parses gives both the facts the
// diagnosis reads (evidence/record_facts.h) and what the report shows of the file.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/nccl_log_analysis.h"
#include "analysis/sweep_analysis.h"
#include "analysis/trace_analysis.h"
#include "diagnose/engine.h"
#include "facts/facts.h"
#include "readers/input_kind.h"
#include "readers/input_list.h"
#include "readers/job/watchdog.h"
#include "readers/nccl/nccl_log.h"
#include "readers/nccl/nccl_profile.h"
#include "topo/analysis.h"

namespace scalescope::evidence {

/// What one call of run() is asked beyond its files.
struct RunOptions {
  analyze::InputLimits limits;          ///< --max-input-bytes, and the text excerpt of a job's own log
  analyze::TraceReadOptions trace_read; ///< --max-trace-bytes, --max-trace-events
  std::string baseline;                 ///< a 1-rank profiler trace of the same job ("" when none)
  bool strong = false;                  ///< the traces are strong scaling (fixed global batch)
  analyze::StepWindows step_windows = analyze::StepWindows::gpu_launches;
  bool keep_timeline = false;           ///< keep what the merged Perfetto timeline needs (TraceAnalysis::timelines)
};

/// What a command measured itself rather than read from a file (`doctor`): read as a file of its kind would be —
/// the report's facts (evidence/record_facts.h, facts_from_scalescope_json), the topology's facts, and the facts its
/// probes stated — and, like a train or doctor report among the files, the figures of the fixes' predicted gains.
struct Measured {
  std::string source = "measured";         ///< provenance of the report's facts ("doctor")
  nlohmann::json report;                   ///< a scalescope.doctor/1 or scalescope.train/1 result; its "topology"
                                           ///< (topo::TopoAnalysis as JSON) gives the fixes' gains their link figures
  std::optional<topo::Topology> topology;  ///< the machine's topology, discovered live
  std::string topology_source = "topo (live)";
  diagnose::FactSet facts;                 ///< the probes' facts (platform, GPU health, NCCL probe)
};

/// An error with what to do about it, as every scalescope error is said.
struct Problem {
  std::string cause;
  std::string remedy;
};

/// One nccl-tests results table and its analysis.
struct SweepRecord {
  analyze::Sweep sweep;
  analyze::SweepAnalysis analysis;
};

/// scalescope's own JSON result (train, doctor, comm, capture, job, topo): the line that says what it concluded and
/// the same as JSON; for train and doctor reports the whole report too (the predictor's figures for the fixes).
struct ScalescopeJsonRecord {
  std::string line;
  nlohmann::json summary;
  std::optional<nlohmann::json> run_report;  ///< scalescope.train/1 and scalescope.doctor/1
};

/// An NCCL profiler plugin record, its summary, and one sweep per collective it holds.
struct NcclProfileRecord {
  analyze::NcclProfile profile;
  analyze::NcclProfileSummary summary;
  std::vector<SweepRecord> sweeps;
};

/// What one file gave: its kinds, its records (one member per kind that was read), its facts, and what went wrong.
struct FileResult {
  std::string path;
  analyze::InputDetection detection;
  std::uint64_t bytes_skipped = 0;   ///< of a text read by its head and tail (InputLimits::text_excerpt_bytes)
  std::uint64_t excerpt_bytes = 0;   ///< the excerpt asked for (InputLimits::text_excerpt_bytes)
  diagnose::FactSet facts;           ///< what the file gave the diagnosis (traces: with the other traces)
  std::vector<std::string> notes;    ///< how damaged parts were read
  std::vector<Problem> errors;
  std::string skipped;               ///< a file of a directory that no reader recognises: why ("" when read)

  std::optional<std::pair<analyze::NcclLog, analyze::NcclLogAnalysis>> nccl_log;
  std::optional<std::pair<analyze::WatchdogLog, analyze::WatchdogAnalysis>> watchdog;
  std::vector<SweepRecord> nccl_tests;   ///< one per results table
  bool nccl_tests_read = false;          ///< the nccl-tests kind was read (even with no table)
  std::optional<topo::TopoReport> topo;
  std::optional<ScalescopeJsonRecord> scalescope_json;
  std::optional<NcclProfileRecord> nccl_profile;
  std::optional<int> trace_rank;         ///< a profiler trace analysed as this rank
};

/// Everything one call found.
struct Analysis {
  analyze::InputList inputs;
  std::vector<FileResult> files;            ///< in the order read
  std::optional<analyze::TraceAnalysis> traces;  ///< the profiler traces among the files, analysed together
  /// The NCCL logs of several files together, and how many there were (none when fewer than two).
  std::optional<analyze::NcclLogAnalysis> nccl_logs;
  std::size_t nccl_log_files = 0;
  std::optional<analyze::WatchdogAnalysis> watchdogs;  ///< the watchdog messages of several files together
  std::size_t watchdog_files = 0;
  std::vector<Problem> baseline_errors;     ///< why the --baseline trace was not used
  diagnose::FactSet facts;                  ///< of every file, and across files
  diagnose::Diagnosis diagnosis;

  /// Whether any file was read without error (when none was, the errors are the answer, not a diagnosis).
  bool anything_read() const;
  /// Whether any file (or the baseline) ended in an error: the exit status of `analyze` is then 1.
  bool any_error() const;
};

/// Reads every file of `inputs` (analyze::list_inputs), each through the readers of its kinds; the profiler traces
/// analysed together (with the baseline); NCCL logs and watchdog messages of several files compared; then the
/// diagnosis over all their facts, with the fixes' predicted gains where a train or doctor report gives the figures.
/// A file that cannot be read or parsed is that file's error; the others are read. Throws core::Error only when
/// the whole call cannot go on (out of memory outside any one file).
Analysis run(analyze::InputList inputs, const RunOptions& options);

/// run() over files and what the calling command measured (`measured` first, then the files' facts): one diagnosis
/// over both. With no files, the Analysis holds no FileResult and only the measured evidence's facts.
Analysis run(analyze::InputList inputs, const RunOptions& options, std::vector<Measured> measured);

/// run() over files given by name (no directory expansion bounds beyond the defaults): the tests' and tools' short way.
Analysis run_files(const std::vector<std::string>& paths, const RunOptions& options = {});

}  // namespace scalescope::evidence
