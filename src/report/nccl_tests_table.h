#pragma once
// A collective sweep printed as nccl-tests prints it, so scripts that read nccl-tests output keep working,
// then scalescope's own statistics and summary on '#' lines that such scripts skip.

#include <string>

#include "comm/sweep.h"
#include "analysis/sweep_analysis.h"

namespace scalescope::report {

/// nccl-tests' results table: the "#" section line, the column header
/// "#       size         count      type   redop    root     time   algbw   busbw #wrong     time …", the
/// units line, then one row per SweepRow with nccl-tests' field widths (size 12, count 12, type 8, redop 6,
/// root 6, time 7, algbw 6, busbw 6, #wrong 6 per direction; layout of nccl-tests src/util.cu,
/// writeResultHeader/writeBenchmarkLine*, version 2.19). Numbers fill their width with 2 decimals, else 1,
/// else 0, else an exponent, as nccl-tests 2.19+ does (older versions printed times ≥ 100 µs with fewer
/// decimals: "592.8" where this prints "592.80"; both read the same); #wrong as printf's %g. Absent values print "N/A"; redop "none" and
/// root -1 where the row has none. Times µs, bandwidths GB/s. Throws nothing.
std::string render_nccl_tests_table(const analyze::Sweep& sweep);

/// Scalescope's per-size statistics of a live sweep (median, p95, cv %, min, max, rank skew; µs), every
/// line starting with "# " so nccl-tests parsers skip it. Empty when no row has any of them (a parsed file).
std::string render_sweep_statistics(const analyze::Sweep& sweep);

/// nccl-tests' footer ("# Out of bounds values : …", "# Avg bus bandwidth    : …": the footer read from the
/// file, else the average recomputed from the rows), then scalescope's summary on "# " lines: plateau,
/// small-message latency, α–β fit with its error, grade, and why nccl-tests' average is not the headline.
std::string render_comm_summary(const analyze::Sweep& sweep, const analyze::SweepAnalysis& analysis);

/// The three above, in order.
std::string render_comm_report(const analyze::Sweep& sweep, const analyze::SweepAnalysis& analysis);

}  // namespace scalescope::report
