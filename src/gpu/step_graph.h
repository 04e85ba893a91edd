#pragma once
// CUDA graphs for DataParallelEngine's step replay (train/step_replay.h), PyTorch's torch.cuda.CUDAGraph in
// spirit: the compute stream is captured (cudaStreamBeginCapture, thread-local mode), the NCCL stream joins the
// capture through the events the communicator already records, and the instantiated graph is launched each step.
//
// Timing survives replay: timeline markers and each all-reduce's start/end events are recorded through
// record_timing(), which inside a capture makes them event-record nodes (cudaEventRecordExternal) and remembers
// them in capture order. A replayed step names fresh events in the same order (the engine repeats its
// bookkeeping between begin_replay() and launch()), and launch() points each node at its new event
// (cudaGraphExecEventRecordNodeSetEvent; launches already enqueued keep theirs). So forward, backward,
// exposed communication and every all-reduce stay timed by CUDA events, step by step.

#include <cuda_runtime.h>

#include <vector>

#include "train/step_replay.h"

namespace scalescope::gpu {

/// Destroy it before the NCCL communicator whose collectives it captured: ncclCommDestroy waits until no CUDA
/// graph holds them (NCCL counts them as persistent references), so the other order never returns.
class StepGraph final : public train::StepReplay {
 public:
  /// `stream` (not owned, outlives this) is the rank's compute stream: captured, and where the graph runs.
  explicit StepGraph(cudaStream_t stream);
  ~StepGraph() override;
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  void begin_capture() override;
  /// Throws core::Error naming CUDA's reason when the capture was invalidated (an operation that cannot be
  /// captured was issued) or when the graph holds a different number of timing nodes than were recorded.
  void end_capture() override;
  void begin_replay() override;
  /// Throws core::Error when the events bound since begin_replay() are not as many as the capture recorded.
  void launch() override;
  void reset() override;
  bool replaying() const override { return state_ == State::binding; }
  /// Between begin_capture() and end_capture().
  bool capturing() const { return state_ == State::capturing; }

  /// Records `event` on `stream` as a timing point (see the file comment). Eager: cudaEventRecord. Capturing: an
  /// event-record node, remembered. Replaying: nothing is issued; `event` is bound to the next remembered node.
  void record_timing(cudaEvent_t event, cudaStream_t stream);

  /// Kernel, memset, copy and event nodes of the current record (0 without one): for tests and reports.
  std::size_t node_count() const { return node_count_; }

 private:
  enum class State { empty, capturing, ready, binding };
  void destroy();
  /// Ends an open capture and discards what it recorded (errors swallowed: it runs on error paths).
  void abandon_capture() noexcept;

  cudaStream_t stream_;
  State state_ = State::empty;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  std::size_t node_count_ = 0;
  std::vector<cudaEvent_t> captured_;       // timing events in capture order
  std::vector<cudaGraphNode_t> nodes_;      // their event-record nodes, same order
  std::vector<cudaEvent_t> current_;        // the event each node records in the instantiated graph now
  std::vector<cudaEvent_t> bound_;          // events named since begin_replay()
};

/// record_timing through `graph` when there is one, else a plain cudaEventRecord.
void record_timing(StepGraph* graph, cudaEvent_t event, cudaStream_t stream);

}  // namespace scalescope::gpu
