#include "evidence/run.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <new>
#include <span>

#include <fmt/format.h>

#include "core/error.h"
#include "core/parse_count.h"
#include "evidence/record_facts.h"
#include "predict/fix_gain.h"
#include "readers/code/python_code.h"
#include "readers/job/launch_env.h"
#include "readers/job/python_profile.h"
#include "readers/job/scalescope_report.h"
#include "readers/job/training_log.h"
#include "readers/nccl/nccl_tests_parser.h"
#include "readers/nccl/nccl_tests_preamble.h"
#include "readers/prose/report_text.h"
#include "readers/system/system_tools.h"
#include "readers/tables/tables.h"
#include "topo/smi_topo_parser.h"

namespace scalescope::evidence {
namespace {

using analyze::InputKind;

void take(FileResult& into, diagnose::Reading&& part) {
  into.facts.append(std::move(part.facts));
  for (auto& n : part.notes) into.notes.push_back(std::move(n));
}

/// A reader's failure on one kind: the note the facts carry ("kind: what") and the file's error.
struct KindFailure {
  std::string note;
  Problem error;
};

KindFailure failure_of(const std::string& path, const std::string& kname, const std::exception& e) {
  KindFailure f{kname + ": " + e.what(), {}};
  if (const auto* ce = dynamic_cast<const core::Error*>(&e))
    f.error = {"'" + path + "' as " + kname + ": " + ce->what(), ce->remedy()};
  else if (dynamic_cast<const nlohmann::json::exception*>(&e))
    f.error = {"'" + path + "' as " + kname + ": unexpected JSON content: " + e.what(), "pass the report as scalescope wrote it"};
  else if (dynamic_cast<const std::bad_alloc*>(&e))
    f.error = {"'" + path + "' as " + kname + ": out of memory", "pass a smaller excerpt of the file"};
  else
    f.error = {"'" + path + "' as " + kname + ": " + e.what(), "pass the file as the tool that wrote it left it"};
  return f;
}

/// Reads one kind of a text file: its record (kept in `r`) and its facts, each parsed once (what detection parsed to
/// recognise the kind, input.parsed, is taken instead of parsing again).
void read_kind(FileResult& r, analyze::InputFile& input, InputKind kind) {
  const auto& text = input.text;
  const auto& path = input.path;
  const std::string kname(analyze::to_string(kind));
  // A failure while parsing loses the kind's facts and its record (a note and an error); one while stating facts
  // from a parsed record or summarising it loses only that part.
  auto failed = [&](const std::exception& e, bool note, bool error) {
    auto f = failure_of(path, kname, e);
    if (note) r.notes.push_back(std::move(f.note));
    if (error) r.errors.push_back(std::move(f.error));
  };
  switch (kind) {
    case InputKind::kineto_trace: return;  // read with the other traces
    case InputKind::nccl_log: {
      try {
        auto log = analyze::parse_nccl_log(text, path);
        take(r, diagnose::facts_from_nccl_log(log));
        // A span over the one log, not a vector of it: a copy would double the memory of a large log.
        auto a = analyze::analyze_nccl_logs(std::span<const analyze::NcclLog>(&log, 1));
        r.nccl_log.emplace(std::move(log), std::move(a));
      } catch (const std::exception& e) { failed(e, true, true); }
      return;
    }
    case InputKind::watchdog: {
      try {
        auto log = analyze::parse_watchdog(text, path);
        auto a = analyze::analyze_watchdog(std::span<const analyze::WatchdogLog>(&log, 1));
        take(r, diagnose::facts_from_watchdog(std::span<const analyze::WatchdogLog>(&log, 1), a));
        r.watchdog.emplace(std::move(log), std::move(a));
      } catch (const std::exception& e) { failed(e, true, true); }
      return;
    }
    case InputKind::nccl_tests: {
      try {
        auto sweeps = input.parsed.nccl_tests ? std::move(*input.parsed.nccl_tests) : analyze::parse_nccl_tests_tables(text, path);
        for (auto& sweep : sweeps) {
          auto a = analyze::analyze_sweep(sweep);
          r.nccl_tests.push_back({std::move(sweep), std::move(a)});
        }
      } catch (const std::exception& e) {
        failed(e, true, true);
        return;
      }
      r.nccl_tests_read = true;
      try {
        for (const auto& t : r.nccl_tests) take(r, diagnose::facts_from_sweep(t.sweep, t.analysis, path));
        take(r, analyze::read_nccl_tests_preamble(text, path, true));
      } catch (const std::exception& e) { failed(e, true, false); }
      for (const auto& t : r.nccl_tests)
        if (t.sweep.rows_with_wrong_elements > 0)  // a failed run, as `comm --from` says of it
          r.errors.push_back({fmt::format("'{}': {} row(s) report wrong elements (#wrong > 0){}: the run that wrote it "
                                          "failed its data check",
                                          path, t.sweep.rows_with_wrong_elements,
                                          r.nccl_tests.size() > 1 ? " in " + t.sweep.source : std::string()),
                              "rerun the test; wrong results point at a faulty GPU, link or NCCL build, not at slow "
                              "communication"});
      return;
    }
    case InputKind::smi_topo: {
      try {
        auto reading = input.parsed.smi_topo ? std::move(*input.parsed.smi_topo) : topo::parse_smi_topo(text, "file " + path);
        take(r, diagnose::facts_from_topology(reading.topology, path));
        for (const auto& w : reading.warnings) r.notes.push_back(w);
        r.topo = topo::analyse(std::move(reading));
      } catch (const std::exception& e) { failed(e, true, true); }
      return;
    }
    case InputKind::scalescope_json: {
      nlohmann::json j;
      try {
        if (input.parsed.scalescope_json) {
          j = std::move(*input.parsed.scalescope_json);
        } else {
          core::count_parse("scalescope_json", text);
          j = nlohmann::json::parse(text);
        }
      } catch (const std::exception& e) {
        failed(e, true, true);
        return;
      }
      try {
        take(r, diagnose::facts_from_scalescope_json(j, path));
      } catch (const std::exception& e) { failed(e, true, false); }
      try {
        const std::string schema = r.detection.schema.value_or("");
        auto [line, summary] = analyze::summarize_scalescope_json(j, schema);
        ScalescopeJsonRecord rec{std::move(line), std::move(summary), std::nullopt};
        if (schema == "scalescope.train/1" || schema == "scalescope.doctor/1") rec.run_report = std::move(j);
        r.scalescope_json = std::move(rec);
      } catch (const std::exception& e) { failed(e, false, true); }
      return;
    }
    case InputKind::nccl_profile: {
      try {
        auto p = analyze::parse_nccl_profile(text, path);
        take(r, diagnose::facts_from_nccl_profile(p, path));
        NcclProfileRecord rec{std::move(p), {}, {}};
        rec.summary = analyze::summarize_nccl_profile(rec.profile);
        std::set<comm::Collective> done;
        for (const auto& row : rec.summary.rows)
          if (const auto c = analyze::collective_of_nccl_op(row.op); c && done.insert(*c).second)
            if (auto sw = analyze::nccl_profile_sweep(rec.profile, *c)) {
              auto a = analyze::analyze_sweep(*sw);
              rec.sweeps.push_back({std::move(*sw), std::move(a)});
            }
        r.nccl_profile = std::move(rec);
      } catch (const std::exception& e) { failed(e, true, true); }
      return;
    }
    case InputKind::nccl_tests_header:
    case InputKind::training_log:
    case InputKind::launch_command:
    case InputKind::environment:
    case InputKind::measurement_table:
    case InputKind::python_profile:
    case InputKind::system_tools:
    case InputKind::python_code:
    case InputKind::report_text:
      // Read for the diagnosis only: their facts are what the report says of them.
      try {
        switch (kind) {
          case InputKind::nccl_tests_header: take(r, analyze::read_nccl_tests_preamble(text, path, false)); break;
          case InputKind::training_log: take(r, analyze::read_training_log(text, path)); break;
          case InputKind::launch_command: take(r, analyze::read_commands(text, path)); break;
          case InputKind::environment: take(r, analyze::read_environment(text, path)); break;
          case InputKind::measurement_table:
            take(r, input.parsed.measurement_table ? std::move(*input.parsed.measurement_table)
                                                   : analyze::read_measurement_tables(text, path));
            break;
          case InputKind::python_profile: take(r, analyze::read_python_profile(text, path)); break;
          case InputKind::system_tools:
            take(r, input.parsed.system_tools ? std::move(*input.parsed.system_tools) : analyze::read_system_tools(text, path));
            break;
          case InputKind::python_code: take(r, analyze::read_python_code(text, path)); break;
          case InputKind::report_text:
            take(r, input.parsed.report_text ? std::move(*input.parsed.report_text) : analyze::read_report_text(text, path));
            break;
          default: break;
        }
      } catch (const std::exception& e) { failed(e, true, false); }
      return;
  }
}

/// Reads one file: its detection, then each kind. Never throws for a bad file.
FileResult read_file(const std::string& path, const analyze::InputList& inputs, const RunOptions& options,
                     std::uint64_t& bytes_read) {
  FileResult r;
  r.path = path;
  struct stat st {};
  const std::uint64_t size = ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? static_cast<std::uint64_t>(st.st_size) : 0;
  if (bytes_read + size > options.limits.total_bytes) {
    r.errors.push_back({fmt::format("'{}' ({} bytes) was not read: the run has read {} bytes of its inputs, and the bound "
                                    "on one run is {}", path, size, bytes_read, options.limits.total_bytes),
                        "pass fewer or smaller files, or raise the bound (--max-input-bytes N)"});
    return r;
  }
  bytes_read += size;
  analyze::InputFile input;
  try {
    input = analyze::read_input_file(path, options.limits.text_excerpt_bytes);
  } catch (const core::Error& e) {
    r.errors.push_back({e.what(), e.remedy()});
    return r;
  } catch (const std::bad_alloc&) {
    r.errors.push_back({"'" + path + "': out of memory while reading it", "pass a smaller excerpt of the file"});
    return r;
  }
  r.detection = input.detection;
  r.bytes_skipped = input.bytes_skipped;
  r.excerpt_bytes = options.limits.text_excerpt_bytes;
  if (r.detection.kinds.empty()) {
    if (inputs.from_directory.count(path)) {
      r.skipped = r.detection.reason;
      return r;
    }
    std::error_code size_error;
    r.errors.push_back({"'" + path + "': " + r.detection.reason,
                        std::filesystem::file_size(path, size_error) == 0 && !size_error
                            ? "nothing was written to it: was the run that writes it cut short, or the file copied "
                              "before it finished? Pass the complete file"
                            : "pass an NCCL log (NCCL_DEBUG=INFO), watchdog messages, an nccl-tests output, "
                              "`nvidia-smi topo -m`, a profiler trace or a scalescope JSON report"});
    return r;
  }
  // Each kind on its own: one that fails leaves the others' results.
  for (auto kind : r.detection.kinds) read_kind(r, input, kind);
  return r;
}

/// The profiler traces among the files, analysed together: each file's rank or error, the baseline's errors, the
/// traces' facts.
void read_traces(Analysis& a, const std::vector<std::size_t>& trace_files, const RunOptions& options) {
  std::vector<std::string> paths;
  for (auto i : trace_files) paths.push_back(a.files[i].path);
  analyze::TraceOptions to;
  to.read = options.trace_read;
  if (!options.baseline.empty()) to.baseline_path = options.baseline;
  to.mode = options.strong ? core::ScalingMode::strong : core::ScalingMode::weak;
  to.step_windows = options.step_windows;
  to.keep_timeline = options.keep_timeline;
  try {
    auto t = analyze::analyze_trace_files(paths, to);
    std::map<std::string, std::pair<std::string, std::string>> errors;
    for (const auto& e : t.errors) errors[e.path] = {e.cause, e.remedy};
    std::map<std::string, int> rank_of;
    for (const auto& rk : t.ranks) rank_of[rk.source] = rk.rank;
    if (!options.baseline.empty())
      if (auto e = errors.find(options.baseline); e != errors.end()) a.baseline_errors.push_back({e->second.first, e->second.second});
    for (auto i : trace_files) {
      auto& r = a.files[i];
      if (auto e = errors.find(r.path); e != errors.end()) {
        // The reader's messages name the file already ("'x.json': …"); say what it was read as.
        const std::string& cause = e->second.first;
        r.errors.push_back({cause.rfind("'" + r.path + "'", 0) == 0 ? cause + " (read as a profiler trace)"
                                                                    : "'" + r.path + "' as a profiler trace: " + cause,
                            e->second.second});
      } else if (auto k = rank_of.find(r.path); k != rank_of.end()) {
        r.trace_rank = k->second;
      }
    }
    a.facts.append(diagnose::facts_from_traces(t).facts);
    a.traces = std::move(t);
  } catch (const core::Error& e) {
    for (auto i : trace_files)
      a.files[i].errors.push_back({"'" + a.files[i].path + "' as a profiler trace: " + e.what(), e.remedy()});
  }
}

}  // namespace

bool Analysis::anything_read() const {
  return std::any_of(files.begin(), files.end(), [](const FileResult& r) { return r.errors.empty() && r.skipped.empty(); });
}

bool Analysis::any_error() const {
  return !baseline_errors.empty() ||
         std::any_of(files.begin(), files.end(), [](const FileResult& r) { return r.skipped.empty() && !r.errors.empty(); });
}

Analysis run(analyze::InputList inputs, const RunOptions& options) { return run(std::move(inputs), options, {}); }

Analysis run(analyze::InputList inputs, const RunOptions& options, std::vector<Measured> measured) {
  Analysis a;
  a.inputs = std::move(inputs);
  for (const auto& m : measured) {
    a.facts.append(diagnose::facts_from_scalescope_json(m.report, m.source).facts);
    if (m.topology) a.facts.append(diagnose::facts_from_topology(*m.topology, m.topology_source).facts);
    a.facts.append(diagnose::FactSet(m.facts));
  }
  std::vector<std::size_t> trace_files;
  std::uint64_t bytes_read = 0;  // of every input together, as stored (InputLimits::total_bytes)
  for (const auto& path : a.inputs.files) {
    a.files.push_back(read_file(path, a.inputs, options, bytes_read));
    auto& r = a.files.back();
    a.facts.append(diagnose::FactSet(r.facts));
    if (r.detection.has(InputKind::kineto_trace)) trace_files.push_back(a.files.size() - 1);
  }
  if (!trace_files.empty()) read_traces(a, trace_files, options);

  // Across files: the logs are moved out of their files' records for the joint analysis and moved back (a copy
  // would double the memory of large logs).
  std::vector<analyze::NcclLog> nccl_logs;
  std::vector<analyze::WatchdogLog> watchdog_logs;
  for (auto& r : a.files) {
    if (r.nccl_log) nccl_logs.push_back(std::move(r.nccl_log->first));
    if (r.watchdog) watchdog_logs.push_back(std::move(r.watchdog->first));
  }
  if (nccl_logs.size() > 1) {
    a.nccl_logs = analyze::analyze_nccl_logs(nccl_logs);
    a.nccl_log_files = nccl_logs.size();
  }
  if (watchdog_logs.size() > 1) {
    auto w = analyze::analyze_watchdog(watchdog_logs);
    // Held in a variable: a range-for over a member of the temporary would read it after its end (C++20).
    const auto across = diagnose::facts_from_watchdog(watchdog_logs, w);
    for (const auto& fact : across.facts.all())  // the cross-rank summary (each file's timeouts are in already)
      if (std::holds_alternative<diagnose::WatchdogSummary>(fact.value)) a.facts.add(fact);
    a.watchdogs = std::move(w);
    a.watchdog_files = watchdog_logs.size();
  }
  std::size_t n = 0, w = 0;
  for (auto& r : a.files) {
    if (r.nccl_log) r.nccl_log->first = std::move(nccl_logs[n++]);
    if (r.watchdog) r.watchdog->first = std::move(watchdog_logs[w++]);
  }

  a.diagnosis = diagnose::diagnose(a.facts);
  for (const auto& m : measured) predict::attach_fix_gains(a.diagnosis, m.report);
  for (const auto& r : a.files)
    if (r.scalescope_json && r.scalescope_json->run_report) predict::attach_fix_gains(a.diagnosis, *r.scalescope_json->run_report);
  return a;
}

Analysis run_files(const std::vector<std::string>& paths, const RunOptions& options) {
  analyze::InputList inputs;
  inputs.files = paths;
  return run(std::move(inputs), options);
}

}  // namespace scalescope::evidence
