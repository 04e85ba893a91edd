#include "gpu/nccl_communicator.h"

#include <stdexcept>

#include <fmt/format.h>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/step_graph.h"

namespace scalescope::gpu {

std::string unique_id_to_hex(const ncclUniqueId& id) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (char c : id.internal) {
    auto b = static_cast<unsigned char>(c);
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 15]);
  }
  return out;
}

ncclUniqueId unique_id_from_hex(const std::string& hex) {
  ncclUniqueId id{};
  if (hex.size() != 2 * sizeof(id.internal))
    throw core::Error(fmt::format("NCCL unique id has {} hex digits, expected {}", hex.size(), 2 * sizeof(id.internal)),
                      "unset SCALESCOPE_NCCL_UNIQUE_ID; scalescope sets it for the ranks it starts");
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw core::Error("NCCL unique id holds a non-hex character");
  };
  for (std::size_t i = 0; i < sizeof(id.internal); ++i)
    id.internal[i] = static_cast<char>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
  return id;
}

void NcclCommunicator::check(ncclResult_t r, const char* call) {
  if (r == ncclSuccess || r == ncclInProgress) return;
  const char* last = comm_ ? ncclGetLastError(comm_) : ncclGetLastError(nullptr);
  throw core::Error(fmt::format("NCCL error in {} on rank {}: {}{}{}", call, info_.rank, ncclGetErrorString(r),
                                last && *last ? ": " : "", last ? last : ""),
                    "rerun with NCCL_DEBUG=INFO to see NCCL's own log; a peer rank may have died");
}

NcclCommunicator::NcclCommunicator(const comm::RankInfo& info, const ncclUniqueId& id, cudaStream_t compute_stream,
                                   int stream_priority, StepGraph* graph)
    : info_(info), compute_(compute_stream), graph_(graph) {
  SCALESCOPE_CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, stream_priority));
  SCALESCOPE_CUDA_CHECK(cudaEventCreateWithFlags(&joined_, cudaEventDisableTiming));
  check(ncclCommInitRank(&comm_, info.world_size, id, info.rank), "ncclCommInitRank");
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_) {
    cudaStreamSynchronize(stream_);
    ncclCommDestroy(comm_);
  }
  for (auto e : events_) cudaEventDestroy(e);
  if (joined_) cudaEventDestroy(joined_);
  if (scratch_) cudaFree(scratch_);
  if (stream_) cudaStreamDestroy(stream_);
}

cudaEvent_t NcclCommunicator::event_at(std::size_t i) {
  while (events_.size() <= i) {
    cudaEvent_t e;
    SCALESCOPE_CUDA_CHECK(cudaEventCreate(&e));
    events_.push_back(e);
  }
  return events_[i];
}

std::optional<std::size_t> NcclCommunicator::begin_collective(std::size_t bytes, comm::CollectiveKind kind) {
  const std::size_t k = started_++;
  cudaEvent_t ready = event_at(3 * k), start = event_at(3 * k + 1), end = event_at(3 * k + 2);
  if (bytes_.size() <= k) {
    bytes_.resize(k + 1);
    kinds_.resize(k + 1);
  }
  bytes_[k] = bytes;
  kinds_[k] = kind;
  if (graph_ != nullptr && graph_->replaying()) {  // the graph runs the collective; name this step's events
    graph_->record_timing(start, stream_);
    graph_->record_timing(end, stream_);
    return std::nullopt;
  }
  // `ready` is a dependency (inside a capture it joins this stream to the captured compute stream).
  SCALESCOPE_CUDA_CHECK(cudaEventRecord(ready, compute_));
  SCALESCOPE_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready, 0));
  // `start` completes once the inputs are ready and the previous collective is done, so start→end is the
  // collective itself, including any wait for slower peers (a straggler shows up here).
  record_timing(graph_, start, stream_);
  return k;
}

void NcclCommunicator::end_collective(std::size_t k) { record_timing(graph_, event_at(3 * k + 2), stream_); }

void NcclCommunicator::start_all_reduce(float* data, std::size_t count, comm::ReduceOp op) {
  const auto k = begin_collective(count * sizeof(float), comm::CollectiveKind::all_reduce);
  if (!k) return;
  // Over one rank the in-place average is the identity, but NCCL still runs a kernel for ncclAvg (its one-rank
  // path scales by 1/1: a full read and write of the gradients, 0.8 ms per step for gpt2-124m on H200, overlapping
  // backward); an in-place ncclSum over one rank launches nothing. PyTorch DDP at world size 1 runs no NCCL kernel
  // either, so T(1) of the scaling efficiency compares like with like.
  const ncclRedOp_t nccl_op = op == comm::ReduceOp::average && info_.world_size > 1 ? ncclAvg : ncclSum;
  check(ncclAllReduce(data, data, count, ncclFloat32, nccl_op, comm_, stream_), "ncclAllReduce");
  end_collective(*k);
}

void NcclCommunicator::start_all_gather(const void* send, void* received, std::size_t bytes_per_rank) {
  const auto k = begin_collective(bytes_per_rank, comm::CollectiveKind::all_gather);
  if (!k) return;
  check(ncclAllGather(send, received, bytes_per_rank, ncclInt8, comm_, stream_), "ncclAllGather");
  end_collective(*k);
}

void NcclCommunicator::join() {
  if (started_ == 0 || (graph_ != nullptr && graph_->replaying())) return;
  // Device-side wait: the optimizer waits for the last all-reduce without blocking the host. A dependency
  // event of its own (not the timing event `end`, which a capture turns into a graph node).
  SCALESCOPE_CUDA_CHECK(cudaEventRecord(joined_, stream_));
  SCALESCOPE_CUDA_CHECK(cudaStreamWaitEvent(compute_, joined_, 0));
}

void NcclCommunicator::join_until(std::size_t pending) {
  if (pending == 0) return join();
  if (started_ <= pending) return;
  if (graph_ != nullptr && (graph_->capturing() || graph_->replaying()))
    throw std::logic_error("NcclCommunicator::join_until inside a CUDA graph's capture or replay");
  // The timing event `end` of that all-reduce is a dependency as good as any outside a capture.
  SCALESCOPE_CUDA_CHECK(cudaStreamWaitEvent(compute_, event_at(3 * (started_ - 1 - pending) + 2), 0));
}

std::vector<comm::CollectiveTiming> NcclCommunicator::take_timings() {
  std::vector<comm::CollectiveTiming> out;
  for (std::size_t k = 0; k < started_; ++k) {
    SCALESCOPE_CUDA_CHECK(cudaEventSynchronize(event_at(3 * k + 2)));
    float ms = 0;
    SCALESCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, event_at(3 * k + 1), event_at(3 * k + 2)));
    out.push_back({bytes_[k], static_cast<double>(ms) * 1e-3, kinds_[k]});
  }
  ncclResult_t async_error = ncclSuccess;
  check(ncclCommGetAsyncError(comm_, &async_error), "ncclCommGetAsyncError");
  check(async_error, "an asynchronous NCCL operation");
  started_ = 0;
  return out;
}

void NcclCommunicator::sync_comm_stream() { SCALESCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

void NcclCommunicator::broadcast(float* data, std::size_t count, int root) {
  SCALESCOPE_CUDA_CHECK(cudaStreamSynchronize(compute_));
  check(ncclBroadcast(data, data, count, ncclFloat32, root, comm_, stream_), "ncclBroadcast");
  sync_comm_stream();
}

std::vector<double> NcclCommunicator::all_gather_host(const std::vector<double>& values) {
  const std::size_t n = values.size(), total = n * static_cast<std::size_t>(info_.world_size);
  if (scratch_elems_ < total + n) {
    if (scratch_) SCALESCOPE_CUDA_CHECK(cudaFree(scratch_));
    SCALESCOPE_CUDA_CHECK(cudaMalloc(&scratch_, (total + n) * sizeof(double)));
    scratch_elems_ = total + n;
  }
  double* send = scratch_ + total;
  SCALESCOPE_CUDA_CHECK(cudaMemcpyAsync(send, values.data(), n * sizeof(double), cudaMemcpyHostToDevice, stream_));
  check(ncclAllGather(send, scratch_, n, ncclFloat64, comm_, stream_), "ncclAllGather");
  std::vector<double> out(total);
  SCALESCOPE_CUDA_CHECK(cudaMemcpyAsync(out.data(), scratch_, total * sizeof(double), cudaMemcpyDeviceToHost, stream_));
  sync_comm_stream();
  return out;
}

void NcclCommunicator::barrier() { all_gather_host({0.0}); }

}  // namespace scalescope::gpu
