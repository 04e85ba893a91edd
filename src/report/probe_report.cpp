#include "report/probe_report.h"

#include "core/terminal_text.h"

#include <fmt/format.h>

namespace scalescope::report {

std::string render_platform(const probe::PlatformReading& r) {
  std::string o = "platform (sysfs, procfs):\n";
  int redirect = 0;
  std::string which;
  for (const auto& b : r.bridges)
    if (b.redirect()) {
      ++redirect;
      if (which.size() < 80) which += (which.empty() ? "" : ", ") + b.bdf;
    }
  if (!r.bridges.empty() || r.bridges_unreadable > 0)
    o += fmt::format("  PCIe bridges with ACS: {} read, {} redirect peer requests upstream{}{}\n", r.bridges.size(), redirect,
                     which.empty() ? "" : " (" + which + ")",
                     r.bridges_unreadable ? fmt::format("; {} not readable without root", r.bridges_unreadable) : "");
  o += fmt::format("  IOMMU: {}{}\n", r.iommu.empty() ? "unknown" : r.iommu, r.iommu_basis.empty() ? "" : " (" + r.iommu_basis + ")");
  o += "  hypervisor: " + (r.hypervisor.empty() ? std::string("none seen") : r.hypervisor) + "\n";
  o += fmt::format("  /dev/shm: {}{}{}\n",
                   r.shm_bytes ? fmt::format("{:.0f} MiB", static_cast<double>(*r.shm_bytes) / (1024 * 1024)) : "size unknown",
                   r.shm_bytes && *r.shm_bytes < probe::kSmallShmBytes ? " (small for NCCL's SHM transport)" : "",
                   r.private_ipc ? (*r.private_ipc ? "; own IPC namespace (a container without --ipc=host)" : "; host IPC namespace") : "");
  if (r.in_container) o += "  container: yes\n";
  if (!r.rdma_devices.empty() || r.peermem_loaded) {
    std::string devs;
    for (const auto& d : r.rdma_devices) devs += (devs.empty() ? "" : ", ") + d;
    o += fmt::format("  RDMA: {}; GPUDirect RDMA module (nvidia_peermem): {}\n", devs.empty() ? "no device" : devs,
                     !r.peermem_loaded ? "unknown" : (*r.peermem_loaded ? "loaded" : "not loaded"));
  }
  std::string nics;
  for (const auto& n : r.nics)
    nics += (nics.empty() ? "" : ", ") + n.name + " " + n.operstate + (n.speed_gbit ? fmt::format(" {:g} Gb/s", *n.speed_gbit) : "");
  if (!nics.empty()) o += "  network interfaces: " + nics + "\n";
  if (!r.nvidia_gpus.empty() || r.driver_gpus)
    o += fmt::format("  NVIDIA GPUs: {} on the PCI bus, {}\n", r.nvidia_gpus.size(),
                     r.driver_gpus ? fmt::format("{} under the driver (/proc/driver/nvidia/gpus)", *r.driver_gpus)
                                   : std::string("no NVIDIA driver loaded"));
  if (r.xid_lines)
    o += r.xid_lines->empty() ? std::string("  kernel log: no NVIDIA Xid event\n")
                              : fmt::format("  kernel log: {} NVIDIA Xid event(s), the last: {}\n", r.xid_lines->size(),
                                            core::terminal_text(r.xid_lines->back(), 120));
  for (const auto& n : r.notes) o += "  note: " + n + "\n";
  return o;
}

std::string render_nccl_probe(const runtime::NcclProbe& p) {
  std::string o = fmt::format("NCCL probe ({} rank{}, all-reduce 8 B – 1 MiB with NCCL_DEBUG=INFO, {:.1f} s):\n", p.world_size,
                              p.world_size == 1 ? "" : "s", p.seconds);
  if (!p.error.empty()) o += "  did not complete: " + p.error + "\n";
  if (!p.nccl_version.empty()) o += "  NCCL " + p.nccl_version + "\n";
  if (!p.transports.empty()) {
    o += "  transports:";
    for (std::size_t i = 0; i < p.transports.size() && i < 12; ++i) o += (i ? ", " : " ") + p.transports[i];
    if (p.transports.size() > 12) o += fmt::format(" (+{} more)", p.transports.size() - 12);
    o += "\n";
  } else if (p.ran && p.world_size > 1) {
    o += "  transports: none reported\n";
  }
  o += "  NCCL_* set in the environment: ";
  if (p.settings.empty()) o += "none";
  for (std::size_t i = 0; i < p.settings.size(); ++i) o += (i ? ", " : "") + p.settings[i];
  o += "\n";
  for (const auto& w : p.warnings) o += "  NCCL warning: " + core::terminal_text(w, 160) + "\n";
  if (p.busbw_gbps) o += fmt::format("  all-reduce 128 MiB: busbw {:.1f} GB/s\n", *p.busbw_gbps);
  if (p.p2p_off_busbw_gbps)
    o += fmt::format("  A/B: with NCCL_P2P_DISABLE=1 busbw {:.1f} GB/s ({})\n", *p.p2p_off_busbw_gbps,
                     *p.p2p_off_busbw_gbps > *p.busbw_gbps * 1.05 ? "faster without P2P: the P2P path is at fault"
                                                                  : "P2P is not what makes it slow");
  if (!p.ab_reason.empty() && p.world_size >= 2) o += "  A/B: " + p.ab_reason + "\n";
  return o;
}

}  // namespace scalescope::report
