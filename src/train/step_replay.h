#pragma once
// Replaying a training step's device work instead of issuing it again (CUDA graphs: gpu/step_graph.h).
// A GPT step issues ~800 kernels, each a host launch call; recorded once and launched as one graph, the host no
// longer issues them one by one. The arithmetic is unchanged. Measured on 2 × H200 (bench/RESULTS.md): tiny-14m
// −4 % per step at 2 GPUs, gpt2-124m and gpt-1.3b within ±0.5 %; the gaps between kernels on the GPU stay as
// long as when issued eagerly.

namespace scalescope::train {

/// One rank's recorder and player of a step's device work: forward, backward with its all-reduces, and the
/// join that makes the optimizer wait for them. DataParallelEngine drives it:
///   capture step:  begin_capture(); <forward, backward, all-reduces, join issued as usual>; end_capture(); launch();
///   later steps:   begin_replay();  <the engine repeats only its timeline markers and all-reduce starts>; launch();
/// Between begin_replay() and launch() the timeline and the communicator issue no device work: they name the
/// events that time the replayed step (the markers and each all-reduce's start and end), in capture order.
/// The record is valid for the batch shape it was captured with; reset() forgets it.
/// Errors (a call that cannot be captured, a replay whose events do not match the capture) throw core::Error.
class StepReplay {
 public:
  virtual ~StepReplay() = default;
  /// Starts recording the compute stream (and the streams that join it) instead of running it.
  virtual void begin_capture() = 0;
  /// Stops recording and prepares the record for launches. Nothing recorded has run yet.
  virtual void end_capture() = 0;
  /// Until launch(): timing events are bound to the record instead of being issued.
  virtual void begin_replay() = 0;
  /// Enqueues the recorded work on the compute stream (with the events bound since begin_replay(), if any).
  virtual void launch() = 0;
  /// Forgets the record (the next step issues eagerly). Synchronises the compute stream.
  virtual void reset() = 0;
  /// True between begin_replay() and launch().
  virtual bool replaying() const = 0;
};

}  // namespace scalescope::train
