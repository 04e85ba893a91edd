#include "report/analysis_report.h"

#include <filesystem>
#include <map>
#include <string_view>

#include <fmt/format.h>

#include "diagnose/catalogue.h"
#include "report/html_builders.h"
#include "report/nccl_profile_report.h"
#include "report/nccl_tests_table.h"
#include "report/topo_report.h"
#include "report/trace_report.h"
#include "text/log_text.h"

namespace scalescope::report {
namespace {

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

}  // namespace

std::string render_catalogue() {
  std::string out = "causes the diagnosis knows (the shared vocabulary of cause ids, plus scalescope's additions):\n";
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


std::string render_file(const evidence::FileResult& r) {
  if (!r.skipped.empty()) return "== " + r.path + " (skipped: not a kind analyze reads)\n";
  std::string out = "== " + r.path + (r.detection.kinds.empty() ? "" : " (" + kinds_text(r.detection) + ")") + "\n";
  if (r.bytes_skipped > 0)
    out += fmt::format("  note: {} bytes of its middle were not read (its first and last {} KiB were)\n", r.bytes_skipped,
                       r.excerpt_bytes / 2048);
  if (!r.detection.kinds.empty()) {
    if (!r.detection.has(analyze::InputKind::kineto_trace)) out += facts_line(r.facts);
    for (const auto& note : r.notes) out += "  note: " + analyze::excerpt(note, 300) + "\n";
  }
  for (auto kind : r.detection.kinds) {
    switch (kind) {
      case analyze::InputKind::kineto_trace:
        if (r.trace_rank) out += fmt::format("profiler trace of rank {}: see the traces' report below\n", *r.trace_rank);
        break;
      case analyze::InputKind::nccl_log:
        if (r.nccl_log) out += "NCCL log:\n" + render_nccl(r.nccl_log->second);
        break;
      case analyze::InputKind::watchdog:
        if (r.watchdog) out += "watchdog:\n" + render_watchdog(r.watchdog->second);
        break;
      case analyze::InputKind::nccl_tests:
        for (const auto& t : r.nccl_tests) {
          out += fmt::format("nccl-tests: {}, {} row(s), {} rank(s){}\n", comm::perf_program_name(t.sweep.collective),
                             t.sweep.rows.size(), t.sweep.ranks ? std::to_string(*t.sweep.ranks) : "unknown",
                             r.nccl_tests.size() > 1 ? " — " + t.sweep.source : std::string());
          out += render_comm_summary(t.sweep, t.analysis);
          for (const auto& w : t.sweep.warnings) out += "  note: " + w + "\n";
        }
        break;
      case analyze::InputKind::smi_topo:
        if (r.topo) out += "nvidia-smi topo -m:\n" + render_topo_summary(*r.topo);
        break;
      case analyze::InputKind::scalescope_json:
        if (r.scalescope_json) out += "  " + r.scalescope_json->line + "\n";
        break;
      case analyze::InputKind::nccl_profile:
        if (r.nccl_profile) out += render_nccl_profile(r.nccl_profile->profile, r.nccl_profile->summary);
        break;
      default:
        break;  // read for the diagnosis only: the facts line above says what they gave
    }
  }
  return out;
}

std::string render_skipped_summary(const evidence::Analysis& a) {
  std::size_t skipped = 0;
  std::map<std::string, std::size_t> by_reason;
  for (const auto& r : a.files)
    if (!r.skipped.empty()) ++skipped, ++by_reason[r.skipped];
  if (skipped <= kSkippedListed) return "";
  std::string reasons;
  for (const auto& [why, n] : by_reason) reasons += fmt::format("{}  {} × {}", reasons.empty() ? "" : "\n", n, why);
  return fmt::format("== skipped {} files that no reader recognises ({} named above):\n{}\n", skipped, kSkippedListed, reasons);
}

std::string render_traces_together(const evidence::Analysis& a) {
  // Each file's errors are reported with that file; with no rank analysed there is no joint report.
  if (!a.traces || a.traces->ranks.empty()) return "";
  return "\n== profiler traces, all ranks together\n" + render_trace_report(*a.traces, false);
}

std::string render_logs_together(const evidence::Analysis& a) {
  std::string out;
  if (a.nccl_logs) out += fmt::format("\n== all {} NCCL logs together\n", a.nccl_log_files) + render_nccl(*a.nccl_logs, true);
  if (a.watchdogs)
    out += fmt::format("\n== watchdog messages of all {} files together\n", a.watchdog_files) + render_watchdog(*a.watchdogs, true);
  return out;
}

nlohmann::json problems_json(const std::vector<evidence::Problem>& problems) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : problems) out.push_back({{"cause", analyze::to_valid_utf8(p.cause)}, {"remedy", analyze::to_valid_utf8(p.remedy)}});
  return out;
}

namespace {

nlohmann::json file_json(const evidence::FileResult& r) {
  if (!r.skipped.empty())
    return {{"file", analyze::to_valid_utf8(r.path)}, {"status", "skipped"}, {"detection", analyze::to_valid_utf8(r.skipped)}};
  nlohmann::json j = nlohmann::json::object();
  if (r.nccl_log) j["nccl_log"] = {{"log", r.nccl_log->first}, {"analysis", r.nccl_log->second}};
  if (r.watchdog) j["watchdog"] = {{"log", r.watchdog->first}, {"analysis", r.watchdog->second}};
  if (r.nccl_tests_read) {
    nlohmann::json reports = nlohmann::json::array();
    for (const auto& t : r.nccl_tests) reports.push_back(analyze::comm_report_json(t.sweep, t.analysis));
    // One table: its report, as before; several: the shape `comm --out` writes for them.
    j["nccl_tests"] = reports.size() == 1 ? reports[0] : analyze::comm_reports_json(reports);
  }
  if (r.topo) j["topo"] = *r.topo;
  if (r.scalescope_json) j["scalescope_json"] = r.scalescope_json->summary;
  if (r.nccl_profile) {
    const auto& p = r.nccl_profile->profile;
    nlohmann::json sweeps = nlohmann::json::array();
    for (const auto& s : r.nccl_profile->sweeps) sweeps.push_back(analyze::comm_report_json(s.sweep, s.analysis));
    j["nccl_profile"] = {{"rank", p.rank}, {"nranks", p.nranks}, {"nnodes", p.nnodes}, {"comm_id", p.comm_id},
                         {"host", p.host}, {"summary", r.nccl_profile->summary}, {"sweeps", sweeps}};
  }
  if (r.trace_rank) j["trace"] = {{"rank", *r.trace_rank}};
  nlohmann::json kinds = nlohmann::json::array();
  for (auto k : r.detection.kinds) kinds.push_back(std::string(analyze::to_string(k)));
  j["file"] = analyze::to_valid_utf8(r.path);
  j["kinds"] = kinds;
  j["detection"] = analyze::to_valid_utf8(r.detection.reason);
  j["errors"] = problems_json(r.errors);
  j["status"] = r.errors.empty() ? "ok" : "error";
  j["facts"] = r.facts.size();
  return j;
}

}  // namespace

nlohmann::json analysis_json(const evidence::Analysis& a, const std::vector<evidence::Problem>& timeline_errors) {
  nlohmann::json inputs = {{"directories", nlohmann::json::array()}};
  for (const auto& d : a.inputs.directories)
    inputs["directories"].push_back({{"path", analyze::to_valid_utf8(d.path)}, {"files", d.files}, {"omitted", d.omitted}});
  nlohmann::json files = nlohmann::json::array();
  std::size_t skipped = 0;
  std::map<std::string, std::size_t> by_reason;
  for (const auto& r : a.files) {
    if (!r.skipped.empty()) {
      ++by_reason[r.skipped];
      if (++skipped > kSkippedListed) continue;
    }
    files.push_back(file_json(r));
  }
  inputs["skipped"] = {{"count", skipped}, {"by_reason", nlohmann::json::object()}};
  for (const auto& [why, n] : by_reason) inputs["skipped"]["by_reason"][analyze::to_valid_utf8(why)] = n;
  nlohmann::json combined = nlohmann::json::object();
  if (a.traces) combined["trace"] = *a.traces;
  if (a.nccl_logs) combined["nccl_log"] = *a.nccl_logs;
  if (a.watchdogs) combined["watchdog"] = *a.watchdogs;
  if (!a.baseline_errors.empty()) combined["baseline_errors"] = problems_json(a.baseline_errors);
  if (!timeline_errors.empty()) combined["timeline_errors"] = problems_json(timeline_errors);
  return {{"schema", "scalescope.analyze/1"}, {"inputs", inputs}, {"files", files}, {"combined", combined},
          {"diagnosis", a.diagnosis}, {"facts", nlohmann::json(a.facts)["facts"]}};
}

void add_analysis(HtmlPage& page, const evidence::Analysis& a) {
  for (const auto& r : a.files) {
    for (auto kind : r.detection.kinds) {
      if (kind == analyze::InputKind::nccl_tests)
        for (const auto& t : r.nccl_tests) add_sweep(page, t.sweep, std::nullopt, "");
      if (kind == analyze::InputKind::smi_topo && r.topo) add_topology(page, nlohmann::json(*r.topo)["topology"]);
      if (kind == analyze::InputKind::scalescope_json && r.scalescope_json && r.scalescope_json->run_report &&
          r.detection.schema == "scalescope.doctor/1")
        add_doctor(page, *r.scalescope_json->run_report);
      if (kind == analyze::InputKind::nccl_profile && r.nccl_profile)
        for (const auto& s : r.nccl_profile->sweeps) add_sweep(page, s.sweep, std::nullopt, "");
    }
  }
  if (a.traces) add_lanes(page, *a.traces);
  page.diagnosis = a.diagnosis;  // the diagnosis over every input, not a doctor report's own
}

}  // namespace scalescope::report
