#include "diagnose/nccl_settings.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace scalescope::diagnose {
namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool is_true(std::string_view v) {
  const auto u = upper(v);
  return u == "1" || u == "TRUE" || u == "YES" || u == "ON";
}
bool is_false(std::string_view v) {
  const auto u = upper(v);
  return u == "0" || u == "FALSE" || u == "NO" || u == "OFF";
}

// The P2P / GDR level words and numbers (NCCL env.html): LOC 0, PIX 1, PXB 2, PHB 3, SYS 4/5; NVL since 2.9.
// Returns the cut-off as a rank of the path classes it still allows: 0 never, 1 NVLink only, 2 PIX, 3 PXB,
// 4 PHB, 5 NODE/SYS.
int level_rank(std::string_view v) {
  const auto u = upper(v);
  if (u == "LOC" || u == "0") return 0;
  if (u == "NVL") return 1;
  if (u == "PIX" || u == "1") return 2;
  if (u == "PXB" || u == "2") return 3;
  if (u == "PHB" || u == "3") return 4;
  if (u == "SYS" || u == "NODE" || u == "4" || u == "5") return 5;
  return -1;
}

// Variables that only name files, debug output or timeouts: set or not, data moves the same way.
constexpr std::array kHarmless = {
    "NCCL_DEBUG",          "NCCL_DEBUG_SUBSYS",     "NCCL_DEBUG_FILE",     "NCCL_TOPO_DUMP_FILE",
    "NCCL_GRAPH_DUMP_FILE", "NCCL_DEBUG_TIMESTAMP_FORMAT", "NCCL_IB_TIMEOUT", "NCCL_IB_RETRY_CNT",
    "NCCL_SET_THREAD_NAME", "NCCL_ASYNC_ERROR_HANDLING", "NCCL_BLOCKING_WAIT", "NCCL_LAUNCH_MODE",
    "NCCL_CHECKS_DISABLE", "NCCL_CHECK_POINTERS", "NCCL_COMM_BLOCKING", "NCCL_SET_STACK_SIZE",
    "NCCL_IB_PCI_RELAXED_ORDERING", "NCCL_HOSTID"};

// Variables that change a choice NCCL makes from the topology: right on one machine, wrong on another.
constexpr std::array kChanges = {"NCCL_SOCKET_IFNAME", "NCCL_IB_HCA",     "NCCL_IB_GID_INDEX", "NCCL_IB_TC",
                                 "NCCL_IB_SL",         "NCCL_NET_PLUGIN", "NCCL_CROSS_NIC",    "NCCL_IB_QPS_PER_CONNECTION",
                                 "NCCL_SOCKET_FAMILY", "NCCL_CUMEM_ENABLE", "NCCL_TOPO_FILE",  "NCCL_IGNORE_CPU_AFFINITY",
                                 "NCCL_P2P_NET_CHUNKSIZE", "NCCL_NET_SHARED_BUFFERS", "NCCL_PXN_DISABLE",
                                 "NCCL_P2P_PXN_LEVEL", "NCCL_IB_ADAPTIVE_ROUTING", "NCCL_DMABUF_ENABLE"};

template <std::size_t N>
bool listed(const std::array<const char*, N>& list, std::string_view name) {
  return std::find_if(list.begin(), list.end(), [&](const char* n) { return name == n; }) != list.end();
}

}  // namespace

SettingJudgement judge_setting(std::string_view name, std::string_view value) {
  SettingJudgement j;
  const std::string v(value);
  auto set = [&](SettingEffect e, std::string def, std::string does, std::string off = "") {
    j.effect = e;
    j.default_text = std::move(def);
    j.what_it_does = std::move(does);
    j.turns_off = std::move(off);
    return j;
  };
  if (name == "NCCL_P2P_DISABLE") {
    if (is_true(v))
      return set(SettingEffect::slows, "0 (P2P on)",
                 "turns off the P2P transport: GPUs of one node exchange data through host memory (SHM) or the "
                 "network instead of NVLink or PCIe peer-to-peer",
                 "p2p");
    return set(is_false(v) ? SettingEffect::default_value : SettingEffect::unknown, "0 (P2P on)", "P2P stays on");
  }
  if (name == "NCCL_SHM_DISABLE") {
    if (is_true(v))
      return set(SettingEffect::slows, "0 (SHM on)",
                 "turns off the shared-memory transport: where P2P is not possible, GPUs of one node talk through the "
                 "network (sockets) instead of host memory",
                 "shm");
    return set(is_false(v) ? SettingEffect::default_value : SettingEffect::unknown, "0 (SHM on)", "SHM stays on");
  }
  if (name == "NCCL_IB_DISABLE") {
    if (is_true(v))
      return set(SettingEffect::slows, "0 (IB/RoCE used when present)",
                 "turns off NCCL's IB transport, which is also its RoCE transport: traffic between nodes goes over TCP "
                 "sockets",
                 "ib");
    return set(is_false(v) ? SettingEffect::default_value : SettingEffect::unknown, "0 (IB/RoCE used when present)",
               "IB/RoCE stays allowed");
  }
  if (name == "NCCL_P2P_LEVEL") {
    const int r = level_rank(v);
    if (r == 0)
      return set(SettingEffect::slows, "auto (P2P wherever NCCL's topology search allows)",
                 "LOC: never use P2P, as NCCL_P2P_DISABLE=1", "p2p");
    if (r == 1)
      return set(SettingEffect::changes, "auto",
                 "NVL: P2P only over NVLink; PCIe pairs go through host memory (right where PCIe P2P is slow, e.g. "
                 "through host bridges)");
    if (r > 1)
      return set(SettingEffect::changes, "auto", "limits P2P to paths up to " + upper(v) + "; longer paths use host memory");
    return set(SettingEffect::changes, "auto", "sets the longest path on which P2P is used");
  }
  if (name == "NCCL_NET_GDR_LEVEL" || name == "NCCL_IB_GDR_LEVEL") {
    const int r = level_rank(v);
    if (r == 0)
      return set(SettingEffect::slows, "auto (GPUDirect RDMA when the NIC and GPU are close)",
                 "LOC: never use GPUDirect RDMA: network traffic is staged through host memory", "gdr");
    return set(SettingEffect::changes, "auto", "sets how far a NIC may be from a GPU for GPUDirect RDMA");
  }
  if (name == "NCCL_NET_GDR_READ") {
    if (is_false(v)) return set(SettingEffect::changes, "1 on NVLink platforms", "turns off GPUDirect RDMA reads for sends");
    return set(SettingEffect::default_value, "auto", "GDR reads as NCCL chooses");
  }
  if (name == "NCCL_NVLS_ENABLE") {
    if (is_false(v))
      return set(SettingEffect::slows, "1 (NVLink SHARP on NVSwitch systems that support it)",
                 "turns off NVLink SHARP (NVLS): all-reduce on NVSwitch systems runs without in-switch reduction",
                 "nvls");
    return set(SettingEffect::default_value, "1", "NVLS allowed");
  }
  if (name == "NCCL_COLLNET_ENABLE") {
    return set(is_true(v) ? SettingEffect::changes : SettingEffect::default_value, "0",
               is_true(v) ? "turns on CollNet (SHARP in the network)" : "CollNet off, as by default");
  }
  if (name == "NCCL_ALGO" || name == "NCCL_PROTO") {
    return set(SettingEffect::slows, "auto (NCCL's tuner picks per size)",
               std::string(name) + "=" + v +
                   " pins NCCL's choice for every message size: sizes the pinned choice does not suit run slower");
  }
  if (name == "NCCL_MAX_NCHANNELS" || name == "NCCL_MAX_NRINGS" || name == "NCCL_MIN_NCHANNELS" ||
      name == "NCCL_MIN_NRINGS" || name == "NCCL_NCHANNELS_PER_NET_PEER") {
    const bool max = name.find("MAX") != std::string_view::npos || name == "NCCL_NCHANNELS_PER_NET_PEER";
    try {
      const int n = std::stoi(v);
      if (max && n <= 4)
        return set(SettingEffect::slows, "auto (per topology)",
                   "caps NCCL at " + v + " channel(s): large messages cannot use every link and SM NCCL would use");
    } catch (...) {
    }
    return set(SettingEffect::changes, "auto (per topology)", "sets NCCL's channel count");
  }
  if (name == "NCCL_BUFFSIZE") {
    try {
      if (std::stoll(v) < 4194304)
        return set(SettingEffect::slows, "4194304 (4 MiB)", "a buffer smaller than the 4 MiB default: fewer bytes per step of the pipeline");
    } catch (...) {
    }
    return set(SettingEffect::changes, "4194304 (4 MiB)", "sets NCCL's buffer size");
  }
  if (name == "NCCL_NTHREADS") return set(SettingEffect::changes, "auto (per architecture)", "sets threads per NCCL block");
  if (name == "NCCL_NET") {
    if (upper(v) == "SOCKET")
      return set(SettingEffect::slows, "auto (IB/RoCE or a plugin when present, else sockets)",
                 "forces NCCL's socket network: traffic between nodes goes over TCP", "ib");
    return set(SettingEffect::changes, "auto", "chooses NCCL's network");
  }
  if (name == "NCCL_SOCKET_NTHREADS" || name == "NCCL_NSOCKS_PERTHREAD")
    return set(SettingEffect::changes, "auto (per cloud and NIC)", "sets NCCL's socket threads");
  if (name == "NCCL_P2P_DIRECT_DISABLE" || name == "NCCL_P2P_USE_CUDA_MEMCPY" || name == "NCCL_NVB_DISABLE") {
    if (is_true(v)) return set(SettingEffect::changes, "0", "changes how P2P copies are made");
    return set(SettingEffect::default_value, "0", "as by default");
  }
  if (name.rfind("NCCL_", 0) == 0) {
    if (listed(kHarmless, name)) return set(SettingEffect::harmless, "", "does not change how data moves");
    if (listed(kChanges, name)) {
      if (name == "NCCL_TOPO_FILE")
        return set(SettingEffect::changes, "none (NCCL reads the machine's own PCI tree)",
                   "gives NCCL a topology description instead of the machine's own PCI tree (what virtual machines "
                   "need): NCCL plans paths by it");
      return set(SettingEffect::changes, "auto", "changes a choice NCCL makes from the machine's topology");
    }
  }
  return j;
}

std::string setting_turning_off(std::string_view feature) {
  if (feature == "nvlink" || feature == "p2p") return "NCCL_P2P_DISABLE=1";
  if (feature == "shm") return "NCCL_SHM_DISABLE=1";
  if (feature == "ib" || feature == "roce" || feature == "rdma" || feature == "infiniband") return "NCCL_IB_DISABLE=1";
  if (feature == "gdr" || feature == "gpudirect") return "NCCL_NET_GDR_LEVEL=LOC";
  if (feature == "nvls") return "NCCL_NVLS_ENABLE=0";
  return "";
}

}  // namespace scalescope::diagnose
