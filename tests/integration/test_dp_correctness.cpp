// Data-parallel correctness (issue #2, item 7): N ranks at global batch B follow the same loss sequence as
// one rank at batch B, because every rank takes its slice of the same global batch and gradients are
// averaged. fp32 on CPU ranks: relative difference < 1e-5 over 20 steps. A wrong average must fail.

#include <gtest/gtest.h>

#include <cmath>

#include "cli_runner.h"

using scalescope::testing::read_json;
using scalescope::testing::run_cli;
using scalescope::testing::scratch_dir;

namespace {

constexpr double kFp32Tolerance = 1e-5;

struct Trace {
  std::vector<double> losses;          // every step
  std::vector<double> gradient_norms;  // averaged gradient after the last step of each round
  bool overlap_optimizer = false;      // as the result file says the ranks ran
  std::size_t buckets = 0;
  bool embedding_all_gathered = false;  // as the result file says the ranks ran
};

/// 20 steps (2 rounds of 10, no warm-up) of a small model at global batch 8, strong scaling.
Trace trace(int world_size, const std::string& extra = "", const std::string& model = "--model mlp-1m --batch 8") {
  auto dir = scratch_dir("dp" + std::to_string(world_size));
  auto out = dir / "r.json";
  auto r = run_cli("train --backend cpu --world-size " + std::to_string(world_size) +
                   " --strong " + model + " --warmup-rounds 0 --rounds 2 --steps-per-round 10 -q --out " +
                   out.string() + " " + extra);
  EXPECT_EQ(r.status, 0) << r.output;
  if (r.status != 0) return {};
  auto j = read_json(out);
  std::filesystem::remove_all(dir);
  EXPECT_LT(j.at("replica_gradient_spread").get<double>(), 1e-6) << "replicas disagree";
  return {j.at("losses").get<std::vector<double>>(), j.at("gradient_norms").get<std::vector<double>>(),
          j.at("config").at("overlap_optimizer").get<bool>(), j.at("bucket_bytes").size(),
          j.at("embedding_all_gathered").get<bool>()};
}

double max_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]) / std::abs(b[i]));
  return worst;
}

/// Both the loss sequence and the gradient norms match within the fp32 budget.
bool matches(const Trace& a, const Trace& b, std::string& why) {
  if (a.losses.size() != b.losses.size() || a.gradient_norms.size() != b.gradient_norms.size()) {
    why = "different lengths";
    return false;
  }
  double dl = max_relative_difference(a.losses, b.losses), dg = max_relative_difference(a.gradient_norms, b.gradient_norms);
  why = "loss diff " + std::to_string(dl) + ", gradient-norm diff " + std::to_string(dg);
  return dl < kFp32Tolerance && dg < kFp32Tolerance;
}

}  // namespace

TEST(DataParallelCorrectness, TwoAndFourRanksMatchOneRankOver20Steps) {
  const auto one = trace(1);
  ASSERT_EQ(one.losses.size(), 20u);
  ASSERT_EQ(one.gradient_norms.size(), 2u);
  EXPECT_LT(one.losses.back(), one.losses.front()) << "training on real text should lower the loss";
  for (int n : {2, 4}) {
    std::string why;
    EXPECT_TRUE(matches(trace(n), one, why)) << "world size " << n << ": " << why;
  }
}

TEST(DataParallelCorrectness, WrongAverageIsCaught) {
  // Summing instead of averaging doubles every gradient. Adam divides that factor out of its update (all
  // but ε), so the losses barely move — the gradient norms are what must leave the tolerance.
  const auto one = trace(1);
  const auto wrong = trace(2, "--internal-gradient-reduction sum");
  std::string why;
  EXPECT_FALSE(matches(wrong, one, why)) << why;
  ASSERT_EQ(wrong.gradient_norms.size(), one.gradient_norms.size());
  ASSERT_FALSE(one.gradient_norms.empty());
  EXPECT_NEAR(wrong.gradient_norms[0] / one.gradient_norms[0], 2.0, 1e-3);
}

TEST(DataParallelCorrectness, OverlapOffGivesTheSameLossesAndGradients) {
  std::string why;
  EXPECT_TRUE(matches(trace(2, "--no-overlap"), trace(2), why)) << why;
}

TEST(DataParallelCorrectness, OverlappedOptimizerGivesTheSameLossesAndGradients) {
  // AdamW is element-wise and each parameter counts its own steps: updating the parameters outside the last
  // bucket first, then the last bucket's, is the same arithmetic, bit for bit (mlp-1m: 4 MB in 2 buckets).
  const auto split = trace(2, "--overlap-optimizer"), whole = trace(2);
  ASSERT_EQ(split.losses.size(), 20u);
  EXPECT_TRUE(split.overlap_optimizer) << "the ranks must have run with the option";
  EXPECT_GE(split.buckets, 2u) << "one bucket leaves nothing to split";
  EXPECT_EQ(split.losses, whole.losses);
  EXPECT_EQ(split.gradient_norms, whole.gradient_norms);
}

TEST(DataParallelCorrectness, GptDecoderOnTwoRanksMatchesOneRank) {
  // The GPT decoder through the same engine: one block of tiny-14m, 16-token context, global batch 4.
  const std::string gpt = "--model tiny-14m --layers 1 --seq 16 --batch 4";
  const auto one = trace(1, "", gpt);
  ASSERT_EQ(one.losses.size(), 20u);
  EXPECT_LT(one.losses.back(), one.losses.front());
  std::string why;
  EXPECT_TRUE(matches(trace(2, "", gpt), one, why)) << why;
}

TEST(DataParallelCorrectness, GptEmbeddingAllGatherAndAllReduceBothMatchOneRank) {
  // The tied embedding's gradient either all-reduced whole at the end (DDP) or its head part all-reduced early
  // and every rank's input-side rows all-gathered and scattered by each rank: the same sums in another order.
  const std::string gpt = "--model tiny-14m --layers 1 --seq 16 --batch 4";
  const auto one = trace(1, "", gpt);
  const auto gathered = trace(2, "--embedding-exchange all-gather", gpt);
  const auto reduced = trace(2, "--embedding-exchange all-reduce", gpt);
  EXPECT_TRUE(gathered.embedding_all_gathered);
  EXPECT_FALSE(reduced.embedding_all_gathered);
  EXPECT_FALSE(one.embedding_all_gathered) << "one rank has nothing to gather";
  // auto: 2 rows × 20 KB per rank against a 38 MB table: all-gather.
  EXPECT_TRUE(trace(2, "", gpt).embedding_all_gathered);
  std::string why;
  EXPECT_TRUE(matches(gathered, one, why)) << "all-gather: " << why;
  EXPECT_TRUE(matches(reduced, one, why)) << "all-reduce: " << why;
  // Four ranks of one row each: the gathered rows come from every rank in rank order.
  EXPECT_TRUE(matches(trace(4, "--embedding-exchange all-gather", gpt), one, why)) << "4 ranks: " << why;
}
