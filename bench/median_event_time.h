#pragma once
// One timing rule for the GPU micro-benchmarks (bench_attention_speed, bench_gpt_kernels_speed): CUDA-event time of
// one call at a time on one stream, median over the timed calls.

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "gpu/cuda_check.h"

namespace scalescope::bench {

/// Median CUDA-event time in seconds of `body()` (which enqueues work on `stream`) over `runs` ≥ 1 calls, after 3
/// untimed warm-up calls. Each call is timed alone (record, call, record, synchronise), so the host's launch time
/// counts when it exceeds the GPU's. core::Error on CUDA errors.
template <class Body>
double median_event_seconds(cudaStream_t stream, int runs, Body&& body) {
  for (int i = 0; i < 3; ++i) body();
  cudaEvent_t start = nullptr, stop = nullptr;
  SCALESCOPE_CUDA_CHECK(cudaEventCreate(&start));
  SCALESCOPE_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    SCALESCOPE_CUDA_CHECK(cudaEventRecord(start, stream));
    body();
    SCALESCOPE_CUDA_CHECK(cudaEventRecord(stop, stream));
    SCALESCOPE_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    SCALESCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    t.push_back(ms / 1e3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace scalescope::bench
