#pragma once
// The collective benchmark on GPU ranks over NCCL: one process per GPU, buffers in device memory, fill and
// check kernels evaluating check_pattern.h on the device (no host copies of the data), CUDA events for time.
// In-place layouts follow nccl-tests: all-gather sends from this rank's chunk of the result buffer,
// reduce-scatter leaves its result in this rank's chunk of the input buffer.

#include <cuda_runtime.h>
#include <nccl.h>

#include <vector>

#include "comm/bench_backend.h"
#include "gpu/bootstrap.h"

namespace scalescope::gpu {

class NcclBenchBackend final : public comm::BenchBackend {
 public:
  /// Joins the NCCL communicator described by `boot` on the current device. Throws core::Error.
  explicit NcclBenchBackend(const RankBootstrap& boot);
  ~NcclBenchBackend() override;
  NcclBenchBackend(const NcclBenchBackend&) = delete;
  NcclBenchBackend& operator=(const NcclBenchBackend&) = delete;

  std::string name() const override { return "nccl"; }
  const comm::RankInfo& rank_info() const override { return info_; }
  std::string device() const override { return device_; }
  std::string library_version() const override { return nccl_version_string(); }
  bool supports(const comm::BenchCase&) const override { return true; }
  void reserve(std::uint64_t max_send_bytes, std::uint64_t max_result_bytes) override;
  void fill(const comm::BenchCase& c) override;
  void launch(const comm::BenchCase& c) override;
  std::size_t record() override;
  double seconds_between(std::size_t from, std::size_t to) override;
  void clear_records() override { used_events_ = 0; }
  void synchronize() override;
  std::uint64_t count_wrong(const comm::BenchCase& c) override;
  std::vector<double> all_gather_host(const std::vector<double>& values) override;
  void barrier() override;

 private:
  void check(ncclResult_t r, const char* call);
  comm::RankInfo info_;
  std::string device_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  unsigned char* send_ = nullptr;
  unsigned char* result_ = nullptr;
  std::uint64_t send_bytes_ = 0, result_bytes_ = 0;
  unsigned long long* wrong_ = nullptr;
  double* scratch_ = nullptr;
  std::size_t scratch_elems_ = 0;
  std::vector<cudaEvent_t> events_;
  std::size_t used_events_ = 0;
  bool mpi_initialised_ = false;
  bool corrupt_ = false;  // kEnvCorruptResult test hook  // under mpirun the bootstrap initialised MPI: finalise it last
};

}  // namespace scalescope::gpu
