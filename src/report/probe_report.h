#pragma once
// The platform probe's reading as doctor and `topo --probe` print it: one line per finding, then what could not be read.

#include <string>

#include "probe/platform.h"
#include "runtime/nccl_probe.h"

namespace scalescope::report {

/// "platform:" then ACS, IOMMU, hypervisor, /dev/shm and IPC, RDMA and peer memory, NICs; a line each. Throws nothing.
std::string render_platform(const probe::PlatformReading& r);

/// "NCCL probe:" then NCCL's version, the transports per rank pair, the NCCL_* variables set, its warnings.
std::string render_nccl_probe(const runtime::NcclProbe& p);

}  // namespace scalescope::report
