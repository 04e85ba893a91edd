#!/bin/bash
#SBATCH -t 00:20:00
#SBATCH -p nc48v4
#SBATCH -w host-a
#SBATCH --ntasks-per-node=2
#SBATCH --cpus-per-task=24
#SBATCH --gpus-per-node=2
#SBATCH --mem=0
#SBATCH -o job.%J.out
#SBATCH --error=job.%J.err

BASE_DIR=/opt
NCCL_TESTS_EXE=all_reduce_perf

export NCCL_DEBUG=INFO
export NCCL_IB_DISABLE=1

source /etc/profile.d/modules.sh
module load mpi/openmpi

PIN_MASK='0xffffff,0xffffff000000'

srun --mpi=pmix --cpu-bind=mask_cpu:$PIN_MASK --gpus-per-node=2 \
--ntasks-per-node=2 \
${BASE_DIR}/nccl-tests/build/$NCCL_TESTS_EXE -b8 -f 2 -g 1 -e 8G -c 1
