#include "gpu/step_graph.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.h"
#include "gpu/cuda_check.h"

namespace scalescope::gpu {

StepGraph::StepGraph(cudaStream_t stream) : stream_(stream) {}

void StepGraph::abandon_capture() noexcept {
  if (state_ != State::capturing) return;
  cudaGraph_t unfinished = nullptr;
  cudaStreamEndCapture(stream_, &unfinished);  // fails for an invalidated capture, which still ends it
  if (unfinished) cudaGraphDestroy(unfinished);
  cudaGetLastError();
  state_ = State::empty;
}

StepGraph::~StepGraph() {
  abandon_capture();  // an exception left a capture open
  if (exec_ || graph_) cudaStreamSynchronize(stream_);  // launches in flight; no throw from a destructor
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
}

void StepGraph::destroy() {
  if (exec_) SCALESCOPE_CUDA_CHECK(cudaGraphExecDestroy(exec_));
  if (graph_) SCALESCOPE_CUDA_CHECK(cudaGraphDestroy(graph_));
  exec_ = nullptr;
  graph_ = nullptr;
  node_count_ = 0;
  captured_.clear();
  nodes_.clear();
  current_.clear();
  bound_.clear();
}

void StepGraph::begin_capture() {
  if (state_ != State::empty) throw std::logic_error("StepGraph::begin_capture with a record or capture in place");
  // Thread-local: only this thread's unsafe calls invalidate the capture, not the data loader's or NCCL's
  // proxy thread's (they never touch the captured streams).
  captured_.clear();
  SCALESCOPE_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  state_ = State::capturing;
}

void StepGraph::end_capture() {
  if (state_ != State::capturing) throw std::logic_error("StepGraph::end_capture without begin_capture");
  cudaGraph_t graph = nullptr;
  const cudaError_t err = cudaStreamEndCapture(stream_, &graph);
  state_ = State::empty;
  if (err != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    destroy();
    throw core::Error(fmt::format("capturing the training step into a CUDA graph failed: {} ({})",
                                  cudaGetErrorName(err), cudaGetErrorString(err)),
                      "run without --cuda-graph; rerun with CUDA_LAUNCH_BLOCKING=1 to find the call that cannot be "
                      "captured");
  }
  graph_ = graph;
  // Node priorities: each captured kernel keeps its stream's priority (--stream-priority comm/compute); without
  // this flag the whole graph would run at the priority of the stream it is launched into.
  SCALESCOPE_CUDA_CHECK(cudaGraphInstantiateWithFlags(&exec_, graph_, cudaGraphInstantiateFlagUseNodePriority));

  std::size_t count = 0;
  SCALESCOPE_CUDA_CHECK(cudaGraphGetNodes(graph_, nullptr, &count));
  std::vector<cudaGraphNode_t> all(count);
  SCALESCOPE_CUDA_CHECK(cudaGraphGetNodes(graph_, all.data(), &count));
  node_count_ = count;
  nodes_.assign(captured_.size(), nullptr);
  std::size_t found = 0;
  for (cudaGraphNode_t node : all) {
    cudaGraphNodeType type{};
    SCALESCOPE_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeEventRecord) continue;
    cudaEvent_t event = nullptr;
    SCALESCOPE_CUDA_CHECK(cudaGraphEventRecordNodeGetEvent(node, &event));
    const auto at = std::find(captured_.begin(), captured_.end(), event);
    if (at == captured_.end() || nodes_[static_cast<std::size_t>(at - captured_.begin())] != nullptr) continue;
    nodes_[static_cast<std::size_t>(at - captured_.begin())] = node;
    ++found;
  }
  if (found != captured_.size()) {
    const std::size_t recorded = captured_.size();
    destroy();
    throw core::Error(fmt::format("the CUDA graph of the training step holds {} of the {} timing events recorded "
                                  "while capturing it",
                                  found, recorded),
                      "run without --cuda-graph and report this with the command line");
  }
  current_ = captured_;
  state_ = State::ready;
}

void StepGraph::begin_replay() {
  if (state_ != State::ready) throw std::logic_error("StepGraph::begin_replay without a captured graph");
  bound_.clear();
  state_ = State::binding;
}

void StepGraph::launch() {
  if (state_ == State::binding) {
    state_ = State::ready;
    if (bound_.size() != captured_.size())
      throw core::Error(fmt::format("a replayed training step named {} timing events; its CUDA graph records {}",
                                    bound_.size(), captured_.size()),
                        "run without --cuda-graph and report this with the command line");
    for (std::size_t i = 0; i < bound_.size(); ++i)
      if (bound_[i] != current_[i]) {
        // Affects this and later launches only; launches already enqueued record the events they had.
        SCALESCOPE_CUDA_CHECK(cudaGraphExecEventRecordNodeSetEvent(exec_, nodes_[i], bound_[i]));
        current_[i] = bound_[i];
      }
  }
  if (state_ != State::ready) throw std::logic_error("StepGraph::launch without a captured graph");
  SCALESCOPE_CUDA_CHECK(cudaGraphLaunch(exec_, stream_));
}

void StepGraph::reset() {
  abandon_capture();
  state_ = State::empty;
  SCALESCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_));  // launches in flight still use the graph
  destroy();
}

void StepGraph::record_timing(cudaEvent_t event, cudaStream_t stream) {
  switch (state_) {
    case State::binding:
      bound_.push_back(event);
      return;
    case State::capturing:
      captured_.push_back(event);
      break;
    default:
      break;
  }
  // Inside a capture, External makes this an event-record node that records `event` each time the graph runs
  // (a plain record would only become a dependency edge). Outside a capture CUDA refuses the flag
  // (cudaErrorIllegalState): a plain record.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  SCALESCOPE_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture == cudaStreamCaptureStatusActive)
    SCALESCOPE_CUDA_CHECK(cudaEventRecordWithFlags(event, stream, cudaEventRecordExternal));
  else
    SCALESCOPE_CUDA_CHECK(cudaEventRecord(event, stream));
}

void record_timing(StepGraph* graph, cudaEvent_t event, cudaStream_t stream) {
  if (graph != nullptr) graph->record_timing(event, stream);
  else SCALESCOPE_CUDA_CHECK(cudaEventRecord(event, stream));
}

}  // namespace scalescope::gpu
