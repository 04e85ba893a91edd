// The train report's workload line and the result file say whether the step was replayed from a CUDA graph, and
// how many timed steps really were (a short warm-up leaves the first timed steps eager or captured), and whether
// the optimizer overlapped the last bucket's all-reduce (--overlap-optimizer; idle with one bucket or one rank).

#include <gtest/gtest.h>

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "report/reports.h"
#include "core/error.h"
#include "train/job.h"

namespace scalescope {
namespace {

train::TrainResult graph_result(int replayed) {
  train::TrainResult r;
  r.config.backend = train::BackendKind::gpu;
  r.config.model = train::ModelSpec::from_preset("tiny-14m", {});
  r.config.cuda_graph = true;
  r.config.protocol.timed_rounds = 5;
  r.config.protocol.steps_per_round = 10;
  r.replayed_timed_steps = replayed;
  return r;
}

TEST(TrainReport, SaysHowManyTimedStepsWereReplayed) {
  const std::string all = report::render_train_result(graph_result(50));
  EXPECT_NE(all.find(", CUDA graph (50 of 50 timed steps replayed)"), std::string::npos) << all;
  const std::string some = report::render_train_result(graph_result(48));
  EXPECT_NE(some.find("(48 of 50 timed steps replayed)"), std::string::npos) << some;
  train::TrainResult eager = graph_result(0);
  eager.config.cuda_graph = false;
  EXPECT_EQ(report::render_train_result(eager).find("CUDA graph"), std::string::npos);
}

TEST(TrainReport, SaysWhetherTheOptimizerOverlapTookEffect) {
  train::TrainResult r = graph_result(0);
  r.config.cuda_graph = false;
  r.config.world_size = 2;
  r.bucket_bytes = {1u << 20, 154'533'888};
  const std::string off = report::render_train_result(r);
  EXPECT_EQ(off.find("optimizer overlapped"), std::string::npos) << off;
  EXPECT_EQ(off.find("--overlap-optimizer"), std::string::npos) << off;
  r.config.engine.overlap_optimizer = true;
  EXPECT_NE(report::render_train_result(r).find(", optimizer overlapped with the last bucket"), std::string::npos);
  r.bucket_bytes = {154'533'888};
  EXPECT_NE(report::render_train_result(r).find("--overlap-optimizer idle (one bucket"), std::string::npos);
  r.bucket_bytes = {1u << 20, 154'533'888};
  r.config.world_size = 1;
  EXPECT_NE(report::render_train_result(r).find("--overlap-optimizer idle (one rank"), std::string::npos);
}

TEST(TrainReport, ResultFilesKeepTheReplayCountAndOlderOnesLoad) {
  nlohmann::json j = graph_result(47);
  EXPECT_EQ(j.at("config").at("cuda_graph"), true);
  const auto back = j.get<train::TrainResult>();
  EXPECT_TRUE(back.config.cuda_graph);
  EXPECT_EQ(back.replayed_timed_steps, 47);
  j.erase("replayed_timed_steps");  // written before --cuda-graph existed
  j.at("config").erase("cuda_graph");
  const auto old = j.get<train::TrainResult>();
  EXPECT_FALSE(old.config.cuda_graph);
  EXPECT_EQ(old.replayed_timed_steps, 0);
}

TEST(TrainReport, ResultFilesKeepTheOptimizerOverlapAndOlderOnesLoad) {
  train::TrainResult r = graph_result(0);
  r.config.cuda_graph = false;
  r.config.engine.overlap_optimizer = true;
  nlohmann::json j = r;
  EXPECT_EQ(j.at("config").at("overlap_optimizer"), true);
  EXPECT_TRUE(j.get<train::TrainResult>().config.engine.overlap_optimizer);
  j.at("config").erase("overlap_optimizer");  // written before --overlap-optimizer existed
  EXPECT_FALSE(j.get<train::TrainResult>().config.engine.overlap_optimizer);
}

TEST(TrainReport, SaysHowTheTiedEmbeddingWasExchanged) {
  train::TrainResult r = graph_result(0);
  r.config.cuda_graph = false;
  r.config.world_size = 2;
  r.bucket_bytes = {154'533'888, 1u << 20};
  r.embedding_all_gathered = true;
  r.phases.all_gather_count = 2;
  r.phases.all_gather_bytes = 25'231'360;
  r.phases.all_gather_seconds = 0.00016;
  const std::string gathered = report::render_train_result(r);
  EXPECT_NE(gathered.find(", tied embedding all-gathered"), std::string::npos) << gathered;
  EXPECT_NE(gathered.find("all-gathered: 2 per step, 25.2 MB from each rank, 0.16 ms per step"), std::string::npos) << gathered;
  r.embedding_all_gathered = false;
  r.phases.all_gather_count = 0;
  const std::string reduced = report::render_train_result(r);
  EXPECT_NE(reduced.find(", tied embedding all-reduced"), std::string::npos) << reduced;
  EXPECT_EQ(reduced.find("all-gathered:"), std::string::npos) << reduced;
  r.config.world_size = 1;  // nothing is exchanged at one rank
  EXPECT_EQ(report::render_train_result(r).find("tied embedding"), std::string::npos);
  r.config.model = train::ModelSpec::from_preset("mlp-1m", {});
  r.config.world_size = 2;
  EXPECT_EQ(report::render_train_result(r).find("tied embedding"), std::string::npos) << "an MLP ties nothing";
}

TEST(TrainReport, ResultFilesKeepTheEmbeddingExchangeAndOlderOnesLoad) {
  train::TrainResult r = graph_result(0);
  r.config.engine.embedding_exchange = train::EmbeddingExchange::automatic;
  r.embedding_all_gathered = true;
  r.phases.all_gather_seconds = 0.00017;
  r.phases.all_gather_count = 2;
  r.phases.all_gather_bytes = 25'231'360;
  nlohmann::json j = r;
  EXPECT_EQ(j.at("config").at("embedding_exchange"), "auto");
  const auto back = j.get<train::TrainResult>();
  EXPECT_EQ(back.config.engine.embedding_exchange, train::EmbeddingExchange::automatic);
  EXPECT_TRUE(back.embedding_all_gathered);
  EXPECT_DOUBLE_EQ(back.phases.all_gather_seconds, 0.00017);
  EXPECT_EQ(back.phases.all_gather_count, 2);
  EXPECT_EQ(back.phases.all_gather_bytes, 25'231'360u);
  // Written before the option: the embedding was all-reduced whole, no all-gathers.
  j.at("config").erase("embedding_exchange");
  j.erase("embedding_all_gathered");
  for (auto key : {"all_gather_s", "all_gather_count", "all_gather_bytes"}) j.at("phases").erase(key);
  const auto old = j.get<train::TrainResult>();
  EXPECT_EQ(old.config.engine.embedding_exchange, train::EmbeddingExchange::all_reduce);
  EXPECT_FALSE(old.embedding_all_gathered);
  EXPECT_EQ(old.phases.all_gather_count, 0);
  EXPECT_DOUBLE_EQ(old.phases.all_gather_seconds, 0.0);
}

TEST(TrainReport, ResultFilesSayWhichAttentionRanAndOlderOnesLoad) {
  train::TrainResult r = graph_result(0);  // tiny-14m on GPU ranks: head width 26 takes the GEMM path
  EXPECT_EQ(nlohmann::json(r).at("config").at("attention"), "gemm");
  r.config.model = train::ModelSpec::from_preset("gpt2-124m", {});
  nlohmann::json j = r;
  // Default: cuDNN's fused attention where this build has it, else the project's own kernels.
  const bool cudnn = train::gpt_kernels::cudnn_attention_built();
  EXPECT_EQ(j.at("config").at("attention"), cudnn ? "cudnn" : "flash");
  EXPECT_EQ(j.at("config").at("model").at("gpt").at("flash_attention"), true);
  EXPECT_EQ(j.at("config").at("model").at("gpt").at("fused_attention"), "automatic");
  train::ModelOverrides own;
  own.attention = "flash";
  r.config.model = train::ModelSpec::from_preset("gpt2-124m", own);
  j = r;
  EXPECT_EQ(j.at("config").at("attention"), "flash");
  EXPECT_EQ(j.get<train::TrainResult>().config.model.gpt.fused_attention, train::FusedAttention::flash)
      << "the request survives a round trip";
  train::ModelOverrides cudnn_request;
  cudnn_request.attention = "cudnn";
  if (cudnn) {
    r.config.model = train::ModelSpec::from_preset("gpt2-124m", cudnn_request);
    j = r;
    EXPECT_EQ(j.at("config").at("attention"), "cudnn");
  } else {
    EXPECT_THROW(train::ModelSpec::from_preset("gpt2-124m", cudnn_request), core::UsageError);
  }
  j.at("config").at("model").at("gpt")["fused_attention"] = "bogus";  // a damaged file: named, not read as a default
  EXPECT_THROW(j.get<train::TrainResult>(), std::invalid_argument);
  j.at("config").at("model").at("gpt").erase("fused_attention");  // written before the option: automatic
  EXPECT_EQ(j.get<train::TrainResult>().config.model.gpt.fused_attention, train::FusedAttention::automatic);
  train::ModelOverrides gemm;
  gemm.attention = "gemm";
  r.config.model = train::ModelSpec::from_preset("gpt2-124m", gemm);
  j = r;
  EXPECT_EQ(j.at("config").at("attention"), "gemm");
  EXPECT_FALSE(j.get<train::TrainResult>().config.model.gpt.flash_attention) << "the request survives a round trip";
  r.config.backend = train::BackendKind::cpu;
  r.config.model = train::ModelSpec::from_preset("gpt2-124m", {});
  EXPECT_EQ(nlohmann::json(r).at("config").at("attention"), "cpu-reference");
  r.config.model = train::ModelSpec::from_preset("mlp-1m", {});
  EXPECT_EQ(nlohmann::json(r).at("config").at("attention"), "none");
  // A description written before the option loads with today's default, so a CPU job read back is not refused
  // for an --attention gemm nobody asked for.
  r.config.model = train::ModelSpec::from_preset("tiny-14m", {});
  r.config.cuda_graph = false;  // graph_result's; CPU ranks refuse it
  j = r;
  j.at("config").at("model").at("gpt").erase("flash_attention");
  j.at("config").erase("attention");
  const auto old = j.get<train::TrainResult>();
  EXPECT_TRUE(old.config.model.gpt.flash_attention);
  EXPECT_NO_THROW(old.config.validate());
}

}  // namespace
}  // namespace scalescope
