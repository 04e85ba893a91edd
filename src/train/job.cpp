#include "train/job.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <limits>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "comm/launcher.h"
#include "comm/mpi_communicator.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/stats.h"
#include "runtime/gpu_module.h"
#include "core/json_file.h"
#include "core/terminal_text.h"
#include "train/text_data.h"

namespace scalescope::train {
namespace {

struct FaultSpec {
  int rank = -1;
  std::int64_t step = -1;
  std::string kind;
};

std::optional<FaultSpec> parse_fault(const std::string& text) {
  if (text.empty()) return std::nullopt;
  FaultSpec f;
  auto a = text.find(':'), b = text.find(':', a == std::string::npos ? a : a + 1);
  try {
    if (a == std::string::npos || b == std::string::npos) throw std::invalid_argument("");
    f.rank = std::stoi(text.substr(0, a));
    f.step = std::stoll(text.substr(a + 1, b - a - 1));
    f.kind = text.substr(b + 1);
  } catch (const std::exception&) {
    throw core::UsageError(fmt::format("bad fault spec '{}'", text), "use RANK:STEP:exit|abort|hang|late");
  }
  if (f.kind != "exit" && f.kind != "abort" && f.kind != "hang" && f.kind != "late")
    throw core::UsageError(fmt::format("bad fault kind '{}'", f.kind), "use exit, abort, hang or late");
  return f;
}

/// "late": this rank reaches the round that starts at STEP half a second after the others (host work between
/// rounds), which must not be counted in the others' round.
void inject_late_start(const std::optional<FaultSpec>& fault, int rank, std::int64_t step) {
  if (!fault || fault->kind != "late" || fault->rank != rank || fault->step != step) return;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
}

void inject_fault(const std::optional<FaultSpec>& fault, int rank, std::int64_t step) {
  if (!fault || fault->kind == "late" || fault->rank != rank || fault->step != step) return;
  std::fprintf(stderr, "scalescope: rank %d: injecting fault '%s' at step %lld (test hook)\n", rank,
               fault->kind.c_str(), static_cast<long long>(step));
  std::fflush(stderr);
  if (fault->kind == "exit") std::_Exit(3);
  if (fault->kind == "abort") std::abort();
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(60));  // hang: the launcher's timeout must act
}

TextCorpus load_corpus(const TrainJobConfig& c, int row_tokens) {
  return TextCorpus::from_data_option(c.data, static_cast<std::size_t>(row_tokens) * 4, c.data_seed);
}

double l2_norm(const std::vector<float>& v) {
  double sum = 0;
  for (float x : v) sum += static_cast<double>(x) * x;
  return std::sqrt(sum);
}

/// Mean of each phase over a set of step timings.
StepTiming mean_of(const std::vector<StepTiming>& steps) {
  StepTiming m;
  if (steps.empty()) return m;
  for (const auto& s : steps) {
    m.data_wait += s.data_wait;
    m.stage += s.stage;
    m.forward += s.forward;
    m.backward += s.backward;
    m.exposed_comm += s.exposed_comm;
    m.optimizer += s.optimizer;
    m.total += s.total;
    m.all_reduce_seconds += s.all_reduce_seconds;
    m.all_reduce_count += s.all_reduce_count;
    m.all_reduce_bytes += s.all_reduce_bytes;
    m.last_all_reduce_seconds += s.last_all_reduce_seconds;
    m.all_gather_seconds += s.all_gather_seconds;
    m.all_gather_count += s.all_gather_count;
    m.all_gather_bytes += s.all_gather_bytes;
    m.host_stage += s.host_stage;
    m.host_issue += s.host_issue;
  }
  const double n = static_cast<double>(steps.size());
  m.data_wait /= n; m.stage /= n; m.forward /= n; m.backward /= n; m.exposed_comm /= n;
  m.optimizer /= n; m.total /= n; m.all_reduce_seconds /= n; m.last_all_reduce_seconds /= n;
  m.host_stage /= n; m.host_issue /= n; m.all_gather_seconds /= n;
  m.all_reduce_count = static_cast<int>(m.all_reduce_count / static_cast<int>(steps.size()));
  m.all_reduce_bytes /= steps.size();
  m.all_gather_count = static_cast<int>(m.all_gather_count / static_cast<int>(steps.size()));
  m.all_gather_bytes /= steps.size();
  return m;
}

// Phase means travel between ranks as doubles in this order.
std::vector<double> pack(const StepTiming& t) {
  return {t.data_wait, t.stage, t.forward, t.backward, t.exposed_comm, t.optimizer, t.total,
          t.all_reduce_seconds, static_cast<double>(t.all_reduce_count), static_cast<double>(t.all_reduce_bytes),
          t.last_all_reduce_seconds, t.host_stage, t.host_issue, t.all_gather_seconds,
          static_cast<double>(t.all_gather_count), static_cast<double>(t.all_gather_bytes)};
}
constexpr std::size_t kPackedPhases = 16;
StepTiming unpack(const double* v) {
  StepTiming t;
  t.data_wait = v[0]; t.stage = v[1]; t.forward = v[2]; t.backward = v[3]; t.exposed_comm = v[4];
  t.optimizer = v[5]; t.total = v[6]; t.all_reduce_seconds = v[7];
  t.all_reduce_count = static_cast<int>(v[8]); t.all_reduce_bytes = static_cast<std::uint64_t>(v[9]);
  t.last_all_reduce_seconds = v[10]; t.host_stage = v[11]; t.host_issue = v[12];
  t.all_gather_seconds = v[13]; t.all_gather_count = static_cast<int>(v[14]);
  t.all_gather_bytes = static_cast<std::uint64_t>(v[15]);
  return t;
}

core::Summary summary_from_json(const nlohmann::json& j) {
  core::Summary s;
  s.count = j.at("count"); s.trimmed_mean = j.at("trimmed_mean"); s.mean = j.at("mean");
  s.median = j.at("median"); s.min = j.at("min"); s.max = j.at("max"); s.p95 = j.at("p95");
  s.stddev = j.at("stddev"); s.cv = j.at("cv");
  return s;
}

/// A list of numbers that may hold NaN or inf (a diverged loss), which JSON writes as null.
std::vector<double> doubles_from_json(const nlohmann::json& j) {
  std::vector<double> v;
  for (const auto& x : j) v.push_back(x.is_null() ? std::numeric_limits<double>::quiet_NaN() : x.get<double>());
  return v;
}

}  // namespace

void to_json(nlohmann::json& j, const StepTiming& t) {
  j = {{"data_wait_s", t.data_wait}, {"stage_s", t.stage}, {"forward_s", t.forward},
       {"backward_s", t.backward}, {"exposed_comm_s", t.exposed_comm}, {"optimizer_s", t.optimizer},
       {"total_s", t.total}, {"compute_s", t.compute()}, {"all_reduce_s", t.all_reduce_seconds},
       {"all_reduce_count", t.all_reduce_count}, {"all_reduce_bytes", t.all_reduce_bytes},
       {"last_all_reduce_s", t.last_all_reduce_seconds}, {"host_stage_s", t.host_stage},
       {"host_issue_s", t.host_issue}, {"all_gather_s", t.all_gather_seconds},
       {"all_gather_count", t.all_gather_count}, {"all_gather_bytes", t.all_gather_bytes}};
}
void from_json(const nlohmann::json& j, StepTiming& t) {
  t.data_wait = j.at("data_wait_s"); t.stage = j.at("stage_s"); t.forward = j.at("forward_s");
  t.backward = j.at("backward_s"); t.exposed_comm = j.at("exposed_comm_s"); t.optimizer = j.at("optimizer_s");
  t.total = j.at("total_s"); t.all_reduce_seconds = j.at("all_reduce_s");
  t.all_reduce_count = j.at("all_reduce_count"); t.all_reduce_bytes = j.at("all_reduce_bytes");
  t.last_all_reduce_seconds = j.value("last_all_reduce_s", 0.0);  // absent in results older than the field
  t.host_stage = j.value("host_stage_s", 0.0);                     // the same
  t.host_issue = j.value("host_issue_s", 0.0);
  t.all_gather_seconds = j.value("all_gather_s", 0.0);  // absent in results older than the embedding all-gather
  t.all_gather_count = j.value("all_gather_count", 0);
  t.all_gather_bytes = j.value("all_gather_bytes", std::uint64_t{0});
}

// ---------------------------------------------------------------------------------------------- config

int TrainJobConfig::rows_per_rank() const {
  return mode == core::ScalingMode::weak ? batch : batch / world_size;
}
int TrainJobConfig::global_rows() const { return mode == core::ScalingMode::weak ? batch * world_size : batch; }

void TrainJobConfig::validate() const {
  if (world_size < 1) throw core::UsageError(fmt::format("world size {} must be at least 1", world_size));
  // The job file carries the path to the ranks as JSON, which holds UTF-8 only: a byte of another encoding (a
  // Latin-1 file name) would fail there with a JSON library's message naming nothing.
  try {
    (void)nlohmann::json(data).dump();
  } catch (const nlohmann::json::type_error&) {
    throw core::UsageError("the training data path '" + core::terminal_text(data, 200) + "' is not valid UTF-8",
                           "rename the file or directory, or pass a symbolic link with a UTF-8 name to it");
  }
  if (batch < 1) throw core::UsageError(fmt::format("batch {} must be at least 1", batch));
  if (mode == core::ScalingMode::strong && batch % world_size != 0)
    throw core::UsageError(
        fmt::format("strong scaling needs a global batch divisible by the world size: {} rows over {} ranks", batch,
                    world_size),
        "choose a --batch that is a multiple of every world size (e.g. a power of two)");
  model.validate();
  engine.buckets.validate();
  protocol.validate();
  if (mode == core::ScalingMode::weak && static_cast<std::int64_t>(batch) * world_size > INT_MAX)
    throw core::UsageError(fmt::format("global batch {} rows × {} ranks is too large", batch, world_size),
                           "use a smaller --batch");
  if (!(timeout_seconds >= 0))  // NaN too
    throw core::UsageError(fmt::format("timeout {} must be ≥ 0 seconds (0 = none)", timeout_seconds));
  // A float: --lr 1e30 overflows to inf, which JSON cannot carry to the ranks and back.
  if (!(adamw.learning_rate > 0) || !std::isfinite(adamw.learning_rate))
    throw core::UsageError(fmt::format("learning rate {} must be a positive finite number", adamw.learning_rate),
                           "e.g. --lr 0.001");
  if (backend == BackendKind::cpu && stream_priority != StreamPriority::equal)
    throw core::UsageError(fmt::format("--stream-priority {} needs GPU ranks: CPU ranks have no CUDA streams",
                                       to_string(stream_priority)),
                           "drop --stream-priority or use --backend gpu");
  if (cuda_graph && backend == BackendKind::cpu)
    throw core::UsageError("--cuda-graph needs GPU ranks: it captures the step's CUDA work into a graph",
                           "drop --cuda-graph, or run on GPU ranks (--backend gpu, on a machine with GPUs)");
  if (cuda_graph && model.family != ModelFamily::gpt)
    throw core::UsageError(fmt::format("--cuda-graph needs a GPT model; {} is an MLP", model.name),
                           "drop --cuda-graph or pick a GPT preset (--model gpt2-124m)");
  if (cuda_graph && engine.overlap_optimizer)
    throw core::UsageError("--overlap-optimizer and --cuda-graph cannot be combined yet: the optimizer's first part "
                           "waits on an all-reduce inside the replayed graph",
                           "drop one of them");
  if (engine.embedding_exchange == EmbeddingExchange::all_gather && model.family != ModelFamily::gpt)
    throw core::UsageError(fmt::format("--embedding-exchange all-gather needs a GPT model (a tied token embedding); {} "
                                       "is an MLP", model.name),
                           "drop --embedding-exchange or pick a GPT preset (--model gpt2-124m)");
  if (engine.embedding_exchange == EmbeddingExchange::all_gather && engine.gradient_reduction != comm::ReduceOp::average)
    throw core::UsageError("--embedding-exchange all-gather averages the gradients it gathers; it cannot sum them",
                           "use --embedding-exchange all-reduce with --internal-gradient-reduction sum");
  if (engine.embedding_exchange == EmbeddingExchange::all_gather && engine.overlap_optimizer)
    throw core::UsageError("--embedding-exchange all-gather and --overlap-optimizer cannot be combined: the optimizer's "
                           "early part would update the token embedding before its gathered part is added",
                           "drop one of them");
  if (backend == BackendKind::cpu && !kernel_trace_dir.empty())
    throw core::UsageError("--kernel-trace needs GPU ranks: it records GPU kernels (CUPTI)",
                           "drop --kernel-trace or use --backend gpu");
  if (backend == BackendKind::cpu && model.family == ModelFamily::gpt && !model.gpt.recompute_activations)
    throw core::UsageError("--keep-activations needs GPU ranks: the CPU reference keeps every activation anyway",
                           "drop --keep-activations or use --backend gpu");
  if (backend == BackendKind::cpu && model.family == ModelFamily::gpt &&
      (!model.gpt.flash_attention || model.gpt.fused_attention == FusedAttention::cudnn))
    throw core::UsageError(fmt::format("--attention {} needs GPU ranks: this job runs on CPU ranks (--backend cpu, or "
                                       "auto found no GPU), whose fp32 reference has one attention of its own",
                                       model.gpt.flash_attention ? "cudnn" : "gemm"),
                           "drop --attention or use --backend gpu");
  parse_fault(fault);
}

std::string TrainJobConfig::data_label() const {
  if (data.empty()) return fmt::format("text (default corpus {})", kDefaultTextDirectory);
  if (data == "synthetic") return "synthetic (uniformly random bytes)";
  return fmt::format("text ({})", data);
}

namespace {

/// What computed attention, as run (not as asked): "cudnn", "flash" or "gemm" for a GPT on GPU ranks (GptCuda's
/// path for this config in this build), "cpu-reference" on CPU ranks, "none" for an MLP.
std::string attention_label(const TrainJobConfig& c) {
  if (c.model.family != ModelFamily::gpt) return "none";
  if (c.backend == BackendKind::cpu) return "cpu-reference";
  return c.model.gpt.gpu_attention_kernels();
}

}  // namespace

void to_json(nlohmann::json& j, const TrainJobConfig& c) {
  j = {{"backend", to_string(c.backend)},
       {"world_size", c.world_size},
       {"model", c.model},
       {"batch", c.batch},
       {"rows_per_rank", c.rows_per_rank()},
       {"global_rows", c.global_rows()},
       {"scaling", std::string(core::to_string(c.mode))},
       {"first_bucket_bytes", c.engine.buckets.first_bucket_bytes},
       {"bucket_cap_bytes", c.engine.buckets.bucket_cap_bytes},
       {"overlap", c.engine.overlap},
       {"overlap_optimizer", c.engine.overlap_optimizer},
       {"embedding_exchange", to_string(c.engine.embedding_exchange)},
       {"gradient_reduction", c.engine.gradient_reduction == comm::ReduceOp::average ? "average" : "sum"},
       {"stream_priority", to_string(c.stream_priority)},
       {"cuda_graph", c.cuda_graph},
       {"attention", attention_label(c)},
       {"data", c.data},
       {"data_seed", c.data_seed},
       {"protocol", {{"warmup_rounds", c.protocol.warmup_rounds}, {"timed_rounds", c.protocol.timed_rounds},
                     {"steps_per_round", c.protocol.steps_per_round}}},
       {"adamw", {{"lr", c.adamw.learning_rate}, {"beta1", c.adamw.beta1}, {"beta2", c.adamw.beta2},
                  {"eps", c.adamw.epsilon}, {"weight_decay", c.adamw.weight_decay}}},
       {"timeout_s", c.timeout_seconds},
       {"progress", c.progress},
       {"kernel_trace_dir", c.kernel_trace_dir},
       {"fault", c.fault}};
}

void from_json(const nlohmann::json& j, TrainJobConfig& c) {
  c.backend = parse_backend_kind(j.at("backend"));
  c.world_size = j.at("world_size");
  c.model = j.at("model").get<ModelSpec>();
  c.batch = j.at("batch");
  c.mode = core::parse_scaling_mode(j.at("scaling").get<std::string>());
  c.engine.buckets.first_bucket_bytes = j.at("first_bucket_bytes");
  c.engine.buckets.bucket_cap_bytes = j.at("bucket_cap_bytes");
  c.engine.overlap = j.at("overlap");
  c.engine.overlap_optimizer = j.value("overlap_optimizer", false);  // absent in results older than the option
  // Results older than the option all-reduced the embedding whole.
  c.engine.embedding_exchange = parse_embedding_exchange(j.value("embedding_exchange", std::string("all-reduce")));
  c.engine.gradient_reduction = j.at("gradient_reduction") == "sum" ? comm::ReduceOp::sum : comm::ReduceOp::average;
  // Results written before the option existed ran with equal priorities.
  c.stream_priority = parse_stream_priority(j.value("stream_priority", std::string("equal")));
  c.cuda_graph = j.value("cuda_graph", false);  // absent in results older than the option
  c.data = j.at("data");
  c.data_seed = j.at("data_seed");
  const auto& p = j.at("protocol");
  c.protocol.warmup_rounds = p.at("warmup_rounds");
  c.protocol.timed_rounds = p.at("timed_rounds");
  c.protocol.steps_per_round = p.at("steps_per_round");
  const auto& a = j.at("adamw");
  c.adamw.learning_rate = a.at("lr"); c.adamw.beta1 = a.at("beta1"); c.adamw.beta2 = a.at("beta2");
  c.adamw.epsilon = a.at("eps"); c.adamw.weight_decay = a.at("weight_decay");
  c.timeout_seconds = j.at("timeout_s");
  c.progress = j.at("progress");
  c.kernel_trace_dir = j.value("kernel_trace_dir", std::string());  // absent in results older than the option
  c.fault = j.at("fault");
}

// ---------------------------------------------------------------------------------------------- result

double TrainResult::tokens_per_second() const {
  return step_seconds.trimmed_mean > 0 ? static_cast<double>(tokens_per_step) / step_seconds.trimmed_mean : 0.0;
}

double TrainResult::all_reduce_algbw_gbps() const {
  return phases.all_reduce_seconds > 0 ? static_cast<double>(phases.all_reduce_bytes) / phases.all_reduce_seconds / 1e9
                                       : 0.0;
}

double TrainResult::all_reduce_busbw_gbps() const {
  const double n = config.world_size;
  return all_reduce_algbw_gbps() * 2.0 * (n - 1.0) / n;  // nccl-tests doc/PERFORMANCE.md, all-reduce factor
}

core::ScalingSample TrainResult::scaling_sample() const {
  core::ScalingSample s;
  s.world_size = config.world_size;
  s.step_seconds = step_seconds.trimmed_mean;
  s.compute_seconds = phases.compute();
  // The embedding's all-gathers are gradient communication too: the comm ratio and overlap count them.
  s.all_reduce_seconds = phases.gradient_comm();
  s.all_reduce_count = phases.all_reduce_count + phases.all_gather_count;
  s.exposed_comm_seconds = phases.exposed_comm;
  s.tokens_per_step = static_cast<double>(tokens_per_step);
  return s;
}

void to_json(nlohmann::json& j, const TrainResult& r) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& rs : r.ranks)
    ranks.push_back(nlohmann::json{{"rank", rs.rank}, {"wall_step_s", rs.wall_step_seconds}, {"phases", rs.mean}});
  j = {{"schema", TrainResult::kSchema},
       {"config", r.config},
       {"device", r.device},
       {"communicator", r.communicator},
       {"library_versions", r.library_versions},
       {"timing_source", r.timing_source},
       {"data", r.data_description},
       {"parameters", r.parameters},
       {"flops_per_token", r.flops_per_token},
       {"bucket_bytes", r.bucket_bytes},
       {"bucket_ready_s", r.bucket_ready_seconds},
       {"embedding_table_gradient_bytes", r.embedding_table_gradient_bytes},
       {"embedding_gather_bytes_per_rank", r.embedding_gather_bytes_per_rank},
       {"embedding_all_gathered", r.embedding_all_gathered},
       {"tokens_per_step", r.tokens_per_step},
       {"round_step_s", r.round_step_seconds},
       {"step_s", r.step_seconds},
       {"step_event_s", r.step_event_seconds},
       {"tokens_per_s", r.tokens_per_second()},
       {"phases", r.phases},
       {"rank_compute_s", {{"min", r.min_rank_compute}, {"max", r.max_rank_compute}}},
       // At world size 1 the "all-reduce" is a local copy: no bandwidth to report.
       {"all_reduce_algbw_GBps", r.config.world_size > 1 ? nlohmann::json(r.all_reduce_algbw_gbps()) : nlohmann::json()},
       {"all_reduce_busbw_GBps", r.config.world_size > 1 ? nlohmann::json(r.all_reduce_busbw_gbps()) : nlohmann::json()},
       {"ranks", ranks},
       {"losses", r.losses},
       {"gradient_norms", r.gradient_norms},
       {"replica_gradient_spread", r.replica_gradient_spread},
       {"replayed_timed_steps", r.replayed_timed_steps}};
}

void from_json(const nlohmann::json& j, TrainResult& r) {
  if (j.value("schema", "") != TrainResult::kSchema)
    throw core::Error(fmt::format("not a {} result (schema '{}')", TrainResult::kSchema, j.value("schema", "")));
  r.config = j.at("config").get<TrainJobConfig>();
  r.device = j.at("device"); r.communicator = j.at("communicator"); r.library_versions = j.at("library_versions");
  r.timing_source = j.at("timing_source"); r.data_description = j.at("data");
  r.parameters = j.at("parameters"); r.flops_per_token = j.at("flops_per_token");
  r.bucket_bytes = j.at("bucket_bytes").get<std::vector<std::uint64_t>>();
  r.bucket_ready_seconds = j.value("bucket_ready_s", std::vector<double>{});  // absent in older results
  r.embedding_table_gradient_bytes = j.value("embedding_table_gradient_bytes", std::uint64_t{0});
  r.embedding_gather_bytes_per_rank = j.value("embedding_gather_bytes_per_rank", std::uint64_t{0});
  r.embedding_all_gathered = j.value("embedding_all_gathered", false);
  r.tokens_per_step = j.at("tokens_per_step");
  r.round_step_seconds = j.at("round_step_s").get<std::vector<double>>();
  r.step_seconds = summary_from_json(j.at("step_s"));
  r.step_event_seconds = summary_from_json(j.at("step_event_s"));
  r.phases = j.at("phases").get<StepTiming>();
  r.min_rank_compute = j.at("rank_compute_s").at("min");
  r.max_rank_compute = j.at("rank_compute_s").at("max");
  r.ranks.clear();
  for (const auto& x : j.at("ranks")) {
    RankSummary rs;
    rs.rank = x.at("rank");
    rs.mean = x.at("phases").get<StepTiming>();
    rs.wall_step_seconds = x.at("wall_step_s");
    r.ranks.push_back(rs);
  }
  r.losses = doubles_from_json(j.at("losses"));
  r.gradient_norms = doubles_from_json(j.at("gradient_norms"));
  r.replica_gradient_spread = j.at("replica_gradient_spread");
  r.replayed_timed_steps = j.value("replayed_timed_steps", 0);  // absent in results older than --cuda-graph
}

void write_result_file(const std::string& path, const TrainResult& result) {
  core::write_file_atomically(path, nlohmann::json(result).dump(1) + "\n");
}

// ---------------------------------------------------------------------------------------------- rank side

namespace {

/// After the timed rounds: one more round of steps recorded kernel by kernel and written to
/// DIR/rank<R>.json; its times and losses enter no figure. Every rank runs the steps even when its recorder
/// fails (the others' all-reduces wait for it), and a recorder or file error is reported here and does not lose
/// the measured result, which is gathered after this.
void trace_one_round(const TrainJobConfig& config, RankBackend& backend, DataParallelEngine& engine,
                     BatchLoader& loader, int rank) {
  KernelTracer& tracer = *backend.kernel_tracer;
  backend.timeline->synchronize();
  backend.comm->barrier();
  std::string failure;
  bool recording = false;
  try {
    tracer.start();
    recording = true;
  } catch (const core::Error& e) {
    failure = e.what();
  }
  std::vector<TracedStep> steps;
  for (int s = 0; s < config.protocol.steps_per_round; ++s) {
    TracedStep traced;
    traced.begin_ns = recording ? tracer.now_ns() : 0;
    double wait = 0;
    TokenBatchView batch = loader.next(wait);
    engine.step(batch, wait, config.adamw);
    traced.end_ns = recording ? tracer.now_ns() : 0;
    steps.push_back(traced);
  }
  engine.take_step_timings();  // synchronises
  backend.model->take_losses();
  const auto path = std::filesystem::path(config.kernel_trace_dir) / fmt::format("rank{}.json", rank);
  try {
    if (!recording) throw core::Error(failure);
    KernelTrace trace = tracer.stop();
    trace.rank = rank;
    trace.world_size = backend.comm->world_size();
    trace.backend = backend.comm->backend();
    const std::uint32_t host_thread = trace.api_calls.empty() ? 0 : trace.api_calls.front().thread;
    for (auto& s : steps) s.thread = host_thread;
    trace.steps = std::move(steps);
    std::error_code ec;
    std::filesystem::create_directories(config.kernel_trace_dir, ec);
    if (ec)
      throw core::Error(fmt::format("cannot create the directory '{}': {}", config.kernel_trace_dir, ec.message()));
    core::write_file_atomically(path.string(), kernel_trace_json(trace));
    if (config.progress && rank == 0)
      std::fprintf(stderr, "  kernel trace of %d more steps: %s/rank<R>.json (rank 0: %zu kernels); read them with "
                   "'scalescope analyze %s/rank*.json'\n", config.protocol.steps_per_round,
                   config.kernel_trace_dir.c_str(), trace.kernels.size(), config.kernel_trace_dir.c_str());
  } catch (const core::Error& e) {
    std::fprintf(stderr, "scalescope: warning: rank %d wrote no kernel trace (%s): %s; the measured figures are kept\n",
                 rank, path.c_str(), e.what());
  }
}

}  // namespace

std::optional<TrainResult> run_rank(const TrainJobConfig& config) {
  config.validate();
  const auto fault = parse_fault(config.fault);
  auto backend = config.backend == BackendKind::cpu ? make_cpu_rank_backend(config.model)
                                                    : make_gpu_rank_backend(config.model, config.stream_priority,
                                                                            config.cuda_graph);
  comm::Communicator& comm = *backend->comm;
  Model& model = *backend->model;
  Timeline& timeline = *backend->timeline;
  if (comm.world_size() != config.world_size)
    throw core::Error(fmt::format("{} ranks were started but the job asks for world size {}", comm.world_size(),
                                  config.world_size),
                      comm::rank_count_remedy("--world-size"));
  const int rank = comm.rank();
  const bool report = config.progress && rank == 0;

  if (!config.kernel_trace_dir.empty() && !backend->kernel_tracer)  // before anything is measured
    throw core::Error("this scalescope was built without CUPTI, which --kernel-trace needs",
                      "rebuild on a machine whose CUDA toolkit has CUPTI (libcupti), or drop --kernel-trace");
  TextCorpus corpus = load_corpus(config, model.row_tokens());
  // Also here, not only in launch_job's pre-flight: ranks started by mpirun or srun have no pre-flight, and a token
  // id beyond the vocabulary failed at some later step with advice about the data loader.
  corpus.require_vocabulary(config.model.vocab(), config.model.name);
  BatchSampler sampler(corpus, model.row_tokens(), config.data_seed);
  EngineOptions engine_options = config.engine;
  engine_options.rows_per_rank = config.rows_per_rank();
  DataParallelEngine engine(model, comm, timeline, engine_options, backend->step_replay.get());
  engine.broadcast_initial_parameters();
  const int rows = config.rows_per_rank();
  BatchLoader loader(sampler, rank * rows, rows);

  const auto& proto = config.protocol;
  const int rounds = proto.warmup_rounds + proto.timed_rounds;
  std::vector<double> round_wall, step_totals, losses, gradient_norms;
  std::vector<StepTiming> timed_steps;
  std::int64_t step = 0;
  if (config.cuda_graph && report && proto.warmup_rounds * proto.steps_per_round <= DataParallelEngine::kEagerStepsBeforeCapture)
    std::fprintf(stderr, "scalescope: warning: --cuda-graph captures the step after %d eager steps, but the warm-up has "
                 "only %d: the first timed steps run eagerly or are captured (the report counts the replayed ones)\n",
                 DataParallelEngine::kEagerStepsBeforeCapture, proto.warmup_rounds * proto.steps_per_round);
  int replayed_before_timed = 0;
  // Rank 0's rounds: a line redrawn in place on a terminal, one line per round in a log (core/progress.h).
  std::optional<core::Progress> bar;
  if (report) bar.emplace(fmt::format("  [{} ws={}]", to_string(config.backend), config.world_size), rounds);
  for (int round = 0; round < rounds; ++round) {
    const bool timed = round >= proto.warmup_rounds;
    if (round == proto.warmup_rounds) replayed_before_timed = engine.replay_counts().replayed;
    timeline.synchronize();
    inject_late_start(fault, rank, step);
    // Every rank starts the round together (nccl-tests and PyTorch benchmarks do the same). Without this, the
    // host work between rounds (losses, the gradient-norm copy) ends at different times on different ranks,
    // and the rank that starts first waits in its first all-reduce: its round, the slowest, absorbs the skew
    // (on 2 × H200, gpt2-124m: 100-300 ms in one step of ten, +10-20 % on the headline step time).
    comm.barrier();
    auto t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < proto.steps_per_round; ++s, ++step) {
      inject_fault(fault, rank, step);
      double wait = 0;
      TokenBatchView batch = loader.next(wait);
      engine.step(batch, wait, config.adamw);
    }
    auto timings = engine.take_step_timings();  // synchronises
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (float l : model.take_losses()) losses.push_back(l);
    gradient_norms.push_back(l2_norm(model.gradients_to_host()));
    if (timed) {
      round_wall.push_back(wall / proto.steps_per_round);
      for (const auto& t : timings) step_totals.push_back(t.total);
      timed_steps.insert(timed_steps.end(), timings.begin(), timings.end());
    }
    if (bar)
      bar->update(round + 1, fmt::format("round {} {}: {:.2f} ms/step, rank 0 loss {:.4f}", round + 1,
                                         timed ? "timed" : "warm-up", 1e3 * wall / proto.steps_per_round,
                                         losses.empty() ? 0.0 : losses.back()));
  }

  if (bar) bar->finish();
  const int replayed_timed_steps = engine.replay_counts().replayed - replayed_before_timed;
  if (!config.kernel_trace_dir.empty()) trace_one_round(config, *backend, engine, loader, rank);

  // Gather every rank's figures: [round wall step times | step totals | phase means | losses | grad norms].
  const StepTiming mine = mean_of(timed_steps);
  std::vector<double> packed = round_wall;
  packed.insert(packed.end(), step_totals.begin(), step_totals.end());
  auto phases = pack(mine);
  packed.insert(packed.end(), phases.begin(), phases.end());
  packed.insert(packed.end(), losses.begin(), losses.end());
  packed.insert(packed.end(), gradient_norms.begin(), gradient_norms.end());
  const std::size_t stride = packed.size();
  const auto all = comm.all_gather_host(packed);
  if (rank != 0) return std::nullopt;

  const int world = config.world_size;
  const std::size_t n_rounds = round_wall.size(), n_steps = step_totals.size(), n_losses = losses.size();
  TrainResult r;
  r.config = config;
  r.device = backend->device;
  r.communicator = comm.backend();
  r.library_versions = backend->library_versions;
  r.timing_source = timeline.is_device_time() ? "cuda-events" : "steady-clock";
  r.data_description = corpus.description();
  if (const std::size_t batch_tokens = static_cast<std::size_t>(config.rows_per_rank()) * config.world_size *
                                       static_cast<std::size_t>(model.row_tokens());
      !corpus.is_synthetic() && corpus.tokens().size() < batch_tokens)
    r.data_description += fmt::format(" — shorter than one global batch ({} tokens): every step trains on the same "
                                      "text again, so the loss falls faster than on real data",
                                      batch_tokens);
  r.replayed_timed_steps = replayed_timed_steps;
  r.parameters = model.parameter_count();
  r.flops_per_token = model.flops_per_token();
  for (const auto& b : engine.plan().buckets) r.bucket_bytes.push_back(b.numel * sizeof(float));
  r.embedding_all_gathered = engine.gathers_embedding();
  if (const auto g = model.embedding_gather()) {
    r.embedding_table_gradient_bytes = g->table_gradient_bytes;
    r.embedding_gather_bytes_per_rank = static_cast<std::uint64_t>(config.rows_per_rank()) * g->gather_bytes_per_row;
  }
  {  // rank 0's bucket ready times: per bucket, the median over the timed eager steps that marked every bucket
    std::vector<std::vector<double>> ready(r.bucket_bytes.size());
    for (const auto& t : timed_steps)
      if (t.bucket_ready.size() == ready.size())
        for (std::size_t k = 0; k < ready.size(); ++k) ready[k].push_back(t.bucket_ready[k]);
    if (!ready.empty() && !ready.front().empty())
      for (auto& v : ready) r.bucket_ready_seconds.push_back(core::quantile(v, 0.5));
  }
  r.tokens_per_step = static_cast<std::uint64_t>(config.global_rows()) * model.predictions_per_row();
  r.round_step_seconds.assign(n_rounds, 0.0);
  std::vector<double> slowest_step(n_steps, 0.0);
  r.losses.assign(n_losses, 0.0);
  r.min_rank_compute = 1e300;
  for (int k = 0; k < world; ++k) {
    const double* v = all.data() + static_cast<std::size_t>(k) * stride;
    for (std::size_t i = 0; i < n_rounds; ++i) r.round_step_seconds[i] = std::max(r.round_step_seconds[i], v[i]);
    for (std::size_t i = 0; i < n_steps; ++i) slowest_step[i] = std::max(slowest_step[i], v[n_rounds + i]);
    StepTiming t = unpack(v + n_rounds + n_steps);
    const double* l = v + n_rounds + n_steps + kPackedPhases;
    for (std::size_t i = 0; i < n_losses; ++i) r.losses[i] += l[i] / world;
    const double* g = l + n_losses;
    for (std::size_t i = 0; i < gradient_norms.size(); ++i)
      if (gradient_norms[i] > 0)
        r.replica_gradient_spread = std::max(r.replica_gradient_spread, std::abs(g[i] - gradient_norms[i]) / gradient_norms[i]);
    RankSummary rs;
    rs.rank = k;
    rs.mean = t;
    rs.wall_step_seconds = core::summarize(std::vector<double>(v, v + n_rounds)).trimmed_mean;
    r.ranks.push_back(rs);
    r.max_rank_compute = std::max(r.max_rank_compute, t.compute());
    r.min_rank_compute = std::min(r.min_rank_compute, t.compute());
  }
  std::vector<StepTiming> rank_means;
  for (const auto& rs : r.ranks) rank_means.push_back(rs.mean);
  r.phases = mean_of(rank_means);
  r.phases.all_reduce_count = r.ranks.front().mean.all_reduce_count;
  r.phases.all_reduce_bytes = r.ranks.front().mean.all_reduce_bytes;
  r.gradient_norms = gradient_norms;
  r.step_seconds = core::summarize(r.round_step_seconds);
  r.step_event_seconds = core::summarize(slowest_step);
  return r;
}

// ---------------------------------------------------------------------------------------------- memory


void check_cpu_memory(const TrainJobConfig& config) {
  if (config.backend != BackendKind::cpu) return;
  const double physical = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  const double need =
      config.model.memory_per_rank_bytes(config.rows_per_rank(), false, config.world_size) * config.world_size;
  if (physical > 0 && need > physical)
    throw core::UsageError(
        fmt::format("{} CPU rank{} of this model and batch need{} about {:.1f} GiB of memory; this machine has {:.1f} GiB",
                    config.world_size, config.world_size == 1 ? "" : "s", config.world_size == 1 ? "s" : "",
                    need / (1 << 30), physical / (1 << 30)),
        config.model.family == ModelFamily::gpt
            ? "use a smaller --batch, --layers or --seq, a smaller --model, or fewer ranks"
            : "use a smaller --batch, --hidden, --layers, --context or --embed, a smaller --model, or fewer ranks");
}

// ---------------------------------------------------------------------------------------------- launcher

void require_devices(BackendKind backend, int world_size) {
  if (backend == BackendKind::cpu) {
    const int cores = cpu_core_count();
    if (world_size > kMaxCpuRanksPerCore * cores)
      throw core::UsageError(
          fmt::format("{} CPU ranks on {} core{}: at most {} per core are started (far beyond that, Open MPI runs out of "
                      "pipes and the ranks hang; and a rank that shares its core measures the sharing, not the scaling)",
                      world_size, cores, cores == 1 ? "" : "s", kMaxCpuRanksPerCore),
          fmt::format("use at most {} ranks here ({} for one core each), or GPU ranks", kMaxCpuRanksPerCore * cores,
                      cores));
    return;
  }
  std::string why;
  const int gpus = visible_gpu_count(&why);
  if (gpus == 0 && !built_with_cuda())  // no machine helps this binary: say how to get one that can
    throw core::Error("--backend gpu, but this scalescope was built without CUDA",
                      "rebuild where nvcc and NCCL are installed (scripts/setup.sh, then scripts/build.sh), or use "
                      "--backend cpu");
  if (gpus == 0 && !runtime::gpu_module())  // the GPU module or a library under it is missing: name it
    runtime::require_gpu_module();
  if (gpus == 0)  // the machine, not the command line: exit 1
    throw core::Error(fmt::format("--backend gpu, but no GPU is usable here{}", why.empty() ? "" : " (" + why + ")"),
                      "use --backend cpu (or auto), or run on a machine with an NVIDIA GPU and driver; check "
                      "CUDA_VISIBLE_DEVICES");
  if (gpus < world_size)
    throw core::UsageError(fmt::format("world size {} needs {} GPU{}, but {} {} visible{}", world_size, world_size,
                                       world_size == 1 ? "" : "s", gpus, gpus == 1 ? "is" : "are",
                                       why.empty() ? "" : " (" + why + ")"),
                           "use a smaller --world-size, check CUDA_VISIBLE_DEVICES, or use --backend cpu");
}

void launch_rank_processes(BackendKind backend, int world_size, const std::vector<std::string>& argv,
                           double timeout_seconds, const std::string& job_directory) {
  std::vector<comm::ProcessSpec> specs;
  if (backend == BackendKind::cpu) {
    specs.push_back(comm::mpirun_command(world_size, argv, job_directory));
  } else {
    const auto env = gpu_launch_environment();
    for (int r = 0; r < world_size; ++r) {
      comm::ProcessSpec spec;
      spec.argv = argv;
      spec.label = fmt::format("rank {}", r);
      spec.environment = env;
      spec.environment.push_back({comm::kEnvRank, std::to_string(r)});
      spec.environment.push_back({comm::kEnvWorldSize, std::to_string(world_size)});
      spec.environment.push_back({comm::kEnvLocalRank, std::to_string(r)});
      specs.push_back(std::move(spec));
    }
  }
  comm::run_processes(specs, timeout_seconds);
}

TrainResult launch_job(const TrainJobConfig& config) {
  config.validate();
  // Pre-flight in this process, so a bad input gives one message instead of one per rank.
  require_devices(config.backend, config.world_size);
  check_cpu_memory(config);
  const TextCorpus corpus = load_corpus(config, config.model.row_tokens());
  corpus.require_vocabulary(config.model.vocab(), config.model.name);
  core::TemporaryDirectory dir;
  const std::string job_path = dir.path() + "/job.json";
  const std::string result_path = dir.path() + "/result.json";
  core::write_file_atomically(job_path, nlohmann::json{{"config", config}, {"result", result_path}}.dump());
  launch_rank_processes(config.backend, config.world_size,
                        {comm::self_executable(), "train", "--internal-job", job_path}, config.timeout_seconds,
                        dir.path());
  if (!std::filesystem::exists(result_path))
    throw core::Error("the ranks finished but rank 0 wrote no result", "this is a bug; rerun with --world-size 1");
  return core::read_json_file(result_path, "rank 0's result").get<TrainResult>();
}

}  // namespace scalescope::train
