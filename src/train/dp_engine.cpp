#include "train/dp_engine.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "core/error.h"

namespace scalescope::train {

DataParallelEngine::DataParallelEngine(Model& model, comm::Communicator& comm, Timeline& timeline,
                                       EngineOptions options, StepReplay* replay)
    : model_(model), comm_(comm), timeline_(timeline), options_(options),
      plan_(BucketPlan::build(model.parameters(), options.buckets)), replay_(replay) {
  if (replay_ != nullptr && !model_.replayable())
    throw core::UsageError(fmt::format("the model {} cannot be captured and replayed (CUDA graphs)", model_.describe()),
                           "drop --cuda-graph, or use a GPT model on GPU ranks");
  if (options_.overlap_optimizer && replay_ != nullptr)
    throw core::UsageError("the optimizer overlap and CUDA-graph replay cannot be combined yet",
                           "drop --overlap-optimizer or --cuda-graph");
  if (options_.overlap_optimizer && plan_.buckets.size() >= 2) {
    // The last bucket holds parameters [0, k) (buckets are packed in reverse order); the rest is [k, n).
    const auto& last = plan_.buckets.back().parameters;
    const std::size_t n = plan_.parameter_bucket.size();
    const std::size_t k = *std::max_element(last.begin(), last.end()) + 1;
    if (k != last.size() || k >= n)
      throw core::Error(fmt::format("the last gradient bucket holds {} parameters that are not the first {} of {}",
                                    last.size(), k, n),
                        "this is a bug in the bucket plan; drop --overlap-optimizer");
    late_parameters_ = {0, k};
    early_parameters_ = {k, n};
  }
  gradients_ = model_.allocate_gradients(plan_.parameter_offset, plan_.total_numel);
  pending_.resize(plan_.buckets.size());
}

void DataParallelEngine::broadcast_initial_parameters() {
  comm_.broadcast(model_.flat_parameters(), model_.parameter_count(), 0);
  model_.parameters_changed();
}

void DataParallelEngine::on_gradient_ready(std::size_t parameter) {
  if (parameter >= plan_.parameter_bucket.size())
    throw core::Error(fmt::format("model reported gradient of unknown parameter {}", parameter));
  std::size_t& left = pending_[plan_.parameter_bucket[parameter]];
  if (left == 0) throw core::Error(fmt::format("model reported parameter {}'s gradient twice", parameter));
  --left;
  ++ready_parameters_;
  if (options_.overlap) launch_ready_buckets();
}

void DataParallelEngine::launch_ready_buckets() {
  // Buckets are launched strictly in order: every rank must issue the same collectives in the same order.
  while (next_bucket_ < plan_.buckets.size() && pending_[next_bucket_] == 0) start_bucket(next_bucket_++);
}

void DataParallelEngine::start_bucket(std::size_t bucket) {
  const auto& b = plan_.buckets[bucket];
  comm_.start_all_reduce(gradients_ + b.offset, b.numel, options_.gradient_reduction);
  if (capturing_) bookkeeping_.push_back({BookkeepingCall::all_reduce, bucket});
}

Marker DataParallelEngine::record_marker(BookkeepingCall::Kind kind) {
  if (capturing_) bookkeeping_.push_back({kind, 0});
  return timeline_.record();
}

void DataParallelEngine::issue_forward_backward_join(const AdamWConfig& adamw, StepMarks& m) {
  model_.forward();
  m.forward_end = record_marker(BookkeepingCall::forward_end);
  model_.backward([this](std::size_t p) { on_gradient_ready(p); });
  m.backward_end = record_marker(BookkeepingCall::backward_end);
  if (ready_parameters_ != plan_.parameter_offset.size())
    throw core::Error(fmt::format("backward reported {} of {} parameter gradients", ready_parameters_,
                                  plan_.parameter_offset.size()));
  launch_ready_buckets();  // without overlap: everything starts now; with overlap: nothing is left
  if (splits_optimizer()) {  // eager steps only: never captured
    comm_.join_until(1);
    m.early_joined = timeline_.record();
    model_.optimizer_step_part(adamw, early_parameters_);
    m.early_optimized = timeline_.record();
  }
  comm_.join();
  if (capturing_) bookkeeping_.push_back({BookkeepingCall::join, 0});
  m.comm_end = record_marker(BookkeepingCall::comm_end);
}

void DataParallelEngine::replay_forward_backward_join(StepMarks& m) {
  replay_->begin_replay();
  for (const auto& call : bookkeeping_) {
    switch (call.kind) {
      case BookkeepingCall::forward_end: m.forward_end = timeline_.record(); break;
      case BookkeepingCall::backward_end: m.backward_end = timeline_.record(); break;
      case BookkeepingCall::comm_end: m.comm_end = timeline_.record(); break;
      case BookkeepingCall::all_reduce: start_bucket(call.bucket); break;
      case BookkeepingCall::join: comm_.join(); break;
    }
  }
  replay_->launch();
  model_.log_replayed_loss();
}

void DataParallelEngine::forward_backward_join(const TokenBatchView& batch, const AdamWConfig& adamw, StepMarks& m) {
  if (replay_ == nullptr) {
    issue_forward_backward_join(adamw, m);
    ++replay_counts_.eager;
    return;
  }
  const std::pair<int, int> shape{batch.rows, batch.row_tokens};
  if (shape != shape_) {  // the record holds the old shape's addresses and sizes
    if (captured_) replay_->reset();
    captured_ = false;
    shape_ = shape;
    eager_since_shape_ = 0;
  }
  if (captured_) {
    replay_forward_backward_join(m);
    ++replay_counts_.replayed;
  } else if (eager_since_shape_ >= kEagerStepsBeforeCapture) {
    bookkeeping_.clear();
    capturing_ = true;
    try {
      replay_->begin_capture();
      issue_forward_backward_join(adamw, m);
      capturing_ = false;
      replay_->end_capture();
    } catch (...) {
      capturing_ = false;
      try {
        replay_->reset();  // ends an unfinished capture; the error being thrown says what went wrong
      } catch (...) {
      }
      throw;
    }
    captured_ = true;
    replay_->launch();  // the capture ran nothing: this step's work runs now, timed by the captured events
    model_.log_replayed_loss();
    ++replay_counts_.captured;
  } else {
    issue_forward_backward_join(adamw, m);
    ++eager_since_shape_;
    ++replay_counts_.eager;
  }
}

void DataParallelEngine::step(const TokenBatchView& batch, double data_wait_seconds, const AdamWConfig& adamw) {
  for (std::size_t b = 0; b < plan_.buckets.size(); ++b) pending_[b] = plan_.buckets[b].parameters.size();
  next_bucket_ = 0;
  ready_parameters_ = 0;

  using Clock = std::chrono::steady_clock;
  const auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  StepMarks m{};
  m.data_wait = data_wait_seconds;
  const auto host_begin = Clock::now();
  m.begin = timeline_.record();
  model_.stage_batch(batch);
  m.staged = timeline_.record();
  const auto host_staged = Clock::now();
  forward_backward_join(batch, adamw, m);
  if (splits_optimizer())
    model_.optimizer_step_part(adamw, late_parameters_);
  else
    model_.optimizer_step(adamw);
  m.optimizer_end = timeline_.record();
  const auto host_end = Clock::now();
  m.host_stage = seconds(host_staged - host_begin);
  m.host_issue = seconds(host_end - host_staged);
  marks_.push_back(m);
}

std::vector<StepTiming> DataParallelEngine::take_step_timings() {
  timeline_.synchronize();
  auto collectives = comm_.take_timings();
  const std::size_t per_step = plan_.buckets.size();
  if (collectives.size() != per_step * marks_.size())
    throw core::Error(fmt::format("expected {} all-reduce timings, got {}", per_step * marks_.size(),
                                  collectives.size()));
  std::vector<StepTiming> out;
  out.reserve(marks_.size());
  for (std::size_t s = 0; s < marks_.size(); ++s) {
    const auto& m = marks_[s];
    StepTiming t;
    t.data_wait = m.data_wait;
    t.stage = timeline_.seconds_between(m.begin, m.staged);
    t.forward = timeline_.seconds_between(m.staged, m.forward_end);
    t.backward = timeline_.seconds_between(m.forward_end, m.backward_end);
    if (splits_optimizer()) {  // compute waited twice, for all but the last bucket and then for it; AdamW ran twice
      t.exposed_comm = timeline_.seconds_between(m.backward_end, m.early_joined) +
                       timeline_.seconds_between(m.early_optimized, m.comm_end);
      t.optimizer = timeline_.seconds_between(m.early_joined, m.early_optimized) +
                    timeline_.seconds_between(m.comm_end, m.optimizer_end);
    } else {
      t.exposed_comm = timeline_.seconds_between(m.backward_end, m.comm_end);
      t.optimizer = timeline_.seconds_between(m.comm_end, m.optimizer_end);
    }
    t.total = t.data_wait + timeline_.seconds_between(m.begin, m.optimizer_end);
    t.host_stage = m.host_stage;
    t.host_issue = m.host_issue;
    for (std::size_t k = 0; k < per_step; ++k) {
      const auto& c = collectives[s * per_step + k];
      t.all_reduce_seconds += c.seconds;
      t.all_reduce_bytes += c.bytes;
    }
    if (per_step > 0) t.last_all_reduce_seconds = collectives[s * per_step + per_step - 1].seconds;
    t.all_reduce_count = static_cast<int>(per_step);
    out.push_back(t);
  }
  marks_.clear();
  timeline_.clear();
  return out;
}

}  // namespace scalescope::train
