#pragma once
// Reads the text that nccl-tests (NVIDIA/nccl-tests), rccl-tests and NCCL 1.x's test programs print, as it
// is found in the wild: pasted into issues, prefixed by launchers, interleaved with NCCL's log, cut off.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comm/sweep.h"
#include "comm/collectives.h"

namespace scalescope::analyze {

struct NcclTestsParseOptions {
  /// The collective the caller knows was run. The program named in the text (e.g. "# Collective test
  /// starting: alltoall_perf" or "./build/all_reduce_perf" on a command line) wins over it, with a warning
  /// when they differ; otherwise it is used, with a warning when the columns contradict it.
  std::optional<comm::Collective> hint;
  /// Used, with a warning, when neither the text, the hint nor the columns (redop, root, count versus
  /// size, busbw/algbw) single out one collective, unless the columns rule it out: then the first collective
  /// they fit (in comm::Collective order) is read, with the same warning.
  comm::Collective fallback = comm::Collective::all_reduce;
};

/// Parses one nccl-tests output into a Sweep. `source_name` (e.g. the file name) goes into Sweep::source
/// beside the tool and version read from the text ("nccl-tests 2.17.8 (run.log)").
///
/// Reads: the current layout (size count type redop root | time algbw busbw #wrong, out-of-place then
/// in-place), older layouts without the root and/or redop column, "error" instead of "#wrong" (0e+00,
/// 3e+02, N/A), per-iteration columns (i_min … i_cv%, skipped with a note) and a trailing timestamp, NCCL 1.x
/// test tables ("bytes N type op time algbw busbw res", time in ms, converted to µs), rows prefixed by
/// launchers ("[1,0]<stdout>:", "0: ") or by other text, headers that lost their '#', collapsed
/// whitespace, NCCL INFO/WARN lines, prompts, markdown, rccl-tests' version line and the footer
/// "# Avg bus bandwidth".
///
/// Never guesses silently: an absent or unreadable value is std::nullopt, and each line that looks like a
/// row but is cut off or unreadable adds a warning naming its line number (1-based), as do rank counts or
/// collectives that are derived rather than read, repeated headers and repeated sizes. Lines that are not
/// part of the table (prompts, NCCL log lines, comments) are skipped without a warning.
///
/// Throws core::Error when the text holds no result row at all (naming whether it looks like an nccl-tests
/// output cut off before its table, or foreign text). Throws nothing else.
Sweep parse_nccl_tests(std::string_view text, std::string source_name, const NcclTestsParseOptions& options);
/// As above with default options (no hint, fallback all_reduce).
Sweep parse_nccl_tests(std::string_view text, std::string source_name);

/// Reads the file at `path` (any size up to 64 MiB) and parses it; Sweep::source names the file.
/// Throws core::Error when the file cannot be read (naming the path and the reason), is larger than 64 MiB,
/// or holds no result row.
Sweep read_nccl_tests_file(const std::string& path, const NcclTestsParseOptions& options = {});

/// At most this many results tables are read from one text (parse_nccl_tests_tables).
inline constexpr std::size_t kMaxNcclTestsTables = 256;

/// A text holding the outputs of several tests or runs one after another (a script running all_reduce_perf, then
/// all_gather_perf…; `scalescope comm --collective all`), one Sweep per results table, in order. parse_nccl_tests
/// refuses such a text rather than pool its tables. The text is cut after each table's part: its rows, footer and
/// what follows them up to the next test's first line (its version or "Collective test starting" line, "nThread"
/// line, device list, a command line naming its program, or the header line scalescope prints above a table; after
/// the footer when none of these comes). Each part is parsed on its own, as parse_nccl_tests does, so its warnings
/// and collective are its own; warnings keep the whole text's line numbers, and the sources of a text with several
/// tables name their lines (Sweep::source "nccl-tests 2.17.8 (run.log, lines 1–40)"). A last part cut off before its first result row is not read,
/// with a warning on the table before it. A text with one table gives what parse_nccl_tests gives.
/// Throws core::Error as parse_nccl_tests does for a part that is not read, and for more than kMaxNcclTestsTables.
std::vector<Sweep> parse_nccl_tests_tables(std::string_view text, const std::string& source_name,
                                           const NcclTestsParseOptions& options = {});
/// parse_nccl_tests_tables on the file at `path`; throws core::Error as read_nccl_tests_file does.
std::vector<Sweep> read_nccl_tests_tables(const std::string& path, const NcclTestsParseOptions& options = {});

}  // namespace scalescope::analyze
