#include "train/dp_engine.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "core/error.h"

namespace scalescope::train {

const char* to_string(EmbeddingExchange exchange) {
  switch (exchange) {
    case EmbeddingExchange::automatic: return "auto";
    case EmbeddingExchange::all_reduce: return "all-reduce";
    case EmbeddingExchange::all_gather: return "all-gather";
  }
  return "?";
}

EmbeddingExchange parse_embedding_exchange(const std::string& text) {
  for (auto e : {EmbeddingExchange::automatic, EmbeddingExchange::all_reduce, EmbeddingExchange::all_gather})
    if (text == to_string(e)) return e;
  throw core::UsageError(fmt::format("unknown embedding exchange '{}'", text), "use auto, all-reduce or all-gather");
}

bool prefer_embedding_gather(const EmbeddingGather& gather, int world_size, int rows_per_rank) {
  if (world_size < 2 || rows_per_rank <= 0) return false;
  const double per_rank = static_cast<double>(rows_per_rank) * static_cast<double>(gather.gather_bytes_per_row);
  return per_rank < 2.0 * static_cast<double>(gather.table_gradient_bytes) / world_size;
}

namespace {

/// The embedding exchange `options` ask for on `model` over `world_size` ranks: the model's EmbeddingGather when
/// it is all-gathered, else nothing. Throws core::UsageError for an all_gather that cannot be done.
std::optional<EmbeddingGather> chosen_gather(const Model& model, int world_size, const EngineOptions& options) {
  const auto gather = model.embedding_gather();
  switch (options.embedding_exchange) {
    case EmbeddingExchange::all_reduce:
      return std::nullopt;
    case EmbeddingExchange::automatic:
      if (!gather || options.overlap_optimizer || options.gradient_reduction != comm::ReduceOp::average ||
          !prefer_embedding_gather(*gather, world_size, options.rows_per_rank))
        return std::nullopt;
      return gather;
    case EmbeddingExchange::all_gather:
      if (!gather)
        throw core::UsageError(fmt::format("{} has no tied embedding whose gradient could be all-gathered", model.describe()),
                               "use --embedding-exchange all-reduce (or auto) with this model");
      if (options.overlap_optimizer)
        throw core::UsageError("the embedding all-gather and the optimizer overlap cannot be combined",
                               "drop --overlap-optimizer or use --embedding-exchange all-reduce");
      // The gathered part is averaged by the model (scale 1 / world size); a summing test hook would mix the two.
      if (options.gradient_reduction != comm::ReduceOp::average)
        throw core::UsageError("the embedding all-gather averages the gradients it gathers; it cannot sum them",
                               "use --embedding-exchange all-reduce with --internal-gradient-reduction sum");
      if (world_size < 2) return std::nullopt;  // one rank: nothing to gather
      return gather;
  }
  return std::nullopt;
}

}  // namespace

BucketPlan DataParallelEngine::plan_for(const Model& model, const std::optional<EmbeddingGather>& gather,
                                        const BucketConfig& config) {
  if (!gather) return BucketPlan::build(model.parameters(), config);
  // Backward completes the head's part of the token table first, then the rest in reverse order; the position
  // table's gradient comes from the gathered rows.
  const std::size_t n = model.parameters().size();
  if (gather->token_table >= n || gather->position_table >= n || gather->token_table == gather->position_table)
    throw core::Error(fmt::format("the model's embedding tables ({}, {}) are not two of its {} parameters",
                                  gather->token_table, gather->position_table, n),
                      "this is a bug in the model; use --embedding-exchange all-reduce");
  std::vector<std::size_t> order{gather->token_table};
  for (std::size_t k = n; k-- > 0;)
    if (k != gather->token_table && k != gather->position_table) order.push_back(k);
  return BucketPlan::build_in_order(model.parameters(), order, config);
}

DataParallelEngine::DataParallelEngine(Model& model, comm::Communicator& comm, Timeline& timeline,
                                       EngineOptions options, StepReplay* replay)
    : model_(model), comm_(comm), timeline_(timeline), options_(options),
      gather_(chosen_gather(model, comm.world_size(), options)), plan_(plan_for(model, gather_, options.buckets)),
      replay_(replay) {
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
  if (gather_) model_.gather_embedding_gradient(comm_.world_size());
  gradients_ = model_.allocate_gradients(plan_.parameter_offset, plan_.total_numel);
  pending_.resize(plan_.buckets.size());
  for (const auto& b : plan_.buckets) bucketed_parameters_ += b.parameters.size();
}

void DataParallelEngine::broadcast_initial_parameters() {
  comm_.broadcast(model_.flat_parameters(), model_.parameter_count(), 0);
  model_.parameters_changed();
}

void DataParallelEngine::on_gradient_ready(std::size_t parameter) {
  if (parameter >= plan_.parameter_bucket.size() || plan_.parameter_bucket[parameter] == BucketPlan::kNoBucket)
    throw core::Error(fmt::format("model reported gradient of {} parameter {}",
                                  parameter >= plan_.parameter_bucket.size() ? "unknown" : "unbucketed", parameter));
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
  if (ready_marks_) ready_marks_->push_back(timeline_.record());  // eager backward: when this bucket was ready
  comm_.start_all_reduce(gradients_ + b.offset, b.numel, options_.gradient_reduction);
  if (capturing_) bookkeeping_.push_back({BookkeepingCall::all_reduce, bucket});
}

void DataParallelEngine::start_gather(BookkeepingCall::Kind kind) {
  const EmbeddingGatherBuffers b = model_.embedding_gather_buffers();
  if (kind == BookkeepingCall::gather_tokens)
    comm_.start_all_gather(b.tokens, b.gathered_tokens, b.token_bytes);
  else
    comm_.start_all_gather(b.row_gradients, b.gathered_row_gradients, b.row_gradient_bytes);
  if (capturing_) bookkeeping_.push_back({kind, 0});
}

Marker DataParallelEngine::record_marker(BookkeepingCall::Kind kind) {
  if (capturing_) bookkeeping_.push_back({kind, 0});
  return timeline_.record();
}

void DataParallelEngine::issue_forward_backward_join(const AdamWConfig& adamw, StepMarks& m) {
  if (gather_) start_gather(BookkeepingCall::gather_tokens);  // tiny; done long before the scatter-add reads it
  model_.forward();
  m.forward_end = record_marker(BookkeepingCall::forward_end);
  // Each bucket's readiness is marked as its all-reduce is issued during backward; not while capturing a CUDA graph
  // (the record's markers are bound in a fixed order) and not without overlap (nothing starts before backward ends).
  if (!capturing_ && options_.overlap) ready_marks_ = &m.bucket_ready;
  model_.backward([this](std::size_t p) { on_gradient_ready(p); });
  ready_marks_ = nullptr;
  m.backward_end = record_marker(BookkeepingCall::backward_end);
  if (ready_parameters_ != bucketed_parameters_)
    throw core::Error(fmt::format("backward reported {} of {} parameter gradients", ready_parameters_,
                                  bucketed_parameters_));
  launch_ready_buckets();  // without overlap: everything starts now; with overlap: nothing is left
  if (gather_) start_gather(BookkeepingCall::gather_row_gradients);
  if (splits_optimizer()) {  // eager steps only: never captured
    comm_.join_until(1);
    m.early_joined = timeline_.record();
    model_.optimizer_step_part(adamw, early_parameters_);
    m.early_optimized = timeline_.record();
  }
  comm_.join();
  if (capturing_) bookkeeping_.push_back({BookkeepingCall::join, 0});
  // Part of the exchange, so counted in the exposed communication: tens of µs of scatter-add on GPU.
  if (gather_) model_.apply_gathered_embedding_gradient();
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
      case BookkeepingCall::gather_tokens:
      case BookkeepingCall::gather_row_gradients: start_gather(call.kind); break;
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
  const std::size_t per_step = plan_.buckets.size() + (gather_ ? 2 : 0);
  if (collectives.size() != per_step * marks_.size())
    throw core::Error(fmt::format("expected {} collective timings, got {}", per_step * marks_.size(),
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
    for (Marker r : m.bucket_ready) t.bucket_ready.push_back(timeline_.seconds_between(m.forward_end, r));
    for (std::size_t k = 0; k < per_step; ++k) {
      const auto& c = collectives[s * per_step + k];
      if (c.kind == comm::CollectiveKind::all_gather) {
        t.all_gather_seconds += c.seconds;
        t.all_gather_bytes += c.bytes;
        ++t.all_gather_count;
      } else {
        t.all_reduce_seconds += c.seconds;
        t.all_reduce_bytes += c.bytes;
        t.last_all_reduce_seconds = c.seconds;
        ++t.all_reduce_count;
      }
    }
    out.push_back(t);
  }
  marks_.clear();
  timeline_.clear();
  return out;
}

}  // namespace scalescope::train
