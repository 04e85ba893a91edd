#include "readers/input_kind.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "readers/job/launch_env.h"
#include "text/log_text.h"
#include "readers/nccl/nccl_tests_parser.h"
#include "readers/nccl/nccl_tests_preamble.h"
#include "readers/job/python_profile.h"
#include "readers/nccl/nccl_profile.h"
#include "readers/code/python_code.h"
#include "readers/prose/report_text.h"
#include "readers/system/system_tools.h"
#include "readers/tables/tables.h"
#include "readers/job/training_log.h"
#include "readers/job/watchdog.h"
#include "core/error.h"
#include "core/parse_count.h"
#include "topo/smi_topo_parser.h"

namespace scalescope::analyze {
namespace {

bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// The first character that is not blank or a UTF-8 byte-order mark.
char first_significant(std::string_view s) {
  if (s.substr(0, 3) == "\xEF\xBB\xBF") s.remove_prefix(3);
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') return c;
  return '\0';
}

// A markdown table row ("| file | what it is | … |"): documentation quoting log lines, not a log.
bool is_table_row(std::string_view line) {
  line = trim_blanks(line);
  return line.size() >= 2 && line.front() == '|' && line.back() == '|';
}

// NCCL log lines: a level tag after NCCL's "[dev]" prefix or at the start of the line (prefix stripped), or
// "NCCL version 2…" (NCCL_DEBUG=VERSION). Quotes in prose and tables do not count.
// "path/file.cc:123": the source location NCCL prints before WARN.
bool is_location_token(std::string_view t) {
  const auto c = t.rfind(':');
  if (c == std::string_view::npos || c == 0 || c + 1 >= t.size()) return false;
  if (!parse_decimal(t.substr(c + 1))) return false;
  const auto dot = t.rfind('.', c);
  return dot != std::string_view::npos && dot > 0 && dot + 1 < c;
}

// NCCL's own message grammars, quoted without any prefix: a connection ("9[1a000] -> 2[6b000] [send] via NET/IB/0")
// or a setting ("NCCL_P2P_LEVEL set by environment to LOC").
bool bare_nccl_message(std::string_view line) {
  line = trim_blanks(line);
  if (line.empty()) return false;
  if (line.front() >= '0' && line.front() <= '9') {
    const auto arrow = line.find(" -> "), via = line.find(" via ");
    if (arrow == std::string_view::npos || via == std::string_view::npos || via < arrow) return false;
    const auto open = line.find('[');
    return open != std::string_view::npos && open < arrow &&
           (contains(line.substr(via), "P2P") || contains(line.substr(via), "SHM") || contains(line.substr(via), "NET/"));
  }
  return line.substr(0, 5) == "NCCL_" && (contains(line, " set by environment to ") || contains(line, " set to ")) &&
         line.find(' ') > 5 && line.substr(5, line.find(' ') - 5).find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") ==
                                   std::string_view::npos;
}

bool has_nccl_lines(std::string_view text, bool version_counts) {
  for (auto line : split_lines(text)) {
    if (is_table_row(line)) continue;
    if (bare_nccl_message(line)) return true;
    for (std::string_view tag : {"NCCL INFO", "NCCL WARN", "NCCL TRACE"}) {
      const auto p = line.find(tag);
      if (p == std::string_view::npos) continue;
      std::string_view before = trim_blanks(line.substr(0, p));
      if (before.empty() || is_location_token(before)) return true;
      // "... [5]" or "... [5] misc/socket.cc:46" before the tag
      for (int k = 0; k < 2 && !before.empty(); ++k) {
        const auto sp = before.find_last_of(" \t");
        std::string_view tok = sp == std::string_view::npos ? before : before.substr(sp + 1);
        if (tok.size() >= 3 && tok.front() == '[' && tok.back() == ']' && parse_decimal(tok.substr(1, tok.size() - 2)))
          return true;
        before = sp == std::string_view::npos ? std::string_view() : trim_blanks(before.substr(0, sp));
      }
    }
    if (version_counts) {
      const auto p = line.find("NCCL version 2");
      if (p != std::string_view::npos && trim_blanks(line.substr(0, p)).size() < 80) return true;
    }
  }
  return false;
}

bool has_watchdog_lines(std::string_view text) {
  if (!has_watchdog_messages(text)) return false;
  for (auto line : split_lines(text))
    if (!is_table_row(line) && has_watchdog_messages(line)) return true;
  return false;
}

const char* kLookedFor =
    "looked for a PyTorch profiler (Kineto) trace (JSON with traceEvents, schemaVersion or distributedInfo; "
    ".json.gz), NCCL debug log lines ('NCCL INFO', 'NCCL WARN'), PyTorch watchdog messages (WorkNCCL(…), "
    "ProcessGroupNCCL), an nccl-tests output (size … algbw busbw, or its '# nThread' head and device list), an "
    "`nvidia-smi topo -m` matrix (GPU0 …), scalescope's own JSON (schema scalescope.*/1), training-log lines "
    "(framework warnings, it/s and step-time lines, NCCL errors), a launch command (torchrun, mpirun, python x.py), "
    "NAME=value settings, a timing table or pair list, a cProfile listing, and lspci / nvidia-smi / kernel-log / "
    "p2pBandwidthLatencyTest / ibstat output, PyTorch training code, and prose about the job";

}  // namespace

std::string_view to_string(InputKind k) {
  switch (k) {
    case InputKind::kineto_trace: return "kineto_trace";
    case InputKind::nccl_log: return "nccl_log";
    case InputKind::watchdog: return "watchdog";
    case InputKind::nccl_tests: return "nccl_tests";
    case InputKind::smi_topo: return "smi_topo";
    case InputKind::scalescope_json: return "scalescope_json";
    case InputKind::nccl_tests_header: return "nccl_tests_header";
    case InputKind::training_log: return "training_log";
    case InputKind::launch_command: return "launch_command";
    case InputKind::environment: return "environment";
    case InputKind::measurement_table: return "measurement_table";
    case InputKind::python_profile: return "python_profile";
    case InputKind::system_tools: return "system_tools";
    case InputKind::python_code: return "python_code";
    case InputKind::report_text: return "report_text";
    case InputKind::nccl_profile: return "nccl_profile";
  }
  return "unknown";
}

namespace {

// A JSON member "generator": "<name>" in `text`, with any blanks around the colon (a file re-saved by jq & co.).
bool names_generator(std::string_view text, std::string_view name) {
  for (std::size_t at = text.find("\"generator\""); at != std::string_view::npos;
       at = text.find("\"generator\"", at + 1)) {
    std::size_t p = at + 11;
    const auto blanks = [&] {
      while (p < text.size() && (text[p] == ' ' || text[p] == '\t' || text[p] == '\n' || text[p] == '\r')) ++p;
    };
    blanks();
    if (p >= text.size() || text[p] != ':') continue;
    ++p;
    blanks();
    if (text.substr(p, name.size() + 2) == "\"" + std::string(name) + "\"") return true;
  }
  return false;
}

}  // namespace

bool InputDetection::has(InputKind k) const { return std::find(kinds.begin(), kinds.end(), k) != kinds.end(); }

InputDetection detect_input(std::string_view text, std::string_view name, bool complete) {
  return detect_input(text, name, complete, nullptr);
}

InputDetection detect_input(std::string_view text, std::string_view name, bool complete, DetectionProducts* keep) {
  InputDetection d;
  DetectionProducts kept;  // what was parsed; handed to `keep` at the end
  const std::string source(name);
  if (text.empty()) {
    d.reason = "the file is empty";
    return d;
  }
  if (text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f && static_cast<unsigned char>(text[1]) == 0x8b) {
    d.gzip = true;
    if (ends_with(name, ".json.gz")) {
      d.kinds = {InputKind::kineto_trace};
      d.reason = "gzip-compressed and named *.json.gz: a PyTorch profiler trace";
    } else {
      d.reason = "a gzip-compressed file not named *.json.gz; decompress it (zcat FILE > FILE.txt) and pass the text";
    }
    return d;
  }
  // The NCCL profiler plugin's JSON lines, before the binary test: a file whose writer died can end in NUL bytes.
  if (looks_like_nccl_profile(text.substr(0, kDetectionHeadBytes))) {
    d.kinds = {InputKind::nccl_profile};
    d.reason = fmt::format("a first line with \"schema\": \"{}\": scalescope's NCCL profiler plugin", kNcclProfileSchema);
    return d;
  }
  const std::string_view head = text.substr(0, 8192);
  if (head.find('\0') != std::string_view::npos) {
    d.reason = "a binary file (NUL bytes in its first 8 KiB), not a text or JSON input";
    return d;
  }
  const std::string_view peek = text.substr(0, kDetectionHeadBytes);
  const char first = first_significant(peek);
  if (first == '{') {
    if (contains(peek, "\"schema\"") && contains(peek, "\"scalescope.")) {
      if (!complete) {
        d.reason = "need the whole text";
        return d;
      }
      try {
        core::count_parse("scalescope_json", text);
        auto j = nlohmann::json::parse(text);
        if (j.is_object() && j.contains("schema") && j["schema"].is_string()) {
          const std::string schema = j["schema"].get<std::string>();
          if (schema.rfind("scalescope.", 0) == 0) {
            d.kinds = {InputKind::scalescope_json};
            d.schema = schema;
            d.reason = "JSON with \"schema\": \"" + schema + "\"";
            if (keep) keep->scalescope_json = std::move(j);
            return d;
          }
        }
      } catch (const nlohmann::json::exception& e) {
        d.reason = std::string("JSON that names a scalescope schema but does not parse: ") + e.what();
        return d;
      }
    }
    // The merged timeline of `analyze --timeline` (chrome_trace_writer.cpp) is a trace of all ranks at once: read
    // as one rank's, a re-run over *.json would count it as another rank that idles 100 % of the step.
    if (names_generator(peek, "scalescope analyze")) {
      d.reason = "the merged timeline of all ranks that `scalescope analyze --timeline` wrote (for Perfetto), not "
                 "one rank's profiler trace: leave it out of the inputs";
      return d;
    }
    for (std::string_view key : {"\"traceEvents\"", "\"schemaVersion\"", "\"distributedInfo\""})
      if (contains(peek, key)) {
        d.kinds = {InputKind::kineto_trace};
        d.reason = fmt::format("JSON with {} in its first 64 KiB: a PyTorch profiler (Kineto) trace", key);
        return d;
      }
  }
  if (first == '[' && contains(peek, "\"ph\"") && contains(peek, "\"ts\"")) {
    d.kinds = {InputKind::kineto_trace};
    d.reason = "a JSON array of events with \"ph\" and \"ts\": a Chrome-format trace";
    return d;
  }
  if (!complete) {
    d.reason = "need the whole text";
    return d;
  }
  std::vector<std::string> how;
  std::string tests_error;
  // The footer words too: the tail of a long output pasted without its header still ends with them.
  const bool tests_words = contains(text, "busbw") || contains(text, "algbw") || contains(text, "# nThread") ||
                           contains(text, "Collective test starting") || contains(text, "Avg bus bandwidth") ||
                           contains(text, "Out of bounds values");
  if (tests_words) {
    try {
      kept.nccl_tests = parse_nccl_tests_tables(text, source);
      d.kinds.push_back(InputKind::nccl_tests);
      how.push_back("an nccl-tests results table");
    } catch (const core::Error& e) {
      tests_error = e.what();
    }
  }
  if (contains(text, "GPU0")) {
    try {
      kept.smi_topo = topo::parse_smi_topo(text, "file " + source);
      d.kinds.push_back(InputKind::smi_topo);
      how.push_back("an `nvidia-smi topo -m` matrix");
    } catch (const core::Error&) {
    }
  }
  if (has_nccl_lines(text, !d.has(InputKind::nccl_tests))) {
    d.kinds.push_back(InputKind::nccl_log);
    how.push_back("NCCL debug log lines");
  }
  if (has_watchdog_lines(text)) {
    d.kinds.push_back(InputKind::watchdog);
    how.push_back("PyTorch ProcessGroupNCCL watchdog messages");
  }
  if (!d.has(InputKind::nccl_tests) && looks_like_nccl_tests_preamble(text)) {
    d.kinds.push_back(InputKind::nccl_tests_header);
    how.push_back(tests_error.empty() ? "the head of an nccl-tests output (no result rows)"
                                      : "the head of an nccl-tests output without result rows (the run failed or the paste was cut)");
    tests_error.clear();
  }
  if (looks_like_training_log(text)) {
    d.kinds.push_back(InputKind::training_log);
    how.push_back("training-log lines");
  }
  const bool tests_text = d.has(InputKind::nccl_tests) || d.has(InputKind::nccl_tests_header);
  // A training log reads the command lines inside it itself; read again as commands they would count twice.
  if (!tests_text && !d.has(InputKind::training_log) && looks_like_command(text)) {
    d.kinds.push_back(InputKind::launch_command);
    how.push_back("a launch command");
  }
  if (looks_like_environment(text)) {
    d.kinds.push_back(InputKind::environment);
    how.push_back("NAME=value settings");
  }
  if (!tests_text && !d.has(InputKind::smi_topo) && !d.has(InputKind::nccl_log) &&
      (kept.measurement_table = read_measurement_tables_if_any(text, source))) {
    d.kinds.push_back(InputKind::measurement_table);
    how.push_back("a table of measurements");
  }
  if (looks_like_python_profile(text)) {
    d.kinds.push_back(InputKind::python_profile);
    how.push_back("a Python (cProfile) profile");
  }
  const bool py_name = name.size() > 3 && name.substr(name.size() - 3) == ".py";
  if (looks_like_python_code(text) || (py_name && d.kinds.empty() && contains(text, "torch"))) {
    d.kinds.push_back(InputKind::python_code);
    how.push_back("PyTorch training code");
  } else if ((kept.report_text = read_report_text_if_prose(text, source))) {
    d.kinds.push_back(InputKind::report_text);
    how.push_back("prose about the job");
  }
  std::vector<std::string> tools;
  if ((kept.system_tools = read_system_tools_if_any(text, source, tools))) {
    d.kinds.push_back(InputKind::system_tools);
    std::string list;
    for (const auto& t : tools) list += (list.empty() ? "" : ", ") + t;
    how.push_back("output of " + list);
    d.tools = std::move(tools);
  }
  if (!d.kinds.empty()) {
    for (const auto& h : how) d.reason += (d.reason.empty() ? "" : ", ") + h;
    if (keep) *keep = std::move(kept);
    return d;
  }
  d.reason = "not a recognised input: " + std::string(kLookedFor);
  if (!tests_error.empty()) d.reason += "; it has nccl-tests words but " + tests_error;
  return d;
}

namespace {

/// The first and last `half` bytes of the regular file `path` of `size` bytes, cut at line ends, with one line
/// between them saying how much was passed over (InputFile::bytes_skipped).
std::string head_and_tail(const std::string& path, std::uint64_t size, std::uint64_t half, std::uint64_t& skipped) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw core::Error(fmt::format("cannot open '{}': {}", path, std::strerror(errno)), "check the path and its permissions");
  std::string head(static_cast<std::size_t>(half), '\0'), tail(static_cast<std::size_t>(half), '\0');
  in.read(head.data(), static_cast<std::streamsize>(half));
  in.seekg(static_cast<std::streamoff>(size - half));
  in.read(tail.data(), static_cast<std::streamsize>(half));
  if (!in) throw core::Error(fmt::format("cannot read '{}': read error", path), "check the disk and the file");
  if (const auto nl = head.rfind('\n'); nl != std::string::npos) head.resize(nl + 1);
  if (const auto nl = tail.find('\n'); nl != std::string::npos) tail.erase(0, nl + 1);
  skipped = size - head.size() - tail.size();
  return head + fmt::format("[… {} bytes of this file not read: only its first and last {} KiB are …]\n", skipped, half >> 10) + tail;
}

}  // namespace

InputFile read_input_file(const std::string& path, std::uint64_t excerpt_bytes) {
  InputFile f;
  f.path = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw core::Error(fmt::format("cannot open '{}': {}", path, std::strerror(errno)), "check the path and its permissions");
    std::string head(kDetectionHeadBytes, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    const bool complete = static_cast<std::uint64_t>(st.st_size) <= head.size();
    f.detection = detect_input(head, path, complete, &f.parsed);
    if (complete || f.detection.has(InputKind::kineto_trace) || f.detection.gzip ||
        (f.detection.kinds.empty() && f.detection.reason != "need the whole text")) {
      if (!f.detection.has(InputKind::kineto_trace)) f.text = std::move(head);
      return f;
    }
  }
  // Not a regular file (read_text_file names the problem), or a text longer than the head.
  if (excerpt_bytes > 0 && S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > excerpt_bytes) {
    f.text = head_and_tail(path, static_cast<std::uint64_t>(st.st_size), excerpt_bytes / 2, f.bytes_skipped);
    f.detection = detect_input(f.text, path, true, &f.parsed);
    return f;
  }
  f.text = read_text_file(path, "input", 256ull << 20);
  f.detection = detect_input(f.text, path, true, &f.parsed);
  return f;
}

}  // namespace scalescope::analyze
