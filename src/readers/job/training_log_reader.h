// The training-log reader's state and its steps (internal to readers/job/training_log*.cpp): one pass over the
// lines (training_log.cpp: framework messages, commands, the end), failures (training_log_failures.cpp), timing
// figures (training_log_timing.cpp), the job's model, batch, world and DDP settings (training_log_job.cpp); each
// turns what it read into facts after the last line.
#pragma once

#include "readers/job/training_log_vocabulary.h"

namespace scalescope::analyze::training_log_detail {

class Reader {
 public:
  Reader(std::string_view text, std::string source, bool probe) : text_(text), source_(std::move(source)), probe_(probe) {
    lines_ = split_lines(text);
  }

  void run();

  // A Chrome / Kineto trace (JSON with "traceEvents") is the trace reader's, not a log.
  static bool is_json_trace(std::string_view text);

  bool found() const;

  diagnose::Reading finish();

 private:
  // The normalized (lower case, single-spaced) text of line i (kept: lines are looked at again for wrapped
  // messages and error blocks). References stay valid (a deque).
  const std::string& low(std::size_t i);

  diagnose::Provenance where(std::size_t i);

  void read_line(std::size_t i);

  // ── framework messages ──
  void catalogue(std::size_t i, const std::string& lw);

  // transformers examples: "Process rank: -1, device: cuda:0, n_gpu: 2, distributed training: False, 16-bits
  // training: False" (examples/pytorch/*/run_*.py; older ones lack the ", " before "distributed"). One process using
  // several GPUs is nn.DataParallel (transformers/training_args.py: n_gpu > 1 without a distributed launch).
  // TrainingArguments printed one field per line ("TrainingArguments(\n_n_gpu=2,\n…\nlocal_rank=-1,\n…") is read
  // across its lines.
  void transformers_process_line(std::size_t i, const std::string& lw);

  void one_process_gpus(double n, bool one_process, std::size_t i, const char* what);

  // ── errors ──
  void errors(std::size_t i, const std::string& lw, std::string_view text, const std::string& tlow);
  std::size_t shm_errors_ = 0;

  void add_failure(std::optional<int> code, std::string name, std::string reporter, std::size_t i);

  void nccl_errors(std::size_t i, const std::string& lw);

  // PyTorch quotes ncclGetLastError() after "Last error:" (NCCLUtils getNcclErrorDetailStr), usually on the next line.
  void last_error(std::size_t i);
  std::optional<std::size_t> last_error_message_line_;  // the line a "Last error:" took its message from

  void add_process_failure(std::string what, std::size_t i);

  void process_failure(std::size_t i, const std::string& lw, std::string_view text, const std::string& tlow);

  static std::string to_upper(std::string s);

  // ── the end of training ──
  void ended(std::size_t i, const std::string& lw);

  // ── timing ──
  void add_sample(const std::string& key_format, const char* quantity, const std::string& unit, bool higher, bool running,
                  double value, std::size_t i, std::set<std::string>& this_line);

  void timing(std::size_t i, std::string_view raw, const std::string& lw);

  // tqdm and Lightning progress bars: "Epoch 0:  45%|████▌     | 450/1000 [01:23<01:40,  5.41it/s, loss=0.1]",
  // "  5%|▌ | 50/1000 [00:20<06:20,  2.50it/s]", "Training: 123it [00:45,  2.71it/s]", "1.52s/it".
  void tqdm(std::size_t i, std::string_view raw);

  // "Time 22.424 (7.498)\tData 22.372 (7.070)" (pytorch/examples imagenet/main.py ProgressMeter/AverageMeter, running
  // averages in parentheses); timm train.py "Time: 0.361s, 2836.31/s  (0.395s, 2592.53/s) … Data: 0.012 (0.037)";
  // torchvision references MetricLogger "time: 0.3323  data: 0.0000"; detectron2 "time: 0.3880 … data_time: 0.0123".
  void time_data(std::size_t i, const std::string& lw);

  // DeepSpeed wall_clock_breakdown (deepspeed/runtime/engine.py, timers.log): "[Rank 0] time (ms) | forward: 1425.20
  // | backward: 211.12 | backward_inner: 209.05 | backward_allreduce: 1.99 | step: 649.10"; Megatron timers
  // (megatron/core/timers.py): "time (ms) | forward-backward: 530.2 | forward-compute: 53.79 | backward-compute: …
  // | batch-generator: 1.2 | grads-all-reduce: 30.1 | optimizer: 12.3".
  void breakdown(std::size_t i, const std::string& lw);

  // ── model, batch ──
  void model_and_batch(std::size_t i, std::string_view text, const std::string& tlow, const std::string& tn);

  void add_model_name(std::string name, std::size_t i);

  // "124M parameters", "674 K  Total params", "number of parameters: 123.65M", "Number of trainable parameters =
  // 124,439,808", "Created model with total parameters: 7392727040 (7.39 B)", "trainable params: 4,194,304 || all params:
  // 6,742,609,920" (peft), "Total number of parameters in billions: 1.2" (Megatron).
  void param_count(std::size_t i, const std::string& tl);

  // ── world ──
  void add_world(diagnose::WorldShape w, std::size_t i);

  // "world_size=8", "world size: 8" (Megatron "using world size: 8, data-parallel size: 8 …"), DeepSpeed launcher
  // "dist_world_size=4" and "nnodes=1, num_local_procs=4", accelerate's state "Num processes: 8" (after "Distributed
  // environment: MULTI_GPU"), Lightning "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/8" and "All distributed
  // processes registered. Starting with 8 processes".
  void world(std::size_t i, const std::string& lw);

  // ── DDP's logging data, TORCH_DISTRIBUTED_DEBUG ──
  // torch/csrc/distributed/c10d/logger.cpp: "[Rank 0]: DDP Initialized with: " then "key: value" lines
  // (bucket_cap_bytes, find_unused_parameters, gradient_as_bucket_view, static_graph, world_size, bucket_sizes,
  // dtypes …), and with DETAIL "Avg forward compute time: 40838608" (ns) …; DistributedDataParallel's
  // _get_ddp_logging_data() printed as a dict ('avg_forward_compute_time': …, ns); reducer.cpp "Reducer initialized
  // with bucket_bytes_cap: 26214400 first_bucket_bytes_cap: 1048576".
  void ddp(std::size_t i, std::string_view text, const std::string& tl);

  void mark_ddp(std::size_t i);

  // ── commands inside the log ──
  // What some launchers and scripts print before the command they run.
  static std::string_view command_text(std::string_view t);

  // Whether the line is a launch command (a launcher near its start, after at most a prompt and VAR=value words).
  static bool is_command(std::string_view text);

  void commands(std::size_t i, const std::string& joined);

  // ── after the last line ──
  void finish_failures();

  void finish_models();

  void finish_batch();

  void finish_ddp();

  std::map<std::string, std::string> dims() const;

  static double median(std::vector<double> v);

  void finish_timing();

  void finish_time_data();

  void finish_breakdowns();

  struct Failure {
    std::optional<int> code;
    std::string name, reporter;
    std::size_t line = 0;
  };

  std::string_view text_;
  std::string source_;
  bool probe_;
  std::vector<std::string_view> lines_;
  std::vector<std::size_t> low_cache_index_;
  std::deque<std::string> low_store_;
  std::size_t continued_until_ = 0;
  std::optional<double> args_n_gpu_, args_local_rank_;  // a TrainingArguments dump, one field per line
  std::size_t args_line_ = 0;  // lines before this were read as continuations of a command
  diagnose::Reading out_;
  std::set<std::string> seen_ids_;
  // errors
  std::vector<Failure> failures_;
  std::set<std::string> versions_, process_failures_;
  // the end
  std::set<std::string> ended_;
  // timing
  std::map<std::string, Series> series_;
  std::vector<std::string> series_order_;
  std::optional<std::size_t> first_timing_line_;
  std::vector<TimeData> time_data_;
  std::vector<Breakdown> breakdowns_;
  std::optional<double> last_iteration_ms_;
  // model, batch, world, DDP
  std::vector<std::pair<std::string, std::size_t>> models_;
  std::vector<ParamCount> params_;
  std::optional<std::string> dtype_;
  diagnose::BatchSize batch_;
  std::optional<std::size_t> batch_line_;  // 1-based
  std::set<std::tuple<std::optional<int>, std::optional<int>, std::optional<int>, std::optional<int>, std::optional<int>>> world_keys_;
  std::optional<int> gpus_;
  bool cuda_count_seen_ = false;
  diagnose::DdpConfig ddp_;
  bool ddp_set_ = false, in_ddp_block_ = false;
  std::optional<std::size_t> ddp_line_;  // 1-based
};

}  // namespace scalescope::analyze::training_log_detail
