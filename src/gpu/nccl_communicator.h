#pragma once
// GPU ranks over NCCL, one process per GPU as PyTorch DDP runs it. All-reduces run on a communication
// stream of their own: each waits on an event recorded on the compute stream when its bucket's gradients
// were issued, so it overlaps the rest of backward; CUDA events around it time it on the device.

#include <cuda_runtime.h>
#include <nccl.h>

#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace scalescope::gpu {

class StepGraph;

/// ncclUniqueId as 256 hex characters (for an environment variable) and back. from_hex throws
/// core::Error on a malformed string.
std::string unique_id_to_hex(const ncclUniqueId& id);
ncclUniqueId unique_id_from_hex(const std::string& hex);

class NcclCommunicator final : public comm::Communicator {
 public:
  /// Joins the communicator of `info.world_size` ranks identified by `id` on the current CUDA device.
  /// `compute_stream` (not owned) is where the model's work runs; the communicator's own stream gets
  /// `stream_priority` (cudaStreamCreateWithPriority: lower is higher, 0 the default). With `graph` (not owned,
  /// outlives this) each all-reduce's start and end events are recorded through it, and while it replays a step
  /// start_all_reduce() and join() issue nothing but name the events (gpu/step_graph.h). Throws core::Error
  /// with NCCL's message (ncclGetErrorString and ncclGetLastError) if initialisation fails.
  NcclCommunicator(const comm::RankInfo& info, const ncclUniqueId& id, cudaStream_t compute_stream,
                   int stream_priority = 0, StepGraph* graph = nullptr);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  std::string backend() const override { return "nccl"; }
  const comm::RankInfo& rank_info() const override { return info_; }
  void start_all_reduce(float* data, std::size_t count, comm::ReduceOp op) override;
  /// ncclAllGather of bytes (ncclInt8) on the communication stream, timed and ordered as the all-reduces.
  void start_all_gather(const void* send, void* received, std::size_t bytes_per_rank) override;
  void join() override;
  /// Makes the compute stream wait (device side, the host does not block) on the end event of the collective
  /// `pending` before the last started; eager steps only (std::logic_error while a StepGraph captures or
  /// replays: the event would not name this step's all-reduce).
  void join_until(std::size_t pending) override;
  std::vector<comm::CollectiveTiming> take_timings() override;
  void broadcast(float* data, std::size_t count, int root) override;
  std::vector<double> all_gather_host(const std::vector<double>& values) override;
  void barrier() override;

 private:
  cudaEvent_t event_at(std::size_t i);
  /// Books collective k (its events, bytes and kind) and returns k; while `graph_` replays, names its events and
  /// returns nothing to launch (std::nullopt).
  std::optional<std::size_t> begin_collective(std::size_t bytes, comm::CollectiveKind kind);
  void end_collective(std::size_t k);
  void check(ncclResult_t r, const char* call);
  void sync_comm_stream();

  comm::RankInfo info_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t compute_;
  StepGraph* graph_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t joined_ = nullptr;  // the communication stream's end, for join() (a dependency, not a timing)
  // Per started all-reduce: ready (compute), start and end (communication stream) events, reused.
  std::vector<cudaEvent_t> events_;
  std::vector<std::size_t> bytes_;
  std::vector<comm::CollectiveKind> kinds_;
  std::size_t started_ = 0;
  double* scratch_ = nullptr;
  std::size_t scratch_elems_ = 0;
};

}  // namespace scalescope::gpu
