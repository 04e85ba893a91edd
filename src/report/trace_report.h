#pragma once
// Terminal rendering of a trace analysis (`scalescope analyze` over PyTorch profiler traces).

#include <string>

#include "analysis/trace_analysis.h"

namespace scalescope::report {

/// The analysis for a terminal, in this order: a summary line (ranks, world size, how clocks were aligned and
/// collectives matched); the per-rank table — steps, step ms, GPU busy %, compute ms, comm ms, overlap %,
/// exposed comm ms, host syncs per step, straggler wait ms (the time each rank's collectives wait for the last
/// rank to arrive) — all means per step; the baseline's row when given; the waterfall of each rank (where the step
/// time beyond the ideal went, ms per step, adding up to measured − ideal); the largest collectives with their
/// busbw (GB/s, 1e9 bytes/s); the verdict (or why there is none); the findings; and the files that could not be
/// analysed with their cause and remedy (unless `list_file_errors` is false: the CLI reports each file's errors
/// with that file). Absent figures print as "-".
std::string render_trace_report(const analyze::TraceAnalysis& analysis, bool list_file_errors = true);

}  // namespace scalescope::report
