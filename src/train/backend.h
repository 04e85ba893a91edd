#pragma once
// What a rank runs on: its compute timeline, communicator and model, built together for one backend.
// Implemented in backend_cpu.cpp (always) and gpu/backend_cuda.cpp (CUDA builds; a CPU-only build answers
// GPU requests with a clear error).

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "comm/bench_backend.h"
#include "comm/communicator.h"
#include "train/kernel_trace.h"
#include "train/model_spec.h"
#include "train/model.h"
#include "train/step_replay.h"
#include "train/timeline.h"

namespace scalescope::train {

enum class BackendKind { cpu, gpu };
std::string to_string(BackendKind kind);
/// "cpu" or "gpu"; throws core::UsageError otherwise.
BackendKind parse_backend_kind(const std::string& text);

/// CUDA stream priorities of a GPU rank. NCCL's kernels and the model's kernels compete for SMs while the
/// all-reduces overlap backward; the stream priority decides whose waiting thread blocks the GPU schedules
/// first when an SM frees. `equal`: both at the default priority (PyTorch DDP's default); `comm`: the NCCL
/// stream at the highest priority (PyTorch's ProcessGroupNCCL option is_high_priority_stream); `compute`:
/// the model's stream at the highest priority. CPU ranks have no streams and accept only `equal`.
enum class StreamPriority { equal, comm, compute };
std::string to_string(StreamPriority priority);
/// "equal", "comm" or "compute"; throws core::UsageError otherwise.
StreamPriority parse_stream_priority(const std::string& text);

/// One rank's execution resources. Destruction order matters (model before communicator before timeline's
/// stream owner), so members are declared in construction order and destroyed in reverse.
struct RankBackend {
  /// GPU ranks asked for CUDA graphs: captures and replays the step (the timeline and communicator record
  /// their timing events through it); else null. GPU ranks destroy it first: ncclCommDestroy waits until no
  /// CUDA graph holds the collectives it captured.
  std::unique_ptr<StepReplay> step_replay;
  std::unique_ptr<comm::Communicator> comm;
  std::unique_ptr<Timeline> timeline;
  std::unique_ptr<Model> model;
  std::string device;            ///< e.g. "cpu (1 core per rank)" or "cuda:0 NVIDIA H200"
  std::string library_versions;  ///< e.g. "Open MPI v4.1.4" or "NCCL 2.28.3, CUDA runtime 13.0"
  std::unique_ptr<KernelTracer> kernel_tracer;  ///< GPU ranks: CUPTI; CPU ranks: none (null)
  virtual ~RankBackend() = default;
};

/// CPU rank: joins the MPI job (this process must have been started by mpirun), builds the fp32 model (MLP or GPT)
/// with single-threaded OpenBLAS (one core per rank) and the steady-clock timeline.
std::unique_ptr<RankBackend> make_cpu_rank_backend(const ModelSpec& model);

/// GPU rank: device = local rank, NCCL communicator (bootstrapped from the launcher's environment or, under
/// mpirun/srun, through MPI), bf16 model (MLP or GPT), CUDA-event timeline, streams at `priority`; with
/// `cuda_graph`, a step replayer (gpu/step_graph.h) the timeline and communicator record through. Throws
/// core::Error in CPU-only builds, when the local rank has no GPU, or when NCCL initialisation fails.
std::unique_ptr<RankBackend> make_gpu_rank_backend(const ModelSpec& model,
                                                   StreamPriority priority = StreamPriority::equal,
                                                   bool cuda_graph = false);

/// The collective benchmark on this GPU rank (NCCL), bootstrapped like make_gpu_rank_backend. Throws
/// core::Error in CPU-only builds or when NCCL initialisation fails.
std::unique_ptr<comm::BenchBackend> make_gpu_bench_backend();

/// Number of CUDA devices this process can use (respects CUDA_VISIBLE_DEVICES); 0 in CPU-only builds or when
/// no driver is present. `why_none` receives the reason when it is 0.
int visible_gpu_count(std::string* why_none = nullptr);

/// True when this build has the CUDA/NCCL backend (nvcc was found at configure time); false in CPU-only builds,
/// where no machine lets --backend gpu run.
bool built_with_cuda() noexcept;

/// Hardware threads of this machine (std::thread::hardware_concurrency, at least 1): the devices of CPU ranks.
int cpu_core_count();

/// Environment for GPU ranks started by scalescope's own launcher on one node: the NCCL unique id that
/// lets them build one communicator (the launcher process hosts NCCL's bootstrap root while they start).
std::vector<std::pair<std::string, std::string>> gpu_launch_environment();

}  // namespace scalescope::train
