#pragma once
// How a GPU rank learns its place and the NCCL unique id: from scalescope's own launcher (SCALESCOPE_*
// environment), from MPI under mpirun/srun (rank 0 broadcasts the id, as nccl-tests does), or alone.

#include <nccl.h>

#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.h"

namespace scalescope::gpu {

struct RankBootstrap {
  comm::RankInfo info;
  ncclUniqueId id{};
  bool mpi_initialised = false;  ///< MPI_Init was called here: call MPI_Finalize at the end
};

/// Determines rank, world size, local rank and the NCCL unique id, then selects the local rank's GPU
/// (cudaSetDevice). Throws core::Error when the environment is malformed, the id is missing, or the local
/// rank has no GPU.
RankBootstrap bootstrap_gpu_rank();

/// The environment a scalescope-launched GPU rank needs from its launcher: SCALESCOPE_NCCL_UNIQUE_ID (the
/// launcher process hosts NCCL's bootstrap root while the ranks start). Throws core::Error.
std::vector<std::pair<std::string, std::string>> nccl_launch_environment();

/// "NCCL 2.28.3".
std::string nccl_version_string();

}  // namespace scalescope::gpu
