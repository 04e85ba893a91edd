#include "gpu/bootstrap.h"

#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdlib>

#include <fmt/format.h>

#include "comm/launcher.h"
#include "comm/mpi_communicator.h"
#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/nccl_communicator.h"

namespace scalescope::gpu {
namespace {
constexpr const char* kEnvNcclId = "SCALESCOPE_NCCL_UNIQUE_ID";
}  // namespace

std::string nccl_version_string() {
  int v = 0;
  ncclGetVersion(&v);
  return fmt::format("NCCL {}.{}.{}", v / 10000, (v / 100) % 100, v % 100);
}

std::vector<std::pair<std::string, std::string>> nccl_launch_environment() {
  ncclUniqueId id;
  ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess)
    throw core::Error(fmt::format("ncclGetUniqueId failed: {}", ncclGetErrorString(r)),
                      "check the network interfaces NCCL may use for bootstrap (NCCL_SOCKET_IFNAME=lo on one node)");
  return {{kEnvNcclId, unique_id_to_hex(id)}};
}

RankBootstrap bootstrap_gpu_rank() {
  RankBootstrap b;
  if (auto from_launcher = comm::rank_from_launcher_environment()) {
    b.info = *from_launcher;
    const char* hex = std::getenv(kEnvNcclId);
    if (!hex)
      throw core::Error(fmt::format("{} is not set", kEnvNcclId),
                        "start GPU ranks through scalescope (it sets it) or under mpirun/srun");
    b.id = unique_id_from_hex(hex);
  } else if (comm::started_by_mpi_launcher()) {
    // Across nodes: MPI gives ranks and carries rank 0's NCCL id to everyone.
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      throw core::Error("MPI_Init_thread failed while bootstrapping NCCL");
    b.mpi_initialised = true;
    b.info = comm::mpi_world_rank_info();
    if (b.info.rank == 0 && ncclGetUniqueId(&b.id) != ncclSuccess) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Bcast(&b.id, sizeof(b.id), MPI_BYTE, 0, MPI_COMM_WORLD);
  } else {
    b.info = comm::RankInfo{0, 1, 0};  // a lone process: world size 1
    if (ncclGetUniqueId(&b.id) != ncclSuccess) throw core::Error("ncclGetUniqueId failed");
  }
  int gpus = 0;
  cudaError_t err = cudaGetDeviceCount(&gpus);
  if (err != cudaSuccess) gpus = 0;
  if (b.info.local_rank >= gpus)
    throw core::Error(fmt::format("rank {} needs GPU {} on this node but {} {} visible{}", b.info.rank,
                                  b.info.local_rank, gpus, gpus == 1 ? "is" : "are",
                                  err != cudaSuccess ? fmt::format(" ({})", cudaGetErrorString(err)) : ""),
                      "start at most one rank per visible GPU (check CUDA_VISIBLE_DEVICES)");
  SCALESCOPE_CUDA_CHECK(cudaSetDevice(b.info.local_rank));
  return b;
}

}  // namespace scalescope::gpu
