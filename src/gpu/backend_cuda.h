#pragma once
// GPU ranks and the NCCL collective benchmark (part of the GPU module; the binary calls them through
// train/backend.h, which loads the module).

#include <memory>
#include <string>

#include "comm/bench_backend.h"
#include "train/backend.h"

namespace scalescope::gpu {

/// CUDA devices this process can use (CUDA_VISIBLE_DEVICES applies); 0 with the reason when none.
int visible_device_count(std::string* why_none);

/// The collective benchmark on this GPU rank (NCCL), bootstrapped like make_rank_backend.
std::unique_ptr<comm::BenchBackend> make_bench_backend();

/// One GPU rank: device = local rank, NCCL communicator, bf16 model, CUDA-event timeline (see
/// train::make_gpu_rank_backend). Throws core::Error when the rank has no GPU or NCCL fails to start.
std::unique_ptr<train::RankBackend> make_rank_backend(const train::ModelSpec& model, train::StreamPriority priority,
                                                      bool cuda_graph);

}  // namespace scalescope::gpu
