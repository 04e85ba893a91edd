#pragma once
// The platform under the GPUs, read from the kernel's own files (no tool, no root for most of it): the ACS control
// bits of every PCIe bridge (config space through sysfs), the IOMMU's mode, a hypervisor (CPU flags, DMI), /dev/shm's
// size and whether the process has its own IPC namespace (a container), RDMA devices and the GPUDirect RDMA
// module, and the network interfaces with their speed (issue #31, item 3). Each reading becomes a diagnosis fact.
// Pure C++ over a root directory, so tests read fixture trees.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "facts/facts.h"

namespace scalescope::probe {

/// Where to read: "/" on a live machine; a fixture tree in tests (ROOT/sys/…, ROOT/proc/…). `shm_path` is
/// statvfs'd for /dev/shm's size (a fixture gives ROOT/dev-shm-bytes instead, a file holding the number).
struct PlatformRoots {
  std::string root = "/";
  std::string shm_path = "/dev/shm";
};

struct BridgeAcs {
  std::string bdf;            ///< "0000:00:01.0"
  std::uint16_t control = 0;  ///< ACS Control register
  bool redirect() const { return (control & 0x0c) != 0; }  ///< P2P Request or Completion Redirect (bits 2, 3)
};

struct NetInterface {
  std::string name;
  std::optional<double> speed_gbit;  ///< /sys/class/net/N/speed (Mb/s) / 1000; absent when down or unknown
  std::string operstate;             ///< "up", "down", "unknown"
};

struct PlatformReading {
  std::vector<BridgeAcs> bridges;           ///< bridges whose ACS capability could be read
  int bridges_unreadable = 0;               ///< bridges whose extended config space was not readable (not root)
  std::string iommu;                        ///< "translated", "passthrough", "off", "" unknown
  std::string iommu_basis;
  std::string hypervisor;                   ///< "" none seen; else what named it
  std::optional<std::uint64_t> shm_bytes;   ///< /dev/shm size
  std::optional<bool> private_ipc;          ///< the process's IPC namespace differs from PID 1's (a container's own)
  bool in_container = false;                ///< /.dockerenv, /run/.containerenv, or a container cgroup
  std::vector<std::string> rdma_devices;    ///< /sys/class/infiniband/*
  std::optional<bool> peermem_loaded;       ///< nvidia_peermem (or nv_peer_mem) loaded; absent: /proc/modules unreadable
  std::vector<NetInterface> nics;           ///< physical-looking interfaces (not lo, docker*, veth*, br-*, virbr*)
  std::vector<std::string> nvidia_gpus;     ///< PCI functions of vendor 0x10de, class 0x0300/0x0302 (display, 3D)
  std::optional<int> driver_gpus;           ///< entries of /proc/driver/nvidia/gpus; absent: no NVIDIA driver loaded
  /// The NVIDIA driver's Xid lines in the kernel log (/dev/kmsg, root only: absent when not readable), as dmesg
  /// prints them ("NVRM: Xid (PCI:0000:3b:00): 79, …"); at most the last 200.
  std::optional<std::vector<std::string>> xid_lines;
  std::vector<std::string> notes;           ///< what could not be read, and why
};

/// Reads everything it can; never throws (what fails is a note).
PlatformReading read_platform(const PlatformRoots& roots = {});

/// Facts for the diagnosis: an AcsControl per bridge that has ACS (redirect bits as read), IommuMode, HypervisorSeen,
/// NicSeen per interface and RDMA device, GdrState for the RDMA devices when the peer-memory module is absent, and
/// a Claim for a small /dev/shm or a private IPC namespace ("shm-small" / "ipc-private"). Provenance "platform
/// probe" with the file read.
diagnose::FactSet platform_facts(const PlatformReading& r);

void to_json(nlohmann::json& j, const PlatformReading& r);

/// /dev/shm below this is small for NCCL's SHM transport between several ranks (Docker's default is 64 MiB).
inline constexpr std::uint64_t kSmallShmBytes = 512ull * 1024 * 1024;

}  // namespace scalescope::probe
