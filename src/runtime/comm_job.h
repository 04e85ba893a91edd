#pragma once
// `scalescope comm` live: the collective sweep on GPU ranks (NCCL) or CPU ranks (MPI), started on this node by
// scalescope itself (or under mpirun/srun across nodes), with rank 0's sweeps handed back to the launcher.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/sweep.h"
#include "comm/bench_backend.h"
#include "comm/sweep_runner.h"
#include "train/backend.h"

namespace scalescope::runtime {

struct CommJobConfig {
  train::BackendKind backend = train::BackendKind::cpu;
  int world_size = 1;
  comm::SweepConfig sweep;
  double timeout_seconds = 1800;
  bool progress = true;
  /// Throws core::UsageError (bad sweep parameters, world size < 1).
  void validate() const;
};
void to_json(nlohmann::json& j, const CommJobConfig& c);
void from_json(const nlohmann::json& j, CommJobConfig& c);

/// What rank 0 measured.
struct CommRun {
  std::string backend;          ///< "nccl" or "mpi"
  std::string device;           ///< rank 0's device
  std::string library_version;  ///< "NCCL 2.28.3" / "Open MPI v4.1.6"
  int world_size = 1;
  std::vector<analyze::Sweep> sweeps;
};
void to_json(nlohmann::json& j, const CommRun& r);
void from_json(const nlohmann::json& j, CommRun& r);

/// The benchmark backend of this rank: MPI for CPU ranks, NCCL for GPU ranks (bootstrapped as for
/// training). Defined beside the training backends (backend_cpu.cpp, gpu/backend_cuda.cpp,
/// backend_nocuda.cpp). Throws core::Error.
std::unique_ptr<comm::BenchBackend> make_bench_backend(train::BackendKind kind);

/// Runs this process as one rank of the sweep; rank 0 returns the result. Throws core::Error.
std::optional<CommRun> run_comm_rank(const CommJobConfig& config);

/// Starts the ranks on this node (train::launch_rank_processes), waits, returns rank 0's result.
CommRun launch_comm_job(const CommJobConfig& config);

/// Runs this process as a rank launch_comm_job started (`comm --internal-job JOB_FILE`): reads the job file it wrote,
/// runs the rank, and rank 0 writes its result where the job file says. Throws core::Error, naming the file when it is
/// not such a job.
void run_comm_job_file(const std::string& job_path);

}  // namespace scalescope::runtime
