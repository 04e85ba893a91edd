#!/usr/bin/env bash
# The eight-GPU call (one nvidia-h200-x8 machine; on a smaller machine it runs at the GPUs there):
# `scalescope topo` live against nvidia-smi, `scalescope comm` for every collective from 8 B to 4 GiB beside
# nccl-tests all_reduce_perf and all_gather_perf built there from public source, and `scalescope doctor` for
# tiny-14m, gpt2-124m and gpt-1.3b at 1, 2, 4 and 8 GPUs with NVLink and with NCCL_P2P_DISABLE=1.
# Outputs: $OUT/topo.tar.gz, comm.tar.gz, doctor.tar.gz (bench/device-run.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
COMM_ALL_COLLECTIVES=1 DOCTOR_MODELS="tiny-14m gpt2-124m gpt-1.3b" bench/device-run.sh topo comm doctor
