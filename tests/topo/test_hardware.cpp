// The hardware table: product names as tools print them (and the substring traps between them), figures
// against the datasheet totals they were derived from, the ceilings per path class against the measured
// anchors (../shared/anchors.md), network rates, and every GPU name found in ../shared/corpus.

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "topo/bandwidth.h"
#include "knowledge/hardware.h"

using namespace scalescope::topo;

namespace {

std::string model_of(std::string_view name) {
  const GpuSpec* g = find_gpu(name);
  return g ? std::string(g->model) : std::string("(none)");
}

const GpuSpec& spec(std::string_view model) {
  for (const GpuSpec& g : gpu_table())
    if (g.model == model) return g;
  ADD_FAILURE() << "no table entry " << model;
  static const GpuSpec none{};
  return none;
}

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

// Names as drivers and tools print them (NVIDIA open-gpu-kernel-modules README "Compatible GPUs" for Turing
// and later; nvidia-smi / nccl-tests / PyTorch output for Pascal and Volta) and the entry each must reach.
// Together they reach every table entry (checked below), so no entry's rule is dead.
const std::vector<std::pair<std::string, std::string>> kSpellings = {
    {"Tesla K80", "Tesla K80"},
    {"NVIDIA GeForce RTX 2070", "GeForce RTX 2070"},
    {"NVIDIA GeForce RTX 2070 SUPER", "GeForce RTX 2070 SUPER"},
    {"NVIDIA GeForce RTX 2080 SUPER", "GeForce RTX 2080 SUPER"},
    {"NVIDIA GeForce RTX 3060", "GeForce RTX 3060"},
    {"NVIDIA GeForce RTX 3070", "GeForce RTX 3070"},
    {"NVIDIA GeForce RTX 3080 Ti", "GeForce RTX 3080 Ti"},
    {"NVIDIA GeForce RTX 4070", "GeForce RTX 4070"},
    {"NVIDIA GeForce RTX 4070 SUPER", "GeForce RTX 4070 SUPER"},
    {"NVIDIA GeForce RTX 4070 Ti", "GeForce RTX 4070 Ti"},
    {"NVIDIA GeForce RTX 4080 SUPER", "GeForce RTX 4080 SUPER"},
    {"NVIDIA GeForce RTX 5070", "GeForce RTX 5070"},
    {"NVIDIA GeForce RTX 5070 Ti", "GeForce RTX 5070 Ti"},
    {"Quadro GV100", "Quadro GV100"},
    {"Quadro RTX 5000", "Quadro RTX 5000"},
    {"Quadro RTX 4000", "Quadro RTX 4000"},
    {"NVIDIA RTX A4500", "RTX A4500"},
    {"NVIDIA RTX 5000 Ada Generation", "RTX 5000 Ada"},
    {"NVIDIA RTX 4000 Ada Generation", "RTX 4000 Ada"},
    {"Tesla M40 24GB", "Tesla M40"},
    {"Tesla M60", "Tesla M60"},
    {"Tesla P100-SXM2-16GB", "Tesla P100 SXM2 16GB"},
    {"Tesla P100-PCIE-16GB", "Tesla P100 PCIe 16GB"},
    {"Tesla P100-PCIE-12GB", "Tesla P100 PCIe 12GB"},
    {"Tesla P40", "Tesla P40"},
    {"Tesla P4", "Tesla P4"},
    {"GeForce GTX 1080", "GeForce GTX 1080"},
    {"NVIDIA GeForce GTX 1080", "GeForce GTX 1080"},
    {"GeForce GTX 1080 Ti", "GeForce GTX 1080 Ti"},
    {"NVIDIA TITAN Xp", "TITAN Xp"},
    {"Tesla V100-SXM2-16GB", "Tesla V100 SXM2 16GB"},
    {"Tesla V100-SXM2-32GB", "Tesla V100 SXM2 32GB"},
    {"Tesla V100-SXM3-32GB", "Tesla V100 SXM3 32GB"},
    {"Tesla V100-PCIE-16GB", "Tesla V100 PCIe 16GB"},
    {"Tesla V100-PCIE-32GB", "Tesla V100 PCIe 32GB"},
    {"Tesla V100S-PCIE-32GB", "Tesla V100S PCIe 32GB"},
    {"TITAN V", "TITAN V"},
    {"Tesla T4", "Tesla T4"},
    {"NVIDIA GeForce RTX 2080", "GeForce RTX 2080"},
    {"GeForce RTX 2080 Ti", "GeForce RTX 2080 Ti"},
    {"NVIDIA GeForce RTX 2080 Ti", "GeForce RTX 2080 Ti"},
    {"TITAN RTX", "TITAN RTX"},
    {"NVIDIA TITAN RTX", "TITAN RTX"},
    {"Quadro RTX 6000", "Quadro RTX 6000"},
    {"Quadro RTX 8000", "Quadro RTX 8000"},
    {"NVIDIA A100-SXM4-40GB", "A100 SXM4 40GB"},
    {"NVIDIA A100-PG509-200", "A100 SXM4 40GB"},
    {"NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"},
    {"A100-SXM-80GB", "A100 SXM4 80GB"},
    {"NVIDIA PG509-210", "A100 SXM4 80GB"},
    {"NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"},
    {"NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"},
    {"NVIDIA A800-SXM4-80GB", "A800 SXM4 80GB"},
    {"NVIDIA A800 80GB PCIe", "A800 PCIe 80GB"},
    {"NVIDIA A800 40GB Active", "A800 40GB Active"},
    {"NVIDIA A30", "A30"},
    {"NVIDIA A40", "A40"},
    {"NVIDIA A10", "A10"},
    {"NVIDIA A16", "A16"},
    {"NVIDIA A2", "A2"},
    {"NVIDIA GeForce RTX 3080", "GeForce RTX 3080"},
    {"NVIDIA GeForce RTX 3090", "GeForce RTX 3090"},
    {"NVIDIA GeForce RTX 3090 Ti", "GeForce RTX 3090 Ti"},
    {"NVIDIA RTX A6000", "RTX A6000"},
    {"NVIDIA RTX A5000", "RTX A5000"},
    {"NVIDIA RTX A4000", "RTX A4000"},
    {"NVIDIA L4", "L4"},
    {"NVIDIA L40", "L40"},
    {"NVIDIA L40S", "L40S"},
    {"NVIDIA L20", "L20"},
    {"NVIDIA GeForce RTX 4080", "GeForce RTX 4080"},
    {"NVIDIA GeForce RTX 4090", "GeForce RTX 4090"},
    {"NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada"},
    {"NVIDIA H100 80GB HBM3", "H100 SXM5"},
    {"NVIDIA H100 PCIe", "H100 PCIe"},
    {"NVIDIA H100 NVL", "H100 NVL"},
    {"NVIDIA H800", "H800 SXM5"},
    {"NVIDIA H20", "H20"},
    {"NVIDIA H200", "H200 SXM"},
    {"NVIDIA H200 NVL", "H200 NVL"},
    {"NVIDIA GH200 480GB", "GH200 96GB"},
    {"NVIDIA GH200 120GB", "GH200 96GB"},
    {"NVIDIA GH200 144G HBM3e", "GH200 144GB"},
    {"NVIDIA B100", "B100"},
    {"NVIDIA B200", "B200"},
    {"NVIDIA B300 SXM6 AC", "B300"},
    {"NVIDIA GB200", "GB200"},
    {"NVIDIA GeForce RTX 5080", "GeForce RTX 5080"},
    {"NVIDIA GeForce RTX 5090", "GeForce RTX 5090"},
    {"NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX PRO 6000 Blackwell"},
    {"NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000 Blackwell"},
    {"NVIDIA GB10", "GB10"},
};

}  // namespace

// ---- names ----

TEST(FindGpu, ToolSpellingsReachTheirEntries) {
  for (const auto& [name, model] : kSpellings) EXPECT_EQ(model_of(name), model) << name;
}

TEST(FindGpu, EveryEntryIsReachedByARealSpelling) {
  std::set<std::string> reached;
  for (const auto& [name, model] : kSpellings)
    if (const GpuSpec* g = find_gpu(name)) reached.insert(std::string(g->model));
  for (const GpuSpec& g : gpu_table()) EXPECT_TRUE(reached.count(std::string(g.model))) << g.model;
}

TEST(FindGpu, SubstringTrapsKeepModelsApart) {
  // A10 vs A100
  EXPECT_EQ(model_of("NVIDIA A10"), "A10");
  EXPECT_EQ(model_of("NVIDIA A100-SXM4-40GB"), "A100 SXM4 40GB");
  // L4 vs L40 vs L40S
  EXPECT_EQ(model_of("NVIDIA L4"), "L4");
  EXPECT_EQ(model_of("NVIDIA L40"), "L40");
  EXPECT_EQ(model_of("NVIDIA L40S"), "L40S");
  // H100 SXM vs NVL vs PCIe; H20 vs H200 vs GH200
  EXPECT_EQ(model_of("NVIDIA H100 80GB HBM3"), "H100 SXM5");
  EXPECT_EQ(model_of("NVIDIA H100 NVL"), "H100 NVL");
  EXPECT_EQ(model_of("NVIDIA H100 PCIe"), "H100 PCIe");
  EXPECT_EQ(model_of("NVIDIA H20"), "H20");
  EXPECT_EQ(model_of("NVIDIA H200"), "H200 SXM");
  EXPECT_EQ(model_of("NVIDIA GH200 480GB"), "GH200 96GB");
  // B200 vs GB200, B300 vs GB300
  EXPECT_EQ(model_of("NVIDIA B200"), "B200");
  EXPECT_EQ(model_of("NVIDIA GB200"), "GB200");
  EXPECT_EQ(model_of("NVIDIA GB300"), "(none)");
  // RTX 6000: Quadro (Turing), Ada, RTX A6000 (Ampere), RTX PRO 6000 (Blackwell); bare and 6000D unknown
  EXPECT_EQ(model_of("Quadro RTX 6000"), "Quadro RTX 6000");
  EXPECT_EQ(model_of("NVIDIA RTX 6000 Ada Generation"), "RTX 6000 Ada");
  EXPECT_EQ(model_of("NVIDIA RTX A6000"), "RTX A6000");
  EXPECT_EQ(model_of("NVIDIA RTX PRO 6000 Blackwell Workstation Edition"), "RTX PRO 6000 Blackwell");
  EXPECT_EQ(model_of("NVIDIA RTX 6000"), "(none)");
  EXPECT_EQ(model_of("NVIDIA RTX 6000D"), "(none)");
  // A800 vs an (imaginary) A8000; Quadro RTX 8000 is neither
  EXPECT_EQ(model_of("NVIDIA A800-SXM4-80GB"), "A800 SXM4 80GB");
  EXPECT_EQ(model_of("NVIDIA RTX A8000"), "(none)");
  EXPECT_EQ(model_of("Quadro RTX 8000"), "Quadro RTX 8000");
  // P4 vs P40 vs Quadro P4000; T4 vs T400 / T4G
  EXPECT_EQ(model_of("Tesla P4"), "Tesla P4");
  EXPECT_EQ(model_of("Tesla P40"), "Tesla P40");
  EXPECT_EQ(model_of("Quadro P4000"), "(none)");
  EXPECT_EQ(model_of("NVIDIA T400"), "(none)");
  EXPECT_EQ(model_of("NVIDIA T4G"), "(none)");
  // Ti / S / SUPER / D suffixes are other boards
  EXPECT_EQ(model_of("GeForce GTX 1080"), "GeForce GTX 1080");
  EXPECT_EQ(model_of("GeForce GTX 1080 Ti"), "GeForce GTX 1080 Ti");
  EXPECT_EQ(model_of("NVIDIA GeForce RTX 3090 Ti"), "GeForce RTX 3090 Ti");
  EXPECT_EQ(model_of("NVIDIA GeForce RTX 3080 Ti"), "GeForce RTX 3080 Ti");
  EXPECT_EQ(model_of("NVIDIA GeForce RTX 3080"), "GeForce RTX 3080");
  EXPECT_EQ(model_of("NVIDIA GeForce RTX 2080 SUPER"), "GeForce RTX 2080 SUPER");
  EXPECT_EQ(model_of("NVIDIA GeForce RTX 4080 SUPER"), "GeForce RTX 4080 SUPER");
  EXPECT_EQ(model_of("NVIDIA GeForce RTX 4070 Ti SUPER"), "(none)");
  EXPECT_EQ(model_of("NVIDIA GeForce RTX 4090 D"), "(none)");
  EXPECT_EQ(model_of("Tesla V100S-PCIE-32GB"), "Tesla V100S PCIe 32GB");
  EXPECT_EQ(model_of("Tesla V100-PCIE-32GB"), "Tesla V100 PCIe 32GB");
  EXPECT_EQ(model_of("NVIDIA A10G"), "(none)");
}

TEST(FindGpu, CaseAndSpacingAreIgnored) {
  EXPECT_EQ(model_of("nvidia a100-sxm4-40gb"), "A100 SXM4 40GB");
  EXPECT_EQ(model_of("NVIDIA  A100 SXM4 40 GB"), "A100 SXM4 40GB");
  EXPECT_EQ(model_of("NVIDIA_A100_SXM4_40GB"), "A100 SXM4 40GB");
  EXPECT_EQ(model_of("geforce rtx 2080ti"), "GeForce RTX 2080 Ti");
  EXPECT_EQ(model_of("GeForce RTX2080 Ti"), "GeForce RTX 2080 Ti");
  EXPECT_EQ(model_of("  Tesla   T4 \t"), "Tesla T4");
  EXPECT_EQ(model_of("NVIDIA H100 80GB HBM3\n"), "H100 SXM5");
  EXPECT_EQ(model_of("nvidia l40s"), "L40S");
}

TEST(FindGpu, AmbiguousUnknownAndPartialDevicesGiveNull) {
  for (const char* name : {
           "",                                   // nothing
           "NVIDIA A100",                        // SXM4 or PCIe, 40 or 80 GB
           "Tesla V100-16GB",                    // SXM2 or PCIe
           "Tesla V100",                         //
           "NVIDIA H100",                        // the driver's name for device 2339, form not sourced
           "NVIDIA GH200",                       // 96 or 144 GB
           "NVIDIA A100-SXM-64GB",               // a variant the table does not hold
           "Tesla V100-SXM3-32GB-H",             // the 450 W DGX-2H part
           "NVIDIA H20-3e", "NVIDIA H20 NVL16",  // H20 variants
           "NVIDIA H800 PCIe",                   // not in the table
           "NVIDIA GeForce GTX 1050 Ti", "NVIDIA GeForce GTX 950",
           "AMD Instinct MI300X", "NVIDIA Graphics Device",
           "NVIDIA GeForce RTX 4090 Laptop GPU",                      // laptop part
           "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",  // 300 W variant
           "NVIDIA A100-SXM4-40GB MIG 1g.5gb",                        // a MIG slice
       })
    EXPECT_EQ(model_of(name), "(none)") << '"' << name << '"';
}

// ---- the table ----

TEST(GpuTable, RowsAreWellFormed) {
  const std::map<std::string_view, std::set<int>> majors = {
      {"Kepler", {3}}, {"Maxwell", {5}}, {"Pascal", {6}}, {"Volta", {7}}, {"Turing", {7}}, {"Ampere", {8}},
      {"Ada Lovelace", {8}}, {"Hopper", {9}}, {"Blackwell", {10, 12}}};
  std::set<std::string_view> models;
  ASSERT_GE(gpu_table().size(), 60u);
  for (const GpuSpec& g : gpu_table()) {
    SCOPED_TRACE(std::string(g.model));
    EXPECT_TRUE(models.insert(g.model).second) << "duplicate model";
    ASSERT_TRUE(majors.count(g.architecture)) << g.architecture;
    EXPECT_TRUE(majors.at(g.architecture).count(g.compute_major)) << g.compute_major;
    EXPECT_GE(g.source.size(), 20u);
    EXPECT_FALSE(g.match.empty());
    // NVLink fields agree with each other; a bridge never carries more links than the GPU has.
    EXPECT_EQ(g.nvlink_gen > 0, g.nvlink_links > 0);
    EXPECT_EQ(g.nvlink_gen > 0, g.nvlink_link_gbps > 0);
    EXPECT_LE(g.bridge_links, g.nvlink_links);
    if (g.form == GpuForm::sxm || g.form == GpuForm::superchip) {
      EXPECT_EQ(g.bridge_links, 0);
    }
    // Only superchips lack a PCIe link of their own.
    EXPECT_EQ(g.pcie_gen == 0, g.form == GpuForm::superchip);
    EXPECT_LE(g.pcie_gen, 6);
    if (g.pcie_gen > 0) {
      EXPECT_TRUE(g.pcie_width == 8 || g.pcie_width == 16) << g.pcie_width;
    }
    EXPECT_GT(g.memory_gb, 0);
    // A figure not sourced is 0 and the source says so.
    if (g.dense_bf16_tflops == 0) {
      EXPECT_TRUE(contains(std::string(g.source), "so 0")) << g.source;
    }
    // Datacenter and workstation boards allow P2P; GeForce RTX 20/30/40/50 do not.
    if (g.form != GpuForm::consumer) {
      EXPECT_TRUE(g.pcie_p2p);
    }
    if (g.model.starts_with("GeForce RTX")) {
      EXPECT_FALSE(g.pcie_p2p);
    }
  }
}

TEST(GpuTable, NvlinkTotalsMatchTheDatasheets) {
  // Bidirectional totals as NVIDIA's datasheets state them (GB/s) = links × per-link rate × 2 directions.
  const std::vector<std::pair<std::string_view, double>> totals = {
      {"Tesla P100 SXM2 16GB", 160}, {"Tesla V100 SXM2 32GB", 300}, {"Tesla V100 SXM3 32GB", 300},
      {"GeForce RTX 2080", 50},      {"GeForce RTX 2080 Ti", 100},  {"TITAN RTX", 100},
      {"Quadro RTX 8000", 100},      {"A100 SXM4 40GB", 600},       {"A100 PCIe 80GB", 600},
      {"A800 SXM4 80GB", 400},       {"A800 PCIe 80GB", 400},       {"A30", 200},
      {"A40", 112.5},                {"GeForce RTX 3090", 112.5},   {"RTX A6000", 112.5},
      {"H100 SXM5", 900},            {"H100 PCIe", 600},            {"H100 NVL", 600},
      {"H800 SXM5", 400},            {"H20", 900},                  {"H200 SXM", 900},
      {"H200 NVL", 900},             {"B200", 1800},                {"GB200", 1800},
  };
  for (const auto& [model, total] : totals) {
    const GpuSpec& g = spec(model);
    EXPECT_DOUBLE_EQ(g.nvlink_links * g.nvlink_link_gbps * 2, total) << model;
  }
  EXPECT_EQ(spec("A100 SXM4 80GB").nvlink_links, 12);
  EXPECT_EQ(spec("H100 SXM5").nvlink_links, 18);
  EXPECT_DOUBLE_EQ(spec("B200").nvlink_link_gbps, 50);
  EXPECT_EQ(spec("A100 PCIe 40GB").bridge_links, 12);
  EXPECT_EQ(spec("GeForce RTX 2080 Ti").bridge_links, 2);
  EXPECT_EQ(spec("A40").bridge_links, 4);
  EXPECT_DOUBLE_EQ(spec("A40").nvlink_link_gbps, 14.0625);
  EXPECT_EQ(spec("GeForce RTX 4090").nvlink_links, 0);
  EXPECT_EQ(spec("L40S").nvlink_links, 0);
}

TEST(GpuTable, FiguresPerGenerationMatchTheDatasheets) {
  struct Row {
    std::string_view model;
    double tflops, memory;
    int cc_major, cc_minor, pcie_gen, pcie_width;
  };
  for (const Row& r : std::vector<Row>{
           {"Tesla P100 SXM2 16GB", 21.2, 16, 6, 0, 3, 16},  // FP16 on CUDA cores
           {"Tesla V100 SXM2 16GB", 125, 16, 7, 0, 3, 16},
           {"Tesla V100 PCIe 32GB", 112, 32, 7, 0, 3, 16},
           {"Tesla V100S PCIe 32GB", 130, 32, 7, 0, 3, 16},
           {"Tesla T4", 65, 16, 7, 5, 3, 16},
           {"GeForce RTX 2080 Ti", 53.8, 11, 7, 5, 3, 16},  // FP32 accumulate
           {"A100 SXM4 80GB", 312, 80, 8, 0, 4, 16},
           {"A40", 149.7, 48, 8, 6, 4, 16},
           {"A2", 18, 16, 8, 6, 4, 8},
           {"GeForce RTX 3090", 71, 24, 8, 6, 4, 16},
           {"L4", 121, 24, 8, 9, 4, 16},
           {"L40S", 362.05, 48, 8, 9, 4, 16},
           {"GeForce RTX 4090", 165.2, 24, 8, 9, 4, 16},
           {"H100 SXM5", 989, 80, 9, 0, 5, 16},
           {"H100 PCIe", 756, 80, 9, 0, 5, 16},
           {"H100 NVL", 835, 94, 9, 0, 5, 16},
           {"H20", 148, 96, 9, 0, 5, 16},
           {"H200 SXM", 989, 141, 9, 0, 5, 16},
           {"B200", 2250, 180, 10, 0, 5, 16},
           {"B300", 2250, 288, 10, 3, 6, 16},
           {"GB200", 2500, 186, 10, 0, 0, 0},
           {"GeForce RTX 5090", 209.5, 32, 12, 0, 5, 16},
           {"GB10", 0, 128, 12, 1, 0, 0},
       }) {
    const GpuSpec& g = spec(r.model);
    SCOPED_TRACE(std::string(r.model));
    EXPECT_DOUBLE_EQ(g.dense_bf16_tflops, r.tflops);
    EXPECT_DOUBLE_EQ(g.memory_gb, r.memory);
    EXPECT_EQ(g.compute_major, r.cc_major);
    EXPECT_EQ(g.compute_minor, r.cc_minor);
    EXPECT_EQ(g.pcie_gen, r.pcie_gen);
    EXPECT_EQ(g.pcie_width, r.pcie_width);
  }
}

TEST(GpuTable, PcieGenerationAgreesWithTheNameRuleOfTheBandwidthModel) {
  // bandwidth.h guesses the PCIe generation from a name when no link data exists; the table must agree
  // wherever that guess is made. B300 is the one known disagreement: its table row says Gen6 (HGX B300 is a
  // PCIe Gen6 platform) while pcie_gen_from_name lumps it with the Gen5 Blackwell parts.
  for (const auto& [name, model] : kSpellings) {
    const int from_name = pcie_gen_from_name(name);
    const GpuSpec* g = find_gpu(name);
    if (from_name == 0 || !g || g->pcie_gen == 0 || g->model == "B300") continue;
    EXPECT_EQ(g->pcie_gen, from_name) << name;
  }
}

// ---- ceilings ----

TEST(PathCeiling, NvlinkCeilingMatchesTheH200Anchors) {
  const GpuSpec* h200 = find_gpu("NVIDIA H200");
  ASSERT_NE(h200, nullptr);
  const PathCeiling c = expected_path_busbw(h200, {LinkClass::nvlink, 18});
  EXPECT_NEAR(c.gbps, 360.0, 1e-9);  // 18 links × 25 GB/s × 0.80
  // anchors.md, all_reduce_perf bf16 at 2 GiB: 4 GPUs 359.4, 2 GPUs 339.6 GB/s busbw — at, not above, the ceiling.
  EXPECT_LE(359.4, c.gbps);
  EXPECT_GE(359.4, 0.98 * c.gbps);
  EXPECT_GE(339.6, 0.90 * c.gbps);
  for (const char* part : {"NV18", "H200 SXM", "18 links", "25 GB/s", "0.80", "360 GB/s"})
    EXPECT_TRUE(contains(c.basis, part)) << part << " not in: " << c.basis;
}

TEST(PathCeiling, NvlinkScalesWithLinksAndGeneration) {
  EXPECT_NEAR(expected_path_busbw(find_gpu("NVIDIA A100-SXM4-80GB"), {LinkClass::nvlink, 12}).gbps, 240.0, 1e-9);
  EXPECT_NEAR(expected_path_busbw(find_gpu("Tesla V100-SXM2-16GB"), {LinkClass::nvlink, 1}).gbps, 20.0, 1e-9);
  EXPECT_NEAR(expected_path_busbw(find_gpu("Tesla V100-SXM2-16GB"), {LinkClass::nvlink, 2}).gbps, 40.0, 1e-9);
  EXPECT_NEAR(expected_path_busbw(find_gpu("NVIDIA B200"), {LinkClass::nvlink, 18}).gbps, 720.0, 1e-9);
  EXPECT_NEAR(expected_path_busbw(find_gpu("NVIDIA GeForce RTX 3090"), {LinkClass::nvlink, 4}).gbps, 45.0, 1e-9);
  EXPECT_NEAR(expected_path_busbw(find_gpu("Tesla P100-SXM2-16GB"), {LinkClass::nvlink, 4}).gbps, 64.0, 1e-9);
  const PathCeiling one = expected_path_busbw(find_gpu("NVIDIA H800"), {LinkClass::nvlink, 1});
  EXPECT_TRUE(contains(one.basis, "1 link ×")) << one.basis;
}

TEST(PathCeiling, PcieClassesApplyTheirFactorsAndTheMeasuredShare) {
  const GpuSpec* h200 = find_gpu("NVIDIA H200");  // PCIe Gen5 x16: 63.015 GB/s
  const double pix = expected_path_busbw(h200, {LinkClass::pix, 0}).gbps;
  const double pxb = expected_path_busbw(h200, {LinkClass::pxb, 0}).gbps;
  const double phb = expected_path_busbw(h200, {LinkClass::phb, 0}).gbps;
  const double node = expected_path_busbw(h200, {LinkClass::node, 0}).gbps;
  const PathCeiling sys = expected_path_busbw(h200, {LinkClass::sys, 0});
  EXPECT_NEAR(pix, 57.34, 0.01);  // 63.015 × 0.91
  EXPECT_DOUBLE_EQ(pxb, pix);
  EXPECT_NEAR(phb, 47.79, 0.01);  // 63.015 × 5/6 × 0.91
  EXPECT_DOUBLE_EQ(node, phb);
  EXPECT_NEAR(sys.gbps, 28.67, 0.01);  // 63.015 × 0.5 × 0.91
  // anchors.md: NCCL_P2P_DISABLE=1 on this machine reached 28.7 GB/s (2 GPUs) — the SYS/SHM ceiling.
  EXPECT_NEAR(sys.gbps, 28.7, 0.1);
  EXPECT_GT(expected_path_busbw(h200, {LinkClass::nvlink, 1}).gbps, 0);
  EXPECT_LT(sys.gbps, phb);
  EXPECT_LT(phb, pix);
  EXPECT_LT(pix, expected_path_busbw(h200, {LinkClass::nvlink, 18}).gbps);
  for (const char* part : {"SYS", "Gen5 x16", "63.0 GB/s", "0.50", "0.91", "host memory"})
    EXPECT_TRUE(contains(sys.basis, part)) << part << " not in: " << sys.basis;
  // Gen3 x16 (V100 PCIe) PIX: 15.754 × 0.91.
  EXPECT_NEAR(expected_path_busbw(find_gpu("Tesla V100-PCIE-16GB"), {LinkClass::pix, 0}).gbps, 14.34, 0.01);
  // A2 is an x8 card: half of Gen4 x16.
  EXPECT_NEAR(expected_path_busbw(find_gpu("NVIDIA A2"), {LinkClass::pix, 0}).gbps, 31.508 / 2 * 0.91, 0.01);
}

TEST(PathCeiling, SelfUnknownAndCountlessNvlinkHaveNoCeiling) {
  const GpuSpec* a100 = find_gpu("NVIDIA A100-SXM4-40GB");
  for (const Link& l : {Link{LinkClass::self, 0}, Link{LinkClass::unknown, 0}, Link{LinkClass::nvlink, 0}}) {
    const PathCeiling c = expected_path_busbw(a100, l);
    EXPECT_EQ(c.gbps, 0) << to_string(l);
    EXPECT_FALSE(c.basis.empty()) << to_string(l);
  }
}

TEST(PathCeiling, ConsumerBoardsWithoutP2PGetTheHostMemoryFigureOnEveryPcieClass) {
  const GpuSpec* rtx4090 = find_gpu("NVIDIA GeForce RTX 4090");
  ASSERT_NE(rtx4090, nullptr);
  ASSERT_FALSE(rtx4090->pcie_p2p);
  const double shm = 31.508 * 0.5 * 0.91;  // Gen4 x16 staged through host memory
  for (LinkClass cls : {LinkClass::pix, LinkClass::pxb, LinkClass::phb, LinkClass::node, LinkClass::sys}) {
    const PathCeiling c = expected_path_busbw(rtx4090, {cls, 0});
    EXPECT_NEAR(c.gbps, shm, 0.01) << to_string(cls);
    EXPECT_TRUE(contains(c.basis, "no PCIe peer-to-peer")) << c.basis;
  }
  // The same PCIe generation on a workstation board keeps its switch path.
  const GpuSpec* a6000 = find_gpu("NVIDIA RTX A6000");
  EXPECT_NEAR(expected_path_busbw(a6000, {LinkClass::pix, 0}).gbps, 31.508 * 0.91, 0.01);
  EXPECT_GT(expected_path_busbw(a6000, {LinkClass::pix, 0}).gbps,
            expected_path_busbw(rtx4090, {LinkClass::pix, 0}).gbps);
  // The 2080 Ti's bridge is NVLink, untouched by the PCIe rule: 2 links × 25 × 0.80.
  const GpuSpec* ti = find_gpu("GeForce RTX 2080 Ti");
  EXPECT_NEAR(expected_path_busbw(ti, {LinkClass::nvlink, 2}).gbps, 40.0, 1e-9);
  EXPECT_NEAR(expected_path_busbw(ti, {LinkClass::pix, 0}).gbps, 15.754 * 0.5 * 0.91, 0.01);
  // Pascal GeForce allowed P2P: the GTX 1080 Ti keeps the switch figure.
  EXPECT_NEAR(expected_path_busbw(find_gpu("GeForce GTX 1080 Ti"), {LinkClass::pix, 0}).gbps, 15.754 * 0.91,
              0.01);
}

TEST(PathCeiling, UnknownModelsUseStatedAssumptions) {
  const PathCeiling nv = expected_path_busbw(nullptr, {LinkClass::nvlink, 8});
  EXPECT_NEAR(nv.gbps, 160.0, 1e-9);  // 8 × 25 × 0.80
  EXPECT_TRUE(contains(nv.basis, "unknown")) << nv.basis;
  EXPECT_TRUE(contains(nv.basis, "assumed")) << nv.basis;
  const PathCeiling pix = expected_path_busbw(nullptr, {LinkClass::pix, 0});
  EXPECT_NEAR(pix.gbps, 31.508 * 0.91, 0.01);
  EXPECT_TRUE(contains(pix.basis, "Gen4 x16 assumed")) << pix.basis;
  // A known model without NVLink in the table, seen on an NV# path, gets the 25 GB/s assumption, said.
  const PathCeiling l40s = expected_path_busbw(find_gpu("NVIDIA L40S"), {LinkClass::nvlink, 2});
  EXPECT_NEAR(l40s.gbps, 40.0, 1e-9);
  EXPECT_TRUE(contains(l40s.basis, "no NVLink in the table")) << l40s.basis;
  // A superchip has no PCIe link of its own: Gen4 x16 is assumed and said.
  const PathCeiling gh = expected_path_busbw(find_gpu("NVIDIA GH200 480GB"), {LinkClass::sys, 0});
  EXPECT_NEAR(gh.gbps, 31.508 * 0.5 * 0.91, 0.01);
  EXPECT_TRUE(contains(gh.basis, "assumed")) << gh.basis;
}

// ---- networks ----

TEST(Network, TableHoldsEveryGenerationOnce) {
  std::set<std::string_view> names;
  int ib = 0, eth = 0;
  for (const NicSpec& n : nic_table()) {
    EXPECT_TRUE(names.insert(n.name).second) << n.name;
    EXPECT_TRUE(n.kind == "InfiniBand" || n.kind == "Ethernet") << n.kind;
    (n.kind == "InfiniBand" ? ib : eth)++;
    EXPECT_GT(n.data_gbit, 0) << n.name;
    EXPECT_LE(n.data_gbit, n.line_gbit) << n.name;
    EXPECT_FALSE(n.source.empty()) << n.name;
  }
  EXPECT_EQ(ib, 10);  // SDR DDR QDR FDR EDR HDR100 HDR NDR200 NDR XDR
  EXPECT_GE(eth, 8);  // 10 25 40 50 100 200 400 800 (+1G)
}

TEST(Network, FindNicByRate) {
  auto name = [](double rate, bool ib) {
    const NicSpec* n = find_nic(rate, ib);
    return n ? std::string(n->name) : std::string("(none)");
  };
  EXPECT_EQ(name(10, true), "InfiniBand SDR");
  EXPECT_EQ(name(20, true), "InfiniBand DDR");
  EXPECT_EQ(name(40, true), "InfiniBand QDR");
  EXPECT_EQ(name(56, true), "InfiniBand FDR");
  EXPECT_EQ(name(100, true), "InfiniBand EDR");  // not HDR100: the full-width generation
  EXPECT_EQ(name(200, true), "InfiniBand HDR");  // not NDR200
  EXPECT_EQ(name(400, true), "InfiniBand NDR");
  EXPECT_EQ(name(800, true), "InfiniBand XDR");
  EXPECT_EQ(name(100, false), "Ethernet 100G");
  EXPECT_EQ(name(25, false), "Ethernet 25G");
  EXPECT_EQ(name(400, false), "Ethernet 400G");
  EXPECT_EQ(name(399.9, false), "Ethernet 400G");  // within 1 %
  EXPECT_EQ(name(56, false), "(none)");
  EXPECT_EQ(name(123, true), "(none)");
  EXPECT_EQ(name(0, true), "(none)");
  EXPECT_EQ(name(-100, false), "(none)");
  EXPECT_NEAR(find_nic(40, true)->data_gbit, 32, 1e-9);  // 8b/10b
  EXPECT_NEAR(find_nic(56, true)->data_gbit, 54.545, 1e-3);  // 64b/66b
}

TEST(Network, TwelveGBPerHundredGbPort) {
  // NCCL's maintainers: about 12 GB/s busbw per 100 Gb/s NIC, 24 per HDR, 48 per NDR (nccl-tests#119).
  EXPECT_NEAR(nic_busbw_gbps(100), 12.0, 1e-9);
  EXPECT_NEAR(nic_busbw_gbps(200), 24.0, 1e-9);
  EXPECT_NEAR(nic_busbw_gbps(400), 48.0, 1e-9);
  EXPECT_EQ(nic_busbw_gbps(0), 0);
  EXPECT_EQ(nic_busbw_gbps(-5), 0);
  // The case: 4 × HDR per node plateau at 96.45–96.69 GB/s busbw (corpus cases/nccl-tests119-*).
  const PathCeiling four_hdr = expected_network_busbw(4, 200);
  EXPECT_NEAR(four_hdr.gbps, 96.0, 1e-9);
  EXPECT_NEAR(96.69 / four_hdr.gbps, 1.0, 0.02);
  for (const char* part : {"4 × 200 Gb/s ports", "24.0 GB/s each", "96.0 GB/s"})
    EXPECT_TRUE(contains(four_hdr.basis, part)) << part << " not in: " << four_hdr.basis;
  // From a table class: QDR counts its 32 Gb/s of data.
  const PathCeiling qdr = expected_network_busbw(2, *find_nic(40, true));
  EXPECT_NEAR(qdr.gbps, 2 * 32 / 8.0 * 0.96, 1e-9);
  EXPECT_TRUE(contains(qdr.basis, "InfiniBand QDR")) << qdr.basis;
  // Nothing to go by.
  for (const PathCeiling& none : {expected_network_busbw(0, 200), expected_network_busbw(4, 0)}) {
    EXPECT_EQ(none.gbps, 0);
    EXPECT_FALSE(none.basis.empty());
  }
}

// ---- the shared corpus ----

namespace {

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

// GPU names in one line of text, as the tools in the corpus print them:
//  - nccl-tests device lists: "... device  0 [0x1a] Tesla V100-SXM2-32GB"
//  - PyTorch profiler traces: "name": "Tesla V100-SXM2-32GB", "totalGlobalMem": ...
//  - environment dumps and nvidia-smi -L: "GPU 0,1,2,3: NVIDIA GB200", "GPU 0: NAME (UUID: ...)"
void names_in_line(std::string_view line, std::vector<std::string>& out) {
  for (std::size_t at = line.find("device"); at != std::string_view::npos; at = line.find("device", at + 1)) {
    std::size_t p = at + 6;
    const std::size_t spaces = p;
    while (p < line.size() && line[p] == ' ') ++p;
    if (p == spaces) continue;
    const std::size_t digits = p;
    while (p < line.size() && std::isdigit(static_cast<unsigned char>(line[p]))) ++p;
    if (p == digits) continue;
    while (p < line.size() && line[p] == ' ') ++p;
    if (p >= line.size() || line[p] != '[') continue;
    const std::size_t close = line.find(']', p);
    if (close == std::string_view::npos) continue;
    std::string name = trim(std::string(line.substr(close + 1)));
    if (!name.empty()) out.push_back(name);
  }
  for (std::size_t at = line.find("\"name\""); at != std::string_view::npos; at = line.find("\"name\"", at + 1)) {
    std::size_t p = at + 6;
    while (p < line.size() && (line[p] == ' ' || line[p] == ':')) ++p;
    if (p >= line.size() || line[p] != '"') continue;
    const std::size_t end = line.find('"', p + 1);
    if (end == std::string_view::npos) continue;
    std::size_t q = end + 1;
    while (q < line.size() && (line[q] == ' ' || line[q] == ',')) ++q;
    if (line.substr(q).starts_with("\"totalGlobalMem\"")) out.push_back(std::string(line.substr(p + 1, end - p - 1)));
  }
  if (line.starts_with("GPU ")) {
    std::size_t p = 4;
    while (p < line.size() && (std::isdigit(static_cast<unsigned char>(line[p])) || line[p] == ',')) ++p;
    if (p > 4 && line.substr(p).starts_with(": ")) {
      std::string name(line.substr(p + 2));
      if (const std::size_t uuid = name.find(" (UUID"); uuid != std::string::npos) name.resize(uuid);
      name = trim(name);
      if (!name.empty()) out.push_back(name);
    }
  }
}

// Every spelling the corpus holds, and the entry it must reach ("" = deliberately unknown).
const std::map<std::string, std::string> kCorpusNames = {
    {"AMD Instinct MI300X", ""},               // not an NVIDIA GPU
    {"NVIDIA Graphics Device", ""},            // a pre-release driver's name: says nothing about the model
    {"NVIDIA GeForce GTX 1050 Ti", ""},        // low-end Pascal boards the table does not hold
    {"NVIDIA GeForce GTX 950", ""},            // Maxwell
    {"NVIDIA GeForce GTX 1080", "GeForce GTX 1080"},
    {"GeForce RTX 2080 Ti", "GeForce RTX 2080 Ti"},
    {"NVIDIA GeForce RTX 2080 Ti", "GeForce RTX 2080 Ti"},
    {"NVIDIA GeForce RTX 4090", "GeForce RTX 4090"},
    {"NVIDIA GeForce RTX 5090", "GeForce RTX 5090"},
    {"Tesla T4", "Tesla T4"},
    {"Tesla V100-PCIE-16GB", "Tesla V100 PCIe 16GB"},
    {"Tesla V100-SXM2-16GB", "Tesla V100 SXM2 16GB"},
    {"Tesla V100-SXM2-32GB", "Tesla V100 SXM2 32GB"},
    {"NVIDIA A100-SXM4-40GB", "A100 SXM4 40GB"},
    {"NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"},
    {"NVIDIA A100-PG509-200", "A100 SXM4 40GB"},
    {"NVIDIA H100 80GB HBM3", "H100 SXM5"},
    {"NVIDIA GB200", "GB200"},
    {"NVIDIA GB10", "GB10"},
};

// Names in the gzipped HTA traces (traces/hta/*.json.gz, deviceProperties), which this test cannot unpack
// without zlib: read once with zcat and kept here so they are checked too.
const std::vector<std::string> kGzippedTraceNames = {
    "Tesla V100-SXM2-32GB", "Tesla V100-SXM2-16GB", "NVIDIA A100-SXM4-80GB", "NVIDIA A100-PG509-200"};

}  // namespace

TEST(CorpusNames, NameExtractionReadsEachToolsLayout) {
  std::vector<std::string> names;
  names_in_line("#  Rank  0 Group  0 Pid  21082 on host-b device  3 [0x01] NVIDIA GB200 ", names);
  names_in_line(R"(      "id": 0, "name": "Tesla V100-SXM2-32GB", "totalGlobalMem": 34079899648,)", names);
  names_in_line(R"("name": "ProfilerStep#12", "ph": "X")", names);  // a trace event, not a device
  names_in_line("GPU 0,1,2,3: NVIDIA GB200", names);
  names_in_line("GPU 0: NVIDIA H200 (UUID: GPU-0000)", names);
  names_in_line("GPU0     X      PIX     24-47,72-95     1               N/A", names);  // a topo row
  EXPECT_EQ(names, (std::vector<std::string>{"NVIDIA GB200", "Tesla V100-SXM2-32GB", "NVIDIA GB200", "NVIDIA H200"}));
}

TEST(CorpusNames, EveryGpuNameInTheSharedCorpusIsKnownOrDeliberatelyUnknown) {
  for (const std::string& name : kGzippedTraceNames) {
    ASSERT_TRUE(kCorpusNames.count(name)) << name;
    EXPECT_EQ(model_of(name), kCorpusNames.at(name).empty() ? "(none)" : kCorpusNames.at(name)) << name;
  }
  namespace fs = std::filesystem;
  const fs::path root = SCALESCOPE_SHARED_CORPUS_DIR;
  if (!fs::is_directory(root)) GTEST_SKIP() << "shared corpus not found at " << root << "; names not checked";
  std::map<std::string, std::set<std::string>> found;  // name → files
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file() || entry.path().extension() == ".gz") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::string line;
    while (std::getline(in, line)) {
      std::vector<std::string> names;
      names_in_line(line, names);
      for (const std::string& n : names) found[n].insert(fs::relative(entry.path(), root).string());
    }
  }
  // The corpus holds device lists of a dozen GPU models; finding far fewer means the scan broke.
  EXPECT_GE(found.size(), 12u);
  for (const auto& [name, files] : found) {
    const auto expected = kCorpusNames.find(name);
    if (expected == kCorpusNames.end()) {
      ADD_FAILURE() << "new GPU spelling '" << name << "' in " << *files.begin()
                    << ": add it to kCorpusNames with the entry it must reach (or \"\" if deliberately unknown)";
      continue;
    }
    EXPECT_EQ(model_of(name), expected->second.empty() ? "(none)" : expected->second)
        << name << " (in " << *files.begin() << ")";
  }
}
