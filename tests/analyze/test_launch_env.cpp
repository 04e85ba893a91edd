// Launch commands and environment dumps: every launcher (torchrun, torch.distributed.launch/run, mpirun/mpiexec,
// srun, deepspeed, accelerate launch, python, nccl-tests binaries) with VAR=value prefixes, prompts, wrappers and
// continuations; environment dumps in their forms; damaged input; and the shared corpus's commands and environment.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "readers/job/launch_env.h"

using namespace scalescope;
using diagnose::Reading;
namespace fs = std::filesystem;

namespace {

Reading cmds(const std::string& text) { return analyze::read_commands(text, "command.txt"); }
Reading env(const std::string& text) { return analyze::read_environment(text, "env.txt"); }

template <class T>
std::vector<diagnose::Seen<T>> of(const Reading& r) {
  return r.facts.of<T>();
}

std::string setting(const Reading& r, const std::string& name, std::string* origin = nullptr) {
  for (const auto& s : of<diagnose::Setting>(r))
    if (s.fact.name == name) {
      if (origin) *origin = s.fact.origin;
      return s.fact.value;
    }
  return "<absent>";
}

}  // namespace

// ───────────────────────────── launchers ─────────────────────────────

TEST(LaunchCommand, TorchrunSingleAndMultiNode) {
  {
    const auto r = cmds("torchrun --standalone --nproc_per_node=8 train.py --config configs/llama3_8b.toml\n");
    const auto l = of<diagnose::Launch>(r);
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].fact.launcher, "torchrun");
    EXPECT_EQ(l[0].fact.nproc_per_node, 8);
    EXPECT_EQ(l[0].fact.nnodes, 1);
    EXPECT_EQ(l[0].fact.program, "train.py");
    EXPECT_EQ(l[0].fact.args, (std::vector<std::string>{"--config", "configs/llama3_8b.toml"}));
    const auto w = of<diagnose::WorldShape>(r);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].fact.ranks, 8);
    EXPECT_EQ(w[0].fact.ranks_per_node, 8);
    EXPECT_EQ(w[0].fact.nodes, 1);
  }
  {
    const auto r = cmds(
        "torchrun --nnodes=2 --nproc-per-node 8 --node-rank=0 --rdzv-backend=c10d --rdzv-endpoint=host-a:29500 "
        "-m my_pkg.train --lr 3e-4\n");
    const auto l = of<diagnose::Launch>(r);
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].fact.nnodes, 2);
    EXPECT_EQ(l[0].fact.nproc_per_node, 8);
    EXPECT_EQ(of<diagnose::WorldShape>(r).at(0).fact.ranks, 16);
  }
  {
    // torchrun's elastic ranges and "gpu" do not fix the world: noted, not guessed.
    const auto r = cmds("torchrun --nnodes=1:4 --nproc_per_node=gpu train.py\n");
    ASSERT_EQ(of<diagnose::Launch>(r).size(), 1u);
    EXPECT_FALSE(of<diagnose::Launch>(r)[0].fact.nproc_per_node.has_value());
    EXPECT_TRUE(of<diagnose::WorldShape>(r).empty());
    EXPECT_GE(r.notes.size(), 2u);
  }
}

TEST(LaunchCommand, TorchDistributedLaunchWithPrefixesAndContinuations) {
  const auto r = cmds(
      "cd /workspace && CUDA_VISIBLE_DEVICES=0,1,2,3 NCCL_P2P_DISABLE=1 python3 -m torch.distributed.launch \\\n"
      "    --nproc_per_node=4 --master_port=29501 \\\n"
      "    run_glue.py --model_name_or_path bert-large-uncased --per_device_train_batch_size 32 \\\n"
      "    --gradient_accumulation_steps 2 --fp16\n");
  const auto l = of<diagnose::Launch>(r);
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].fact.launcher, "torch.distributed.launch");
  EXPECT_EQ(l[0].fact.nproc_per_node, 4);
  EXPECT_EQ(l[0].fact.program, "run_glue.py");
  EXPECT_EQ(l[0].where.line, 1u);
  std::string origin;
  EXPECT_EQ(setting(r, "NCCL_P2P_DISABLE", &origin), "1");
  EXPECT_EQ(origin, "command line");
  ASSERT_EQ(of<diagnose::GpuCount>(r).size(), 1u);
  EXPECT_EQ(of<diagnose::GpuCount>(r)[0].fact.count, 4);
  EXPECT_EQ(of<diagnose::GpuCount>(r)[0].fact.scope, "cuda");
  const auto m = of<diagnose::ModelSeen>(r);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].fact.name, "bert-large-uncased");
  EXPECT_DOUBLE_EQ(m[0].fact.parameters.value(), 340e6);
  EXPECT_EQ(m[0].fact.dtype, "fp16");
  const auto b = of<diagnose::BatchSize>(r);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].fact.per_device, 32.0);
  EXPECT_EQ(b[0].fact.gradient_accumulation, 2.0);
  EXPECT_EQ(of<diagnose::WorldShape>(r).at(0).fact.ranks, 4);
  // python -m torch.distributed.run is torchrun.
  const auto r2 = cmds("python -m torch.distributed.run --nproc_per_node 2 train.py\n");
  EXPECT_EQ(of<diagnose::Launch>(r2).at(0).fact.launcher, "torchrun");
}

TEST(LaunchCommand, MpirunAndMpiexec) {
  {
    const auto r = cmds(
        "mpirun -np 16 -H host-a:8,host-b:8 --map-by ppr:8:node --bind-to numa -x NCCL_DEBUG=INFO -x "
        "NCCL_IB_HCA=mlx5_0,mlx5_1 -x LD_LIBRARY_PATH --mca pml ob1 python train.py --batch-size 64\n");
    const auto l = of<diagnose::Launch>(r);
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].fact.launcher, "mpirun");
    EXPECT_EQ(l[0].fact.np, 16);
    EXPECT_TRUE(l[0].fact.hostfile);
    EXPECT_EQ(l[0].fact.nproc_per_node, 8);
    EXPECT_EQ(l[0].fact.program, "train.py");
    EXPECT_EQ(setting(r, "NCCL_IB_HCA"), "mlx5_0,mlx5_1");
    EXPECT_EQ(setting(r, "OMPI_MCA_pml"), "ob1");
    EXPECT_EQ(setting(r, "LD_LIBRARY_PATH"), "<absent>");  // passed through, value not shown
    const auto w = of<diagnose::WorldShape>(r);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].fact.ranks, 16);
    EXPECT_EQ(w[0].fact.nodes, 2);
    EXPECT_EQ(w[0].fact.hosts, (std::vector<std::string>{"host-a", "host-b"}));
    EXPECT_EQ(of<diagnose::BatchSize>(r).at(0).fact.per_device, 64.0);
  }
  {
    const auto r = cmds("mpiexec -n 16 -ppn 8 -genv NCCL_DEBUG INFO -f hosts.txt ./train_gpt2cu -b 16\n");
    const auto l = of<diagnose::Launch>(r);
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].fact.np, 16);
    EXPECT_TRUE(l[0].fact.hostfile);
    EXPECT_EQ(l[0].fact.program, "train_gpt2cu");
    EXPECT_EQ(setting(r, "NCCL_DEBUG"), "INFO");
    EXPECT_EQ(of<diagnose::WorldShape>(r).at(0).fact.nodes, 2);
  }
}

TEST(LaunchCommand, SrunNestedLaunchersAndExports) {
  const auto r = cmds(
      "srun -N 2 --ntasks-per-node=1 --gpus-per-node=8 --export=ALL,NCCL_DEBUG=WARN,NCCL_SOCKET_IFNAME=ib0 \\\n"
      "  torchrun --nnodes 2 --nproc_per_node 8 --rdzv_backend c10d --rdzv_endpoint $MASTER_ADDR:29500 pretrain.py\n");
  const auto l = of<diagnose::Launch>(r);
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].fact.launcher, "srun");
  EXPECT_EQ(l[0].fact.nnodes, 2);
  EXPECT_EQ(l[0].fact.nproc_per_node, 1);
  EXPECT_EQ(l[0].fact.program, "torchrun");
  EXPECT_EQ(l[1].fact.launcher, "torchrun");
  EXPECT_EQ(l[1].fact.program, "pretrain.py");
  EXPECT_EQ(setting(r, "NCCL_SOCKET_IFNAME"), "ib0");
  const auto w = of<diagnose::WorldShape>(r);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[1].fact.ranks, 16);  // torchrun's view: 2 × 8

  const auto r2 = cmds("srun --nodes=4 --ntasks-per-node=8 --cpus-per-task=12 -l python -u train.py\n");
  const auto w2 = of<diagnose::WorldShape>(r2);
  ASSERT_EQ(w2.size(), 1u);
  EXPECT_EQ(w2[0].fact.ranks, 32);
  EXPECT_EQ(of<diagnose::Launch>(r2).at(0).fact.program, "train.py");
}

TEST(LaunchCommand, DeepspeedAndAccelerate) {
  {
    const auto r = cmds("deepspeed --num_gpus 4 train.py --deepspeed ds_config.json --model_name_or_path gpt2-xl\n");
    const auto l = of<diagnose::Launch>(r);
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].fact.launcher, "deepspeed");
    EXPECT_EQ(l[0].fact.nproc_per_node, 4);
    EXPECT_EQ(of<diagnose::WorldShape>(r).at(0).fact.ranks, 4);
    EXPECT_DOUBLE_EQ(of<diagnose::ModelSeen>(r).at(0).fact.parameters.value(), 1.5e9);
  }
  {
    const auto r = cmds("deepspeed --hostfile=/job/hostfile --num_nodes 2 --num_gpus 8 --master_port 29600 train.py\n");
    EXPECT_TRUE(of<diagnose::Launch>(r).at(0).fact.hostfile);
    EXPECT_EQ(of<diagnose::WorldShape>(r).at(0).fact.ranks, 16);
  }
  {
    const auto r = cmds("deepspeed --include localhost:0,1,2 main.py\n");
    EXPECT_EQ(of<diagnose::WorldShape>(r).at(0).fact.ranks, 3);
  }
  {
    const auto r = cmds(
        "accelerate launch --multi_gpu --num_processes 8 --num_machines 2 --mixed_precision bf16 "
        "--gradient_accumulation_steps 4 train.py --model_name_or_path meta-llama/Llama-3.2-3B-Instruct --bf16\n");
    const auto l = of<diagnose::Launch>(r);
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].fact.launcher, "accelerate");
    EXPECT_EQ(l[0].fact.np, 8);
    EXPECT_EQ(l[0].fact.nnodes, 2);
    EXPECT_EQ(l[0].fact.nproc_per_node, 4);
    EXPECT_EQ(l[0].fact.program, "train.py");
    const auto w = of<diagnose::WorldShape>(r);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].fact.ranks, 8);
    const auto m = of<diagnose::ModelSeen>(r);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_DOUBLE_EQ(m[0].fact.parameters.value(), 3e9);
    EXPECT_EQ(m[0].fact.dtype, "bf16");
    bool accum = false;
    for (const auto& b : of<diagnose::BatchSize>(r)) accum |= b.fact.gradient_accumulation == 4.0;
    EXPECT_TRUE(accum);
  }
}

TEST(LaunchCommand, PlainPythonAndNcclTestsBinaries) {
  {
    const auto r = cmds("CUDA_VISIBLE_DEVICES=0,1 python main.py -a resnet50 -b 256 --workers 12 /data/imagenet\n");
    const auto l = of<diagnose::Launch>(r);
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].fact.launcher, "python");
    EXPECT_EQ(l[0].fact.program, "main.py");
    EXPECT_TRUE(of<diagnose::WorldShape>(r).empty());  // one process; how many GPUs it drives is not stated
    EXPECT_EQ(of<diagnose::GpuCount>(r).at(0).fact.count, 2);
    EXPECT_EQ(of<diagnose::ModelSeen>(r).at(0).fact.name, "resnet50");
  }
  {
    const auto r = cmds("./build/all_reduce_perf -b 8 -e 8G -f 2 -g 8\n");
    const auto l = of<diagnose::Launch>(r);
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].fact.launcher, "nccl-tests");
    EXPECT_EQ(l[0].fact.program, "all_reduce_perf");
    const auto w = of<diagnose::WorldShape>(r);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].fact.ranks, 8);
    EXPECT_EQ(w[0].fact.processes, 1);
    EXPECT_EQ(w[0].fact.gpus_per_process, 8);
    EXPECT_TRUE(of<diagnose::BatchSize>(r).empty());  // -b is nccl-tests' minimum size, not a batch
  }
  {
    const auto r = cmds("mpirun --allow-run-as-root -np 2 ./build/alltoall_perf_mpi -b 1M -e 1G -f 2 -g 2 -t 2\n");
    const auto w = of<diagnose::WorldShape>(r);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].fact.ranks, 8);
    EXPECT_EQ(w[0].fact.gpus_per_process, 4);
  }
}

TEST(LaunchCommand, ACommentedCommandInsideALogWithARepeatedProgram) {
  const auto r = analyze::read_command_line(
      "# NCCL_DEBUG=INFO NCCL_ALGO=Ring CUDA_VISIBLE_DEVICES=4,5,6,7 ./build/reduce_scatter_perf "
      "./build/reduce_scatter_perf -b 8 -e 256M -f 2 -g 4",
      "nccl.log", 1);
  const auto l = of<diagnose::Launch>(r);
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].fact.program, "reduce_scatter_perf");
  EXPECT_EQ(l[0].fact.args.front(), "-b");
  EXPECT_EQ(setting(r, "NCCL_ALGO"), "Ring");
  EXPECT_EQ(of<diagnose::GpuCount>(r).at(0).fact.count, 4);
  EXPECT_EQ(of<diagnose::WorldShape>(r).at(0).fact.ranks, 4);
  EXPECT_FALSE(r.notes.empty());
}

TEST(LaunchCommand, PromptsWrappersRedirectionsAndShells) {
  const std::string lines[] = {
      "(base) user@host-a:~/work$ torchrun --nproc_per_node 4 train.py",
      "root@5f2c1a:/workspace# torchrun --nproc_per_node 4 train.py",
      "$ nohup torchrun --nproc_per_node 4 train.py > train.log 2>&1 &",
      "> env NCCL_DEBUG=INFO numactl --cpunodebind=0 --membind=0 torchrun --nproc_per_node 4 train.py",
      "[user@host-a work]$ time torchrun --nproc_per_node 4 train.py | tee out.txt",
      "bash -c 'cd /w && torchrun --nproc_per_node 4 train.py'",
  };
  for (const auto& line : lines) {
    SCOPED_TRACE(line);
    const auto r = cmds(line + "\n");
    const auto l = of<diagnose::Launch>(r);
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].fact.launcher, "torchrun");
    EXPECT_EQ(l[0].fact.program, "train.py");
    EXPECT_EQ(l[0].fact.args.size(), 0u);
    EXPECT_TRUE(analyze::looks_like_command(line));
  }
}

TEST(LaunchCommand, ProseAndOtherCommandsAreNoLaunch) {
  const std::string lines[] = {
      "I ran python train.py and it hung after the first step",
      "pip install torch==2.3.0",
      "accelerate config",
      "python --version",
      "the torchrun docs say --nproc_per_node",
      "rm -rf /tmp/x; ls -la",
  };
  for (const auto& line : lines) {
    SCOPED_TRACE(line);
    const auto r = cmds(line + "\n");
    EXPECT_TRUE(of<diagnose::Launch>(r).empty());
    EXPECT_FALSE(analyze::looks_like_command(line));
  }
  // An unknown program with settings before it is a command, but not one of the launchers.
  const auto r = cmds("FORCE_TORCHRUN=1 NNODES=2 llamafactory-cli train examples/train_lora/llama3_lora_sft.yaml\n");
  ASSERT_EQ(of<diagnose::Launch>(r).size(), 1u);
  EXPECT_EQ(of<diagnose::Launch>(r)[0].fact.launcher, "other");
  EXPECT_EQ(setting(r, "FORCE_TORCHRUN"), "1");
  EXPECT_EQ(of<diagnose::WorldShape>(r).at(0).fact.nodes, 2);
  EXPECT_FALSE(analyze::looks_like_command("FORCE_TORCHRUN=1 llamafactory-cli train x.yaml"));
}

// A sentence that starts with a program's name is no command; commands with arguments still are.
TEST(LaunchCommand, SentencesThatStartWithAProgramAreNoCommand) {
  const std::string prose[] = {
      "all_reduce_perf works fine only with those linked through SYS. The rest will result in hanging.",
      "python train.py hangs after the first epoch.",
      "torchrun is what we use for launching the job",
      "./build/all_reduce_perf gives 12 GB/s on the PIX pair, which is low.",
  };
  for (const auto& line : prose) {
    SCOPED_TRACE(line);
    EXPECT_FALSE(analyze::looks_like_command(line));
    EXPECT_TRUE(of<diagnose::Launch>(cmds(line + "\n")).empty());
    EXPECT_TRUE(analyze::read_command_line(line, "report.md", 1).facts.empty());
  }
  const std::string commands[] = {
      "./build/all_reduce_perf -b 8 -e 256M -f 2 -g 4",
      "python train.py --lr 0.1 --epochs 10",
      "torchrun --nproc_per_node 8 train.py --output_dir /tmp/out",
      "mpirun -np 2 python -c 'import torch; print(\"it works with the first GPU\")'",
      "NCCL_DEBUG=INFO all_reduce_perf -g 2",
  };
  for (const auto& line : commands) {
    SCOPED_TRACE(line);
    EXPECT_TRUE(analyze::looks_like_command(line));
    EXPECT_FALSE(of<diagnose::Launch>(cmds(line + "\n")).empty());
  }
}

TEST(LaunchCommand, ALaunchScriptWithExports) {
  const auto r = cmds(
      "#!/bin/bash\n"
      "#SBATCH --nodes=2\n"
      "export NCCL_DEBUG=INFO\n"
      "export NCCL_IB_DISABLE=0 NCCL_NET_GDR_LEVEL=PHB\n"
      "\n"
      "srun python train.py  # one task per GPU\n");
  std::string origin;
  EXPECT_EQ(setting(r, "NCCL_NET_GDR_LEVEL", &origin), "PHB");
  EXPECT_EQ(origin, "environment");
  const auto l = of<diagnose::Launch>(r);
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].fact.launcher, "srun");
  EXPECT_EQ(l[0].fact.program, "train.py");
  EXPECT_TRUE(l[0].fact.args.empty());  // the comment is no argument
  EXPECT_EQ(l[0].where.line, 6u);
}

TEST(LaunchCommand, DamagedCommandsNeverThrow) {
  std::string junk;
  for (int i = 0; i < 3000; ++i) junk += static_cast<char>((i * 37 + 11) % 256);
  EXPECT_NO_THROW({
    auto r = cmds(junk);
    r = cmds("torchrun --nproc_per_node");
    r = cmds("torchrun --nproc_per_node=8 'train.py --lr 1e-4");  // unterminated quote
    r = cmds("mpirun -np");
    r = cmds("mpirun -mca");
    r = cmds("srun -N");
    r = cmds("bash -c");
    r = cmds("python -m");
    r = cmds("accelerate launch");
    r = cmds("deepspeed --include localhost:");
    r = cmds("\\\n\\\n\\");
    r = cmds(std::string(50000, '\\'));
    r = cmds("CUDA_VISIBLE_DEVICES= python x.py");
    r = analyze::read_command_line("", "x", 0);
    (void)analyze::looks_like_command(junk);
  });
  const auto r = cmds("torchrun --nproc_per_node=8 'train.py --lr 1e-4\n");
  EXPECT_FALSE(r.notes.empty());
  const auto e = cmds("CUDA_VISIBLE_DEVICES= python x.py\n");
  EXPECT_EQ(of<diagnose::GpuCount>(e).at(0).fact.count, 0);
}

// ───────────────────────────── environments ─────────────────────────────

TEST(Environment, OneLineListsExportsDeclaresAndEnvDumps) {
  const auto r = env(
      "$ env | grep -E 'NCCL|CUDA|WORLD'\r\n"
      "NCCL_DEBUG=INFO\r\n"
      "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7\r\n"
      "export NCCL_IB_HCA=\"mlx5_0:1,mlx5_1:1\"\r\n"
      "declare -x NCCL_SOCKET_IFNAME=\"eth0\"\r\n"
      "WORLD_SIZE=16\r\n"
      "PS1=\\u@\\h \\W$ \r\n"
      "# comment\r\n"
      "NCCL_ALGO=Tree NCCL_PROTO=Simple NCCL_MIN_NCHANNELS='4'\r\n");
  std::string origin;
  EXPECT_EQ(setting(r, "NCCL_DEBUG", &origin), "INFO");
  EXPECT_EQ(origin, "environment");
  EXPECT_EQ(setting(r, "NCCL_IB_HCA"), "mlx5_0:1,mlx5_1:1");
  EXPECT_EQ(setting(r, "NCCL_SOCKET_IFNAME"), "eth0");
  EXPECT_EQ(setting(r, "PS1"), "\\u@\\h \\W$");
  EXPECT_EQ(setting(r, "NCCL_MIN_NCHANNELS"), "4");
  EXPECT_EQ(setting(r, "NCCL_PROTO"), "Simple");
  EXPECT_EQ(of<diagnose::GpuCount>(r).at(0).fact.count, 8);
  EXPECT_EQ(of<diagnose::WorldShape>(r).at(0).fact.ranks, 16);
  for (const auto& s : of<diagnose::Setting>(r)) {
    if (s.fact.name == "NCCL_PROTO") {
      EXPECT_EQ(s.where.line, 9u);
    }
  }
}

TEST(Environment, KubernetesListsAndCudaDeviceForms) {
  const auto r = env(
      "env:\n"
      "  - name: NCCL_IB_DISABLE\n"
      "    value: \"1\"\n"
      "  - name: CUDA_VISIBLE_DEVICES\n"
      "    value: \"0,1,-1,3\"\n");
  EXPECT_EQ(setting(r, "NCCL_IB_DISABLE"), "1");
  EXPECT_EQ(of<diagnose::GpuCount>(r).at(0).fact.count, 2);  // CUDA stops at the first invalid entry
  const auto u = env("CUDA_VISIBLE_DEVICES=GPU-8a2f0c1e-1111-2222-3333-444455556666,GPU-9b3e1d2f-1111-2222-3333-444455556666\n");
  EXPECT_EQ(of<diagnose::GpuCount>(u).at(0).fact.count, 2);
}

TEST(Environment, LooksLikeAnEnvironment) {
  EXPECT_TRUE(analyze::looks_like_environment("NCCL_DEBUG=INFO NCCL_IB_DISABLE=0"));
  EXPECT_TRUE(analyze::looks_like_environment("$ printenv | grep NCCL\nNCCL_DEBUG=INFO\n\n# done\n"));
  EXPECT_TRUE(analyze::looks_like_environment("export OMP_NUM_THREADS=8\nexport MASTER_ADDR=host-a\n"));
  EXPECT_FALSE(analyze::looks_like_environment("NCCL_DEBUG=INFO torchrun --nproc_per_node 2 train.py"));
  EXPECT_FALSE(analyze::looks_like_environment("FOO=1\nBAR=2\n"));  // no well-known name
  EXPECT_FALSE(analyze::looks_like_environment("I set NCCL_DEBUG=INFO and it still hangs"));
  EXPECT_FALSE(analyze::looks_like_environment(""));
}

// A batch script: exports among module loads, echos and computed variables. Decided by its content; only the setting
// lines are read; commented-out exports and values the shell computes are noted, not read.
TEST(Environment, ABatchScriptsSettingLines) {
  const std::string script =
      "#!/bin/bash\n"
      "#SBATCH --nodes=2\n"
      "module load cuda/12.1\n"
      "module load nccl/2.18\n"
      "export NCCL_DEBUG=INFO\n"
      "#export NCCL_P2P_DISABLE=1\n"
      "export NCCL_IB_HCA=mlx5_0,mlx5_1\n"
      "export NCCL_SOCKET_IFNAME=ib0\n"
      "export OMP_NUM_THREADS=8\n"
      "echo \"starting on $(hostname)\"\n"
      "head_node=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
      "export MASTER_ADDR=$head_node\n"
      "export MASTER_PORT=29500\n";
  EXPECT_TRUE(analyze::looks_like_environment(script));
  EXPECT_FALSE(analyze::looks_like_command(script));
  const auto r = env(script);
  EXPECT_EQ(of<diagnose::Setting>(r).size(), 5u);
  EXPECT_EQ(setting(r, "NCCL_DEBUG"), "INFO");
  EXPECT_EQ(setting(r, "NCCL_IB_HCA"), "mlx5_0,mlx5_1");
  EXPECT_EQ(setting(r, "MASTER_PORT"), "29500");
  EXPECT_EQ(setting(r, "NCCL_P2P_DISABLE"), "<absent>");  // commented out: not in force
  EXPECT_EQ(setting(r, "MASTER_ADDR"), "<absent>");       // computed when the script runs
  EXPECT_EQ(setting(r, "head_node"), "<absent>");
  auto noted = [&](const std::string& part) {
    return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.find(part) != std::string::npos; });
  };
  EXPECT_TRUE(noted("line 6: NCCL_P2P_DISABLE=1 is commented out"));
  EXPECT_TRUE(noted("line 12: MASTER_ADDR=$head_node is computed by the shell"));
  EXPECT_TRUE(noted("line 3: not a NAME=value setting"));
  for (const auto& s : of<diagnose::Setting>(r))
    if (s.fact.name == "NCCL_SOCKET_IFNAME") {
      EXPECT_EQ(s.where.line, 8u);
    }
  // Few settings among many other lines, or settings of a launch script, are no environment dump.
  EXPECT_FALSE(analyze::looks_like_environment("module load cuda\nmodule load nccl\nexport NCCL_DEBUG=INFO\ncd /work\nls\n"));
  EXPECT_TRUE(analyze::looks_like_environment("module load cuda\nexport NCCL_DEBUG=INFO\nexport NCCL_IB_DISABLE=0\n"));
  EXPECT_FALSE(analyze::looks_like_environment(script + "srun torchrun --nproc_per_node 8 train.py\n"));
  EXPECT_FALSE(analyze::looks_like_environment("We set NCCL_DEBUG=INFO.\nThen NCCL_IB_DISABLE=1 and it hangs.\nWhy?\n"));
}

TEST(Environment, DamagedDumpsNeverThrow) {
  std::string junk;
  for (int i = 0; i < 3000; ++i) junk += static_cast<char>((i * 53 + 7) % 256);
  EXPECT_NO_THROW({
    auto r = env(junk);
    r = env("NCCL_DEBUG=\"INFO");
    r = env("=value\n==\nA=\n- name: X\n");
    r = env(std::string(100000, '='));
    (void)analyze::looks_like_environment(junk);
  });
  const auto r = env(junk + "\nNCCL_DEBUG=INFO\n");
  EXPECT_EQ(setting(r, "NCCL_DEBUG"), "INFO");
  EXPECT_FALSE(r.notes.empty());
  const nlohmann::json j = r.facts;
  EXPECT_NO_THROW((void)j.dump());
}

TEST(KnownModels, TableAndSizesInNames) {
  EXPECT_DOUBLE_EQ(analyze::known_model_parameters("gpt2").value(), 124e6);
  EXPECT_DOUBLE_EQ(analyze::known_model_parameters("openai-community/gpt2-medium").value(), 355e6);
  EXPECT_DOUBLE_EQ(analyze::known_model_parameters("GPT2-Large").value(), 774e6);
  EXPECT_DOUBLE_EQ(analyze::known_model_parameters("gpt2-xl").value(), 1.5e9);
  EXPECT_DOUBLE_EQ(analyze::known_model_parameters("bert-base-uncased").value(), 110e6);
  EXPECT_DOUBLE_EQ(analyze::known_model_parameters("/models/bert-large-cased/").value(), 340e6);
  EXPECT_DOUBLE_EQ(analyze::known_model_parameters("resnet101").value(), 44.5e6);
  EXPECT_DOUBLE_EQ(analyze::known_model_parameters("meta-llama/Llama-3.2-3B").value(), 3e9);
  EXPECT_DOUBLE_EQ(analyze::known_model_parameters("EleutherAI/pythia-1.4b").value(), 1.4e9);
  EXPECT_DOUBLE_EQ(analyze::known_model_parameters("tiny-14m").value(), 14e6);
  EXPECT_FALSE(analyze::known_model_parameters("mistralai/Mixtral-8x7B-v0.1").has_value());
  EXPECT_FALSE(analyze::known_model_parameters("my_model").has_value());
  EXPECT_FALSE(analyze::known_model_parameters("").has_value());
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

fs::path case_dir(const std::string& prefix) {
  for (const auto& e : fs::directory_iterator(kCases))
    if (e.is_directory() && e.path().filename().string().rfind(prefix, 0) == 0) return e.path();
  return {};
}
}  // namespace

TEST(LaunchEnvCorpus, CommandsAndEnvironmentsOfTheCases) {
  if (!fs::is_directory(kCases)) GTEST_SKIP() << "shared corpus not found at " << kCases << " (checkout without ../shared)";
  {
    const std::string text = slurp(case_dir("transformers9802") / "command.txt");
    EXPECT_TRUE(analyze::looks_like_command(text));
    EXPECT_FALSE(analyze::looks_like_environment(text));
    const auto r = cmds(text);
    const auto l = of<diagnose::Launch>(r);
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].fact.launcher, "torch.distributed.launch");
    EXPECT_EQ(l[0].fact.nproc_per_node, 2);
    EXPECT_EQ(l[0].fact.program, "run_clm.py");
    EXPECT_EQ(l[0].where.line, 1u);
    EXPECT_EQ(setting(r, "CUDA_VISIBLE_DEVICES"), "0,1");
    EXPECT_EQ(of<diagnose::GpuCount>(r).at(0).fact.count, 2);
    EXPECT_EQ(of<diagnose::WorldShape>(r).at(0).fact.ranks, 2);
    const auto m = of<diagnose::ModelSeen>(r);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0].fact.name, "gpt2");
    EXPECT_DOUBLE_EQ(m[0].fact.parameters.value(), 124e6);
    EXPECT_EQ(of<diagnose::BatchSize>(r).at(0).fact.per_device, 4.0);
  }
  {
    const auto r = cmds(slurp(case_dir("nccl-tests119") / "command.txt"));
    const auto l = of<diagnose::Launch>(r);
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].fact.launcher, "mpirun");
    EXPECT_EQ(l[0].fact.np, 24);
    EXPECT_TRUE(l[0].fact.hostfile);
    EXPECT_EQ(l[0].fact.program, "all_reduce_perf");
    EXPECT_EQ(l[0].fact.args, (std::vector<std::string>{"-b", "8", "-e", "128M", "-g", "1"}));
    EXPECT_EQ(setting(r, "OMPI_MCA_btl"), "^openib");
    EXPECT_EQ(setting(r, "OMPI_MCA_pml"), "ucx");
    const auto w = of<diagnose::WorldShape>(r);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].fact.ranks, 24);
    EXPECT_EQ(w[0].fact.gpus_per_process, 1);
  }
  {
    const std::string log = slurp(case_dir("nccl428") / "nccl.log");
    const std::string first = log.substr(0, log.find('\n'));
    const auto r = analyze::read_command_line(first, "nccl.log", 1);
    const auto l = of<diagnose::Launch>(r);
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].fact.launcher, "nccl-tests");
    EXPECT_EQ(l[0].fact.program, "all_reduce_perf");
    EXPECT_EQ(l[0].fact.args, (std::vector<std::string>{"-b", "8", "-e", "128M", "-f", "2", "-g", "2"}));
    EXPECT_EQ(setting(r, "NCCL_TOPO_DUMP_FILE"), "system12.txt");
    EXPECT_EQ(setting(r, "CUDA_VISIBLE_DEVICES"), "1,2");
    EXPECT_EQ(of<diagnose::GpuCount>(r).at(0).fact.count, 2);
    EXPECT_EQ(of<diagnose::WorldShape>(r).at(0).fact.ranks, 2);
    // The rest of that log is no command.
    EXPECT_TRUE(analyze::read_command_line("host-a:93569:93569 [0] NCCL INFO Using network Socket", "nccl.log", 11).facts.empty());
  }
  {
    const std::string text = slurp(case_dir("llamafactory6111") / "env.txt");
    EXPECT_TRUE(analyze::looks_like_environment(text));
    EXPECT_FALSE(analyze::looks_like_command(text));
    const auto r = env(text);
    const auto s = of<diagnose::Setting>(r);
    ASSERT_EQ(s.size(), 8u);
    EXPECT_EQ(setting(r, "NCCL_IB_DISABLE"), "0");
    EXPECT_EQ(setting(r, "NCCL_IB_HCA"), "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7");
    EXPECT_EQ(setting(r, "NCCL_SOCKET_IFNAME"), "bond0");
    EXPECT_EQ(setting(r, "NCCL_IB_GID_INDEX"), "3");
    for (const auto& x : s) {
      EXPECT_EQ(x.fact.origin, "environment");
      EXPECT_EQ(x.where.line, 1u);
    }
  }
}
