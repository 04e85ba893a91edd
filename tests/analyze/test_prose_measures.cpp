// Tests of the prose grammar (readers/prose/measures.h) on sentences of this project's own: figures with their units
// and quantities, the GPU count each figure is measured at, speedups in words, models, links, batch, precision and
// training-code words; and that a post made only of figures is read as prose.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "readers/prose/measures.h"
#include "readers/prose/report_text.h"

namespace {

using namespace scalescope::diagnose;
using scalescope::analyze::read_sentence_measures;

FactSet read(const std::string& s) {
  FactSet out;
  read_sentence_measures(s, at("post.md", 1, s), out);
  return out;
}

TEST(ProseMeasures, TimesTakeTheirQuantityAndGpuCount) {
  const auto f = read("One epoch takes 40 seconds on 1 GPU, while with 4 GPUs it takes 35 seconds.");
  const auto ms = f.of<Measurement>();
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_EQ(ms[0].fact.quantity, "epoch time");
  EXPECT_DOUBLE_EQ(ms[0].fact.value, 40);
  EXPECT_EQ(ms[0].fact.unit, "s");
  EXPECT_EQ(ms[0].fact.dims.at("gpus"), "1");
  EXPECT_EQ(ms[1].fact.dims.at("gpus"), "4");
  EXPECT_EQ(ms[1].fact.table, "prose");
}

TEST(ProseMeasures, UnitsConvertAndRangesTakeTheirMiddle) {
  const auto f = read("Each step takes 250-350 ms with 8 GPUs and about 2 min per epoch.");
  const auto ms = f.of<Measurement>();
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_EQ(ms[0].fact.quantity, "step time");
  EXPECT_NEAR(ms[0].fact.value, 0.3, 1e-12);
  EXPECT_EQ(ms[1].fact.quantity, "epoch time");
  EXPECT_NEAR(ms[1].fact.value, 120, 1e-12);
}

TEST(ProseMeasures, BandwidthBytesAgainstBits) {
  const auto f = read("The busbw of all_reduce_perf on 8 GPUs is 95 GB/s and the NICs are 100 Gbps.");
  const auto p = f.of<BusbwPlateau>();
  ASSERT_EQ(p.size(), 1u);
  EXPECT_DOUBLE_EQ(p[0].fact.gbps, 95);
  EXPECT_EQ(p[0].fact.ranks, 8);
  const auto n = f.of<NicSeen>();
  ASSERT_EQ(n.size(), 1u);
  EXPECT_DOUBLE_EQ(*n[0].fact.line_gbit, 100);
}

TEST(ProseMeasures, ClockTimesDaysInstancesAndPercentSlower) {
  auto f = read("On a single cloud instance the run takes 1:10:00, on two such instances it takes 2:20:00.");
  auto ms = f.of<Measurement>();
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_DOUBLE_EQ(ms[0].fact.value, 4200);
  EXPECT_EQ(ms[0].fact.dims.at("gpus"), "1");
  EXPECT_EQ(ms[1].fact.dims.at("gpus"), "2");
  f = read("Training the whole schedule takes 3 days.");
  ms = f.of<Measurement>();
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_DOUBLE_EQ(ms[0].fact.value, 3 * 86400);
  f = read("With 4 GPUs the throughput is 40% lower than with a single GPU.");
  const auto sp = f.of<ScalingPoint>();
  ASSERT_EQ(sp.size(), 1u);
  EXPECT_NEAR(sp[0].fact.speedup, 0.6, 1e-12);
  {
    const auto legend = read("SYS = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes");
    for (const auto& c : legend.of<Claim>()) EXPECT_NE(c.fact.kind, "nodes");
  }
}

TEST(ProseMeasures, PortsWithTheirCountAndABusbwInBits) {
  auto f = read("Each node has 4 200Gbps NICs.");
  EXPECT_EQ(f.of<NicSeen>().size(), 4u);
  f = read("all_reduce_perf reports a busbw of 96 Gbps across the 2 nodes.");
  const auto p = f.of<BusbwPlateau>();
  ASSERT_EQ(p.size(), 1u);
  EXPECT_DOUBLE_EQ(p[0].fact.gbps, 12);  // bits → bytes
  EXPECT_TRUE(f.of<NicSeen>().empty()) << "a busbw is no port";
}

TEST(ProseMeasures, AlgbwBecomesBusbwWithTheRankCount) {
  const auto f = read("all_reduce reaches an algbw of 100 GB/s across 4 GPUs.");
  const auto p = f.of<BusbwPlateau>();
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NEAR(p[0].fact.gbps, 150, 1e-9);  // × 2(n−1)/n
}

TEST(ProseMeasures, SpeedupsInWords) {
  auto f = read("Training with 2 GPUs is only 1.1x faster than with one GPU.");
  auto s = f.of<ScalingPoint>();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].fact.world_size, 2);
  EXPECT_NEAR(s[0].fact.speedup, 1.1, 1e-12);
  f = read("With 4 GPUs it is 2x slower than a single GPU.");
  s = f.of<ScalingPoint>();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_NEAR(s[0].fact.speedup, 0.5, 1e-12);
  f = read("Using 2 GPUs gives no speedup at all.");
  s = f.of<ScalingPoint>();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_NEAR(s[0].fact.speedup, 1.0, 1e-12);
  EXPECT_TRUE(read("The model is 3x larger than before.").of<ScalingPoint>().empty());
  f = read("Going from 1 to 4 GPUs, the speedup we measure is only 2.1x.");
  s = f.of<ScalingPoint>();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].fact.world_size, 4);
  EXPECT_NEAR(s[0].fact.speedup, 2.1, 1e-12);
}

TEST(ProseMeasures, ModelsLinksBatchAndPrecision) {
  const auto f = read("I train resnet50 with batch size 64 in fp16 on two cards without NVLink, over PCIe.");
  const auto m = f.of<ModelSeen>();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].fact.name, "ResNet-50");
  ASSERT_TRUE(m[0].fact.parameters);
  EXPECT_GT(*m[0].fact.parameters, 2e7);
  const auto b = f.of<BatchSize>();
  ASSERT_EQ(b.size(), 1u);
  EXPECT_DOUBLE_EQ(*b[0].fact.per_device, 64);
  bool no_nvlink = false, pcie = false, fp16 = false;
  for (const auto& c : f.of<Claim>()) {
    no_nvlink |= c.fact.kind == "link" && c.fact.detail == "no-nvlink";
    pcie |= c.fact.kind == "link" && c.fact.detail == "pcie";
    fp16 |= c.fact.kind == "precision" && c.fact.detail == "fp16";
  }
  EXPECT_TRUE(no_nvlink);
  EXPECT_TRUE(pcie);
  EXPECT_TRUE(fp16);
}

TEST(ProseMeasures, TrainingCodeWordsAndSyncTimes) {
  auto f = read("The profile shows 30 ms of cudaStreamSynchronize every step, from loss.item() in the loop.");
  const auto h = f.of<HostSync>();
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].fact.label, "cudaStreamSynchronize");
  EXPECT_NEAR(h[0].fact.blocked_ms_per_step, 30, 1e-9);
  EXPECT_TRUE(f.of<Measurement>().empty()) << "a sync's time is not the step time";
  f = read("We wrap the model in nn.DataParallel and the DataLoader has num_workers=0.");
  bool dp = false, workers = false;
  for (const auto& c : f.of<CodeUse>()) {
    dp |= c.fact.construct == "DataParallel";
    workers |= c.fact.construct == "dataloader" && c.fact.value == 0.0;
  }
  EXPECT_TRUE(dp);
  EXPECT_TRUE(workers);
  EXPECT_TRUE(read("We moved from DataParallel to DistributedDataParallel.").of<CodeUse>().empty());
}

TEST(ProseMeasures, APostOfFiguresIsProse) {
  const std::string post =
      "# Multi-GPU training is not faster\n\n"
      "On one GPU an epoch takes 21 seconds. When I use 2 GPUs it also takes 21 seconds.\n";
  EXPECT_TRUE(scalescope::analyze::looks_like_report_text(post));
  const auto r = scalescope::analyze::read_report_text(post, "post.md");
  EXPECT_EQ(r.facts.of<Measurement>().size(), 2u);
}

TEST(ProseMeasures, GarbageGivesNothingAndNeverThrows) {
  for (const std::string& s : std::vector<std::string>{"", "%%%% 1e400 GB/s", "999999999999999999999999 s per step on 99999 GPUs",
                                                      std::string(5000, '9') + " ms", "x\xff\xfe 12 ms per step"})
    EXPECT_NO_THROW(read(s));
}

}  // namespace

// The grammar of resources, overlap, hangs and members, on sentences of this project's own; and what the diagnosis
// makes of short posts of its own that say only that much (no case's words).
#include "diagnose/engine.h"

namespace {

using scalescope::diagnose::Claim;

bool claims(const FactSet& f, const std::string& kind) {
  for (const auto& c : f.of<Claim>())
    if (c.fact.kind == kind) return true;
  return false;
}

TEST(ProseGrammar, ResourcesOverlapHangsAndMembers) {
  EXPECT_TRUE(claims(read("While training, htop shows every CPU core pegged at 100% usage."), "cpu-saturated"));
  EXPECT_FALSE(claims(read("The CPU is mostly idle and the GPU is the bottleneck here."), "cpu-saturated"));
  EXPECT_TRUE(claims(read("nvidia-smi shows low GPU utilization on all four cards."), "gpu-underused"));
  EXPECT_TRUE(claims(read("In the timeline the all-reduce kernels only start after the backward pass has finished."), "no-overlap"));
  EXPECT_TRUE(claims(read("Nsight reports a communication/compute overlap of 0 % for the step."), "no-overlap"));
  EXPECT_FALSE(claims(read("The all-reduce overlaps nicely with the backward kernels."), "no-overlap"));
  EXPECT_TRUE(claims(read("The job always gets stuck when the validation loop begins on the second GPU."), "hang-at-boundary"));
  EXPECT_TRUE(claims(read("We get an NCCL timeout right at the end of the first epoch."), "hang-at-boundary"));
  EXPECT_TRUE(claims(read("It looks like one degraded node drags the whole job down."), "one-slow-member"));
  EXPECT_TRUE(claims(read("Rank 5 is consistently slower than the others."), "one-slow-member"));
  EXPECT_TRUE(claims(read("Would DDP help with this low GPU utilization?"), "not-ddp"));
  EXPECT_TRUE(claims(read("Profiling suggests the step is dominated by kernel launch overhead."), "launch-suspected"));
  const auto f = read("Running on two nodes with one GPU each is slower than a single GPU.");
  const auto s = f.of<ScalingPoint>();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].fact.world_size, 2);
  EXPECT_LE(s[0].fact.speedup, 1.0);
}

TEST(ProseGrammar, FieldSignaturesInWords) {
  EXPECT_TRUE(claims(read("Our samples have very different lengths, so some ranks finish much earlier."), "uneven-work"));
  {
    const auto f = read("lspci says the second card's PCIe link is running at x4 instead of x16.");
    const auto p = f.of<PcieLinkState>();
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].fact.current_width, 4);
    EXPECT_EQ(p[0].fact.device_max_width, 16);
  }
  {
    const auto f = read("nvidia-smi lists 8 GPUs, but torch.cuda.device_count() returns 6 inside the container.");
    const auto c = f.of<GpuCount>();
    ASSERT_EQ(c.size(), 2u);
    int cuda = 0, exist = 0;
    for (const auto& x : c) (x.fact.scope == "cuda" ? cuda : exist) = x.fact.count;
    EXPECT_EQ(cuda, 6);
    EXPECT_EQ(exist, 8);
  }
  EXPECT_EQ(read("It turned out nvidia-peermem was not loaded on the second node.").of<GdrState>().size(), 1u);
  EXPECT_EQ(read("With torch.compile the model keeps recompiling every few steps under DDP.").of<FrameworkMessage>().size(), 1u);
  EXPECT_TRUE(read("The model has 16 layers and the GPUs sit in x16 slots.").of<PcieLinkState>().empty());
  EXPECT_TRUE(claims(read("It is a small model trained on CIFAR-10 images."), "small-workload"));
  EXPECT_EQ(read("The NCCL log says it is using network Socket between the hosts.").of<NetworkChosen>().size(), 1u);
  {
    const auto f = read("Adding a second machine with the same GPUs makes training 4x slower.");
    const auto s = f.of<ScalingPoint>();
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0].fact.world_size, 2);
    EXPECT_NEAR(s[0].fact.speedup, 0.25, 1e-12);
  }
}

std::string primary(const std::string& post) {
  const auto r = scalescope::analyze::read_report_text(post, "post.md");
  const auto d = scalescope::diagnose::diagnose(r.facts);
  return d.primary ? d.primary->cause : "none";
}

TEST(ProseGrammar, ShortPostsOfOurOwnGetTheirCause) {
  EXPECT_EQ(primary("# Scaling problem\n\nOne GPU gives 300 images/s. With 2 GPUs we only get 290 images/s in total.\n"
                    "One CPU core sits at 100% the whole time while the GPUs wait.\n"),
            "input-bound");
  EXPECT_EQ(primary("# Slow gradients\n\nOur loop calls dist.all_reduce on each gradient after loss.backward(), so the "
                    "communication only starts after the backward pass is over.\n"),
            "no-overlap");
  EXPECT_EQ(primary("# Hang\n\nWith 4 GPUs the job hangs as soon as evaluation starts; with 1 GPU it is fine.\n"),
            "collective-mismatch");
  EXPECT_EQ(primary("# Slow DDP\n\nEach batch holds sequences of variable length, and with 8 GPUs the ranks keep waiting "
                    "for each other.\n"),
            "load-imbalance");
  EXPECT_EQ(primary("# Slower on 4 GPUs\n\nMy small model on MNIST trains 1.5x slower with 4 GPUs than with one GPU.\n"),
            "comm-bound-small-model");
  EXPECT_EQ(primary("# Where did my GPUs go\n\nnvidia-smi shows 8 GPUs on the node but torch.cuda.device_count() returns 4 "
                    "in my job.\n"),
            "gpu-hidden");
  // A busbw at what 8 H100 SXM through NVSwitch give: nothing to fix (the band of data/nccl.json).
  EXPECT_EQ(primary("# Is this normal?\n\nOn a server with 8 H100 SXM GPUs connected by NVLink, all_reduce_perf reports "
                    "a busbw of 470 GB/s for large messages.\n"),
            "no-defect");
}

// Batches 5 and 6's mechanisms (issue #36), each on sentences of this project's own.
TEST(ProseGrammar, CountsFusedToNamesAndGpusOnlyComparedWith) {
  const auto r = scalescope::analyze::read_report_text("We bought a box with 4x4090 and run DDP on it.\n", "post.md");
  bool named = false;
  for (const auto& g : r.facts.of<GpuSeen>()) named = named || g.fact.name.find("4090") != std::string::npos;
  EXPECT_TRUE(named);
  ASSERT_EQ(r.facts.of<GpuCount>().size(), 1u);
  EXPECT_EQ(r.facts.of<GpuCount>()[0].fact.count, 4);
  EXPECT_EQ(r.facts.of<GpuCount>()[0].fact.scope, "stated");
  // The board compared with is not the job's.
  const auto c = read("Eight of our cards give little more than compared to 8x RTX 4090 GPUs.");
  EXPECT_TRUE(c.of<GpuSeen>().empty());
}

TEST(ProseGrammar, FiguresAimedAtOrSupposedAreNotMeasurements) {
  EXPECT_TRUE(read("How to achieve 35 GB/s of all-reduce busbw with 8 GPUs?").of<BusbwPlateau>().empty());
  EXPECT_TRUE(read("At full efficiency two GPUs would halve the step time to 11 ms.").of<Measurement>().empty());
  // "would" of a past fact still reads ("DDP would take 36 minutes on one instance").
  EXPECT_EQ(read("On a single GPU the run would take 36 min per epoch.").of<Measurement>().size(), 1u);
  // A bandwidth in a text that runs nccl-tests, at a GPU count, is its bus bandwidth whatever it is called.
  FactSet out;
  scalescope::analyze::MeasureState st;
  scalescope::analyze::read_sentence_measures("We run ./build/all_reduce_perf -b 1g -e 8g -g 8 on the box.", at("p", 1, ""), out, &st);
  scalescope::analyze::read_sentence_measures("8 GPU max performance: bw 28GB/s", at("p", 2, ""), out, &st);
  ASSERT_EQ(out.of<BusbwPlateau>().size(), 1u);
  EXPECT_DOUBLE_EQ(out.of<BusbwPlateau>()[0].fact.gbps, 28);
}

TEST(ProseGrammar, PcieGenerationsInWordsAndWhenTheyWereRead) {
  const auto idle = read("Our GPUs sit in PCIe 5.0 slots and report PCIe Gen 1 in nvidia-smi.");
  ASSERT_EQ(idle.of<PcieLinkState>().size(), 1u);
  EXPECT_EQ(idle.of<PcieLinkState>()[0].fact.current_gen, 1);
  EXPECT_EQ(idle.of<PcieLinkState>()[0].fact.device_max_gen, 5);
  const auto narrow = read("One card was negotiating as low as Gen2 x1 while the other three negotiated Gen3 at x16.");
  ASSERT_EQ(narrow.of<PcieLinkState>().size(), 1u);
  EXPECT_EQ(narrow.of<PcieLinkState>()[0].fact.current_width, 1);
  EXPECT_EQ(narrow.of<PcieLinkState>()[0].fact.device_max_width, 16);
  EXPECT_TRUE(claims(read("The query ran while the GPUs were idle."), "read-idle"));
  EXPECT_TRUE(claims(read("I checked it with the model loaded and running."), "read-busy"));
}

TEST(ProseGrammar, SwingsInputP2pOffAndCompileInWords) {
  EXPECT_TRUE(claims(read("GPU utilization keeps jumping between 0% and 100% during training."), "util-swings"));
  EXPECT_TRUE(claims(read("We use a DataLoader with heavy CPU transforms."), "input-mentioned"));
  EXPECT_EQ(read("Why does the launcher disable p2p on our cards?").of<Setting>().size(), 1u);
  EXPECT_TRUE(read("Disabling p2p fixed the hang for us.").of<Setting>().empty());
  EXPECT_TRUE(claims(read("With torch.compile our DDP training is 20% slower than eager."), "compile-ddp-slower"));
}

TEST(ProseGrammar, ShortPostsOfBatchFiveAndSixMechanisms) {
  // An idle link's generation is power saving; a narrow link under load is a fault.
  EXPECT_EQ(primary("# Gen 1?\n\nOur two GPUs in PCIe 4.0 slots report PCIe Gen 1 when we query them.\n"
                    "The query ran during routine monitoring with the GPUs idle.\n"),
            "no-defect");
  EXPECT_EQ(primary("# Slow card\n\nThe 4 GPUs show low throughput. One GPU was negotiating as low as Gen2 x1 while "
                    "the other three negotiated Gen3 at x16. I checked it with the job loaded and running.\n"),
            "pcie-link-degraded");
  // Utilisation swinging while the input pipeline is in view.
  EXPECT_EQ(primary("# Util\n\nDuring DDP training GPU utilization keeps jumping between 0% and 100%.\n"
                    "We load images with a DataLoader and CPU transforms.\n"),
            "input-bound");
  // torch.compile under DDP slower than eager.
  EXPECT_EQ(primary("# Compile\n\nWith torch.compile our DDP training on 8 GPUs is 20% slower than eager DDP.\n"),
            "compile-ddp-interaction");
  // A launcher turning P2P off on NVLinked cards.
  EXPECT_EQ(primary("# P2P\n\nWe have 2 RTX 3090 joined by NVLink. Why does the launcher disable p2p when it sees them?\n"),
            "nccl-env-override");
}

TEST(ProseGrammar, BatchSevenAndEightReadingsInWords) {
  // Network rates in megabits ("iperf gave 625 Mbits/sec").
  const auto nf = read("Testing the connection between the two servers with iperf, I got 625 Mbits/sec.");
  const auto n = nf.of<NicSeen>();  // (references into nf: never of() on a temporary)
  ASSERT_EQ(n.size(), 1u);
  EXPECT_NEAR(*n[0].fact.line_gbit, 0.625, 1e-12);
  // No gain in words, with no count in the sentence.
  EXPECT_TRUE(claims(read("The total running time is almost the same as before."), "no-gain"));
  // A busbw said to exceed the network's, and the bound in it is no measurement.
  const auto above = read("With 2 nodes the reported busbw exceeds 100 Gbps, our NIC's rate.");
  EXPECT_TRUE(claims(above, "busbw-above-link"));
  EXPECT_TRUE(above.of<BusbwPlateau>().empty());
  // A figure of one node inside a multi-node text is not the plateau across nodes.
  EXPECT_TRUE(read("All checks passed (intra-node NCCL all-reduce busbw 482.6 GB/s).").of<BusbwPlateau>().empty());
  // A sentence that says the overlap is good is no claim of none.
  EXPECT_FALSE(claims(read("The all-gather communication overlaps the computation almost completely; only the first and "
                           "last blocks cannot overlap."),
                      "no-overlap"));
  // MFU in words.
  bool mfu = false;
  const auto mf = read("The run reaches 57% MFU on 128 GPUs.");
  for (const auto& m : mf.of<Measurement>()) mfu = mfu || m.fact.quantity == "MFU";
  EXPECT_TRUE(mfu);
}

TEST(ProseGrammar, ShortPostsOfBatchSevenAndEightMechanisms) {
  EXPECT_EQ(primary("# MNIST on horovod\n\nI run the MNIST example on 3 nodes with 1 GPU each. The total running time is "
                    "almost the same as with one GPU.\n"),
            "comm-bound-small-model");
  EXPECT_EQ(primary("# busbw above the NIC?\n\nWe run all_reduce_perf on 2 nodes of 8 GPUs each, one 100 Gbps NIC per "
                    "node, and the reported busbw exceeds the network bandwidth. Is something wrong?\n"),
            "no-defect");
  EXPECT_EQ(primary("# Slow training\n\nOur dataflow decodes and augments JPEG files; training runs at 0.3 it/s on 3 "
                    "GPUs and the GPU utilization is 0%.\n"),
            "input-bound");
  EXPECT_EQ(primary("# 2 servers slower than 1\n\nTraining on 2 servers with 2 GPUs each takes 27 min per epoch, on one "
                    "server with 4 GPUs 8 min. Between the servers iperf measures 625 Mbits/sec.\n"),
            "bandwidth-bound-gradients");
}

TEST(ProseGrammar, BatchNineAndTenReadingsInWords) {
  {
    const auto f = read("With 2 A100 GPUs the training runs twice as fast as with 1 GPU.");
    const auto sp = f.of<ScalingPoint>();
    ASSERT_EQ(sp.size(), 1u);
    EXPECT_DOUBLE_EQ(sp[0].fact.speedup, 2);
    EXPECT_EQ(sp[0].fact.world_size, 2);
  }
  // Someone else's figure is a reference, not this job's.
  EXPECT_TRUE(read("Microsoft reported 7 times faster training between a single GPU and 8 GPUs.").of<ScalingPoint>().empty());
  EXPECT_TRUE(claims(read("At the beginning of every epoch the loader takes about 3 min before the first batch arrives."),
                     "epoch-start-stall"));
  EXPECT_FALSE(claims(read("The job hangs at the end of every epoch."), "epoch-start-stall"));
}

TEST(ProseGrammar, ShortPostsOfBatchNineAndTenMechanisms) {
  EXPECT_EQ(primary("# Slow epochs\n\nWith 8 GPUs every epoch takes 6 min of training, and there is a long pause of "
                    "about 4 min between epochs before the first batch arrives.\n"),
            "input-bound");
  // "3 layers of 1024 nodes" is a network's width, not a cluster of 1024 machines.
  const auto r = scalescope::analyze::read_report_text("A feed-forward network with 3 layers of 1024 nodes on MNIST.\n", "p");
  EXPECT_TRUE(r.facts.of<WorldShape>().empty());
}

TEST(ProseGrammar, AScalingEfficiencyStatedAtACount) {
  const auto f = read("Multi node with 8 GPUs: ~5048 img/sec (~86% scaling efficiency).");
  const auto sp = f.of<ScalingPoint>();
  ASSERT_EQ(sp.size(), 1u);
  EXPECT_EQ(sp[0].fact.world_size, 8);
  EXPECT_NEAR(sp[0].fact.efficiency, 0.86, 1e-12);
  EXPECT_NEAR(sp[0].fact.speedup, 6.88, 1e-12);
}

}  // namespace

// A bus or algorithm bandwidth quoted without its unit, as nccl-tests prints its columns (GB/s); not a count, a share
// or a bandwidth that has its own unit.
TEST(ProseGrammar, ABusBandwidthQuotedWithoutItsUnit) {
  auto busbw = [](const FactSet& f) {
    std::vector<double> v;
    for (const auto& m : f.of<Measurement>())
      if (m.fact.quantity == "busbw" && m.fact.unit == "GB/s") v.push_back(m.fact.value);
    return v;
  };
  EXPECT_EQ(busbw(read("On 4 GPUs the avg bus bandwidth is 15.5071 in the first run.")), std::vector<double>{15.5071});
  EXPECT_EQ(busbw(read("With 8 GPUs the busbw reaches 31.73.")), std::vector<double>{31.73});
  EXPECT_EQ(busbw(read("The busbw of 8 GPUs is low.")), std::vector<double>{});
  EXPECT_EQ(busbw(read("The bus bandwidth is 80% of the link.")), std::vector<double>{});
  EXPECT_EQ(busbw(read("The busbw is 120 GB/s on 8 GPUs.")), std::vector<double>{120});
}

// One process driving several GPUs, said in words, is DataParallel's shape; one process per GPU is not. "A different
// amount of GPUs" is no unequal work.
TEST(ProseGrammar, OneProcessOverSeveralGpusAndDifferentAmounts) {
  auto has_claim = [](const FactSet& f, const std::string& kind) {
    for (const auto& c : f.of<Claim>())
      if (c.fact.kind == kind) return true;
    return false;
  };
  EXPECT_TRUE(has_claim(read("The trainer is one Python process that drives all the listed GPUs."), "not-ddp"));
  EXPECT_FALSE(has_claim(read("We launch one process per GPU on all GPUs of the node."), "not-ddp"));
  EXPECT_FALSE(has_claim(read("torchrun starts one process for each of the several GPUs."), "not-ddp"));
  EXPECT_FALSE(has_claim(read("I tried with a different amount of GPUs (1, 2 or 3)."), "uneven-work"));
  EXPECT_TRUE(has_claim(read("Each rank gets a different amount of data per step."), "uneven-work"));
}

// Time per iteration written with blanks ("1.27 second / it"); a count of machines is never taken across a unit or
// another count ("0.5 s on one node" is one node).
TEST(ProseMeasures, SecondsPerIterationWithBlanksAndMachineCounts) {
  const auto f = read("With batch size 4 on 2 GPUs the speed is 2.05 second / it.");
  const auto ms = f.of<Measurement>();
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].fact.quantity, "step time");
  EXPECT_DOUBLE_EQ(ms[0].fact.value, 2.05);
  const auto g = read("It takes 2 s per batch across two nodes vs 0.5 s on one node.");
  for (const auto& m : g.of<Measurement>())
    if (m.fact.dims.count("gpus")) EXPECT_NE(m.fact.dims.at("gpus"), "5") << m.fact.row;
}

// Controls from a hostile review of this session's readings: the watchdog asked about is no hang; memory's share is no
// GPU utilisation; FPS in prose is a throughput; a bare figure after "busbw" followed by a noun is no bandwidth; a
// speedup per node count said with "give" pairs each count with its own speedup.
TEST(ProseGrammar, HostileControlsOfTheNewReadings) {
  auto kinds = [](const FactSet& f) {
    std::set<std::string> k;
    for (const auto& c : f.of<Claim>()) k.insert(c.fact.kind);
    return k;
  };
  EXPECT_FALSE(kinds(read("Does the NCCL watchdog abort the job if a rank waits more than 600 s?")).count("hang"));
  EXPECT_TRUE(kinds(read("Rank 1 waits out the 600 s NCCL watchdog and aborts with SIGABRT.")).count("hang"));
  EXPECT_FALSE(kinds(read("We raised the watchdog timeout to 3600 s because checkpoints take long.")).count("hang-at-boundary"));
  EXPECT_TRUE(kinds(read("We get an NCCL timeout when the checkpoint is saved.")).count("hang-at-boundary"));
  const auto mem = read("The GPU memory utilisation is 55 % on every card.");
  for (const auto& m : mem.of<Measurement>()) EXPECT_NE(m.fact.quantity, "GPU utilisation") << m.fact.row;
  bool fps = false;
  const auto rate = read("With 4 GPUs we only get 245K FPS.");
  for (const auto& m : rate.of<Measurement>())
    fps = fps || (m.fact.quantity == "throughput" && m.fact.unit == "frames/s" && m.fact.value == 245000);
  EXPECT_TRUE(fps);
  const auto lanes = read("The bus bandwidth of 16 lanes PCIe is what we expected.");
  for (const auto& m : lanes.of<Measurement>()) EXPECT_NE(m.fact.quantity, "busbw") << m.fact.row;
  const auto pairs = read("With 8 GPUs per node, 4 nodes give a 3.9x speedup and 16 nodes give a 14.4x speedup.");
  const auto s = pairs.of<ScalingPoint>();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].fact.world_size, 4);
  EXPECT_NEAR(s[1].fact.efficiency, 0.9, 1e-9);
}

// A GPU count whose noun the sentence leaves out after naming it ("… on one GPU and 160 ms on two"): the second figure
// ran on two GPUs. Controls: no GPU counted elsewhere in the sentence, no elided count ("on two occasions" neither).
TEST(ProseMeasures, AGpuCountWhoseNounIsLeftOut) {
  const auto gpus_of = [](const FactSet& f) {
    std::vector<std::string> g;
    for (const auto& m : f.of<Measurement>()) g.push_back(m.fact.dims.count("gpus") ? m.fact.dims.at("gpus") : "-");
    return g;
  };
  EXPECT_EQ(gpus_of(read("It takes 100 ms per step on one GPU and 160 ms on two.")), (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(gpus_of(read("One step takes 100 ms on 1 GPU, 250 ms with 4, and 400 ms with 8.")),
            (std::vector<std::string>{"1", "4", "8"}));
  EXPECT_EQ(gpus_of(read("The step took 160 ms on two occasions.")), (std::vector<std::string>{"-"}));
  EXPECT_EQ(gpus_of(read("It takes 100 ms per step, and 160 ms with 2.")), (std::vector<std::string>{"-", "-"}));
}
