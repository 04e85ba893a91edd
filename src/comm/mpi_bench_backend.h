#pragma once
// The collective benchmark on CPU ranks over MPI (host memory). All six data types: fp16 and bf16 travel as
// 16-bit integers with user-defined MPI reduction ops; `avg` is MPI_SUM followed by a division on each rank,
// inside the timed call, since MPI has no average.

#include <mpi.h>

#include <chrono>
#include <map>
#include <vector>

#include "comm/bench_backend.h"

namespace scalescope::comm {

class MpiBenchBackend final : public BenchBackend {
 public:
  /// Initialises MPI (this process must have been started by mpirun/srun). Throws core::Error.
  MpiBenchBackend();
  ~MpiBenchBackend() override;
  MpiBenchBackend(const MpiBenchBackend&) = delete;
  MpiBenchBackend& operator=(const MpiBenchBackend&) = delete;

  std::string name() const override { return "mpi"; }
  const RankInfo& rank_info() const override { return info_; }
  std::string device() const override { return "cpu (host memory)"; }
  std::string library_version() const override { return version_; }
  bool supports(const BenchCase&) const override { return true; }
  void reserve(std::uint64_t max_send_bytes, std::uint64_t max_result_bytes) override;
  void fill(const BenchCase& c) override;
  void launch(const BenchCase& c) override;
  std::size_t record() override;
  double seconds_between(std::size_t from, std::size_t to) override;
  void clear_records() override { stamps_.clear(); }
  void synchronize() override {}
  std::uint64_t count_wrong(const BenchCase& c) override;
  std::vector<double> all_gather_host(const std::vector<double>& values) override;
  void barrier() override;

 private:
  MPI_Op reduction(DataType t, RedOp op);
  RankInfo info_;
  std::string version_;
  std::vector<unsigned char> send_, result_;
  std::vector<std::chrono::steady_clock::time_point> stamps_;
  std::map<std::pair<int, int>, MPI_Op> user_ops_;
  bool corrupt_;  // kEnvCorruptResult test hook
};

}  // namespace scalescope::comm
