// StreamBlocker (train/cuda/stream_blocker.h), the GEMM autotuner's way of timing the GPU alone: work enqueued
// while the stream is held must wait for release() and then run back to back, so CUDA events around it exclude
// the host's time; a release that never comes must not hang the stream. Skipped with the reason on machines
// without a GPU (CPU-only CI).

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "cuda_test_util.h"
#include "train/cuda/stream_blocker.h"

using scalescope::train::cuda::StreamBlocker;
using scalescope::train::testing::CudaStreamTest;

namespace {
class StreamBlockerTest : public CudaStreamTest {};
}  // namespace

TEST_F(StreamBlockerTest, HeldWorkWaitsForTheReleaseAndItsEventsExcludeTheHostTime) {
  StreamBlocker blocker;
  cudaEvent_t start = nullptr, stop = nullptr;
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&stop), cudaSuccess);
  blocker.block(stream_);
  ASSERT_EQ(cudaEventRecord(start, stream_), cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the host is slow between two launches
  ASSERT_EQ(cudaEventRecord(stop, stream_), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(stop), cudaErrorNotReady) << "the stream ran on before the release";
  blocker.release();
  sync();
  float ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
  EXPECT_LT(ms, 1.0f) << "the 5 ms the host spent between the events were timed";
  // Without the blocker the same events time the host's 5 ms.
  ASSERT_EQ(cudaEventRecord(start, stream_), cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(cudaEventRecord(stop, stream_), cudaSuccess);
  sync();
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
  EXPECT_GT(ms, 4.0f);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

TEST_F(StreamBlockerTest, AForgottenReleaseEndsByItselfWithinTheTimeout) {
  StreamBlocker blocker;
  const auto begin = std::chrono::steady_clock::now();
  blocker.block(stream_);
  sync();  // no release: the kernel gives up after kTimeoutCycles (~10 ms at 2 GHz)
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  EXPECT_LT(seconds, 1.0);
  // Blocking again after a timeout works as before.
  blocker.block(stream_);
  blocker.release();
  sync();
}
