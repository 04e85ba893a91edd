#pragma once
// What `scalescope analyze` (and `profile`, over its job directory) prints and writes of an evidence::Analysis: each
// file's block for the terminal, the views across files, the JSON document (schema scalescope.analyze/1) and the
// HTML page's sections. Renders only: everything here was read and decided by evidence::run().

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "evidence/run.h"
#include "report/html_report.h"

namespace scalescope::report {

/// The cause catalogue as `analyze --causes` prints it: every id with what supports it, what rules it out, how its
/// cost is estimated, the fix, the confirming command and the source.
std::string render_catalogue();

/// At most this many files that no reader recognises are named one by one (in the terminal and the JSON); the rest
/// are counted by reason, so that a directory of a million files gives a report of a few lines.
inline constexpr std::size_t kSkippedListed = 10;

/// One file's block: "== PATH (kinds)" and what it shows ("== PATH (skipped: …)" for a skipped file). Its errors
/// are not in it: the command says them on stderr after the block.
std::string render_file(const evidence::FileResult& file);

/// "== skipped N files …" with the count per reason, when more files were skipped than kSkippedListed ("" else).
std::string render_skipped_summary(const evidence::Analysis& analysis);

/// The profiler traces of every rank together ("" when no rank was analysed).
std::string render_traces_together(const evidence::Analysis& analysis);

/// The NCCL logs and the watchdog messages of several files together ("" when there were fewer than two of each).
std::string render_logs_together(const evidence::Analysis& analysis);

/// [{"cause", "remedy"}…], valid UTF-8.
nlohmann::json problems_json(const std::vector<evidence::Problem>& problems);

/// The whole analysis as `analyze --out` writes it: {"schema": "scalescope.analyze/1", "inputs", "files",
/// "combined", "diagnosis", "facts"}. `timeline_errors`: why the merged timeline asked for was not written.
nlohmann::json analysis_json(const evidence::Analysis& analysis, const std::vector<evidence::Problem>& timeline_errors);

/// Adds the analysis's sections to an HTML page: each file's sweeps, topology and doctor report in file order,
/// then the traces' lanes; the diagnosis over every input.
void add_analysis(HtmlPage& page, const evidence::Analysis& analysis);

}  // namespace scalescope::report
