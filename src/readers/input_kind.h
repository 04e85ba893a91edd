#pragma once
// What a file given to `scalescope analyze` is: a PyTorch profiler (Kineto) trace, an NCCL debug log, PyTorch
// watchdog messages, an nccl-tests output (or its head without results), an `nvidia-smi topo -m` table, one of
// scalescope's own JSON reports, a training log, a launch command, an environment dump, a timing table, a Python
// profile, or the output of system tools (lspci, nvidia-smi, kernel log, p2pBandwidthLatencyTest, ibstat) — or none
// of them, with a message naming what was looked for. A text can be several at once (an
// nccl-tests run with NCCL_DEBUG=INFO, a training log holding NCCL lines and watchdog errors): every kind found
// is listed, and each gets its analysis.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/sweep.h"
#include "facts/facts.h"
#include "topo/topology.h"

namespace scalescope::analyze {

enum class InputKind {
  kineto_trace,     ///< PyTorch profiler / Kineto trace (.json, .json.gz) or a Chrome trace event array
  nccl_log,         ///< NCCL_DEBUG output: "… NCCL INFO …", "… NCCL WARN …", "NCCL version 2.x"
  watchdog,         ///< ProcessGroupNCCL watchdog messages: "WorkNCCL(SeqNum=…", "last enqueued NCCL work"
  nccl_tests,       ///< an nccl-tests (rccl-tests, NCCL 1.x tests) results table
  smi_topo,         ///< `nvidia-smi topo -m`
  scalescope_json,  ///< scalescope.train/1, scalescope.doctor/1, scalescope.comm/1, scalescope.topo/1
  nccl_tests_header,///< an nccl-tests output without result rows: its command, device list, failure lines
  training_log,     ///< a training job's output: framework warnings, timing lines, distributed errors
  launch_command,   ///< a launch command line (torchrun, mpirun, srun, python train.py …)
  environment,      ///< NAME=value settings (env, export)
  measurement_table,///< a timing / scaling / variant table or a pair list
  python_profile,   ///< cProfile / pstats output
  system_tools,     ///< lspci, nvidia-smi -q / nvlink / topo -p2p / -L, kernel log, p2pBandwidthLatencyTest, ibstat
  python_code,      ///< PyTorch training code (a .py script): wrappers, DataLoader, per-step host syncs
  report_text,      ///< prose about the job (an issue's text): its claims (a hang, what makes it work, a container…)
  nccl_profile,     ///< scalescope's NCCL profiler plugin: one communicator's collectives on one rank (JSON lines)
};
std::string_view to_string(InputKind k);

struct InputDetection {
  std::vector<InputKind> kinds;        ///< empty: not a recognised input (see `reason`)
  std::optional<std::string> schema;   ///< scalescope_json: the schema, e.g. "scalescope.doctor/1"
  std::vector<std::string> tools;      ///< system_tools: which tools' output ("lspci", "nvidia-smi -q" …)
  bool gzip = false;                   ///< the file is gzip-compressed (only traces are accepted so)
  /// How the kinds were recognised ("'traceEvents' in the first 64 KiB"), or, when `kinds` is empty, why
  /// the file is not an input and what was looked for.
  std::string reason;
  bool has(InputKind k) const;
};

/// What detection parsed to decide a kind, kept so that reading the file does not parse it again (each file is
/// parsed once per run): a member is set only when detection parsed that kind over the whole text with the file's
/// name as the source the reader would be given ("file " + name for a topology, as evidence::run reads one).
struct DetectionProducts {
  std::optional<nlohmann::json> scalescope_json;      ///< the parsed JSON of a scalescope report
  std::optional<std::vector<Sweep>> nccl_tests;        ///< parse_nccl_tests_tables(text, name)
  std::optional<topo::TopologyReading> smi_topo;       ///< topo::parse_smi_topo(text, "file " + name)
  std::optional<diagnose::Reading> measurement_table;  ///< read_measurement_tables(text, name)
  std::optional<diagnose::Reading> report_text;        ///< read_report_text(text, name)
  std::optional<diagnose::Reading> system_tools;       ///< read_system_tools(text, name)
};

/// Bytes detection looks at first; a trace is recognised from them alone, without reading the rest.
inline constexpr std::size_t kDetectionHeadBytes = 64 * 1024;

/// Detects the kinds of `text`, which is either the whole file (`complete`) or its first kDetectionHeadBytes.
/// `name` (the path) is used only for gzip files: a gzip file is a trace when its name ends in ".json.gz"
/// (detection does not decompress it); any other gzip file is not an input. A head that is not a trace, not
/// gzip and not binary gives kinds empty and reason "need the whole text" when `complete` is false: call
/// again with the whole text. Recognises:
///   * gzip magic 1f 8b; NUL bytes in the first 8 KiB (binary: not an input)
///   * a JSON object with "schema": "scalescope.…" (the whole text must parse as JSON)
///   * a JSON object with "traceEvents", "schemaVersion" or "distributedInfo"; a JSON array of events with
///     "ph" and "ts" (Chrome trace format, e.g. NCCL's profiler plugin)
///   * `nvidia-smi topo -m` (through topo::parse_smi_topo), nccl-tests output (through
///     analyze::parse_nccl_tests_tables, when the text has an nccl-tests header word: busbw, algbw, "# nThread",
///     "Collective test starting"; without result rows, its head through looks_like_nccl_tests_preamble), NCCL log
///     lines, watchdog messages (analyze::has_watchdog_messages);
///   * the readers' own tests: looks_like_training_log, looks_like_command (not in nccl-tests texts, whose command
///     lines the nccl-tests reader reads), looks_like_environment, looks_like_measurement_table (not in texts already
///     read as nccl-tests, topology or NCCL logs), looks_like_python_profile, detect_system_tools,
///     looks_like_report_text (prose).
/// Throws nothing.
InputDetection detect_input(std::string_view text, std::string_view name, bool complete);

/// detect_input, keeping in `*keep` what it parsed of the whole text (see DetectionProducts).
InputDetection detect_input(std::string_view text, std::string_view name, bool complete, DetectionProducts* keep);

/// A file read for analysis: its detection and, for every kind but traces, its whole text.
struct InputFile {
  std::string path;
  InputDetection detection;
  std::string text;  ///< empty for traces (their readers read the file themselves)
  DetectionProducts parsed;  ///< what detection parsed of `text`: the reading takes it instead of parsing again
  /// Bytes of the middle of a text larger than the excerpt asked for that were not read (0: the whole text). The
  /// text then holds the head, a line "[… N bytes not read …]", and the tail; line numbers of the tail count from
  /// that line, not from the file's start.
  std::uint64_t bytes_skipped = 0;
};

/// Reads the head of `path`, detects, and reads the whole file (at most 256 MiB) when it is not a trace. With
/// `excerpt_bytes` > 0, a text larger than that is read as its first and last excerpt_bytes / 2 (cut at line ends),
/// whatever its size: memory and time stay bounded for a job log of any length.
/// Throws core::Error when the file cannot be read (missing, a directory or device, too large, I/O error).
InputFile read_input_file(const std::string& path, std::uint64_t excerpt_bytes = 0);

}  // namespace scalescope::analyze
