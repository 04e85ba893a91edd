#pragma once
// `scalescope comm`'s live run as nccl-tests' flags give it: sizes in nccl-tests' syntax (a number with K, M or G),
// a collective, data type, op or root by name or "all", and the backend "auto" — resolved into the comm job's
// configuration (comm_job.h), with the usage errors a wrong flag gets.

#include <cstdint>
#include <string>

#include "runtime/comm_job.h"
#include "train/backend.h"

namespace scalescope::runtime {

/// nccl-tests' flags of a live sweep, as given on the command line.
struct CommJobOptions {
  std::string collective;  // what to measure ("all" = every one); empty: all_reduce
  std::string backend = "auto";
  int world_size = 1;      // -g (nccl-tests: GPUs per thread; here: ranks, one per GPU or core)
  std::string min_bytes = "32M", max_bytes = "32M", step_bytes = "1M";
  std::uint64_t step_factor = 1;
  int iters = 20, warmup_iters = 1, check = 1;
  std::string datatype = "float", op = "sum", root = "0";
  bool no_per_iteration = false;
  double timeout_seconds = 1800;
  bool progress = true;
};

/// The backend a run takes: `name` ("cpu", "gpu"), or for "auto" GPU ranks when a GPU is visible, else CPU ranks.
train::BackendKind comm_job_backend(const std::string& name);

/// The configuration of the live sweep `o` asks for on `backend`, validated. Throws core::UsageError naming the flag
/// and its value (a size, collective, data type, op or root nccl-tests would not take, -o given a file name).
CommJobConfig comm_job_config(const CommJobOptions& o, train::BackendKind backend);

/// nccl-tests' size syntax: a number with an optional K, M or G suffix (powers of 1024). Throws core::UsageError.
std::uint64_t parse_size(const std::string& flag, const std::string& text);

/// Whether an -o value is a file name rather than an op ("r.json", "out/r"): `-o` is --out in analyze and doctor,
/// but the reduction op in `comm`, as in nccl-tests.
bool op_looks_like_a_file_name(const std::string& op);

}  // namespace scalescope::runtime
