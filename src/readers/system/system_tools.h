#pragma once
// Reads what system tools print about GPUs, PCIe and the network, as people paste it (prompts, indentation,
// several tools in one file): lspci (-vvv, -vv, -tv, a grep of ACSCtl/LnkCap/LnkSta lines), nvidia-smi -q (product
// name, bus id, "GPU Link Info" PCIe generation and width current / max / device max, clocks, power, temperature,
// "Clocks Event Reasons" / "Clocks Throttle Reasons"), nvidia-smi nvlink -s / --status (per link "Link 0: 26.562
// GB/s" or "<inactive>"), nvidia-smi nvlink -e (error counters), nvidia-smi topo -p2p r|w|n|a|p matrices (OK, NS,
// CNS, GNS, TNS, U), nvidia-smi -L, kernel log Xid lines ("NVRM: Xid (PCI:0000:3b:00): 79, pid=…, GPU has fallen off
// the bus."), NVIDIA's p2pBandwidthLatencyTest (its matrices with P2P enabled and disabled, uni- and bidirectional
// bandwidth, latency), ibstat / ibv_devinfo (port state, rate, link layer), and signs of a hypervisor (dmesg
// "Hypervisor detected", lscpu "Hypervisor vendor", DMI "QEMU"/"KVM"/"VMware"/"Amazon EC2", virtio devices).
//
// Emits diagnose facts: AcsControl, PcieLinkState (lspci: LnkCap → device_max_*, LnkSta → current_*, the
// "(downgraded)" marker; nvidia-smi -q: current / max / device max), GpuSeen, GpuCount{scope "exist"} (-L, -q's
// "Attached GPUs"), NvlinkState, NvlinkCounter, P2pStatus, XidEvent, P2pMeasurement, NicSeen, GpuClocks,
// HypervisorSeen, IommuMode (dmesg "DMAR: IOMMU enabled", "iommu: Default domain type: Passthrough", kernel
// command line intel_iommu=on / iommu=pt). Pure; no I/O.
//
// What each tool gives (units as facts/facts.h: GB/s = 1e9 bytes/s, Gb/s for NIC line rates, MHz, W, °C, µs):
//
//  lspci     A device header ("03:00.0 PCI bridge: PLX Technology, Inc. PEX 8747 … (rev ca) (prog-if 00 [Normal
//            decode])", with or without a domain, class code or vendor:device ids; or a bare "31:00.0" as a grep
//            leaves it) owns the LnkCap / LnkSta / ACSCtl lines below it until a blank line, a prompt or other
//            unindented text; without one, device is "". device_name is the header's text after the class, without
//            "(rev …)", "(prog-if …)" and "[vvvv:dddd]". PcieLinkState per LnkCap/LnkSta pair: LnkCap "Speed 8GT/s,
//            Width x16" → device_max_gen 3, device_max_width 16 (2.5/5/8/16/32/64 GT/s → gen 1–6); LnkSta →
//            current_gen / current_width; downgraded true on "(downgraded)", false on "(ok)", absent when pciutils
//            prints neither (before 3.6); "Speed unknown" and "Width x0" are absent values; under_load is unknown.
//            AcsControl per ACSCtl line (a line wrapped after some bits is joined with the next; missing bits read
//            '-' with a note). GpuSeen{name, bus_id} for NVIDIA VGA / 3D / display controllers. -tv trees and
//            headers naming virtio / QEMU / VMware / Hyper-V devices give HypervisorSeen (one per kind).
//  nvidia-smi -q
//            Per "GPU 00000000:3B:00.0" block: GpuSeen{Product Name, bus_id}; PcieLinkState{device "GPU
//            00000000:3B:00.0", device_name, current_gen "Current" (else "Device Current"), max_gen "Max",
//            device_max_gen "Device Max", current_width / max_width from "Link Width", under_load false when the
//            "Idle" clock reason is Active, true when it is Not Active, else from Utilization Gpu > 0 %}; GpuClocks{
//            sm_mhz "Clocks/SM", max_sm_mhz "Max Clocks/SM", power_w (GPU Power Readings: Average Power Draw, else
//            Power Draw, else Instantaneous Power Draw; the memory's and module's readings are not read),
//            power_limit_w (Current Power Limit, else Enforced Power Limit, else Power Limit), temperature_c "GPU
//            Current Temp", active_throttle_reasons: the names whose value is "Active" in "Clocks Event Reasons" or
//            "Clocks Throttle Reasons" ("Idle" included), not the "… Counters" section}. "Attached GPUs : 8" →
//            GpuCount{8, "exist"}. "Virtualization Mode : Pass-Through" or "VGPU" → HypervisorSeen. A grep of one
//            section without its GPU line reads with gpu / device "". Sections are found by indentation, or by
//            the nearest section name above when the paste lost it.
//  nvidia-smi nvlink
//            "GPU 0: <name> (UUID: …)" then "Link N: 26.562 GB/s" → NvlinkState{gpu "GPU 0", gpu_name, link, active
//            (rate > 0), gbps}; "Link N: <inactive>" → active false, no rate; "Link N: Replay Errors: 12" (or several
//            "Name: count" on one line) → NvlinkCounter. "NVML: Unable to retrieve NVLink information …" is a note.
//  nvidia-smi topo -p2p
//            A GPU×GPU matrix of OK / NS / CNS / GNS / TNS / U / DR cells (and any token its Legend defines as
//            "… not supported", "Status Ok", "Disabled by …", "Unknown"), with or without its header or a markdown
//            table's bars → one P2pStatus per ordered pair (a = row, b = column, diagonal left out), access from the
//            command above it ("-p2p r" / "--p2pstatus=r" → "read", w "write", n "nvlink", a "atomics", p "prop"),
//            "" when the text does not show the command. A topo -m matrix is not read here.
//  nvidia-smi -L
//            "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-…)" → GpuSeen{name, index}; each list (MIG lines skipped; a
//            list ends at other text or when "GPU 0" comes again) → GpuCount{n, "exist"} at line 0 (a figure of
//            several lines). GPU lines without a UUID (PyTorch's collect_env) are not a list.
//  kernel log
//            "NVRM: Xid (PCI:0000:3b:00): 79, pid=…, name=…, <text>" after any dmesg / syslog / journal prefix →
//            XidEvent{bus_id "0000:3b:00", code, text without pid= and name=}. IommuMode, one per text, from the
//            most specific line: "iommu: Default domain type: Passthrough|Translated" → "passthrough" /
//            "translated"; else the kernel command line ("Command line:", BOOT_IMAGE=…, GRUB_CMDLINE_LINUX…=):
//            iommu=pt → "passthrough", intel_iommu=on / amd_iommu=on → "translated", …=off → "off"; else "DMAR:
//            IOMMU enabled" → "translated" / "DMAR: IOMMU disabled" → "off". A line quoted in prose or code (a quote
//            or backtick before the marker) is not read.
//  p2pBandwidthLatencyTest
//            "Device: 0, <name>, pciBusID: c1, …" → GpuSeen{name, index, bus_id "c1"}; "Device=0 CAN[NOT] Access
//            Peer Device=1" and the "P2P Connectivity Matrix" → P2pStatus{a "GPU0", b "GPU1", status "OK" / "NS",
//            access "cuda"}, one per ordered pair; each off-diagonal cell of the bandwidth matrices (GB/s) and of the
//            latency matrices' GPU half (µs) → P2pMeasurement{a, b, peer_access (P2P=Enabled), bidirectional, gbps
//            or latency_us}.
//  ibstat    ibstat, ibstatus and ibv_devinfo [-v]: one NicSeen per port — name "mlx5_0" for port 1, "mlx5_0:2" for
//            port 2 …; line_gbit from "Rate: 200" (Gb/s) or active_width × active_speed; link_layer "IB"
//            (InfiniBand) or "RoCE" (Ethernet on an RDMA device); state "Active" / "Down" / "Initializing" /
//            "Armed". A device listed without ports (`ibstat | grep mlx5`) gives NicSeen{name} alone.
//  hypervisor
//            "Hypervisor detected: KVM", "Booting paravirtualized kernel on KVM", "DMI: QEMU Standard PC …" (also
//            Amazon EC2 but not *.metal, VMware, VirtualBox, Virtual Machine, Xen, Google Compute Engine,
//            OpenStack …), lscpu "Hypervisor vendor:", the "hypervisor" CPU flag, dmidecode "Manufacturer: QEMU" /
//            "Product Name: …" naming a VM, plus the lspci and nvidia-smi -q signs above → HypervisorSeen{what, the
//            evidence in words}, each once.
//
// Every fact's provenance is the line that shows it (1-based; the LnkSta line for a link, the GPU line or the first
// Active clock reason for GpuClocks, "GPU Link Info" for -q's PcieLinkState); the facts come in line order.
// Damaged text (cut lines, CRLF, prompts, quote markers "> ", binary junk) never throws: what can be read is read,
// and Reading::notes names each line read only in part or not at all ("line 12: …").

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "facts/facts.h"

namespace scalescope::analyze {

/// The tools whose output `text` holds, by name: "lspci", "nvidia-smi -q", "nvidia-smi nvlink", "nvidia-smi topo
/// -p2p", "nvidia-smi -L", "kernel log", "p2pBandwidthLatencyTest", "ibstat", "hypervisor"; empty when none.
/// Always in that order, each once; a tool counts when its output was recognised (read_system_tools reads it), so
/// NCCL logs, nccl-tests outputs, a topo -m matrix alone and training logs give none. "ibstat" stands for ibstat,
/// ibstatus and ibv_devinfo; "kernel log" for Xid and IOMMU lines; "hypervisor" for any sign of a virtual machine.
/// Never throws (an empty list if memory runs out).
std::vector<std::string> detect_system_tools(std::string_view text);

/// Reads every tool output found in `text` (see above). `source` names the file in each fact's provenance. Never
/// throws: damaged lines are read in part or skipped with a note; if memory runs out the Reading is empty but for a
/// note saying so.
diagnose::Reading read_system_tools(std::string_view text, const std::string& source);

/// detect_system_tools and read_system_tools in one scan: `tools` gets the tools recognised, and the reading is
/// returned when there is one (nullopt when no tool's output is in `text`). Never throws.
std::optional<diagnose::Reading> read_system_tools_if_any(std::string_view text, const std::string& source,
                                                          std::vector<std::string>& tools);

}  // namespace scalescope::analyze
