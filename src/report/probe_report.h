#pragma once
// The platform probe's reading as doctor and `topo --probe` print it: one line per finding, then what could not be read.

#include <string>

#include "probe/platform.h"

namespace scalescope::report {

/// "platform:" then ACS, IOMMU, hypervisor, /dev/shm and IPC, RDMA and peer memory, NICs; a line each. Throws nothing.
std::string render_platform(const probe::PlatformReading& r);

}  // namespace scalescope::report
