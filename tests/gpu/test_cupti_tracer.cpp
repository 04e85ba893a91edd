// The CUPTI recorder behind `train --kernel-trace` (gpu/cupti_tracer.h): it must see the kernels a stream runs
// between start() and stop(), on its own clock, linked to the API calls that launched them, with readable names,
// and start afresh each time. Skipped with the reason on machines without a GPU (CPU-only CI) or without CUPTI.

#include <gtest/gtest.h>

#include <cuda_bf16.h>

#include <memory>
#include <set>

#include "cuda_test_util.h"
#include "gpu/cupti_tracer.h"
#include "train/cuda/lt_matmul.h"

using scalescope::train::testing::CudaStreamTest;

namespace {

class CuptiTracerTest : public CudaStreamTest {
 protected:
  void SetUp() override {
    CudaStreamTest::SetUp();  // skips without a GPU; cuBLASLt needs one
    if (!IsSkipped()) gemm_ = std::make_unique<scalescope::train::cuda::LtMatmul>();
  }
  /// One 256³ bf16 GEMM on stream_ through cuBLASLt (a kernel the tracer must see), then a synchronisation.
  void run_gemm() {
    constexpr int n = 256;
    __nv_bfloat16 *a = nullptr, *b = nullptr, *d = nullptr;
    ASSERT_EQ(cudaMalloc(&a, n * n * sizeof(__nv_bfloat16)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&b, n * n * sizeof(__nv_bfloat16)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d, n * n * sizeof(__nv_bfloat16)), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(a, 0, n * n * sizeof(__nv_bfloat16), stream_), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(b, 0, n * n * sizeof(__nv_bfloat16), stream_), cudaSuccess);
    gemm_->run(stream_, scalescope::train::cuda::packed_gemm(n, n, n, a, b, d));
    sync();
    cudaFree(a);
    cudaFree(b);
    cudaFree(d);
  }
  std::unique_ptr<scalescope::train::cuda::LtMatmul> gemm_;
};

}  // namespace

TEST_F(CuptiTracerTest, RecordsTheKernelsOfTheWindowLinkedToTheirLaunches) {
  auto tracer = scalescope::gpu::make_cupti_tracer();
  if (!tracer) GTEST_SKIP() << "scalescope was built without CUPTI";
  run_gemm();  // plans and loads cuBLASLt's kernel outside the window
  tracer->start();
  const std::int64_t begin = tracer->now_ns();
  run_gemm();
  const std::int64_t end = tracer->now_ns();
  const auto trace = tracer->stop();
  ASSERT_FALSE(trace.kernels.empty());
  std::set<std::int64_t> launches;
  for (const auto& c : trace.api_calls) launches.insert(c.correlation);
  for (const auto& k : trace.kernels) {
    EXPECT_GE(k.start_ns, begin) << k.name;
    EXPECT_LE(k.end_ns, end) << k.name;
    EXPECT_LE(k.start_ns, k.end_ns) << k.name;
    EXPECT_FALSE(k.name.empty());
    EXPECT_EQ(k.name.find('('), std::string::npos) << k.name;  // the parameter list is cut
    EXPECT_TRUE(launches.count(k.correlation)) << k.name << ": no API call with its correlation id";
    // Its launch configuration: every dimension at least 1, at most 1024 threads per block (CUDA's limit).
    for (int i = 0; i < 3; ++i) {
      EXPECT_GE(k.grid[i], 1) << k.name;
      EXPECT_GE(k.block[i], 1) << k.name;
    }
    EXPECT_LE(k.block[0] * k.block[1] * k.block[2], 1024) << k.name;
  }
  EXPECT_GT(trace.process_id, 0u);

  // A second window starts empty: the first one's records are not handed out again.
  tracer->start();
  const auto empty = tracer->stop();
  EXPECT_TRUE(empty.kernels.empty()) << empty.kernels.size() << " kernels, first " << empty.kernels[0].name;
}
