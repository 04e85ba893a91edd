#pragma once
// What the collective benchmark (`scalescope comm`) needs from a backend: buffers, the data check, launching
// one collective, and a timeline. NcclBenchBackend (GPU, src/gpu) and MpiBenchBackend (CPU) implement it;
// the sweep logic (sweep_runner.h) is shared, as nccl-tests shares one harness across its collectives.

#include <cstdint>
#include <string>
#include <vector>

#include "comm/collectives.h"
#include "comm/communicator.h"

namespace scalescope::comm {

/// One benchmark case on one rank. `count` is nccl-tests' per-rank count (see check_pattern.h).
struct BenchCase {
  Collective collective = Collective::all_reduce;
  DataType type = DataType::f32;
  RedOp op = RedOp::sum;
  int root = 0;
  std::uint64_t count = 0;
  bool in_place = false;
};

/// Test hook: when this environment variable is set, backends add 1 to the first result element after every
/// call, so tests can prove that the data check counts real corruption (scalescope's own tests set it).
inline constexpr const char* kEnvCorruptResult = "SCALESCOPE_TEST_CORRUPT_RESULT";

class BenchBackend {
 public:
  virtual ~BenchBackend() = default;
  /// "nccl" or "mpi".
  virtual std::string name() const = 0;
  virtual const RankInfo& rank_info() const = 0;
  /// e.g. "cuda:0 NVIDIA H200 [0000:19:00.0]" or "cpu (host memory)".
  virtual std::string device() const = 0;
  /// e.g. "NCCL 2.28.3" or "Open MPI v4.1.4".
  virtual std::string library_version() const = 0;
  /// Whether the backend runs this data type / operation (MPI has no native fp16/bf16, scalescope adds them).
  virtual bool supports(const BenchCase& c) const = 0;

  /// Allocates send and result buffers large enough for every case up to `max_send_bytes` /
  /// `max_result_bytes` per rank. Throws core::Error when memory is short (naming the sizes).
  virtual void reserve(std::uint64_t max_send_bytes, std::uint64_t max_result_bytes) = 0;
  /// Writes check_pattern.h's inputs for `c` and poisons the result (so unwritten elements are counted).
  virtual void fill(const BenchCase& c) = 0;
  /// Issues `c` once (GPU: asynchronously on the benchmark stream).
  virtual void launch(const BenchCase& c) = 0;
  /// Records a point on the benchmark timeline (CUDA event / steady clock); returns its index.
  virtual std::size_t record() = 0;
  /// Seconds between two recorded points; waits for the later one.
  virtual double seconds_between(std::size_t from, std::size_t to) = 0;
  /// Forgets recorded points (call after their times were read).
  virtual void clear_records() = 0;
  /// Waits for everything issued.
  virtual void synchronize() = 0;
  /// Elements of `c`'s result on this rank that differ from check_pattern.h's expectation (after the last
  /// launch of `c` completed). Blocking.
  virtual std::uint64_t count_wrong(const BenchCase& c) = 0;
  /// Control plane: blocking all-gather of a small host vector (rank-major result) and barrier.
  virtual std::vector<double> all_gather_host(const std::vector<double>& values) = 0;
  virtual void barrier() = 0;
};

}  // namespace scalescope::comm
