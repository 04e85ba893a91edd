#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "diagnose/verdict.h"

using scalescope::core::Error;
using namespace scalescope::diagnose;

namespace {
using Reasons = std::vector<std::string>;
double below(double x) { return std::nextafter(x, -1.0); }
double above(double x) { return std::nextafter(x, 100.0); }
}  // namespace

TEST(Verdict, SeedThresholds) {
  EXPECT_EQ(kHealthyMaxCommRatio, 0.15);
  EXPECT_EQ(kHealthyMinSpeedupAt2, 1.7);
  EXPECT_EQ(kInvestigateMinCommRatio, 0.30);
  EXPECT_EQ(kInvestigateMaxSpeedupAt2, 1.2);
}

TEST(Verdict, Names) {
  EXPECT_EQ(to_string(Verdict::healthy), "healthy");
  EXPECT_EQ(to_string(Verdict::watch), "watch");
  EXPECT_EQ(to_string(Verdict::investigate), "investigate");
}

TEST(Judge, TwoRanksHealthy) {
  const VerdictFinding f = judge(2, 1.85, 0.10);
  EXPECT_EQ(f.verdict, Verdict::healthy);
  EXPECT_EQ(f.reasons, (Reasons{"comm ratio 10.0 % < 15 %", "speedup 1.85 > 1.7"}));
}

TEST(Judge, TwoRanksInvestigateOnCommRatio) {
  const VerdictFinding f = judge(2, 1.90, 0.341);
  EXPECT_EQ(f.verdict, Verdict::investigate);
  EXPECT_EQ(f.reasons, (Reasons{"comm ratio 34.1 % > 30 %"}));
}

TEST(Judge, TwoRanksInvestigateOnSpeedup) {
  const VerdictFinding f = judge(2, 1.15, 0.05);
  EXPECT_EQ(f.verdict, Verdict::investigate);
  EXPECT_EQ(f.reasons, (Reasons{"speedup 1.15 < 1.2"}));
}

TEST(Judge, InvestigateListsEveryTrigger) {
  const VerdictFinding f = judge(2, 1.05, 0.45);
  EXPECT_EQ(f.verdict, Verdict::investigate);
  EXPECT_EQ(f.reasons, (Reasons{"comm ratio 45.0 % > 30 %", "speedup 1.05 < 1.2"}));
}

TEST(Judge, WatchBetweenThresholds) {
  VerdictFinding f = judge(2, 1.50, 0.10);
  EXPECT_EQ(f.verdict, Verdict::watch);
  EXPECT_EQ(f.reasons, (Reasons{"speedup 1.50 is between 1.2 and 1.7"}));
  f = judge(2, 1.90, 0.20);
  EXPECT_EQ(f.verdict, Verdict::watch);
  EXPECT_EQ(f.reasons, (Reasons{"comm ratio 20.0 % is between 15 % and 30 %"}));
  f = judge(2, 1.50, 0.20);
  EXPECT_EQ(f.verdict, Verdict::watch);
  EXPECT_EQ(f.reasons.size(), 2u);
}

TEST(Judge, BoundariesAreStrictAsTheSeedWrites) {
  // Exactly on a threshold is neither healthy nor investigate.
  EXPECT_EQ(judge(2, 1.90, 0.15).verdict, Verdict::watch);
  EXPECT_EQ(judge(2, 1.90, 0.30).verdict, Verdict::watch);
  EXPECT_EQ(judge(2, 1.7, 0.10).verdict, Verdict::watch);
  EXPECT_EQ(judge(2, 1.2, 0.10).verdict, Verdict::watch);
  // One ulp across each threshold flips the verdict.
  EXPECT_EQ(judge(2, 1.90, below(0.15)).verdict, Verdict::healthy);
  EXPECT_EQ(judge(2, 1.90, above(0.30)).verdict, Verdict::investigate);
  EXPECT_EQ(judge(2, above(1.7), 0.10).verdict, Verdict::healthy);
  EXPECT_EQ(judge(2, below(1.2), 0.10).verdict, Verdict::investigate);
}

TEST(Judge, ZeroCommRatioIsAllowed) { EXPECT_EQ(judge(2, 2.0, 0.0).verdict, Verdict::healthy); }

TEST(Judge, SpeedupThresholdsScaleWithWorldSize) {
  EXPECT_EQ(healthy_min_speedup(2), 1.7);
  EXPECT_EQ(investigate_max_speedup(2), 1.2);
  EXPECT_EQ(healthy_min_speedup(4), 3.4);
  EXPECT_EQ(investigate_max_speedup(4), 2.4);
  EXPECT_EQ(healthy_min_speedup(8), 6.8);
  EXPECT_EQ(investigate_max_speedup(8), 4.8);
  EXPECT_DOUBLE_EQ(healthy_min_speedup(3), 2.55);
  EXPECT_DOUBLE_EQ(investigate_max_speedup(3), 1.8);
  EXPECT_THROW(healthy_min_speedup(1), Error);
  EXPECT_THROW(investigate_max_speedup(0), Error);
}

TEST(Judge, FourRanksUseScaledSpeedupThresholds) {
  VerdictFinding f = judge(4, 3.5, 0.10);
  EXPECT_EQ(f.verdict, Verdict::healthy);
  EXPECT_EQ(f.reasons, (Reasons{"comm ratio 10.0 % < 15 %", "speedup 3.50 > 3.4 (0.85·N)"}));
  // 1.9 would be healthy at N = 2 but is only 47 % efficient at N = 4.
  f = judge(4, 1.9, 0.10);
  EXPECT_EQ(f.verdict, Verdict::investigate);
  EXPECT_EQ(f.reasons, (Reasons{"speedup 1.90 < 2.4 (0.6·N)"}));
  f = judge(4, 3.0, 0.10);
  EXPECT_EQ(f.verdict, Verdict::watch);
  EXPECT_EQ(f.reasons, (Reasons{"speedup 3.00 is between 2.4 (0.6·N) and 3.4 (0.85·N)"}));
  EXPECT_EQ(judge(4, 3.4, 0.10).verdict, Verdict::watch);
  EXPECT_EQ(judge(4, 2.4, 0.10).verdict, Verdict::watch);
  EXPECT_EQ(judge(4, below(2.4), 0.10).verdict, Verdict::investigate);
  // The comm-ratio thresholds do not scale.
  EXPECT_EQ(judge(4, 3.9, 0.31).verdict, Verdict::investigate);
  EXPECT_EQ(judge(8, 7.9, 0.20).verdict, Verdict::watch);
}

TEST(Judge, RejectsBadInput) {
  EXPECT_THROW(judge(1, 1.0, 0.0), Error);
  EXPECT_THROW(judge(0, 1.0, 0.0), Error);
  EXPECT_THROW(judge(-2, 1.5, 0.1), Error);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {0.0, -1.0, nan, inf}) EXPECT_THROW(judge(2, bad, 0.1), Error) << bad;
  for (double bad : {-0.01, nan, inf}) EXPECT_THROW(judge(2, 1.8, bad), Error) << bad;
  try {
    judge(1, 1.0, 0.0);
    ADD_FAILURE() << "expected core::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("world size 1"), std::string::npos) << e.what();
  }
}

TEST(JudgeOverall, PicksTheWorstAndKeepsItsReasons) {
  const std::vector<std::pair<int, VerdictFinding>> findings{
      {8, judge(8, 3.0, 0.35)}, {2, judge(2, 1.85, 0.10)}, {4, judge(4, 3.0, 0.10)}};
  const VerdictFinding f = judge_overall(findings);
  EXPECT_EQ(f.verdict, Verdict::investigate);
  EXPECT_EQ(f.reasons, (Reasons{"N=8: comm ratio 35.0 % > 30 %", "N=8: speedup 3.00 < 4.8 (0.6·N)"}));
}

TEST(JudgeOverall, TiesKeepReasonsOfEveryWorstWorldSizeInIncreasingOrder) {
  const std::vector<std::pair<int, VerdictFinding>> findings{
      {4, judge(4, 3.0, 0.10)}, {2, judge(2, 1.85, 0.10)}, {3, judge(3, 2.0, 0.10)}};
  const VerdictFinding f = judge_overall(findings);
  EXPECT_EQ(f.verdict, Verdict::watch);
  ASSERT_EQ(f.reasons.size(), 2u);
  EXPECT_EQ(f.reasons[0].rfind("N=3: ", 0), 0u) << f.reasons[0];
  EXPECT_EQ(f.reasons[1].rfind("N=4: ", 0), 0u) << f.reasons[1];
}

TEST(JudgeOverall, AllHealthy) {
  const std::vector<std::pair<int, VerdictFinding>> findings{{2, judge(2, 1.9, 0.05)}, {4, judge(4, 3.7, 0.08)}};
  const VerdictFinding f = judge_overall(findings);
  EXPECT_EQ(f.verdict, Verdict::healthy);
  EXPECT_EQ(f.reasons.size(), 4u);
}

TEST(JudgeOverall, RejectsEmptyDuplicateAndSingleRank) {
  EXPECT_THROW(judge_overall({}), Error);
  const std::vector<std::pair<int, VerdictFinding>> dup{{2, judge(2, 1.9, 0.05)}, {2, judge(2, 1.5, 0.05)}};
  EXPECT_THROW(judge_overall(dup), Error);
  const std::vector<std::pair<int, VerdictFinding>> one{{1, VerdictFinding{}}};
  EXPECT_THROW(judge_overall(one), Error);
}

TEST(Verdict, Json) {
  const nlohmann::json j = judge(2, 1.90, 0.341);
  EXPECT_EQ(j.at("verdict").get<std::string>(), "investigate");
  EXPECT_EQ(j.at("reasons").get<Reasons>(), (Reasons{"comm ratio 34.1 % > 30 %"}));
  EXPECT_EQ(nlohmann::json(Verdict::watch).get<std::string>(), "watch");
}

TEST(Verdict, FiguresNearAThresholdAreNamed) {
  // The CPU doctor of RESULTS: comm ratio 31.0 % (within 10 % of 30 %: investigate ↔ watch). Its speedup 1.62
  // is within 10 % of 1.7 too, but crossing it would not change the verdict (the comm ratio keeps it out of
  // healthy), so it is not named.
  EXPECT_EQ(near_thresholds(2, 1.62, 0.310), (Reasons{"comm ratio 31.0 % is within 10 % of the 30 % threshold"}));
  // Watch only because of a comm ratio just above 15 %: that figure is named, the speedup (already healthy) not.
  EXPECT_EQ(near_thresholds(2, 1.75, 0.16), (Reasons{"comm ratio 16.0 % is within 10 % of the 15 % threshold"}));
  // Healthy by a small margin on both: either could tip it to watch.
  EXPECT_EQ(near_thresholds(2, 1.8, 0.14), (Reasons{"comm ratio 14.0 % is within 10 % of the 15 % threshold",
                                                    "speedup 1.80 is within 10 % of the 1.7 threshold"}));
  // Watch with both just short of healthy: crossing either alone still leaves watch, so neither is named.
  EXPECT_TRUE(near_thresholds(2, 1.65, 0.16).empty());
  // Investigate by the comm ratio far above 30 %: a speedup near 1.7 changes nothing.
  EXPECT_TRUE(near_thresholds(2, 1.63, 0.353).empty());
  // Clear of every threshold: 2 × H200 gpt2-124m (speedup 1.90, comm ratio 10.1 %) — 10.1 % is 33 % below 15 %.
  EXPECT_TRUE(near_thresholds(2, 1.90, 0.101).empty());
  // At N = 4 the speedup thresholds scale: 2.4 and 3.4.
  EXPECT_EQ(near_thresholds(4, 2.3, 0.05), (Reasons{"speedup 2.30 is within 10 % of the 2.4 threshold"}));
  EXPECT_THROW(near_thresholds(1, 1.0, 0.1), Error);
  EXPECT_THROW(near_thresholds(2, -1.0, 0.1), Error);
}
