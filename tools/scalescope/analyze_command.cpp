// `scalescope analyze FILE…`: reads the evidence users already have — NCCL debug logs, PyTorch watchdog
// timeouts, nccl-tests outputs, `nvidia-smi topo -m`, scalescope's own JSON, profiler traces — detects what each
// file is, and prints what it shows: per file, then across the NCCL logs and watchdog messages of one run.

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/chrome_trace_writer.h"
#include "readers/input_kind.h"
#include "readers/input_list.h"
#include "analysis/nccl_log_analysis.h"
#include "readers/nccl/nccl_log.h"
#include "readers/nccl/nccl_profile.h"
#include "readers/nccl/nccl_tests_parser.h"
#include "analysis/sweep_analysis.h"
#include "analysis/trace_analysis.h"
#include "readers/job/watchdog.h"
#include "commands.h"
#include "workload_options.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/output_guard.h"
#include "core/terminal_text.h"
#include "diagnose/catalogue.h"
#include "diagnose/engine.h"
#include "evidence/gather.h"
#include "readers/job/capture.h"
#include "evidence/record_facts.h"
#include "predict/fix_gain.h"
#include "report/html_builders.h"
#include "report/nccl_profile_report.h"
#include "report/nccl_tests_table.h"
#include "report/topo_report.h"
#include "report/trace_report.h"
#include "topo/analysis.h"
#include "topo/smi_topo_parser.h"

namespace scalescope::cli {

/// What the trace analysis gives `scalescope analyze` for the profiler traces among its inputs: the terminal
/// report, the whole analysis as JSON (schema scalescope.trace/1), the rank each readable file became, and the
/// files it could not read (cause, remedy).
struct TraceAnalysisOutput {
  std::string terminal;
  nlohmann::json combined;
  std::map<std::string, int> rank_of;
  std::map<std::string, std::pair<std::string, std::string>> errors;
  /// Why the merged timeline could not be written (cause, remedy); empty when it was, or was not asked for. The
  /// analysis stands either way.
  std::optional<std::pair<std::string, std::string>> timeline_error;
  /// The traces' facts for the diagnosis.
  diagnose::FactSet facts;
};

/// Analyses every trace given to `scalescope analyze` together (one per rank, rank from distributedInfo),
/// with an optional 1-rank baseline trace for the verdict, and writes the merged Perfetto timeline when asked.
/// Bad files are reported per file, and a timeline that cannot be written in timeline_error: never thrown.
TraceAnalysisOutput analyze_trace_inputs(const std::vector<std::string>& paths, const std::string& baseline,
                                         bool strong, const std::string& timeline, const std::string& step_windows,
                                         const analyze::TraceReadOptions& read, report::HtmlPage* page) {
  analyze::TraceOptions options;
  options.read = read;
  if (!baseline.empty()) options.baseline_path = baseline;
  options.mode = strong ? core::ScalingMode::strong : core::ScalingMode::weak;
  options.step_windows = step_windows == "annotation" ? analyze::StepWindows::annotation : analyze::StepWindows::gpu_launches;
  options.keep_timeline = !timeline.empty();
  const auto analysis = analyze::analyze_trace_files(paths, options);
  if (page) report::add_lanes(*page, analysis);
  TraceAnalysisOutput out;
  // Each file's errors are reported with that file; with no rank analysed there is no joint report.
  if (!analysis.ranks.empty()) out.terminal = report::render_trace_report(analysis, false);
  out.combined = analysis;
  for (const auto& r : analysis.ranks) out.rank_of[r.source] = r.rank;
  for (const auto& e : analysis.errors) out.errors[e.path] = {e.cause, e.remedy};
  out.facts = diagnose::facts_from_traces(analysis).facts;
  if (!timeline.empty() && !analysis.ranks.empty()) {
    try {
      analyze::write_merged_timeline_file(analysis, timeline);
      out.terminal += "merged timeline of every rank (open in https://ui.perfetto.dev): " + timeline + "\n";
    } catch (const core::Error& e) {  // a full disk: the traces' analysis is still reported
      out.timeline_error = std::make_pair("--timeline '" + timeline + "': " + e.what(), e.remedy());
    }
  }
  return out;
}

namespace {


/// The cause catalogue as `analyze --causes` prints it: every id with what supports it, what rules it out, how its
/// cost is estimated, the fix, the confirming command and the source.
std::string render_catalogue() {
  std::string out = "causes the diagnosis knows (ids of ../shared/diagnosis-causes.md, plus scalescope's additions):\n";
  std::string_view category;
  for (const auto& c : diagnose::cause_catalogue()) {
    if (c.category != category) {
      category = c.category;
      out += fmt::format("\n{}\n", category);
    }
    out += fmt::format("  {} — {}\n", c.id, c.title);
    out += fmt::format("      how: {}\n", c.mechanism);
    out += fmt::format("      supported by: {}\n", c.supports);
    out += fmt::format("      ruled out by: {}\n", c.rules_out);
    out += fmt::format("      cost: {}\n", c.cost);
    out += fmt::format("      fix: {}\n", c.fix);
    if (!c.confirm.empty()) out += fmt::format("      confirm: {}\n", c.confirm);
    out += fmt::format("      source: {}\n", c.source);
  }
  return out;
}

std::string kinds_text(const analyze::InputDetection& d) {
  static const std::map<analyze::InputKind, const char*> names = {
      {analyze::InputKind::kineto_trace, "profiler trace"},  {analyze::InputKind::nccl_log, "NCCL debug log"},
      {analyze::InputKind::watchdog, "PyTorch watchdog messages"}, {analyze::InputKind::nccl_tests, "nccl-tests output"},
      {analyze::InputKind::smi_topo, "nvidia-smi topo -m"},  {analyze::InputKind::scalescope_json, "scalescope JSON"},
      {analyze::InputKind::nccl_tests_header, "nccl-tests output without results"},
      {analyze::InputKind::training_log, "training log"}, {analyze::InputKind::launch_command, "launch command"},
      {analyze::InputKind::environment, "environment"}, {analyze::InputKind::measurement_table, "table of measurements"},
      {analyze::InputKind::python_profile, "Python profile"}, {analyze::InputKind::system_tools, "system tools"},
      {analyze::InputKind::python_code, "PyTorch training code"}, {analyze::InputKind::report_text, "prose about the job"},
      {analyze::InputKind::nccl_profile, "NCCL profiler plugin record"}};
  std::string s;
  for (auto k : d.kinds) s += (s.empty() ? "" : "; ") + std::string(names.at(k));
  if (d.schema) s += " " + *d.schema;
  if (!d.tools.empty()) s += " (" + fmt::format("{}", fmt::join(d.tools, ", ")) + ")";
  return s;
}

/// One line per fact kind a file gave the diagnosis: "facts: 4 gpu, 1 world, 1 nccl_failure".
std::string facts_line(const diagnose::FactSet& facts) {
  std::map<std::string, std::size_t> count;
  std::vector<std::string> order;
  for (const auto& f : facts.all()) {
    const auto k = diagnose::kind_of(f.value);
    if (!count.count(k)) order.push_back(k);
    ++count[k];
  }
  std::string s;
  for (const auto& k : order) s += (s.empty() ? "" : ", ") + fmt::format("{} {}", count[k], k);
  return s.empty() ? "  facts for the diagnosis: none\n" : "  facts for the diagnosis: " + s + "\n";
}

/// `name_files`: the combined view over several files, where a line number alone does not say where: each
/// evidence line then starts with its file's name.
std::string render_findings(const std::vector<analyze::LogFinding>& findings, bool name_files) {
  std::string out;
  for (const auto& f : findings) {
    out += fmt::format("  [{}] {}\n", analyze::to_string(f.severity), f.title);
    if (!f.detail.empty()) out += "      " + f.detail + "\n";
    for (std::size_t i = 0; i < f.evidence.size() && i < 3; ++i)
      out += fmt::format("      {}line {}: {}\n",
                         name_files ? std::filesystem::path(f.evidence[i].source).filename().string() + " " : "",
                         f.evidence[i].line, analyze::excerpt(f.evidence[i].excerpt, 160));
    if (!f.remedy.empty()) out += "      what to do: " + f.remedy + "\n";
  }
  return out;
}

std::string render_nccl(const analyze::NcclLogAnalysis& a, bool name_files = false) {
  std::vector<std::string> parts;
  parts.push_back(a.versions.empty() ? "NCCL version not in the log" : "NCCL " + fmt::format("{}", fmt::join(a.versions, ", ")));
  parts.push_back(fmt::format("{} process(es) on {} host(s)", a.processes, a.hosts.size()));
  if (a.nranks) parts.push_back(fmt::format("{} ranks", *a.nranks));
  if (!a.transports.empty()) {
    std::string t;
    for (const auto& [k, v] : a.transports) t += (t.empty() ? "" : ", ") + fmt::format("{} {}", k, v);
    if (a.gdrdma_connections) t += fmt::format(" (GDRDMA {})", a.gdrdma_connections);
    parts.push_back("connections: " + t);
  }
  if (a.channels) parts.push_back(fmt::format("{} channels", *a.channels));
  if (!a.networks.empty()) parts.push_back("network " + fmt::format("{}", fmt::join(a.networks, ", ")));
  parts.push_back(fmt::format("{} WARN line(s)", a.warnings));
  std::string out = "  " + fmt::format("{}", fmt::join(parts, " | ")) + "\n";
  if (a.findings.empty()) out += "  no findings: nothing in the log points at a slow or failing path\n";
  return out + render_findings(a.findings, name_files);
}

std::string opt(const std::optional<std::uint64_t>& v) { return v ? std::to_string(*v) : "-"; }

std::string render_watchdog(const analyze::WatchdogAnalysis& a, bool name_files = false) {
  std::string out = "  verdict: " + a.verdict + "\n";
  if (!a.ranks.empty()) {
    out += fmt::format("  {:<28} {:<22} {:>10} {:>11} {:>11} {:>10} {:>10} {:>10} {:>10}\n", "rank", "collective", "SeqNum",
                       "NumelIn", "NumelOut", "timeout ms", "ran ms", "enqueued", "completed");
    for (std::size_t i = 0; i < a.ranks.size() && i < 64; ++i) {
      const auto& r = a.ranks[i];
      out += fmt::format("  {:<28} {:<22} {:>10} {:>11} {:>11} {:>10} {:>10} {:>10} {:>10}\n", r.rank,
                         r.timeout.op_type.value_or("-"), opt(r.timeout.seq_num), opt(r.timeout.numel_in),
                         opt(r.timeout.numel_out), opt(r.timeout.timeout_ms), opt(r.timeout.elapsed_ms),
                         opt(r.timeout.last_enqueued), opt(r.timeout.last_completed));
    }
    if (a.ranks.size() > 64) out += fmt::format("  … {} more\n", a.ranks.size() - 64);
  }
  return out + render_findings(a.findings, name_files);
}

// scalescope's own JSON: the line that says what it concluded.
std::pair<std::string, nlohmann::json> summarize_scalescope_json(const std::string& text, const std::string& schema) {
  const auto j = nlohmann::json::parse(text);
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

struct FileResult {
  std::string path;
  analyze::InputDetection detection;
  nlohmann::json json = nlohmann::json::object();
  std::string terminal;
  std::vector<std::pair<std::string, std::string>> errors;  // cause, remedy
  std::size_t facts = 0;  // facts the file gave the diagnosis
  std::string skipped;    // a file of a directory that no reader recognises: why
};

/// Prints each (cause, remedy) on stderr as scalescope reports errors and returns them as JSON
/// [{"cause", "remedy"}…] (valid UTF-8).
nlohmann::json print_errors(const std::vector<std::pair<std::string, std::string>>& errors) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [cause, remedy] : errors) {
    std::fflush(stdout);
    say_error(cause, remedy);
    out.push_back({{"cause", analyze::to_valid_utf8(cause)}, {"remedy", analyze::to_valid_utf8(remedy)}});
  }
  return out;
}

void record_error(FileResult& r, const std::string& what, const core::Error& e) {
  r.errors.push_back({what.empty() ? e.what() : what + ": " + e.what(), e.remedy()});
}

}  // namespace

int run_analyze(const AnalyzeFlags& f) {
  if (f.causes) {
    std::fputs(render_catalogue().c_str(), stdout);
    return 0;
  }
  if (f.files.empty())
    throw core::UsageError("analyze needs the files to read", "pass them: scalescope analyze FILE… (or --causes for the catalogue)");
  // A directory stands for the files in it (a job directory of `scalescope profile`): those no reader recognises
  // are counted as skipped, not as errors.
  std::vector<core::RunInput> given;
  for (const auto& p : f.files) given.push_back({p, "an input"});
  if (!f.baseline.empty()) given.push_back({f.baseline, "the --baseline trace"});
  // Before anything is read: the analysis must not be lost to a bad output path, nor an input to an output.
  core::check_run_outputs({{"--out", f.out}, {"--timeline", f.timeline}, {"--html", f.html}}, given);
  auto listed = analyze::list_inputs(f.files, f.limits);
  for (const auto& note : listed.notes) std::fprintf(stderr, "analyze: %s\n", note.c_str());
  std::vector<std::string>& files = listed.files;
  const std::set<std::string>& from_directory = listed.from_directory;
  // A directory's file may be a link to a file outside it: the outputs are checked against every file read too.
  for (const auto& [flag, path] : {std::pair{"--out", &f.out}, std::pair{"--timeline", &f.timeline}, std::pair{"--html", &f.html}})
    core::check_output_is_not_input(*path, flag, files);
  nlohmann::json inputs_json = {{"directories", nlohmann::json::array()}};
  for (const auto& d : listed.directories) {
    inputs_json["directories"].push_back({{"path", analyze::to_valid_utf8(d.path)}, {"files", d.files}, {"omitted", d.omitted}});
    if (d.omitted > 0)
      std::fprintf(stderr,
                   "analyze: '%s' holds %zu files; the first %zu in name order were read, %zu were not (from '%s' on): "
                   "raise --max-files to read more\n",
                   d.path.c_str(), d.files, d.files - d.omitted, d.omitted, d.first_omitted.c_str());
  }
  const core::OutputFile out_file(f.out);
  std::vector<FileResult> results;
  diagnose::FactSet facts;
  std::vector<analyze::NcclLog> nccl_logs;
  std::vector<analyze::WatchdogLog> watchdog_logs;
  std::vector<std::size_t> trace_files;
  std::vector<nlohmann::json> run_reports;  // train/doctor reports: the predictor's figures for the fixes
  report::HtmlPage page;                    // --html
  page.title = fmt::format("scalescope analyze — {} file(s)", files.size());
  std::uint64_t bytes_read = 0;  // of every input together, as stored (InputLimits::total_bytes)
  for (const auto& path : files) {
    FileResult r;
    r.path = path;
    struct stat st {};
    const std::uint64_t size = ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? static_cast<std::uint64_t>(st.st_size) : 0;
    if (bytes_read + size > f.limits.total_bytes) {
      r.errors.push_back({fmt::format("'{}' ({} bytes) was not read: the run has read {} bytes of its inputs, and the bound "
                                      "on one run is {}", path, size, bytes_read, f.limits.total_bytes),
                          "pass fewer or smaller files, or raise the bound (--max-input-bytes N)"});
      results.push_back(std::move(r));
      continue;
    }
    bytes_read += size;
    analyze::InputFile input;
    try {
      input = analyze::read_input_file(path, f.limits.text_excerpt_bytes);
    } catch (const core::Error& e) {
      record_error(r, "", e);
      results.push_back(std::move(r));
      continue;
    } catch (const std::bad_alloc&) {
      r.errors.push_back({"'" + path + "': out of memory while reading it", "pass a smaller excerpt of the file"});
      results.push_back(std::move(r));
      continue;
    }
    r.detection = input.detection;
    if (input.bytes_skipped > 0)
      r.terminal += fmt::format("  note: {} bytes of its middle were not read (its first and last {} KiB were)\n",
                                input.bytes_skipped, f.limits.text_excerpt_bytes / 2048);
    if (!r.detection.kinds.empty()) {
      // What the diagnosis reads of it (traces: with the other traces below).
      auto reading = diagnose::facts_of_text(input);
      r.facts = reading.facts.size();
      if (!r.detection.has(analyze::InputKind::kineto_trace)) r.terminal += facts_line(reading.facts);
      for (const auto& note : reading.notes) r.terminal += "  note: " + analyze::excerpt(note, 300) + "\n";
      facts.append(std::move(reading.facts));
    }
    if (r.detection.kinds.empty() && from_directory.count(path)) {
      r.skipped = r.detection.reason;
      results.push_back(std::move(r));
      continue;
    }
    if (r.detection.kinds.empty()) {
      std::error_code size_error;
      r.errors.push_back({"'" + path + "': " + r.detection.reason,
                          std::filesystem::file_size(path, size_error) == 0 && !size_error
                              ? "nothing was written to it: was the run that writes it cut short, or the "
                                               "file copied before it finished? Pass the complete file"
                              : "pass an NCCL log (NCCL_DEBUG=INFO), watchdog messages, an nccl-tests "
                                "output, `nvidia-smi topo -m`, a profiler trace or a scalescope JSON report"});
      results.push_back(std::move(r));
      continue;
    }
    // Each kind on its own: one that fails leaves the others' results.
    for (auto kind : r.detection.kinds) {
      const std::string kname(analyze::to_string(kind));
      try {
        switch (kind) {
          case analyze::InputKind::kineto_trace:
            trace_files.push_back(results.size());
            break;
          case analyze::InputKind::nccl_log: {
            auto log = analyze::parse_nccl_log(input.text, path);
            // A span over the one log, not a vector of it: a copy would double the memory of a large log.
            const auto a = analyze::analyze_nccl_logs(std::span<const analyze::NcclLog>(&log, 1));
            r.terminal += "NCCL log:\n" + render_nccl(a);
            r.json["nccl_log"] = {{"log", log}, {"analysis", a}};
            nccl_logs.push_back(std::move(log));
            break;
          }
          case analyze::InputKind::watchdog: {
            auto log = analyze::parse_watchdog(input.text, path);
            const auto a = analyze::analyze_watchdog(std::span<const analyze::WatchdogLog>(&log, 1));
            r.terminal += "watchdog:\n" + render_watchdog(a);
            r.json["watchdog"] = {{"log", log}, {"analysis", a}};
            watchdog_logs.push_back(std::move(log));
            break;
          }
          case analyze::InputKind::nccl_tests: {
            const auto sweeps = analyze::parse_nccl_tests_tables(input.text, path);
            nlohmann::json reports = nlohmann::json::array();
            for (const auto& sweep : sweeps) {
              const auto a = analyze::analyze_sweep(sweep);
              r.terminal += fmt::format("nccl-tests: {}, {} row(s), {} rank(s){}\n",
                                        comm::perf_program_name(sweep.collective), sweep.rows.size(),
                                        sweep.ranks ? std::to_string(*sweep.ranks) : "unknown",
                                        sweeps.size() > 1 ? " — " + sweep.source : std::string());
              r.terminal += report::render_comm_summary(sweep, a);
              report::add_sweep(page, sweep, std::nullopt, "");
              for (const auto& w : sweep.warnings) r.terminal += "  note: " + w + "\n";
              reports.push_back(analyze::comm_report_json(sweep, a));
              if (sweep.rows_with_wrong_elements > 0)  // a failed run, as `comm --from` says of it
                r.errors.push_back({fmt::format("'{}': {} row(s) report wrong elements (#wrong > 0){}: the run "
                                                "that wrote it failed its data check",
                                                path, sweep.rows_with_wrong_elements,
                                                sweeps.size() > 1 ? " in " + sweep.source : std::string()),
                                    "rerun the test; wrong results point at a faulty GPU, link or NCCL build, not at "
                                    "slow communication"});
            }
            // One table: its report, as before; several: the shape `comm --out` writes for them.
            r.json["nccl_tests"] = reports.size() == 1 ? reports[0] : analyze::comm_reports_json(reports);
            break;
          }
          case analyze::InputKind::smi_topo: {
            const auto report = topo::analyse(topo::parse_smi_topo(input.text, "file " + path));
            r.terminal += "nvidia-smi topo -m:\n" + report::render_topo_summary(report);
            r.json["topo"] = report;
            report::add_topology(page, r.json["topo"]["topology"]);
            break;
          }
          case analyze::InputKind::scalescope_json: {
            auto [line, j] = summarize_scalescope_json(input.text, r.detection.schema.value_or(""));
            if (r.detection.schema == "scalescope.train/1" || r.detection.schema == "scalescope.doctor/1")
              run_reports.push_back(nlohmann::json::parse(input.text));
            if (r.detection.schema == "scalescope.doctor/1") report::add_doctor(page, run_reports.back());
            r.terminal += "  " + line + "\n";
            r.json["scalescope_json"] = j;
            break;
          }
          case analyze::InputKind::nccl_profile: {
            const auto p = analyze::parse_nccl_profile(input.text, path);
            const auto s = analyze::summarize_nccl_profile(p);
            r.terminal += report::render_nccl_profile(p, s);
            nlohmann::json sweeps = nlohmann::json::array();
            std::set<comm::Collective> done;
            for (const auto& row : s.rows)
              if (const auto c = analyze::collective_of_nccl_op(row.op); c && done.insert(*c).second)
                if (const auto sw = analyze::nccl_profile_sweep(p, *c)) {
                  sweeps.push_back(analyze::comm_report_json(*sw, analyze::analyze_sweep(*sw)));
                  report::add_sweep(page, *sw, std::nullopt, "");
                }
            r.json["nccl_profile"] = {{"rank", p.rank}, {"nranks", p.nranks}, {"nnodes", p.nnodes}, {"comm_id", p.comm_id},
                                      {"host", p.host}, {"summary", s}, {"sweeps", sweeps}};
            break;
          }
          case analyze::InputKind::nccl_tests_header:
          case analyze::InputKind::training_log:
          case analyze::InputKind::launch_command:
          case analyze::InputKind::environment:
          case analyze::InputKind::measurement_table:
          case analyze::InputKind::python_profile:
          case analyze::InputKind::system_tools:
          case analyze::InputKind::python_code:
          case analyze::InputKind::report_text:
            break;  // read for the diagnosis only: the facts line above says what they gave
        }
      } catch (const core::Error& e) {
        record_error(r, "'" + path + "' as " + kname, e);
      } catch (const nlohmann::json::exception& e) {
        r.errors.push_back({"'" + path + "' as " + kname + ": unexpected JSON content: " + e.what(),
                            "pass the report as scalescope wrote it"});
      } catch (const std::bad_alloc&) {
        r.errors.push_back({"'" + path + "' as " + kname + ": out of memory", "pass a smaller excerpt of the file"});
      }
    }
    results.push_back(std::move(r));
  }

  nlohmann::json combined = nlohmann::json::object();
  std::string combined_text;
  std::vector<std::pair<std::string, std::string>> baseline_errors;  // cause, remedy
  std::vector<std::pair<std::string, std::string>> timeline_errors;
  if (!f.timeline.empty() && trace_files.empty())  // said with the other errors, after what was read
    timeline_errors.push_back({"--timeline '" + f.timeline + "': none of the inputs is a profiler trace, so no timeline was written",
                               "pass the ranks' profiler traces (PyTorch profiler or scalescope --kernel-trace) with it"});
  if (!trace_files.empty()) {
    std::vector<std::string> paths;
    for (auto i : trace_files) paths.push_back(results[i].path);
    try {
      auto t = analyze_trace_inputs(paths, f.baseline, f.strong, f.timeline, f.step_windows, f.trace_read,
                                    f.html.empty() ? nullptr : &page);
      if (!t.terminal.empty()) combined_text += "\n== profiler traces, all ranks together\n" + t.terminal;
      facts.append(std::move(t.facts));
      combined["trace"] = std::move(t.combined);
      if (t.timeline_error) timeline_errors.push_back(*t.timeline_error);
      if (!f.baseline.empty())
        if (auto e = t.errors.find(f.baseline); e != t.errors.end()) baseline_errors.push_back(e->second);
      for (auto i : trace_files) {
        auto& r = results[i];
        if (auto e = t.errors.find(r.path); e != t.errors.end()) {
          // The reader's messages name the file already ("'x.json': …"); say what it was read as.
          const std::string& cause = e->second.first;
          r.errors.push_back({cause.rfind("'" + r.path + "'", 0) == 0 ? cause + " (read as a profiler trace)"
                                                                      : "'" + r.path + "' as a profiler trace: " + cause,
                              e->second.second});
        }
        else if (auto k = t.rank_of.find(r.path); k != t.rank_of.end()) {
          r.json["trace"] = {{"rank", k->second}};
          r.terminal += fmt::format("profiler trace of rank {}: see the traces' report below\n", k->second);
        }
      }
    } catch (const core::Error& e) {
      for (auto i : trace_files) record_error(results[i], "'" + results[i].path + "' as a profiler trace", e);
    }
  }
  if (nccl_logs.size() > 1) {
    const auto a = analyze::analyze_nccl_logs(nccl_logs);
    combined_text += fmt::format("\n== all {} NCCL logs together\n", nccl_logs.size()) + render_nccl(a, true);
    combined["nccl_log"] = a;
  }
  if (watchdog_logs.size() > 1) {
    const auto a = analyze::analyze_watchdog(watchdog_logs);
    // Held in a variable: a range-for over a member of the temporary would read it after its end (C++20).
    const auto across = diagnose::facts_from_watchdog(watchdog_logs, a);
    for (const auto& fact : across.facts.all())  // the cross-rank summary
      if (std::holds_alternative<diagnose::WatchdogSummary>(fact.value)) facts.add(fact);
    combined_text += fmt::format("\n== watchdog messages of all {} files together\n", watchdog_logs.size()) + render_watchdog(a, true);
    combined["watchdog"] = a;
  }

  int status = 0;
  nlohmann::json files_json = nlohmann::json::array();
  // Files of a directory that no reader knows: the first few by name, then a count by reason, so that a directory of
  // a million files gives a report of a few lines.
  constexpr std::size_t kSkippedListed = 10;
  std::size_t skipped = 0;
  std::map<std::string, std::size_t> skipped_by_reason;
  for (auto& r : results) {
    if (!r.skipped.empty()) {
      if (++skipped <= kSkippedListed) {
        std::printf("== %s (skipped: not a kind analyze reads)\n", r.path.c_str());
        files_json.push_back({{"file", analyze::to_valid_utf8(r.path)}, {"status", "skipped"}, {"detection", analyze::to_valid_utf8(r.skipped)}});
      }
      ++skipped_by_reason[r.skipped];
      continue;
    }
    std::printf("== %s%s\n", r.path.c_str(), r.detection.kinds.empty() ? "" : (" (" + kinds_text(r.detection) + ")").c_str());
    std::fputs(r.terminal.c_str(), stdout);
    nlohmann::json kinds = nlohmann::json::array();
    for (auto k : r.detection.kinds) kinds.push_back(std::string(analyze::to_string(k)));
    r.json["file"] = analyze::to_valid_utf8(r.path);
    r.json["kinds"] = kinds;
    r.json["detection"] = analyze::to_valid_utf8(r.detection.reason);
    if (!r.errors.empty()) status = 1;
    r.json["errors"] = print_errors(r.errors);
    r.json["status"] = r.errors.empty() ? "ok" : "error";
    r.json["facts"] = r.facts;
    files_json.push_back(std::move(r.json));
    std::fflush(stderr);
  }
  if (skipped > kSkippedListed) {
    std::string reasons;
    for (const auto& [why, n] : skipped_by_reason) reasons += fmt::format("{}  {} × {}", reasons.empty() ? "" : "\n", n, why);
    std::printf("== skipped %zu files that no reader recognises (%zu named above):\n%s\n", skipped, kSkippedListed, reasons.c_str());
  }
  inputs_json["skipped"] = {{"count", skipped}, {"by_reason", nlohmann::json::object()}};
  for (const auto& [why, n] : skipped_by_reason) inputs_json["skipped"]["by_reason"][analyze::to_valid_utf8(why)] = n;
  std::fputs(combined_text.c_str(), stdout);
  auto diagnosis = diagnose::diagnose(facts);
  for (const auto& rep : run_reports) predict::attach_fix_gains(diagnosis, rep);
  // When no file could be read, the errors above are the answer: a diagnosis of nothing would only bury them.
  const bool anything_read = std::any_of(results.begin(), results.end(), [](const FileResult& r) {
    return r.errors.empty() && r.skipped.empty();
  });
  if (anything_read) std::fputs(("\n" + diagnose::render(diagnosis)).c_str(), stdout);
  if (!baseline_errors.empty()) {
    status = 1;
    combined["baseline_errors"] = print_errors(baseline_errors);
  }
  if (!timeline_errors.empty()) {
    status = 1;
    combined["timeline_errors"] = print_errors(timeline_errors);
  }
  if (!f.html.empty()) {
    page.diagnosis = diagnosis;  // the diagnosis over every input, not a doctor report's own
    for (auto& p : report::default_provenance(command_line())) page.provenance.insert(page.provenance.begin(), std::move(p));
    for (const auto& path : files) page.provenance.emplace_back("input", path);
    try {
      core::write_file_atomically(f.html, report::render_html(page));
      say_written(f.html);
    } catch (const core::Error& e) {
      say_error(std::string("--html: ") + e.what(), e.remedy());
      status = 1;
    }
  }
  if (!f.out.empty()) {
    nlohmann::json out = {{"schema", "scalescope.analyze/1"}, {"inputs", inputs_json}, {"files", files_json}, {"combined", combined},
                          {"diagnosis", diagnosis}, {"facts", nlohmann::json(facts)["facts"]}};
    out_file.write(out.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    say_written(f.out);
  }
  return status;
}

Action add_analyze_command(CLI::App& app) {
  auto flags = std::make_shared<AnalyzeFlags>();
  auto* cmd = app.add_subcommand(
      "analyze", "Read what a run left behind — NCCL debug logs, PyTorch watchdog timeouts, nccl-tests outputs, "
                 "`nvidia-smi topo -m`, scalescope JSON, profiler traces, training logs, launch commands, environments, "
                 "timing tables, Python profiles, lspci / nvidia-smi / kernel-log output — say what each shows, and "
                 "diagnose them together: the root cause, its cost, its fix");
  // No CLI::ExistingFile: a missing file is that file's error (exit 1) while the others are still analysed.
  cmd->add_option("files", flags->files, "files to analyse (each is detected on its own)");
  cmd->add_flag("--causes", flags->causes, "print the causes the diagnosis knows (evidence, cost, fix, confirming command) and stop");
  cmd->add_option("-o,--out", flags->out, "write the results as JSON (schema scalescope.analyze/1) to this file (atomically)")
      ->check(output_file_check());
  cmd->add_option("--baseline", flags->baseline,
                  "a profiler trace of the same job on one rank: gives speedup, comm ratio, the seed's verdict, each kernel's time "
                  "beside it, and references for kernels that never run without communication beside them");
  cmd->add_flag("--strong", flags->strong, "the traces are strong scaling (fixed global batch); default weak");
  cmd->add_option("--step-windows", flags->step_windows,
                  "what a step is: gpu (from the first GPU work launched in ProfilerStep#N to the next step's, so a "
                  "CPU running ahead does not shorten it) or annotation (the ProfilerStep#N CPU range, as HTA)")
      ->check(CLI::IsMember({"gpu", "annotation"}))->capture_default_str();
  cmd->add_option("--timeline", flags->timeline,
                  "write the ranks' traces merged into one Chrome-trace JSON (compute and communication on separate "
                  "tracks; opens in Perfetto)")
      ->check(output_file_check());
  cmd->add_option("--html", flags->html, "write one self-contained HTML page: diagnosis, scaling, waterfall, busbw, "
                                         "swimlanes, topology, provenance (opens offline)")
      ->check(output_file_check());
  cmd->add_option("--max-files", flags->limits.files_per_directory,
                  "read at most this many files of a directory given as input (the first in name order; the rest are "
                  "counted and named in one line)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{100'000'000}))->capture_default_str();
  cmd->add_option("--max-input-bytes", flags->limits.total_bytes,
                  "read at most this many bytes of input files in one run, as stored (a file past it is not read, with "
                  "an error)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 50))->capture_default_str();
  cmd->add_option("--max-trace-bytes", flags->trace_read.max_json_bytes,
                  "read at most this many bytes of JSON from one profiler trace (decompressed): a larger one is an error")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 50))->capture_default_str();
  cmd->add_option("--max-trace-events", flags->trace_read.max_events,
                  "read at most this many events from one profiler trace: a larger one is an error")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40))->capture_default_str();
  return [cmd, flags] { return cmd->parsed() ? run_analyze(*flags) : -1; };
}

}  // namespace scalescope::cli
