#include "gpu/nccl_bench_backend.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mpi.h>

#include <cstdlib>
#include <string>

#include "comm/check_pattern.h"
#include "core/error.h"
#include "gpu/cuda_check.h"

namespace scalescope::gpu {
namespace {

using comm::Collective;
using comm::DataType;
using comm::RedOp;
namespace pattern = comm::pattern;

template <typename T> __device__ T from_double(double x) { return static_cast<T>(x); }
template <> __device__ __half from_double<__half>(double x) { return __float2half_rn(static_cast<float>(x)); }
template <> __device__ __nv_bfloat16 from_double<__nv_bfloat16>(double x) {
  return __float2bfloat16_rn(static_cast<float>(x));
}
template <typename T> __device__ double to_double(T x) { return static_cast<double>(x); }
template <> __device__ double to_double<__half>(__half x) { return static_cast<double>(__half2float(x)); }
template <> __device__ double to_double<__nv_bfloat16>(__nv_bfloat16 x) {
  return static_cast<double>(__bfloat162float(x));
}

// No {fmt} in this file: its headers do not compile under nvcc with --expt-relaxed-constexpr.

// Writes the case's send values at dst[offset + i]; `poison` instead writes 101 (no pattern value).
template <typename T>
__global__ void fill_kernel(T* dst, std::uint64_t n, pattern::Case c, bool poison) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
    dst[i] = from_double<T>(poison ? 101.0 : pattern::send_value(c, i));
}

template <typename T>
__global__ void check_kernel(const T* got, std::uint64_t n, pattern::Case c, double tolerance,
                             unsigned long long* wrong) {
  unsigned long long local = 0;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    const double want = pattern::expected_value(c, i), v = to_double(got[i]);
    if (!(fabs(v - want) <= tolerance * fabs(want))) ++local;
  }
  if (local) atomicAdd(wrong, local);
}

template <typename T>
__global__ void corrupt_kernel(T* x) {  // the kEnvCorruptResult test hook: first element + 1
  x[0] = from_double<T>(to_double(x[0]) + 1.0);
}

constexpr int kThreads = 256;
int blocks_for(std::uint64_t n) { return static_cast<int>(std::min<std::uint64_t>((n + kThreads - 1) / kThreads, 4096)); }

template <typename F>
void dispatch(DataType t, F&& f) {
  switch (t) {
    case DataType::f32: f(float{}); break;
    case DataType::f64: f(double{}); break;
    case DataType::i32: f(std::int32_t{}); break;
    case DataType::i8: f(std::int8_t{}); break;
    case DataType::f16: f(__half{}); break;
    case DataType::bf16: f(__nv_bfloat16{}); break;
  }
}

ncclDataType_t nccl_type(DataType t) {
  switch (t) {
    case DataType::f32: return ncclFloat32;
    case DataType::f64: return ncclFloat64;
    case DataType::i32: return ncclInt32;
    case DataType::i8: return ncclInt8;
    case DataType::f16: return ncclFloat16;
    case DataType::bf16: return ncclBfloat16;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(RedOp op) {
  switch (op) {
    case RedOp::sum: return ncclSum;
    case RedOp::prod: return ncclProd;
    case RedOp::max: return ncclMax;
    case RedOp::min: return ncclMin;
    case RedOp::avg: return ncclAvg;
  }
  return ncclSum;
}

pattern::Case pattern_case(const comm::BenchCase& c, const comm::RankInfo& info) {
  return {c.collective, c.op, info.rank, info.world_size, c.root, c.count};
}

}  // namespace

void NcclBenchBackend::check(ncclResult_t r, const char* call) {
  if (r == ncclSuccess) return;
  const char* last = ncclGetLastError(comm_);
  throw core::Error(std::string("NCCL error in ") + call + " on rank " + std::to_string(info_.rank) + ": " +
                        ncclGetErrorString(r) + (last && *last ? std::string(": ") + last : std::string()),
                    "rerun with NCCL_DEBUG=INFO to see NCCL's own log");
}

NcclBenchBackend::NcclBenchBackend(const RankBootstrap& boot)
    : info_(boot.info), mpi_initialised_(boot.mpi_initialised), corrupt_(std::getenv(comm::kEnvCorruptResult) != nullptr) {
  cudaDeviceProp prop{};
  SCALESCOPE_CUDA_CHECK(cudaGetDeviceProperties(&prop, info_.local_rank));
  char bus[32] = {0};
  cudaDeviceGetPCIBusId(bus, sizeof(bus), info_.local_rank);
  device_ = "cuda:" + std::to_string(info_.local_rank) + " " + prop.name + " [" + bus + "]";
  SCALESCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  SCALESCOPE_CUDA_CHECK(cudaMalloc(&wrong_, sizeof(unsigned long long)));
  check(ncclCommInitRank(&comm_, info_.world_size, boot.id, info_.rank), "ncclCommInitRank");
}

NcclBenchBackend::~NcclBenchBackend() {
  if (stream_) cudaStreamSynchronize(stream_);
  if (comm_) ncclCommDestroy(comm_);
  for (auto e : events_) cudaEventDestroy(e);
  cudaFree(send_);
  cudaFree(result_);
  cudaFree(wrong_);
  cudaFree(scratch_);
  if (stream_) cudaStreamDestroy(stream_);
  if (mpi_initialised_) MPI_Finalize();
}

void NcclBenchBackend::reserve(std::uint64_t max_send_bytes, std::uint64_t max_result_bytes) {
  cudaFree(send_);
  cudaFree(result_);
  send_ = result_ = nullptr;
  if (cudaMalloc(&send_, std::max<std::uint64_t>(max_send_bytes, 256)) != cudaSuccess ||
      cudaMalloc(&result_, std::max<std::uint64_t>(max_result_bytes, 256)) != cudaSuccess) {
    cudaGetLastError();
    throw core::Error("cannot allocate " + std::to_string(max_send_bytes) + " + " + std::to_string(max_result_bytes) +
                          " bytes of GPU memory for the benchmark buffers",
                      "use a smaller -e");
  }
  send_bytes_ = max_send_bytes;
  result_bytes_ = max_result_bytes;
}

void NcclBenchBackend::fill(const comm::BenchCase& c) {
  const auto pc = pattern_case(c, info_);
  const std::uint64_t send_n = pattern::send_elements(pc), result_n = pattern::result_elements(pc);
  dispatch(c.type, [&](auto zero) {
    using T = decltype(zero);
    auto* result = reinterpret_cast<T*>(result_);
    fill_kernel<T><<<blocks_for(result_n), kThreads, 0, stream_>>>(result, result_n, pc, true);
    SCALESCOPE_CUDA_CHECK_LAUNCH();
    T* input = c.in_place ? result + (c.collective == Collective::all_gather ? info_.rank * c.count : 0)
                          : reinterpret_cast<T*>(send_);
    fill_kernel<T><<<blocks_for(send_n), kThreads, 0, stream_>>>(input, send_n, pc, false);
    SCALESCOPE_CUDA_CHECK_LAUNCH();
  });
}

void NcclBenchBackend::launch(const comm::BenchCase& c) {
  const std::size_t es = comm::element_size(c.type);
  const ncclDataType_t t = nccl_type(c.type);
  const int n = info_.world_size;
  const std::uint64_t chunk_bytes = c.count * es;
  void* send = c.in_place ? static_cast<void*>(result_) : static_cast<void*>(send_);
  void* out = result_;
  switch (c.collective) {
    case Collective::all_reduce:
      check(ncclAllReduce(send, out, c.count, t, nccl_op(c.op), comm_, stream_), "ncclAllReduce");
      break;
    case Collective::all_gather:
      if (c.in_place) send = result_ + info_.rank * chunk_bytes;
      check(ncclAllGather(send, out, c.count, t, comm_, stream_), "ncclAllGather");
      break;
    case Collective::reduce_scatter:
      if (c.in_place) out = result_ + info_.rank * chunk_bytes;
      check(ncclReduceScatter(send, out, c.count, t, nccl_op(c.op), comm_, stream_), "ncclReduceScatter");
      break;
    case Collective::broadcast:
      check(ncclBroadcast(send, out, c.count, t, c.root, comm_, stream_), "ncclBroadcast");
      break;
    case Collective::reduce:
      check(ncclReduce(send, out, c.count, t, nccl_op(c.op), c.root, comm_, stream_), "ncclReduce");
      break;
    case Collective::all_to_all:  // grouped point-to-point, as nccl-tests' alltoall
      check(ncclGroupStart(), "ncclGroupStart");
      for (int peer = 0; peer < n; ++peer) {
        check(ncclSend(static_cast<unsigned char*>(send) + peer * chunk_bytes, c.count, t, peer, comm_, stream_), "ncclSend");
        check(ncclRecv(static_cast<unsigned char*>(out) + peer * chunk_bytes, c.count, t, peer, comm_, stream_), "ncclRecv");
      }
      check(ncclGroupEnd(), "ncclGroupEnd");
      break;
    case Collective::send_recv:  // a ring: send to the next rank, receive from the previous (nccl-tests' sendrecv)
      check(ncclGroupStart(), "ncclGroupStart");
      check(ncclSend(send, c.count, t, (info_.rank + 1) % n, comm_, stream_), "ncclSend");
      check(ncclRecv(out, c.count, t, (info_.rank + n - 1) % n, comm_, stream_), "ncclRecv");
      check(ncclGroupEnd(), "ncclGroupEnd");
      break;
  }
  if (corrupt_ && c.count > 0) {
    dispatch(c.type, [&](auto zero) {
      using T = decltype(zero);
      T* first = reinterpret_cast<T*>(result_);
      if (c.in_place && c.collective == Collective::reduce_scatter) first += info_.rank * c.count;
      corrupt_kernel<T><<<1, 1, 0, stream_>>>(first);
      SCALESCOPE_CUDA_CHECK_LAUNCH();
    });
  }
}

std::size_t NcclBenchBackend::record() {
  if (used_events_ == events_.size()) {
    cudaEvent_t e;
    SCALESCOPE_CUDA_CHECK(cudaEventCreate(&e));
    events_.push_back(e);
  }
  SCALESCOPE_CUDA_CHECK(cudaEventRecord(events_[used_events_], stream_));
  return used_events_++;
}

double NcclBenchBackend::seconds_between(std::size_t from, std::size_t to) {
  SCALESCOPE_CUDA_CHECK(cudaEventSynchronize(events_.at(to)));
  float ms = 0;
  SCALESCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, events_.at(from), events_.at(to)));
  return ms * 1e-3;
}

void NcclBenchBackend::synchronize() {
  SCALESCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  ncclResult_t async_error = ncclSuccess;
  check(ncclCommGetAsyncError(comm_, &async_error), "ncclCommGetAsyncError");
  check(async_error, "an asynchronous NCCL operation");
}

std::uint64_t NcclBenchBackend::count_wrong(const comm::BenchCase& c) {
  const auto pc = pattern_case(c, info_);
  if (!pattern::result_is_checked(pc)) return 0;
  const std::uint64_t n = pattern::result_elements(pc);
  const double tol = pattern::avg_tolerance(pc, c.type);
  SCALESCOPE_CUDA_CHECK(cudaMemsetAsync(wrong_, 0, sizeof(unsigned long long), stream_));
  dispatch(c.type, [&](auto zero) {
    using T = decltype(zero);
    const T* got = reinterpret_cast<const T*>(result_);
    if (c.in_place && c.collective == Collective::reduce_scatter) got += info_.rank * c.count;
    check_kernel<T><<<blocks_for(n), kThreads, 0, stream_>>>(got, n, pc, tol, wrong_);
    SCALESCOPE_CUDA_CHECK_LAUNCH();
  });
  unsigned long long host = 0;
  SCALESCOPE_CUDA_CHECK(cudaMemcpyAsync(&host, wrong_, sizeof(host), cudaMemcpyDeviceToHost, stream_));
  SCALESCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return host;
}

std::vector<double> NcclBenchBackend::all_gather_host(const std::vector<double>& values) {
  const std::size_t n = values.size(), total = n * static_cast<std::size_t>(info_.world_size);
  if (scratch_elems_ < total + n) {
    cudaFree(scratch_);
    SCALESCOPE_CUDA_CHECK(cudaMalloc(&scratch_, (total + n) * sizeof(double)));
    scratch_elems_ = total + n;
  }
  SCALESCOPE_CUDA_CHECK(cudaMemcpyAsync(scratch_ + total, values.data(), n * sizeof(double), cudaMemcpyHostToDevice, stream_));
  check(ncclAllGather(scratch_ + total, scratch_, n, ncclFloat64, comm_, stream_), "ncclAllGather");
  std::vector<double> out(total);
  SCALESCOPE_CUDA_CHECK(cudaMemcpyAsync(out.data(), scratch_, total * sizeof(double), cudaMemcpyDeviceToHost, stream_));
  SCALESCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return out;
}

void NcclBenchBackend::barrier() { all_gather_host({0.0}); }

}  // namespace scalescope::gpu
