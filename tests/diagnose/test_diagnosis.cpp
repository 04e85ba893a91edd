// The diagnosis engine: one fixture of the project's own per cause id (tests/fixtures/diagnosis/<id>/, evidence
// files written in the formats the real tools print, or traces built here), each read through `gather_evidence` as
// `scalescope analyze` reads them and expected to name its cause first; then the judgements an expert makes that a
// rule matching text would not (defaults are no overrides, one node rules out the socket network, the profiler's
// own overhead is not launch-boundness, a one-off read is not input-bound, the average footer is not the peak).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "analyze/trace_test_util.h"
#include "diagnose/catalogue.h"
#include "diagnose/context.h"
#include "diagnose/engine.h"
#include "evidence/record_facts.h"
#include "evidence/gather.h"

using namespace scalescope;
using namespace scalescope::diagnose;
namespace fs = std::filesystem;

namespace {

const fs::path kFixtures = fs::path(SCALESCOPE_SOURCE_DIR) / "tests" / "fixtures" / "diagnosis";

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string describe(const Diagnosis& d) {
  std::string s = render(d);
  return s;
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / fs::path("scalescope-diag-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    const auto p = path_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  /// The diagnosis of `text` written as the file `name` here, read as analyze reads it.
  Diagnosis diagnosis(const std::string& name, const std::string& text) const {
    return diagnose::diagnose(gather_evidence({write(name, text)}).facts);
  }
  /// Its primary cause, "none" when there is none.
  std::string primary(const std::string& name, const std::string& text) const {
    const auto d = diagnosis(name, text);
    return d.primary ? d.primary->cause : std::string("none");
  }

 private:
  fs::path path_;
  static inline int counter_ = 0;
};

}  // namespace

// ---- one fixture per cause id ----

class CauseFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(CauseFixture, NamesItsCauseFirst) {
  const auto dir = kFixtures / GetParam();
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  const auto ev = gather_evidence(files_in(dir));
  for (const auto& f : ev.files) EXPECT_TRUE(f.error.empty()) << f.path << ": " << f.error;
  for (const auto& f : ev.files) EXPECT_GT(f.facts, 0u) << f.path << " gave the diagnosis nothing";
  const auto d = diagnose::diagnose(ev.facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, GetParam()) << describe(d);
  EXPECT_FALSE(d.primary->evidence.empty());
  for (const auto& e : d.primary->evidence) EXPECT_FALSE(e.says.empty());
  if (GetParam() != "no-defect") {
    EXPECT_FALSE(d.primary->fix.empty());
    EXPECT_FALSE(d.primary->cost.text.empty()) << "every finding states its cost";
  } else {
    EXPECT_FALSE(d.ceiling.empty()) << "no-defect states the ceiling";
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CauseFixture,
                         ::testing::Values("nvlink-degraded", "pcie-link-degraded", "pcie-host-bridge-path", "cross-socket-path",
                                           "p2p-blocked-acs-iommu", "virtualised-topology", "gpu-hidden", "gdr-unavailable",
                                           "nccl-env-override", "net-socket-fallback", "container-ipc-shm",
                                           "collective-mismatch", "comm-bound-small-model", "bandwidth-bound-gradients",
                                           "no-overlap", "ddp-unused-parameters", "dataparallel-not-ddp", "host-sync",
                                           "input-bound", "straggler", "compile-ddp-interaction", "compute-contention",
                                           "no-defect"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

TEST(CauseFixture, EveryCatalogueIdHasAFixtureOrATraceTest) {
  std::set<std::string> covered;
  for (const auto& e : fs::directory_iterator(kFixtures))
    if (e.is_directory()) covered.insert(e.path().filename().string());
  covered.insert("launch-bound");    // traces built below
  covered.insert("load-imbalance");  // traces built below
  for (const auto& c : cause_catalogue()) EXPECT_TRUE(covered.count(std::string(c.id))) << c.id << " has no fixture";
}

// ---- traces built here (times in µs) ----

namespace {

using namespace scalescope::analyze::testing;

// One rank whose steps are short kernels with idle gaps between them: `kernels` of `kernel_us` each, `gap_us` apart.
std::string launch_bound_trace(int steps, int kernels, double kernel_us, double gap_us) {
  std::vector<std::string> ev;
  double t = 0;
  for (int s = 0; s < steps; ++s) {
    const double start = t;
    std::vector<std::string> step_events;
    for (int k = 0; k < kernels; ++k) {
      ev.push_back(kernel("elementwise_kernel_" + std::to_string(k % 7), t, kernel_us, 7));
      t += kernel_us + gap_us;
    }
    ev.push_back(cpu("user_annotation", "ProfilerStep#" + std::to_string(s + 1), start, t - start));
  }
  return trace(ev, dist_info(0, 1));
}

// Two ranks; in each step one rank computes longer than the other — which one given by `slow_rank_of_step`.
std::string imbalance_trace(int rank, const std::vector<int>& slow_rank_of_step) {
  const std::string ar = nccl_args("allreduce", 4000000, "Float", 2);
  std::vector<std::string> ev;
  for (std::size_t s = 0; s < slow_rank_of_step.size(); ++s) {
    const double start = 10000.0 * s;
    const double compute = slow_rank_of_step[s] == rank ? 7000 : 4500;
    ev.push_back(cpu("user_annotation", "ProfilerStep#" + std::to_string(s + 1), start, 10000));
    ev.push_back(kernel("gemm_fwd_bwd", start + 100, compute, 7));
    // DDP's bucket all-reduce starts halfway through backward and ends just after the slow rank's compute: the fast
    // rank waits inside it.
    ev.push_back(kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", start + 100 + compute / 2,
                        7000 + 200 - compute / 2, 20, ar));
  }
  return trace(ev, dist_info(rank, 2));
}

}  // namespace

TEST(TraceCauses, ShortKernelsWithGapsAreLaunchBoundEvenInAProfiledTrace) {
  TempDir dir;
  const auto t = dir.write("rank0.json", launch_bound_trace(5, 200, 3, 9));
  const auto d = diagnose::diagnose(gather_evidence({t}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "launch-bound") << describe(d);
  // Profiled only: it says what would tell the profiler's overhead apart.
  bool asked = false;
  for (const auto& m : d.missing_evidence) asked |= m.what.find("without the profiler") != std::string::npos;
  EXPECT_TRUE(asked) << describe(d);
}

TEST(TraceCauses, ProfilerOverheadIsNotLaunchBoundWhenTheLogGivesTheUnprofiledStep) {
  TempDir dir;
  // Gaps of 9 µs between 40 µs kernels in a 5 ms profiled step; the job's own log says 4.1 ms per step.
  const auto t = dir.write("rank0.json", launch_bound_trace(5, 100, 40, 9));
  const auto log = dir.write("train.log", "step 100 | loss 2.31 | step_time 4.10 ms\nstep 200 | loss 2.12 | step_time 4.09 ms\n");
  const auto d = diagnose::diagnose(gather_evidence({t, log}).facts);
  if (d.primary) EXPECT_NE(d.primary->cause, "launch-bound") << describe(d);
}

TEST(TraceCauses, TheSlowestRankChangingFromStepToStepIsLoadImbalance) {
  TempDir dir;
  const std::vector<int> slow = {0, 1, 0, 1, 1, 0};
  const auto a = dir.write("rank0.json", imbalance_trace(0, slow));
  const auto b = dir.write("rank1.json", imbalance_trace(1, slow));
  const auto d = diagnose::diagnose(gather_evidence({a, b}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "load-imbalance") << describe(d);
}

TEST(TraceCauses, TheSameRankSlowestEveryStepIsAStraggler) {
  TempDir dir;
  const std::vector<int> slow = {1, 1, 1, 1, 1, 1};
  const auto a = dir.write("rank0.json", imbalance_trace(0, slow));
  const auto b = dir.write("rank1.json", imbalance_trace(1, slow));
  const auto d = diagnose::diagnose(gather_evidence({a, b}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "straggler") << describe(d);
  EXPECT_NE(d.primary->summary.find("rank 1"), std::string::npos) << describe(d);
}

// ---- real PyTorch jobs (tests/fixtures/pytorch-jobs: traces and logs from the lent H200) ----

struct JobCase {
  const char* folder;
  const char* cause;
};

class PytorchJob : public ::testing::TestWithParam<JobCase> {};

TEST_P(PytorchJob, TraceAndLogNameTheJobsInefficiencyFirst) {
  const auto dir = fs::path(SCALESCOPE_SOURCE_DIR) / "tests" / "fixtures" / "pytorch-jobs" / GetParam().folder;
  const auto d = diagnose::diagnose(gather_evidence({(dir / "trace.json.gz").string(), (dir / "train.log").string()}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, GetParam().cause) << describe(d);
}

INSTANTIATE_TEST_SUITE_P(Jobs, PytorchJob,
                         ::testing::Values(JobCase{"healthy", "no-defect"}, JobCase{"host_sync", "host-sync"},
                                           JobCase{"input_bound", "input-bound"}, JobCase{"launch_bound", "launch-bound"},
                                           JobCase{"find_unused", "ddp-unused-parameters"}),
                         [](const auto& info) { return std::string(info.param.folder); });

TEST(PytorchJob, FindUnusedParametersIsReadFromTheTraceAlone) {
  // Without the log's warning: DDP's own "search_unused_parameters" range in the trace names it, with its cost.
  const auto dir = fs::path(SCALESCOPE_SOURCE_DIR) / "tests" / "fixtures" / "pytorch-jobs" / "find_unused";
  const auto d = diagnose::diagnose(gather_evidence({(dir / "trace.json.gz").string()}).facts);
  bool named = d.primary && d.primary->cause == "ddp-unused-parameters";
  for (const auto& c : d.contributing) named |= c.cause == "ddp-unused-parameters";
  ASSERT_TRUE(named) << describe(d);
  const auto& a = d.primary && d.primary->cause == "ddp-unused-parameters"
                      ? *d.primary
                      : *std::find_if(d.contributing.begin(), d.contributing.end(),
                                      [](const Assessment& x) { return x.cause == "ddp-unused-parameters"; });
  ASSERT_TRUE(a.cost.seconds) << describe(d);
  EXPECT_GT(*a.cost.seconds, 0);
}

TEST(PytorchJob, TheProfilersOverheadIsNotCalledLaunchBoundInAHealthyJob) {
  const auto dir = fs::path(SCALESCOPE_SOURCE_DIR) / "tests" / "fixtures" / "pytorch-jobs" / "healthy";
  const auto d = diagnose::diagnose(gather_evidence({(dir / "trace.json.gz").string()}).facts);
  if (d.primary) EXPECT_NE(d.primary->cause, "launch-bound") << describe(d);
  for (const auto& c : d.contributing) EXPECT_NE(c.cause, "launch-bound") << describe(d);
}

// ---- judgements ----

namespace {

FactSet facts(std::initializer_list<Fact> list) {
  FactSet s;
  for (const auto& f : list) s.add(f);
  return s;
}

Fact fact(FactValue v, std::size_t line = 1) { return {std::move(v), at("f.txt", line, "x")}; }

bool names(const std::vector<Assessment>& v, const std::string& id) {
  return std::any_of(v.begin(), v.end(), [&](const Assessment& a) { return a.cause == id; });
}

}  // namespace

TEST(Judgement, ASettingEqualToNcclsDefaultIsNoOverride) {
  const auto d = diagnose::diagnose(facts({fact(Setting{"NCCL_IB_DISABLE", "0", "environment"}),
                                 fact(Setting{"NCCL_P2P_DISABLE", "0", "environment"})}));
  if (d.primary) EXPECT_NE(d.primary->cause, "nccl-env-override");
  EXPECT_FALSE(names(d.contributing, "nccl-env-override"));
  EXPECT_TRUE(names(d.ruled_out, "nccl-env-override"));
}

TEST(Judgement, TheSocketNetworkOfOneNodeCarriesNoCollectiveTraffic) {
  const auto d = diagnose::diagnose(facts({fact(NetworkChosen{"Socket", {"eth0:10.0.0.1<0>"}}),
                                 fact(WorldShape{.ranks = 2, .nodes = 1, .processes = 1, .basis = "one process"})}));
  if (d.primary) EXPECT_NE(d.primary->cause, "net-socket-fallback");
  EXPECT_TRUE(names(d.ruled_out, "net-socket-fallback")) << describe(d);
}

TEST(Judgement, TheSocketNetworkBetweenNodesIsTheCause) {
  const auto d = diagnose::diagnose(facts({fact(NetworkChosen{"Socket", {"eth0:10.0.0.1<0>"}}),
                                 fact(WorldShape{.ranks = 16, .nodes = 2, .ranks_per_node = 8, .basis = "communicator"})}));
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "net-socket-fallback");
}

TEST(Judgement, TheSettingBehindAFallbackRanksAboveTheFallback) {
  const auto d = diagnose::diagnose(facts({fact(Setting{"NCCL_IB_DISABLE", "1", "nccl: set by environment"}),
                                 fact(NetworkChosen{"Socket", {"eth0:10.0.0.1<0>"}}),
                                 fact(TransportUse{"NET/Socket", "net", false, 16, 7, 0}),
                                 fact(WorldShape{.ranks = 16, .nodes = 2, .basis = "communicator"})}));
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "nccl-env-override") << describe(d);
  EXPECT_TRUE(names(d.contributing, "net-socket-fallback")) << describe(d);
}

TEST(Judgement, AOneOffReadInAProfileIsStartUpNotInput) {
  const auto d = diagnose::diagnose(facts({fact(ProfileRow{"raw_decode", "decoder.py", 343, 3, 3, 25.3, 25.3}),
                                 fact(ProfileRow{"run_backward", "", std::nullopt, 82, 82, 9.2, 9.2}, 2)}));
  if (d.primary) EXPECT_NE(d.primary->cause, "input-bound") << describe(d);
  EXPECT_TRUE(names(d.ruled_out, "input-bound")) << describe(d);
}

TEST(Judgement, TheAverageFooterIsNotThePeak) {
  // A single-node H100 sweep whose footer averages small sizes down.
  FactSet f = facts({fact(GpuSeen{.name = "NVIDIA H100 80GB HBM3"}),
                     fact(WorldShape{.ranks = 8, .nodes = 1, .processes = 1, .basis = "nccl-tests"}),
                     fact(BusbwPlateau{.collective = "all_reduce", .gbps = 356, .from_bytes = 536870912, .to_bytes = 8589934592,
                                       .sizes = 5, .saturated = true, .peak_gbps = 357, .ranks = 8,
                                       .reported_average_gbps = 120.5})});
  const auto d = diagnose::diagnose(f);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "no-defect") << describe(d);
  EXPECT_NE(render(d).find("not the peak"), std::string::npos) << describe(d);
}

TEST(Judgement, APlateauFarBelowTheCeilingIsNoDefect) {
  FactSet f = facts({fact(GpuSeen{.name = "NVIDIA H100 80GB HBM3"}),
                     fact(WorldShape{.ranks = 8, .nodes = 1, .processes = 1, .basis = "nccl-tests"}),
                     fact(BusbwPlateau{.collective = "all_reduce", .gbps = 60, .from_bytes = 536870912, .to_bytes = 8589934592,
                                       .sizes = 5, .saturated = true, .peak_gbps = 61, .ranks = 8})});
  const auto d = diagnose::diagnose(f);
  if (d.primary) EXPECT_NE(d.primary->cause, "no-defect") << describe(d);
  EXPECT_FALSE(d.missing_evidence.empty());
}

TEST(Judgement, NothingToJudgeGivesNoPrimaryAndSaysWhatIsMissing) {
  const auto d = diagnose::diagnose(FactSet{});
  EXPECT_FALSE(d.primary);
  EXPECT_FALSE(d.missing_evidence.empty());
}

TEST(DiagnosisJson, HasTheIssuesShape) {
  const auto d = diagnose::diagnose(facts({fact(GdrState{"mlx5_0", false}), fact(GdrState{"mlx5_1", false}, 2)}));
  const nlohmann::json j = d;
  ASSERT_TRUE(j["primary"].is_object());
  for (const char* k : {"cause", "confidence", "cost", "evidence", "fix", "confirm"}) EXPECT_TRUE(j["primary"].contains(k)) << k;
  EXPECT_EQ(j["primary"]["cause"], "gdr-unavailable");
  EXPECT_TRUE(j["contributing"].is_array());
  EXPECT_TRUE(j["ruled_out"].is_array());
  EXPECT_TRUE(j["missing_evidence"].is_array());
  EXPECT_EQ(j["primary"]["evidence"][0]["source"], "f.txt");
  EXPECT_NO_THROW((void)j.dump());
}

// A one-rank job's NCCL log still reports its network's GDR state and the settings in force; with no collective
// traffic, none of that is a cause (seen on the lent H200: a 1-GPU DDP job named gdr-unavailable).
TEST(Judgements, OneRankRulesOutEveryCommunicationCause) {
  WorldShape w;
  w.ranks = 1;
  w.basis = "the process group";
  const auto d = diagnose::diagnose(facts({fact(w), fact(GdrState{"eth0", false}, 2),
                                           fact(Setting{"NCCL_NVLS_ENABLE", "0", "environment"}, 3)}));
  EXPECT_FALSE(d.primary.has_value()) << d.primary->cause;
  bool gdr = false;
  for (const auto& r : d.ruled_out) gdr |= r.cause == "gdr-unavailable" && r.why_not.find("one rank") != std::string::npos;
  EXPECT_TRUE(gdr);
  // The same log from a two-rank job keeps the cause.
  w.ranks = 2;
  const auto two = diagnose::diagnose(facts({fact(w), fact(GdrState{"mlx5_0", false}, 2)}));
  ASSERT_TRUE(two.primary.has_value());
  EXPECT_EQ(two.primary->cause, "gdr-unavailable");
}

// "mpirun -np 2 -H localhost:2" with ranks on host SAIS1020 is one node (nccl-tests#115): localhost is whichever host the
// logs name, and a host list of one host is not several hosts.
TEST(Context, LocalhostInAHostListIsTheSameNode) {
  using namespace scalescope::diagnose;
  FactSet f;
  Launch l;
  l.launcher = "mpirun";
  l.np = 2;
  l.nnodes = 1;
  l.hostfile = true;
  f.add(l, {"cmd.txt", 1, "mpirun -np 2 -H localhost:2 ./all_reduce_perf"});
  WorldShape w;
  w.ranks = 2;
  w.hosts = {"localhost"};
  f.add(w, {"cmd.txt", 1, ""});
  WorldShape w2;
  w2.hosts = {"SAIS1020"};
  f.add(w2, {"out.txt", 5, "#  Rank  0 Group  0 Pid 1 on SAIS1020 device  0"});
  const Context ctx(f);
  EXPECT_NE(ctx.span, Span::multi_node);
  WorldShape w3;
  w3.hosts = {"node-b"};
  f.add(w3, {"out.txt", 6, "#  Rank  1 Group  0 Pid 2 on node-b device  0"});
  EXPECT_EQ(Context(f).span, Span::multi_node);  // two real host names are two nodes
}

// SHM between GPUs of one node with active NVLinks and no P2P connection (nccl-tests#228 without its env line): P2P was
// turned off by configuration. Without NVLink the same SHM line names no setting.
TEST(NcclEnvOverride, ShmBesideActiveNvlinksIsAHiddenP2pSetting) {
  using namespace scalescope::diagnose;
  FactSet f;
  TransportUse t;
  t.transport = "SHM/direct/direct";
  t.kind = "shm";
  t.connections = 12;
  f.add(t, {"nccl.log", 7, "Channel 00 : 0[0] -> 1[1] via SHM/direct/direct"});
  FactSet without_nvlink = f;
  for (int link = 0; link < 4; ++link) {
    NvlinkState n;
    n.gpu = "GPU 0";
    n.link = link;
    n.active = true;
    n.gbps = 25;
    f.add(n, {"nvlink.txt", static_cast<std::size_t>(2 + link), "Link 0: 25 GB/s"});
  }
  const auto d = scalescope::diagnose::diagnose(f);
  ASSERT_TRUE(d.primary);
  EXPECT_EQ(d.primary->cause, "nccl-env-override");
  const auto d2 = scalescope::diagnose::diagnose(without_nvlink);
  EXPECT_FALSE(d2.primary && d2.primary->cause == "nccl-env-override");
}

namespace {

TEST(LiveTopologyFacts, NvmlNvlinkErrorCountersBecomeEvidenceOfADegradedLink) {
  // One H200 as live discovery reads it: 18 NVLinks up, one with replay errors counted by NVML.
  topo::Topology t;
  t.source = "live";
  t.live = topo::LiveFacts{};
  t.live->nvml = true;
  topo::Device d;
  d.label = "GPU0";
  d.name = "NVIDIA H200";
  for (int l = 0; l < 18; ++l) {
    topo::NvLinkLane lane;
    lane.link = l;
    lane.active = true;
    lane.version = 5;
    lane.errors = {{"Replay Errors", l == 7 ? 4096u : 0u}, {"CRC Flit Errors", 0u}};
    d.nvlinks.push_back(lane);
  }
  t.devices.push_back(d);
  t.links = {{topo::Link{topo::LinkClass::self, 0}}};
  const auto facts = facts_from_topology(t, "topo (live)").facts;
  ASSERT_EQ(facts.of<NvlinkCounter>().size(), 1u);  // the zero counters are not facts
  EXPECT_EQ(facts.of<NvlinkCounter>().front().fact.link, 7);
  EXPECT_EQ(facts.of<NvlinkState>().size(), 18u);
  const auto d2 = scalescope::diagnose::diagnose(facts);
  std::vector<std::string> named;
  if (d2.primary) named.push_back(d2.primary->cause);
  for (const auto& c : d2.contributing) named.push_back(c.cause);
  EXPECT_NE(std::find(named.begin(), named.end(), "nvlink-degraded"), named.end()) << ::testing::PrintToString(named);
}

}  // namespace

namespace {

// A board's design is no fault: a PCIe H100 wires 12 of its die's 18 NVLinks through its bridges, so a listing of the
// unwired ones as inactive is what the board is; on an SXM module, whose 18 are all wired, the same listing is links down.
FactSet nvlink_listing(const std::string& gpu, int active, int inactive) {
  FactSet f;
  f.add(GpuSeen{gpu, 0, std::nullopt, std::nullopt, std::nullopt}, at("nvlink.txt", 1, gpu));
  for (int i = 0; i < active + inactive; ++i) {
    NvlinkState s;
    s.gpu = "GPU 0";
    s.link = i;
    s.active = i < active;
    f.add(s, at("nvlink.txt", static_cast<std::size_t>(i + 2), "Link"));
  }
  return f;
}

TEST(NvlinkDesign, UnwiredLinksOfAPcieBoardAreNotDegraded) {
  const auto pcie = diagnose::diagnose(nvlink_listing("NVIDIA H100 PCIe", 0, 5));
  EXPECT_FALSE(pcie.primary && pcie.primary->cause == "nvlink-degraded");
  bool ruled_out = false;
  for (const auto& r : pcie.ruled_out) ruled_out = ruled_out || r.cause == "nvlink-degraded";
  EXPECT_TRUE(ruled_out);
  const auto sxm = diagnose::diagnose(nvlink_listing("NVIDIA H100 80GB HBM3", 13, 5));
  ASSERT_TRUE(sxm.primary);
  EXPECT_EQ(sxm.primary->cause, "nvlink-degraded");
}

// Under DataParallel a poor speedup is DataParallel's, not a gradient all-reduce's.
TEST(DataParallelFirst, ItsScalingLossIsNotCalledCommunication) {
  FactSet f;
  f.add(CodeUse{"DataParallel", "", false, std::nullopt}, at("train.py", 3, "model = nn.DataParallel(model)"));
  ScalingPoint p;
  p.world_size = 4;
  p.speedup = 0.8;
  p.efficiency = 0.2;
  p.mode = "stated";
  f.add(p, at("post.md", 2, "4 GPUs are slower than one"));
  f.add(Claim{"small-workload", ""}, at("post.md", 3, "CIFAR-10"));
  const auto d = diagnose::diagnose(f);
  ASSERT_TRUE(d.primary);
  EXPECT_EQ(d.primary->cause, "dataparallel-not-ddp");
}

}  // namespace

// ---- batches 5 and 6's mechanisms (issue #36), on files of this project's own ----

TEST(FileCauses, OnePythonProcessGivenSeveralGpusIsDataParallel) {
  TempDir dir;
  const auto post = dir.write("post.md", "# Fine-tuning on 2x RTX 3090\n\nWe fine-tune on both GPUs of the box and it is slow.\n\n"
                                         "```bash\nCUDA_VISIBLE_DEVICES=0,1 \\\npython run_glue.py --model_name_or_path bert-base-uncased "
                                         "--do_train --per_device_train_batch_size 16\n```\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "dataparallel-not-ddp") << describe(d);
  // The same job under torchrun has DDP ranks: nothing says DataParallel.
  const auto ddp = dir.write("ddp.md", "# Fine-tuning on 2x RTX 3090\n\nWe fine-tune on both GPUs of the box and it is slow.\n\n"
                                       "```bash\ntorchrun --nproc_per_node 2 run_glue.py --model_name_or_path bert-base-uncased "
                                       "--do_train --per_device_train_batch_size 16\n```\n");
  const auto d2 = diagnose::diagnose(gather_evidence({ddp}).facts);
  EXPECT_FALSE(d2.primary && d2.primary->cause == "dataparallel-not-ddp") << describe(d2);
}

TEST(FileCauses, TwoNodesOverAHundredMegabitLinkAreBandwidthBound) {
  TempDir dir;
  const auto post = dir.write("post.md", "# Two nodes slower than one\n\nWe spread training over two nodes, one GPU each, "
                                         "and it is much slower than on one node.\n");
  const auto iperf = dir.write("iperf.txt", "$ iperf -c 192.0.2.1 -t 30 -i 10\n[ ID] Interval       Transfer     Bandwidth\n"
                                            "[  3]  0.0-10.0 sec   112 MBytes  94.0 Mbits/sec\n"
                                            "[  3] 10.0-20.0 sec   113 MBytes  94.6 Mbits/sec\n");
  const auto ev = gather_evidence({post, iperf});
  for (const auto& f : ev.files) EXPECT_TRUE(f.error.empty()) << f.path << ": " << f.error;
  const auto d = diagnose::diagnose(ev.facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "bandwidth-bound-gradients") << describe(d);
}

TEST(FileCauses, AStatedSpeedupAtHealthyEfficiencyIsNoDefect) {
  TempDir dir;
  const auto post = dir.write("post.md", "# Is 1.9x right?\n\nWe train ResNet-50 on 2x RTX 3090 with DDP and wonder why it is "
                                         "not 2x.\n\n| Run | Time | Speedup |\n|---|---|---|\n| single | 100 s | 1.0x |\n"
                                         "| DDP | 53 s | 1.9x |\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "no-defect") << describe(d);
  // At 1.2x the same table is a loss to explain, never no-defect.
  const auto poor = dir.write("poor.md", "# Is 1.2x right?\n\nWe train ResNet-50 on 2x RTX 3090 with DDP and wonder why it is "
                                         "not 2x.\n\n| Run | Time | Speedup |\n|---|---|---|\n| single | 100 s | 1.0x |\n"
                                         "| DDP | 83 s | 1.2x |\n");
  const auto d2 = diagnose::diagnose(gather_evidence({poor}).facts);
  EXPECT_FALSE(d2.primary && d2.primary->cause == "no-defect") << describe(d2);
}

TEST(FileCauses, AMeasuredCommunicationShareOfASmallModelsStep) {
  TempDir dir;
  const auto post = dir.write("post.md", "# DDP slower\n\nMy 5M parameter model trains on two GPUs with DDP and is slower "
                                         "than on one.\n\n| Metric | Value |\n|---|---|\n| Step time (1 GPU) | 20 ms |\n"
                                         "| Step time (2 GPUs) | 30 ms |\n| Communication time per step | 12 ms |\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "comm-bound-small-model") << describe(d);
}

TEST(FileCauses, AFailedHealthCheckIsASlowMemberAndNeverHealthy) {
  TempDir dir;
  const auto post = dir.write("post.md", "# Cluster check\n\nWe validate 16 nodes of 8 H100 each with 8x 400 Gb/s NDR "
                                         "InfiniBand before a multi-node all-reduce study.\n");
  const auto nhc = dir.write("nhc.log", "## host-a\nERROR:  nhc:  Health check failed:  check_ib_bw_gdr: ib_write_bw, "
                                        "IB=mlx5_ib0,\n  IB BW (expected > 380 Gbps, but measured 351.09 Gbps. FaultCode: NHC2003\n");
  const auto d = diagnose::diagnose(gather_evidence({post, nhc}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "straggler") << describe(d);
}

TEST(FileCauses, MfuAtTheTopOfTheRangeOnManyGpusIsNoDefect) {
  TempDir dir;
  const auto post = dir.write("post.md", "# 7B on 128 A100s\n\nWe pre-train a 7B model with FSDP on 128 A100 80GB GPUs "
                                         "over 400 Gb/s InfiniBand.\n\n| Model | Batch/GPU | Tokens/s/GPU | MFU |\n"
                                         "|---|---|---|---|\n| 7B | 2 | 3700 | 0.57 |\n");
  const auto ev = gather_evidence({post});
  const auto d = diagnose::diagnose(ev.facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "no-defect") << describe(d);
}

TEST(FileCauses, ACodeRiskIsNotTheAnswerWhenTheJobScalesWell) {
  TempDir dir;
  const auto post = dir.write("post.md", "# 2 GPUs twice as fast?\n\nWith 2 A100 GPUs the training runs twice as fast as "
                                         "with 1 GPU at the same batch size. Is this expected?\n");
  const auto code = dir.write("train.py", "import torch\nmodel = torch.nn.DataParallel(model).cuda()\n"
                                          "for x, y in loader:\n    loss = model(x).sum()\n    loss.backward()\n");
  const auto d = diagnose::diagnose(gather_evidence({post, code}).facts);
  EXPECT_FALSE(d.primary && d.primary->cause == "dataparallel-not-ddp") << describe(d);
}

TEST(FileCauses, NcclsSharedMemoryErrorWithoutItsPrefix) {
  TempDir dir;
  const auto log = dir.write("nccl.log", "Error while creating shared memory segment /dev/shm/nccl-pZafXL (size 7340384)\n");
  const auto ev = gather_evidence({log});
  for (const auto& f : ev.files) EXPECT_TRUE(f.error.empty()) << f.path << ": " << f.error;
  const auto d = diagnose::diagnose(ev.facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "container-ipc-shm") << describe(d);
}

// ---- batches 11-14's mechanisms (issue #36), on files of this project's own ----

TEST(FileCauses, AMoveFromDataParallelToDdpThatPaidOffNamesDataParallel) {
  TempDir dir;
  const auto post = dir.write("post.md", "# Faster training\n\nWe switched from nn.DataParallel to DDP on our 4 GPU box and "
                                         "the epoch got 35% faster.\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "dataparallel-not-ddp") << describe(d);
  // Asked, not done: no gain is stated, so nothing was removed.
  const auto ask = dir.write("ask.md", "# Faster training?\n\nWould switching from nn.DataParallel to DDP on our 4 GPU box "
                                       "make the epoch faster?\n");
  const auto ev = gather_evidence({ask});
  for (const auto& c : ev.facts.of<Claim>()) EXPECT_NE(c.fact.kind, "faster-with") << c.where.excerpt;
  // Denied, or faster for another reason: no change read as the one that paid off.
  for (const char* text : {"We use DDP, and the new NVMe disk makes data loading faster.",
                           "Switching from DataParallel to DDP did not make it any faster.",
                           "Without no_sync() everything works as intended.",
                           "A thin wrapper around the official DDP makes logging faster."}) {
    const auto e2 = gather_evidence({dir.write("neg.md", std::string("# Training\n\n") + text + "\n")});
    for (const auto& c : e2.facts.of<Claim>()) EXPECT_NE(c.fact.kind, "faster-with") << text;
  }
}

TEST(FileCauses, PytorchsDdpInPlaceOfAHandWrittenWrapperThatPaidOffIsOverlap) {
  TempDir dir;
  const auto post = dir.write("post.md", "# Use torch DDP\n\nThis replaces our custom gradient-averaging wrapper with the "
                                         "native DistributedDataParallel, which makes each iteration 8% faster on 8 GPUs.\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "no-overlap") << describe(d);
}

TEST(FileCauses, NoSyncOverAccumulationThatFixedScalingIsCommunicationPerMicroBatch) {
  TempDir dir;
  const auto post = dir.write("post.md", "# Accumulation under DDP\n\nWith 4 accumulation steps, 2 GPUs train slower than one. "
                                         "Wrapping the first three micro-batches in model.no_sync() makes it work as expected.\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "comm-bound-small-model") << describe(d);
}

TEST(FileCauses, TheSameTimePerIterationOnSeveralGpusIsWeakScaling) {
  TempDir dir;
  const auto post = dir.write("post.md", "# Multi-GPU no faster?\n\nI launch the trainer on one machine:\n\n```\ntorchrun "
                                         "--nproc_per_node 4 train.py\n```\n\nThe s/it printed by the progress bar is the "
                                         "same as on a single GPU, 1.2 s/it.\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "no-defect") << describe(d);
  // Under DataParallel one batch is split over the GPUs: the same time per iteration is no gain at all.
  const auto dp = dir.write("dp.md", "# Multi-GPU no faster?\n\nI wrap the model in nn.DataParallel on 4 GPUs. The s/it "
                                     "printed by the progress bar is the same as on a single GPU, 1.2 s/it.\n");
  const auto d2 = diagnose::diagnose(gather_evidence({dp}).facts);
  EXPECT_FALSE(d2.primary && d2.primary->cause == "no-defect") << describe(d2);
  // Denied, or the same throughput (samples, not iterations): no weak scaling read into it.
  for (const char* text : {"The s/it on 4 GPUs is not the same as on a single GPU, it is worse.",
                           "On 4 GPUs the throughput in it/s is the same as on a single GPU.",
                           "On 8 GPUs of one node the it/s is the same as before the driver update."}) {
    const auto ev = gather_evidence({dir.write("neg.md", std::string("# Multi-GPU\n\n") + text + "\n")});
    for (const auto& c : ev.facts.of<Claim>()) EXPECT_NE(c.fact.kind, "same-per-iteration") << text;
  }
}

TEST(FileCauses, APcieLinkStatePastedAsABlockWhileTheJobRuns) {
  TempDir dir;
  const auto post = dir.write("post.md", "# One slow GPU\n\nDuring the training run, with every GPU at 100 % utilisation, "
                                         "I read the links:\n\n    GPU 3   current link: 8 GT/s (Gen3) x16   max: 16 GT/s "
                                         "(Gen4) x16\n\nThe other GPUs show Gen4.\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "pcie-link-degraded") << describe(d);
}

TEST(FileCauses, FullWidthPunctuationDoesNotHideACount) {
  TempDir dir;
  const auto post = dir.write("post.md", "为什么 multi-GPU training (4x4090)？\n\nThe 4 GPUs train no faster than a single "
                                         "GPU，the epoch takes 30 min on both。\n");
  const auto ev = gather_evidence({post});
  bool four = false;
  for (const auto& c : ev.facts.of<GpuCount>()) four = four || c.fact.count == 4;
  EXPECT_TRUE(four);
}

TEST(FileCauses, AFigurePerNvlinkIsNotTheJobsBusBandwidth) {
  TempDir dir;
  const auto post = dir.write("post.md", "# NVLink on 8 A100\n\nnvidia-smi nvlink -s shows 12 links at 25 GB/s each on every "
                                         "GPU of our 8 A100 SXM4 server.\n");
  const auto ev = gather_evidence({post});
  for (const auto& p : ev.facts.of<BusbwPlateau>()) EXPECT_NE(p.fact.gbps, 25.0);
}

TEST(FileCauses, AnNvlinkFigureAtThePerDirectionRateIsNoDefect) {
  TempDir dir;
  const auto post = dir.write("post.md", "# NVLink bandwidth on A100\n\nWe measure 240 GB/s of NVLink bandwidth between two "
                                         "A100 SXM4 80GB GPUs, while the datasheet says 600 GB/s of NVLink. Why?\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "no-defect") << describe(d);
  // A tenth of it is a loss, never no-defect.
  const auto low = dir.write("low.md", "# NVLink bandwidth on A100\n\nWe measure 24 GB/s of NVLink bandwidth between two "
                                       "A100 SXM4 80GB GPUs. Why?\n");
  const auto d2 = diagnose::diagnose(gather_evidence({low}).facts);
  EXPECT_FALSE(d2.primary && d2.primary->cause == "no-defect") << describe(d2);
}

TEST(FileCauses, ARiskWithoutACostIsNotTheAnswerBesideABusbwAtTheCeiling) {
  TempDir dir;
  // A topology file handed to NCCL is what VMs need; the measured busbw at the NICs' rate says it cost nothing.
  const auto post = dir.write("post.md", "# 2 nodes of 8 H100 in VMs\n\nEach node has 8x 400 Gb/s NDR InfiniBand. We run "
                                         "all_reduce_perf on 16 GPUs over both nodes with NCCL_TOPO_FILE=/opt/topo.xml and "
                                         "get 372 GB/s busbw. Is that acceptable?\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  EXPECT_FALSE(d.primary && d.primary->cause == "virtualised-topology") << describe(d);
}

TEST(FileCauses, RanksConfinedToOneGpuEachBySlurmAreHiddenFromEachOther) {
  TempDir dir;
  const auto post = dir.write("post.md", "# srun and DDP\n\nOn one node with 4 NVLinked GPUs:\n\n```\nsrun -N 1 -n 4 "
                                         "--gpus-per-task=1 python train.py --ddp\n```\n\nIt is 20% slower than with --gpus 4.\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "gpu-hidden") << describe(d);
  // One GPU per task on one task per node: no peer on its node to hide.
  const auto multi = dir.write("multi.md", "# srun and DDP\n\n```\nsrun -N 4 -n 4 --gpus-per-task=1 python train.py --ddp\n```\n"
                                           "\nIt is 20% slower than we hoped.\n");
  const auto d2 = diagnose::diagnose(gather_evidence({multi}).facts);
  EXPECT_FALSE(d2.primary && d2.primary->cause == "gpu-hidden") << describe(d2);
  // NCCL's log shows the ranks joined peer to peer: each reaches the others' GPUs after all.
  const auto log = dir.write("nccl.log", "host-a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"
                                         "host-a:1:2 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC\n");
  const auto d3 = diagnose::diagnose(gather_evidence({post, log}).facts);
  EXPECT_FALSE(d3.primary && d3.primary->cause == "gpu-hidden") << describe(d3);
}

TEST(FileCauses, DataOnAHardDiskBesideAnIdleGpuIsInputBound) {
  TempDir dir;
  const auto post = dir.write("post.md", "# Slow training on 2 GPUs\n\nTraining on 2x A6000 runs at 0.2 it/s. nvidia-smi shows "
                                         "one GPU at 0% utilization while the other is at 100%, an imbalance in GPU usage. "
                                         "The 800 GB dataset sits on an HDD because it does not fit on our SSD.\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "input-bound") << describe(d);
}

TEST(FileCauses, APythonScriptThatStartsItsOwnWorkersIsNotDataParallel) {
  TempDir dir;
  // detectron2-style training scripts spawn one process per GPU themselves; MXNet drives its GPUs through a kvstore.
  for (const char* cmd : {"python train_net.py --num-gpus 4 --config-file r50.yaml",
                          "python train_imagenet.py --network alexnet --gpus 0,1,2,3 --kv-store device"}) {
    const auto post = dir.write("post.md", std::string("# 4 GPUs slow\n\nOn 4x RTX 3090 the epoch is barely faster than "
                                                       "on one.\n\n```\n") + cmd + "\n```\n");
    const auto d = diagnose::diagnose(gather_evidence({post}).facts);
    EXPECT_FALSE(d.primary && d.primary->cause == "dataparallel-not-ddp") << cmd << "\n" << describe(d);
  }
}

TEST(FileCauses, ASentenceOfPaddingIsNotRead) {
  TempDir dir;
  // Tens of thousands of blanks or digits in one "sentence" are no prose (and once overflowed the grammar's stack).
  const auto post = dir.write("post.md", "We train on 4x A100 with DDP and it is slow.\nGPU" + std::string(100000, ' ') +
                                             ".\nThe busbw is " + std::string(100000, '1') + " GB/s.\n");
  const auto ev = gather_evidence({post});
  ASSERT_EQ(ev.files.size(), 1u);
  EXPECT_TRUE(ev.files.front().error.empty()) << ev.files.front().error;
}

// Loader workers per rank × ranks on a host with fewer CPUs: the input pipeline sets the pace (issue #36). The same
// job with workers that fit the host is not input-bound on that evidence.
TEST(FileCauses, LoaderWorkersThatOversubscribeTheHostAreInputBound) {
  TempDir dir;
  const auto post = dir.write("post.md", "# Training is slow, GPUs mostly idle\n\nThe box has 16 CPU cores and 4 GPUs; the GPU "
                                         "utilisation is very low.\n\n```bash\ntorchrun --nproc_per_node 4 train.py --arch resnet18 "
                                         "--num_workers 16 --batch-size 256\n```\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "input-bound") << describe(d);
  EXPECT_NE(d.primary->fix.find("at most 3 workers per rank"), std::string::npos) << d.primary->fix;
  const auto fits = dir.write("fits.md", "# Training is slow, GPUs mostly idle\n\nThe box has 64 CPU cores and 4 GPUs; the GPU "
                                         "utilisation is very low.\n\n```bash\ntorchrun --nproc_per_node 4 train.py --arch resnet18 "
                                         "--num_workers 8 --batch-size 256\n```\n");
  const auto d2 = diagnose::diagnose(gather_evidence({fits}).facts);
  EXPECT_FALSE(d2.primary && d2.primary->cause == "input-bound") << describe(d2);
  // "4 cores per GPU" is no host count.
  const auto per = dir.write("per.md", "# Slow\n\nWe have 4 cores per GPU and 8 GPUs.\n\n```bash\ntorchrun --nproc_per_node 8 "
                                       "train.py --num_workers 8\n```\n");
  const auto per_ev = gather_evidence({per});
  for (const auto& f : per_ev.facts.of<Claim>()) EXPECT_NE(f.fact.kind, "cpus") << f.fact.detail;
}

// Hyphenated GPU counts ("single-GPU", "2-GPU") are the conditions of the figures beside them; with a workload the
// text calls small, a table of GPU counts that loses speed is a small model's communication (issue #36).
TEST(FileCauses, HyphenatedGpuCountsOfASmallWorkload) {
  TempDir dir;
  const auto post = dir.write("post.md", "# Two GPUs slower than one\n\nA small MLP on MNIST, two layers of 512 units, on 2 "
                                         "RTX 3060 cards.\n\n- single-GPU run: 30 s per epoch\n- 2-GPU run: 41 s per epoch\n");
  const auto ev = gather_evidence({post});
  std::set<std::string> counts;
  for (const auto& m : ev.facts.of<Measurement>())
    if (m.fact.dims.count("gpus")) counts.insert(m.fact.dims.at("gpus"));
  EXPECT_EQ(counts, (std::set<std::string>{"1", "2"}));
  const auto d = diagnose::diagnose(ev.facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "comm-bound-small-model") << describe(d);
}

// GPUs counted per machine ("2 servers, each with 4 GPUs") make the machines each figure names its GPU count.
TEST(FileCauses, GpusPerMachineTimesTheMachinesAFigureNames) {
  TempDir dir;
  const auto post = dir.write("post.md", "# Slow across servers\n\nWe have 3 servers, each with 8 GPUs. On a single server an "
                                         "epoch takes 100 seconds; on 3 servers it takes 90 seconds.\n");
  const auto ev = gather_evidence({post});
  std::set<std::string> counts;
  for (const auto& m : ev.facts.of<Measurement>())
    if (m.fact.dims.count("gpus")) counts.insert(m.fact.dims.at("gpus"));
  EXPECT_EQ(counts, (std::set<std::string>{"8", "24"}));
}

// Below the primary's score, a cause is named only when the job measurably lost speed and that cause explains the loss
// with a cost of its own; then at low confidence, saying it is circumstantial. A job that scales well gets no such
// answer from the same words.
TEST(FileCauses, AMeasuredLossLeansToTheCauseThatExplainsIt) {
  TempDir dir;
  const auto post = dir.write("post.md", "# No speedup\n\nOn one GPU (an RTX 2080 Ti) an epoch takes 21 seconds. With 2 GPUs it "
                                         "also takes 21 seconds.\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(confidence_label(d.primary->score), "low") << describe(d);
  bool said = false;
  for (const auto& a : d.primary->against) said = said || a.says.find("circumstantial") != std::string::npos;
  EXPECT_TRUE(said) << describe(d);
  const auto good = dir.write("good.md", "# Speedup\n\nOn one GPU (an RTX 2080 Ti) an epoch takes 21 seconds. With 2 GPUs "
                                         "it takes 11 seconds.\n");
  const auto d2 = diagnose::diagnose(gather_evidence({good}).facts);
  EXPECT_FALSE(d2.primary && d2.primary->score < kPrimaryScore) << describe(d2);
}

// Frames per second are a throughput; a label's parenthesis saying what the run held ("(8192 total envs)") does not make
// it a total row; with no one-GPU row of the same variant, the best one-GPU throughput is the reference (issue #36).
TEST(FileCauses, AThroughputAgainstTheBestOneGpuRowOfAnotherVariant) {
  TempDir dir;
  const auto post = dir.write("post.md", "# RL training on 2 GPUs\n\n- 2 GPUs (8192 total envs): ~250K FPS\n"
                                         "- 1 GPU (4096 envs): ~120K FPS\n- 1 GPU (8192 envs): 132K FPS\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "no-defect") << describe(d);
  bool ratio = false;
  for (const auto& e : d.primary->evidence) ratio = ratio || e.says.find("speedup 1.89") != std::string::npos;
  EXPECT_TRUE(ratio) << describe(d);  // 250 / 132, the best one-GPU row, not 250 / 120
  const auto poor = dir.write("poor.md", "# RL training on 2 GPUs\n\n- 2 GPUs (8192 total envs): ~150K FPS\n"
                                         "- 1 GPU (4096 envs): ~120K FPS\n- 1 GPU (8192 envs): 132K FPS\n");
  const auto d2 = diagnose::diagnose(gather_evidence({poor}).facts);
  EXPECT_FALSE(d2.primary && d2.primary->cause == "no-defect") << describe(d2);
  // A total row of a table is still a total: not a run.
  const auto sum = dir.write("sum.md", "| run | time |\n|---|---|\n| 1 GPU | 100 s |\n| 2 GPUs | 60 s |\n| total | 160 s |\n");
  const auto sum_ev = gather_evidence({sum});
  for (const auto& m : sum_ev.facts.of<Measurement>()) EXPECT_NE(m.fact.value, 160) << m.fact.row;
}

// Step times written per step ("6.4 s/step", "350 ms/step"), a count written "8 x batch 16", a figure's clause ending
// at "against", and a model's size without its name ("a 1.5 B-parameter model"): a large gradient over PCIe GPUs
// that loses most of its speed is bandwidth-bound (issue #36). The same words with a small model are not.
TEST(FileCauses, PerStepTimesOfAnUnnamedLargeModel) {
  TempDir dir;
  const auto post = dir.write("post.md", "# DDP on 4 x L40S\n\nPCIe only, no NVLink. On our 1.5 B-parameter model: 5.2 "
                                         "s/step at 4 x batch 8 against 1.6 s/step on a single GPU.\n");
  const auto ev = gather_evidence({post});
  bool size = false;
  for (const auto& m : ev.facts.of<ModelSeen>()) size = size || (m.fact.parameters && *m.fact.parameters == 1.5e9);
  EXPECT_TRUE(size);
  std::set<std::string> counts;
  for (const auto& m : ev.facts.of<Measurement>())
    if (m.fact.quantity == "step time" && m.fact.dims.count("gpus")) counts.insert(m.fact.dims.at("gpus") + "@" + fmt::format("{:g}", m.fact.value));
  EXPECT_TRUE(counts.count("4@5.2")) << ::testing::PrintToString(counts);
  EXPECT_TRUE(counts.count("1@1.6")) << ::testing::PrintToString(counts);
  const auto d = diagnose::diagnose(ev.facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "bandwidth-bound-gradients") << describe(d);
  const auto ms = dir.write("ms.md", "# x\n\nIt runs at 350 ms/step on 2 GPUs.\n");
  bool step = false;
  const auto ms_ev = gather_evidence({ms});
  for (const auto& m : ms_ev.facts.of<Measurement>())
    step = step || (m.fact.quantity == "step time" && std::abs(m.fact.value - 0.35) < 1e-9);
  EXPECT_TRUE(step);
  const auto small = dir.write("small.md", "# DDP on 4 x L40S\n\nPCIe only, no NVLink. On our 20M-parameter model: 5.2 "
                                           "s/step at 4 x batch 8 against 1.6 s/step on a single GPU.\n");
  const auto d2 = diagnose::diagnose(gather_evidence({small}).facts);
  EXPECT_FALSE(d2.primary && d2.primary->cause == "bandwidth-bound-gradients") << describe(d2);
}

// The watchdog ending the job, said in words, is a hang; with a path only rank 0 runs, the ranks issued different
// collectives (issue #36). The watchdog named only as a setting is no hang.
TEST(FileCauses, AWatchdogAbortSaidInWordsBesideARankZeroPath) {
  TempDir dir;
  const auto post = dir.write("post.md", "# Two-GPU runs die after training\n\nAfter the last epoch a test pass runs under `if "
                                         "rank == 0:` only, through the DDP-wrapped model.\nThen rank 1 waits out the 1800 s "
                                         "NCCL watchdog and the job aborts with SIGABRT.\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "collective-mismatch") << describe(d);
  const auto setting = dir.write("setting.md", "# Two-GPU runs\n\nAfter the last epoch a test pass runs under `if rank == 0:` "
                                               "only.\nWe raised the NCCL watchdog timeout to 3 hours, so it would not abort.\n");
  const auto ev = gather_evidence({setting});
  for (const auto& c : ev.facts.of<Claim>()) EXPECT_NE(c.fact.kind, "hang") << c.fact.detail;
}

// The same GPUs on one node and over two (a table whose rows are named by experiment ids and differ in the node count
// alone): the multi-node run's loss is the network's; a model of 774 M parameters makes it the gradient's bytes
// (issue #36). With the two runs equally fast there is no such finding.
TEST(FileCauses, TheSameGpusOverTwoNodesAgainstOne) {
  TempDir dir;
  const auto post = dir.write("post.md", "# GPT-2 Large over nodes\n\n| Experiment | Model | Nodes | GPUs per node | Epoch time (s) |\n"
                                         "|---|---|---:|---:|---:|\n| r-1 | gpt2-large | 1 | 1 | 500 |\n"
                                         "| r-2 | gpt2-large | 1 | 2 | 260 |\n| r-3 | gpt2-large | 2 | 1 | 410 |\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "bandwidth-bound-gradients") << describe(d);
  const auto even = dir.write("even.md", "# GPT-2 Large over nodes\n\n| Experiment | Model | Nodes | GPUs per node | Epoch time (s) |\n"
                                         "|---|---|---:|---:|---:|\n| r-1 | gpt2-large | 1 | 1 | 500 |\n"
                                         "| r-2 | gpt2-large | 1 | 2 | 260 |\n| r-3 | gpt2-large | 2 | 1 | 265 |\n");
  const auto d2 = diagnose::diagnose(gather_evidence({even}).facts);
  EXPECT_FALSE(d2.primary && d2.primary->cause == "bandwidth-bound-gradients") << describe(d2);
}

// Speedups listed per node count ("4 nodes → 3.8x, 8 nodes → 7.3x") are scaling points: at ≥ 85 % efficiency the
// figures are what the hardware gives (issue #36); at 2.1x on 8 nodes they are a loss.
TEST(FileCauses, SpeedupsListedPerNodeCount) {
  TempDir dir;
  const auto post = dir.write("post.md", "# Scaling\n\nWe train a 1.3B model with PyTorch DDP on nodes of 8 A100 GPUs.\nThroughput gain over one "
                                         "node: 4 nodes → 3.8x, 8 nodes → 7.3x.\n");
  const auto ev = gather_evidence({post});
  EXPECT_EQ(ev.facts.of<ScalingPoint>().size(), 2u);
  const auto d = diagnose::diagnose(ev.facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "no-defect") << describe(d);
  const auto poor = dir.write("poor.md", "# Scaling\n\nWe train a 1.3B model with PyTorch DDP on nodes of 8 A100 GPUs.\nThroughput gain over one "
                                         "node: 4 nodes → 1.9x, 8 nodes → 2.1x.\n");
  const auto d2 = diagnose::diagnose(gather_evidence({poor}).facts);
  EXPECT_FALSE(d2.primary && d2.primary->cause == "no-defect") << describe(d2);
}

// Poor scaling said in words over a slow measured network between nodes: the network carries what is slow, and a
// model of 340 M parameters makes it the gradient's bytes (issue #36).
TEST(FileCauses, PoorScalingSaidInWordsOverASlowNetwork) {
  TempDir dir;
  const auto post = dir.write("post.md", "# Multi-node BERT-Large\n\nBERT-Large pre-training scales poorly across our 4 nodes "
                                         "(8 V100 each).\nThe Ethernet between the nodes measures 5 Gbps with iperf.\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "bandwidth-bound-gradients") << describe(d);
}

// GPUs busy only part of the time while the text describes the input pipeline lean to input-bound; at 95 % they do
// not (issue #36).
TEST(FileCauses, PartlyBusyGpusBesideADescribedInputPipeline) {
  TempDir dir;
  const auto post = dir.write("post.md", "# Low utilisation\n\nOur 16-GPU job reaches only 55% GPU utilization. The images are "
                                         "JPEG files decoded by a PyTorch DataLoader with 6 workers.\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "input-bound") << describe(d);
  const auto busy = dir.write("busy.md", "# Utilisation\n\nOur 16-GPU job reaches 95% GPU utilization. The images are "
                                         "JPEG files decoded by a PyTorch DataLoader with 6 workers.\n");
  const auto d2 = diagnose::diagnose(gather_evidence({busy}).facts);
  EXPECT_FALSE(d2.primary && d2.primary->cause == "input-bound") << describe(d2);
}

// DistributedDataParallel in one process over all the GPUs of a node is DataParallel's shape (issue #36).
TEST(FileCauses, DdpInOneProcessOverAllGpus) {
  TempDir dir;
  const auto post = dir.write("post.md", "# DDP slower than one GPU\n\nI use the Single-Process Multi-GPU mode: one process "
                                         "for the node drives all visible GPUs.\n\n```python\nmodel = DistributedDataParallel(model)\n"
                                         "```\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "dataparallel-not-ddp") << describe(d);
}

// Controls from a hostile review: a best one-GPU row of another variant proves healthy scaling, never a loss (the rows
// may differ in batch or precision); a slow management network beside InfiniBand is not the data path.
TEST(FileCauses, HostileControlsOfTheNewReasoning) {
  TempDir dir;
  const auto batch = dir.write("batch.md", "# RL on 2 GPUs\n\n- 2 GPUs (batch 64 each): ~100K FPS\n"
                                           "- 1 GPU (batch 256): ~100K FPS\n- 1 GPU (batch 64): 52K FPS\n");
  const auto d = diagnose::diagnose(gather_evidence({batch}).facts);
  EXPECT_FALSE(d.primary && (d.primary->cause == "comm-bound-small-model" || d.primary->cause == "bandwidth-bound-gradients"))
      << describe(d);
  const auto ib = dir.write("ib.md", "# Multi-node BERT-Large\n\nBERT-Large pre-training scales poorly across our 4 nodes "
                                     "(8 V100 each).\nThe nodes are joined by 200 Gb/s InfiniBand; the management Ethernet "
                                     "measures 4 Gbps with iperf.\n");
  const auto d2 = diagnose::diagnose(gather_evidence({ib}).facts);
  EXPECT_FALSE(d2.primary && d2.primary->cause == "bandwidth-bound-gradients") << describe(d2);
}

// A post stored as one blockquote (a forum page's copy) is read as what it quotes; the input pipeline's measured share
// of the step names input-bound, with that share as its cost (issue #36, batch 18). Controls: a share of
// communication is not data loading; a post that only quotes someone in places keeps its quotes unread.
TEST(FileCauses, AQuotedPostAndTheDataLoadingShareOfTheStep) {
  TempDir dir;
  const auto post = dir.write("post.md", "# Slow epochs\n\n> We train a ResNet-50 on 8 GPUs.\n>\n> Loading data takes about "
                                         "60% of the total time of each iteration, and GPU utilization drops to 5%.\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "input-bound") << describe(d);
  ASSERT_TRUE(d.primary->cost.share) << describe(d);
  EXPECT_NEAR(*d.primary->cost.share, 0.60, 1e-9);
  const auto comm = dir.write("comm.md", "# Slow epochs\n\nWe train a ResNet-50 on 8 GPUs. NCCL communication takes about "
                                         "60% of the total time of each iteration.\n");
  const auto d2 = diagnose::diagnose(gather_evidence({comm}).facts);
  EXPECT_FALSE(d2.primary && d2.primary->cause == "input-bound") << describe(d2);
  const auto partly = dir.write("partly.md", "# Slow epochs\n\nOur job runs on 8 GPUs and each epoch is slow.\n\n"
                                             "> Loading data takes about 60% of the total time of each iteration.\n\n"
                                             "Someone wrote the above on a forum; our own loader is fast.\n");
  const auto d3 = diagnose::diagnose(gather_evidence({partly}).facts);
  EXPECT_FALSE(d3.primary && d3.primary->cause == "input-bound") << describe(d3);
}

// A run said to block (a hang in other words) that runs once NCCL_P2P_DISABLE=1 is set: peer-to-peer fails — ACS or
// the IOMMU; shared memory that NCCL could not create, said in words: the container's /dev/shm (issue #36, batch 18).
// Controls: "transformer blocks" are no hang; a question about /dev/shm is no failure.
TEST(FileCauses, ABlockedRunThatP2pOffFixesAndShmTheTextSaysFailed) {
  TempDir dir;
  const auto post = dir.write("post.md", "# all_reduce_perf blocks\n\nOn two A100 GPUs the all_reduce_perf process blocks "
                                         "after init and never starts the test.\nWith NCCL_P2P_DISABLE=1 the test runs "
                                         "normally.\n");
  const auto d = diagnose::diagnose(gather_evidence({post}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "p2p-blocked-acs-iommu") << describe(d);
  const auto blocks = dir.write("blocks.md", "# Slow model\n\nOur model has 24 transformer blocks on two A100 GPUs and each "
                                             "step is slow.\nWith NCCL_P2P_DISABLE=1 the test runs normally.\n");
  const auto d2 = diagnose::diagnose(gather_evidence({blocks}).facts);
  EXPECT_FALSE(d2.primary && d2.primary->cause == "p2p-blocked-acs-iommu") << describe(d2);
  const auto shm = dir.write("shm.md", "# NCCL error in Docker\n\nTraining on 8 H100 GPUs inside a Docker container throws an "
                                       "NCCL error: it failed to create a shared-memory segment under /dev/shm.\n");
  const auto d3 = diagnose::diagnose(gather_evidence({shm}).facts);
  ASSERT_TRUE(d3.primary) << describe(d3);
  EXPECT_EQ(d3.primary->cause, "container-ipc-shm") << describe(d3);
  const auto ask = dir.write("ask.md", "# Docker settings\n\nHow large should /dev/shm be for NCCL on 8 H100 GPUs?\n");
  const auto d4 = diagnose::diagnose(gather_evidence({ask}).facts);
  EXPECT_FALSE(d4.primary && d4.primary->cause == "container-ipc-shm") << describe(d4);
}

// "DP" as the mode a job runs in names DataParallel; DP as one dimension of 3-D parallelism does not; a goal is not a
// measured efficiency (issue #36, batch 18).
TEST(FileCauses, DpAsAModeAndAGoalThatIsNoMeasurement) {
  TempDir dir;
  const auto dp = dir.write("dp.md", "# Why is multi-GPU dp slower?\n\nHaving 2 GPUs with DP seems to be slower than using "
                                     "just 1. Is it normal?\n");
  const auto d = diagnose::diagnose(gather_evidence({dp}).facts);
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "dataparallel-not-ddp") << describe(d);
  const auto mp = dir.write("mp.md", "# Megatron layout\n\nWe run TP=2, PP=4 and DP=8 on 64 GPUs and each step is slow.\n");
  const auto d2 = diagnose::diagnose(gather_evidence({mp}).facts);
  EXPECT_FALSE(d2.primary && d2.primary->cause == "dataparallel-not-ddp") << describe(d2);
  const auto goal = dir.write("goal.md", "# ResNet-50 on a cluster\n\nThe goal is to get 90% scaling efficiency for more "
                                         "than 160 gpus. We use 8 V100 per node.\n");
  const auto d3 = diagnose::diagnose(gather_evidence({goal}).facts);
  EXPECT_FALSE(d3.primary && d3.primary->cause == "no-defect") << describe(d3);
}

// A job that failed by itself (profile's job.json): the failure is the diagnosis's first finding; a launcher crash
// that data/launcher_failures.json knows gets its fix; nothing about the job's scaling is asked for (issue #39).
TEST(FileCauses, AFailedJobIsTheFirstFinding) {
  TempDir dir;
  const auto job = dir.write("job.json", R"({"schema": "scalescope.job/1", "command": ["torchrun", "--nproc_per_node", "2", "ok.py"],
    "ended": "exited with status 1", "exit_status": 1, "failure": {"failed_ranks": [],
    "first_exception": "AttributeError: 'NoneType' object has no attribute 'get'",
    "frame": "File \"/usr/lib/python3/dist-packages/torch/distributed/elastic/multiprocessing/api.py\", line 162, in to_map",
    "launcher_crash": true}})");
  const auto d = diagnose::diagnose(gather_evidence({job}).facts);
  ASSERT_TRUE(d.failure) << describe(d);
  EXPECT_TRUE(d.failure->launcher_crash);
  EXPECT_NE(d.failure->fix.find("--redirects"), std::string::npos) << d.failure->fix;
  EXPECT_FALSE(d.failure->fix_source.empty());
  EXPECT_TRUE(d.missing_evidence.empty()) << describe(d);
  const auto text = diagnose::render(d);
  EXPECT_EQ(text.find("  the job FAILED"), text.find('\n') + 1) << text;
  nlohmann::json j = d;
  EXPECT_TRUE(j.at("failure").at("launcher_crash").get<bool>());
  // Another exception: no fix from the table, the exception itself is what to fix.
  const auto other = dir.write("other.json", R"({"schema": "scalescope.job/1", "ended": "exited with status 1", "exit_status": 1,
    "failure": {"failed_ranks": [1], "first_exception": "RuntimeError: CUDA out of memory", "rank": 1}})");
  const auto d2 = diagnose::diagnose(gather_evidence({other}).facts);
  ASSERT_TRUE(d2.failure) << describe(d2);
  EXPECT_TRUE(d2.failure->fix.empty());
  EXPECT_EQ(d2.failure->rank, 1);
  // A job that ended well has no failure.
  const auto fine = dir.write("fine.json", R"({"schema": "scalescope.job/1", "ended": "exited with status 0", "exit_status": 0})");
  EXPECT_FALSE(diagnose::diagnose(gather_evidence({fine}).facts).failure);
}

// Controls from a hostile review of batch 18's readings: a wait with its cause named is no hang; another DP is no
// DataParallel; a percentage beside data loading that is no share of the step, shared memory that is fine, a quoted
// question answered by the poster's own different job, a hoped-for speedup — none is read as the poster's (issue #36).
TEST(FileCauses, HostileControlsOfBatch18sReadings) {
  TempDir dir;
  EXPECT_NE(dir.primary("h1.md", "I train on 2 x A100 PCIe with DistributedDataParallel. One step takes 100 ms on one GPU and 300 "
                           "ms on 2 GPUs.\nEach all-reduce is blocked waiting for rank 1, which is slower; with "
                           "NCCL_P2P_DISABLE=1 it works a bit faster.\n"),
            "p2p-blocked-acs-iommu");
  EXPECT_NE(dir.primary("h3.md", "I train on 2 x A100 PCIe with DistributedDataParallel. One step takes 100 ms on one GPU and 180 "
                           "ms on 2 GPUs.\nTCP port 29500 is blocked by the firewall, so I use port 29501. It also works "
                           "with NCCL_P2P_DISABLE=1, at the same speed.\n"),
            "p2p-blocked-acs-iommu");
  EXPECT_NE(dir.primary("p2.md", "I train with differential privacy (DP) on 4 GPUs. One step takes 200 ms on one GPU and 260 ms "
                           "on 4 GPUs, ResNet-18.\n"),
            "dataparallel-not-ddp");
  EXPECT_NE(dir.primary("p5.md", "We train a 7B model with HSDP on 64 x H100: 8 DP replicas across 8 nodes of 8 GPUs. Step time is "
                           "4 s on 8 GPUs and 4.6 s on 64 GPUs.\n"),
            "dataparallel-not-ddp");
  EXPECT_NE(dir.primary("d2.md", "I train a ResNet-50 on 4 x A100 with DistributedDataParallel, 100 ms per step on one GPU and 190 "
                           "ms on 4 GPUs.\nAfter switching to DALI, data loading got 75% faster, so the input pipeline is "
                           "not the problem any more.\n"),
            "input-bound");
  EXPECT_NE(dir.primary("d4.md", "I train a ResNet-50 on 4 x A100 with DistributedDataParallel, 100 ms per step on one GPU and 190 "
                           "ms on 4 GPUs.\nThe dataloader prefetch queue holds 60% of the dataset in RAM.\n"),
            "input-bound");
  EXPECT_NE(dir.primary("s2.md", "I train a GPT-2 on 8 x A100 with DistributedDataParallel in Docker. One GPU: 300 ms per step; 8 "
                           "GPUs: 900 ms per step.\nThere is no error in the NCCL log about /dev/shm, and /dev/shm is 64 GB, "
                           "not too small.\n"),
            "container-ipc-shm");
  EXPECT_NE(dir.primary("g4.md", "We train BERT-large with DistributedDataParallel on 16 x V100 over 4 nodes. Hoping for a 3.8x "
                           "speedup on 4 GPUs, we got a 1.9x speedup.\n"),
            "no-defect");
  EXPECT_NE(dir.primary("q14.md", "> I train a BERT model on 2 x A100 PCIe with DistributedDataParallel.\n> The process blocks at "
                            "the first all-reduce and never proceeds.\n> With NCCL_P2P_DISABLE=1 it works.\n> Does anyone "
                            "know why?\n\nI have a different problem on 4 x A100 SXM: 100 ms per step on one GPU, 250 ms on "
                            "4 GPUs.\n"),
            "p2p-blocked-acs-iommu");
  // A post quoted at two levels is read as what it quotes.
  EXPECT_EQ(dir.primary("q4.md", "> > My DDP job on 2 x A100 PCIe blocks at the first all-reduce.\n> > With NCCL_P2P_DISABLE=1 it "
                           "works.\n> Same here on 2 x A100 PCIe, the process blocks and never proceeds.\n> It works with "
                           "NCCL_P2P_DISABLE=1.\n"),
            "p2p-blocked-acs-iommu");
}

// Step rates (a "global_step/sec" column) are per step: at N GPUs with the per-GPU batch held, N × r(N) / r(1) is the
// speedup. The same GPU count measured at two per-GPU batches, the larger scaling clearly better, is a cost fixed per
// step that more compute hides: comm-bound-small-model, not compute contention (issue #36, batch 19). Controls: the
// efficiency the same at both batches; one batch only.
TEST(FileCauses, StepRatesAndAScalingThatGrowsWithTheBatch) {
  TempDir dir;
  const auto d = dir.diagnosis("rates.md", "| batch_size | # of gpus | train_step/sec |\n|---|---|---|\n| 4096 | 1 | 4.0 |\n"
                                  "| 4096 | 4 | 3.2 |\n| 512 | 1 | 20.0 |\n| 512 | 4 | 6.0 |\n");
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "comm-bound-small-model") << describe(d);
  bool batch_line = false;
  for (const auto& e : d.primary->evidence) batch_line |= e.says.find("per-GPU batch 4096") != std::string::npos;
  EXPECT_TRUE(batch_line) << describe(d);  // 80 % at 4096 against 30 % at 512
  for (const auto& c : d.contributing) EXPECT_NE(c.cause, "compute-contention") << describe(d);
  // The same loss at both batches: not a fixed per-step cost (nothing here says communication's).
  const auto same = dir.diagnosis("same.md", "| batch_size | # of gpus | train_step/sec |\n|---|---|---|\n| 4096 | 1 | 4.0 |\n"
                                    "| 4096 | 4 | 1.2 |\n| 512 | 1 | 20.0 |\n| 512 | 4 | 6.0 |\n");
  for (const auto& e : same.primary ? same.primary->evidence : std::vector<diagnose::EvidenceLine>{})
    EXPECT_EQ(e.says.find("more compute per step hides"), std::string::npos) << describe(same);
  // A step rate is not a step time: one rank's 20 steps/s against four ranks' 6 steps/s is each step 3.3× longer.
  const auto one = dir.diagnosis("one.md", "| # of gpus | global_step/sec |\n|---|---|\n| 1 | 20.0 |\n| 4 | 6.0 |\n");
  ASSERT_TRUE(one.primary) << describe(one);
  if (one.primary->cause == "compute-contention") {
    ASSERT_TRUE(one.primary->cost.seconds) << describe(one);
    EXPECT_NEAR(*one.primary->cost.seconds, 1 / 6.0 - 1 / 20.0, 1e-6) << describe(one);
  }
}

// A post in Chinese says its GPU counts in fixed terms ("单卡" one card, "双卡" two, "8卡" eight) and sets no blanks
// between words and figures; "one GPU 4090" names the product after its noun (issue #36, batch 19). Our own post: a
// 1.5B model at per-GPU batch 1 on one and two RTX 3090s, slower than it should scale. Controls: the same words
// without a model or hardware name nothing; an English post is read as before.
TEST(FileCauses, AChinesePostsCountsAndAProductAfterItsNoun) {
  TempDir dir;
  const auto d = dir.diagnosis("zh.md", "# 双卡训练没有提升\n\n我用bert-large的模型训练，batch_size=1，单卡3090每个epoch要300min，双卡3090也要"
                               "240min，为什么双卡的训练速度比单卡没有快多少？\n");
  ASSERT_TRUE(d.primary) << describe(d);
  EXPECT_EQ(d.primary->cause, "comm-bound-small-model") << describe(d);
  // A line of figures between its ideographs ("4机>2机>1机") is still prose: its product and count are read.
  const auto figures = gather_evidence({dir.write("zh3.md", "在每台机器为8卡V100显卡下，同样batchsize单个batch平均耗时4机>2机>1机"
                                                           "（机器越多耗时越大）。\n")}).facts;
  EXPECT_EQ(figures.count<diagnose::GpuSeen>(), 1u);
  const auto none = dir.diagnosis("zh2.md", "# 训练问题\n\n你好，我有一个问题，训练的时候速度很慢，请问应该怎么办呢？谢谢大家的帮助和建议。\n");
  EXPECT_FALSE(none.primary) << describe(none);
  const auto en = dir.diagnosis("en.md", "I train BERT-large with DistributedDataParallel at batch size 1 on one GPU 3090 and on "
                                "two GPUs 3090: 300 min per epoch on one GPU and 240 min on two.\n");
  ASSERT_TRUE(en.primary) << describe(en);
  EXPECT_EQ(en.primary->cause, "comm-bound-small-model") << describe(en);
}

// The input pipeline named by its dataset class or its reading speed ("datasets.ImageFolder", "optimize the reading
// speed") beside GPUs busy a third of the time leans to input-bound (issue #36, batch 19). Control: the same words
// with the GPUs busy 97 % of the time.
TEST(FileCauses, ImageFolderAndAThirdOfTheTimeBusy) {
  TempDir dir;
  EXPECT_EQ(dir.primary("if.md", "Training a ResNet-50 on 4 RTX 3090 takes 90 min per epoch and the GPU utilization is only about 35%. "
                           "I use datasets.ImageFolder as in the example; how can I improve the reading speed?\n"),
            "input-bound");
  EXPECT_NE(dir.primary("if2.md", "Training a ResNet-50 on 4 RTX 3090 takes 90 min per epoch and the GPU utilization is about 97%. "
                            "I use datasets.ImageFolder as in the example; is this the expected time?\n"),
            "input-bound");
}

// One NCCL variable given several values in one file ("we ran the default, NCCL_ALGO=Tree and NCCL_ALGO=Ring") is the
// runs a text compares, not the job's environment: no nccl-env-override from it (issue #36, batch 19). Control: one
// value, set for the job.
TEST(FileCauses, ASettingComparedAtSeveralValuesIsNoOverride) {
  TempDir dir;
  EXPECT_NE(dir.primary("ab.md", "We fine-tune a 7B model with FSDP on 4 nodes of 8 x H100 over NDR InfiniBand. We ran it three "
                           "ways: the default (no NCCL_ALGO), NCCL_ALGO=Tree and NCCL_ALGO=Ring, at 1, 2 and 4 nodes.\n"),
            "nccl-env-override");
  EXPECT_EQ(dir.primary("one.md", "We fine-tune a 7B model with FSDP on 4 nodes of 8 x H100 over NDR InfiniBand. Our launch "
                            "script sets NCCL_ALGO=Ring for the job, and scaling from 1 to 4 nodes is poor.\n"),
            "nccl-env-override");
}

// What the hostile review of batch 19's readings found (issue #36): "N台机" and "N机" are nodes (the measure word is
// three bytes: a regex's "?" once bound only its last byte); a count of hours or days after a GPU noun names no
// product ("8 GPUs 4090 hours"). (A prose text is now read up to 256 KB and a line up to 8 KB: its time is in
// bench/RESULTS.md, not tested here.)
TEST(FileCauses, HostileControlsOfBatch19sReadings) {
  TempDir dir;
  const auto nodes = [&](const char* name, const std::string& text) {
    std::optional<int> n;
    for (const auto& w : gather_evidence({dir.write(name, text)}).facts.of<diagnose::WorldShape>())
      if (w.fact.nodes) n = std::max(n.value_or(0), *w.fact.nodes);
    return n;
  };
  EXPECT_EQ(nodes("n1.md", "我们用 4台机 训练，每台机器 8 张 A100，用 DistributedDataParallel，训练速度没有提升，为什么？\n"), 4);
  EXPECT_EQ(nodes("n2.md", "我们用 4机 训练，每台机器 8 张 A100，用 DistributedDataParallel，训练速度没有提升，为什么？\n"), 4);
  EXPECT_EQ(gather_evidence({dir.write("h.md", "The job used 8 GPUs 4090 hours last month on our H100 cluster and it "
                                                 "scales poorly from one node to two.\n")})
                .facts.count<diagnose::GpuSeen>(),
            1u);  // the H100 only
}

// The input pipeline in a user's own words ("the data is loaded", "the data upload") beside GPUs measured at 0 %
// most of the time: input-bound (issue #36, batch 20). Control: the same words with the GPUs busy 95 %.
TEST(FileCauses, DataLoadedWhileTheGpusIdle) {
  TempDir dir;
  EXPECT_EQ(dir.primary("idle.md", "We train a ResNet-101 on 8 GPUs with DistributedDataParallel. nvidia-smi shows the GPU "
                             "utilization at 0% for several seconds while the data is loaded, then a short burst. How can "
                             "the data upload be made faster?\n"),
            "input-bound");
  EXPECT_NE(dir.primary("busy.md", "We train a ResNet-101 on 8 GPUs with DistributedDataParallel. nvidia-smi shows the GPU "
                             "utilization at 95% while the data is loaded in the background. Is this the expected speed?\n"),
            "input-bound");
}
