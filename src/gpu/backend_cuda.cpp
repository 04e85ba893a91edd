// GPU rank backend: CUDA device per local rank, NCCL communicator, bf16 model, CUDA-event timeline. Part of the
// GPU module (module_entry.cpp); the binary reaches it through train::make_gpu_rank_backend (train/backend_gpu.cpp).

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdlib>
#include <memory>

#include <fmt/format.h>

#include "comm/launcher.h"
#include "comm/mpi_communicator.h"
#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/bootstrap.h"
#include "gpu/cuda_timeline.h"
#include "gpu/cupti_tracer.h"
#include "gpu/nccl_bench_backend.h"
#include "gpu/nccl_communicator.h"
#include "gpu/step_graph.h"
#include "gpu/backend_cuda.h"
#include "train/backend.h"
#include "train/cuda/cudnn_attention.h"
#include "train/cuda/gpt_cuda.h"
#include "train/cuda/mlp_lm_cuda.h"

namespace scalescope::gpu {

using train::ModelFamily;
using train::ModelSpec;
using train::RankBackend;
using train::StreamPriority;

namespace {

/// Owns the compute stream; destroyed after the model, communicator and timeline that use it.
struct GpuRankBackend final : RankBackend {
  cudaStream_t stream = nullptr;
  bool mpi_initialised_here = false;
  ~GpuRankBackend() override {
    step_replay.reset();  // first: ncclCommDestroy waits until no CUDA graph holds the collectives it captured
    model.reset();
    comm.reset();
    timeline.reset();
    if (stream) cudaStreamDestroy(stream);
    if (mpi_initialised_here) MPI_Finalize();
  }
};

}  // namespace

int visible_device_count(std::string* why_none) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    if (why_none)
      *why_none = err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice
                      ? fmt::format("no usable NVIDIA driver or GPU: {}", cudaGetErrorString(err))
                      : fmt::format("CUDA: {}", cudaGetErrorString(err));
    cudaGetLastError();  // clear the error so later calls start clean
    return 0;
  }
  if (n == 0 && why_none) *why_none = "CUDA reports no devices";
  return n;
}

std::unique_ptr<comm::BenchBackend> make_bench_backend() {
  return std::make_unique<NcclBenchBackend>(bootstrap_gpu_rank());
}

std::unique_ptr<RankBackend> make_rank_backend(const ModelSpec& model, StreamPriority priority, bool cuda_graph) {
  auto b = std::make_unique<GpuRankBackend>();
  const RankBootstrap boot = bootstrap_gpu_rank();
  b->mpi_initialised_here = boot.mpi_initialised;
  const comm::RankInfo& info = boot.info;
  cudaDeviceProp prop{};
  SCALESCOPE_CUDA_CHECK(cudaGetDeviceProperties(&prop, info.local_rank));
  // CUDA: a lower number is a higher priority; the default (0) is the lowest.
  int lowest = 0, highest = 0;
  SCALESCOPE_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
  SCALESCOPE_CUDA_CHECK(cudaStreamCreateWithPriority(&b->stream, cudaStreamNonBlocking,
                                                     priority == StreamPriority::compute ? highest : lowest));
  StepGraph* graph = nullptr;
  if (cuda_graph) {
    auto owned = std::make_unique<StepGraph>(b->stream);
    graph = owned.get();
    b->step_replay = std::move(owned);
  }
  b->timeline = std::make_unique<CudaTimeline>(b->stream, graph);
  b->comm = std::make_unique<NcclCommunicator>(info, boot.id, b->stream,
                                                    priority == StreamPriority::comm ? highest : lowest, graph);
  if (model.family == ModelFamily::mlp) b->model = std::make_unique<train::MlpLmCuda>(model.mlp, b->stream);
  else b->model = std::make_unique<train::GptCuda>(model.gpt, b->stream);
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  b->device = fmt::format("cuda:{} {} ({} SMs, {:.0f} GB)", info.local_rank, prop.name, prop.multiProcessorCount,
                          prop.totalGlobalMem / 1e9);
  b->library_versions =
      fmt::format("{}, CUDA runtime {}.{}", nccl_version_string(), runtime / 1000, (runtime % 1000) / 10);
  if (model.family == ModelFamily::gpt && model.gpt.uses_cudnn_attention())
    b->library_versions += ", cuDNN " + train::gpt_kernels::CudnnAttention::library_version();
  b->kernel_tracer = make_cupti_tracer();
  return b;
}

}  // namespace scalescope::gpu
