// scalescope's NCCL profiler plugin on the CPU: the recorder's records and file, the plugin driven through NCCL's
// v5 interface as NCCL drives it (loaded with dlopen, the symbol NCCL looks up), and analyze's reader of the file.
// The interface against a real NCCL is checked on a GPU by bench/device-nccl-plugin.sh.

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdarg>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "readers/input_kind.h"
#include "core/error.h"
#include "readers/nccl/nccl_profile.h"
#include "evidence/record_facts.h"
#include "profile/nccl_plugin/abi_v5.h"
#include "profile/nccl_plugin/recorder.h"
#include "support/scratch_dir.h"

namespace {

using namespace scalescope;
namespace fs = std::filesystem;

std::vector<std::string> lines_of(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

nccl_plugin::CommInfo comm(int rank = 0, int nranks = 2) {
  nccl_plugin::CommInfo c;
  c.comm_id = 0xabcdef0123456789ull;
  c.comm_name = "pg \"0\"";
  c.nnodes = 1;
  c.nranks = nranks;
  c.rank = rank;
  c.host = "node-a";
  c.pid = 4242;
  return c;
}

nccl_plugin::OpStart allreduce(std::uint64_t seq, std::size_t count) {
  nccl_plugin::OpStart op;
  op.seq = seq;
  op.func = "AllReduce";
  op.datatype = "ncclBfloat16";
  op.count = count;
  op.channels = 4;
  op.algo = "RING";
  op.proto = "SIMPLE";
  return op;
}

TEST(NcclPluginRecorder, WritesHeaderAndOneLinePerOperationWithGpuTimeAcrossChannels) {
  const auto dir = scalescope::testing::scratch_dir("nccl_recorder");
  const auto path = dir / "p.jsonl";
  {
    nccl_plugin::Recorder rec(comm(), path.string());
    ASSERT_TRUE(rec.ok()) << rec.error();
    auto* a = rec.start_op(allreduce(7, 1000));
    nccl_plugin::Recorder::stop_op(a);
    nccl_plugin::Recorder::kernel_start(a, 5000);
    nccl_plugin::Recorder::kernel_start(a, 4000);  // channels start in any order
    nccl_plugin::Recorder::kernel_stop(a, 9000);
    nccl_plugin::Recorder::kernel_stop(a, 12500);
    auto* b = rec.start_op(allreduce(8, 10));  // never reached the GPU
    (void)b;
  }  // the destructor flushes
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 3u);
  const auto h = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(h["schema"], "scalescope.nccl-profile/1");
  EXPECT_EQ(h["comm_name"], "pg \"0\"");
  EXPECT_EQ(h["comm_id"], "0xabcdef0123456789");
  EXPECT_EQ(h["nranks"], 2);
  const auto a = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(a["op"], "AllReduce");
  EXPECT_EQ(a["seq"], 7);
  EXPECT_EQ(a["count"], 1000);
  EXPECT_EQ(a["algo"], "RING");
  EXPECT_EQ(a["gpu_start_ns"], 4000);
  EXPECT_EQ(a["gpu_ns"], 8500);  // first start to last stop
  EXPECT_EQ(a["kernel_channels"], 2);
  EXPECT_TRUE(a.contains("enqueue_ns"));
  const auto b = nlohmann::json::parse(lines[2]);
  EXPECT_FALSE(b.contains("gpu_ns"));
  EXPECT_EQ(b["kernel_channels"], 0);
  EXPECT_LT(lines[1].size(), 400u);  // "a few hundred bytes per collective"
  fs::remove_all(dir);
}

TEST(NcclPluginRecorder, RingWritesTheOldestRecordsInOrderWhenSlotsAreReused) {
  const auto dir = scalescope::testing::scratch_dir("nccl_recorder_ring");
  const auto path = dir / "p.jsonl";
  {
    nccl_plugin::Recorder rec(comm(), path.string(), /*capacity=*/3, /*flush_bytes=*/1);
    for (int i = 0; i < 10; ++i) rec.start_op(allreduce(i, 1 + i));
    // 7 written out by reuse (flushed at once: flush_bytes 1), 3 still held
    EXPECT_EQ(lines_of(path).size(), 1u + 7u);
  }
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 11u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(nlohmann::json::parse(lines[1 + i])["seq"], i) << lines[1 + i];
  fs::remove_all(dir);
}

TEST(NcclPluginRecorder, NamesThatAreNotIdentifiersCannotBreakTheLine) {
  const auto dir = scalescope::testing::scratch_dir("nccl_recorder_names");
  const auto path = dir / "p.jsonl";
  {
    nccl_plugin::Recorder rec(comm(), path.string());
    auto op = allreduce(1, 1);
    op.func = "All\"Re\nduce";
    op.datatype = nullptr;
    op.algo = "A_VERY_LONG_ALGORITHM_NAME_THAT_DOES_NOT_FIT";
    rec.start_op(op);
  }
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 2u);
  const auto j = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(j["op"], "All_Re_duce");
  EXPECT_EQ(j["type"], "");
  EXPECT_EQ(j["algo"].template get<std::string>().size(), 23u);
  fs::remove_all(dir);
}

TEST(NcclPluginRecorder, UnwritablePathIsReportedNotFatal) {
  nccl_plugin::Recorder rec(comm(), "/nonexistent-dir-scalescope/x.jsonl");
  EXPECT_FALSE(rec.ok());
  EXPECT_NE(rec.error().find("/nonexistent-dir-scalescope/x.jsonl"), std::string::npos);
  auto* r = rec.start_op(allreduce(1, 1));  // still usable: records go nowhere
  EXPECT_NE(r, nullptr);
  rec.flush_all();
}

// ── the plugin as NCCL loads and calls it ──

int g_warnings = 0;
void logger(int level, unsigned long, const char*, int, const char*, ...) {
  if (level == 2) ++g_warnings;
}

struct LoadedPlugin {
  void* lib = nullptr;
  nccl_abi::ProfilerV5* api = nullptr;
  LoadedPlugin() {
    lib = dlopen(SCALESCOPE_NCCL_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (lib) api = static_cast<nccl_abi::ProfilerV5*>(dlsym(lib, "ncclProfiler_v5"));
  }
  ~LoadedPlugin() {
    if (lib) dlclose(lib);
  }
};

TEST(NcclPluginAbi, RecordsCollectivesSendRecvAndChannelTimesThroughTheV5Interface) {
  const auto dir = scalescope::testing::scratch_dir("nccl_plugin_abi");
  ASSERT_EQ(setenv("SCALESCOPE_NCCL_PROFILE_DIR", dir.c_str(), 1), 0);
  LoadedPlugin p;
  ASSERT_NE(p.lib, nullptr) << dlerror();
  ASSERT_NE(p.api, nullptr) << "ncclProfiler_v5 not exported";
  EXPECT_STREQ(p.api->name, "scalescope");
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(p.api->init(&ctx, 0x1234, &mask, "", 1, 2, 1, logger), nccl_abi::kSuccess);
  ASSERT_NE(ctx, nullptr);
  EXPECT_TRUE(mask & nccl_abi::kColl);
  EXPECT_TRUE(mask & nccl_abi::kKernelCh);

  // A group event (not recorded), then a collective as NCCL's ncclProfilerStartTaskEvents fills it.
  nccl_abi::EventDescrV5 group{};
  group.type = nccl_abi::kGroup;
  void* gh = reinterpret_cast<void*>(0x1);
  ASSERT_EQ(p.api->startEvent(ctx, &gh, &group), nccl_abi::kSuccess);
  EXPECT_EQ(gh, nullptr);
  EXPECT_EQ(p.api->stopEvent(gh), nccl_abi::kSuccess);

  nccl_abi::EventDescrV5 coll{};
  coll.type = nccl_abi::kColl;
  coll.rank = 1;
  coll.coll.seqNumber = 3;
  coll.coll.func = "AllReduce";
  coll.coll.count = 6553600;
  coll.coll.root = 0;
  coll.coll.datatype = "ncclFloat32";
  coll.coll.nChannels = 2;
  coll.coll.algo = "RING";
  coll.coll.proto = "SIMPLE";
  void* ch = nullptr;
  ASSERT_EQ(p.api->startEvent(ctx, &ch, &coll), nccl_abi::kSuccess);
  ASSERT_NE(ch, nullptr);
  ASSERT_EQ(p.api->stopEvent(ch), nccl_abi::kSuccess);  // NCCL stops it once enqueued, before its kernel runs

  for (int c = 0; c < 2; ++c) {  // the proxy thread: one kernel-channel event per channel, parent the collective
    nccl_abi::EventDescrV5 k{};
    k.type = nccl_abi::kKernelCh;
    k.parentObj = ch;
    k.kernelCh.channelId = static_cast<std::uint8_t>(c);
    k.kernelCh.pTimer = 1'000'000 + 100 * c;
    void* kh = nullptr;
    ASSERT_EQ(p.api->startEvent(ctx, &kh, &k), nccl_abi::kSuccess);
    ASSERT_NE(kh, nullptr);
    nccl_abi::EventStateArgsV5 args{};
    args.kernelCh.pTimer = 1'000'000 + 524'288 + 50 * c;  // ≈ 524 µs for 26.2 MB
    ASSERT_EQ(p.api->recordEventState(kh, nccl_abi::kKernelChStop, &args), nccl_abi::kSuccess);
    ASSERT_EQ(p.api->stopEvent(kh), nccl_abi::kSuccess);
  }
  nccl_abi::EventDescrV5 send{};
  send.type = nccl_abi::kP2p;
  send.p2p.func = "Send";
  send.p2p.datatype = "ncclInt8";
  send.p2p.count = 4096;
  send.p2p.peer = 0;
  void* sh = nullptr;
  ASSERT_EQ(p.api->startEvent(ctx, &sh, &send), nccl_abi::kSuccess);
  ASSERT_EQ(p.api->stopEvent(sh), nccl_abi::kSuccess);
  ASSERT_EQ(p.api->finalize(ctx), nccl_abi::kSuccess);

  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(files[0].filename().string().find(".0000000000001234.r1.jsonl"), std::string::npos) << files[0];
  std::stringstream ss;
  ss << std::ifstream(files[0]).rdbuf();
  const std::string text = ss.str();

  // analyze reads it back: kind, operations, bytes and busbw (2 ranks: all-reduce factor 2·1/2 = 1).
  const auto det = analyze::detect_input(text, files[0].string(), true);
  ASSERT_TRUE(det.has(analyze::InputKind::nccl_profile)) << det.reason;
  const auto prof = analyze::parse_nccl_profile(text, files[0].string());
  EXPECT_EQ(prof.rank, 1);
  EXPECT_EQ(prof.nranks, 2);
  ASSERT_EQ(prof.ops.size(), 2u);
  EXPECT_EQ(prof.ops[0].size_bytes, 26214400u);
  ASSERT_TRUE(prof.ops[0].gpu_us);
  EXPECT_NEAR(*prof.ops[0].gpu_us, 524.338, 1e-3);
  EXPECT_FALSE(prof.ops[1].gpu_us);
  const auto s = analyze::summarize_nccl_profile(prof);
  ASSERT_FALSE(s.rows.empty());
  EXPECT_EQ(s.rows[0].op, "AllReduce");
  ASSERT_TRUE(s.rows[0].busbw_gbps);
  EXPECT_NEAR(*s.rows[0].busbw_gbps, 26214400 / 524338.0, 1e-3);
  fs::remove_all(dir);
  unsetenv("SCALESCOPE_NCCL_PROFILE_DIR");
}

TEST(NcclPluginAbi, AnUnwritableDirectoryTurnsThePluginOffWithAWarning) {
  ASSERT_EQ(setenv("SCALESCOPE_NCCL_PROFILE_DIR", "/nonexistent-dir-scalescope", 1), 0);
  LoadedPlugin p;
  ASSERT_NE(p.api, nullptr);
  void* ctx = reinterpret_cast<void*>(0x1);
  int mask = 70;  // NCCL's one process-wide mask, set by another communicator's init
  g_warnings = 0;
  EXPECT_EQ(p.api->init(&ctx, 1, &mask, "x", 1, 2, 0, logger), nccl_abi::kSuccess);  // never fails the job
  EXPECT_EQ(ctx, nullptr);
  EXPECT_EQ(mask, 70);  // left as it was: the other communicator keeps its events
  EXPECT_EQ(g_warnings, 1);
  nccl_abi::EventDescrV5 coll{};
  coll.type = nccl_abi::kColl;
  void* h = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(p.api->startEvent(ctx, &h, &coll), nccl_abi::kSuccess);
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(p.api->finalize(ctx), nccl_abi::kSuccess);
  unsetenv("SCALESCOPE_NCCL_PROFILE_DIR");
}

// ── analyze's reader on a hand-written record ──

const char* kRecord =
    R"({"schema":"scalescope.nccl-profile/1","nccl_profiler_api":"v5","comm_id":"0x01","comm_name":"","rank":0,"nranks":4,"nnodes":1,"host":"h","pid":1})"
    "\n"
    R"({"i":0,"seq":0,"op":"AllGather","type":"ncclBfloat16","count":1000000,"root":0,"algo":"RING","proto":"SIMPLE","channels":8,"host_ns":1000000000,"gpu_start_ns":5,"gpu_ns":100000,"kernel_channels":8})"
    "\n"
    R"({"i":1,"seq":1,"op":"AllGather","type":"ncclBfloat16","count":1000000,"root":0,"algo":"RING","proto":"SIMPLE","channels":8,"host_ns":1500000000,"gpu_start_ns":5,"gpu_ns":300000,"kernel_channels":8})"
    "\n"
    R"({"i":2,"seq":2,"op":"AllGather","type":"ncclBfloat16","count":1000000,"root":0,"algo":"RING","proto":"SIMPLE","channels":8,"host_ns":2000000000,"gpu_start_ns":5,"gpu_ns":200000,"kernel_channels":8})"
    "\n"
    R"({"i":3,"seq":0,"op":"Broadc)";  // cut short

TEST(NcclProfileReader, SizesFollowNcclTestsAndBusbwUsesTheMedianTime) {
  const auto p = analyze::parse_nccl_profile(kRecord, "rec.jsonl");
  EXPECT_EQ(p.unreadable_lines, 1u);
  ASSERT_EQ(p.warnings.size(), 1u);
  ASSERT_EQ(p.ops.size(), 3u);
  EXPECT_EQ(p.ops[0].size_bytes, 8000000u);  // all-gather: count per rank × 2 B × 4 ranks
  const auto s = analyze::summarize_nccl_profile(p);
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_EQ(s.rows[0].calls, 3u);
  EXPECT_DOUBLE_EQ(s.rows[0].median_gpu_us, 200.0);
  ASSERT_TRUE(s.rows[0].algbw_gbps);
  EXPECT_DOUBLE_EQ(*s.rows[0].algbw_gbps, 40.0);          // 8 MB / 200 µs
  EXPECT_DOUBLE_EQ(*s.rows[0].busbw_gbps, 40.0 * 3 / 4);  // (n-1)/n
  EXPECT_NEAR(s.span_s, 1.0, 1e-9);
  const auto sw = analyze::nccl_profile_sweep(p, comm::Collective::all_gather);
  ASSERT_TRUE(sw);
  EXPECT_EQ(sw->ranks, 4);
  ASSERT_EQ(sw->rows.size(), 1u);
  EXPECT_DOUBLE_EQ(*sw->rows[0].out_of_place.busbw_gbps, 30.0);
  EXPECT_FALSE(analyze::nccl_profile_sweep(p, comm::Collective::all_reduce));
  const auto r = diagnose::facts_from_nccl_profile(p, "rec.jsonl");
  EXPECT_FALSE(r.facts.of<diagnose::WorldShape>().empty());
}

TEST(NcclProfileReader, ImplausibleRecordsAreLeftOutAndSaidNotTurnedIntoFigures) {
  const std::string head =
      R"({"schema":"scalescope.nccl-profile/1","comm_id":"0x01","rank":0,"nranks":8,"nnodes":1,"host":"h","pid":1})" "\n";
  const std::string text = head +
      R"({"op":"AllReduce","type":"ncclFloat32","count":-1,"gpu_ns":1000})" "\n"
      R"({"op":"AllGather","type":"ncclFloat64","count":2305843009213693952,"gpu_ns":1000})" "\n"
      R"({"op":"AllReduce","type":"ncclFloat32","count":1000,"gpu_ns":-5000})" "\n"
      R"({"op":"AllGather","type":"Unknown","count":100000000,"gpu_ns":1000000})" "\n";
  const auto p = analyze::parse_nccl_profile(text, "bad.jsonl");
  EXPECT_EQ(p.implausible, 3u);
  EXPECT_EQ(p.unknown_type, 1u);
  ASSERT_EQ(p.ops.size(), 2u);
  EXPECT_FALSE(p.ops[0].gpu_us);
  const auto s = analyze::summarize_nccl_profile(p);
  for (const auto& r : s.rows) EXPECT_FALSE(r.busbw_gbps) << r.op;  // no size known or no time: no bandwidth
  EXPECT_EQ(p.warnings.size(), 2u);
  // A header whose rank count is not a whole number in range is refused, naming the field.
  for (const char* bad : {R"("nranks":"8")", R"("nranks":0)", R"("nranks":4294967297)", R"("nranks":1e300)"}) {
    const std::string h = std::string(R"({"schema":"scalescope.nccl-profile/1","rank":0,"nnodes":1,)") + bad + "}\n";
    try {
      (void)analyze::parse_nccl_profile(h, "h.jsonl");
      ADD_FAILURE() << bad;
    } catch (const core::Error& e) {
      EXPECT_NE(std::string(e.what()).find("nranks"), std::string::npos) << e.what();
    }
  }
  // A file whose writer died mid-way can end in NUL bytes: still read as what it is.
  const std::string nul_tail = head + R"({"op":"AllReduce","type":"ncclFloat32","count":1000,"gpu_ns":5000})" "\n" + std::string(4096, '\0');
  const auto det = analyze::detect_input(nul_tail, "t.jsonl", true);
  EXPECT_TRUE(det.has(analyze::InputKind::nccl_profile)) << det.reason;
  EXPECT_EQ(analyze::parse_nccl_profile(nul_tail, "t.jsonl").ops.size(), 1u);
}

TEST(NcclPluginRecorder, AStopWithoutItsStartIsDropped) {
  const auto dir = scalescope::testing::scratch_dir("nccl_recorder_late");
  {
    nccl_plugin::Recorder rec(comm(), (dir / "p.jsonl").string(), 1);
    auto* a = rec.start_op(allreduce(0, 1));
    nccl_plugin::Recorder::kernel_start(a, 10);
    auto* b = rec.start_op(allreduce(1, 1));  // the same slot (capacity 1)
    nccl_plugin::Recorder::kernel_stop(b, 20);  // op 0's late stop lands on op 1, which started no channel
  }
  const auto lines = lines_of(dir / "p.jsonl");
  ASSERT_EQ(lines.size(), 3u);
  const auto j = nlohmann::json::parse(lines[2]);
  EXPECT_EQ(j["kernel_channels"], 0);
  EXPECT_FALSE(j.contains("channels_unfinished"));
  fs::remove_all(dir);
}

TEST(NcclPluginRecorder, ANameThatIsNotUtf8StaysValidJson) {
  auto c = comm();
  c.comm_name = "pg\xff\xfe";
  EXPECT_NO_THROW((void)nlohmann::json::parse(nccl_plugin::Recorder::header_line(c)));
}

TEST(NcclProfileReader, AFileWithoutTheHeaderIsRefusedNamingWhatWasExpected) {
  try {
    (void)analyze::parse_nccl_profile("{\"op\":\"AllReduce\"}\n", "x.jsonl");
    FAIL() << "no error";
  } catch (const core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("scalescope.nccl-profile/1"), std::string::npos);
  }
  EXPECT_FALSE(analyze::detect_input("{\"op\":\"AllReduce\"}\n", "x.jsonl", true).has(analyze::InputKind::nccl_profile));
}

}  // namespace

namespace {

// Records the plugin wrote under NCCL 2.28.9 on the lent H200 (tests/fixtures/nccl-plugin-h200/README.md).
std::string fixture(const std::string& prefix) {
  const fs::path dir = fs::path(SCALESCOPE_SOURCE_DIR) / "tests/fixtures/nccl-plugin-h200";
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) {
      std::stringstream ss;
      ss << std::ifstream(e.path()).rdbuf();
      return ss.str();
    }
  return {};
}

TEST(NcclProfileReader, RealDdpRecordFromTheH200) {
  const auto text = fixture("nccl-profile.vm.1467.");
  ASSERT_FALSE(text.empty());
  const auto p = analyze::parse_nccl_profile(text, "ddp.jsonl");
  EXPECT_EQ(p.unreadable_lines, 0u);
  EXPECT_EQ(p.nranks, 2);
  EXPECT_EQ(p.nnodes, 2);
  const auto s = analyze::summarize_nccl_profile(p);
  EXPECT_EQ(s.ops, 404u);
  EXPECT_EQ(s.timed, 404u);  // every collective got its kernel-channel times from NCCL
  ASSERT_FALSE(s.rows.empty());
  const auto& top = s.rows[0];  // DDP's larger bucket: 12.59 M bf16 gradients, once per step
  EXPECT_EQ(top.op, "AllReduce");
  EXPECT_EQ(top.size_bytes, 25178112u);
  EXPECT_EQ(top.calls, 199u);
  EXPECT_EQ(top.algo, "RING");
  EXPECT_NEAR(top.median_gpu_us, 18047, 50);
  const auto sw = analyze::nccl_profile_sweep(p, comm::Collective::all_reduce);
  ASSERT_TRUE(sw);
  EXPECT_EQ(sw->rows.size(), 3u);
}

TEST(NcclProfileReader, RealSweepRecordHasEverySizeTimed) {
  const auto text = fixture("nccl-profile.vm.1202.");
  ASSERT_FALSE(text.empty());
  const auto p = analyze::parse_nccl_profile(text, "sweep.jsonl");
  const auto sw = analyze::nccl_profile_sweep(p, comm::Collective::all_reduce);
  ASSERT_TRUE(sw);
  ASSERT_EQ(sw->rows.size(), 9u);  // 1 KiB … 64 MiB, ×4
  EXPECT_EQ(sw->rows.front().size_bytes, 1024u);
  EXPECT_EQ(sw->rows.back().size_bytes, 67108864u);
  // 64 MiB took 36.1 ms by CUDA events around 20 calls; the plugin's median GPU time agrees within 1 %.
  EXPECT_NEAR(*sw->rows.back().out_of_place.time_us, 36084, 361);
}

}  // namespace
