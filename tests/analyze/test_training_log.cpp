// Training-log reader: the framework-message catalogue (one fixture per id, in the wording the frameworks print),
// timing lines of each format, NCCL / PyTorch distributed errors, end markers, model / batch / world facts, DDP's
// logging data, commands inside logs, damaged input, and the real logs of the shared corpus.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "readers/job/training_log.h"

using namespace scalescope;
using diagnose::Reading;
namespace fs = std::filesystem;

namespace {

Reading read(const std::string& text) { return analyze::read_training_log(text, "train.log"); }

template <class T>
std::vector<diagnose::Seen<T>> of(const Reading& r) {
  return r.facts.of<T>();
}

bool has_message(const Reading& r, const std::string& id, const std::string& framework = "") {
  for (const auto& m : of<diagnose::FrameworkMessage>(r))
    if (m.fact.id == id && (framework.empty() || m.fact.framework == framework)) return true;
  return false;
}

std::vector<std::string> message_ids(const Reading& r) {
  std::vector<std::string> ids;
  for (const auto& m : of<diagnose::FrameworkMessage>(r)) ids.push_back(m.fact.id);
  return ids;
}

const diagnose::Measurement* measurement(const Reading& r, const std::string& quantity, const std::string& unit = "") {
  for (const auto& m : of<diagnose::Measurement>(r))
    if (m.fact.quantity == quantity && (unit.empty() || m.fact.unit == unit)) return &m.fact;
  return nullptr;
}

}  // namespace

// ───────────────────────────── the catalogue ─────────────────────────────

struct CatalogueCase {
  const char* id;
  const char* framework;
  const char* line;
};

// One realistic line per catalogue entry, as the framework prints it (with the prefixes launchers add).
const CatalogueCase kCatalogueCases[] = {
    {"ddp-find-unused-no-unused", "pytorch",
     "[rank0]:[W130 13:08:42.490301705 reducer.cpp:1431] Warning: find_unused_parameters=True was specified in DDP "
     "constructor, but did not find any unused parameters in the forward pass. This flag results in an extra traversal "
     "of the autograd graph every iteration,  which can adversely affect performance. If your model indeed never has any "
     "unused parameters in the forward pass, consider turning this flag off. (function operator())"},
    {"ddp-unused-parameters", "pytorch",
     "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This error "
     "indicates that your module has parameters that were not used in producing loss. You can enable unused parameter "
     "detection by passing the keyword argument `find_unused_parameters=True` to "
     "`torch.nn.parallel.DistributedDataParallel`"},
    {"ddp-unused-parameters", "pytorch", "Parameters which did not receive grad for rank 1: head.bias, head.weight"},
    {"ddp-unused-parameters", "lightning",
     "RuntimeError: It looks like your LightningModule has parameters that were not used in producing the loss returned "
     "by training_step. If this is intentional, you must enable the detection of unused parameters in DDP, either by "
     "setting the string value `strategy='ddp_find_unused_parameters_true'` or by setting the flag in the strategy with "
     "`strategy=DDPStrategy(find_unused_parameters=True)`."},
    {"dataparallel", "pytorch",
     "/opt/conda/lib/python3.10/site-packages/torch/nn/parallel/_functions.py:68: UserWarning: Was asked to gather along "
     "dimension 0, but all input tensors were scalars; will instead unsqueeze and return a vector."},
    {"dataparallel", "pytorch",
     "    There is an imbalance between your GPUs. You may want to exclude GPU 1 which"},
    {"dataloader-workers", "pytorch",
     "/usr/local/lib/python3.11/dist-packages/torch/utils/data/dataloader.py:624: UserWarning: This DataLoader will "
     "create 16 worker processes in total. Our suggested max number of worker in current system is 8, which is smaller "
     "than what this DataLoader is going to create."},
    {"dataloader-workers", "lightning",
     "/site-packages/lightning/pytorch/trainer/connectors/data_connector.py:441: The 'train_dataloader' does not have "
     "many workers which may be a bottleneck. Consider increasing the value of the `num_workers` argument` to "
     "`num_workers=31` in the `DataLoader` to improve performance."},
    {"persistent-workers", "lightning",
     "/site-packages/lightning/pytorch/trainer/connectors/data_connector.py:419: Consider setting "
     "`persistent_workers=True` in 'train_dataloader' to speed up the dataloader worker initialization."},
    {"bucket-view-strides", "pytorch",
     "/usr/local/lib/python3.10/dist-packages/torch/autograd/graph.py:825: UserWarning: Grad strides do not match bucket "
     "view strides. This may indicate grad was not created according to the gradient layout contract, or that the "
     "param's strides changed since DDP was constructed.  This is not an error, but may impair performance."},
    {"rebuilt-buckets", "pytorch",
     "03/13/2023 10:49:01 - INFO - torch.nn.parallel.distributed - Reducer buckets have been rebuilt in this iteration."},
    {"rebuilt-buckets", "pytorch",
     "I0607 16:18:58.085681 544067 reducer.cpp:1854] 2 buckets rebuilt with size limits: 1048576, 26214400 bytes."},
    {"sync-debug", "pytorch",
     "/workspace/train.py:88: UserWarning: called a synchronizing CUDA operation (Triggered internally at "
     "../c10/cuda/CUDAFunctions.cpp:150.)"},
    {"compile-graph-break", "pytorch",
     "[rank0]:I0815 10:12:13.123000 123 torch/_dynamo/backends/distributed.py:470] [0/0] DDPOptimizer used bucket cap "
     "26214400 and created 4 buckets. Enable debug logs for detailed bucket info."},
    {"compile-graph-break", "pytorch",
     "W1031 00:31:42.775483 139927651080000 torch/_dynamo/convert_frame.py:762] [0/8] torch._dynamo hit "
     "config.cache_size_limit (8)"},
    {"compile-graph-break", "pytorch",
     "V0404 12:00:00.000000 42 torch/_dynamo/symbolic_convert.py:444] [0/0] [__graph_breaks] Graph break in user code "
     "at /workspace/model.py:120"},
    {"omp-threads", "pytorch",
     "W1210 18:28:00.405000 1 site-packages/torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable "
     "for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for "
     "optimal performance in your application as needed."},
    {"nccl-abort", "pytorch",
     "torch.distributed.DistBackendError: NCCL communicator was aborted on rank 2. Original reason for failure was: "
     "[Rank 2] Watchdog caught collective operation timeout"},
    {"nccl-abort", "pytorch",
     "[rank1]:[E ProcessGroupNCCL.cpp:1182] [Rank 1] NCCL watchdog thread terminated with exception: [Rank 1] Watchdog "
     "caught collective operation timeout"},
    {"nccl-async-error", "pytorch",
     "[rank1]:[E ProcessGroupNCCL.cpp:537] Some NCCL operations have failed or timed out. Due to the asynchronous nature "
     "of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data."},
    {"tensor-cores-precision", "lightning",
     "You are using a CUDA device ('NVIDIA A100-SXM4-40GB') that has Tensor Cores. To properly utilize them, you should "
     "set `torch.set_float32_matmul_precision('medium' | 'high')` which will trade-off precision for performance."},
    {"gpu-unused", "lightning", "GPU available: True (cuda), used: False"},
    {"deepspeed-cache-flush", "deepspeed",
     "[2025-10-09 12:01:31,035] [WARNING] [stage3.py:2160:step] 1 pytorch allocator cache flushes since last step. "
     "this happens when there is high memory pressure and is detrimental to performance."},
};

TEST(TrainingLogCatalogue, EveryEntryIsRecognisedFromItsRealWording) {
  for (const auto& c : kCatalogueCases) {
    SCOPED_TRACE(c.line);
    const auto r = read(std::string("some earlier line\n") + c.line + "\nsome later line\n");
    ASSERT_TRUE(has_message(r, c.id, c.framework)) << "ids: " << ::testing::PrintToString(message_ids(r));
    const auto msgs = of<diagnose::FrameworkMessage>(r);
    for (const auto& m : msgs) {
      if (m.fact.id == c.id) {
        EXPECT_EQ(m.where.line, 2u);
      }
    }
    EXPECT_TRUE(analyze::looks_like_training_log(c.line));
  }
}

TEST(TrainingLogCatalogue, EveryIdOfTheHeaderHasAFixture) {
  const char* ids[] = {"ddp-find-unused-no-unused", "ddp-unused-parameters", "dataparallel", "dataloader-workers",
                       "persistent-workers", "bucket-view-strides", "rebuilt-buckets", "sync-debug",
                       "compile-graph-break", "omp-threads", "nccl-abort", "tensor-cores-precision"};
  for (const char* id : ids) {
    bool found = false;
    for (const auto& c : kCatalogueCases) found |= std::string(c.id) == id;
    EXPECT_TRUE(found) << id;
  }
}

TEST(TrainingLogCatalogue, PrefixesQuoteMarkersAndCrlfDoNotMatter) {
  const std::string msg =
      "[W reducer.cpp:1050] Warning: find_unused_parameters=True was specified in DDP constructor, but did not find any "
      "unused parameters. This flag results in an extra traversal of the autograd graph every iteration";
  for (const std::string prefix : {"> ", "> > ", "[default0]:", "0: ", "[1,0]<stderr>:", "(RayTrainWorker pid=799099) ",
                                   "2025-06-17 16:23:09 ", "  0%|          | 0/279 [00:00<?, ?it/s]"}) {
    SCOPED_TRACE(prefix);
    const auto r = read("line one\r\n" + prefix + msg + "\r\n");
    EXPECT_TRUE(has_message(r, "ddp-find-unused-no-unused"));
  }
}

TEST(TrainingLogCatalogue, AMessageWrappedAcrossLinesIsRecognised) {
  // A terminal or a paste broke the warning inside the phrase; the continuation repeats the rank prefix.
  const auto r = read(
      "[rank0]:[W reducer.cpp:1300] Warning: find_unused_parameters=True was specified in DDP constructor, but did not find any un\n"
      "[rank0]:used parameters in the forward pass.\n");
  EXPECT_TRUE(has_message(r, "ddp-find-unused-no-unused"));
  const auto r2 = read(
      "UserWarning: Grad strides do not match\n"
      "  bucket view strides. This may indicate grad was not created according to the gradient layout contract\n");
  EXPECT_TRUE(has_message(r2, "bucket-view-strides"));
}

TEST(TrainingLogCatalogue, EachIdIsReportedOnceAtItsFirstLine) {
  std::string log;
  for (int rank = 0; rank < 8; ++rank)
    log += "[rank" + std::to_string(rank) +
           "]:[W reducer.cpp:1346] Warning: find_unused_parameters=True was specified in DDP constructor, but did not "
           "find any unused parameters in the forward pass.\n";
  const auto r = read(log);
  ASSERT_EQ(of<diagnose::FrameworkMessage>(r).size(), 1u);
  EXPECT_EQ(of<diagnose::FrameworkMessage>(r)[0].where.line, 1u);
}

TEST(TrainingLogCatalogue, NearMissesAreNotMessages) {
  const auto r = read(
      "GPU available: True (cuda), used: True\n"
      "TPU available: False, using: 0 TPU cores\n"
      "find_unused_parameters: 0\n"
      "The model has no unused parameters.\n"
      "Epoch 1: loss 0.5\n");
  EXPECT_TRUE(of<diagnose::FrameworkMessage>(r).empty()) << ::testing::PrintToString(message_ids(r));
}

TEST(TrainingLogCatalogue, TheReducerWarningSaysFindUnusedParametersIsOn) {
  const auto r = read(
      "> [W reducer.cpp:1050] Warning: find_unused_parameters=True was specified in DDP constructor, but did not find any "
      "unused parameters.\n");
  const auto ddp = of<diagnose::DdpConfig>(r);
  ASSERT_EQ(ddp.size(), 1u);
  EXPECT_EQ(ddp[0].fact.find_unused_parameters, true);
}

TEST(TrainingLogCatalogue, AdviceInAnErrorIsNoSetting) {
  // The reducer's error suggests find_unused_parameters=True; it does not say it is on.
  const auto r = read(std::string(kCatalogueCases[1].line) + "\n" + kCatalogueCases[3].line + "\n");
  for (const auto& d : of<diagnose::DdpConfig>(r)) EXPECT_FALSE(d.fact.find_unused_parameters.has_value());
}

TEST(TrainingLogCatalogue, TransformersOneProcessWithSeveralGpusIsDataParallel) {
  for (const std::string line :
       {"03/02/2021 10:11:12 - WARNING - __main__ -   Process rank: -1, device: cuda:0, n_gpu: 2distributed training: "
        "False, 16-bits training: False",
        "[WARNING|run_clm.py:240] Process rank: 0, device: cuda:0, n_gpu: 4, distributed training: False, 16-bits "
        "training: True"}) {
    SCOPED_TRACE(line);
    const auto r = read(line + "\n");
    EXPECT_TRUE(has_message(r, "dataparallel", "transformers"));
    const auto w = of<diagnose::WorldShape>(r);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].fact.processes, 1);
    EXPECT_GE(w[0].fact.gpus_per_process.value_or(0), 2);
  }
  // TrainingArguments printed one field per line.
  {
    const auto r = read(
        "[INFO|run_clm.py:260] 2021-02-01 10:00:00,000 >> Training/evaluation parameters TrainingArguments(\n"
        "_n_gpu=2,\n"
        "adafactor=False,\n"
        "local_rank=-1,\n"
        "per_device_train_batch_size=4,\n"
        ")\n");
    EXPECT_TRUE(has_message(r, "dataparallel", "transformers"));
    EXPECT_EQ(of<diagnose::FrameworkMessage>(r).at(0).where.line, 2u);
    EXPECT_EQ(of<diagnose::BatchSize>(r).at(0).fact.per_device, 4.0);
    const auto ddp = read("TrainingArguments(\n_n_gpu=1,\nlocal_rank=0,\n)\n");
    EXPECT_FALSE(has_message(ddp, "dataparallel"));
  }
  // Distributed: one GPU per process, no DataParallel.
  const auto r = read("Process rank: 1, device: cuda:1, n_gpu: 1, distributed training: True, 16-bits training: False\n");
  EXPECT_FALSE(has_message(r, "dataparallel"));
  const auto r2 = read("Process rank: -1, device: cuda:0, n_gpu: 1, distributed training: False\n");
  EXPECT_FALSE(has_message(r2, "dataparallel"));
}

// ───────────────────────────── timing ─────────────────────────────

TEST(TrainingLogTiming, TransformersProgressBarIgnoresWarmUpAndTheEvaluationBar) {
  // HF Trainer's bar (no description) with its evaluation bar (no description, smaller total) in between; tqdm redraws
  // with '\r'.
  std::string log = "***** Running training *****\n";
  log += "  0%|          | 0/1000 [00:00<?, ?it/s]\r";
  log += "  0%|          | 1/1000 [00:09<2:30:00,  9.02s/it]\r";
  for (int i = 2; i < 12; ++i) log += "  1%|          | " + std::to_string(i) + "/1000 [00:10<06:20,  2.50it/s]\r";
  log += "\n100%|##########| 50/50 [00:05<00:00,  9.80it/s]\n";
  log += "  2%|          | 20/1000 [00:14<06:30,  2.40it/s]\n";
  const auto r = read(log);
  const auto* m = measurement(r, "step time", "s");
  ASSERT_NE(m, nullptr);
  EXPECT_NEAR(m->value, 0.4, 1e-9);  // 2.50 it/s, the 9.02 s/it warm-up reading left out
  EXPECT_FALSE(m->higher_is_better);
  EXPECT_NE(m->row.find("warm-up"), std::string::npos);
  EXPECT_EQ(of<diagnose::Measurement>(r).size(), 1u);  // the evaluation bar is not reported
}

TEST(TrainingLogTiming, LightningBarsValidationBarsAndSecondsPerIteration) {
  const auto r = read(
      "Epoch 0:  10%|█         | 10/98 [00:05<00:40,  2.00it/s, v_num=0, train_loss=1.2]\n"
      "Validation DataLoader 0:  50%|█████     | 5/10 [00:00<00:00, 30.10it/s]\n"
      "Epoch 0:  20%|██        | 20/98 [00:07<00:29,  2.67it/s, v_num=0, train_loss=1.1]\n"
      "Epoch 1:  20%|██        | 20/98 [00:07<00:29,  1.52s/it, v_num=0, train_loss=1.1]\n"
      "Epoch 1:  30%|███       | 30/98 [00:09<00:21,  1.48s/it, v_num=0, train_loss=1.0]\n");
  const auto ms = of<diagnose::Measurement>(r);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].fact.unit, "s");
  EXPECT_NEAR(ms[0].fact.value, 1.48, 1e-9);  // median of 1/2.67, 1.52, 1.48
  EXPECT_NE(ms[0].fact.row.find("epoch #"), std::string::npos);
}

TEST(TrainingLogTiming, TransformersTrainMetricsDictAndBlock) {
  const auto r = read(
      "{'train_runtime': 246.2454, 'train_samples_per_second': 7.2, 'train_steps_per_second': 0.902, 'train_loss': "
      "0.742, 'epoch': 3.0}\n");
  ASSERT_NE(measurement(r, "run time"), nullptr);
  EXPECT_DOUBLE_EQ(measurement(r, "run time")->value, 246.2454);
  ASSERT_NE(measurement(r, "throughput", "samples/s"), nullptr);
  EXPECT_DOUBLE_EQ(measurement(r, "throughput", "samples/s")->value, 7.2);
  EXPECT_TRUE(measurement(r, "throughput", "samples/s")->higher_is_better);
  ASSERT_NE(measurement(r, "throughput", "steps/s"), nullptr);
  ASSERT_EQ(of<diagnose::TrainingEnded>(r).size(), 1u);
  EXPECT_EQ(of<diagnose::TrainingEnded>(r)[0].fact.framework, "transformers");

  const auto b = read(
      "***** train metrics *****\n"
      "  epoch                    =        3.0\n"
      "  train_loss               =     3.1142\n"
      "  train_runtime            = 0:04:06.24\n"
      "  train_samples            =       2318\n"
      "  train_samples_per_second =     28.236\n");
  ASSERT_NE(measurement(b, "run time"), nullptr);
  EXPECT_NEAR(measurement(b, "run time")->value, 246.24, 1e-9);
  EXPECT_NEAR(measurement(b, "throughput", "samples/s")->value, 28.236, 1e-9);
}

TEST(TrainingLogTiming, DeepSpeedThroughputTimerUsesTheLastRunningAverage) {
  const auto r = read(
      "[2023-08-02 00:41:17,936] [INFO] [timer.py:215:stop] epoch=0/micro_step=10/global_step=10, "
      "RunningAvgSamplesPerSec=220.69530887096045, CurrSamplesPerSec=222.88787331278564, MemAllocated=0.07GB, "
      "MaxMemAllocated=1.36GB\n"
      "[2023-08-02 00:41:40,001] [INFO] [timer.py:215:stop] epoch=0/micro_step=20/global_step=20, "
      "RunningAvgSamplesPerSec=230.5, CurrSamplesPerSec=240.1, MemAllocated=0.07GB, MaxMemAllocated=1.36GB\n");
  const auto* m = measurement(r, "throughput", "samples/s");
  ASSERT_NE(m, nullptr);
  EXPECT_DOUBLE_EQ(m->value, 230.5);
  EXPECT_EQ(of<diagnose::Measurement>(r).size(), 1u);
}

TEST(TrainingLogTiming, DeepSpeedWallClockBreakdownIsStepPhases) {
  const auto r = read(
      "[2024-03-31 11:14:20,001] [INFO] [logging.py:69:log_dist] [Rank 0] rank=0 time (ms) | forward: 5000.00 | "
      "backward: 900.00 | backward_inner: 800.00 | backward_allreduce: 100.00 | step: 700.00\n"
      "[2024-03-31 11:14:23,228] [INFO] [logging.py:69:log_dist] [Rank 0] rank=0 time (ms) | forward: 1425.20 | "
      "backward: 211.12 | backward_inner: 209.05 | backward_allreduce: 1.99 | step: 649.10\n");
  const auto sp = of<diagnose::StepPhases>(r);
  ASSERT_EQ(sp.size(), 1u);
  EXPECT_NEAR(sp[0].fact.forward_s.value(), 1.4252, 1e-9);
  EXPECT_NEAR(sp[0].fact.backward_s.value(), 0.21112, 1e-9);
  EXPECT_NEAR(sp[0].fact.all_reduce_s.value(), 0.00199, 1e-9);
  EXPECT_NEAR(sp[0].fact.optimizer_s.value(), 0.6491, 1e-9);
  EXPECT_EQ(sp[0].where.line, 2u);
  EXPECT_NE(sp[0].fact.basis.find("DeepSpeed"), std::string::npos);
}

TEST(TrainingLogTiming, MegatronIterationLinesAndTimers) {
  const auto r = read(
      "using world size: 16, data-parallel size: 16, context-parallel size: 1, tensor-model-parallel size: 1\n"
      " [2025-04-13 23:41:12] iteration       10/    1000 | consumed samples:          160 | elapsed time per "
      "iteration (ms): 1147.6 | throughput per GPU (TFLOP/s/GPU): 98.1 | learning rate: 0.000000E+00 | global batch "
      "size:    16 | loss scale: 8388608.0 |\n"
      " [2025-04-13 23:41:24] iteration       20/    1000 | consumed samples:          320 | elapsed time per "
      "iteration (ms): 430.0 | throughput per GPU (TFLOP/s/GPU): 240.5 | learning rate: 1.3E-04 | global batch size:"
      "    16 |\n"
      "time (ms) | forward-backward: 400.10 | forward-compute: 120.50 | backward-compute: 250.20 | batch-generator: "
      "1.20 | grads-all-reduce: 20.00 | optimizer: 10.30\n"
      " [2025-04-13 23:41:36] iteration       30/    1000 | consumed samples:          480 | elapsed time per "
      "iteration (ms): 432.0 | throughput per GPU (TFLOP/s/GPU): 239.0 | global batch size:    16 |\n");
  const auto* st = measurement(r, "step time", "ms");
  ASSERT_NE(st, nullptr);
  EXPECT_DOUBLE_EQ(st->value, 431.0);  // median of 430 and 432; 1147.6 is warm-up
  EXPECT_EQ(st->dims.at("gpus"), "16");
  const auto* tf = measurement(r, "throughput", "TFLOP/s/GPU");
  ASSERT_NE(tf, nullptr);
  EXPECT_NEAR(tf->value, 239.75, 1e-9);
  const auto sp = of<diagnose::StepPhases>(r);
  ASSERT_EQ(sp.size(), 1u);
  EXPECT_NEAR(sp[0].fact.step_s.value(), 0.430, 1e-9);  // the iteration line before the timers
  EXPECT_NEAR(sp[0].fact.forward_s.value(), 0.1205, 1e-9);
  EXPECT_NEAR(sp[0].fact.backward_s.value(), 0.2502, 1e-9);
  EXPECT_NEAR(sp[0].fact.all_reduce_s.value(), 0.020, 1e-9);
  EXPECT_NEAR(sp[0].fact.data_wait_s.value(), 0.0012, 1e-9);
  EXPECT_EQ(sp[0].fact.world_size, 16);
  const auto b = of<diagnose::BatchSize>(r);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].fact.global, 16.0);
}

TEST(TrainingLogTiming, NanoGptLlmcTorchtitanNanochatAndSamplesPerSecond) {
  {
    const auto r = read(
        "number of parameters: 123.65M\n"
        "iter 0: loss 10.9876, time 5123.45ms, mfu -100.00%\n"
        "iter 10: loss 6.1234, time 130.00ms, mfu 38.12%\n"
        "iter 20: loss 5.4321, time 132.00ms, mfu 38.00%\n"
        "iter 30: loss 5.1111, time 131.00ms, mfu 38.05%\n");
    const auto* m = measurement(r, "step time", "ms");
    ASSERT_NE(m, nullptr);
    EXPECT_DOUBLE_EQ(m->value, 131.0);
    const auto models = of<diagnose::ModelSeen>(r);
    ASSERT_EQ(models.size(), 1u);
    EXPECT_NEAR(models[0].fact.parameters.value(), 123.65e6, 1);
  }
  {
    const auto r = read(
        "step    1/74 | train loss 11.010042 | norm 15.4224 | lr 0.00e+00 | 2341.97 ms | -100.0% bf16 MFU | 223871 tok/s\n"
        "step    2/74 | train loss 10.949919 | norm 15.9838 | lr 6.00e-06 | 98.27 ms | 17.2% bf16 MFU | 166752 tok/s\n"
        "step    3/74 | train loss 10.832000 | norm 14.1000 | lr 1.20e-05 | 98.73 ms | 17.1% bf16 MFU | 165976 tok/s\n");
    ASSERT_NE(measurement(r, "step time", "ms"), nullptr);
    EXPECT_NEAR(measurement(r, "step time", "ms")->value, 98.5, 1e-9);
    ASSERT_NE(measurement(r, "throughput", "tokens/s"), nullptr);
    EXPECT_NEAR(measurement(r, "throughput", "tokens/s")->value, 166364, 1e-9);
  }
  {
    const auto r = read(
        "[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step:  1  loss: 12.24405  memory: 9.46GiB(64.99%)  tps: "
        "1,282  tflops: 0.12  mfu: 0.04%\n"
        "[rank0]:[titan] 2026-05-18 16:04:47,456 - root - INFO - step:  2  loss:  3.10680  memory:  9.46GiB(64.99%)  "
        "tps: 7,334  tflops: 0.53  mfu: 0.17%\n"
        "[rank0]:[titan] 2026-05-18 16:04:48,577 - root - INFO - step:  3  loss:  3.05047  memory:  9.46GiB(64.99%)  "
        "tps: 7,313  tflops: 0.52  mfu: 0.17%\n");
    const auto* m = measurement(r, "throughput", "tokens/s/GPU");
    ASSERT_NE(m, nullptr);
    EXPECT_DOUBLE_EQ(m->value, 7323.5);
  }
  {
    const auto r = read(
        "step 00004/21400 (0.02%) | loss: 8.893647 | lrm: 1.00 | dt: 989.44ms | tok/sec: 529,882 | mfu: 74.13\n"
        "step 00005/21400 (0.02%) | loss: 8.530593 | lrm: 1.00 | dt: 991.09ms | tok/sec: 529,000 | mfu: 74.00\n");
    ASSERT_NE(measurement(r, "step time", "ms"), nullptr);
    EXPECT_DOUBLE_EQ(measurement(r, "step time", "ms")->value, 991.09);
    EXPECT_DOUBLE_EQ(measurement(r, "throughput", "tokens/s")->value, 529000);
  }
  {
    const auto r = read(
        "0: 2025-06-17 16:24:52 I [train.py:103] Batch 0 Loss: 11.61653, Speed: 4.88 samples/sec, lr: 0.000100\n"
        "0: 2025-06-17 16:24:55 I [train.py:103] Batch 1 Loss: 11.64398, Speed: 10.90 samples/sec, lr: 0.000100\n"
        "0: 2025-06-17 16:24:58 I [train.py:103] Batch 2 Loss: 10.58705, Speed: 11.10 samples/sec, lr: 0.000100\n");
    const auto* m = measurement(r, "throughput", "samples/s");
    ASSERT_NE(m, nullptr);
    EXPECT_DOUBLE_EQ(m->value, 11.0);
    EXPECT_TRUE(m->higher_is_better);
  }
}

TEST(TrainingLogTiming, EpochAndStepTimeLabelsConvertTheirUnits) {
  const auto r = read(
      "Epoch 1 | epoch time: 2.5 min | loss 0.3\n"
      "Epoch 2 | epoch time: 150 s | loss 0.2\n"
      "Epoch 3 | epoch time: 130 s | loss 0.2\n"
      "step 100 step_time: 350ms\n");
  ASSERT_NE(measurement(r, "epoch time"), nullptr);
  EXPECT_DOUBLE_EQ(measurement(r, "epoch time")->value, 140);
  ASSERT_NE(measurement(r, "step time", "s"), nullptr);
  EXPECT_DOUBLE_EQ(measurement(r, "step time", "s")->value, 0.35);
}

TEST(TrainingLogTiming, ImageNetTimeAndDataBecomeStepPhases) {
  // pytorch/examples imagenet/main.py: current value, running average in parentheses, TAB separated.
  const auto r = read(
      "=> creating model 'resnet50'\n"
      "Epoch: [0][0/5005]\tTime 30.000 (30.000)\tData 29.000 (29.000)\tLoss 6.9073 (6.9073)\n"
      "Epoch: [0][10/5005]\tTime 1.200 (3.800)\tData 1.000 (3.500)\tLoss 6.9065 (6.9074)\n"
      "Epoch: [0][20/5005]\tTime 1.100 (2.500)\tData 0.900 (2.200)\tLoss 6.9075 (6.9076)\n");
  const auto sp = of<diagnose::StepPhases>(r);
  ASSERT_EQ(sp.size(), 1u);
  EXPECT_DOUBLE_EQ(sp[0].fact.step_s.value(), 2.5);
  EXPECT_DOUBLE_EQ(sp[0].fact.data_wait_s.value(), 2.2);
  EXPECT_EQ(sp[0].where.line, 4u);
  EXPECT_NE(sp[0].fact.basis.find("[0][20/5005]"), std::string::npos);
  // (2.5 × 21 − 30) / 20 = 1.125 without the warm-up iteration
  EXPECT_NE(sp[0].fact.basis.find("1.125"), std::string::npos) << sp[0].fact.basis;
  ASSERT_NE(measurement(r, "step time", "s"), nullptr);
  const auto models = of<diagnose::ModelSeen>(r);
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].fact.name, "resnet50");
  EXPECT_NEAR(models[0].fact.parameters.value(), 25.6e6, 1e5);
}

TEST(TrainingLogTiming, MetricLoggerAndTimmLines) {
  const auto r = read(
      "Epoch: [0]  [  0/500]  eta: 0:35:50  lr: 0.000001  loss: 7.4586  time: 4.3018  data: 3.9000  max mem: 20913\n"
      "Epoch: [0]  [ 50/500]  eta: 0:03:04  lr: 0.000011  loss: 4.9250  time: 0.3323  data: 0.0100  max mem: 22076\n"
      "Epoch: [0]  [100/500]  eta: 0:02:29  lr: 0.000021  loss: 3.6569  time: 0.3376  data: 0.0120  max mem: 22076\n");
  const auto sp = of<diagnose::StepPhases>(r);
  ASSERT_EQ(sp.size(), 1u);
  EXPECT_NEAR(sp[0].fact.step_s.value(), (0.3323 + 0.3376) / 2, 1e-9);
  EXPECT_NEAR(sp[0].fact.data_wait_s.value(), 0.011, 1e-9);

  const auto t = read(
      "Train: 0 [   0/1251 (  0%)]  Loss: 6.95 (6.95)  Time: 9.100s,   56.26/s  (9.100s,   56.26/s)  LR: 1.0e-06  "
      "Data: 8.000 (8.000)\n"
      "Train: 0 [  50/1251 (  4%)]  Loss: 6.91 (6.93)  Time: 0.361s, 2836.31/s  (0.395s, 2592.53/s)  LR: 1.0e-06  "
      "Data: 0.012 (0.037)\n");
  const auto tsp = of<diagnose::StepPhases>(t);
  ASSERT_EQ(tsp.size(), 1u);
  EXPECT_DOUBLE_EQ(tsp[0].fact.step_s.value(), 0.395);
  EXPECT_DOUBLE_EQ(tsp[0].fact.data_wait_s.value(), 0.037);
}

TEST(TrainingLogTiming, MeasurementsCarryTheWorldSizeTheLogStates) {
  const auto r = read(
      "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/8\n"
      "Epoch 0:  10%|█         | 10/98 [00:05<00:40,  2.00it/s]\n"
      "Epoch 0:  20%|██        | 20/98 [00:07<00:29,  2.50it/s]\n");
  const auto* m = measurement(r, "step time");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->dims.at("gpus"), "8");
  const auto w = of<diagnose::WorldShape>(r);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].fact.ranks, 8);
}

TEST(TrainingLogTiming, NonTimingNumbersAreNotTimings) {
  const auto r = read(
      "Loaded 100 Gbit/s link\n"
      "time to first token 12\n"
      "Downloading shards: 100%|██████████| 2/2 [00:03<00:00,  1.60s/it]\n"
      "Map: 100%|██████████| 1000/1000 [00:01<00:00, 812.34 examples/s]\n"
      "  0%|          | 0/1000 [00:00<?, ?it/s]\n");
  EXPECT_TRUE(of<diagnose::Measurement>(r).empty());
}

// ───────────────────────────── errors and endings ─────────────────────────────

TEST(TrainingLogErrors, NcclErrorFormsOfPyTorchAndNcclTests) {
  {
    const auto r = read("RuntimeError: NCCL Error 2: unhandled system error\n");
    const auto f = of<diagnose::NcclFailure>(r);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].fact.code, 2);
    EXPECT_EQ(f[0].fact.name, "unhandled system error");
    EXPECT_EQ(f[0].fact.reporter, "pytorch");
    EXPECT_EQ(f[0].fact.phase, "unknown");
  }
  {
    const auto r = read(
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, "
        "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1\n"
        "ncclUnhandledCudaError: Call to CUDA function failed.\n"
        "Last error:\n"
        "Cuda failure 'out of memory'\n");
    const auto f = of<diagnose::NcclFailure>(r);
    ASSERT_EQ(f.size(), 1u);  // the same failure named twice
    EXPECT_EQ(f[0].fact.code, 1);
    const auto v = of<diagnose::NcclVersion>(r);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].fact.version, "2.18.1");
    const auto w = of<diagnose::NcclWarning>(r);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].fact.category, "cuda");
    EXPECT_EQ(w[0].where.line, 4u);
  }
  {
    const auto r = read("host-a: Test NCCL failure common.cu:777 'unhandled system error (run with NCCL_DEBUG=INFO for details)'\n");
    const auto f = of<diagnose::NcclFailure>(r);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].fact.reporter, "nccl-tests");
    EXPECT_EQ(f[0].fact.code, 2);
  }
  {
    const auto r = read("RuntimeError: NCCL error: remote process exited or there was a network error, NCCL version 2.19.3\n");
    const auto f = of<diagnose::NcclFailure>(r);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].fact.code, 6);
  }
  {
    const auto r = read(
        "ncclInternalError: Internal check failed.\n"
        "Last error:\n"
        "Net : Connection closed by remote peer 192.0.2.3<54321>\n");
    EXPECT_EQ(of<diagnose::NcclFailure>(r).at(0).fact.code, 3);
    EXPECT_EQ(of<diagnose::NcclWarning>(r).at(0).fact.category, "socket");
  }
}

TEST(TrainingLogErrors, LastErrorCategoriesAndTheInitPhase) {
  const auto r = read(
      "  torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, "
      "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
      "  ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. \n"
      "  Last error:\n"
      "  Error while creating shared memory segment /dev/shm/nccl-AbCdEf (size 9637888), error: No space left on device (28)\n"
      "  Exception raised from create at /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268 (most recent call first):\n");
  const auto w = of<diagnose::NcclWarning>(r);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].fact.category, "shm-space");
  EXPECT_NE(w[0].fact.message.find("/dev/shm/nccl-AbCdEf"), std::string::npos);
  const auto f = of<diagnose::NcclFailure>(r);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].fact.phase, "init");
  EXPECT_EQ(f[0].fact.code, 2);
  // Text after "Last error:" on the same line, and IB completion errors.
  const auto r2 = read("Last error: NET/IB : Got completion from peer 192.0.2.2<1234> with error 12, opcode 0, len 0\n");
  ASSERT_EQ(of<diagnose::NcclWarning>(r2).size(), 1u);
  EXPECT_EQ(of<diagnose::NcclWarning>(r2)[0].fact.category, "ib");
}

TEST(TrainingLogErrors, AFailureAfterTrainingStepsIsInACollective) {
  const auto r = read(
      "iter 10: loss 6.1234, time 130.00ms, mfu 38.12%\n"
      "iter 20: loss 5.4321, time 132.00ms, mfu 38.00%\n"
      "RuntimeError: NCCL Error 6: remote process exited or there was a network error\n");
  ASSERT_EQ(of<diagnose::NcclFailure>(r).size(), 1u);
  EXPECT_EQ(of<diagnose::NcclFailure>(r)[0].fact.phase, "collective");
}

TEST(TrainingLogErrors, ProcessFailures) {
  const auto r = read(
      "srun: error: host-a: task 0: Aborted (core dumped)\n"
      "Segmentation fault (core dumped)\n"
      "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
      "  exitcode  : -6 (pid: 1234)\n"
      "  traceback : Signal 6 (SIGABRT) received by PID 1234\n"
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
      "Killed\n"
      "ValueError: bad value\n"
      "UserWarning: not a failure\n"
      "Process finished with exit code 0\n");
  std::vector<std::string> what;
  for (const auto& p : of<diagnose::ProcessFailure>(r)) what.push_back(p.fact.what);
  const std::vector<std::string> expected = {"srun: error: host-a: task 0: Aborted (core dumped)",
                                             "Segmentation fault",
                                             "ChildFailedError",
                                             "exit code -6",
                                             "signal SIGABRT",
                                             "CUDA out of memory",
                                             "Killed",
                                             "ValueError"};
  EXPECT_EQ(what, expected);
}

TEST(TrainingLogErrors, EndOfTrainingMarkers) {
  const std::pair<const char*, const char*> cases[] = {
      {"`Trainer.fit` stopped: `max_epochs=20` reached.", "lightning"},
      {"INFO:pytorch_lightning.utilities.rank_zero:`Trainer.fit` stopped: `max_steps=1000` reached.", "lightning"},
      {"[INFO|trainer.py:2681] 2025-05-15 07:30:25,556 >> Training completed. Do not forget to share your model on "
       "huggingface.co/models =)",
       "transformers"},
      {"[after training is done] datetime: 2025-04-14 01:00:00", "megatron"},
  };
  for (const auto& [line, fw] : cases) {
    SCOPED_TRACE(line);
    const auto r = read(std::string(line) + "\n");
    ASSERT_EQ(of<diagnose::TrainingEnded>(r).size(), 1u);
    EXPECT_EQ(of<diagnose::TrainingEnded>(r)[0].fact.framework, fw);
  }
}

// ───────────────────────────── model, batch, world, DDP ─────────────────────────────

TEST(TrainingLogFacts, ModelNamesAndParameterCounts) {
  {
    const auto r = read(
        "loading configuration file config.json from cache at "
        "/root/.cache/huggingface/hub/models--meta-llama--Llama-3.2-3B-Instruct/snapshots/0cb88a/config.json\n");
    const auto m = of<diagnose::ModelSeen>(r);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0].fact.name, "meta-llama/Llama-3.2-3B-Instruct");
    EXPECT_DOUBLE_EQ(m[0].fact.parameters.value(), 3e9);
  }
  {
    const auto r = read(
        "ModelArguments(model_name_or_path='gpt2-medium', model_type=None, config_name=None)\n"
        "  Number of trainable parameters = 354,823,168\n"
        "Using bfloat16 Automatic Mixed Precision (AMP)\n");
    const auto m = of<diagnose::ModelSeen>(r);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0].fact.name, "gpt2-medium");
    EXPECT_DOUBLE_EQ(m[0].fact.parameters.value(), 354823168);  // stated beats the table's 355M
    EXPECT_EQ(m[0].fact.dtype, "bf16");
  }
  {
    // Trace-like keys are no parameter counts.
    const auto j = read("\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": 59814,\n");
    EXPECT_TRUE(of<diagnose::ModelSeen>(j).empty());
  }
  {
    // peft: the whole model, not the adapter.
    const auto r = read("trainable params: 4,194,304 || all params: 6,742,609,920 || trainable%: 0.0622\n");
    const auto m = of<diagnose::ModelSeen>(r);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0].fact.name, "");
    EXPECT_DOUBLE_EQ(m[0].fact.parameters.value(), 6742609920);
  }
  {
    // Lightning's summary: the total, not the estimated size in MB.
    const auto r = read(
        "124 M     Trainable params\n"
        "0         Non-trainable params\n"
        "124 M     Total params\n"
        "497.759   Total estimated model params size (MB)\n");
    const auto m = of<diagnose::ModelSeen>(r);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_DOUBLE_EQ(m[0].fact.parameters.value(), 124e6);
  }
  {
    const auto r = read("=> using pre-trained model 'vgg16'\n");
    EXPECT_NEAR(of<diagnose::ModelSeen>(r).at(0).fact.parameters.value(), 138.4e6, 1e5);
  }
}

TEST(TrainingLogFacts, TransformersBatchBlock) {
  const auto r = read(
      "***** Running training *****\n"
      "  Num examples = 2318\n"
      "  Num Epochs = 3\n"
      "  Instantaneous batch size per device = 4\n"
      "  Total train batch size (w. parallel, distributed & accumulation) = 32\n"
      "  Gradient Accumulation steps = 4\n"
      "  Total optimization steps = 219\n");
  const auto b = of<diagnose::BatchSize>(r);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].fact.per_device, 4.0);
  EXPECT_EQ(b[0].fact.global, 32.0);
  EXPECT_EQ(b[0].fact.gradient_accumulation, 4.0);
  EXPECT_EQ(b[0].where.line, 4u);
}

TEST(TrainingLogFacts, WorldStatements) {
  const std::pair<const char*, int> cases[] = {
      {"Distributed environment: MULTI_GPU  Backend: nccl\nNum processes: 8\nProcess index: 0\n", 8},
      {"All distributed processes registered. Starting with 4 processes\n", 4},
      {"[2024-01-01 00:00:00,000] [INFO] [launch.py:163:main] dist_world_size=2\n", 2},
      {"[2024-01-01 00:00:00,000] [INFO] [launch.py:151:main] nnodes=2, num_local_procs=8, node_rank=0\n", 16},
  };
  for (const auto& [text, ranks] : cases) {
    SCOPED_TRACE(text);
    const auto r = read(text);
    const auto w = of<diagnose::WorldShape>(r);
    ASSERT_GE(w.size(), 1u);
    EXPECT_EQ(w[0].fact.ranks, ranks);
  }
  const auto none = read("world_size = args.world_size\n");
  EXPECT_TRUE(of<diagnose::WorldShape>(none).empty());
}

TEST(TrainingLogFacts, LightningDeviceLines) {
  const auto r = read(
      "GPU available: True (cuda), used: True\n"
      "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1,2,3]\n"
      "LOCAL_RANK: 1 - CUDA_VISIBLE_DEVICES: [0,1,2,3]\n"
      "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n");
  const auto g = of<diagnose::GpuCount>(r);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].fact.count, 4);
  EXPECT_EQ(g[0].fact.scope, "cuda");
  ASSERT_EQ(of<diagnose::ProcessFailure>(r).size(), 1u);
  EXPECT_EQ(of<diagnose::ProcessFailure>(r)[0].fact.what, "RuntimeError");
}

TEST(TrainingLogFacts, DdpLoggingDataAndDetailAverages) {
  const auto r = read(
      "I0607 16:10:35.739390 515217 logger.cpp:173] [Rank 0]: DDP Initialized with:\n"
      "broadcast_buffers: 1\n"
      "bucket_cap_bytes: 26214400\n"
      "find_unused_parameters: 0\n"
      "gradient_as_bucket_view: 1\n"
      "static_graph: 0\n"
      "rank: 0\n"
      "world_size: 2\n"
      "backend_name: nccl\n"
      "bucket_sizes: 1048576, 25165824\n"
      "dtypes: float\n"
      "torch_distributed_debug: INFO\n"
      "\n"
      "I0607 16:18:58.085681 544067 logger.cpp:344] [Rank 1 / 2] Training TwoLinLayerNet unused_parameter_size=0\n"
      " Avg forward compute time: 40838608\n"
      " Avg backward compute time: 5983335\n"
      "Avg backward comm. time: 4326421\n"
      " Avg backward comm/comp overlap time: 4207652\n");
  const auto d = of<diagnose::DdpConfig>(r);
  ASSERT_EQ(d.size(), 1u);
  const auto& c = d[0].fact;
  EXPECT_EQ(c.find_unused_parameters, false);
  EXPECT_EQ(c.gradient_as_bucket_view, true);
  EXPECT_EQ(c.static_graph, false);
  EXPECT_DOUBLE_EQ(c.bucket_cap_mb.value(), 25.0);
  EXPECT_EQ(c.bucket_bytes, (std::vector<std::uint64_t>{1048576, 25165824}));
  EXPECT_EQ(c.world_size, 2);
  EXPECT_EQ(c.dtype, "fp32");
  EXPECT_NEAR(c.forward_ms.value(), 40.838608, 1e-9);
  EXPECT_NEAR(c.backward_comm_ms.value(), 4.326421, 1e-9);
  EXPECT_NEAR(c.backward_comm_compute_overlap_ms.value(), 4.207652, 1e-9);
  EXPECT_EQ(d[0].where.line, 1u);
}

TEST(TrainingLogFacts, DdpLoggingDataAsADict) {
  const auto r = read(
      "{'world_size': 4, 'bucket_cap_bytes': 52428800, 'find_unused_parameters': 1, 'static_graph': 0, "
      "'avg_forward_compute_time': 12000000, 'avg_backward_comm_time': 3000000}\n"
      "TrainingArguments(ddp_find_unused_parameters=None, per_device_train_batch_size=8)\n");
  const auto d = of<diagnose::DdpConfig>(r);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].fact.find_unused_parameters, true);
  EXPECT_DOUBLE_EQ(d[0].fact.bucket_cap_mb.value(), 50.0);
  EXPECT_DOUBLE_EQ(d[0].fact.forward_ms.value(), 12.0);
  EXPECT_EQ(of<diagnose::BatchSize>(r).at(0).fact.per_device, 8.0);
}

TEST(TrainingLogFacts, CommandsInsideALogGoThroughTheCommandReader) {
  const auto r = read(
      "[2025-01-01 10:00:00] + torchrun --nproc_per_node=8 --nnodes=2 \\\n"
      "    train.py --model_name_or_path gpt2-large --per_device_train_batch_size 2\n"
      "step 1 loss 3.2\n");
  const auto l = of<diagnose::Launch>(r);
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].fact.launcher, "torchrun");
  EXPECT_EQ(l[0].fact.program, "train.py");
  const auto w = of<diagnose::WorldShape>(r);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].fact.ranks, 16);
  const auto m = of<diagnose::ModelSeen>(r);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_DOUBLE_EQ(m[0].fact.parameters.value(), 774e6);
}

// ───────────────────────────── damaged input ─────────────────────────────

TEST(TrainingLogDamage, NeverThrowsOnJunk) {
  std::string junk;
  for (int i = 0; i < 4096; ++i) junk += static_cast<char>((i * 7919) % 256);
  const std::string cut_lines[] = {
      "Epoch: [0][10/5005]\tTime 22.4", "RuntimeError: NCCL Error ", "Last error:", "{'train_runtime': ",
      "iter 10: loss 6.1, time ", "  5%|▌ | 50/1000 [00:20<06:20,  2.5", "DDP Initialized with:", "bucket_sizes: ",
      "torchrun --nproc_per_node", "trainable params: 4,194,304 || all params:", "\xff\xfe\x00\x01", std::string(1, '\0'),
      "time (ms) |", "n_gpu: ", "MEMBER: 1/", "=> creating model '", "models--", "srun: error:"};
  EXPECT_NO_THROW({
    auto r = read(junk);
    (void)analyze::looks_like_training_log(junk);
    for (const auto& c : cut_lines) {
      r = read(c);
      r = read(c + "\n" + c);
      (void)analyze::looks_like_training_log(c);
    }
    r = read(std::string(200000, 'a'));
    r = read(std::string(1000, '\r'));
    r = read("");
  });
  // Junk inside a good log does not hide the good lines.
  const auto r = read(junk + "\nRuntimeError: NCCL Error 2: unhandled system error\n" + junk);
  EXPECT_EQ(of<diagnose::NcclFailure>(r).size(), 1u);
  const nlohmann::json j = r.facts;
  EXPECT_NO_THROW((void)j.dump());
}

TEST(TrainingLogDamage, LooksLikeATrainingLog) {
  EXPECT_TRUE(analyze::looks_like_training_log("RuntimeError: NCCL Error 2: unhandled system error"));
  EXPECT_TRUE(analyze::looks_like_training_log("  5%|▌         | 50/1000 [00:20<06:20,  2.50it/s]"));
  EXPECT_FALSE(analyze::looks_like_training_log("hello world\nnothing to see\n"));
  EXPECT_FALSE(analyze::looks_like_training_log(""));
  EXPECT_FALSE(analyze::looks_like_training_log("GPU0\tX\tNV12\tNV12\n"));
  // A version line alone (nccl-tests, NCCL logs) and JSON traces are not training logs.
  EXPECT_FALSE(analyze::looks_like_training_log("# nThread 1 nGpus 1\nNCCL version 2.8.4+cuda10.1\n"));
  const std::string trace = "{\n  \"schemaVersion\": 1,\n  \"distributedInfo\": {\"world_size\": 8},\n  \"traceEvents\": []\n}\n";
  EXPECT_FALSE(analyze::looks_like_training_log(trace));
  EXPECT_TRUE(read(trace).facts.empty());
  // Commands alone are looks_like_command's; inside a log they are read.
  EXPECT_FALSE(analyze::looks_like_training_log("torchrun --nproc_per_node 8 train.py\n"));
  EXPECT_FALSE(analyze::looks_like_training_log(
      "CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node 2 \\\n  train.py --model_name_or_path gpt2 \\\n"
      "  --per_device_train_batch_size 4\n"));
  // nccl-tests' failure line is the nccl-tests reader's; PyTorch's NCCL errors are a training log's.
  EXPECT_FALSE(analyze::looks_like_training_log("host-a: Test NCCL failure common.cu:777 'unhandled system error'\n"));
  EXPECT_TRUE(analyze::looks_like_training_log("  ncclSystemError: System call (e.g. socket, malloc) or external library call failed\n"));
}

// ───────────────────────────── the shared corpus ─────────────────────────────

namespace {
const fs::path kCases = fs::path(SCALESCOPE_SHARED_CORPUS_DIR) / "cases";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The case folder whose name starts with `prefix`.
fs::path case_dir(const std::string& prefix) {
  for (const auto& e : fs::directory_iterator(kCases))
    if (e.is_directory() && e.path().filename().string().rfind(prefix, 0) == 0) return e.path();
  return {};
}
}  // namespace

TEST(TrainingLogCorpus, RealLogsOfTheCases) {
  if (!fs::is_directory(kCases)) GTEST_SKIP() << "shared corpus not found at " << kCases << " (checkout without ../shared)";
  {
    const auto r = read(slurp(case_dir("transformers9802") / "train.log"));
    EXPECT_TRUE(has_message(r, "ddp-find-unused-no-unused", "pytorch"));
    ASSERT_EQ(of<diagnose::DdpConfig>(r).size(), 1u);
    EXPECT_EQ(of<diagnose::DdpConfig>(r)[0].fact.find_unused_parameters, true);
  }
  {
    const auto r = read(slurp(case_dir("pytorch680") / "train.log"));
    const auto sp = of<diagnose::StepPhases>(r);
    ASSERT_EQ(sp.size(), 1u);
    EXPECT_DOUBLE_EQ(sp[0].fact.step_s.value(), 5.893);
    EXPECT_DOUBLE_EQ(sp[0].fact.data_wait_s.value(), 5.632);
    EXPECT_EQ(sp[0].where.line, 4u);
    const auto m = of<diagnose::ModelSeen>(r);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0].fact.name, "alexnet");
    EXPECT_NEAR(m[0].fact.parameters.value(), 61e6, 0.2e6);
  }
  {
    const auto r = read(slurp(case_dir("autocast381") / "train.log"));
    ASSERT_EQ(of<diagnose::TrainingEnded>(r).size(), 1u);
    EXPECT_EQ(of<diagnose::TrainingEnded>(r)[0].fact.framework, "lightning");
    EXPECT_EQ(of<diagnose::TrainingEnded>(r)[0].where.line, 1u);
    const auto p = of<diagnose::ProcessFailure>(r);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_NE(p[0].fact.what.find("Aborted (core dumped)"), std::string::npos);
    EXPECT_EQ(p[0].where.line, 6u);
  }
  {
    const auto r = read(slurp(case_dir("torchtitan853") / "train.log"));
    const auto f = of<diagnose::NcclFailure>(r);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].fact.code, 2);
    EXPECT_EQ(f[0].fact.reporter, "pytorch");
    EXPECT_EQ(f[0].fact.phase, "init");
    const auto w = of<diagnose::NcclWarning>(r);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].fact.category, "shm-create");
    EXPECT_EQ(w[0].fact.message, "Error while creating shared memory segment /dev/shm/nccl-1YsMbG (size 7340384)");
    EXPECT_EQ(w[0].where.line, 4u);
    ASSERT_EQ(of<diagnose::NcclVersion>(r).size(), 1u);
    EXPECT_EQ(of<diagnose::NcclVersion>(r)[0].fact.version, "2.21.5");
  }
  {
    const auto r = read(slurp(case_dir("nccl473") / "train.log"));
    const auto f = of<diagnose::NcclFailure>(r);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].fact.code, 2);
    EXPECT_EQ(f[0].fact.name, "unhandled system error");
  }
  // Every file of the corpus reads without throwing.
  const fs::path corpus = kCases.parent_path();
  for (const auto& e : fs::recursive_directory_iterator(corpus)) {
    if (!e.is_regular_file() || e.file_size() > (8u << 20)) continue;
    SCOPED_TRACE(e.path().string());
    EXPECT_NO_THROW((void)read(slurp(e.path())));
  }
}

// TensorFlow 1's models print "(N examples/sec; T sec/batch)" per step (issue #36: a log refused before).
TEST(TrainingLog, TensorflowExamplesPerSecondAndSecondsPerBatch) {
  const std::string log = "2016-04-14 20:47:44.064244: step 10, loss = 13.16 (68.1 examples/sec; 3.762 sec/batch)\n"
                          "2016-04-14 20:48:21.515250: step 20, loss = 13.25 (68.9 examples/sec; 3.718 sec/batch)\n"
                          "2016-04-14 20:48:59.089292: step 30, loss = 13.27 (68.7 examples/sec; 3.728 sec/batch)\n";
  EXPECT_TRUE(analyze::looks_like_training_log(log));
  const auto r = read(log);
  bool throughput = false, step = false;
  for (const auto& m : r.facts.of<diagnose::Measurement>()) {
    throughput = throughput || (m.fact.quantity == "throughput" && m.fact.unit == "samples/s" && m.fact.value > 68 && m.fact.value < 69);
    step = step || (m.fact.quantity == "step time" && m.fact.unit == "s" && m.fact.value > 3.7 && m.fact.value < 3.8);
  }
  EXPECT_TRUE(throughput);
  EXPECT_TRUE(step);
}
