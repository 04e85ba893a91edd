// NcclCommunicator (gpu/nccl_communicator.h) at world size 1: the gradient average over one rank is the
// identity, so it must leave the data as it was, still time the all-reduce with its events, and run no kernel
// (NCCL's one-rank ncclAvg reads and writes every gradient: 0.8 ms per gpt2-124m step on H200). Skipped with
// the reason on machines without a GPU (CPU-only CI); the kernel check also without CUPTI.

#include <gtest/gtest.h>

#include <nccl.h>

#include <vector>

#include "cuda_test_util.h"
#include "gpu/cupti_tracer.h"
#include "gpu/nccl_communicator.h"

using namespace scalescope;
using scalescope::train::testing::CudaStreamTest;

namespace {
class NcclCommunicatorTest : public CudaStreamTest {};
}  // namespace

TEST_F(NcclCommunicatorTest, OneRankAverageIsTheIdentityTimedWithoutAKernel) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  gpu::NcclCommunicator comm(comm::RankInfo{0, 1, 0}, id, stream_);
  constexpr std::size_t n = 1 << 20;
  std::vector<float> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = 0.25f * static_cast<float>(i % 977) - 3.0f;
  float* data = nullptr;
  ASSERT_EQ(cudaMalloc(&data, n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(data, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // a pageable copy may return before its DMA lands; stream_ is not ordered after it

  comm.start_all_reduce(data, n, comm::ReduceOp::average);  // NCCL connects lazily: outside the traced window
  comm.join();
  ASSERT_EQ(comm.take_timings().size(), 1u);

  auto tracer = gpu::make_cupti_tracer();
  if (tracer) tracer->start();
  comm.start_all_reduce(data, n, comm::ReduceOp::average);
  comm.start_all_reduce(data, n, comm::ReduceOp::sum);
  comm.join();
  sync();
  const auto timings = comm.take_timings();
  if (tracer) {
    const auto trace = tracer->stop();
    for (const auto& k : trace.kernels) ADD_FAILURE() << "a one-rank all-reduce ran the kernel " << k.name;
  }
  ASSERT_EQ(timings.size(), 2u);
  for (const auto& t : timings) {
    EXPECT_EQ(t.bytes, n * sizeof(float));
    EXPECT_GE(t.seconds, 0.0);
  }
  std::vector<float> back(n);
  ASSERT_EQ(cudaMemcpy(back.data(), data, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, host);
  cudaFree(data);
  if (!tracer) GTEST_SKIP() << "values and timings checked; scalescope was built without CUPTI, so no kernel check";
}
