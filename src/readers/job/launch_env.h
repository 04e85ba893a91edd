#pragma once
// Reads how a job was started and what environment it had: launch commands (torchrun, python -m
// torch.distributed.launch / torch.distributed.run, mpirun / mpiexec (Open MPI, MPICH, Intel MPI), srun, deepspeed,
// accelerate launch, horovodrun, a plain `python train.py`, an nccl-tests binary such as ./build/all_reduce_perf)
// with VAR=value prefixes and backslash-continued lines, and environment dumps (`env`, `export NAME=value`,
// `declare -x`, NAME=value lists on one line or many, `printenv | grep NCCL`, Kubernetes "- name: / value:" pairs,
// a shell prompt before them). Pure; nothing here throws.
//
// Commands are split like a shell splits them (quotes, escapes, ";", "&&", "|", redirections and trailing comments);
// what stands before the launcher may be a prompt ("$", "#", "(base) user@host:~$", "[user@host dir]$", "+" of
// set -x, "> " quote markers), VAR=value prefixes and wrappers (env, nohup, time, sudo, numactl, taskset, stdbuf,
// uv/poetry/conda run, singularity/apptainer exec); `bash -c '…'` is read inside. A launcher running another
// (srun torchrun …, mpirun python -m torch.distributed.run …) gives a Launch for each, outer first.
//
// Facts:
//  - Launch: launcher "torchrun" (also python -m torch.distributed.run), "torch.distributed.launch", "mpirun" (also
//    mpiexec, orterun), "horovodrun", "srun", "deepspeed", "accelerate", "python", "nccl-tests", or "other" (an
//    unknown program with VAR=value prefixes); nproc_per_node (--nproc_per_node, deepspeed --num_gpus, mpirun
//    -npernode / -N / --map-by ppr:N:node, MPICH -ppn, srun --ntasks-per-node, accelerate processes ÷ machines),
//    nnodes (--nnodes, --num_nodes, --num_machines, srun -N, the hosts of -H), np (mpirun -np/-n, srun -n,
//    accelerate --num_processes), hostfile (--hostfile, -H, MPICH -f), program (the script's or binary's file name, a
//    module after -m, the inner launcher), args (the program's arguments as written; a program word written twice
//    is read once, with a note).
//  - Setting for every NAME=value: origin "command line" for prefixes, mpirun -x NAME=value, -mca key value (as
//    OMPI_MCA_key), MPICH -genv NAME value, srun --export=ALL,NAME=value; origin "environment" for `export` lines in
//    a command text.
//  - ModelSeen and BatchSize from the program's flags: --model_name_or_path, --model, --model_name, --model_id,
//    -a/--arch (parameters from known_model_parameters; dtype from --bf16/--fp16/--mixed_precision);
//    --per_device_train_batch_size, --batch-size/--batch_size/-b, --micro_batch_size (per device),
//    --global_batch_size (global), --gradient_accumulation_steps (also accelerate's own).
//  - WorldShape when the flags fix it: nproc × nnodes (torchrun; nnodes 1 when not given), -np (× nccl-tests'
//    -g × -t), srun -n or -N × --ntasks-per-node, deepspeed, accelerate, an nccl-tests binary alone (-g × -t ranks in
//    one process); WORLD_SIZE, LOCAL_WORLD_SIZE, SLURM_NNODES … settings too. Elastic ranges ("--nnodes 1:4") and
//    "--nproc_per_node gpu" fix nothing (noted).
//  - GpuCount{scope "cuda"} from CUDA_VISIBLE_DEVICES (entries up to the first invalid one, as CUDA reads it;
//    "" and "-1" are 0).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "facts/facts.h"

namespace scalescope::analyze {

/// Whether `text` holds environment settings by its content: at least one line setting a well-known name (NCCL_*,
/// CUDA_*, TORCH_*, OMP_*, UCX_*, FI_*, MASTER_ADDR …), and either three or more such lines or settings on at least
/// half of the lines that are not blank, comments or prompts — so a Slurm batch script whose `export` lines stand
/// among `module load`, `echo` and `x=$(…)` lines is one. False when the text also holds a launch command: a launch
/// script's exports are read with its commands (read_commands).
bool looks_like_environment(std::string_view text);

/// Whether `text` holds a launch command (one of the launchers above, or python running a .py file) on a line that
/// is shaped like a command: the launcher first (after prompts, VAR=value prefixes and wrappers) and arguments after
/// it, not English ("all_reduce_perf works fine only with …", "python train.py hangs." are sentences, not commands).
bool looks_like_command(std::string_view text);

/// Reads an environment dump or the setting lines of a script: one Setting (origin "environment") per NAME=value,
/// the same pair once; a line that is no setting, prompt, comment or blank is skipped with a note. Commented-out
/// settings ("#export NCCL_SHM_DISABLE=1") are not in force: noted, not read. Values the shell computes when the
/// script runs ("$(scontrol …)", "`hostname`", "$master_addr") are not in the text: noted, not read. Never throws.
diagnose::Reading read_environment(std::string_view text, const std::string& source);

/// Reads every launch command of `text` (continued lines joined; line numbers and excerpts those of the first line),
/// and the settings of `export` lines between them (a launch script). A line that reads as an English sentence
/// (see looks_like_command) gives no Launch. Never throws.
diagnose::Reading read_commands(std::string_view text, const std::string& source);

/// Reads one command line (already joined): its VAR=value prefixes, the launcher and the program with its flags.
/// `line` is its 1-based line number for provenance. Used by read_commands and by the readers of NCCL logs and
/// nccl-tests outputs, which often start with the command that produced them ("# NCCL_DEBUG=INFO
/// CUDA_VISIBLE_DEVICES=1,2 ./build/all_reduce_perf -b 8 -e 128M -g 2"). Empty when it is no command (also when the
/// words after the program read as an English sentence).
diagnose::Reading read_command_line(std::string_view command, const std::string& source, std::size_t line);

/// The parameter count of a well-known model named `name` ("gpt2" → 124e6, "bert-base-uncased" → 110e6,
/// "resnet50" → 25.6e6, "openai-community/gpt2-xl" → 1.5e9), or the size its name states ("Llama-3.2-3B-Instruct"
/// → 3e9, "pythia-1.4b" → 1.4e9, "tiny-14m" → 14e6); nullopt otherwise. Shared by the readers that meet model
/// names (launch flags, training logs). Case-insensitive; an organisation or directory before the name is ignored.
std::optional<double> known_model_parameters(std::string_view name);

}  // namespace scalescope::analyze
