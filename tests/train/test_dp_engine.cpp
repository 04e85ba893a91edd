// DataParallelEngine's step replay (train/step_replay.h) and optimizer overlap, with a model, communicator,
// timeline and replayer that only log what the engine asks of them: when it captures, that a replayed step
// repeats exactly the timeline markers and all-reduce starts of the captured one in the same order (the CUDA
// graph binds its timing events by that order), that it issues no model work while replaying, that a new batch
// shape starts over; and that the overlapped optimizer updates the early buckets' parameters between the wait
// for them and the wait for the last bucket, with the phases timed around both waits.

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.h"
#include "train/dp_engine.h"

namespace scalescope::train {
namespace {

using Log = std::vector<std::string>;

class LoggingTimeline final : public Timeline {
 public:
  explicit LoggingTimeline(Log& log) : log_(log) {}
  Marker record() override {
    log_.push_back("marker");
    return next_++;
  }
  double seconds_between(Marker from, Marker to) override { return 1e-3 * (to - from); }
  void synchronize() override {}
  void clear() override { next_ = 0; }
  bool is_device_time() const override { return true; }

 private:
  Log& log_;
  Marker next_ = 0;
};

class LoggingCommunicator final : public comm::Communicator {
 public:
  explicit LoggingCommunicator(Log& log) : log_(log) {}
  std::string backend() const override { return "logging"; }
  const comm::RankInfo& rank_info() const override { return info_; }
  void start_all_reduce(float*, std::size_t count, comm::ReduceOp) override {
    log_.push_back("all-reduce " + std::to_string(count));
    counts_.push_back(count);
  }
  void start_all_gather(const void*, void*, std::size_t bytes) override {
    log_.push_back("all-gather " + std::to_string(bytes));
    gathers_.push_back(counts_.size());
    counts_.push_back(bytes);
  }
  void join() override { log_.push_back("join"); }
  void join_until(std::size_t pending) override { log_.push_back("join until " + std::to_string(pending)); }
  std::vector<comm::CollectiveTiming> take_timings() override {
    std::vector<comm::CollectiveTiming> out;
    for (std::size_t i = 0; i < counts_.size(); ++i) {
      const bool gather = std::find(gathers_.begin(), gathers_.end(), i) != gathers_.end();
      out.push_back(gather ? comm::CollectiveTiming{counts_[i], 2e-4, comm::CollectiveKind::all_gather}
                           : comm::CollectiveTiming{counts_[i] * sizeof(float), 1e-4});
    }
    counts_.clear();
    gathers_.clear();
    return out;
  }
  void broadcast(float*, std::size_t, int) override {}
  std::vector<double> all_gather_host(const std::vector<double>& v) override { return v; }
  void barrier() override {}

 private:
  Log& log_;
  comm::RankInfo info_{0, 2, 0};
  std::vector<std::size_t> counts_;   // all-reduce elements or all-gather bytes, in start order
  std::vector<std::size_t> gathers_;  // which of counts_ are all-gathers
};

/// Three parameters of 1000, 2000 and 3000 floats: with 8 KB buckets, one bucket each, in backward order.
/// With `tied`, p0 and p1 play a GPT's token and position tables (Model::embedding_gather).
class LoggingModel final : public Model {
 public:
  LoggingModel(Log& log, bool replayable, bool tied = false) : log_(log), replayable_(replayable), tied_(tied) {}
  std::string describe() const override { return "logging model"; }
  const std::vector<ParameterInfo>& parameters() const override { return params_; }
  double flops_per_token() const override { return 1; }
  int row_tokens() const override { return 5; }
  int predictions_per_row() const override { return 4; }
  float* allocate_gradients(const std::vector<std::size_t>&, std::size_t total) override {
    grads_.assign(total, 0.0f);
    return grads_.data();
  }
  float* flat_parameters() override { return nullptr; }
  void parameters_changed() override {}
  void stage_batch(const TokenBatchView& b) override { log_.push_back("stage " + std::to_string(b.rows)); }
  void forward() override { log_.push_back("forward"); }
  void backward(const std::function<void(std::size_t)>& ready) override {
    log_.push_back("backward");
    if (gather_world_ > 1) ready(0);  // the head's part first; p1 comes from the gathered rows
    for (std::size_t p = params_.size(); p-- > 0;)
      if (gather_world_ < 2 || p > 1) ready(p);
  }
  std::optional<EmbeddingGather> embedding_gather() const override {
    if (!tied_) return std::nullopt;
    return EmbeddingGather{0, 1, 100, 3000 * sizeof(float)};
  }
  void gather_embedding_gradient(int world_size) override {
    log_.push_back("gather over " + std::to_string(world_size));
    gather_world_ = world_size;
  }
  EmbeddingGatherBuffers embedding_gather_buffers() override {
    return {&scratch_[0], &scratch_[1], 20, &scratch_[2], &scratch_[3], 80};
  }
  void apply_gathered_embedding_gradient() override { log_.push_back("apply gathered"); }
  void optimizer_step_part(const AdamWConfig&, ParameterRange part) override {
    log_.push_back(part.first == 0 && part.end == params_.size()
                       ? std::string("optimizer")
                       : "optimizer [" + std::to_string(part.first) + ", " + std::to_string(part.end) + ")");
  }
  std::vector<float> take_losses() override { return {}; }
  std::vector<float> parameters_to_host() override { return {}; }
  std::vector<float> gradients_to_host() override { return grads_; }
  bool replayable() const override { return replayable_; }
  void log_replayed_loss() override { log_.push_back("log loss"); }

 private:
  Log& log_;
  bool replayable_;
  bool tied_;
  int gather_world_ = 0;
  int scratch_[4] = {};
  std::vector<ParameterInfo> params_{{"p0", 1000}, {"p1", 2000}, {"p2", 3000}};
  std::vector<float> grads_;
};

class LoggingReplay final : public StepReplay {
 public:
  explicit LoggingReplay(Log& log) : log_(log) {}
  void begin_capture() override { log_.push_back("begin capture"); }
  void end_capture() override {
    log_.push_back("end capture");
    if (fail_capture) throw core::Error("capture invalidated");
  }
  void begin_replay() override {
    log_.push_back("begin replay");
    replaying_ = true;
  }
  void launch() override {
    log_.push_back("launch");
    replaying_ = false;
  }
  void reset() override { log_.push_back("reset"); }
  bool replaying() const override { return replaying_; }
  bool fail_capture = false;

 private:
  Log& log_;
  bool replaying_ = false;
};

class EngineReplayTest : public ::testing::Test {
 protected:
  EngineOptions options(bool overlap) {
    EngineOptions o;
    o.buckets.first_bucket_bytes = 8000;
    o.buckets.bucket_cap_bytes = 8000;
    o.overlap = overlap;
    return o;
  }
  /// The log of one step with `rows` rows.
  Log step(DataParallelEngine& engine, int rows = 2) {
    log_.clear();
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(rows) * 5, 1);
    engine.step({rows, 5, tokens.data()}, 0.0, AdamWConfig{});
    return log_;
  }
  /// The timeline and communicator calls of a step log, in order (what a replay must repeat).
  static Log bookkeeping(const Log& log) {
    Log out;
    bool after_stage = false;
    for (const auto& e : log) {
      if (e.rfind("stage", 0) == 0) after_stage = true;
      else if (e == "optimizer") break;
      else if (after_stage && (e == "marker" || e == "join" || e.rfind("all-reduce", 0) == 0 ||
                               e.rfind("all-gather", 0) == 0))
        out.push_back(e);
    }
    return out;
  }
  static int count(const Log& log, const std::string& what) {
    int n = 0;
    for (const auto& e : log) n += e == what;
    return n;
  }

  Log log_;
  LoggingTimeline timeline_{log_};
  LoggingCommunicator comm_{log_};
  LoggingModel model_{log_, true};
  LoggingReplay replay_{log_};
};

TEST_F(EngineReplayTest, WithoutAReplayerEveryStepIsIssued) {
  DataParallelEngine engine(model_, comm_, timeline_, options(true));
  for (int s = 0; s < 6; ++s) {
    const Log l = step(engine);
    EXPECT_EQ(count(l, "forward"), 1);
    EXPECT_EQ(count(l, "begin capture") + count(l, "begin replay"), 0);
  }
  EXPECT_EQ(engine.take_step_timings().size(), 6u);
}

TEST_F(EngineReplayTest, CapturesAfterEagerStepsThenReplaysTheSameBookkeeping) {
  for (bool overlap : {true, false}) {
    SCOPED_TRACE(overlap ? "overlap" : "no overlap");
    DataParallelEngine engine(model_, comm_, timeline_, options(overlap), &replay_);
    ASSERT_EQ(engine.plan().buckets.size(), 3u);
    for (int s = 0; s < DataParallelEngine::kEagerStepsBeforeCapture; ++s) {
      const Log l = step(engine);
      EXPECT_EQ(count(l, "forward"), 1);
      EXPECT_EQ(count(l, "begin capture"), 0);
    }
    const Log captured = step(engine);
    EXPECT_EQ(captured.front(), "marker");  // step begin, before the batch copy, stays eager
    EXPECT_EQ(count(captured, "begin capture"), 1);
    EXPECT_EQ(count(captured, "forward"), 1);
    EXPECT_EQ(captured.back(), "marker");    // the optimizer's end, eager
    // The capture ran nothing: it is launched at once, and its loss logged, before the optimizer.
    const Log after_capture(std::find(captured.begin(), captured.end(), "end capture"), captured.end());
    EXPECT_EQ(after_capture, (Log{"end capture", "launch", "log loss", "optimizer", "marker"}));
    for (int s = 0; s < 3; ++s) {
      const Log replayed = step(engine);
      EXPECT_EQ(count(replayed, "forward") + count(replayed, "backward"), 0);
      EXPECT_EQ(count(replayed, "stage 2"), 1);  // the batch copy stays eager
      EXPECT_EQ(bookkeeping(replayed), bookkeeping(captured));
      const Log tail(std::find(replayed.begin(), replayed.end(), "launch"), replayed.end());
      EXPECT_EQ(tail, (Log{"launch", "log loss", "optimizer", "marker"}));
    }
    // Overlap decides where the all-reduces sit among the markers (after "staged" and "forward end": the first
    // all-reduce, or "backward end"): replays must keep that order.
    const Log b = bookkeeping(captured);
    ASSERT_GE(b.size(), 3u);
    EXPECT_EQ(b[2], overlap ? "all-reduce 3000" : "marker");
    const auto timings = engine.take_step_timings();
    ASSERT_EQ(timings.size(), 7u);
    for (const auto& t : timings) {
      EXPECT_EQ(t.all_reduce_count, 3);
      EXPECT_EQ(t.all_reduce_bytes, 6000u * sizeof(float));
      EXPECT_GT(t.forward, 0);
      EXPECT_GT(t.backward, 0);
    }
    EXPECT_EQ(engine.replay_counts().eager, DataParallelEngine::kEagerStepsBeforeCapture);
    EXPECT_EQ(engine.replay_counts().captured, 1);
    EXPECT_EQ(engine.replay_counts().replayed, 3);
  }
}

TEST_F(EngineReplayTest, ANewBatchShapeDropsTheRecordAndCapturesAgain) {
  DataParallelEngine engine(model_, comm_, timeline_, options(true), &replay_);
  for (int s = 0; s <= DataParallelEngine::kEagerStepsBeforeCapture; ++s) step(engine);
  EXPECT_EQ(count(step(engine), "begin replay"), 1);
  const Log changed = step(engine, 3);
  EXPECT_EQ(count(changed, "reset"), 1);
  EXPECT_EQ(count(changed, "forward"), 1);
  EXPECT_EQ(count(changed, "begin capture") + count(changed, "begin replay"), 0);
  for (int s = 1; s < DataParallelEngine::kEagerStepsBeforeCapture; ++s) EXPECT_EQ(count(step(engine, 3), "forward"), 1);
  EXPECT_EQ(count(step(engine, 3), "begin capture"), 1);
  EXPECT_EQ(count(step(engine, 3), "begin replay"), 1);
  EXPECT_EQ(engine.take_step_timings().size(), 10u);  // 3 eager, capture, replay; 3 eager, capture, replay
}

TEST_F(EngineReplayTest, AFailedCaptureIsReportedAndReset) {
  DataParallelEngine engine(model_, comm_, timeline_, options(true), &replay_);
  for (int s = 0; s < DataParallelEngine::kEagerStepsBeforeCapture; ++s) step(engine);
  replay_.fail_capture = true;
  EXPECT_THROW(step(engine), core::Error);
  EXPECT_EQ(count(log_, "reset"), 1);
  EXPECT_EQ(count(log_, "launch"), 0);
}

TEST_F(EngineReplayTest, AModelThatCannotBeReplayedIsRefused) {
  LoggingModel mlp(log_, false);
  EXPECT_THROW(DataParallelEngine(mlp, comm_, timeline_, options(true), &replay_), core::UsageError);
}

TEST_F(EngineReplayTest, OverlappedOptimizerUpdatesTheEarlyBucketsWhileTheLastIsAllReduced) {
  for (bool overlap : {true, false}) {
    SCOPED_TRACE(overlap ? "overlap" : "no overlap");
    EngineOptions o = options(overlap);
    o.overlap_optimizer = true;
    DataParallelEngine engine(model_, comm_, timeline_, o);
    ASSERT_EQ(engine.plan().buckets.size(), 3u);  // p2, p1, p0
    const Log l = step(engine);
    const Log tail(std::find(l.begin(), l.end(), "backward"), l.end());
    // With overlap, each all-reduce inside backward, each after the marker of its bucket's readiness; the backward
    // end marker, (without overlap: the three all-reduces), all but the last bucket awaited, their parameters
    // [1, 3) updated, the last awaited, p0 updated.
    Log want{"backward"};
    if (overlap)
      want.insert(want.end(), {"marker", "all-reduce 3000", "marker", "all-reduce 2000", "marker", "all-reduce 1000", "marker"});
    else
      want.insert(want.end(), {"marker", "all-reduce 3000", "all-reduce 2000", "all-reduce 1000"});
    want.insert(want.end(), {"join until 1", "marker", "optimizer [1, 3)", "marker", "join", "marker",
                             "optimizer [0, 1)", "marker"});
    EXPECT_EQ(tail, want);
    // Markers are 1 ms apart (LoggingTimeline): each wait and each optimizer part spans one interval.
    const auto timings = engine.take_step_timings();
    ASSERT_EQ(timings.size(), 1u);
    EXPECT_DOUBLE_EQ(timings[0].exposed_comm, 2e-3);
    EXPECT_DOUBLE_EQ(timings[0].optimizer, 2e-3);
    // The buckets' ready times, after backward began (the forward-end marker): 1, 2 and 3 ms; none without overlap.
    if (overlap) {
      EXPECT_EQ(timings[0].bucket_ready, (std::vector<double>{1e-3, 2e-3, 3e-3}));
    } else {
      EXPECT_TRUE(timings[0].bucket_ready.empty());
    }
  }
}

TEST_F(EngineReplayTest, OverlappedOptimizerWithOneBucketIsTheWholeStep) {
  EngineOptions o = options(true);
  o.buckets.first_bucket_bytes = o.buckets.bucket_cap_bytes = 1 << 20;
  o.overlap_optimizer = true;
  DataParallelEngine engine(model_, comm_, timeline_, o);
  ASSERT_EQ(engine.plan().buckets.size(), 1u);
  const Log l = step(engine);
  EXPECT_EQ(count(l, "optimizer"), 1);
  EXPECT_EQ(count(l, "join until 1"), 0);
}

TEST_F(EngineReplayTest, OverlappedOptimizerAndReplayAreRefusedTogether) {
  EngineOptions o = options(true);
  o.overlap_optimizer = true;
  EXPECT_THROW(DataParallelEngine(model_, comm_, timeline_, o, &replay_), core::UsageError);
}


// ---------------------------------------------------------------------------------------------------------
// The tied embedding's exchange by all-gather (EmbeddingExchange).

TEST(EmbeddingExchangeChoice, AllGatherWhenItMovesFewerBytesAfterBackward) {
  // gpt2-124m on GPU: 16 rows of 1025 int32 tokens + 1024 × 768 bf16 gradients (25.2 MB) against the fp32 wte
  // and wpe gradients (157.7 MB): all-gather while P < 2S/n, i.e. up to 12 ranks.
  const EmbeddingGather gpt2{0, 1, 1025 * 4 + 1024 * 768 * 2, (50304 + 1024) * 768 * 4};
  EXPECT_FALSE(prefer_embedding_gather(gpt2, 1, 16));
  EXPECT_TRUE(prefer_embedding_gather(gpt2, 2, 16));
  EXPECT_TRUE(prefer_embedding_gather(gpt2, 12, 16));
  EXPECT_FALSE(prefer_embedding_gather(gpt2, 13, 16));
  EXPECT_TRUE(prefer_embedding_gather(gpt2, 2, 64));    // 100.9 MB per rank against 2S/n = 157.7 MB
  EXPECT_FALSE(prefer_embedding_gather(gpt2, 2, 128));  // 201.9 MB
  EXPECT_FALSE(prefer_embedding_gather(gpt2, 2, 0));   // rows unknown
}

class EmbeddingGatherEngineTest : public EngineReplayTest {
 protected:
  EngineOptions gather_options(EmbeddingExchange exchange = EmbeddingExchange::all_gather) {
    EngineOptions o = options(true);
    o.buckets.first_bucket_bytes = o.buckets.bucket_cap_bytes = 4000;
    o.embedding_exchange = exchange;
    o.rows_per_rank = 2;
    return o;
  }
  LoggingModel tied_{log_, true, true};  // one engine per test: gathering switches the model for good
};

TEST_F(EmbeddingGatherEngineTest, HeadPartFirstPositionTableUnbucketedGathersAroundTheStep) {
  DataParallelEngine engine(tied_, comm_, timeline_, gather_options());
  ASSERT_TRUE(engine.gathers_embedding());
  ASSERT_EQ(engine.plan().buckets.size(), 2u);
  EXPECT_EQ(engine.plan().buckets[0].parameters, std::vector<std::size_t>{0});
  EXPECT_EQ(engine.plan().buckets[1].parameters, std::vector<std::size_t>{2});
  EXPECT_EQ(engine.plan().parameter_bucket[1], BucketPlan::kNoBucket);
  EXPECT_EQ(engine.plan().total_numel, 6000u);  // p1's gradient still has its place, after the buckets
  const Log l = step(engine);
  const Log want{"marker", "stage 2", "marker", "all-gather 20", "forward", "marker", "backward", "marker",
                 "all-reduce 1000", "marker", "all-reduce 3000", "marker", "all-gather 80", "join", "apply gathered",
                 "marker", "optimizer", "marker"};
  EXPECT_EQ(l, want);
  const auto timings = engine.take_step_timings();
  ASSERT_EQ(timings.size(), 1u);
  EXPECT_EQ(timings[0].all_reduce_count, 2);
  EXPECT_EQ(timings[0].all_reduce_bytes, 4000u * sizeof(float));
  EXPECT_DOUBLE_EQ(timings[0].last_all_reduce_seconds, 1e-4);
  EXPECT_EQ(timings[0].all_gather_count, 2);
  EXPECT_EQ(timings[0].all_gather_bytes, 100u);
  EXPECT_DOUBLE_EQ(timings[0].all_gather_seconds, 4e-4);
}

TEST_F(EmbeddingGatherEngineTest, ReplayRepeatsTheGathers) {
  DataParallelEngine engine(tied_, comm_, timeline_, gather_options(), &replay_);
  for (int s = 0; s < DataParallelEngine::kEagerStepsBeforeCapture; ++s) step(engine);
  const Log captured = step(engine);
  ASSERT_EQ(count(captured, "begin capture"), 1);
  EXPECT_EQ(count(captured, "apply gathered"), 1);  // issued into the capture
  const Log replayed = step(engine);
  EXPECT_EQ(count(replayed, "begin replay"), 1);
  EXPECT_EQ(count(replayed, "apply gathered"), 0);  // it is in the graph
  EXPECT_EQ(bookkeeping(replayed), bookkeeping(captured));
  EXPECT_EQ(count(bookkeeping(replayed), "all-gather 20") + count(bookkeeping(replayed), "all-gather 80"), 2);
}

TEST_F(EmbeddingGatherEngineTest, AutomaticAndRefusals) {
  // An engine that gathers switches its model over for good: each engine below gets a fresh model.
  const auto gathers = [&](const EngineOptions& o) {
    LoggingModel tied(log_, true, true);
    DataParallelEngine engine(tied, comm_, timeline_, o);
    if (engine.gathers_embedding()) step(engine);  // the switched model reports as the plan expects
    return engine.gathers_embedding();
  };
  EngineOptions automatic = gather_options(EmbeddingExchange::automatic);
  EXPECT_TRUE(gathers(automatic));  // 200 B < 12 KB
  automatic.rows_per_rank = 0;
  EXPECT_FALSE(gathers(automatic));
  automatic.rows_per_rank = 2;
  automatic.overlap_optimizer = true;  // its split assumes the embedding in the last bucket
  EXPECT_FALSE(gathers(automatic));
  automatic.overlap_optimizer = false;
  automatic.gradient_reduction = comm::ReduceOp::sum;  // the gathered part is averaged by the model
  EXPECT_FALSE(gathers(automatic));
  EXPECT_FALSE(DataParallelEngine(model_, comm_, timeline_, gather_options(EmbeddingExchange::automatic)).gathers_embedding());
  EXPECT_FALSE(gathers(gather_options(EmbeddingExchange::all_reduce)));

  EXPECT_THROW(DataParallelEngine(model_, comm_, timeline_, gather_options()), core::UsageError);  // nothing tied
  EngineOptions both = gather_options();
  both.overlap_optimizer = true;
  EXPECT_THROW(gathers(both), core::UsageError);
  EngineOptions summed = gather_options();
  summed.gradient_reduction = comm::ReduceOp::sum;
  EXPECT_THROW(gathers(summed), core::UsageError);
}

TEST(EmbeddingExchangeNames, RoundTripAndRefuseOthers) {
  for (auto e : {EmbeddingExchange::automatic, EmbeddingExchange::all_reduce, EmbeddingExchange::all_gather})
    EXPECT_EQ(parse_embedding_exchange(to_string(e)), e);
  EXPECT_THROW(parse_embedding_exchange("allgather"), core::UsageError);
}

}  // namespace
}  // namespace scalescope::train
