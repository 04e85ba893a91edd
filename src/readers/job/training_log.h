#pragma once
// Reads what a training job printed — torchrun / torch.distributed.launch, PyTorch Lightning, Hugging Face
// Trainer and Accelerate, DeepSpeed, Megatron, nanoGPT/llm.c-style loops, the PyTorch ImageNet example — and turns
// the lines that matter for scaling into facts (facts/facts.h): framework warnings that name a scaling problem
// (a catalogue, below), timing lines, NCCL and PyTorch distributed errors, the end of the training loop, model
// and batch size, DDP's logging data and TORCH_DISTRIBUTED_DEBUG output. Lines it does not know are skipped.
// Pure: no I/O.
//
// Framework messages (diagnose::FrameworkMessage::id), recognised by their wording in every version that printed
// them, case-insensitively anywhere in a line (so launcher prefixes "[rank1]:", "[default0]:", "0: ",
// "[1,0]<stdout>:", "> " quote markers, timestamps and progress bars glued before the text do not matter) and across
// a line break (a message wrapped by a terminal or a paste). The catalogue is one table in training_log.cpp (id,
// framework, phrases, meaning, the source file that prints it); each id is reported once, at its first line:
//   ddp-find-unused-no-unused  PyTorch reducer: "find_unused_parameters=True was specified in DDP constructor, but
//                              did not find any unused parameters …" (also sets DdpConfig.find_unused_parameters)
//   ddp-unused-parameters      "Expected to have finished reduction in the prior iteration …", "parameters that
//                              were not used in producing loss", "did not receive grad for rank …"; Lightning's
//                              "has parameters that were not used in producing the loss returned by training_step"
//   dataparallel               nn.DataParallel in use: its gather warning ("Was asked to gather along dimension 0,
//                              but all input tensors were scalars"), its imbalance warning ("There is an imbalance
//                              between your GPUs"), transformers' "n_gpu: 2 … distributed training: False" or
//                              n_gpu > 1 with local_rank / process rank -1, also in a TrainingArguments dump
//                              printed one field per line (one process driving several GPUs;
//                              framework "transformers", with a WorldShape {processes 1, gpus_per_process n})
//   dataloader-workers         "This DataLoader will create N worker processes in total. Our suggested max number
//                              of worker in current system is M", Lightning's "does not have many workers which may
//                              be a bottleneck"
//   persistent-workers         Lightning's "Consider setting `persistent_workers=True` … to speed up the dataloader
//                              worker initialization"
//   bucket-view-strides        "Grad strides do not match bucket view strides"
//   rebuilt-buckets            "Reducer buckets have been rebuilt in this iteration", "N buckets rebuilt with size
//                              limits" (normal once; the engine judges repetitions)
//   sync-debug                 "called a synchronizing CUDA operation" (torch.cuda.set_sync_debug_mode): a host sync
//   compile-graph-break        torch.compile/dynamo: "DDPOptimizer …", "Graph break", "[__graph_breaks]",
//                              "hit config.cache_size_limit", "hit config.recompile_limit"
//   omp-threads                torchrun's "Setting OMP_NUM_THREADS environment variable for each process to be 1"
//   nccl-abort                 "NCCL communicator was aborted", ncclCommAbort, "NCCL watchdog thread terminated",
//                              "Process group watchdog thread terminated"
//   nccl-async-error           ProcessGroupNCCL's "Some NCCL operations have failed or timed out"
//   tensor-cores-precision     Lightning's "To properly utilize them, you should set
//                              `torch.set_float32_matmul_precision…`"
//   gpu-unused                 Lightning's "GPU available: True (cuda), used: False"
//   deepspeed-cache-flush      DeepSpeed ZeRO-3's "pytorch allocator cache flushes since last step"
//
// Other facts:
//  - TrainingEnded (once per framework): Lightning "`Trainer.fit` stopped:", transformers "Training completed. Do
//    not forget to share your model", "***** train metrics *****", "{'train_runtime': …", Megatron "[after training
//    is done]", a bare "Training completed" (framework "unknown").
//  - ProcessFailure (once per `what`): "srun: error: …" (what: the message), "Aborted (core dumped)",
//    "Segmentation fault", "Bus error", "ChildFailedError", "CUDA out of memory", DataLoader workers killed or exited,
//    "exitcode: -6" / "exit code 1" (what: "exit code -6"; 0 is no failure), "Signal 6 (SIGABRT) received by PID"
//    (what: "signal SIGABRT"), a line "Killed", and a Python exception at a line's start ("RuntimeError: …" → what
//    "RuntimeError"; warnings are not failures).
//  - NcclFailure (once per code and name): "NCCL Error 2: unhandled system error", "NCCL error in: …, unhandled
//    system error (run with …)", "ncclSystemError: …" (and the other ncclResult_t names), "Test NCCL failure
//    … 'unhandled system error'" (reporter "nccl-tests"). Codes follow nccl.h; phase "init" when the error's next
//    lines name communicator creation ("Exception raised from create at …", ncclCommInitRank, init_process_group),
//    "collective" when timing lines came before it, else "unknown".
//  - NcclWarning: the text after PyTorch's "Last error:" (same line or the next non-blank one), category as in
//    diagnose::NcclWarning ("Error while creating shared memory segment …" → "shm-create", with "No space left" →
//    "shm-space"). NcclVersion: "NCCL version 2.21.5" outside NCCL's own INFO lines (those are nccl_log.h's).
//  - Measurement for timing lines, one per series (format and quantity): tqdm bars ("3.01it/s", "1.52s/it";
//    as "step time" in s per iteration; evaluation / loading / download bars and, of bars with one description,
//    all but the one with the largest total, left out), HF "train_runtime" (s, "0:04:06.24" read too),
//    "train_samples_per_second", "train_steps_per_second", Lightning and Rich progress bars, DeepSpeed
//    "RunningAvgSamplesPerSec=" (the last running average) and "N samples/sec", Megatron "elapsed time per iteration
//    (ms)" and "throughput per GPU (TFLOP/s/GPU)", nanoGPT "iter N: … time 123.45ms", llm.c "| 98.27 ms |" and
//    "tok/s", torchtitan "tps:" (tokens/s/GPU), nanochat "dt: …ms" / "tok/sec:", "step_time", "step time", "epoch
//    time", "ms/step" … A per-step series reports the median of its lines with the first left out as warm-up (row
//    says so, provenance the line nearest the median); quantities "step time", "throughput", "run time", "epoch
//    time"; dims "gpus" when the log states the world size.
//  - StepPhases: lines that split a step into data and compute time — the ImageNet example's "Time 22.424 (7.498)
//    \tData 22.372 (7.070)", timm's "Time: 0.361s … (0.395s …) Data: 0.012 (0.037)" (running averages of the last
//    line past warm-up, i.e. not iteration 0 and not the first line; the basis names the position and gives the
//    figures without the first iteration when its line is there), torchvision's MetricLogger "time: 0.33  data:
//    0.01" and detectron2's "data_time" (medians past the first line); DeepSpeed's wall_clock_breakdown "time (ms) |
//    forward: … | backward_allreduce: … | step: …" and Megatron's timers "time (ms) | forward-compute: … |
//    grads-all-reduce: … | optimizer: …" (the last line; step_s from Megatron's iteration time), in seconds.
//  - ModelSeen: names the log states ("model_name_or_path", "_name_or_path", "model_name", "=> creating model
//    'alexnet'", Hugging Face cache paths "models--meta-llama--Llama-3.2-3B") with the parameter count the log
//    states ("number of parameters: 123.65M", "Number of trainable parameters = 124,439,808", "all params: …",
//    Lightning's "124 M Total params"; a total beats a trainable count) when one name is known, else from
//    known_model_parameters (launch_env.h); name "" when the log states a count but no name; dtype from
//    "16-bits training: True", Lightning's "Using bfloat16 Automatic Mixed Precision", "bf16=True" ….
//  - BatchSize (one, merged; the first value of each field wins): "Instantaneous batch size per device = 4",
//    "Total train batch size (w. parallel, distributed & accumulation) = 32", "Gradient Accumulation steps = 4",
//    "per_device_train_batch_size", DeepSpeed's "train_micro_batch_size_per_gpu" / "\"train_batch_size\"",
//    Megatron's "global batch size: 16" and "micro_batch_size ..... 4".
//  - DdpConfig (one, merged): DDP's logging data after "DDP Initialized with:" (TORCH_DISTRIBUTED_DEBUG=INFO:
//    bucket_cap_bytes → bucket_cap_mb, find_unused_parameters, gradient_as_bucket_view, static_graph, world_size,
//    bucket_sizes → bucket_bytes, dtypes → "fp32"/"bf16"/"fp16"), DETAIL's "Avg forward compute time: N" and the
//    _get_ddp_logging_data() dict's avg_*_time (ns → ms; the latest wins), "bucket_cap_mb=", "Reducer initialized
//    with bucket_bytes_cap:". Advice inside error messages ("…passing the keyword argument
//    `find_unused_parameters=True`…") is not a setting.
//  - WorldShape (once per distinct shape): "world_size=8", Megatron "using world size: 16", DeepSpeed
//    "dist_world_size=2" and "nnodes=2, num_local_procs=8", accelerate "Num processes: 8", Lightning "MEMBER: 1/8"
//    and "Starting with 4 processes", transformers' one-process "n_gpu: 2".
//  - GpuCount{scope "cuda"} from Lightning's "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1,2,3]" (once).
//  - Command lines inside the log (a launcher near the line's start, backslash continuations joined) go through
//    read_command_line (launch_env.h): Launch, Setting, GpuCount, WorldShape, ModelSeen, BatchSize.
// A JSON profiler trace (a document with "traceEvents") is the trace reader's and is not read here (a note says so).
// Notes (Reading::notes) say where a line was read with a guess (a repeated program word, a cut command …).

#include <string>
#include <string_view>

#include "facts/facts.h"

namespace scalescope::analyze {

/// Whether `text` has at least one line this reader turns into a fact (what input detection asks), command lines
/// aside (looks_like_command answers for those: a text of commands only is no training log). Stops at the first such
/// line. Never throws.
bool looks_like_training_log(std::string_view text);

/// Reads `text` (any bytes: CR/LF mixtures, binary junk and cut lines are read as far as they go); `source` names it
/// in provenance (1-based lines). Times are in seconds unless a Measurement's unit says otherwise. Never throws for
/// any input: an internal failure (out of memory) returns what was read so far with a note.
diagnose::Reading read_training_log(std::string_view text, const std::string& source);

}  // namespace scalescope::analyze
