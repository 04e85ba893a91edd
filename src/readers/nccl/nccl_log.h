#pragma once
// Reads NCCL debug logs (NCCL_DEBUG=VERSION/WARN/INFO/TRACE, any NCCL_DEBUG_SUBSYS) as they are found in the
// wild — prefixed by launchers, interleaved across processes, glued, wrapped, cut off — and says what they
// show about how NCCL moves data: versions, communicators, the transport of every ring/tree connection,
// rings, trees, channel counts, NCCL_* settings, the network chosen, WARN lines with their unwinding, and
// collective calls. The findings over one or several logs (SHM instead of P2P, socket fallback, P2P disabled, IB
// errors, version mismatches, slow init) are analysis/nccl_log_analysis.h. Pure: no I/O except read_nccl_log_file.
//
// What a line looks like (NCCL's debug.cc prefix "host:pid:tid [cudaDev]", then the level, then the text):
//   host-a:13313:13988 [0] NCCL INFO Channel 00/02 :    0   1   2   3
//   node-2:5776:5902 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer ... error 12
// Whatever precedes the prefix is skipped, so these all read the same:
//   [1,0]<stdout>:host-a:…            Open MPI --tag-output       0: host-a:…      srun --label
//   [3] host-a:…                        mpirun/torchrun rank tags   [80746] host-a:…  log-viewer line numbers
//   (RayTrainWorker pid=615, ip=…) …    Ray workers                 job-…-worker-0:…  Kubernetes pod names
//   2025-11-24T03:20:21.001Z host-a [5] RFC3339 (docker logs; NCCL without pid:tid)
//   Fri Aug 11 12:31:45 2023[1,0]<stdout>:host-a:…   ctime glued to a tag
//   "> > > ", indentation, "[2025-11-24 11:20:21]" (NCCL_DEBUG_TIMESTAMP_FORMAT)
// Two lines written into one ("host-a:1:1 [2] NCCL INFO host-a:2:2 [7] NCCL INFO Broadcast: …") are split;
// a WARN line hard-wrapped onto the next line gets its continuation back; a line that lost its prefix but
// whose text is unmistakable ("Broadcast: opCount 1 …", "CCL INFO Channel 08/0 : 0[0] -> 1[1] via P2P/IPC")
// is read without host and pid, with a note.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/log_text.h"

namespace scalescope::analyze {

/// Who wrote a line: NCCL's "host:pid:tid [dev]" prefix, each part absent when the line does not show it.
struct NcclOrigin {
  std::optional<std::string> host;  ///< "host-a"; launcher prefixes before it are not part of it
  std::optional<std::int64_t> pid;  ///< process id
  std::optional<std::int64_t> tid;  ///< thread id
  std::optional<int> device;        ///< the CUDA device in brackets, "[5]"
};

/// "NCCL version 2.18.3+cuda12.1": `version` "2.18.3", `full` "2.18.3+cuda12.1".
struct NcclVersionLine {
  std::string version;
  std::string full;
  NcclOrigin origin;
  std::size_t line = 0;
};

/// One process seen in the log (by host and pid; lines without a pid count under the host).
struct NcclProcess {
  std::optional<std::string> host;
  std::optional<std::int64_t> pid;
  std::vector<int> devices;        ///< CUDA devices its lines name, ascending
  std::vector<int> ranks;          ///< ranks of its communicators, ascending
  std::optional<std::string> version;  ///< "2.18.3" when it printed its version
  std::size_t lines = 0;           ///< NCCL lines it wrote
  std::size_t first_line = 0;
};

/// A communicator as its init lines describe it, e.g.
///   "ncclCommInitAll comm 0x55f68495f4f0 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 34000 commId 0x76b3… - Init COMPLETE"
///   "comm 0x5558e3c10180 rank 13 nRanks 16 nNodes 2 localRanks 8 localRank 5 MNNVL 0"
///   "comm 0x7f5780001ca0 rank 15 nranks 32 cudaDev 7 nvmlDev 7 - Init COMPLETE" (NCCL 2.4)
/// and "Init timings - ncclCommInitRank: rank 0 nranks 8 total 0.68 (kernels 0.19, …)" (NCCL ≥ 2.21).
/// Lines of one process about one comm pointer are merged.
struct NcclCommunicator {
  std::optional<std::string> comm;     ///< "0x55f68495f4f0"
  std::optional<std::string> init_call;///< "ncclCommInitAll", "ncclCommInitRankConfig"… when printed
  std::optional<int> rank, nranks, cuda_dev, nvml_dev, nnodes, local_ranks, local_rank;
  std::optional<std::string> bus_id;   ///< as printed, hex without 0x ("34000", "f000")
  std::optional<std::string> comm_id;  ///< "0x76b3b6be637caf1c"
  bool init_complete = false;          ///< "- Init COMPLETE" seen
  std::optional<double> init_seconds;  ///< "Init timings … total S"
  std::map<std::string, double> init_phases;  ///< "(kernels 0.19, bootstrap 0.02, …)", seconds
  NcclOrigin origin;
  std::size_t line = 0;                ///< first line about it
};

/// What kind of path a connection uses.
enum class TransportKind { p2p, shm, net, collnet, nvls, other };
std::string_view to_string(TransportKind k);

/// One connection line, e.g.
///   "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"             "Channel 09/0 : 33[1] -> 41[1] [send] via NET/IBext_v8/4"
///   "Channel 00 : 2[a000] -> 3[b000] via P2P/direct pointer"  (NCCL 2.7–2.11: busId in brackets)
///   "Ring 00 : 26[2] -> 24[0] via P2P/IPC"                  (NCCL ≤ 2.4)
///   "Ring 00 : 3[b0] -> 0[80] via direct shared memory"     (NCCL 2.5)
///   "Channel 02/0 : 1[1] -> 9[1] [receive] via NET/IB/0/GDRDMA"
struct NcclConnection {
  int channel = 0;
  bool ring_keyword = false;           ///< the line says "Ring", not "Channel"
  int from_rank = 0, to_rank = 0;
  std::string from_tag, to_tag;        ///< text in brackets after each rank: a CUDA device or a bus id
  std::optional<std::string> direction;///< "send" / "receive" (network connections)
  std::string via;                     ///< everything after "via ": "NET/IB/0/GDRDMA", "SHM/direct/direct"
  TransportKind kind = TransportKind::other;
  /// The transport without indices and modes: "P2P/IPC", "P2P/CUMEM", "P2P/direct pointer", "SHM",
  /// "NET/IB", "NET/Socket", "NET/IBext_v8", "NET/AWS Libfabric"…
  std::string transport;
  bool gdrdma = false;                 ///< "/GDRDMA": GPUDirect RDMA between the NIC and GPU memory
  bool p2p_read = false;               ///< "/read": P2P read mode
  NcclOrigin origin;
  std::size_t line = 0;
};

/// "Channel 00/02 :    0   1   2   3" (the ring order of one channel, printed by rank 0) or the old
/// "Ring 00 :    0 1 2 3".
struct NcclRing {
  int channel = 0;
  std::optional<int> channels;  ///< "00/02": the communicator has 2 channels
  std::vector<int> ranks;
  NcclOrigin origin;
  std::size_t line = 0;
};

/// One channel of "Trees [0] 5/-1/-1->4->3 [1] …": the rank (4), its children (5; -1 = none) and parent
/// (3; absent for -1, the root). NCCL 2.5's "[0] -1/-1/-1->3->2|2->3->-1/-1/-1" is read up to the '|'.
struct NcclTree {
  int channel = 0;
  int rank = 0;
  std::vector<int> children;
  std::optional<int> parent;
  NcclOrigin origin;
  std::size_t line = 0;
};

/// "2 coll channels, 0 nvls channels, 2 p2p channels, 2 p2p channels per peer" (and the older forms
/// without nvls/collnet).
struct NcclChannelCounts {
  std::optional<int> coll, collnet, nvls, p2p, p2p_per_peer;
  NcclOrigin origin;
  std::size_t line = 0;
};

/// An NCCL_* setting the log reports: "NCCL_P2P_DISABLE set by environment to 1",
/// "NCCL_SOCKET_IFNAME set to eth0", "NCCL_MAX_NCHANNELS set by environment to 1." (dot removed).
struct NcclSetting {
  std::string name;
  std::string value;
  bool by_environment = false;  ///< "set by environment" (else "set to": NCCL's or a config file's value)
  NcclOrigin origin;
  std::size_t line = 0;
};

/// A network provider's device list: "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB eno1:192.0.2.1<0>",
/// "NET/Socket : Using [0]eth0:192.0.2.23<0>", "NET/FastSocket : Using [0]ibs108:…".
struct NcclNetDevices {
  std::string provider;              ///< "IB", "Socket", "FastSocket"…
  std::vector<std::string> devices;  ///< "mlx5_0:1/IB", "eth0:192.0.2.23<0>"
  std::optional<std::string> oob;    ///< out-of-band (bootstrap) interface "eno1:101.262.0.9<0>"
  bool relaxed_ordering = false;     ///< "[RO]"
  NcclOrigin origin;
  std::size_t line = 0;
};

/// A line that names the network: "Using network IB", "Using network Socket", "Using network AWS Libfabric",
/// "NET/OFI Initializing aws-ofi-nccl 1.13.2-aws", "Bootstrap : Using eth0:10.0.0.1<0>", "NET/IB : No device found.".
struct NcclNetEvent {
  enum class Kind { using_network, plugin, bootstrap_interface, no_device } kind = Kind::using_network;
  std::string text;  ///< the network name, the plugin text, the interface, the provider without devices
  NcclOrigin origin;
  std::size_t line = 0;
};

/// NCCL's per-HCA GPUDirect RDMA decision: "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'" (NCCL found no
/// peer-memory support: nv_peer_mem / nvidia-peermem / DMA-BUF) or "… Enabled for HCA …".
struct NcclGdrLine {
  std::string hca;      ///< "mlx5_0", or the HCA index when no name is printed
  bool enabled = false;
  NcclOrigin origin;
  std::size_t line = 0;
};

/// One step of an error's unwinding: "transport/net.cc:1134 -> 6", "proxy.cc:858 -> 6 [Proxy Thread]",
/// "bootstrap.cc:868 -> 6 ncclSocketConnect()".
struct NcclUnwind {
  std::string location;  ///< "proxy.cc:858"
  int code = 0;          ///< the ncclResult_t (6 = ncclRemoteError)
  std::string note;      ///< text after the code
  std::size_t line = 0;
};

/// ncclResult_t's name and meaning: 1 ncclUnhandledCudaError … 6 ncclRemoteError, 7 ncclInProgress
/// (NCCL's nccl.h); "unknown result" otherwise.
std::string nccl_result_name(int code);

/// A WARN line, e.g. "transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer … with error 12, …",
/// with the unwinding lines that followed it in the same process (thread-agnostic: NCCL unwinds across
/// the proxy and main threads).
struct NcclWarning {
  std::optional<std::string> location;  ///< "transport/net_ib.cc:1296"
  std::string message;
  bool wrapped = false;                 ///< its text continued on the next line (hard wrap), now joined
  std::vector<NcclUnwind> unwind;
  NcclOrigin origin;
  std::size_t line = 0;
};

/// A collective call as NCCL_DEBUG_SUBSYS=COLL prints it: "AllReduce: opCount 139d sendbuff 0x… recvbuff 0x…
/// count 7382228 datatype 7 op 0 root 0 comm 0x… [nranks=128] stream 0x…". opCount is hexadecimal.
struct NcclCollectiveCall {
  std::string op;                       ///< "AllReduce", "Broadcast"…
  std::optional<std::uint64_t> op_count;
  std::optional<std::uint64_t> count;   ///< elements
  std::optional<int> datatype;          ///< ncclDataType_t number
  std::optional<int> red_op, root, nranks;
  std::optional<std::string> comm;
  NcclOrigin origin;
  std::size_t line = 0;
};

/// "Pattern 4, crossNic 0, nChannels 1, speed 21.000000/21.000000, type NVL/PIX, sameChannels 1" (graph
/// search): the link types of the path found, intra-node then inter-node ("NVL", "PIX", "PHB", "SYS", "NET"…).
struct NcclGraphPattern {
  std::optional<int> pattern, channels;
  std::optional<double> speed_intra, speed_inter;  ///< GB/s per channel, as NCCL's search estimates
  std::string type_intra, type_inter;
  NcclOrigin origin;
  std::size_t line = 0;
};

/// "Check P2P Type intraNodeP2pSupport 0 directMode 1" / "Check P2P Type isAllDirectP2p 1 directMode 0".
struct NcclP2pCheck {
  std::optional<bool> intra_node_p2p_support;
  std::optional<bool> all_direct_p2p;
  std::optional<int> direct_mode;
  NcclOrigin origin;
  std::size_t line = 0;
};

/// Everything read from one NCCL log. Absent facts are empty vectors / nullopt, never guessed.
struct NcclLog {
  std::string source;                  ///< the file name given, or "text"
  std::size_t lines = 0;               ///< lines in the text
  std::size_t nccl_lines = 0;          ///< lines read as NCCL lines (pieces of glued lines count once each)
  std::size_t info_lines = 0, warn_lines = 0, trace_lines = 0;
  std::vector<NcclVersionLine> versions;
  std::vector<NcclProcess> processes;  ///< in order of first appearance
  std::vector<NcclCommunicator> communicators;
  std::vector<NcclConnection> connections;
  std::vector<NcclRing> rings;
  std::vector<NcclTree> trees;
  std::vector<NcclChannelCounts> channel_counts;
  std::vector<NcclSetting> settings;
  std::vector<NcclNetDevices> net_devices;
  std::vector<NcclNetEvent> net_events;
  std::vector<NcclGdrLine> gdr_lines;
  std::vector<NcclWarning> warnings;
  std::vector<NcclUnwind> orphan_unwind;  ///< "-> N" lines with no WARN before them in their process
  /// COLL lines, at most 1 000 000 (the first). A deque, not a vector: growing it never holds two copies, which
  /// for a log of COLL lines was most of the peak memory.
  std::deque<NcclCollectiveCall> collectives;
  std::vector<NcclGraphPattern> graph_patterns;
  std::vector<NcclP2pCheck> p2p_checks;
  std::vector<std::string> notes;      ///< how damaged lines were read, each naming its line
  /// The raw lines by number, for evidence (only the lines some fact refers to are kept).
  std::map<std::size_t, std::string> evidence_lines;
};

/// Parses `text` as an NCCL debug log. `source` names it in evidence ("rank0.log"). Lines that are not NCCL
/// lines (training output, shell commands, stack frames) are skipped. Never throws for any input; a text
/// without NCCL lines gives an NcclLog with nccl_lines == 0.
NcclLog parse_nccl_log(std::string_view text, std::string source = "text");

/// Reads the file at `path` (at most 256 MiB) and parses it. Throws core::Error when it cannot be read.
NcclLog read_nccl_log_file(const std::string& path);

void to_json(nlohmann::json& j, const NcclOrigin& o);
void to_json(nlohmann::json& j, const NcclLog& log);

}  // namespace scalescope::analyze
