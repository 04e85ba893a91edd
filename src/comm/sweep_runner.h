#pragma once
// The collective sweep, the same on every backend: nccl-tests' method (warm-up at the smallest and largest
// size, then per size warm-up calls, `iters` timed calls back to back, time = span / iters averaged over
// ranks, algbw = size / time, busbw = algbw × bus factor, then a data check), plus what nccl-tests lacks:
// a second pass timing every iteration (median, p95, coefficient of variation) and the spread of the ranks'
// mean times.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "comm/sweep.h"
#include "comm/bench_backend.h"

namespace scalescope::comm {

/// nccl-tests-compatible parameters (its flag letters in brackets).
struct SweepConfig {
  std::uint64_t min_bytes = 32u << 20;   ///< [-b] smallest size (bytes, as nccl-tests' size column)
  std::uint64_t max_bytes = 32u << 20;   ///< [-e] largest size
  std::uint64_t step_bytes = 1u << 20;   ///< [-i] increment when step_factor == 1
  std::uint64_t step_factor = 1;         ///< [-f] multiplicative step (> 1) — nccl-tests' default is 1 (+1 MiB)
  int iters = 20;                        ///< [-n] timed iterations per size
  int warmup_iters = 1;                  ///< [-w] warm-up calls: at the smallest and largest size before the
                                         ///< sweep (nccl-tests), and before every size (scalescope); nccl-tests' default 1
  int check = 1;                         ///< [-c] data-check iterations per size (0: none, #wrong is N/A)
  std::vector<Collective> collectives = {Collective::all_reduce};
  std::vector<DataType> types = {DataType::f32};  ///< [-d]
  std::vector<RedOp> ops = {RedOp::sum};          ///< [-o]
  std::vector<int> roots = {0};                   ///< [-r]
  bool per_iteration_stats = true;  ///< the second, per-iteration timed pass
  /// Throws core::UsageError for an empty or inverted range, step 0, iters < 1, a root outside [0, n).
  void validate(int world_size) const;
  /// Sizes of the sweep, in order.
  std::vector<std::uint64_t> sizes() const;
};

/// Bytes of the send and result buffers one rank needs for every case of `config` at world size `n` (in place, the
/// input sits in the result buffer, so the result buffer is at least the send buffer). Throws core::Error.
std::pair<std::uint64_t, std::uint64_t> sweep_buffer_bytes(const SweepConfig& config, int n);

/// Runs every (collective, type, op, root) combination of `config` over the sizes on this rank, in the same
/// order on every rank. Returns one Sweep per combination on rank 0 (empty elsewhere). Cases the backend
/// does not support are skipped with a warning in the sweep. `progress` is called on rank 0 after each size.
/// Throws core::Error on backend failure.
struct SweepProgress {
  double done = 0, total = 0;  ///< work units: each size weighs 1 + bytes / 256 KiB (latency, then bandwidth)
  std::string item;            ///< "all_reduce float sum 1048576 B"
  std::string result;          ///< "12.30 us, busbw 85.25 GB/s"
};
std::vector<analyze::Sweep> run_sweeps(BenchBackend& backend, const SweepConfig& config,
                                       const std::function<void(const SweepProgress&)>& progress);

/// The work units of one size in SweepProgress (1 + bytes / 256 KiB).
double sweep_size_weight(std::uint64_t bytes);

}  // namespace scalescope::comm
