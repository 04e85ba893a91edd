#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "comm/mpi_communicator.h"
#include "core/error.h"
#include "train/backend.h"
#include "train/cpu/mlp_lm_cpu.h"
#include "train/cpu_timeline.h"

namespace scalescope::train {

std::string to_string(BackendKind kind) { return kind == BackendKind::cpu ? "cpu" : "gpu"; }

BackendKind parse_backend_kind(const std::string& text) {
  if (text == "cpu") return BackendKind::cpu;
  if (text == "gpu") return BackendKind::gpu;
  throw core::UsageError(fmt::format("unknown backend '{}'", text), "use --backend cpu or --backend gpu");
}

int cpu_core_count() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

std::string to_string(StreamPriority priority) {
  switch (priority) {
    case StreamPriority::equal: return "equal";
    case StreamPriority::comm: return "comm";
    case StreamPriority::compute: return "compute";
  }
  return "?";
}

StreamPriority parse_stream_priority(const std::string& text) {
  if (text == "equal") return StreamPriority::equal;
  if (text == "comm") return StreamPriority::comm;
  if (text == "compute") return StreamPriority::compute;
  throw core::UsageError(fmt::format("unknown stream priority '{}'", text),
                         "use --stream-priority equal, comm or compute");
}

std::unique_ptr<RankBackend> make_cpu_rank_backend(const ModelSpec& model) {
  auto b = std::make_unique<RankBackend>();
  auto comm = std::make_unique<comm::MpiCommunicator>();
  b->library_versions = comm->library_version();
  b->comm = std::move(comm);
  // One core per rank: a CPU rank stands for one device, so scaling compares like with like.
  openblas_set_num_threads(1);
  b->timeline = std::make_unique<CpuTimeline>();
  b->model = make_cpu_model(model);
  // Ranks on this node as Open MPI's mpirun (scalescope's own launcher) reports them; other launchers: not known.
  const int cores = cpu_core_count();
  const char* local_size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int ranks = local_size != nullptr ? std::atoi(local_size) : 1;
  b->device = ranks <= cores ? "cpu (1 core per rank, OpenBLAS fp32)"
                             : fmt::format("cpu ({} ranks on {} cores: oversubscribed, ranks share cores; OpenBLAS fp32)",
                                           ranks, cores);
  return b;
}

}  // namespace scalescope::train
