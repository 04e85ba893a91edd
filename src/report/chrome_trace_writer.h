#pragma once
// The merged timeline of all ranks as a Chrome trace (Trace Event Format, JSON Object Format) that opens in
// Perfetto (ui.perfetto.dev) and chrome://tracing: one process per rank, one track (thread) per kind of work and
// stream — "steps", "compute stream 7", "communication stream 40", "memcpy stream 7", "host syncs" — with every
// rank on the common clock of the analysis (TraceAnalysis::ranks[i].clock_offset_us), starting at 0.

#include <ostream>
#include <string>

#include "analysis/trace_analysis.h"

namespace scalescope::analyze {

/// Writes the timeline of `analysis` (which must have been made with TraceOptions::keep_timeline) to `out`.
/// Slices are complete events ("ph": "X") with ts and dur in µs (three decimals: ns resolution); a
/// communication kernel that waited for the last rank holds a nested slice "waiting for the last rank".
/// Throws core::Error when the analysis kept no timeline.
void write_merged_timeline(const TraceAnalysis& analysis, std::ostream& out);

/// As above into the file `path`, atomically: the JSON is streamed into a temporary file beside it, which is
/// fsync'ed and renamed over `path`, so a reader never sees half a timeline and memory stays small however
/// long the timeline. Throws core::Error naming the path and the reason when it cannot be written (nothing is
/// left behind), or when the analysis kept no timeline.
void write_merged_timeline_file(const TraceAnalysis& analysis, const std::string& path);

}  // namespace scalescope::analyze
