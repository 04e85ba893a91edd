#pragma once
// CPU ranks over Open MPI. One progress thread per rank owns every MPI call (it initialises MPI, runs the
// collectives in order, and finalises), so all-reduces proceed while the main thread computes backward —
// the CPU counterpart of NCCL's separate stream. Only MPI_THREAD_FUNNELED is needed from the library.

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"

namespace scalescope::comm {

/// True when this process was started by an MPI launcher (mpirun/mpiexec of Open MPI, or srun/PMIx),
/// judged from the launchers' environment variables; then MPI assigns rank and world size.
bool started_by_mpi_launcher();

/// The remedy for a rank count that differs from the world size asked for (`flag`: "--world-size"): start as many
/// ranks; and, when this process was taken for an MPI rank only because a launcher's variable is set (an
/// `srun --pty bash` shell keeps PMIX_RANK; a copied environment keeps OMPI_COMM_WORLD_SIZE), the variables by name
/// and value, to unset when it was not started by mpirun or srun.
std::string rank_count_remedy(const std::string& flag);

/// Rank, world size and node-local rank of this process in MPI_COMM_WORLD (local rank from a shared-memory
/// split, so it works under any launcher). MPI must be initialised. Throws core::Error on an MPI failure.
RankInfo mpi_world_rank_info();

/// The first line of MPI_Get_library_version, e.g. "Open MPI v4.1.4". MPI must be initialised.
std::string mpi_library_version();

class MpiCommunicator final : public Communicator {
 public:
  /// Initialises MPI on the progress thread and reads rank, world size and the node-local rank.
  /// Throws core::Error if MPI cannot be initialised (its error text is included).
  MpiCommunicator();
  /// Finalises MPI on the progress thread. Collectives still queued are completed first.
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  std::string backend() const override { return "mpi"; }
  const RankInfo& rank_info() const override { return info_; }
  void start_all_reduce(float* data, std::size_t count, ReduceOp op) override;
  /// MPI_Allgather of MPI_BYTE on the progress thread, queued after the collectives already started.
  void start_all_gather(const void* send, void* received, std::size_t bytes_per_rank) override;
  void join() override;
  /// Blocks until every queued task but the last `pending` has completed (only all-reduces and all-gathers
  /// can be queued without waiting: broadcasts and host all-gathers wait for themselves).
  void join_until(std::size_t pending) override;
  std::vector<CollectiveTiming> take_timings() override;
  void broadcast(float* data, std::size_t count, int root) override;
  std::vector<double> all_gather_host(const std::vector<double>& values) override;
  void barrier() override;
  /// "Open MPI v4.1.4, …" as MPI_Get_library_version reports it (first line).
  const std::string& library_version() const { return library_version_; }

 private:
  void run();
  /// Queues `task` on the progress thread and, if `wait`, blocks until it ran; rethrows its error.
  void submit(std::function<void()> task, bool wait);
  /// Queues `collective` without waiting, timed on the progress thread (steady clock) into timings_ as a
  /// collective of `kind` and `bytes`.
  void submit_timed(std::size_t bytes, CollectiveKind kind, std::function<void()> collective);
  void rethrow_if_failed();

  RankInfo info_;
  std::string library_version_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::size_t submitted_ = 0, completed_ = 0;
  std::string failure_;
  std::vector<CollectiveTiming> timings_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace scalescope::comm
