// CUDA-graph replay of the training step (gpu/step_graph.h, `--cuda-graph`): a replayed GPT step must train as
// the eagerly issued one does (same losses and parameters, through NCCL at world size 1), every replayed step
// must be timed by its own events, and the graph must refuse a capture or a replay that went wrong.
// Skipped with the reason on machines without a GPU (CPU-only CI).

#include <gtest/gtest.h>

#include <nccl.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "core/error.h"
#include "cuda_test_util.h"
#include "gpu/cuda_timeline.h"
#include "gpu/nccl_communicator.h"
#include "gpu/step_graph.h"
#include "train/cuda/gpt_cuda.h"
#include "train/dp_engine.h"

using namespace scalescope;
using namespace scalescope::train;
using namespace scalescope::train::testing;

namespace {

class StepGraphTest : public CudaStreamTest {
 protected:
  struct Run {
    std::vector<float> losses, parameters;
    std::vector<StepTiming> timings;
    DataParallelEngine::ReplayCounts counts;
    std::size_t buckets = 0, graph_nodes = 0;
  };

  /// `steps` AdamW steps of a 2-layer GPT on fixed batches through the engine and NCCL (one rank), issued
  /// eagerly or replayed from a CUDA graph.
  static GptConfig small_gpt() { return GptConfig::sized(2, 64, 4, 128, 256, 32); }

  /// The same with head width 64: attention through fused kernels, `fused` "flash" (the project's:
  /// cudaFuncSetAttribute, a memset and four kernels per layer inside the capture) or "cudnn" (cuDNN's plans).
  static GptConfig flash_gpt(const char* fused = "flash") {
    GptConfig c = GptConfig::sized(2, 128, 2, 128, 256, 32);
    c.choose_attention(fused);
    return c;
  }

  Run train(bool graph, int steps, const GptConfig& config = small_gpt()) {
    GptCuda model(config, stream_);
    std::unique_ptr<gpu::StepGraph> step_graph = graph ? std::make_unique<gpu::StepGraph>(stream_) : nullptr;
    gpu::CudaTimeline timeline(stream_, step_graph.get());
    ncclUniqueId id;
    EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    gpu::NcclCommunicator comm(comm::RankInfo{0, 1, 0}, id, stream_, 0, step_graph.get());
    EngineOptions options;  // small buckets: several all-reduces, each timed by its own events
    options.buckets.first_bucket_bytes = 16 << 10;
    options.buckets.bucket_cap_bytes = 64 << 10;
    DataParallelEngine engine(model, comm, timeline, options, step_graph.get());
    AdamWConfig adam;
    adam.learning_rate = 1e-4f;
    for (int s = 0; s < steps; ++s) {
      const auto tokens = random_tokens(4, 33, 256, 100 + static_cast<unsigned>(s));
      engine.step({4, 33, tokens.data()}, 0.0, adam);
    }
    Run r;
    r.timings = engine.take_step_timings();
    r.losses = model.take_losses();
    r.parameters = model.parameters_to_host();
    r.counts = engine.replay_counts();
    r.buckets = engine.plan().buckets.size();
    r.graph_nodes = step_graph ? step_graph->node_count() : 0;
    step_graph.reset();  // before the communicator: ncclCommDestroy waits for graphs holding its collectives
    return r;
  }
};

TEST_F(StepGraphTest, ReplayedStepsTrainAsEagerStepsAndAreEachTimed) {
  // The same GEMM algorithms on both sides (autotuning may pick differently in two runs); what is left to differ
  // is the order of the embedding gradient's atomic adds.
  const char* tune = std::getenv("SCALESCOPE_GEMM_AUTOTUNE");
  const std::optional<std::string> saved = tune ? std::optional<std::string>(tune) : std::nullopt;
  ASSERT_EQ(setenv("SCALESCOPE_GEMM_AUTOTUNE", "0", 1), 0);
  const int steps = 10;
  const Run eager = train(false, steps), replayed = train(true, steps);
  if (saved) setenv("SCALESCOPE_GEMM_AUTOTUNE", saved->c_str(), 1);
  else unsetenv("SCALESCOPE_GEMM_AUTOTUNE");

  EXPECT_EQ(replayed.counts.eager, DataParallelEngine::kEagerStepsBeforeCapture);
  EXPECT_EQ(replayed.counts.captured, 1);
  EXPECT_EQ(replayed.counts.replayed, steps - 1 - DataParallelEngine::kEagerStepsBeforeCapture);
  EXPECT_GT(replayed.graph_nodes, 50u);  // ~20 kernels per layer, the all-reduces and the timing events
  ASSERT_EQ(replayed.losses.size(), static_cast<std::size_t>(steps));
  ASSERT_EQ(eager.losses.size(), replayed.losses.size());
  for (int s = 0; s < steps; ++s)  // a replay that read stale inputs or lost a loss would differ by far more
    EXPECT_NEAR(replayed.losses[s], eager.losses[s], 1e-3 * eager.losses[s]) << "step " << s;
  EXPECT_LT(relative_error(replayed.parameters, 0, eager.parameters, 0, eager.parameters.size()), 1e-3);
  // ...while training moved the parameters by far more than that (~1.6 % here): a replay that lost the updates
  // or reused the first batch's gradients would miss the eager parameters by as much.
  const std::vector<float> initial = gpt_initial_parameters(small_gpt());
  EXPECT_GT(relative_error(eager.parameters, 0, initial, 0, initial.size()), 5e-3);

  ASSERT_EQ(replayed.timings.size(), static_cast<std::size_t>(steps));
  for (int s = 0; s < steps; ++s) {
    const StepTiming& t = replayed.timings[s];
    SCOPED_TRACE("step " + std::to_string(s));
    EXPECT_GT(t.forward, 0);
    EXPECT_GT(t.backward, 0);
    EXPECT_GE(t.exposed_comm, 0);
    EXPECT_GT(t.optimizer, 0);
    EXPECT_EQ(t.all_reduce_count, static_cast<int>(replayed.buckets));
    EXPECT_GT(t.all_reduce_seconds, 0);
    EXPECT_NEAR(t.stage + t.forward + t.backward + t.exposed_comm + t.optimizer, t.total, 1e-6);
    // Events left bound to an earlier step would span several steps.
    EXPECT_LT(t.forward + t.backward, 0.1);
  }
}

TEST_F(StepGraphTest, ReplayedFlashAttentionStepsTrainAsEagerSteps) {
  const char* tune = std::getenv("SCALESCOPE_GEMM_AUTOTUNE");
  const std::optional<std::string> saved = tune ? std::optional<std::string>(tune) : std::nullopt;
  ASSERT_EQ(setenv("SCALESCOPE_GEMM_AUTOTUNE", "0", 1), 0);
  for (const char* fused : {"flash", "cudnn"}) {
    if (std::string(fused) == "cudnn" && !train::gpt_kernels::cudnn_attention_built()) continue;
    SCOPED_TRACE(fused);
    const GptConfig config = flash_gpt(fused);
    ASSERT_TRUE(config.uses_flash_attention());
    ASSERT_EQ(config.uses_cudnn_attention(), std::string(fused) == "cudnn");
    const int steps = 8;
    const Run eager = train(false, steps, config), replayed = train(true, steps, config);
    EXPECT_EQ(replayed.counts.captured, 1);
    EXPECT_EQ(replayed.counts.replayed, steps - 1 - DataParallelEngine::kEagerStepsBeforeCapture);
    ASSERT_EQ(replayed.losses.size(), static_cast<std::size_t>(steps));
    // dq's atomic adds (as the embedding's) differ in order between the runs: rounding, not stale inputs.
    for (int s = 0; s < steps; ++s) EXPECT_NEAR(replayed.losses[s], eager.losses[s], 1e-3 * eager.losses[s]) << "step " << s;
    EXPECT_LT(relative_error(replayed.parameters, 0, eager.parameters, 0, eager.parameters.size()), 1e-3);
    const std::vector<float> initial = gpt_initial_parameters(config);
    EXPECT_GT(relative_error(eager.parameters, 0, initial, 0, initial.size()), 5e-3);
  }
  if (saved) setenv("SCALESCOPE_GEMM_AUTOTUNE", saved->c_str(), 1);
  else unsetenv("SCALESCOPE_GEMM_AUTOTUNE");
}

TEST_F(StepGraphTest, AReplayMustNameAsManyEventsAsTheCaptureRecorded) {
  gpu::StepGraph graph(stream_);
  cudaEvent_t e[4];
  for (auto& x : e) ASSERT_EQ(cudaEventCreate(&x), cudaSuccess);
  int* buffer = nullptr;
  ASSERT_EQ(cudaMalloc(&buffer, 1 << 20), cudaSuccess);
  graph.record_timing(e[0], stream_);  // outside a capture: a plain record (CUDA refuses the External flag there)
  sync();
  graph.begin_capture();
  graph.record_timing(e[0], stream_);
  ASSERT_EQ(cudaMemsetAsync(buffer, 1, 1 << 20, stream_), cudaSuccess);
  graph.record_timing(e[1], stream_);
  graph.end_capture();
  EXPECT_EQ(graph.node_count(), 3u);
  graph.launch();  // the capture's own events
  sync();
  float ms = -1;
  EXPECT_EQ(cudaEventElapsedTime(&ms, e[0], e[1]), cudaSuccess);
  EXPECT_GE(ms, 0.0f);

  graph.begin_replay();
  EXPECT_TRUE(graph.replaying());
  graph.record_timing(e[2], stream_);
  EXPECT_THROW(graph.launch(), core::Error);

  graph.begin_replay();
  graph.record_timing(e[2], stream_);
  graph.record_timing(e[3], stream_);
  graph.launch();
  sync();
  EXPECT_EQ(cudaEventElapsedTime(&ms, e[2], e[3]), cudaSuccess);  // recorded by the replay: they now hold times
  EXPECT_GE(ms, 0.0f);
  EXPECT_EQ(cudaEventQuery(e[3]), cudaSuccess);
  for (auto x : e) cudaEventDestroy(x);
  cudaFree(buffer);
}

TEST_F(StepGraphTest, ACaptureBrokenByAnUncapturableCallIsReported) {
  gpu::StepGraph graph(stream_);
  graph.begin_capture();
  EXPECT_NE(cudaStreamSynchronize(stream_), cudaSuccess);  // not allowed while capturing: invalidates the capture
  try {
    graph.end_capture();
    FAIL() << "end_capture accepted an invalidated capture";
  } catch (const core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA graph"), std::string::npos) << e.what();
  }
  cudaGetLastError();
  // The stream is usable again, and a new capture can start.
  int* value = nullptr;
  ASSERT_EQ(cudaMalloc(&value, sizeof(int)), cudaSuccess);
  graph.begin_capture();
  ASSERT_EQ(cudaMemsetAsync(value, 0, sizeof(int), stream_), cudaSuccess);
  graph.end_capture();
  graph.launch();
  sync();
  cudaFree(value);
}

}  // namespace
