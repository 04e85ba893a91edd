// StreamBlocker (train/cuda/stream_blocker.h), the GEMM autotuner's way of timing the GPU alone: work enqueued
// while the stream is held must wait for release() and then run back to back, so CUDA events around it exclude
// the host's time; a release that never comes must end the hold by its timeout, and say so. Skipped with the
// reason on machines without a GPU (CPU-only CI).

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "cuda_test_util.h"
#include "train/cuda/stream_blocker.h"

using scalescope::train::cuda::StreamBlocker;
using scalescope::train::testing::CudaStreamTest;

namespace {

class StreamBlockerTest : public CudaStreamTest {
 protected:
  /// Whether `event` has not completed yet (cudaErrorNotReady, which is then cleared from the last error).
  static bool pending(cudaEvent_t event) {
    const cudaError_t e = cudaEventQuery(event);
    (void)cudaGetLastError();
    return e == cudaErrorNotReady;
  }
};

}  // namespace

TEST_F(StreamBlockerTest, HeldWorkWaitsForTheReleaseAndItsEventsExcludeTheHostTime) {
  StreamBlocker blocker;
  cudaEvent_t start = nullptr, stop = nullptr;
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&stop), cudaSuccess);
  for (int round = 0; round < 2; ++round) {  // a second hold works as the first
    blocker.block(stream_);
    ASSERT_EQ(cudaEventRecord(start, stream_), cudaSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the host is slow between two launches
    ASSERT_EQ(cudaEventRecord(stop, stream_), cudaSuccess);
    EXPECT_TRUE(pending(stop)) << "the stream ran on before the release";
    blocker.release();
    sync();
    EXPECT_FALSE(blocker.timed_out());
    float ms = 0;
    ASSERT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
    EXPECT_LT(ms, 0.5f) << "the 2 ms the host spent between the events were timed";
  }
  // Without a hold the same events time the host's 2 ms.
  ASSERT_EQ(cudaEventRecord(start, stream_), cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(cudaEventRecord(stop, stream_), cudaSuccess);
  sync();
  float ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
  EXPECT_GT(ms, 1.5f);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

TEST_F(StreamBlockerTest, AForgottenReleaseEndsByTheTimeoutAndIsReported) {
  StreamBlocker blocker;
  const auto begin = std::chrono::steady_clock::now();
  blocker.block(stream_);
  sync();  // no release
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  EXPECT_GT(seconds, 0.9 * StreamBlocker::kTimeoutNs * 1e-9);
  EXPECT_LT(seconds, 1.0);
  EXPECT_TRUE(blocker.timed_out());
  // The next hold starts afresh.
  blocker.block(stream_);
  blocker.release();
  sync();
  EXPECT_FALSE(blocker.timed_out());
}
