// `scalescope doctor` end to end on CPU ranks: the table, the verdict and the JSON report.

#include <gtest/gtest.h>

#include "cli_runner.h"

using scalescope::testing::read_json;
using scalescope::testing::run_cli;
using scalescope::testing::scratch_dir;

TEST(DoctorCli, TwoRankCpuSweepGivesTableVerdictAndJson) {
  auto dir = scratch_dir("doctor_ok");
  auto out = dir / "d.json";
  auto r = run_cli("doctor --backend cpu --world-sizes 1,2 --model mlp-1m --batch 16 --warmup-rounds 3 --rounds 5 "
                   "--steps-per-round 3 --out " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* column : {"world size", "step ms", "tokens/s", "speedup", "efficiency", "comm ratio", "exposed comm ms",
                             "overlap", "verdict:"})
    EXPECT_NE(r.output.find(column), std::string::npos) << column << "\n" << r.output;
  auto j = read_json(out);
  EXPECT_EQ(j.at("schema"), "scalescope.doctor/1");
  EXPECT_TRUE(j.at("complete").get<bool>());
  ASSERT_EQ(j.at("points").size(), 2u);
  const auto& p1 = j.at("points")[0];
  const auto& p2 = j.at("points")[1];
  EXPECT_DOUBLE_EQ(p1.at("metrics").at("speedup").get<double>(), 1.0);
  // Weak scaling: world size 2 processes twice the tokens per step.
  EXPECT_EQ(p2.at("result").at("tokens_per_step").get<int>(), 2 * p1.at("result").at("tokens_per_step").get<int>());
  const auto& phases = p2.at("result").at("phases");
  EXPECT_GT(phases.at("all_reduce_s").get<double>(), 0.0);
  // CPU ranks compute synchronously, so the host's time issuing a step covers forward, backward and optimizer,
  // and lies within the step; staging a batch on the host waits for nothing.
  const double host_issue = phases.at("host_issue_s"), compute = phases.at("compute_s"), total = phases.at("total_s");
  EXPECT_GE(host_issue, 0.95 * compute) << phases.dump();
  EXPECT_LE(host_issue, total) << phases.dump();
  EXPECT_LT(phases.at("host_stage_s").get<double>(), 0.1 * total) << phases.dump();
  EXPECT_EQ(p2.at("result").at("step_s").at("count").get<int>(), 5);
  EXPECT_EQ(p2.at("result").at("config").at("stream_priority"), "equal");  // the configuration travels with it
  const std::string verdict = j.at("verdict").at("verdict");
  EXPECT_TRUE(verdict == "healthy" || verdict == "watch" || verdict == "investigate") << verdict;
  std::filesystem::remove_all(dir);
}

TEST(DoctorCli, HostWorkBetweenRoundsIsNotCountedInTheNextRound) {
  // Rank 1 reaches the round of steps 4-5 half a second late. Rounds start together after a barrier, so no
  // rank's round absorbs the wait (without it, rank 0's third round measured ≥ 0.25 s per step).
  auto dir = scratch_dir("late_rank");
  auto out = dir / "t.json";
  auto r = run_cli("train --backend cpu --world-size 2 --model mlp-1m --batch 8 --warmup-rounds 0 --rounds 3 "
                   "--steps-per-round 2 -q --internal-fault 1:4:late --out " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  auto rounds = read_json(out).at("round_step_s");
  ASSERT_EQ(rounds.size(), 3u);
  for (const auto& s : rounds) EXPECT_LT(s.get<double>(), 0.2) << rounds.dump();
  std::filesystem::remove_all(dir);
}

TEST(DoctorCli, TrainPrintsThePhaseBreakdown) {
  auto r = run_cli("train --backend cpu --world-size 2 --model mlp-1m --batch 8 --warmup-rounds 1 --rounds 3 "
                   "--steps-per-round 2 -q");
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* phase : {"data wait", "forward", "backward", "exposed communication", "optimizer", "gradient all-reduce",
                            "busbw", "rank"})
    EXPECT_NE(r.output.find(phase), std::string::npos) << phase << "\n" << r.output;
}
