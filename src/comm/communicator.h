#pragma once
// One interface over the collectives a data-parallel engine needs. Implementations:
//   MpiCommunicator  (CPU ranks, Open MPI; all-reduces run on a progress thread)
//   NcclCommunicator (GPU ranks, NCCL; all-reduces run on a separate CUDA stream)
// The engine never sees which one it has: the same DP logic runs on CPU ranks and GPU ranks.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace scalescope::comm {

/// Reduction applied by an all-reduce. `average` divides the sum by the world size, as DDP's gradient
/// averaging does (NCCL: ncclAvg; MPI: sum then scale by 1/world_size on the progress thread).
enum class ReduceOp { sum, average };

/// Where a rank sits in the job. Filled by the launcher (see launcher.h) or read from mpirun/srun.
struct RankInfo {
  int rank = 0;        ///< global rank, 0 .. world_size-1
  int world_size = 1;  ///< number of ranks in the job
  int local_rank = 0;  ///< rank among the ranks of this node: selects the GPU (cudaSetDevice(local_rank))
};

/// Which asynchronous collective a timing belongs to.
enum class CollectiveKind { all_reduce, all_gather };

/// Measured time of one asynchronous collective, in seconds on the rank's own clock
/// (CUDA events on the communication stream, or steady_clock on the progress thread).
struct CollectiveTiming {
  std::size_t bytes = 0;    ///< payload size in bytes (count × element size; all-gather: what one rank sends)
  double seconds = 0.0;     ///< from the moment the collective could start (its inputs ready and the
                            ///< previous collective done) to its completion; includes waiting for peers
  CollectiveKind kind = CollectiveKind::all_reduce;
};

/// Collectives of one rank. Not thread-safe: call from the rank's main thread only.
///
/// Asynchronous all-reduces are executed in the order they are started, one at a time, on a channel
/// separate from compute (a CUDA stream or a progress thread), which is what lets them overlap backward.
/// Every rank must start the same collectives in the same order with the same counts, as in NCCL and MPI.
class Communicator {
 public:
  virtual ~Communicator() = default;

  /// "mpi" or "nccl".
  virtual std::string backend() const = 0;
  virtual const RankInfo& rank_info() const = 0;
  int rank() const { return rank_info().rank; }
  int world_size() const { return rank_info().world_size; }

  /// Starts an in-place all-reduce of `count` fp32 elements at `data`, ordered after all compute issued so
  /// far on this rank (for NCCL: `data` is device memory and the communication stream waits on an event
  /// recorded on the compute stream; for MPI: host memory, queued to the progress thread).
  /// Returns at once. Throws core::Error if the channel already failed.
  virtual void start_all_reduce(float* data, std::size_t count, ReduceOp op) = 0;

  /// Starts an all-gather of `bytes_per_rank` bytes from every rank: `received` (world_size × bytes_per_rank
  /// bytes, rank-major) gets rank r's `send` at offset r × bytes_per_rank. Queued with the all-reduces, in start
  /// order, on the same channel, and ordered after all compute issued so far (NCCL: device memory; MPI: host
  /// memory). `send` and `received` must not overlap. Returns at once; join() waits for it as for an
  /// all-reduce, and take_timings() reports it with kind all_gather and `bytes` = bytes_per_rank. Throws
  /// core::Error if the channel already failed or the size exceeds the backend's count type.
  virtual void start_all_gather(const void* send, void* received, std::size_t bytes_per_rank) = 0;

  /// Makes compute wait until every started all-reduce has finished (NCCL: the compute stream waits on
  /// the communication stream, no host block; MPI: blocks the calling thread). Throws core::Error if a
  /// collective failed (the error names the backend's message).
  virtual void join() = 0;

  /// As join(), but for all started collectives except the last `pending` ones, which may go on running (the
  /// engine's overlap_optimizer updates the parameters of the finished buckets meanwhile). join_until(0) is
  /// join(); with `pending` ≥ the all-reduces started since the last take_timings() it waits for nothing. This
  /// default waits for all of them (correct, overlapping nothing); NCCL and MPI wait for exactly the ones asked for.
  virtual void join_until(std::size_t pending) {
    (void)pending;
    join();
  }

  /// Timings of the all-reduces and all-gathers started since the last call, in start order. Blocks until they completed.
  virtual std::vector<CollectiveTiming> take_timings() = 0;

  /// Blocking broadcast of `count` fp32 elements at `data` (device memory for NCCL) from `root` to all.
  /// Used once at start so every rank begins from rank 0's parameters, as DDP does.
  virtual void broadcast(float* data, std::size_t count, int root) = 0;

  /// Blocking all-gather of one small host vector per rank (control plane: timings, losses).
  /// Every rank passes the same `values.size()`. Returns world_size × values.size() values, rank-major.
  virtual std::vector<double> all_gather_host(const std::vector<double>& values) = 0;

  /// Blocking barrier over all ranks.
  virtual void barrier() = 0;
};

}  // namespace scalescope::comm
