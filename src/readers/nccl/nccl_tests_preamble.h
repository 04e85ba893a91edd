#pragma once
// What the head of an nccl-tests (or rccl-tests) output says even when it has no result rows — a run that failed
// at init, a paste cut before its table: the command that ran it, the tool and NCCL versions, nThread × nGpus per
// process, the device list (rank, process, host, device, bus id, GPU model) and the failure lines ("Test NCCL
// failure common.cu:777 'unhandled system error'", "Test CUDA failure …"). Emits diagnose facts: GpuSeen per
// device line, WorldShape (ranks listed, processes, hosts, GPUs per process; ranks only when the list is complete),
// NcclVersion (nccl-library=22703 → 2.27.3), NcclFailure, and the Launch / Setting facts of command lines through
// read_command_line. Pure; never throws.

#include <string>
#include <string_view>

#include "facts/facts.h"

namespace scalescope::analyze {

/// Whether `text` has an nccl-tests device line, "# nThread" preamble or "Test NCCL/CUDA failure" line.
bool looks_like_nccl_tests_preamble(std::string_view text);

/// Reads the preamble facts of `text`. `has_rows`: the text also holds result rows (then a failure line is a failure
/// during the run, not at init, and the device list is complete).
diagnose::Reading read_nccl_tests_preamble(std::string_view text, const std::string& source, bool has_rows);

}  // namespace scalescope::analyze
