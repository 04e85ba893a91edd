// Tests of the prose reader (readers/prose/report_text.h): the project's own fixtures of issue text for every claim kind,
// negations, trials and suggestions, settings stated as in force, GPU products and node counts, code blocks and log
// lines left to the other readers, detection against other kinds of input, damaged text; then every file of the
// shared corpus (detection must say no to logs, nccl-tests outputs, topology matrices, traces …).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "readers/prose/report_text.h"

namespace {

using scalescope::analyze::looks_like_report_text;
using scalescope::analyze::read_report_text;
using scalescope::diagnose::Claim;
using scalescope::diagnose::GpuSeen;
using scalescope::diagnose::Reading;
using scalescope::diagnose::Setting;
using scalescope::diagnose::WorldShape;

Reading read(const std::string& text) { return read_report_text(text, "report.md"); }

std::vector<std::pair<std::string, std::string>> claims(const Reading& r) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& c : r.facts.of<Claim>()) out.emplace_back(c.fact.kind, c.fact.detail);
  return out;
}

std::string dump(const Reading& r) {
  std::string s;
  for (const auto& [k, d] : claims(r)) s += "  claim " + k + " [" + d + "]\n";
  for (const auto& x : r.facts.of<Setting>()) s += "  setting " + x.fact.name + "=" + x.fact.value + "\n";
  for (const auto& g : r.facts.of<GpuSeen>()) s += "  gpu " + g.fact.name + "\n";
  for (const auto& n : r.notes) s += "  note " + n + "\n";
  return s;
}

bool has(const Reading& r, const std::string& kind, const std::string& detail) {
  const auto c = claims(r);
  return std::find(c.begin(), c.end(), std::make_pair(kind, detail)) != c.end();
}

std::size_t count_kind(const Reading& r, const std::string& kind) {
  std::size_t n = 0;
  for (const auto& [k, d] : claims(r)) n += k == kind ? 1 : 0;
  return n;
}

std::string setting(const Reading& r, const std::string& name) {
  for (const auto& s : r.facts.of<Setting>())
    if (s.fact.name == name) return s.fact.value;
  return "<absent>";
}

bool has_note(const Reading& r, const std::string& part) {
  return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

}  // namespace

// ───────────────────────────── hangs ─────────────────────────────

TEST(ReportText, HangsAndWhereTheyHappen) {
  const Reading r = read(
      "## Summary\n"
      "\n"
      "After moving to the new cluster our DDP job hangs at the first all-reduce. ncclCommInitRank completes on all\n"
      "eight ranks, then every GPU sits at 100% utilization with no progress and no error.\n");
  EXPECT_TRUE(has(r, "hang", "first all-reduce")) << dump(r);
  EXPECT_TRUE(has(r, "hang", "after init; GPUs at 100%")) << dump(r);
  // The provenance is the sentence, at the line where it starts.
  const auto c = r.facts.of<Claim>();
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c.front().where.source, "report.md");
  EXPECT_EQ(c.front().where.line, 3u);
  EXPECT_EQ(c.front().where.excerpt, "After moving to the new cluster our DDP job hangs at the first all-reduce.");

  // Each word of the vocabulary, and a program named with it.
  for (const std::string text : {"The training is stuck after epoch 3.", "We see a deadlock in the barrier.",
                                 "The process freezes when the first batch arrives.",
                                 "Both GPUs spin at 100% forever.",
                                 "I launch `all_reduce_perf` and it never returns."}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(count_kind(read(text), "hang"), 1u) << dump(read(text));
  }
  EXPECT_TRUE(has(read("I launch `all_reduce_perf` and it never returns."), "hang", "all_reduce_perf"));
  // A plateau is not a hang; a hang that is denied is not one either.
  for (const std::string text : {"Bus bandwidth is stuck at ~40 GB/s on every size.", "It does not hang.",
                                 "The job no longer hangs.", "Without hanging, the loss goes down."}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(count_kind(read(text), "hang"), 0u) << dump(read(text));
  }
}

// ───────────────────────────── works / fails / slow with a setting ─────────────────────────────

TEST(ReportText, WorksWithASettingOrAChange) {
  const Reading r = read(
      "Setting `NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1` (forcing socket transport) resolves the deadlock completely.\n"
      "\n"
      "With NCCL_IB_DISABLE=1 the job no longer hangs.\n"
      "\n"
      "Running the container with --ipc=host fixes the crash.\n"
      "\n"
      "Using DDP instead of DataParallel solved the slowdown.\n"
      "\n"
      "Switching from DataParallel to DistributedDataParallel also helped.\n"
      "\n"
      "Booting the kernel with intel_iommu=off resolved all our problems.\n"
      "\n"
      "Disabling VT-d in the BIOS fixed it.\n");
  EXPECT_TRUE(has(r, "works-with", "NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1")) << dump(r);
  EXPECT_TRUE(has(r, "works-with", "NCCL_IB_DISABLE=1")) << dump(r);
  EXPECT_TRUE(has(r, "works-with", "--ipc=host")) << dump(r);
  EXPECT_TRUE(has(r, "works-with", "DDP instead of DataParallel")) << dump(r);
  EXPECT_TRUE(has(r, "works-with", "DistributedDataParallel instead of DataParallel")) << dump(r);
  EXPECT_TRUE(has(r, "works-with", "intel_iommu=off")) << dump(r);
  EXPECT_TRUE(has(r, "works-with", "Disabling VT-d")) << dump(r);
  // What makes it work is not what was in force when it failed.
  EXPECT_TRUE(r.facts.of<Setting>().empty()) << dump(r);
  EXPECT_TRUE(has_note(r, "NCCL_P2P_DISABLE=1 is stated as what makes it work")) << dump(r);
  // The deadlock it resolves is a hang the text states ("no longer hangs" is none).
  EXPECT_EQ(count_kind(r, "hang"), 1u) << dump(r);
  EXPECT_EQ(count_kind(r, "slow-with"), 0u) << dump(r);  // "solved the slowdown": the slowness is gone
}

TEST(ReportText, NegationsTrialsAndStillHangs) {
  {
    const Reading r = read("I tried NCCL_P2P_DISABLE=1 but it still hangs.\n");
    EXPECT_EQ(count_kind(r, "works-with"), 0u) << dump(r);
    EXPECT_EQ(count_kind(r, "fails-with"), 0u) << dump(r);
    EXPECT_EQ(count_kind(r, "hang"), 1u) << dump(r);
    EXPECT_EQ(setting(r, "NCCL_P2P_DISABLE"), "<absent>") << dump(r);  // tried, not in force
  }
  {
    const Reading r = read("It does not hang with NCCL_SHM_DISABLE=1.\n");
    EXPECT_TRUE(has(r, "works-with", "NCCL_SHM_DISABLE=1")) << dump(r);
    EXPECT_EQ(count_kind(r, "hang"), 0u) << dump(r);
  }
  {
    const Reading r = read("Even with NCCL_P2P_LEVEL=LOC the job hangs.\n");
    EXPECT_EQ(count_kind(r, "works-with"), 0u) << dump(r);
    EXPECT_EQ(count_kind(r, "fails-with"), 0u) << dump(r);
    EXPECT_EQ(setting(r, "NCCL_P2P_LEVEL"), "<absent>") << dump(r);
  }
  {
    const Reading r = read("NCCL_ALGO=Tree did not help.\n");
    EXPECT_TRUE(claims(r).empty()) << dump(r);
    EXPECT_TRUE(r.facts.of<Setting>().empty()) << dump(r);
  }
  {
    const Reading r = read("It does not work with NCCL_PROTO=LL128.\n");
    EXPECT_TRUE(has(r, "fails-with", "NCCL_PROTO=LL128")) << dump(r);
    EXPECT_EQ(count_kind(r, "works-with"), 0u) << dump(r);
  }
  {
    // A question and a suggestion say nothing of the job.
    const Reading r = read("Does NCCL_P2P_DISABLE=1 fix it? Could you try NCCL_SHM_DISABLE=1 as well?\n"
                           "Please set NCCL_DEBUG=INFO and rerun.\n");
    EXPECT_EQ(count_kind(r, "works-with"), 0u) << dump(r);
    EXPECT_TRUE(r.facts.of<Setting>().empty()) << dump(r);
  }
  {
    // A trial that worked is a works-with.
    const Reading r = read("I tried NCCL_P2P_DISABLE=1 and it works.\n");
    EXPECT_TRUE(has(r, "works-with", "NCCL_P2P_DISABLE=1")) << dump(r);
  }
}

TEST(ReportText, FailsOnlyWithAndContrasts) {
  const Reading r = read(
      "It only hangs when NCCL_PROTO=LL128 is set.\n\n"
      "With NCCL_P2P_LEVEL=SYS it hangs, with NCCL_P2P_LEVEL=LOC it works.\n");
  EXPECT_TRUE(has(r, "fails-with", "NCCL_PROTO=LL128")) << dump(r);
  EXPECT_TRUE(has(r, "fails-with", "NCCL_P2P_LEVEL=SYS")) << dump(r);
  EXPECT_TRUE(has(r, "works-with", "NCCL_P2P_LEVEL=LOC")) << dump(r);
  EXPECT_FALSE(has(r, "works-with", "NCCL_P2P_LEVEL=SYS")) << dump(r);
}

TEST(ReportText, SlowAndSlowWith) {
  const Reading r = read(
      "Setting NCCL_P2P_DISABLE=1 did work around the hang but the speed was really low.\n\n"
      "Cross-node all-reduce is 4-5x slower than expected, about 5 GB/s.\n\n"
      "It is not slower with NCCL_ALGO=Ring.\n");
  EXPECT_TRUE(has(r, "slow-with", "NCCL_P2P_DISABLE=1")) << dump(r);
  EXPECT_FALSE(has(r, "works-with", "NCCL_P2P_DISABLE=1")) << dump(r);
  EXPECT_TRUE(has(r, "slow", "4-5x slower; 5 GB/s")) << dump(r);
  EXPECT_EQ(count_kind(r, "slow"), 1u) << dump(r);  // the slowness of the workaround is its own, and "not slower" is none
  const Reading w = read("With NCCL_NET_GDR_LEVEL=PHB training is slow.\n");
  EXPECT_TRUE(has(w, "slow-with", "NCCL_NET_GDR_LEVEL=PHB")) << dump(w);
}

// ───────────────────────────── paths ─────────────────────────────

TEST(ReportText, PathClassesThatWorkOrHang) {
  {
    const Reading r = read("all_reduce_perf works fine only with those linked through SYS. The rest will result in hanging.\n");
    EXPECT_TRUE(has(r, "works-on-path", "SYS")) << dump(r);
    EXPECT_TRUE(has(r, "fails-on-path", "others than SYS")) << dump(r);
    EXPECT_EQ(count_kind(r, "hang"), 1u) << dump(r);
  }
  {
    const Reading r = read("The test passes on the NV12 pairs but hangs between GPUs behind one PIX switch.\n");
    EXPECT_TRUE(has(r, "works-on-path", "NV12")) << dump(r);
    EXPECT_TRUE(has(r, "fails-on-path", "PIX")) << dump(r);
    EXPECT_FALSE(has(r, "fails-on-path", "NV12")) << dump(r);
  }
  {
    const Reading r = read("Only the PXB pair hangs.\n");
    EXPECT_TRUE(has(r, "fails-on-path", "PXB")) << dump(r);
    EXPECT_TRUE(has(r, "works-on-path", "others than PXB")) << dump(r);
  }
  {
    // A path denied ("no NVLink") is no path; one named beside a setting is the setting's condition.
    const Reading r = read("The two GPUs hang on the first collective over PHB with no NVLink.\n\n"
                           "With NCCL_P2P_DISABLE=1 it works on the PIX pair too.\n");
    EXPECT_TRUE(has(r, "fails-on-path", "PHB")) << dump(r);
    EXPECT_FALSE(has(r, "fails-on-path", "NVLink")) << dump(r);
    EXPECT_FALSE(has(r, "works-on-path", "PIX")) << dump(r);
    EXPECT_TRUE(has(r, "works-with", "NCCL_P2P_DISABLE=1")) << dump(r);
  }
}

// ───────────────────────────── containers, nodes, GPUs ─────────────────────────────

TEST(ReportText, Containers) {
  {
    const Reading r = read("## Environment\n\n- **Container**: Docker with `--gpus all --ipc=host`\n- Driver: 580.82\n");
    EXPECT_TRUE(has(r, "container", "docker --gpus all --ipc=host")) << dump(r);
  }
  {
    const Reading r = read("The job runs in a Kubernetes pod on GKE.\n");
    EXPECT_TRUE(has(r, "container", "kubernetes")) << dump(r);
  }
  {
    // A flag that fixed it was not in force: the container claim leaves it out.
    const Reading r = read("We train inside a container. Adding --shm-size=16g to docker run fixed it.\n");
    EXPECT_TRUE(has(r, "container", "docker")) << dump(r);
    EXPECT_TRUE(has(r, "works-with", "--shm-size=16g")) << dump(r);
  }
  EXPECT_EQ(count_kind(read("It also fails on bare metal, not in a container.\n"), "container"), 0u);
}

TEST(ReportText, NodesGpusAndWorldShape) {
  {
    const Reading r = read("I use two node, every node has 8 gpu and 3 nic. But I only see gdrdma used in one node.\n");
    EXPECT_TRUE(has(r, "nodes", "2")) << dump(r);
    EXPECT_FALSE(has(r, "nodes", "1")) << dump(r);  // "in one node" is one of the two
    const auto w = r.facts.of<WorldShape>();
    ASSERT_EQ(w.size(), 1u) << dump(r);
    EXPECT_EQ(w[0].fact.nodes, 2);
    EXPECT_EQ(w[0].fact.ranks_per_node, 8);
    EXPECT_EQ(w[0].fact.ranks, 16);
    EXPECT_NE(w[0].fact.basis.find("report text"), std::string::npos);
  }
  {
    const Reading r = read("Cluster: 2 nodes x 8 GPUs, 8x H100 80GB HBM3 per node. The multi-node run is slow.\n");
    EXPECT_TRUE(has(r, "nodes", "2")) << dump(r);
    EXPECT_FALSE(has(r, "nodes", "multi-node")) << dump(r);  // the count says more
    const auto g = r.facts.of<GpuSeen>();
    ASSERT_EQ(g.size(), 1u) << dump(r);
    EXPECT_EQ(g[0].fact.name, "H100 80GB HBM3");
    EXPECT_EQ(r.facts.of<WorldShape>().at(0).fact.ranks_per_node, 8);
  }
  {
    const Reading r = read("Hardware:\n4 GeForce RTX 2080 GPUs in one server.\n\n"
                           "- GPUs: 2x NVIDIA RTX 5880 Ada Generation (48 GB, SM 8.9)\n"
                           "- Also two TITAN RTX cards and 8 A100s.\n");
    std::vector<std::string> names;
    for (const auto& g : r.facts.of<GpuSeen>()) names.push_back(g.fact.name);
    EXPECT_EQ(names, (std::vector<std::string>{"GeForce RTX 2080", "NVIDIA RTX 5880 Ada Generation", "TITAN RTX", "A100"}))
        << dump(r);
    EXPECT_EQ(r.facts.of<GpuSeen>().at(0).where.line, 2u);  // the line the count stands on
    EXPECT_TRUE(has(r, "nodes", "1")) << dump(r);
  }
  {
    // No product: counts of other things, indices, ordinals, memory sizes.
    const Reading r = read("Each process uses 2 GB of memory on 8 GPUs. GPU 2 on the second node has 4 NUMA nodes.\n");
    EXPECT_TRUE(r.facts.of<GpuSeen>().empty()) << dump(r);
    EXPECT_TRUE(r.facts.of<WorldShape>().empty()) << dump(r);
    EXPECT_EQ(count_kind(r, "nodes"), 0u) << dump(r);
  }
  {
    const Reading r = read("On a single node it runs fine, on four nodes it hangs.\n");
    EXPECT_TRUE(has(r, "nodes", "4")) << dump(r);
    EXPECT_FALSE(has(r, "nodes", "1")) << dump(r);
  }
  EXPECT_TRUE(has(read("The hang only shows up in multi-node runs.\n"), "nodes", "multi-node"));
}

// ───────────────────────────── settings in force ─────────────────────────────

TEST(ReportText, SettingsStatedAsInForce) {
  {
    const Reading r = read("Our launcher exports NCCL_IB_DISABLE=0 and NCCL_SOCKET_IFNAME=eth0, and the job hangs.\n"
                           "NCCL_DEBUG=INFO\n");
    EXPECT_EQ(setting(r, "NCCL_IB_DISABLE"), "0") << dump(r);
    EXPECT_EQ(setting(r, "NCCL_SOCKET_IFNAME"), "eth0") << dump(r);
    EXPECT_EQ(setting(r, "NCCL_DEBUG"), "INFO") << dump(r);
    for (const auto& s : r.facts.of<Setting>()) EXPECT_EQ(s.fact.origin, "environment");
    EXPECT_EQ(count_kind(r, "fails-with"), 0u) << dump(r);  // the setting is the job's, not the cause it names
  }
  {
    // "NAME set to value", and a log field that only looks like a setting.
    const Reading r = read("We have NCCL_P2P_LEVEL set to NVL on all nodes. The watchdog reports NumelIn=1.\n");
    EXPECT_EQ(setting(r, "NCCL_P2P_LEVEL"), "NVL") << dump(r);
    EXPECT_EQ(setting(r, "NumelIn"), "<absent>") << dump(r);
  }
  {
    // Set in one sentence, said to work in the next: a works-with, not a setting in force.
    const Reading r = read("I set NCCL_P2P_DISABLE=1. Now it works.\n");
    EXPECT_TRUE(has(r, "works-with", "NCCL_P2P_DISABLE=1")) << dump(r);
    EXPECT_EQ(setting(r, "NCCL_P2P_DISABLE"), "<absent>") << dump(r);
  }
  {
    // Headings say what a list is.
    const Reading r = read("## What I tried\n\n- NCCL_P2P_DISABLE=1\n- NCCL_ALGO=Ring\n\n"
                           "## Workaround\n\n- NCCL_SHM_DISABLE=1\n\n## Environment\n\n- NCCL_SOCKET_IFNAME=ib0\n");
    EXPECT_EQ(setting(r, "NCCL_P2P_DISABLE"), "<absent>") << dump(r);
    EXPECT_EQ(setting(r, "NCCL_ALGO"), "<absent>") << dump(r);
    EXPECT_EQ(setting(r, "NCCL_SHM_DISABLE"), "<absent>") << dump(r);
    EXPECT_TRUE(has(r, "works-with", "NCCL_SHM_DISABLE=1")) << dump(r);
    EXPECT_EQ(setting(r, "NCCL_SOCKET_IFNAME"), "ib0") << dump(r);
  }
}

// ───────────────────────────── what is left to other readers ─────────────────────────────

TEST(ReportText, CodeBlocksLogLinesAndQuotesAreSkipped) {
  const Reading r = read(
      "The job hangs after init.\n"
      "\n"
      "```\n"
      "export NCCL_P2P_DISABLE=1   # this works\n"
      "host-a:1234:1234 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC, it hangs here\n"
      "```\n"
      "\n"
      "    NCCL_IB_DISABLE=1 fixes it\n"
      "\n"
      "host-a:1234:1234 [0] NCCL INFO NCCL_SHM_DISABLE set by environment to 1 and the job works\n"
      "[rank0]: RuntimeError: NCCL error, the job hangs with NCCL_ALGO=Tree\n"
      "NCCL_P2P_LEVEL set by environment to LOC\n"
      "\n"
      "> Try NCCL_PROTO=Simple, it works for me.\n");
  EXPECT_EQ(claims(r), (std::vector<std::pair<std::string, std::string>>{{"hang", "after init"}})) << dump(r);
  EXPECT_TRUE(r.facts.of<Setting>().empty()) << dump(r);
  EXPECT_TRUE(has_note(r, "code blocks left to the other readers")) << dump(r);
  EXPECT_TRUE(has_note(r, "log-like line(s)")) << dump(r);
  EXPECT_TRUE(has_note(r, "quoted line(s)")) << dump(r);
}

// ───────────────────────────── detection ─────────────────────────────

TEST(ReportText, LooksLikeReportText) {
  EXPECT_TRUE(looks_like_report_text(
      "Using the master version of nccl. I launch all_reduce_perf and it hangs with 100% volatile GPU usage reported.\n"));
  EXPECT_TRUE(looks_like_report_text(
      "## Summary\n\nTraining on 2 nodes is 3x slower than on one. We run in Docker.\n\n```\nNCCL INFO x\n```\n"));
  // A hardware list in words that names a GPU product and a container is read too; one that names nothing is not.
  EXPECT_TRUE(looks_like_report_text("Hardware:\n8x NVIDIA Tesla V100 GPUs\nSoftware:\nsingularity image with pytorch 2.1\n"));
  EXPECT_FALSE(looks_like_report_text("Hardware:\nsome older servers here\nSoftware:\nthe usual stack we use\n"));
  // Prose without anything this reader reads.
  EXPECT_FALSE(looks_like_report_text("Thanks for the great library! I have a question about the documentation.\n"));
  EXPECT_FALSE(looks_like_report_text(""));
  EXPECT_FALSE(looks_like_report_text("\n\n   \n"));
  const std::string others[] = {
      // NCCL log
      "host-a:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "host-a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
      "host-a:1:1 [0] NCCL INFO Channel 00/02 : 0 1\n"
      "host-a:1:1 [0] NCCL INFO Setting affinity for GPU 0 to ff00ff and the job hangs\n",
      // nccl-tests output
      "# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20\n"
      "#\n# Using devices\n#  Rank  0 Pid  1 on host-a device  0 [0x3b] Tesla V100-SXM2-16GB\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
      "   134217728      33554432     float     sum      -1   1500.0   89.48  89.48      0\n"
      "# Avg bus bandwidth    : 45.1\n",
      // topology matrix with its legend
      "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tPIX\t0-19\t0\nGPU1\tPIX\t X \t0-19\t0\n\nLegend:\n\n"
      "  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes\n"
      "  PIX  = Connection traversing at most a single PCIe bridge\n",
      // environment dump
      "NCCL_DEBUG=INFO\nNCCL_IB_DISABLE=1\nCUDA_VISIBLE_DEVICES=0,1\nNCCL_P2P_DISABLE=1\n",
      // cProfile
      "         1234567 function calls (1200000 primitive calls) in 42.123 seconds\n\n"
      "   Ordered by: cumulative time\n\n   ncalls  tottime  percall  cumtime  percall filename:lineno(function)\n"
      "     1000    5.000    0.005   20.000    0.020 module.py:10(forward)\n",
      // JSON
      "{\"traceEvents\": [], \"note\": \"the job hangs with 2 nodes\"}",
      "[{\"ph\": \"X\", \"name\": \"it hangs\"}]",
      // a training log with a framework warning wrapped over several lines
      "[W reducer.cpp:1050] Warning: find_unused_parameters=True was specified in DDP constructor, but did not find\n"
      "any unused parameters. This flag results in an extra traversal of the autograd graph every iteration, which\n"
      "can adversely affect performance. The job hangs if your model has flow control.\n",
      // a timing table
      "| setup | s/epoch |\n|---|---|\n| single GPU | 27 |\n| DataParallel (2 GPUs) | 24 |\n",
      // a command
      "NCCL_P2P_DISABLE=1 torchrun --nnodes 2 --nproc_per_node 8 train.py\n",
  };
  for (const auto& t : others) {
    SCOPED_TRACE(t.substr(0, 60));
    EXPECT_FALSE(looks_like_report_text(t));
  }
}

TEST(ReportText, DamagedTextNeverThrows) {
  std::string junk;
  for (int i = 0; i < 5000; ++i) junk += static_cast<char>((i * 131 + 17) % 256);
  const std::string texts[] = {
      junk,
      std::string(300000, 'a'),
      std::string(100000, '.') + " hangs",
      "```\nunterminated fence, it hangs with NCCL_P2P_DISABLE=1\n",
      "2x\n8 x\nNCCL_P2P_DISABLE=\n= = =\n-- --ipc\nonly\nbut but but\ninstead of\nswitching from to\n",
      "It hangs with NCCL_X=" + std::string(5000, '1') + " and 99999999999999999999 nodes and 4096x H100.\n",
      "\xE2\x80\x94\xE2\x80\x94 hang \xEF\xBC\x9F works \xE3\x80\x82",
  };
  for (const auto& t : texts) {
    EXPECT_NO_THROW({
      const auto r = read(t);
      (void)looks_like_report_text(t);
      const nlohmann::json j = r.facts;
      (void)j.dump();
    });
  }
}

// ───────────────────────────── the shared corpus ─────────────────────────────

namespace {
namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

// Logs, nccl-tests outputs, topology matrices, traces, tables and the evidence files of the cases are no prose;
// reading any corpus file never throws. The analysts' case.md files and the prose files of scaling/ may be prose.
TEST(ReportTextCorpus, OnlyProseIsReportText) {
#ifndef SCALESCOPE_SHARED_CORPUS_DIR
  GTEST_SKIP() << "SCALESCOPE_SHARED_CORPUS_DIR is not defined";
#else
  const fs::path root(SCALESCOPE_SHARED_CORPUS_DIR);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) GTEST_SKIP() << "shared corpus not found at " << root << " (checkout without ../shared)";
  std::size_t checked = 0;
  for (const char* dir : {"nccl-logs", "nccl-tests", "topo", "traces", "scaling", "cases"}) {
    if (!fs::is_directory(root / dir, ec)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / dir, ec)) {
      if (!e.is_regular_file()) continue;
      const std::string name = e.path().filename().string();
      const std::string ext = e.path().extension().string();
      if (ext == ".gz") continue;  // binary traces: never given to a text reader
      const std::string text = slurp(e.path());
      SCOPED_TRACE(e.path().string());
      bool detected = false;
      EXPECT_NO_THROW({
        detected = looks_like_report_text(text);
        (void)read_report_text(text, name);
      });
      const bool may_be_prose = name == "case.md" || name == "INDEX.md" ||
                                (std::string(dir) == "scaling" && (ext == ".md" || name.find("prose") != std::string::npos));
      if (!may_be_prose) {
        EXPECT_FALSE(detected);
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 50u);
  // A case's own account is prose, and it says what it says: the container case names Docker and --ipc=host.
  for (const auto& e : fs::directory_iterator(root / "cases", ec)) {
    if (e.path().filename().string().rfind("nccl473", 0) != 0) continue;
    const std::string text = slurp(e.path() / "case.md");
    EXPECT_TRUE(looks_like_report_text(text));
    const Reading r = read_report_text(text, "case.md");
    EXPECT_GE(count_kind(r, "container"), 1u) << dump(r);
    EXPECT_TRUE(has(r, "works-with", "--ipc=host")) << dump(r);
  }
#endif
}

// ───────────────────────────── the platform, stated ─────────────────────────────

TEST(ReportText, HypervisorNetworkRateAndAOneRankPath) {
  const auto vm = read("The servers are virtual machines with SR-IOV VF pass-through of the HCAs. Each node has 2 * HDR "
                       "InfiniBand. The all-reduce is slow.\n");
  ASSERT_EQ(vm.facts.of<scalescope::diagnose::HypervisorSeen>().size(), 1u) << dump(vm);
  const auto nics = vm.facts.of<scalescope::diagnose::NicSeen>();
  ASSERT_EQ(nics.size(), 1u) << dump(vm);
  EXPECT_EQ(nics[0].fact.line_gbit.value_or(0), 200);
  const auto eth = read("Two nodes connected by a 10G network card each. Training is 6x slower on two nodes.\n");
  ASSERT_EQ(eth.facts.of<scalescope::diagnose::NicSeen>().size(), 1u) << dump(eth);
  EXPECT_EQ(eth.facts.of<scalescope::diagnose::NicSeen>()[0].fact.line_gbit.value_or(0), 10);
  // A reproduction step names a path one rank runs alone; a plain sentence about GPUs does not.
  const auto path = read("Steps to reproduce:\n1. Run the validation step on just one GPU, and use torch.distributed.barrier() "
                         "to make the other processes wait. The training hangs.\n");
  EXPECT_EQ(count_kind(path, "one-rank-path"), 1u) << dump(path);
  EXPECT_EQ(count_kind(read("We train on one node with 8 GPUs and it hangs.\n"), "one-rank-path"), 0u);
  // Not stated as the platform: no hypervisor from "VM" in a suggestion, no rate from a GPU's memory.
  EXPECT_TRUE(read("Try it in a VM to see whether it hangs.\n").facts.of<scalescope::diagnose::HypervisorSeen>().empty());
  EXPECT_TRUE(read("The GPUs have 80 GB each and it hangs.\n").facts.of<scalescope::diagnose::NicSeen>().empty());
}
