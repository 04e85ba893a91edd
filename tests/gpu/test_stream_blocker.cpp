// StreamBlocker and SmOccupier (train/cuda/stream_blocker.h). StreamBlocker is the GEMM autotuner's way of timing the GPU alone: work enqueued
// while the stream is held must wait for release() and then run back to back, so CUDA events around it exclude
// the host's time; a release that never comes must end the hold by its timeout, and say so. Skipped with the
// reason on machines without a GPU (CPU-only CI).

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/error.h"
#include "cuda_test_util.h"
#include "train/cuda/stream_blocker.h"

using scalescope::train::cuda::SmOccupier;
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

// SmOccupier takes one whole SM per block: two occupiers that together want more SMs than the device has cannot both
// hold at once, and the second holds once the first lets go; a release that never comes ends by the timeout.
TEST_F(StreamBlockerTest, OccupiersTakeWholeSmsAndLetThemGo) {
  int device = 0, sm_count = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  const int more_than_half = sm_count / 2 + 1;
  SmOccupier first(more_than_half), second(more_than_half);
  ASSERT_TRUE(first.hold());
  EXPECT_FALSE(second.hold()) << "two blocks shared an SM: the occupier's shared memory did not keep others off";
  first.release();
  EXPECT_FALSE(first.timed_out());
  ASSERT_TRUE(second.hold());
  second.release();
  EXPECT_FALSE(second.timed_out());

  const auto begin = std::chrono::steady_clock::now();
  ASSERT_TRUE(first.hold());
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // no release within the timeout
  EXPECT_TRUE(first.timed_out());
  first.release();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  EXPECT_LT(seconds, 2.0);

  EXPECT_THROW(SmOccupier{0}, scalescope::core::Error);
  EXPECT_THROW(SmOccupier{sm_count}, scalescope::core::Error);
}
