// CPU lists, NUMA lists and link-class ordering of the topology model.

#include <gtest/gtest.h>

#include "topo/topology.h"

using namespace scalescope::topo;

TEST(CpuSet, ParsesLinuxCpuLists) {
  EXPECT_EQ(CpuSet::parse("0-51,104-155")->count(), 104);
  EXPECT_EQ(CpuSet::parse("0,3-9,11-17")->to_string(), "0,3-9,11-17");
  EXPECT_EQ(CpuSet::parse("7")->to_string(), "7");
  // Unsorted, overlapping and adjacent ranges merge.
  EXPECT_EQ(CpuSet::parse("8-15,0-7,4-5")->to_string(), "0-15");
}

TEST(CpuSet, RejectsWhatIsNoCpuList) {
  for (const char* bad : {"", "N/A", "3-1", "0-", "-3", "0,,1", "a-b", "0-99999", "1 2", "0-3,", "+1"})
    EXPECT_FALSE(CpuSet::parse(bad)) << bad;
}

TEST(NumaList, ParsesListsAndRejectsNA) {
  EXPECT_EQ(*parse_numa_list("1,19-21"), (std::vector<int>{1, 19, 20, 21}));
  EXPECT_EQ(*parse_numa_list("0"), std::vector<int>{0});
  EXPECT_FALSE(parse_numa_list("N/A"));
  EXPECT_FALSE(parse_numa_list("5000"));
}

TEST(LinkClass, QualityOrdersPathsBestFirst) {
  const Link order[] = {{LinkClass::nvlink, 18}, {LinkClass::nvlink, 2}, {LinkClass::pix, 0}, {LinkClass::pxb, 0},
                        {LinkClass::phb, 0},     {LinkClass::node, 0},   {LinkClass::sys, 0}, {LinkClass::unknown, 0}};
  for (std::size_t i = 0; i + 1 < std::size(order); ++i)
    EXPECT_GT(quality(order[i]), quality(order[i + 1])) << to_string(order[i]) << " vs " << to_string(order[i + 1]);
  EXPECT_TRUE(crosses_host({LinkClass::phb, 0}));
  EXPECT_FALSE(crosses_host({LinkClass::pxb, 0}));
  EXPECT_EQ(to_string(Link{LinkClass::nvlink, 12}), "NV12");
  EXPECT_EQ(to_string(Link{}), "?");
}
