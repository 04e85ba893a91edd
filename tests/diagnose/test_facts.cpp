// Facts: queries by type, provenance excerpts and the JSON form (absent values null, damaged text repaired).

#include <gtest/gtest.h>

#include "facts/facts.h"

using namespace scalescope::diagnose;

TEST(Facts, QueriesReturnEachTypeInOrderWithProvenance) {
  FactSet facts;
  facts.add(GpuSeen{.name = "Tesla T4", .index = 1}, at("log.txt", 5, "  Rank  0 Pid 9 on host-a device  0 [0x86] Tesla T4  "));
  facts.add(Setting{.name = "NCCL_P2P_DISABLE", .value = "1", .origin = "environment"}, at("env.txt", 1, "NCCL_P2P_DISABLE=1"));
  facts.add(GpuSeen{.name = "Tesla T4", .index = 2}, at("log.txt", 6, "x"));
  const auto gpus = facts.of<GpuSeen>();
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].fact.index, 1);
  EXPECT_EQ(gpus[1].fact.index, 2);
  EXPECT_EQ(gpus[0].where.line, 5u);
  EXPECT_EQ(gpus[0].where.excerpt, "Rank  0 Pid 9 on host-a device  0 [0x86] Tesla T4");  // trimmed
  EXPECT_EQ(facts.count<Setting>(), 1u);
  EXPECT_EQ(facts.count<NcclVersion>(), 0u);
  EXPECT_EQ(kind_of(facts.all()[1].value), "setting");
}

TEST(Facts, JsonHasKindFieldsAndProvenanceWithAbsentValuesNull) {
  Fact f{GpuSeen{.name = "NVIDIA H200", .bus_id = std::string("0000:18:00.0")}, at("topo.txt", 3, "GPU0 X NV18")};
  const nlohmann::json j = f;
  EXPECT_EQ(j["kind"], "gpu");
  EXPECT_EQ(j["name"], "NVIDIA H200");
  EXPECT_TRUE(j["index"].is_null());
  EXPECT_EQ(j["bus_id"], "0000:18:00.0");
  EXPECT_EQ(j["source"], "topo.txt");
  EXPECT_EQ(j["line"], 3);
  EXPECT_EQ(j["excerpt"], "GPU0 X NV18");
}

TEST(Facts, InvalidUtf8InInputTextIsRepairedSoDumpNeverThrows) {
  FactSet facts;
  facts.add(Measurement{.quantity = "step time", .unit = "s", .value = 1.5, .dims = {{"label", "bad\xff"}}, .row = "r\xfe"},
            at("t\xff.txt", 2, "row \xff"));
  const nlohmann::json j = facts;
  EXPECT_NO_THROW((void)j.dump());
  EXPECT_EQ(j["facts"][0]["dims"]["label"], "bad\xEF\xBF\xBD");
  EXPECT_EQ(j["facts"][0]["source"], "t\xEF\xBF\xBD.txt");
}

TEST(Facts, LongExcerptsAreCutAtACharacterBoundary) {
  const std::string line(150, 'a');
  const auto p = at("f", 1, line + std::string(100, '\xC3'));  // 100 stray lead bytes repaired to U+FFFD each
  EXPECT_LE(p.excerpt.size(), 200u + 3u);
  EXPECT_EQ(p.excerpt.substr(p.excerpt.size() - 3), "…");
}

TEST(Facts, AppendMovesEveryFact) {
  FactSet a, b;
  a.add(NcclVersion{"2.18.3"}, at("a", 1, "NCCL version 2.18.3"));
  b.add(NcclVersion{"2.21.5"}, at("b", 1, "NCCL version 2.21.5"));
  b.add(P2pSupport{false}, at("b", 2, "intraNodeP2pSupport 0"));
  a.append(std::move(b));
  EXPECT_EQ(a.size(), 3u);
  EXPECT_EQ(a.of<NcclVersion>()[1].fact.version, "2.21.5");
}
