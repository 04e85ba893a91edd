// GPU rank backend: CUDA device per local rank, NCCL communicator, bf16 MLP model, CUDA-event timeline.

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
#include "gpu/cuda_timeline.h"
#include "gpu/nccl_communicator.h"
#include "train/backend.h"
#include "train/cuda/mlp_lm_cuda.h"

namespace scalescope::train {
namespace {

constexpr const char* kEnvNcclId = "SCALESCOPE_NCCL_UNIQUE_ID";

/// Owns the compute stream; destroyed after the model, communicator and timeline that use it.
struct GpuRankBackend final : RankBackend {
  cudaStream_t stream = nullptr;
  bool mpi_initialised_here = false;
  ~GpuRankBackend() override {
    model.reset();
    comm.reset();
    timeline.reset();
    if (stream) cudaStreamDestroy(stream);
    if (mpi_initialised_here) MPI_Finalize();
  }
};

std::string nccl_version() {
  int v = 0;
  ncclGetVersion(&v);
  return fmt::format("NCCL {}.{}.{}", v / 10000, (v / 100) % 100, v % 100);
}

}  // namespace

int visible_gpu_count(std::string* why_none) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    if (why_none)
      *why_none = err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice
                      ? fmt::format("no usable NVIDIA driver or GPU: {}", cudaGetErrorString(err))
                      : fmt::format("CUDA: {}", cudaGetErrorString(err));
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return 0;
  }
  if (n == 0 && why_none) *why_none = "CUDA reports no devices";
  return n;
}

std::vector<std::pair<std::string, std::string>> gpu_launch_environment() {
  ncclUniqueId id;
  ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess)
    throw core::Error(fmt::format("ncclGetUniqueId failed: {}", ncclGetErrorString(r)),
                      "check the network interfaces NCCL may use for bootstrap (NCCL_SOCKET_IFNAME=lo on one node)");
  return {{kEnvNcclId, gpu::unique_id_to_hex(id)}};
}

std::unique_ptr<RankBackend> make_gpu_rank_backend(const MlpLmConfig& model) {
  auto b = std::make_unique<GpuRankBackend>();
  comm::RankInfo info;
  ncclUniqueId id{};
  if (auto from_launcher = comm::rank_from_launcher_environment()) {
    info = *from_launcher;
    const char* hex = std::getenv(kEnvNcclId);
    if (!hex)
      throw core::Error(fmt::format("{} is not set", kEnvNcclId),
                        "start GPU ranks through `scalescope train` (it sets it) or under mpirun/srun");
    id = gpu::unique_id_from_hex(hex);
  } else if (comm::started_by_mpi_launcher()) {
    // Across nodes: MPI gives ranks and carries rank 0's NCCL id to everyone (as nccl-tests does).
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      throw core::Error("MPI_Init_thread failed while bootstrapping NCCL");
    b->mpi_initialised_here = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &info.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &info.world_size);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, info.rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &info.local_rank);
    MPI_Comm_free(&node);
    if (info.rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  } else {
    info = comm::RankInfo{0, 1, 0};  // a lone process: world size 1
    if (ncclGetUniqueId(&id) != ncclSuccess) throw core::Error("ncclGetUniqueId failed");
  }
  std::string why;
  const int gpus = visible_gpu_count(&why);
  if (info.local_rank >= gpus)
    throw core::Error(fmt::format("rank {} needs GPU {} on this node but {} {} visible{}", info.rank, info.local_rank,
                                  gpus, gpus == 1 ? "is" : "are", why.empty() ? "" : " (" + why + ")"),
                      "start at most one rank per visible GPU (check CUDA_VISIBLE_DEVICES)");
  SCALESCOPE_CUDA_CHECK(cudaSetDevice(info.local_rank));
  cudaDeviceProp prop{};
  SCALESCOPE_CUDA_CHECK(cudaGetDeviceProperties(&prop, info.local_rank));
  SCALESCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking));
  b->timeline = std::make_unique<gpu::CudaTimeline>(b->stream);
  b->comm = std::make_unique<gpu::NcclCommunicator>(info, id, b->stream);
  b->model = std::make_unique<MlpLmCuda>(model, b->stream);
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  b->device = fmt::format("cuda:{} {} ({} SMs, {:.0f} GB)", info.local_rank, prop.name, prop.multiProcessorCount,
                          prop.totalGlobalMem / 1e9);
  b->library_versions = fmt::format("{}, CUDA runtime {}.{}", nccl_version(), runtime / 1000, (runtime % 1000) / 10);
  return b;
}

}  // namespace scalescope::train
