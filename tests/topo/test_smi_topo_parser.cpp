// The `nvidia-smi topo -m` parser on small fixtures written for this project: the token grammar, damage people
// paste in, and input it must refuse.

#include <gtest/gtest.h>

#include "core/error.h"
#include "topo/smi_topo_parser.h"
#include "topo_test_util.h"

using namespace scalescope::topo;
using scalescope::topo::testing::cpus;
using scalescope::topo::testing::joined;
using scalescope::topo::testing::link;
using scalescope::topo::testing::mentions;

namespace {

std::vector<std::string> texts(const std::vector<CellToken>& cells) {
  std::vector<std::string> out;
  for (const auto& c : cells) out.push_back(c.text + (c.link ? "" : "*"));
  return out;
}

const char* kFourGpus =
    "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tNV4\tPHB\tSYS\t0-7\t0\t\tN/A\n"
    "GPU1\tNV4\t X \tPHB\tSYS\t0-7\t0\t\tN/A\n"
    "GPU2\tPHB\tPHB\t X \tSYS\t0-7\t0\t\tN/A\n"
    "GPU3\tSYS\tSYS\tSYS\t X \t8-15\t1\t\tN/A\n";

}  // namespace

TEST(CellTokens, MergedLinkTokensSplitByTheGrammar) {
  EXPECT_EQ(texts(split_cell_tokens("SYSSYS")), (std::vector<std::string>{"SYS", "SYS"}));
  EXPECT_EQ(texts(split_cell_tokens("NV18NV18")), (std::vector<std::string>{"NV18", "NV18"}));
  EXPECT_EQ(texts(split_cell_tokens("PIXNODEX")), (std::vector<std::string>{"PIX", "NODE", "X"}));
  EXPECT_EQ(texts(split_cell_tokens("N/ASOC")), (std::vector<std::string>{"N/A", "SOC"}));
  // Not entirely link tokens: one affinity (or unknown) field.
  EXPECT_EQ(texts(split_cell_tokens("0-23,48-71")), (std::vector<std::string>{"0-23,48-71*"}));
  EXPECT_EQ(texts(split_cell_tokens("SYSx")), (std::vector<std::string>{"SYSx*"}));
  EXPECT_EQ(texts(split_cell_tokens("NV")), (std::vector<std::string>{"NV*"}));
}

TEST(CellTokens, LinkTokensMapToClasses) {
  EXPECT_EQ(parse_link_token("X")->cls, LinkClass::self);
  EXPECT_EQ(parse_link_token("NV12")->nvlinks, 12);
  EXPECT_EQ(parse_link_token("SOC")->cls, LinkClass::sys);
  EXPECT_EQ(parse_link_token("N/A")->cls, LinkClass::unknown);
  EXPECT_FALSE(parse_link_token("NV0"));
  EXPECT_EQ(parse_link_token("NV18")->nvlinks, 18);  // NVML_NVLINK_MAX_LINKS: the most any GPU has
  EXPECT_FALSE(parse_link_token("NV19"));            // not 19 × 25 GB/s of expected bandwidth
  EXPECT_FALSE(parse_link_token("NV99"));
  EXPECT_FALSE(parse_link_token("NS"));
  EXPECT_FALSE(parse_link_token("pix"));
}

TEST(SmiTopoParser, ReadsATabTableWithAffinity) {
  auto p = parse_smi_topo(kFourGpus);
  const auto& t = p.topology;
  ASSERT_EQ(t.gpu_count(), 4);
  EXPECT_EQ(link(t, "GPU0", "GPU1"), "NV4");
  EXPECT_EQ(link(t, "GPU2", "GPU0"), "PHB");
  EXPECT_EQ(link(t, "GPU3", "GPU1"), "SYS");
  EXPECT_EQ(link(t, "GPU3", "GPU3"), "X");
  EXPECT_EQ(cpus(t, "GPU3"), "8-15");
  EXPECT_EQ(*t.devices[3].numa, std::vector<int>{1});
  EXPECT_TRUE(p.warnings.empty()) << joined(p.warnings);
}

TEST(SmiTopoParser, IgnoresAnsiEscapesPromptsAndSurroundingText) {
  std::string text = "(base) user@host:~$ nvidia-smi topo -m\n"
                     "\x1b[4m\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\x1b[0m\r\n"
                     "GPU0\t X \tPIX\t0-3\t0\r\n"
                     "GPU1\tPIX\t X \t0-3\t0\r\n"
                     "\r\nLegend:\n  X    = Self\n  PIX  = Connection traversing at most a single PCIe bridge\n"
                     "(base) user@host:~$ \n";
  auto p = parse_smi_topo(text);
  EXPECT_EQ(link(p.topology, "GPU0", "GPU1"), "PIX");
  EXPECT_EQ(cpus(p.topology, "GPU1"), "0-3");
  EXPECT_TRUE(mentions(p.notes, "GPU NUMA ID")) << joined(p.notes);
  EXPECT_TRUE(p.warnings.empty()) << joined(p.warnings);
}

TEST(SmiTopoParser, OldSocTokenAndMergedCells) {
  auto p = parse_smi_topo("        GPU0    GPU1    GPU2    CPU Affinity\n"
                          "GPU0     X      SOCSOC         0-11\n"
                          "GPU1    SOC      X      PHB    0-11\n"
                          "GPU2    SOC     PHB      X     12-23\n");
  EXPECT_EQ(link(p.topology, "GPU0", "GPU2"), "SYS");
  EXPECT_EQ(link(p.topology, "GPU1", "GPU2"), "PHB");
  EXPECT_TRUE(mentions(p.notes, "SOC")) << joined(p.notes);
  EXPECT_TRUE(mentions(p.warnings, "no NUMA Affinity column")) << joined(p.warnings);
}

TEST(SmiTopoParser, NicLegendNamesTheNics) {
  auto p = parse_smi_topo("\tGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
                          "GPU0\t X \tNV8\tPIX\tSYS\t0-47\t0\t\tN/A\n"
                          "GPU1\tNV8\t X \tSYS\tPIX\t48-95\t1\t\tN/A\n"
                          "NIC0\tPIX\tSYS\t X \tSYS\n"
                          "NIC1\tSYS\tPIX\tSYS\t X\n\n"
                          "NIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_1\n");
  const auto& t = p.topology;
  ASSERT_EQ(t.nics().size(), 2u);
  EXPECT_EQ(t.devices[t.find("NIC1")].name, "mlx5_1");
  EXPECT_EQ(link(t, "NIC1", "GPU1"), "PIX");
  EXPECT_TRUE(p.warnings.empty()) << joined(p.warnings);  // NIC rows have no affinity cells: not a cut
}

TEST(SmiTopoParser, CutOffTablesSayWhatIsMissing) {
  // Ends inside GPU2's row, in the middle of a cell, without a final newline.
  auto p = parse_smi_topo("\tGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\n"
                          "GPU0\t X \tNV1\tNV2\t0-7\t0\n"
                          "GPU1\tNV1\t X \tNV2\t0-7\t0\n"
                          "GPU2\tNV2\tNV1");
  const auto& t = p.topology;
  EXPECT_EQ(link(t, "GPU2", "GPU0"), "NV2");
  EXPECT_EQ(link(t, "GPU2", "GPU1"), "NV2");  // "NV1" at the cut may be NV1x: taken from GPU1's row instead
  EXPECT_TRUE(mentions(p.warnings, "row GPU2 cut off after 1 of 5 cells")) << joined(p.warnings);
  EXPECT_TRUE(mentions(p.warnings, "'NV1'")) << joined(p.warnings);
  EXPECT_FALSE(t.devices[2].cpu_affinity);
}

TEST(SmiTopoParser, DisagreeingHalvesAndGarbageCellsAreReported) {
  auto p = parse_smi_topo("GPU0 GPU1 GPU2 CPU Affinity NUMA Affinity\n"
                          "GPU0 X PIX OK 0-3 0\n"
                          "GPU1 PXB X PIX 0-3 0\n"
                          "GPU2 SYS PIX X 0-3 0\n");
  // Two readings of one pair: either may be wrong, so it is unknown, not the first one (findings would build on it).
  EXPECT_EQ(link(p.topology, "GPU0", "GPU1"), "?");
  EXPECT_EQ(link(p.topology, "GPU1", "GPU0"), "?");
  EXPECT_EQ(link(p.topology, "GPU0", "GPU2"), "SYS");  // OK is no link class: taken from GPU2's row
  EXPECT_TRUE(mentions(p.warnings, "GPU0-GPU1 reads PIX in row GPU0 but PXB in row GPU1: read as unknown (?)"))
      << joined(p.warnings);
  EXPECT_TRUE(mentions(p.warnings, "'OK' is no link class")) << joined(p.warnings);
}

TEST(SmiTopoParser, ARowWithACellMissingInsideIsNotReadShifted) {
  // GPU1's row lost its GPU2 cell: read in order, NIC0's PIX would land under GPU3 and its NUMA under the NIC.
  auto p = parse_smi_topo("\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tCPU Affinity\tNUMA Affinity\n"
                          "GPU0\t X \tNV18\tNV18\tNV18\tSYS\t0-47\t0\n"
                          "GPU1\tNV18\t X \tNV18\tPIX\t0-47\t0\n"
                          "GPU2\tNV18\tNV18\t X \tNV18\tSYS\t48-95\t1\n"
                          "GPU3\tNV18\tNV18\tNV18\t X \tSYS\t48-95\t1\n"
                          "NIC0\tSYS\tPIX\tSYS\tSYS\t X \n");
  EXPECT_TRUE(mentions(p.warnings, "row GPU1 has 4 of 5 link cells: which one is missing cannot be told"))
      << joined(p.warnings);
  EXPECT_EQ(link(p.topology, "GPU1", "GPU3"), "NV18");  // from GPU3's row, not the shifted PIX
  EXPECT_EQ(link(p.topology, "GPU1", "NIC0"), "PIX");   // from NIC0's row
  EXPECT_EQ(link(p.topology, "GPU1", "GPU2"), "NV18");
}

TEST(SmiTopoParser, RowsWithoutAHeaderStillRead) {
  auto p = parse_smi_topo("GPU0     X      NV2     0-23\nGPU1    NV2      X      0-23\n");
  EXPECT_EQ(link(p.topology, "GPU0", "GPU1"), "NV2");
  EXPECT_TRUE(mentions(p.warnings, "no header line")) << joined(p.warnings);
}

TEST(SmiTopoParser, RefusesForeignInputWithAClearMessage) {
  for (const char* foreign : {"", "hello world\n", "Legend:\n  X = Self\n", "GPU 0: NVIDIA H100 (UUID: GPU-1)\n",
                              "\x01\x02\x03 binary \xff\xfe"}) {
    try {
      parse_smi_topo(foreign, "file x.txt");
      ADD_FAILURE() << "accepted: " << foreign;
    } catch (const scalescope::core::Error& e) {
      EXPECT_NE(std::string(e.what()).find("no `nvidia-smi topo -m` GPU matrix found in file x.txt"), std::string::npos) << e.what();
      EXPECT_NE(e.remedy().find("--from"), std::string::npos);
    }
  }
}

TEST(SmiTopoParser, AP2pMatrixAloneIsNamedAsSuch) {
  try {
    parse_smi_topo("        GPU0    GPU1\n GPU0   X       OK\n GPU1   OK      X\n\nLegend:\n  OK   = Status Ok\n");
    ADD_FAILURE() << "a topo -p2p matrix was accepted";
  } catch (const scalescope::core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("topo -p2p"), std::string::npos) << e.what();
  }
}

TEST(SmiTopoParser, UnreadableFileIsAnError) {
  EXPECT_THROW(parse_smi_topo_file("/nonexistent/topo.txt"), scalescope::core::Error);
}
