#pragma once
// The NCCL profiler plugin's record of one communicator on one rank, as analyze prints it: one line per operation
// and size (calls, median GPU time, busbw), the GPU time in collectives against the span it covers.

#include <string>

#include "readers/nccl/nccl_profile.h"

namespace scalescope::report {

/// At most `max_rows` rows (largest total GPU time first), then how many were left out. Throws nothing.
std::string render_nccl_profile(const analyze::NcclProfile& p, const analyze::NcclProfileSummary& s, std::size_t max_rows = 12);

}  // namespace scalescope::report
