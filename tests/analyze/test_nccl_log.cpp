// NCCL debug log reader and findings: inline fixtures for every line format and prefix the reader accepts,
// then every NCCL log of ../shared/corpus/nccl-logs (see ../shared/corpus/SOURCES.md) with expectations
// checked by hand against each file.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "analysis/nccl_log_analysis.h"
#include "readers/nccl/nccl_log.h"

using namespace scalescope::analyze;
namespace fs = std::filesystem;

namespace {

NcclLogAnalysis analyse(const NcclLog& log) {
  std::vector<NcclLog> one{log};
  return analyze_nccl_logs(one);
}

const LogFinding* find(const NcclLogAnalysis& a, const std::string& text) {
  for (const auto& f : a.findings)
    if (f.title.find(text) != std::string::npos) return &f;
  return nullptr;
}

std::string titles(const NcclLogAnalysis& a) {
  std::string s;
  for (const auto& f : a.findings) s += "  " + f.title + "\n";
  return s;
}

}  // namespace

TEST(NcclLog, PlainInfoLineGivesHostPidThreadAndDevice) {
  auto log = parse_nccl_log("host-a:13313:13988 [3] NCCL INFO NCCL version 2.18.3+cuda12.1\n");
  ASSERT_EQ(log.versions.size(), 1u);
  EXPECT_EQ(log.versions[0].version, "2.18.3");
  EXPECT_EQ(log.versions[0].full, "2.18.3+cuda12.1");
  EXPECT_EQ(log.versions[0].origin.host, "host-a");
  EXPECT_EQ(log.versions[0].origin.pid, 13313);
  EXPECT_EQ(log.versions[0].origin.tid, 13988);
  EXPECT_EQ(log.versions[0].origin.device, 3);
  ASSERT_EQ(log.processes.size(), 1u);
  EXPECT_EQ(log.processes[0].version, "2.18.3");
  EXPECT_EQ(log.nccl_lines, 1u);
  EXPECT_EQ(log.info_lines, 1u);
}

TEST(NcclLog, LauncherPrefixesAndTimestampsAreSkipped) {
  const std::vector<std::string> lines = {
      "[1,0]<stdout>:node1:100:101 [0] NCCL INFO Using network IB",
      "12: node1:100:101 [0] NCCL INFO Using network IB",
      "[3] node1:100:101 [0] NCCL INFO Using network IB",
      "[80746] node1:100:101 [0] NCCL INFO Using network IB",
      "(RayTrainWorker pid=100, ip=192.0.2.1) node1:100:101 [0] NCCL INFO Using network IB",
      "> > > (WorkerDict pid=100) node1:100:101 [0] NCCL INFO Using network IB",
      "Fri Aug 11 12:31:45 2023[1,0]<stdout>:node1:100:101 [0] NCCL INFO Using network IB",
      "2025-11-24T03:20:21.001125857Z node1:100:101 [0] NCCL INFO Using network IB",
      "    node1:100:101 [0] NCCL INFO Using network IB",
      "job-0000-0000-worker-0 [0] NCCL INFO Using network IB",  // no pid:tid (NCCL in some containers)
  };
  for (std::size_t i = 0; i < lines.size(); ++i) {
    SCOPED_TRACE(lines[i]);
    auto log = parse_nccl_log(lines[i]);
    ASSERT_EQ(log.net_events.size(), 1u);
    EXPECT_EQ(log.net_events[0].text, "IB");
    EXPECT_EQ(log.net_events[0].origin.device, 0);
    if (i + 1 < lines.size()) {
      EXPECT_EQ(log.net_events[0].origin.host, "node1");
      EXPECT_EQ(log.net_events[0].origin.pid, 100);
    } else {
      EXPECT_EQ(log.net_events[0].origin.host, "job-0000-0000-worker-0");
      EXPECT_FALSE(log.net_events[0].origin.pid.has_value());
    }
  }
}

TEST(NcclLog, TwoLinesGluedIntoOneAreReadSeparately) {
  auto log = parse_nccl_log(
      "host-a:1:1 [2] NCCL INFO host-a:2:2 [7] NCCL INFO Broadcast: opCount 1f sendbuff 0x1 recvbuff 0x1 count 53 "
      "datatype 4 op 0 root 0 comm 0x7f [nranks=8] stream 0x5\n");
  ASSERT_EQ(log.collectives.size(), 1u);
  EXPECT_EQ(log.collectives[0].op, "Broadcast");
  EXPECT_EQ(log.collectives[0].op_count, 0x1fu);
  EXPECT_EQ(log.collectives[0].count, 53u);
  EXPECT_EQ(log.collectives[0].nranks, 8);
  EXPECT_EQ(log.collectives[0].origin.pid, 2);
  EXPECT_EQ(log.collectives[0].origin.device, 7);
  EXPECT_EQ(log.nccl_lines, 2u);
  EXPECT_EQ(log.processes.size(), 2u);
  ASSERT_FALSE(log.notes.empty());
}

TEST(NcclLog, LinesThatLostTheirPrefixAreReadWithANote) {
  auto log = parse_nccl_log(
      "AllReduce: opCount a sendbuff 0x1 recvbuff 0x1 count 10 datatype 7 op 0 root 0 comm 0x2 [nranks=4] stream 0x3\n"
      "(WorkerDict pid=5) CCL INFO Channel 08/0 : 0[0] -> 1[1] via P2P/IPC\n");
  ASSERT_EQ(log.collectives.size(), 1u);
  EXPECT_FALSE(log.collectives[0].origin.host.has_value());
  ASSERT_EQ(log.connections.size(), 1u);
  EXPECT_EQ(log.connections[0].transport, "P2P/IPC");
  EXPECT_EQ(log.notes.size(), 2u);
}

TEST(NcclLog, QuotedTagsInProseAreNotLogLines) {
  auto log = parse_nccl_log("| file.txt | the line 'net_ib.cc:1296 NCCL WARN NET/IB : Got completion with error 12' |\n"
                            "see net.cc:12 NCCL INFO Using network IB in the docs\n");
  EXPECT_EQ(log.nccl_lines, 0u);
  EXPECT_TRUE(log.warnings.empty());
  EXPECT_TRUE(log.net_events.empty());
}

TEST(NcclLog, StrippedPrefixAtLineStartIsAccepted) {
  auto log = parse_nccl_log("NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_bond_0:1/RoCE [RO]; OOB eno1:192.0.2.1<0>\n");
  ASSERT_EQ(log.net_devices.size(), 1u);
  EXPECT_EQ(log.net_devices[0].provider, "IB");
  EXPECT_EQ(log.net_devices[0].devices, (std::vector<std::string>{"mlx5_0:1/IB", "mlx5_bond_0:1/RoCE"}));
  EXPECT_TRUE(log.net_devices[0].relaxed_ordering);
  EXPECT_EQ(log.net_devices[0].oob, "eno1:192.0.2.1<0>");
}

TEST(NcclLog, WarnWithUnwindingAndHardWrap) {
  auto log = parse_nccl_log(
      "node-2:5776:5902 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer 192.0.2.5<33092> with error 12, opcode 0, len\n"
      "0, vendor err 129 (Recv)\n"
      "node-2:5776:5902 [0] NCCL INFO transport/net.cc:1134 -> 6\n"
      "node-2:5776:5903 [0] NCCL INFO proxy.cc:858 -> 6 [Proxy Thread]\n"
      "other:1:1 [0] NCCL INFO init.cc:10 -> 3\n");
  ASSERT_EQ(log.warnings.size(), 1u);
  const auto& w = log.warnings[0];
  EXPECT_EQ(w.location, "transport/net_ib.cc:1296");
  EXPECT_TRUE(w.wrapped);
  EXPECT_NE(w.message.find("len 0, vendor err 129 (Recv)"), std::string::npos);
  ASSERT_EQ(w.unwind.size(), 2u);  // the other process's unwinding is not this WARN's
  EXPECT_EQ(w.unwind[0].location, "transport/net.cc:1134");
  EXPECT_EQ(w.unwind[0].code, 6);
  EXPECT_EQ(w.unwind[1].note, "[Proxy Thread]");
  ASSERT_EQ(log.orphan_unwind.size(), 1u);
  EXPECT_EQ(log.orphan_unwind[0].code, 3);
  auto a = analyse(log);
  const auto* f = find(a, "IB completion error 12");
  ASSERT_NE(f, nullptr) << titles(a);
  EXPECT_EQ(f->severity, Severity::error);
  EXPECT_NE(f->detail.find("retry counter exceeded"), std::string::npos);
  EXPECT_NE(f->detail.find("ncclRemoteError"), std::string::npos);
  ASSERT_FALSE(f->evidence.empty());
  EXPECT_EQ(f->evidence[0].line, 1u);
}

TEST(NcclLog, ABareHostFragmentAfterAWarnIsNotItsContinuation) {
  auto log = parse_nccl_log("h:1:2 [2] misc/socket.cc:518 NCCL WARN Net : Call to recv from 192.0.2.2<1> failed : Connection reset by peer\nh\n");
  ASSERT_EQ(log.warnings.size(), 1u);
  EXPECT_FALSE(log.warnings[0].wrapped);
}

TEST(NcclLog, ConnectionsOfEveryTransport) {
  auto log = parse_nccl_log(
      "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"
      "h:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
      "h:1:1 [0] NCCL INFO Channel 00 : 2[a000] -> 3[b000] via P2P/direct pointer\n"
      "h:1:1 [0] NCCL INFO Channel 00 : 3[3] -> 4[4] via SHM/direct/direct\n"
      "h:1:1 [0] NCCL INFO Ring 00 : 3[b0] -> 0[80] via direct shared memory\n"
      "h:1:1 [0] NCCL INFO Ring 00 : 26[2] -> 24[0] via P2P/IPC\n"
      "h:1:1 [0] NCCL INFO Channel 02/0 : 1[1] -> 9[1] [receive] via NET/IB/0/GDRDMA\n"
      "h:1:1 [0] NCCL INFO Channel 09/0 : 33[1] -> 41[1] [send] via NET/IBext_v8/4\n"
      "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n"
      "h:1:1 [0] NCCL INFO Channel 03/0 : 4[0] -> 12[0] [send] via NET/AWS Libfabric/0/GDRDMA\n");
  ASSERT_EQ(log.connections.size(), 10u);
  const std::vector<std::string> transports = {"P2P/IPC", "P2P/CUMEM", "P2P/direct pointer", "SHM", "SHM", "P2P/IPC",
                                               "NET/IB", "NET/IBext_v8", "NET/Socket", "NET/AWS Libfabric"};
  for (std::size_t i = 0; i < transports.size(); ++i) EXPECT_EQ(log.connections[i].transport, transports[i]) << i;
  EXPECT_TRUE(log.connections[1].p2p_read);
  EXPECT_EQ(log.connections[2].from_tag, "a000");
  EXPECT_EQ(log.connections[3].kind, TransportKind::shm);
  EXPECT_TRUE(log.connections[5].ring_keyword);
  EXPECT_EQ(log.connections[5].from_rank, 26);
  EXPECT_EQ(log.connections[5].to_rank, 24);
  EXPECT_TRUE(log.connections[6].gdrdma);
  EXPECT_EQ(log.connections[6].direction, "receive");
  EXPECT_EQ(log.connections[6].channel, 2);
  EXPECT_FALSE(log.connections[7].gdrdma);
  EXPECT_EQ(log.connections[7].direction, "send");
  EXPECT_TRUE(log.connections[9].gdrdma);
  auto a = analyse(log);
  EXPECT_EQ(a.transports.at("P2P/IPC"), 2u);
  EXPECT_EQ(a.gdrdma_connections, 2u);
  EXPECT_NE(find(a, "fell back to sockets"), nullptr) << titles(a);
  EXPECT_NE(find(a, "without GPUDirect RDMA"), nullptr) << titles(a);
}

TEST(NcclLog, RingsTreesAndChannelCounts) {
  auto log = parse_nccl_log(
      "h:1:1 [0] NCCL INFO Channel 00/02 :    0   1   2   3\n"
      "h:1:1 [0] NCCL INFO Channel 23/24 : 0 1 2 3 4 5 6 7\n"
      "h:1:1 [0] NCCL INFO Trees [0] 5/-1/-1->4->3 [1] 14/4/-1->12->-1\n"
      "h:1:1 [0] NCCL INFO Trees [0] -1/-1/-1->3->2|2->3->-1/-1/-1\n"
      "h:1:1 [0] NCCL INFO 2 coll channels, 0 nvls channels, 2 p2p channels, 2 p2p channels per peer\n");
  ASSERT_EQ(log.rings.size(), 2u);
  EXPECT_EQ(log.rings[0].ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(log.rings[0].channels, 2);
  EXPECT_EQ(log.rings[1].channel, 23);
  ASSERT_EQ(log.trees.size(), 3u);
  EXPECT_EQ(log.trees[0].rank, 4);
  EXPECT_EQ(log.trees[0].children, (std::vector<int>{5}));
  EXPECT_EQ(log.trees[0].parent, 3);
  EXPECT_EQ(log.trees[1].children, (std::vector<int>{14, 4}));
  EXPECT_FALSE(log.trees[1].parent.has_value());
  EXPECT_EQ(log.trees[2].rank, 3);
  EXPECT_EQ(log.trees[2].parent, 2);
  ASSERT_EQ(log.channel_counts.size(), 1u);
  EXPECT_EQ(log.channel_counts[0].coll, 2);
  EXPECT_EQ(log.channel_counts[0].nvls, 0);
  EXPECT_EQ(log.channel_counts[0].p2p, 2);
  EXPECT_EQ(log.channel_counts[0].p2p_per_peer, 2);
  EXPECT_EQ(analyse(log).channels, 24);
}

TEST(NcclLog, CommunicatorsAndInitTimings) {
  auto log = parse_nccl_log(
      "h:7:8 [1] NCCL INFO ncclCommInitRank comm 0x55f68495f4f0 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 34000 commId 0x76b3 - Init START\n"
      "h:7:8 [1] NCCL INFO ncclCommInitRank comm 0x55f68495f4f0 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 34000 commId 0x76b3 - Init COMPLETE\n"
      "h:7:8 [1] NCCL INFO Init timings - ncclCommInitRank: rank 1 nranks 2 total 42.50 (kernels 0.19, bootstrap 40.02, topo 2.00)\n"
      "h:9:9 [5] NCCL INFO comm 0x5558e3c10180 rank 13 nRanks 16 nNodes 2 localRanks 8 localRank 5 MNNVL 0\n");
  ASSERT_EQ(log.communicators.size(), 2u);
  const auto& c = log.communicators[0];
  EXPECT_EQ(c.init_call, "ncclCommInitRank");
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.nranks, 2);
  EXPECT_EQ(c.cuda_dev, 1);
  EXPECT_EQ(c.nvml_dev, 1);
  EXPECT_EQ(c.bus_id, "34000");
  EXPECT_EQ(c.comm_id, "0x76b3");
  EXPECT_TRUE(c.init_complete);
  EXPECT_DOUBLE_EQ(c.init_seconds.value_or(0), 42.5);
  EXPECT_DOUBLE_EQ(c.init_phases.at("bootstrap"), 40.02);
  const auto& d = log.communicators[1];
  EXPECT_EQ(d.nranks, 16);
  EXPECT_EQ(d.nnodes, 2);
  EXPECT_EQ(d.local_ranks, 8);
  EXPECT_EQ(d.local_rank, 5);
  EXPECT_FALSE(d.cuda_dev.has_value());
  auto a = analyse(log);
  EXPECT_EQ(a.nranks, 16);
  EXPECT_EQ(a.ranks, (std::vector<int>{1, 13}));
  const auto* f = find(a, "communicator init took");
  ASSERT_NE(f, nullptr) << titles(a);
  EXPECT_EQ(f->severity, Severity::warning);
}

TEST(NcclLog, SettingsAndP2pDisabledWithShm) {
  auto log = parse_nccl_log(
      "h:1:1 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1\n"
      "h:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set to eth0\n"
      "h:1:1 [0] NCCL INFO NCCL_MAX_NCHANNELS set by environment to 1.\n"
      "h:1:1 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct\n");
  ASSERT_EQ(log.settings.size(), 3u);
  EXPECT_TRUE(log.settings[0].by_environment);
  EXPECT_EQ(log.settings[1].value, "eth0");
  EXPECT_FALSE(log.settings[1].by_environment);
  EXPECT_EQ(log.settings[2].value, "1");
  auto a = analyse(log);
  EXPECT_NE(find(a, "P2P disabled by the environment (NCCL_P2P_DISABLE=1)"), nullptr) << titles(a);
  const auto* shm = find(a, "SHM used between ranks of one node");
  ASSERT_NE(shm, nullptr) << titles(a);
  EXPECT_NE(shm->title.find("disabled by NCCL_P2P_DISABLE=1 at line 1"), std::string::npos) << shm->title;
  EXPECT_NE(find(a, "NCCL_MAX_NCHANNELS=1"), nullptr) << titles(a);
}

TEST(NcclLog, ShmWithNvlinkInTheGraphSaysSo) {
  auto log = parse_nccl_log(
      "h:1:1 [0] NCCL INFO Pattern 4, crossNic 0, nChannels 1, speed 21.000000/21.000000, type NVL/PIX, sameChannels 1\n"
      "h:1:1 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct\n");
  ASSERT_EQ(log.graph_patterns.size(), 1u);
  EXPECT_EQ(log.graph_patterns[0].type_intra, "NVL");
  EXPECT_DOUBLE_EQ(log.graph_patterns[0].speed_intra.value_or(0), 21.0);
  auto a = analyse(log);
  const auto* f = find(a, "SHM used");
  ASSERT_NE(f, nullptr) << titles(a);
  EXPECT_NE(f->title.find("NVLink"), std::string::npos);
  EXPECT_NE(f->detail.find("although the GPUs have NVLink"), std::string::npos);
  EXPECT_NE(f->title.find("the log does not say why"), std::string::npos);
}

TEST(NcclLog, ShmWithoutNvlinkEvidenceDoesNotClaimNvlink) {
  auto log = parse_nccl_log("h:1:1 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct\n");
  auto a = analyse(log);
  const auto* f = find(a, "SHM used");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title.find("NVLink"), std::string::npos);
}

TEST(NcclLog, VersionMismatchBetweenProcesses) {
  auto a = parse_nccl_log("h:1:1 [0] NCCL INFO NCCL version 2.18.3+cuda12.1\n");
  auto b = parse_nccl_log("g:2:2 [0] NCCL INFO NCCL version 2.19.3+cuda12.2\n", "rank1.log");
  std::vector<NcclLog> both{a, b};
  auto r = analyze_nccl_logs(both);
  EXPECT_EQ(r.versions, (std::vector<std::string>{"2.18.3", "2.19.3"}));
  const LogFinding* f = nullptr;
  for (const auto& x : r.findings)
    if (x.title.find("version mismatch") != std::string::npos) f = &x;
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::error);
  ASSERT_EQ(f->evidence.size(), 2u);
  EXPECT_EQ(f->evidence[1].source, "rank1.log");
  EXPECT_EQ(r.hosts, (std::vector<std::string>{"h", "g"}));
}

TEST(NcclLog, NetworkEventsAndSocketChoiceWithoutConnections) {
  auto log = parse_nccl_log(
      "h:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "h:1:1 [0] NCCL INFO NET/IB : No device found.\n"
      "h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
      "h:1:1 [0] NCCL INFO Using network Socket\n"
      "h:1:1 [7] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.13.2-aws\n");
  ASSERT_EQ(log.net_events.size(), 4u);
  EXPECT_EQ(log.net_events[0].kind, NcclNetEvent::Kind::bootstrap_interface);
  EXPECT_EQ(log.net_events[0].text, "eth0:10.0.0.1<0>");
  EXPECT_EQ(log.net_events[1].kind, NcclNetEvent::Kind::no_device);
  EXPECT_EQ(log.net_events[2].kind, NcclNetEvent::Kind::using_network);
  EXPECT_EQ(log.net_events[3].kind, NcclNetEvent::Kind::plugin);
  auto a = analyse(log);
  const auto* f = find(a, "socket network");
  ASSERT_NE(f, nullptr) << titles(a);
  EXPECT_EQ(f->severity, Severity::info);  // no connection over the network: nothing slowed down
  EXPECT_EQ(find(a, "fell back"), nullptr);
  EXPECT_EQ(a.networks, (std::vector<std::string>{"Socket", "OFI"}));
}

TEST(NcclLog, SocketAndCudaAndProxyWarnings) {
  auto log = parse_nccl_log(
      "h:1:2 [0] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to 192.0.2.2<45763> failed : Software caused connection abort\n"
      "h:1:3 [0] transport.cc:154 NCCL WARN Cuda failure 'invalid argument'\n"
      "h:1:4 [0] proxy.cc:1519 NCCL WARN [Proxy Service 0] Failed to execute operation Connect from rank 0, retcode 3\n"
      "h:1:4 [0] graph/search.cc:890 NCCL WARN Could not find a path for pattern 4\n");
  auto a = analyse(log);
  EXPECT_EQ(a.warnings, 4u);
  EXPECT_NE(find(a, "socket connection failures (1 WARN line(s); peers 192.0.2.2<45763>)"), nullptr) << titles(a);
  EXPECT_NE(find(a, "CUDA failure inside NCCL: Cuda failure 'invalid argument'"), nullptr) << titles(a);
  EXPECT_NE(find(a, "NCCL proxy failures"), nullptr) << titles(a);
  EXPECT_NE(find(a, "1 other NCCL WARN"), nullptr) << titles(a);
  EXPECT_EQ(a.findings.front().severity, Severity::error);  // errors first
}

TEST(NcclLog, CollectiveProgressDiffersBetweenProcesses) {
  auto log = parse_nccl_log(
      "a:1:1 [0] NCCL INFO AllReduce: opCount 139d sendbuff 0x1 recvbuff 0x1 count 7 datatype 7 op 0 root 0 comm 0x1 [nranks=2] stream 0x1\n"
      "b:2:2 [0] NCCL INFO AllReduce: opCount 139e sendbuff 0x1 recvbuff 0x1 count 7 datatype 7 op 0 root 0 comm 0x2 [nranks=2] stream 0x1\n");
  auto a = analyse(log);
  const auto* f = find(a, "last collective seen differs");
  ASSERT_NE(f, nullptr) << titles(a);
  EXPECT_NE(f->title.find("0x139d on a:1"), std::string::npos) << f->title;
  EXPECT_EQ(f->severity, Severity::info);
}

TEST(NcclLog, HealthyLogHasNoFindings) {
  auto log = parse_nccl_log(
      "h:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
      "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"
      "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId 0x2 - Init COMPLETE\n");
  auto a = analyse(log);
  EXPECT_TRUE(a.findings.empty()) << titles(a);
}

TEST(NcclLog, DamagedInputNeverThrows) {
  std::string junk;
  for (int i = 0; i < 4096; ++i) junk += static_cast<char>((i * 131 + 7) % 256);
  const std::vector<std::string> inputs = {
      "", "\n\n\r\r\n", junk, "NCCL INFO", "NCCL WARN\n-> 6\n", "h:1:1 [0] NCCL INFO Channel 99999999999 : x via",
      "h:1:1 [0] NCCL INFO Trees [", "h:1:1 [0] NCCL INFO Trees [0] ->->->", "h:1:1 [] NCCL INFO comm 0x rank",
      "h:99999999999999999999:1 [0] NCCL INFO Init timings rank total", "[ NCCL INFO NET/ : Using [",
      std::string(100000, 'x') + " NCCL INFO " + std::string(100000, '['), "h:1:1 [0] NCCL INFO Channel 00/ : 1 2 3",
      "h:1:1 [0] NCCL INFO a.cc:1 -> 99999999999999999999"};
  for (const auto& in : inputs) {
    NcclLog log;
    EXPECT_NO_THROW(log = parse_nccl_log(in));
    std::vector<NcclLog> one{log};
    NcclLogAnalysis a;
    EXPECT_NO_THROW(a = analyze_nccl_logs(one));
    EXPECT_NO_THROW((void)nlohmann::json(log).dump());
    EXPECT_NO_THROW((void)nlohmann::json(a).dump());
  }
}

// Found by fuzz_nccl_log (libFuzzer, ASan/UBSan): a hard-wrapped WARN whose continuation line holds bytes that
// are not UTF-8 made the JSON report throw (the continuation was appended unrepaired).
TEST(NcclLogFuzzRegression, WrappedWarnContinuationWithInvalidUtf8) {
  const std::string input =
      "h:1:2 [0] transport/$et_ib3cc:1296 NCCL WARN NET/IB : Got com\xff\xff\xffpleti6 [p\n"
      "a\xfe\xff\xff\xff\xff\xff\xff\x7f)  x\n";
  auto log = parse_nccl_log(input);
  ASSERT_EQ(log.warnings.size(), 1u);
  EXPECT_TRUE(log.warnings[0].wrapped);
  EXPECT_NO_THROW((void)nlohmann::json(log).dump());
  std::vector<NcclLog> one{log};
  EXPECT_NO_THROW((void)nlohmann::json(analyze_nccl_logs(one)).dump());
}

// ---- the corpus ----

namespace {

const fs::path kDir = fs::path(SCALESCOPE_SHARED_CORPUS_DIR) / "nccl-logs";

struct Expect {
  std::vector<std::string> versions;
  std::size_t nccl_lines = 0, processes = 0, communicators = 0, connections = 0, rings = 0, trees = 0;
  std::size_t settings = 0, net_devices = 0, warnings = 0, collectives = 0;
  std::map<std::string, std::size_t> transports;
  std::vector<std::string> findings;  // substrings of the titles, one per finding, all of them
};

const std::map<std::string, Expect>& expectations() {
  static const std::map<std::string, Expect> e = {
      {"awsome-dt_fsdp_slurm_srun_label_prefix_nccl2.26.2_aws-ofi-nccl_mixed_with_training_log.txt",
       {{"2.26.2"}, 4, 3, 0, 0, 0, 0, 0, 0, 0, 0, {}, {}}},
      {"mlengineering_NET_selection_lines_prefix_stripped_FastSocket_IB_RoCE_bond.txt",
       {{}, 4, 0, 0, 0, 0, 0, 0, 4, 0, 0, {}, {}}},
      {"mlengineering_azure_2node_IB_completion_error12_WARN_line_hard_wrapped.txt",
       {{}, 5, 1, 0, 0, 0, 0, 0, 1, 1, 0, {}, {"IB completion error 12"}}},
      {"nccl-1027_8gpu_Channel_ring_list_padded_spaces_SHM_direct_P2P_direct_pointer_read_truncated.log",
       {{}, 16, 1, 0, 7, 2, 4, 0, 0, 0, 0, {{"P2P/direct pointer", 6}, {"SHM", 1}},
        {"SHM used between ranks of one node (rank pairs 3-4): P2P not used (not available between these GPUs, while other pairs use it)"}}},
      {"nccl-1193_ray_train_worker_prefix_COLL_allreduce_opcount_hex_128ranks_L4_truncated.log",
       {{}, 5, 4, 0, 0, 0, 0, 0, 0, 0, 5, {}, {"opCount 0x139d on host-a:615 versus 0x139e"}}},
      {"nccl-1232_rank_in_brackets_line_prefix_NET_Socket_send_receive_SHM_noncontiguous_ranks_truncated.log",
       {{}, 16, 4, 0, 11, 0, 0, 0, 0, 0, 0, {{"NET/Socket", 9}, {"SHM", 2}},
        {"SHM used between ranks of one node (rank pairs 0-2)", "NCCL fell back to sockets"}}},
      {"nccl-1357_2node_16xH100_trees_16ch_comm_nNodes_localRanks_MNNVL0_truncated.log",
       {{}, 7, 3, 2, 0, 0, 39, 0, 0, 0, 0, {}, {}}},
      {"nccl-147_2018_two_lines_interleaved_on_one_line_COLL_broadcast_launch_mode_parallel_truncated.log",
       {{}, 8, 6, 0, 0, 0, 0, 0, 0, 0, 7, {}, {"the last collective seen differs between processes"}}},
      {"nccl-1538_k8s_pod_uuid_hostname_P2P_CUMEM_nccl2.22.3_truncated.log",
       {{}, 12, 6, 0, 11, 0, 0, 0, 0, 0, 0, {{"P2P/CUMEM", 11}}, {}}},
      {"nccl-1672_ray_WorkerDict_prefix_nested_blockquote_markers_garbled_interleaved_channels_8gpu_truncated.log",
       {{}, 8, 1, 1, 1, 4, 0, 0, 0, 0, 0, {{"P2P/IPC", 1}}, {}}},
      {"nccl-1706_2gpu_single_process_ncclCommInitAll_busId_commId_Init_COMPLETE_tuner_plugin_truncated.log",
       {{}, 13, 1, 2, 0, 0, 0, 0, 0, 0, 0, {}, {"no P2P support between some GPUs of a node (intraNodeP2pSupport 0)"}}},
      {"nccl-1814_NET_IBext_v8_plugin_transport_P2P_CUMEM_rank33-41_truncated.log",
       {{}, 16, 7, 0, 13, 0, 0, 0, 0, 0, 0, {{"NET/IBext_v8", 1}, {"P2P/CUMEM", 12}}, {"InfiniBand used without GPUDirect RDMA"}}},
      {"nccl-1920_docker_rfc3339_timestamps_no_pid_tid_prefix_socket_WARN_bootstrap_unwind_truncated.log",
       {{}, 8, 1, 0, 0, 0, 0, 0, 0, 1, 0, {}, {"socket connection failures (1 WARN line(s); peers 192.0.2.1<52905>)"}}},
      {"nccl-300_nccl2.5.6_docker_host_trees_pipe_format_direct_shared_memory_wrapped_cmd_tmux_junk_truncated.log",
       {{}, 11, 3, 0, 2, 0, 8, 0, 0, 0, 0, {{"SHM", 2}}, {"SHM used between ranks of one node (rank pairs 0-3, 1-2)"}}},
      {"nccl-340_nccl2.6.4_2gpu_NVL_graph_search_patterns_Latency_AlgBw_table_env_overrides_truncated.log",
       {{}, 13, 1, 0, 0, 1, 1, 2, 0, 0, 0, {}, {"NCCL_MAX_NCHANNELS=1, NCCL_NTHREADS=256"}}},
      {"nccl-671_DGX1_4xV100_single_process_P2P_direct_pointer_busid_in_brackets_truncated.log",
       {{}, 16, 1, 0, 16, 0, 0, 0, 0, 0, 0, {{"P2P/direct pointer", 16}}, {}}},
      {"nccl-957_ctime_timestamp_glued_to_openmpi_tag_WARN_cuda_failure_proxy_service_nccl2.18.3_truncated.log",
       {{}, 6, 2, 0, 0, 0, 0, 0, 0, 6, 0, {}, {"CUDA failure inside NCCL: Cuda failure 'invalid argument'", "NCCL proxy failures (4 WARN line(s))"}}},
      {"nccl-963_docker_container_id_host_WARN_Net_connect_recv_reset_async_thread_truncated.log",
       {{}, 18, 1, 0, 0, 0, 0, 0, 0, 3, 0, {}, {"socket connection failures (3 WARN line(s); peers 192.0.2.2<40537>)"}}},
      {"nccl-tests-166_socket_WARN_connect_abort_proxy_unwind_SHM_channels_recv_failed_polling_truncated.log",
       {{}, 18, 1, 0, 2, 0, 0, 0, 0, 4, 0, {{"SHM", 2}},
        {"socket connection failures (2 WARN line(s)", "NCCL proxy failures (2 WARN line(s))", "SHM used between ranks of one node (rank pairs 4-5)"}}},
      {"nccl-tests-185_DGX_H100_socketProgressOpt_WARN_recv_reset_net_ib_unwind_truncated.log",
       {{}, 17, 1, 0, 0, 0, 0, 0, 0, 3, 0, {}, {"socket connection failures (3 WARN line(s); peers 192.0.2.1<35201>, 192.0.2.1<43351>, 192.0.2.1<52035>)"}}},
      {"nccl-tests-29_32rank_4node_Init_COMPLETE_comm_rank_nranks_cudaDev_nvmlDev_truncated.log",
       {{}, 13, 13, 13, 0, 0, 0, 0, 0, 0, 0, {}, {}}},
      {"nccl-tests-29_32rank_4node_nccl2.4_Ring_00_busid_less_P2P_IPC_truncated.log",
       {{}, 19, 19, 0, 19, 0, 0, 0, 0, 0, 0, {{"P2P/IPC", 19}}, {}}},
  };
  return e;
}

std::vector<fs::path> corpus_logs() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kDir))
    if (entry.is_regular_file() && entry.path().filename().string().rfind("watchdog_", 0) != 0) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST(NcclLogCorpus, EveryNcclLogHasAnExpectation) {
  if (!fs::is_directory(kDir)) GTEST_SKIP() << "shared corpus not found at " << kDir << " (checkout without ../shared)";
  for (const auto& f : corpus_logs())
    EXPECT_TRUE(expectations().count(f.filename().string()))
        << "new corpus file without an expectation in test_nccl_log.cpp: " << f.filename();
}

TEST(NcclLogCorpus, EachFileReadsAsCheckedByHand) {
  if (!fs::is_directory(kDir)) GTEST_SKIP() << "shared corpus not found at " << kDir << " (checkout without ../shared)";
  for (const auto& path : corpus_logs()) {
    auto it = expectations().find(path.filename().string());
    if (it == expectations().end()) continue;
    SCOPED_TRACE(path.filename().string());
    const auto& e = it->second;
    const auto log = read_nccl_log_file(path.string());
    std::vector<std::string> versions;
    for (const auto& v : log.versions) versions.push_back(v.version);
    EXPECT_EQ(versions, e.versions);
    EXPECT_EQ(log.nccl_lines, e.nccl_lines);
    EXPECT_EQ(log.processes.size(), e.processes);
    EXPECT_EQ(log.communicators.size(), e.communicators);
    EXPECT_EQ(log.connections.size(), e.connections);
    EXPECT_EQ(log.rings.size(), e.rings);
    EXPECT_EQ(log.trees.size(), e.trees);
    EXPECT_EQ(log.settings.size(), e.settings);
    EXPECT_EQ(log.net_devices.size(), e.net_devices);
    EXPECT_EQ(log.warnings.size(), e.warnings);
    EXPECT_EQ(log.collectives.size(), e.collectives);
    const auto a = analyse(log);
    EXPECT_EQ(a.transports, e.transports);
    EXPECT_EQ(a.findings.size(), e.findings.size()) << titles(a);
    for (const auto& want : e.findings) EXPECT_NE(find(a, want), nullptr) << "missing finding '" << want << "' in\n" << titles(a);
    EXPECT_NO_THROW((void)nlohmann::json(log).dump());
  }
}

TEST(NcclLogCorpus, DetailsCheckedByHand) {
  if (!fs::is_directory(kDir)) GTEST_SKIP() << "shared corpus not found at " << kDir << " (checkout without ../shared)";
  auto read = [](const std::string& prefix) {
    for (const auto& p : corpus_logs())
      if (p.filename().string().rfind(prefix, 0) == 0) return read_nccl_log_file(p.string());
    ADD_FAILURE() << "no corpus file " << prefix;
    return NcclLog{};
  };
  {  // ncclCommInitAll with busId and commId; the second line is cut before "Init COMPLETE"
    auto log = read("nccl-1706_");
    ASSERT_EQ(log.communicators.size(), 2u);
    EXPECT_EQ(log.communicators[0].rank, 1);
    EXPECT_EQ(log.communicators[0].bus_id, "34000");
    EXPECT_EQ(log.communicators[0].comm_id, "0x76b3b6be637caf1c");
    EXPECT_TRUE(log.communicators[0].init_complete);
    EXPECT_EQ(log.communicators[1].bus_id, "f000");
    EXPECT_FALSE(log.communicators[1].init_complete);
    ASSERT_EQ(log.channel_counts.size(), 2u);
    EXPECT_EQ(log.channel_counts[0].collnet, 4);
  }
  {  // 32 ranks on 4 hosts, rank 15 on server2 cudaDev 7
    auto log = read("nccl-tests-29_32rank_4node_Init");
    auto a = analyse(log);
    EXPECT_EQ(a.nranks, 32);
    EXPECT_EQ(a.hosts.size(), 4u);
    EXPECT_EQ(log.communicators[0].rank, 15);
    EXPECT_EQ(log.communicators[0].cuda_dev, 7);
    EXPECT_EQ(log.communicators[0].origin.host, "server2");
  }
  {  // the hard-wrapped WARN and its unwinding to the proxy thread
    auto log = read("mlengineering_azure_");
    ASSERT_EQ(log.warnings.size(), 1u);
    EXPECT_TRUE(log.warnings[0].wrapped);
    EXPECT_EQ(log.warnings[0].unwind.size(), 3u);
    EXPECT_EQ(log.net_devices[0].oob, "eth0:192.0.2.4<0>");
  }
  {  // NCCL without pid:tid, timestamps before it; the WARN's unwinding names calls
    auto log = read("nccl-1920_");
    ASSERT_EQ(log.warnings.size(), 1u);
    EXPECT_EQ(log.warnings[0].origin.host, "host-a");
    EXPECT_EQ(log.warnings[0].origin.device, 5);
    EXPECT_EQ(log.warnings[0].unwind.size(), 7u);
    EXPECT_EQ(log.warnings[0].unwind[2].note, "socketWait(NCCL_SOCKET_SEND, sock, &sock->type, sizeof(sock->type), &sent)");
  }
  {  // ctime glued to Open MPI's tag: host and pid still read
    auto log = read("nccl-957_");
    EXPECT_EQ(log.warnings[0].origin.host, "host-a");
    EXPECT_EQ(log.warnings[0].origin.pid, 1850301);
    EXPECT_EQ(log.warnings[0].location, "transport.cc:154");
  }
  {  // 2018: two processes' lines in one; an orphan COLL line
    auto log = read("nccl-147_");
    EXPECT_EQ(log.notes.size(), 2u);
    EXPECT_EQ(log.collectives[0].origin.pid, 32629);
  }
}

TEST(NcclLog, AVersionCutShortIsNotUsed) {
  // "2.1" of a cut "2.18.5": a version mismatch against the other rank's 2.18.5 would be false.
  const auto log = parse_nccl_log("node01:5678:5678 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
                                  "node01:5678:5678 [0] NCCL INFO NCCL version 2.1",
                                  "cut.log");
  EXPECT_TRUE(log.versions.empty());
  ASSERT_FALSE(log.notes.empty());
  EXPECT_NE(log.notes.back().find("NCCL version '2.1' is not major.minor.patch"), std::string::npos) << log.notes.back();
  const auto whole = parse_nccl_log("node01:1234:1234 [0] NCCL INFO NCCL version 2.18.5+cuda12.2\n", "whole.log");
  ASSERT_EQ(whole.versions.size(), 1u);
  EXPECT_EQ(whole.versions[0].version, "2.18.5");
}
