// Tests of the table reader (readers/tables/tables.h): the project's own fixtures of every form people paste — markdown
// with and without HTML around it, pipe tables without markdown, CSV, TSV, space-aligned columns, pair lists,
// "label: value" lists, tables whose variants are columns — checking quantities, units, dims, members, titles,
// derived rows, notes and damaged input; then the shared corpus when it is present.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "readers/tables/tables.h"

namespace {

using scalescope::analyze::looks_like_measurement_table;
using scalescope::analyze::read_measurement_tables;
using scalescope::diagnose::GpuSeen;
using scalescope::diagnose::Measurement;
using scalescope::diagnose::ModelSeen;
using scalescope::diagnose::Reading;
using scalescope::diagnose::WorldShape;
using Dims = std::map<std::string, std::string>;

Reading read(const std::string& text) { return read_measurement_tables(text, "timings.txt"); }

std::vector<Measurement> measurements(const Reading& r) {
  std::vector<Measurement> out;
  for (const auto& m : r.facts.of<Measurement>()) out.push_back(m.fact);
  return out;
}

bool has_dims(const Measurement& m, const Dims& want) {
  for (const auto& [k, v] : want) {
    auto it = m.dims.find(k);
    if (it == m.dims.end() || it->second != v) return false;
  }
  return true;
}

// The one measurement of `quantity` whose dims include `want` (a test failure when there is not exactly one).
Measurement one(const Reading& r, const std::string& quantity, const Dims& want) {
  std::vector<Measurement> found;
  for (const auto& m : measurements(r))
    if (m.quantity == quantity && has_dims(m, want)) found.push_back(m);
  EXPECT_EQ(found.size(), 1u) << "quantity " << quantity << " with " << ::testing::PrintToString(want);
  return found.empty() ? Measurement{} : found.front();
}

// The measurement of `quantity` in the row labelled `row`.
Measurement by_row(const Reading& r, const std::string& row, const std::string& quantity) {
  for (const auto& m : measurements(r))
    if (m.row == row && m.quantity == quantity) return m;
  ADD_FAILURE() << "no " << quantity << " in row " << row;
  return {};
}

bool has_note(const Reading& r, const std::string& part) {
  return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

std::string notes_of(const Reading& r) {
  std::string s;
  for (const auto& n : r.notes) s += n + "\n";
  return s;
}

// ───────────────────────────── A/B tables ─────────────────────────────

// A table copied out of a document: HTML around it, a heading with the model and the job's shape, variants as rows,
// quantities as columns, a derived row at the end.
TEST(Tables, HtmlWrappedAbTableWithTitle) {
  const std::string text =
      "<meta charset=\"utf-8\"><div id=\"x\"><h3 style=\"margin:0\"><span style=\"font-size:14pt\">Mistral-7B-v0.1 "
      "(4x8H100 FSDP @ bf16)</span></h3><p dir=\"ltr\">\n"
      "  | Iteration Time (s) | GPU Compute Time (s) | GPU Idle (%)\n"
      "-- | -- | -- | --\n"
      "InfiniBand Enabled | 1.20 | 0.95 | 20.8\n"
      "InfiniBand Disabled | 3.10 | 0.96 | 69.0\n"
      "IB Speedup (x) | 2.58 |   |  \n"
      "\n"
      "</p></div>\n";
  const Reading r = read(text);
  EXPECT_TRUE(looks_like_measurement_table(text));
  ASSERT_EQ(measurements(r).size(), 6u) << notes_of(r);
  const Dims common = {{"nodes", "4"}, {"gpus_per_node", "8"}, {"gpus", "32"}, {"mode", "FSDP"},
                       {"precision", "bf16"}, {"gpu", "H100"}};
  auto on = common, off = common;
  on["ib"] = "on";
  off["ib"] = "off";
  const auto step_on = one(r, "step time", on);
  EXPECT_DOUBLE_EQ(step_on.value, 1.20);
  EXPECT_EQ(step_on.unit, "s");
  EXPECT_FALSE(step_on.higher_is_better);
  EXPECT_EQ(step_on.row, "InfiniBand Enabled");
  EXPECT_EQ(step_on.table, "");
  EXPECT_DOUBLE_EQ(one(r, "step time", off).value, 3.10);
  EXPECT_DOUBLE_EQ(one(r, "GPU busy time", on).value, 0.95);
  EXPECT_DOUBLE_EQ(one(r, "GPU busy time", off).value, 0.96);
  const auto idle = one(r, "GPU idle share", off);
  EXPECT_DOUBLE_EQ(idle.value, 69.0);
  EXPECT_EQ(idle.unit, "%");
  EXPECT_FALSE(idle.higher_is_better);
  // Every row's dims name the same keys: only "ib" differs between the two rows.
  for (const auto& m : measurements(r)) EXPECT_EQ(m.dims.size(), common.size() + 1) << ::testing::PrintToString(m.dims);
  // The derived row is left out, with a note naming its line.
  EXPECT_TRUE(has_note(r, "line 6: row 'IB Speedup (x)' is derived")) << notes_of(r);
  // Provenance: the row's line, its text without HTML.
  const auto seen = r.facts.of<Measurement>();
  EXPECT_EQ(seen.front().where.source, "timings.txt");
  EXPECT_EQ(seen.front().where.line, 4u);
  EXPECT_EQ(seen.front().where.excerpt, "InfiniBand Enabled | 1.20 | 0.95 | 20.8");
  // Title facts.
  const auto models = r.facts.of<ModelSeen>();
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].fact.name, "Mistral-7B-v0.1");
  ASSERT_TRUE(models[0].fact.parameters);
  EXPECT_DOUBLE_EQ(*models[0].fact.parameters, 7e9);
  EXPECT_EQ(models[0].fact.dtype.value_or(""), "bf16");
  EXPECT_EQ(models[0].where.line, 1u);
  EXPECT_EQ(models[0].where.excerpt, "Mistral-7B-v0.1 (4x8H100 FSDP @ bf16)");
  const auto gpus = r.facts.of<GpuSeen>();
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].fact.name, "H100");
  const auto world = r.facts.of<WorldShape>();
  ASSERT_EQ(world.size(), 1u);
  EXPECT_EQ(world[0].fact.nodes.value_or(0), 4);
  EXPECT_EQ(world[0].fact.ranks_per_node.value_or(0), 8);
  EXPECT_EQ(world[0].fact.ranks.value_or(0), 32);
}

// GPU counts before a colon, modes, a transport turned off in words and by a variable.
TEST(Tables, GpuCountModeAndToggleLabels) {
  const std::string text =
      "| setup | wall secs |\n"
      "|:--|--:|\n"
      "| 1: | 240 |\n"
      "| 4:DP | 120 |\n"
      "| 4:DDP | 70 |\n"
      "| 4:DDP_no_NV | 95 |\n"
      "| 4:DDP (NCCL_P2P_DISABLE=1) | 101 |\n"
      "| 4:DDP NVLink disabled, NCCL_SHM_DISABLE=1 | 130 |\n";
  const Reading r = read(text);
  ASSERT_EQ(measurements(r).size(), 6u) << notes_of(r);
  for (const auto& m : measurements(r)) {
    EXPECT_EQ(m.quantity, "run time");
    EXPECT_EQ(m.unit, "s");
    EXPECT_FALSE(m.higher_is_better);
  }
  EXPECT_EQ(one(r, "run time", {{"gpus", "1"}}).dims, (Dims{{"gpus", "1"}, {"mode", "single"}}));
  EXPECT_EQ(one(r, "run time", {{"mode", "DP"}}).dims, (Dims{{"gpus", "4"}, {"mode", "DP"}}));
  EXPECT_DOUBLE_EQ(one(r, "run time", {{"nvlink", "off"}, {"shm", "off"}}).value, 130);
  EXPECT_EQ(by_row(r, "4:DDP_no_NV", "run time").dims, (Dims{{"gpus", "4"}, {"mode", "DDP"}, {"nvlink", "off"}}));
  const auto p2p = one(r, "run time", {{"p2p", "off"}});
  EXPECT_EQ(p2p.dims, (Dims{{"gpus", "4"}, {"mode", "DDP"}, {"p2p", "off"}}));
  EXPECT_EQ(p2p.row, "4:DDP (NCCL_P2P_DISABLE=1)");
  // Plain DDP has no toggle at all (absent means on), and no free-text label that would block comparisons.
  EXPECT_EQ(by_row(r, "4:DDP", "run time").dims, (Dims{{"gpus", "4"}, {"mode", "DDP"}}));
  for (const auto& m : measurements(r)) {
    EXPECT_EQ(m.dims.count("label"), 0u) << m.row;
    EXPECT_EQ(m.dims.count("variant"), 0u) << m.row;
  }
}

// A version × topology table under a "=====" rule, groups separated by blank lines, one failed cell.
TEST(Tables, VersionTopologyTableWithRuleAndBlankLines) {
  const std::string text =
      "NCCL | Topology file | Result\n"
      "=============================\n"
      "\n"
      "2.18.1 | topoA.xml | ~120 GB/s\n"
      "2.18.1 | topoB.xml | ~61 GB/s\n"
      "\n"
      "2.22.3 | topoA.xml | ≈118 GB/s\n"
      "2.22.3 | topoB.xml | segfault\n";
  const Reading r = read(text);
  ASSERT_EQ(measurements(r).size(), 3u) << notes_of(r);
  for (const auto& m : measurements(r)) {
    EXPECT_EQ(m.quantity, "bandwidth");
    EXPECT_EQ(m.unit, "GB/s");
    EXPECT_TRUE(m.higher_is_better);
    EXPECT_EQ(m.table, "");
    EXPECT_EQ(m.dims.size(), 2u);
  }
  EXPECT_DOUBLE_EQ(one(r, "bandwidth", {{"nccl_version", "2.18.1"}, {"topology", "topoA.xml"}}).value, 120);
  EXPECT_DOUBLE_EQ(one(r, "bandwidth", {{"nccl_version", "2.18.1"}, {"topology", "topoB.xml"}}).value, 61);
  EXPECT_DOUBLE_EQ(one(r, "bandwidth", {{"nccl_version", "2.22.3"}}).value, 118);
  EXPECT_TRUE(has_note(r, "line 8: 'segfault' under 'Result' is not a number")) << notes_of(r);
  EXPECT_EQ(r.facts.of<Measurement>()[2].where.line, 7u);
}

// A pair list: one figure per pair of nodes, some with a comment; no header, no unit.
TEST(Tables, PairListWithComments) {
  const std::string text =
      "gpu-node-1,gpu-node-2     97.5\n"
      "gpu-node-3,gpu-node-4     48.1   # other rack\n"
      "gpu-node-1,gpu-node-3     47.9\n"
      "\tgpu-node-2,gpu-node-4\t96.8  # other rack \n";
  const Reading r = read(text);
  EXPECT_TRUE(looks_like_measurement_table(text));
  ASSERT_EQ(measurements(r).size(), 4u) << notes_of(r);
  for (const auto& m : measurements(r)) {
    EXPECT_EQ(m.quantity, "bandwidth");
    EXPECT_EQ(m.unit, "");
    EXPECT_TRUE(m.higher_is_better);
    ASSERT_EQ(m.members.size(), 2u);
    EXPECT_EQ(m.dims.at("pair"), m.members[0] + "," + m.members[1]);
  }
  const auto slow = one(r, "bandwidth", {{"pair", "gpu-node-3,gpu-node-4"}});
  EXPECT_DOUBLE_EQ(slow.value, 48.1);
  EXPECT_EQ(slow.dims, (Dims{{"pair", "gpu-node-3,gpu-node-4"}, {"note", "other rack"}}));
  EXPECT_EQ(slow.members, (std::vector<std::string>{"gpu-node-3", "gpu-node-4"}));
  EXPECT_EQ(one(r, "bandwidth", {{"pair", "gpu-node-1,gpu-node-2"}}).dims.count("note"), 0u);
  EXPECT_EQ(one(r, "bandwidth", {{"pair", "gpu-node-2,gpu-node-4"}}).dims.at("note"), "other rack");
  EXPECT_TRUE(has_note(r, "pair list without a unit")) << notes_of(r);
}

TEST(Tables, PairListWithArrowsAndUnits) {
  const Reading r = read(
      "| link | busbw |\n|---|---|\n| n01 <-> n02 | 180 GB/s |\n| n01 <-> n03 | 1,500 MB/s |\n| n02 <-> n03 | 200 Gb/s |\n");
  ASSERT_EQ(measurements(r).size(), 3u) << notes_of(r);
  const auto a = one(r, "busbw", {{"pair", "n01,n03"}});
  EXPECT_DOUBLE_EQ(a.value, 1.5);
  EXPECT_EQ(a.unit, "GB/s");
  EXPECT_EQ(a.members, (std::vector<std::string>{"n01", "n03"}));
  const auto b = one(r, "busbw", {{"pair", "n02,n03"}});
  EXPECT_EQ(b.unit, "Gb/s");
  EXPECT_TRUE(b.higher_is_better);
}

// ───────────────────────────── other forms ─────────────────────────────

TEST(Tables, SpaceAlignedColumns) {
  const std::string text =
      "Scaling on our cluster (V100, fp32)\n"
      "GPUs   Step time (ms)   Throughput (img/s)\n"
      "1      512              250.1\n"
      "2      530              483.0\n"
      "4      561              912.7\n";
  const Reading r = read(text);
  EXPECT_TRUE(looks_like_measurement_table(text));
  ASSERT_EQ(measurements(r).size(), 6u) << notes_of(r);
  const auto s = one(r, "step time", {{"gpus", "2"}});
  EXPECT_DOUBLE_EQ(s.value, 530);
  EXPECT_EQ(s.unit, "ms");
  EXPECT_EQ(s.dims, (Dims{{"gpus", "2"}, {"gpu", "V100"}, {"precision", "fp32"}}));
  const auto t = one(r, "throughput", {{"gpus", "4"}});
  EXPECT_EQ(t.unit, "img/s");
  EXPECT_TRUE(t.higher_is_better);
  EXPECT_EQ(r.facts.of<GpuSeen>().size(), 1u);
}

TEST(Tables, CsvWithQuotesAndTrainerNames) {
  const Reading r = read(
      "world_size,train_runtime,train_samples_per_second,note\n"
      "1,1234.5,52.1,\n"
      "2,\"700.2\",92.0,\"warm, cached\"\n"
      "4,410.9,160.5,\n");
  ASSERT_EQ(measurements(r).size(), 6u) << notes_of(r);
  EXPECT_DOUBLE_EQ(one(r, "run time", {{"gpus", "2"}}).value, 700.2);
  const auto t = one(r, "throughput", {{"gpus", "4"}});
  EXPECT_EQ(t.unit, "samples/s");
  EXPECT_DOUBLE_EQ(t.value, 160.5);
  EXPECT_EQ(one(r, "throughput", {{"gpus", "2"}}).dims.at("note"), "warm, cached");
}

TEST(Tables, TabSeparatedWithClockTimes) {
  const Reading r = read(
      "config\tepoch time\n"
      "single GPU\t10m20s\n"
      "2 GPUs (DDP)\t5:40\n"
      "2 GPUs (DDP, NCCL_IB_DISABLE=1)\t0:07:02\n");
  ASSERT_EQ(measurements(r).size(), 3u) << notes_of(r);
  const auto a = one(r, "epoch time", {{"gpus", "1"}});
  EXPECT_DOUBLE_EQ(a.value, 620);
  EXPECT_EQ(a.unit, "s");
  EXPECT_EQ(a.dims.at("mode"), "single");
  EXPECT_DOUBLE_EQ(one(r, "epoch time", {{"gpus", "2"}, {"ib", "off"}}).value, 422);
  EXPECT_TRUE(has_note(r, "'5:40' read as a clock time (340 s)")) << notes_of(r);
}

TEST(Tables, ColonListUnderATitle) {
  const std::string text =
      "Results on 2 nodes x 8 A100 (bf16):\n"
      "1 GPU: 102 s\n"
      "2 GPUs: 55.3 s\n"
      "16 GPUs: 12.0 s\n"
      "loss: 2.31\n";
  const Reading r = read(text);
  ASSERT_EQ(measurements(r).size(), 3u) << notes_of(r);
  const auto m = one(r, "run time", {{"gpus", "16"}});
  EXPECT_DOUBLE_EQ(m.value, 12.0);
  // The title's 2 × 8 describes the largest run, not each row: rows keep their own GPU count.
  EXPECT_EQ(m.dims, (Dims{{"gpus", "16"}, {"gpu", "A100"}, {"precision", "bf16"}}));
  const auto w = r.facts.of<WorldShape>();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].fact.ranks.value_or(0), 16);
}

// "label: value" lines whose labels count GPUs in words and name the mode, with more fields after the figure.
TEST(Tables, ColonListWithWordCountsAndTrailingFields) {
  const std::string text =
      "1 GPU: 31s/epoch 91.2@20epochs\n"
      "DataParallel(two GPUs): 26s/epoch 90.8@20epochs\n"
      "DistributedDP(two GPUs): 17s/epoch 91.0@20epochs\n"
      "DDP (four GPUs): 9.5 s/epoch (acc 90.9)\n";
  EXPECT_TRUE(looks_like_measurement_table(text));
  const Reading r = read(text);
  ASSERT_EQ(measurements(r).size(), 4u) << notes_of(r);
  for (const auto& m : measurements(r)) {
    EXPECT_EQ(m.quantity, "epoch time") << m.row;  // so that the engine speaks of time per epoch
    EXPECT_EQ(m.unit, "s");
    EXPECT_FALSE(m.higher_is_better);
  }
  EXPECT_EQ(by_row(r, "1 GPU", "epoch time").dims, (Dims{{"gpus", "1"}, {"mode", "single"}}));
  EXPECT_EQ(by_row(r, "DataParallel(two GPUs)", "epoch time").dims, (Dims{{"gpus", "2"}, {"mode", "DP"}}));
  EXPECT_EQ(by_row(r, "DistributedDP(two GPUs)", "epoch time").dims, (Dims{{"gpus", "2"}, {"mode", "DDP"}}));
  EXPECT_DOUBLE_EQ(by_row(r, "DistributedDP(two GPUs)", "epoch time").value, 17);
  EXPECT_DOUBLE_EQ(by_row(r, "DDP (four GPUs)", "epoch time").value, 9.5);
  EXPECT_EQ(by_row(r, "DDP (four GPUs)", "epoch time").dims, (Dims{{"gpus", "4"}, {"mode", "DDP"}}));
  EXPECT_TRUE(has_note(r, "line 1: '91.2@20epochs' after the figure is not read")) << notes_of(r);
  // A header that is only a per-epoch unit names the quantity too.
  const Reading h = read("| setup | s/epoch |\n|---|---|\n| single GPU | 27 |\n| DataParallel (2 GPUs) | 24 |\n");
  ASSERT_EQ(measurements(h).size(), 2u) << notes_of(h);
  EXPECT_EQ(one(h, "epoch time", {{"mode", "DP"}}).unit, "s");
}

// A cell's time unit makes it a time whatever its row or column is called; reference columns are no measurements;
// a network named in a header or label is the "network" dim.
TEST(Tables, TimeCellsReferenceColumnsAndNetworks) {
  {
    const Reading r = read(
        "| Metric | Target (RoCE) | Measured (Socket) |\n"
        "|---|---|---|\n"
        "| all_reduce 4GB | ~120ms | ~830 ms |\n"
        "| Bus Bandwidth | ~45 GB/s | ~6.5 GB/s |\n");
    ASSERT_EQ(measurements(r).size(), 2u) << notes_of(r);
    const auto t = one(r, "communication time", {{"network", "Socket"}});
    EXPECT_DOUBLE_EQ(t.value, 830);
    EXPECT_EQ(t.unit, "ms");
    EXPECT_FALSE(t.higher_is_better);
    const auto b = one(r, "busbw", {{"network", "Socket"}});
    EXPECT_DOUBLE_EQ(b.value, 6.5);
    EXPECT_TRUE(b.higher_is_better);
    EXPECT_EQ(b.dims, (Dims{{"network", "Socket"}}));  // "Measured" adds nothing
    EXPECT_TRUE(has_note(r, "column 'Target (RoCE)' holds expected or reference figures")) << notes_of(r);
  }
  {
    const Reading r = read(
        "| setup | bandwidth |\n"
        "|---|---|\n"
        "| IB | 24 GB/s |\n"
        "| Socket | 3.1 GB/s |\n"
        "| Socket, 1GB all_reduce | 350 ms |\n"
        "| Expected (spec sheet) | 25 GB/s |\n");
    ASSERT_EQ(measurements(r).size(), 3u) << notes_of(r);
    EXPECT_EQ(one(r, "bandwidth", {{"network", "IB"}}).value, 24);
    EXPECT_EQ(one(r, "bandwidth", {{"network", "Socket"}}).value, 3.1);
    const auto ms = by_row(r, "Socket, 1GB all_reduce", "run time");
    EXPECT_EQ(ms.unit, "ms");
    EXPECT_FALSE(ms.higher_is_better);
    EXPECT_TRUE(has_note(r, "'350 ms' prints ms: read as run time, not as bandwidth")) << notes_of(r);
    EXPECT_TRUE(has_note(r, "row 'Expected (spec sheet)' holds expected or reference figures")) << notes_of(r);
  }
  {
    const Reading r = read(
        "| GPUs | busbw (GB/s) | Theoretical (GB/s) | Ideal speedup |\n"
        "|---|---|---|---|\n"
        "| 2 | 180 | 240 | 2 |\n"
        "| 4 | 170 | 240 | 4 |\n");
    ASSERT_EQ(measurements(r).size(), 2u) << notes_of(r);
    for (const auto& m : measurements(r)) EXPECT_EQ(m.quantity, "busbw");
    EXPECT_TRUE(has_note(r, "column 'Theoretical (GB/s)'")) << notes_of(r);
    EXPECT_TRUE(has_note(r, "column 'Ideal speedup'")) << notes_of(r);
  }
  {
    // IB against no IB: the toggle tells the rows apart, no "network" beside it.
    const Reading r = read("| variant | step time (s) |\n|---|---|\n| IB | 1.1 |\n| no IB | 2.9 |\n");
    ASSERT_EQ(measurements(r).size(), 2u) << notes_of(r);
    EXPECT_EQ(by_row(r, "IB", "step time").dims, (Dims{{"ib", "on"}}));
    EXPECT_EQ(by_row(r, "no IB", "step time").dims, (Dims{{"ib", "off"}}));
    // RoCE against sockets: the network tells them apart.
    const Reading n = read("| net | busbw (GB/s) |\n|---|---|\n| RoCE | 21.5 |\n| Socket | 2.2 |\n");
    ASSERT_EQ(measurements(n).size(), 2u) << notes_of(n);
    EXPECT_EQ(by_row(n, "RoCE", "busbw").dims.at("network"), "RoCE");
    EXPECT_EQ(by_row(n, "Socket", "busbw").dims.at("network"), "Socket");
  }
}

// Variants as columns, quantities as rows.
TEST(Tables, VariantsAsColumns) {
  const Reading r = read(
      "| | NVLink on | NVLink off |\n"
      "|---|---|---|\n"
      "| Step time (ms) | 120 ± 3 | 185 ± 4 |\n"
      "| Throughput (tokens/s) | 40-41k | 26,500 |\n"
      "| Slowdown | 1.0 | 1.54x |\n");
  ASSERT_EQ(measurements(r).size(), 4u) << notes_of(r);
  const auto off = one(r, "step time", {{"nvlink", "off"}});
  EXPECT_DOUBLE_EQ(off.value, 185);
  EXPECT_EQ(off.unit, "ms");
  EXPECT_EQ(off.row, "NVLink off");
  EXPECT_EQ(off.dims, (Dims{{"nvlink", "off"}}));
  const auto on = one(r, "throughput", {{"nvlink", "on"}});
  EXPECT_DOUBLE_EQ(on.value, 40500);
  EXPECT_EQ(on.unit, "tokens/s");
  EXPECT_TRUE(has_note(r, "'40-41k' is a range; read as its midpoint 40500")) << notes_of(r);
  EXPECT_TRUE(has_note(r, "the spread after '±' is dropped")) << notes_of(r);
  EXPECT_TRUE(has_note(r, "row 'Slowdown' is derived")) << notes_of(r);
}

// Values as people print them: units in the cell, conversions, approximations, ranges, spreads, notes after them.
TEST(Tables, ValueForms) {
  const Reading r = read(
      "| run | result |\n"
      "|---|---|\n"
      "| run 1 | 22.4s |\n"
      "| run 2 | 1.38s/it |\n"
      "| run 3 | ~3 hours |\n"
      "| run 4 | 2m20s |\n"
      "| run 5 | 1,234 img/s |\n"
      "| run 6 | 850 MB/s |\n"
      "| run 7 | 2.5 ± 0.1 s/epoch |\n"
      "| run 8 | 101 (1.01x) |\n"
      "| run 9 | 2.63 x |\n"
      "| run 10 | 76.5% |\n"
      "| run 11 | 400 Mbps |\n"
      "| run 12 | 45 ms/step |\n");
  ASSERT_EQ(measurements(r).size(), 12u) << notes_of(r);
  auto row = [&](const std::string& n) {
    for (const auto& m : measurements(r))
      if (m.dims.count("repeat") && m.dims.at("repeat") == n) return m;
    ADD_FAILURE() << "no run " << n;
    return Measurement{};
  };
  EXPECT_EQ(row("1").quantity, "run time");
  EXPECT_DOUBLE_EQ(row("1").value, 22.4);
  EXPECT_EQ(row("2").quantity, "step time");
  EXPECT_EQ(row("2").unit, "s");
  EXPECT_DOUBLE_EQ(row("3").value, 3 * 3600);
  EXPECT_EQ(row("3").unit, "s");
  EXPECT_DOUBLE_EQ(row("4").value, 140);
  EXPECT_EQ(row("5").quantity, "throughput");
  EXPECT_DOUBLE_EQ(row("5").value, 1234);
  EXPECT_EQ(row("5").unit, "img/s");
  EXPECT_EQ(row("6").quantity, "bandwidth");
  EXPECT_DOUBLE_EQ(row("6").value, 0.85);
  EXPECT_EQ(row("6").unit, "GB/s");
  EXPECT_EQ(row("7").quantity, "epoch time");
  EXPECT_DOUBLE_EQ(row("7").value, 2.5);
  EXPECT_DOUBLE_EQ(row("8").value, 101);
  EXPECT_EQ(row("9").quantity, "speedup");
  EXPECT_EQ(row("9").unit, "");
  EXPECT_DOUBLE_EQ(row("9").value, 2.63);
  EXPECT_EQ(row("10").unit, "%");
  EXPECT_EQ(row("11").unit, "Gb/s");
  EXPECT_DOUBLE_EQ(row("11").value, 0.4);
  EXPECT_EQ(row("12").quantity, "step time");
  EXPECT_EQ(row("12").unit, "ms");
  EXPECT_TRUE(has_note(r, "line 5: '~3 hours' is approximate")) << notes_of(r);
}

// Repeated runs in columns next to their first run, two series of one quantity; a last row cut short.
TEST(Tables, RepeatsAndSeriesInColumns) {
  const Reading r = read(
      "| gpus | ImageNet speed (img/s) | ImageNet repeat 2 | synthetic speed (img/s) | synthetic 2 |\n"
      "| --- | --- | --- | --- | --- |\n"
      "| 1 | 410.5 | 409.9 | 700.1 | 698.0 |\n"
      "| 8 | 3010.0 | 2990.2 | 5480.4 | 5475.5 |\n"
      "| 16 | 5120.7 | 5099.1 | 10400.2");
  ASSERT_EQ(measurements(r).size(), 11u) << notes_of(r);
  for (const auto& m : measurements(r)) {
    EXPECT_EQ(m.quantity, "throughput");
    EXPECT_EQ(m.unit, "img/s");
  }
  EXPECT_DOUBLE_EQ(one(r, "throughput", {{"gpus", "8"}, {"series", "ImageNet"}, {"repeat", "1"}}).value, 3010.0);
  EXPECT_DOUBLE_EQ(one(r, "throughput", {{"gpus", "8"}, {"series", "ImageNet"}, {"repeat", "2"}}).value, 2990.2);
  EXPECT_DOUBLE_EQ(one(r, "throughput", {{"gpus", "1"}, {"series", "synthetic"}, {"repeat", "2"}}).value, 698.0);
  EXPECT_DOUBLE_EQ(one(r, "throughput", {{"gpus", "16"}, {"series", "synthetic"}}).value, 10400.2);
  EXPECT_TRUE(has_note(r, "line 5: 4 cells under a 5-column header")) << notes_of(r);
}

// Configuration columns, per-node counts, a heading that names the machine, speedup columns.
TEST(Tables, ConfigurationColumnsAndMultiNode) {
  const Reading r = read(
      "### Training performance: 8x H100 80GB per node\n"
      "\n"
      "Numbers are the mean of three runs, in tokens per second.\n"
      "\n"
      "| **Num Nodes** | **Seq Length** | **Batch size / GPU** | **Throughput - BF16** | **Throughput - FP8** | "
      "**Weak scaling - FP8** | **Speedup (BF16 to FP8)** |\n"
      "|:-:|:-:|:-:|:-:|:-:|:-:|:-:|\n"
      "| 1 | 2048 | 4 | 31,200 | 45,100 | 1.00 | 1.45 |\n"
      "| 4 | 2048 | 4 | 120,500 | 171,000 | 3.79 | 1.42 |\n");
  ASSERT_EQ(measurements(r).size(), 8u) << notes_of(r);
  const auto t = one(r, "throughput", {{"nodes", "4"}, {"precision", "fp8"}});
  EXPECT_DOUBLE_EQ(t.value, 171000);
  EXPECT_EQ(t.unit, "");
  EXPECT_EQ(t.dims, (Dims{{"nodes", "4"}, {"gpus_per_node", "8"}, {"gpus", "32"}, {"seq_len", "2048"},
                          {"batch_per_gpu", "4"}, {"precision", "fp8"}, {"gpu", "H100"}}));
  const auto w = one(r, "speedup", {{"nodes", "4"}, {"scaling", "weak"}});
  EXPECT_DOUBLE_EQ(w.value, 3.79);
  EXPECT_EQ(w.dims.at("precision"), "fp8");
  EXPECT_TRUE(w.higher_is_better);
  const auto c = one(r, "speedup", {{"nodes", "1"}, {"compared", "BF16 to FP8"}});
  EXPECT_EQ(c.dims.count("precision"), 0u);
  EXPECT_EQ(c.row, "1 | 2048 | 4");
}

// How labels are normalised, one row each.
TEST(Tables, LabelNormalisation) {
  const std::vector<std::pair<std::string, Dims>> cases = {
      {"8xH100", {{"gpus", "8"}, {"gpu", "H100"}}},
      {"x8", {{"gpus", "8"}}},
      {"2-node", {{"nodes", "2"}}},
      {"1M/8G", {{"nodes", "1"}, {"gpus_per_node", "8"}, {"gpus", "8"}}},
      {"2x8", {{"nodes", "2"}, {"gpus_per_node", "8"}, {"gpus", "16"}}},
      {"4 GPUs/node", {{"gpus_per_node", "4"}}},
      {"DeepSpeed ZeRO-3", {{"mode", "DeepSpeed"}, {"zero_stage", "3"}}},
      {"HTOff", {{"hyperthreading", "off"}}},
      {"without NVLink", {{"nvlink", "off"}}},
      {"RoCE Enabled", {{"roce", "on"}}},
      {"GDR disabled", {{"gdr", "off"}}},
      {"NCCL_NVLS_ENABLE=0", {{"nvls", "off"}}},
      {"NCCL_ALGO=Tree", {{"setting:NCCL_ALGO", "Tree"}}},
      {"NCCL_TOPO_FILE=/opt/topo/vm2.xml", {{"topology", "vm2.xml"}}},
      {"topo3", {{"topology", "topo3"}}},
      {"nccl 2.21.5", {{"nccl_version", "2.21.5"}}},
      {"PIX", {{"link", "PIX"}}},
      {"NET/Socket", {{"network", "Socket"}}},
      {"fp16 AMP", {{"precision", "fp16"}}},
      {"rank 3", {{"rank", "3"}}},
      {"single GPU", {{"gpus", "1"}, {"mode", "single"}}},
      {"Horovod 2 nodes", {{"mode", "Horovod"}, {"nodes", "2"}}},
      {"Texas 4xA100 lab7", {{"gpus", "4"}, {"gpu", "A100"}, {"variant", "Texas lab7"}}},
      {"my favourite run", {{"label", "my favourite run"}}},
  };
  std::string text = "| config | step time (ms) |\n|---|---|\n";
  for (std::size_t i = 0; i < cases.size(); ++i) text += "| " + cases[i].first + " | " + std::to_string(100 + i) + " |\n";
  const Reading r = read(text);
  ASSERT_EQ(measurements(r).size(), cases.size()) << notes_of(r);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto m = by_row(r, cases[i].first, "step time");
    EXPECT_EQ(m.dims, cases[i].second) << cases[i].first;
    EXPECT_DOUBLE_EQ(m.value, 100.0 + double(i));
  }
}

TEST(Tables, DerivedRowsAreLeftOut) {
  const Reading r = read(
      "| setting | busbw (GB/s) |\n"
      "|---|---|\n"
      "| NCCL_ALGO=Ring | 180.2 |\n"
      "| NCCL_ALGO=Tree | 150.7 |\n"
      "| NCCL_PROTO=LL128 | N/A |\n"
      "| NCCL_PROTO=Simple | - |\n"
      "| average | 165 |\n"
      "| Ring vs Tree | 1.2x |\n"
      "| Total | 330.9 |\n"
      "| Difference (%) | 19.6 |\n");
  ASSERT_EQ(measurements(r).size(), 2u) << notes_of(r);
  EXPECT_DOUBLE_EQ(one(r, "busbw", {{"setting:NCCL_ALGO", "Ring"}}).value, 180.2);
  for (const char* row : {"'average'", "'Ring vs Tree'", "'Total'", "'Difference (%)'"})
    EXPECT_TRUE(has_note(r, std::string("row ") + row + " is derived")) << row << "\n" << notes_of(r);
  EXPECT_TRUE(has_note(r, "line 5: 'N/A' under 'busbw (GB/s)' is not a number")) << notes_of(r);
  EXPECT_FALSE(has_note(r, "line 6")) << "a dash is an empty cell\n" << notes_of(r);
}

TEST(Tables, SeveralTablesAreNamed) {
  const Reading r = read(
      "## Single node\n\n| GPUs | Throughput (samples/s) |\n|---|---|\n| 1 | 100 |\n| 8 | 760 |\n\n"
      "## Two nodes\n\n| GPUs | Throughput (samples/s) |\n|---|---|\n| 8 | 760 |\n| 16 | 1300 |\n");
  ASSERT_EQ(measurements(r).size(), 4u) << notes_of(r);
  EXPECT_EQ(measurements(r)[0].table, "table 1");
  EXPECT_EQ(measurements(r)[3].table, "table 2");
  EXPECT_DOUBLE_EQ(one(r, "throughput", {{"gpus", "16"}}).value, 1300);
}

// Conditions in both directions: modes as rows, GPU counts as columns, the quantity from the cells' unit; a title
// line with the machine.
TEST(Tables, ConditionsAsColumns) {
  const Reading r = read(
      "Batch 64 per GPU, 4x RTX 3090 (PCIe, no NVLink), PyTorch 2.1:\n"
      "\n"
      "| Mode | 1 GPU | 2 GPUs | 4 GPUs |\n"
      "|------|-------|--------|--------|\n"
      "| DP   | 310 img/s | 420 img/s | 505 img/s |\n"
      "| DDP  | 310 img/s | 600 img/s | 1150 img/s |\n");
  ASSERT_EQ(measurements(r).size(), 6u) << notes_of(r);
  const auto m = one(r, "throughput", {{"mode", "DDP"}, {"gpus", "4"}});
  EXPECT_DOUBLE_EQ(m.value, 1150);
  EXPECT_EQ(m.unit, "img/s");
  EXPECT_EQ(m.dims, (Dims{{"mode", "DDP"}, {"gpus", "4"}, {"gpu", "RTX 3090"}, {"link", "PCIe"}, {"nvlink", "off"},
                          {"torch_version", "2.1"}}));
  EXPECT_DOUBLE_EQ(one(r, "throughput", {{"mode", "DP"}, {"gpus", "1"}}).value, 310);
  ASSERT_EQ(r.facts.of<GpuSeen>().size(), 1u);
  EXPECT_EQ(r.facts.of<GpuSeen>()[0].fact.name, "RTX 3090");
}

// Headers that are only a unit, a per-GPU rate (not the job's throughput), a time unit under a word of speed.
TEST(Tables, HeaderUnitsAndPerGpuRates) {
  const Reading r = read(
      "| GPUs | it/s | Tokens/sec/GPU | Speed (s/it) | GB/s |\n"
      "|---|---|---|---|---|\n"
      "| 1 | 3.1 | 5200 | 0.32 | 10 |\n"
      "| 8 | 2.9 | 4800 | 0.34 | 12 |\n");
  ASSERT_EQ(measurements(r).size(), 8u) << notes_of(r);
  const auto a = one(r, "throughput", {{"gpus", "8"}});
  EXPECT_EQ(a.unit, "it/s");
  const auto b = one(r, "throughput per GPU", {{"gpus", "8"}});
  EXPECT_EQ(b.unit, "tokens/s");
  EXPECT_TRUE(b.higher_is_better);
  const auto c = one(r, "step time", {{"gpus", "1"}});
  EXPECT_EQ(c.unit, "s");
  EXPECT_DOUBLE_EQ(c.value, 0.32);
  EXPECT_EQ(one(r, "bandwidth", {{"gpus", "8"}}).unit, "GB/s");
}

// A table inside a code fence, a unit in the header that converts, a derived row.
TEST(Tables, FencedTableWithMinutes) {
  const Reading r = read(
      "Here are my numbers:\n"
      "```\n"
      "| model | GPUs | epoch (min) |\n"
      "|-------|------|-------------|\n"
      "| resnet50 | 1 | 40 |\n"
      "| resnet50 | 4 | 11.5 |\n"
      "| Speedup | 4 | 3.5x |\n"
      "```\n");
  ASSERT_EQ(measurements(r).size(), 2u) << notes_of(r);
  const auto m = one(r, "epoch time", {{"gpus", "4"}});
  EXPECT_DOUBLE_EQ(m.value, 690);
  EXPECT_EQ(m.unit, "s");
  EXPECT_EQ(m.dims, (Dims{{"gpus", "4"}, {"model", "resnet50"}}));
  EXPECT_TRUE(has_note(r, "line 7: row 'Speedup | 4' is derived")) << notes_of(r);
}

// ───────────────────────────── other readers' text, prose, damage ─────────────────────────────

TEST(Tables, OtherReadersTextIsNotATable) {
  const std::vector<std::pair<const char*, std::string>> texts = {
      {"nccl-tests",
       "# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20\n"
       "#\n#                                                       out-of-place                       in-place\n"
       "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw\n"
       "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
       "     1048576        262144     float     sum      -1    60.12   17.44   30.52      0    59.80   17.53   30.69\n"
       "     2097152        524288     float     sum      -1    80.50   26.05   45.59      0    80.11   26.18   45.81\n"
       "# Avg bus bandwidth    : 38.1\n"},
      {"nccl-tests rows without their header",
       "   536870912     134217728     float     sum      -1   1806.7  297.16  586.06      0   1835.9  292.43  576.74\n"
       "  1073741824     268435456     float     sum      -1   3108.8  345.38  681.17      0   2924.7  367.13  724.06\n"},
      {"NCCL log",
       "node1:2741:2741 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
       "node1:2741:2741 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n"
       "node1:2741:2790 [0] NCCL INFO Channel 00/02 :    0   1   2   3   4   5   6   7\n"
       "node1:2741:2790 [0] NCCL INFO Channel 01/02 :    0   1   2   3   4   5   6   7\n"
       "node1:2741:2790 [0] NCCL INFO Ring 00 : 7[7] -> 0[0] [receive] via NET/IB/0\n"},
      {"topology matrix",
       "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n"
       "GPU0\t X \tNV12\tNV12\tSYS\t0-19\t0\n"
       "GPU1\tNV12\t X \tNV12\tSYS\t0-19\t0\n"
       "GPU2\tNV12\tNV12\t X \tSYS\t20-39\t1\n"
       "GPU3\tSYS\tSYS\tSYS\t X \t20-39\t1\n"},
      {"topology matrix without affinity columns",
       "        GPU0    GPU1    GPU2\nGPU0     X      PIX     SYS\nGPU1    PIX      X      SYS\nGPU2    SYS     SYS      X\n"},
      {"Python profile",
       "         2403945 function calls (2350000 primitive calls) in 60.512 seconds\n\n"
       "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)\n"
       "     1000   12.500    0.013   30.100    0.030 replicate.py:12(replicate)\n"
       "    50000    5.200    0.000    5.200    0.000 {method 'acquire' of '_thread.lock' objects}\n"},
      {"environment dump",
       "NCCL_DEBUG=INFO\nNCCL_IB_DISABLE=0\nCUDA_VISIBLE_DEVICES=0,1,2,3\nNCCL_SOCKET_IFNAME=eth0\nOMP_NUM_THREADS=8\n"},
      {"prose",
       "We ran the job on 1, 2 and 4 GPUs. With 1 GPU an epoch took 102 s, with 2 GPUs 55 s and with 4 GPUs about\n"
       "31 s, so scaling is fine up to 4 GPUs, but with 8 GPUs it took 40 s, which is worse.\n"
       "in 2 GPU it takes 56 sec.\nin 4 GPU it takes 78 sec.\n"},
      {"training log",
       "Epoch 1/10: 100%|##########| 391/391 [00:41<00:00, 9.45it/s, loss=1.82]\n"
       "Epoch 2/10: 100%|##########| 391/391 [00:40<00:00, 9.61it/s, loss=1.41]\n"
       "INFO:root:Epoch[0] Batch [49]\tSpeed: 213.70 samples/sec\taccuracy=1.000000\n"
       "INFO:root:Epoch[0] Batch [99]\tSpeed: 215.32 samples/sec\taccuracy=1.000000\n"},
  };
  for (const auto& [what, text] : texts) {
    EXPECT_FALSE(looks_like_measurement_table(text)) << what;
    EXPECT_EQ(read(text).facts.count<Measurement>(), 0u) << what;
  }
}

TEST(Tables, DamagedInputNeverThrows) {
  std::vector<std::string> texts = {
      "",
      "|",
      "| | |\n|---|---|\n",
      "|---|---|\n|---|---|\n",
      "| a | b |\n|---|---|\n| 1 | 2 | 3 | 4 | 5 |\n| x |\n",
      "<div><span style=\"x\n",
      "<<<<>>>>|||||",
      std::string("| GPUs | time (s) |\n|---|---|\n| 1 | 1\0" "2 |\n| 2 | 6 |\n", 42),
      "| GPUs | time (s) |\n|---|---|\n| 1 | 1e999 |\n| 2 | -0 |\n| 3 | nan |\n| 4 | 99999999999999999999999 |\n",
      std::string(100000, '|'),
      std::string(50000, '9') + "  " + std::string(50000, '1') + "\n1  2\n",
      "host-a,host-b 12\n,   \n,,,,\n   # only a comment\n",
      "\xff\xfe| GPUs | time |\n|---|---|\n| \xc3\x28 | 1.0 |\n| 2 | \xe2\x82 |\n",
      // Enormous cells: a header, a label, a value.
      "| time | " + std::string(60000, 'a') + " 2 |\n|---|---|\n| " + std::string(60000, '1') + "x | 1 |\n| y_" +
          std::string(60000, 'z') + " | 2 |\n| z | 3" + std::string(60000, '0') + " |\n",
      "host-" + std::string(70000, 'a') + ",host-b   12\nhost-c,host-d   13\n",
      std::string(30000, '<') + "h1" + std::string(30000, '>'),
  };
  std::mt19937 rng(7);
  const std::string alphabet = "|-:,\t \n0123456789.~%xsGB/abc<>#=_()";
  for (int k = 0; k < 300; ++k) {
    std::string t;
    const int n = static_cast<int>(rng() % 400);
    for (int i = 0; i < n; ++i) t += alphabet[rng() % alphabet.size()];
    texts.push_back(t);
  }
  for (const auto& t : texts) {
    EXPECT_NO_THROW({
      const auto r = read(t);
      for (const auto& m : measurements(r)) EXPECT_TRUE(std::isfinite(m.value));
      (void)looks_like_measurement_table(t);
    });
  }
  EXPECT_FALSE(looks_like_measurement_table(""));
  EXPECT_FALSE(looks_like_measurement_table(texts[6]));
  // A value that overflows a double is a note, not an infinity.
  const auto r = read(texts[8]);
  EXPECT_TRUE(has_note(r, "'1e999'")) << notes_of(r);
}

// ───────────────────────────── the shared corpus ─────────────────────────────

namespace fs = std::filesystem;

std::optional<fs::path> corpus() {
#ifdef SCALESCOPE_SHARED_CORPUS_DIR
  const fs::path p(SCALESCOPE_SHARED_CORPUS_DIR);
  std::error_code ec;
  if (fs::is_directory(p, ec)) return p;
#endif
  return std::nullopt;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The timings file of the case folder whose name starts with `prefix`.
std::optional<fs::path> case_file(const std::string& prefix) {
  const auto c = corpus();
  if (!c) return std::nullopt;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(*c / "cases", ec))
    if (d.path().filename().string().rfind(prefix, 0) == 0 && fs::exists(d.path() / "timings.txt"))
      return d.path() / "timings.txt";
  return std::nullopt;
}

#define CORPUS_CASE(var, prefix)                                                   \
  const auto var = case_file(prefix);                                              \
  if (!var) GTEST_SKIP() << "shared corpus case " << prefix << "* is not present"

TEST(TablesCorpus, RoceAbTableWithHtmlAndTitle) {
  CORPUS_CASE(path, "pet11-");
  const auto text = slurp(*path);
  EXPECT_TRUE(looks_like_measurement_table(text));
  const Reading r = read_measurement_tables(text, "timings.txt");
  ASSERT_EQ(measurements(r).size(), 6u) << notes_of(r);
  const Dims title = {{"nodes", "2"}, {"gpus_per_node", "4"}, {"gpus", "8"}, {"mode", "DDP"}, {"precision", "fp16"}, {"gpu", "A40"}};
  auto on = title, off = title;
  on["roce"] = "on";
  off["roce"] = "off";
  EXPECT_DOUBLE_EQ(one(r, "step time", on).value, 2.51);
  EXPECT_DOUBLE_EQ(one(r, "step time", off).value, 5.72);
  EXPECT_EQ(one(r, "step time", off).unit, "s");
  EXPECT_DOUBLE_EQ(one(r, "GPU busy time", on).value, 0.58);
  EXPECT_DOUBLE_EQ(one(r, "GPU busy time", off).value, 0.58);
  EXPECT_DOUBLE_EQ(one(r, "GPU idle share", on).value, 76.89);
  EXPECT_DOUBLE_EQ(one(r, "GPU idle share", off).value, 89.9);
  EXPECT_EQ(one(r, "GPU idle share", off).unit, "%");
  for (const auto& m : measurements(r)) EXPECT_EQ(m.dims.size(), title.size() + 1);
  EXPECT_TRUE(has_note(r, "'RoCE Reduction (%)' is derived")) << notes_of(r);
  const auto models = r.facts.of<ModelSeen>();
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].fact.name, "Llama-3.2-3B-Instruct");
  EXPECT_DOUBLE_EQ(models[0].fact.parameters.value_or(0), 3e9);
  EXPECT_EQ(models[0].fact.dtype.value_or(""), "fp16");
  ASSERT_EQ(r.facts.of<GpuSeen>().size(), 1u);
  EXPECT_EQ(r.facts.of<GpuSeen>()[0].fact.name, "A40");
  ASSERT_EQ(r.facts.of<WorldShape>().size(), 1u);
  EXPECT_EQ(r.facts.of<WorldShape>()[0].fact.ranks.value_or(0), 8);
}

TEST(TablesCorpus, DdpDpNvlinkRunTimes) {
  CORPUS_CASE(path, "transformers9371-");
  const Reading r = read_measurement_tables(slurp(*path), "timings.txt");
  ASSERT_EQ(measurements(r).size(), 4u) << notes_of(r);
  for (const auto& m : measurements(r)) {
    EXPECT_EQ(m.quantity, "run time");
    EXPECT_EQ(m.unit, "s");
  }
  const auto single = one(r, "run time", {{"gpus", "1"}});
  EXPECT_DOUBLE_EQ(single.value, 102);
  EXPECT_TRUE(!single.dims.count("mode") || single.dims.at("mode") == "single");
  EXPECT_EQ(one(r, "run time", {{"mode", "DP"}}).dims, (Dims{{"gpus", "2"}, {"mode", "DP"}}));
  EXPECT_DOUBLE_EQ(one(r, "run time", {{"mode", "DP"}}).value, 110);
  EXPECT_EQ(by_row(r, "2:DDP", "run time").dims, (Dims{{"gpus", "2"}, {"mode", "DDP"}}));
  EXPECT_DOUBLE_EQ(by_row(r, "2:DDP", "run time").value, 101);
  const auto nv = one(r, "run time", {{"nvlink", "off"}});
  EXPECT_EQ(nv.dims, (Dims{{"gpus", "2"}, {"mode", "DDP"}, {"nvlink", "off"}}));
  EXPECT_DOUBLE_EQ(nv.value, 131);
}

TEST(TablesCorpus, NcclVersionByTopology) {
  CORPUS_CASE(path, "nccl1303-");
  const Reading r = read_measurement_tables(slurp(*path), "timings.txt");
  ASSERT_EQ(measurements(r).size(), 11u) << notes_of(r);
  for (const auto& m : measurements(r)) {
    EXPECT_EQ(m.quantity, "bandwidth");
    EXPECT_EQ(m.unit, "GB/s");
    EXPECT_TRUE(m.higher_is_better);
    EXPECT_EQ(m.table, "");
    EXPECT_EQ(m.dims.size(), 2u);
  }
  EXPECT_DOUBLE_EQ(one(r, "bandwidth", {{"nccl_version", "2.19.3"}, {"topology", "topo1"}}).value, 365);
  EXPECT_DOUBLE_EQ(one(r, "bandwidth", {{"nccl_version", "2.19.3"}, {"topology", "topo3"}}).value, 51);
  EXPECT_DOUBLE_EQ(one(r, "bandwidth", {{"nccl_version", "2.21.5"}, {"topology", "topo4"}}).value, 40);
  EXPECT_TRUE(has_note(r, "'internal error'")) << notes_of(r);
}

TEST(TablesCorpus, PairwiseBusbw) {
  CORPUS_CASE(path, "nccl-tests106-");
  const Reading r = read_measurement_tables(slurp(*path), "timings.txt");
  ASSERT_EQ(measurements(r).size(), 5u) << notes_of(r);
  for (const auto& m : measurements(r)) {
    EXPECT_EQ(m.quantity, "bandwidth");
    EXPECT_TRUE(m.higher_is_better);
    ASSERT_EQ(m.members.size(), 2u);
  }
  const auto a = one(r, "bandwidth", {{"pair", "host-a,host-b"}});
  EXPECT_DOUBLE_EQ(a.value, 49.36);
  EXPECT_EQ(a.members, (std::vector<std::string>{"host-a", "host-b"}));
  EXPECT_EQ(a.dims.count("note"), 0u);
  const auto g = one(r, "bandwidth", {{"pair", "host-g,host-b"}});
  EXPECT_DOUBLE_EQ(g.value, 86.81);
  EXPECT_EQ(g.dims.at("note"), "crossing TOR");
  EXPECT_DOUBLE_EQ(one(r, "bandwidth", {{"pair", "host-c,host-d"}}).value, 88.36);
}

// Published scaling tables: every file reads without error; tables give measurements with a GPU or node count,
// prose gives none.
TEST(TablesCorpus, ScalingTables) {
  const auto c = corpus();
  if (!c || !fs::is_directory(*c / "scaling")) GTEST_SKIP() << "shared corpus scaling/ is not present";
  std::size_t files = 0;
  for (const auto& d : fs::directory_iterator(*c / "scaling")) {
    const std::string name = d.path().filename().string();
    const auto text = slurp(d.path());
    const Reading r = read_measurement_tables(text, name);
    ++files;
    const auto ms = measurements(r);
    if (name.find("prose") != std::string::npos || name.find("speedometer_logs") != std::string::npos) {
      EXPECT_EQ(ms.size(), 0u) << name;
      continue;
    }
    EXPECT_TRUE(looks_like_measurement_table(text)) << name;
    ASSERT_GE(ms.size(), 10u) << name << "\n" << notes_of(r);
    for (const auto& m : ms) {
      EXPECT_TRUE(m.dims.count("gpus") || m.dims.count("nodes")) << name << " row " << m.row;
      EXPECT_EQ(m.dims.count("label"), 0u) << name << " row " << m.row;
      EXPECT_TRUE(std::isfinite(m.value));
    }
  }
  EXPECT_GT(files, 0u);
}

// Another reader's files are not tables.
TEST(TablesCorpus, OtherReadersFiles) {
  const auto c = corpus();
  if (!c) GTEST_SKIP() << "shared corpus is not present";
  std::size_t files = 0;
  for (const char* dir : {"nccl-logs", "nccl-tests", "topo"}) {
    std::error_code ec;
    if (!fs::is_directory(*c / dir, ec)) continue;
    for (const auto& d : fs::directory_iterator(*c / dir)) {
      const auto text = slurp(d.path());
      ++files;
      EXPECT_FALSE(looks_like_measurement_table(text)) << d.path();
      EXPECT_EQ(read_measurement_tables(text, "x").facts.count<Measurement>(), 0u) << d.path();
    }
  }
  if (files == 0) GTEST_SKIP() << "no nccl-logs/, nccl-tests/ or topo/ in the shared corpus";
}

}  // namespace

// A count fused to its noun in a row label ("4xGPU's", "8xgpu"), as forum posts write them (issue #36).
TEST(Tables, CountsFusedToTheGpuNounInLabels) {
  const std::string text =
      "| setup | img/sec |\n"
      "|---|---|\n"
      "| Single Node - 1xGPU | 750 |\n"
      "| Single Node - 4xGPU's | 2884 |\n"
      "| Multi Node - 8xGPU's | 5048 |\n";
  const Reading r = read(text);
  ASSERT_EQ(measurements(r).size(), 3u) << notes_of(r);
  EXPECT_EQ(by_row(r, "Single Node - 4xGPU's", "throughput").dims.at("gpus"), "4");
  EXPECT_EQ(by_row(r, "Multi Node - 8xGPU's", "throughput").dims.at("gpus"), "8");
}
