#pragma once
// Terminal renderings of `scalescope topo` results.

#include <string>
#include <vector>

#include "topo/analysis.h"

namespace scalescope::report {

/// `scalescope topo`'s output: what was found (live facts: NVML, CUDA, hwloc, CUDA_VISIBLE_DEVICES), one line per
/// GPU (name, bus id, PCIe, NVLink), the matrix as nvidia-smi prints it (X, NV#, PIX, PXB, PHB, NODE, SYS, ? for
/// unread; CPU Affinity, NUMA Affinity, GPU NUMA ID), the expected unidirectional GB/s per GPU pair with its
/// assumptions, the P2P matrix (live), then the findings (severity, evidence, what to do), warnings and notes.
std::string render_topo_report(const topo::TopoReport& report);

/// The short form `scalescope doctor` prints first: GPUs and their link classes in a line or two, then one line per
/// finding at warning or above (info findings are counted). On a machine with no GPU: one line saying so.
std::string render_topo_summary(const topo::TopoReport& report);

/// A table of the pairs whose link classes differ (`scalescope topo --compare`): pair, first, second; or one line
/// saying all `compared` pairs match.
std::string render_link_comparison(const std::vector<topo::LinkMismatch>& mismatches, int compared,
                                   const std::string& first_name, const std::string& second_name);

}  // namespace scalescope::report
