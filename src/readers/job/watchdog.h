#pragma once
// Reads the messages PyTorch's ProcessGroupNCCL watchdog prints when a collective times out, in every format
// from 2022 to today, and says what they show across ranks: which collective each rank was stuck in, whether
// ranks disagree about it (a collective mismatch), which rank is behind, how late the timeout was noticed.
// Pure: no I/O except read_watchdog_file.
//
// Formats recognised (anywhere in a line, so prefixes, indentation, tqdm bars and log-viewer numbers before
// them do not matter):
//   [E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout:
//       WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 milliseconds before timing out.
//   [rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation
//       timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) ran for …
//   WorkNCCL(OpType=BROADCAST, TensorShape=[8], Timeout(ms)=1800000)          (PyTorch 1.x, no SeqNum)
//   [PG 1 Rank 0] Exception (either an error or timeout) detected by watchdog at work: 7753,
//       last enqueued NCCL work: 7755, last completed NCCL work: 7752.
//   [PG 0 (default_pg) Rank 7] …, [PG ID 0 PG GUID 0(default_pg) Rank 3] … (newer process-group names)
//   [Rank 1] Timeout at NCCL work: 880, last enqueued NCCL work: 881, last completed NCCL work: 879.
//   [rank1]:[E ProcessGroupNCCL.cpp:1182] [Rank 1] NCCL watchdog thread terminated with exception: [Rank 1] Watchdog caught …
//   what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated with exception: …
// Identical messages (PyTorch prints most twice: the watchdog's log line and the exception's text) are counted
// once, with the number of repeats.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/log_text.h"

namespace scalescope::analyze {

/// One collective that timed out on one rank. Every field the message does not print is absent.
struct WatchdogTimeout {
  std::optional<int> global_rank;          ///< "[rank3]:" (TORCH_CPP_LOG prefix: the rank in the default group)
  std::optional<int> group_rank;           ///< "[Rank 3]": the rank in the process group that timed out
  std::optional<std::string> process_group;///< "1", "0 (default_pg)", "ID 0 PG GUID 0(default_pg)"
  std::optional<std::string> op_type;      ///< as printed: "ALLREDUCE", "_REDUCE_SCATTER_BASE", "BROADCAST"…
  std::optional<std::uint64_t> seq_num;    ///< SeqNum: the collective's number in its process group
  std::optional<std::uint64_t> numel_in, numel_out;  ///< elements in and out
  std::optional<std::string> tensor_shape; ///< PyTorch 1.x "TensorShape=[…]"
  std::optional<std::uint64_t> timeout_ms; ///< Timeout(ms)
  std::optional<std::uint64_t> elapsed_ms; ///< "ran for N milliseconds"
  /// From the companion line of the same rank and SeqNum ("detected by watchdog at work: N, last enqueued NCCL
  /// work: E, last completed NCCL work: C"): the newest collective this rank had enqueued and completed.
  std::optional<std::uint64_t> last_enqueued, last_completed, last_started;
  std::optional<std::string> timestamp;    ///< glog's "E321 02:07:08.408271257" (month-day, time)
  std::size_t line = 0;                    ///< first line that printed it
  std::size_t repeats = 0;                 ///< further identical messages
};

/// A "last enqueued / last completed" line ("[PG 1 Rank 0] Exception … at work: 7753, last enqueued NCCL work:
/// 7755, last completed NCCL work: 7752.").
struct WatchdogWorkState {
  std::optional<int> global_rank, group_rank;
  std::optional<std::string> process_group;
  std::optional<std::uint64_t> at_work, last_enqueued, last_completed, last_started;
  std::size_t line = 0;
};

/// Everything read from one text.
struct WatchdogLog {
  std::string source;
  std::size_t lines = 0;
  std::vector<WatchdogTimeout> timeouts;       ///< in order of first appearance, duplicates merged
  std::vector<WatchdogWorkState> work_states;  ///< those not merged into a timeout
  /// Other ProcessGroupNCCL error lines: "Some NCCL operations have failed or timed out…", "… watchdog thread
  /// terminated with exception…" without a WorkNCCL, "NCCL error…", with their line numbers.
  std::vector<std::pair<std::size_t, std::string>> other_errors;
  std::vector<std::string> notes;              ///< how damaged or ambiguous lines were read
  std::map<std::size_t, std::string> evidence_lines;  ///< excerpts of the lines facts refer to
};

/// True when the text holds at least one watchdog timeout or ProcessGroupNCCL error line (what input
/// detection asks).
bool has_watchdog_messages(std::string_view text);

/// Parses `text`; `source` names it in evidence. Never throws; a text without watchdog lines gives an
/// empty WatchdogLog.
WatchdogLog parse_watchdog(std::string_view text, std::string source = "text");

/// Reads `path` (at most 256 MiB) and parses it. Throws core::Error when it cannot be read.
WatchdogLog read_watchdog_file(const std::string& path);

/// One row of the cross-rank table: what one rank reported.
struct WatchdogRankState {
  std::string rank;  ///< "rank 3" (global), "Rank 3" (group rank), or "Rank 3 in PG 1"
  WatchdogTimeout timeout;
  std::string source;
};

/// Thresholds.
struct WatchdogOptions {
  /// The watchdog noticed the timeout late when elapsed − timeout exceeds both this (ms) and the timeout
  /// itself: the watchdog checks every few seconds, so minutes late means its thread was blocked. 60 s.
  std::uint64_t late_detection_ms = 60000;
  /// A timeout below this (ms) trips on ordinary collectives (the first one includes connection set-up). 60 s.
  std::uint64_t short_timeout_ms = 60000;
};

struct WatchdogAnalysis {
  std::vector<WatchdogRankState> ranks;  ///< one per distinct timeout, ordered by process group, rank, SeqNum
  std::vector<LogFinding> findings;      ///< errors first
  /// The one-line cross-rank verdict ("rank 3 timed out in ALLREDUCE #80078 after 600 s while rank 7 was in
  /// BROADCAST #80078: collective mismatch"), or what the messages allow to say.
  std::string verdict;
  /// The same judgements as flags, for the diagnosis: different collectives (or element counts) at one SeqNum;
  /// ranks stuck at different SeqNums, and the rank labels at the lowest one ("rank 3").
  bool op_mismatch = false;
  bool seq_mismatch = false;
  std::vector<std::string> behind;
};

/// Cross-rank findings over one or several texts (e.g. one log per rank):
///   * collective mismatch: different OpType (or element counts) at the same SeqNum in one group — error
///   * ranks at different SeqNums in one group: the lowest is behind — error
///   * all reporting ranks in the same collective — info (who is missing)
///   * late detection (elapsed ≫ timeout) — warning; very short timeouts — warning
///   * NumelIn ≠ NumelOut: a reduce-scatter or all-gather, the ratio = the group size — info
///   * a [Rank N] label seen at several SeqNums: several process groups, no straggler named — info
/// Throws nothing.
WatchdogAnalysis analyze_watchdog(std::span<const WatchdogLog> logs, const WatchdogOptions& options = {});

void to_json(nlohmann::json& j, const WatchdogTimeout& t);
void to_json(nlohmann::json& j, const WatchdogLog& log);
void to_json(nlohmann::json& j, const WatchdogAnalysis& a);

}  // namespace scalescope::analyze
