// What one kernel boundary costs the GPU, alone and once the device is joined to a peer (issue #5): traces of
// gpt2-124m show every boundary between two compute kernels ~1 µs longer once a rank has a 2-rank NCCL
// communicator, with or without overlap and inside a CUDA graph too (bench/RESULTS.md, 2026-11-30). This
// measures that effect without the model: chains of N kernels replayed from a CUDA graph (no host launch cost),
// empty kernels, kernels that spin for a fixed time and kernels that write 4 MB (as real kernels end with writes
// in flight, which a kernel boundary must make visible), on device 0, in states one after the other:
//   alone        nothing else set up;
//   peer access  after cudaDeviceEnablePeerAccess to device 1 (what NCCL's P2P transport does);
//   nccl         after ncclCommInitAll over devices 0 and 1 (NCCL's own mappings and buffers, one process);
//   nccl, peer busy  the same while device 1 runs a long kernel (in training the peer GPU is never idle);
//   after        once the communicators are destroyed (a control for drift over the run).
// Per state: GPU time per kernel (CUDA events around the graph, median of the repetitions), and for the spinning
// kernels the time beyond the spin, i.e. the boundary. Prints a table; --json FILE writes the figures.
//
// usage: bench_kernel_boundary [--kernels N] [--spin-us US] [--reps R] [--json FILE]

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench_flags.h"
#include "core/atomic_file.h"

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "bench_kernel_boundary: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

__global__ void empty_kernel() {}

/// Spins for `cycles` SM clock cycles on one thread per block (the work itself does not matter, its length does).
__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

/// Writes `n` floats of `out`, grid-strided.
__global__ void write_kernel(float* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = static_cast<float>(i);
}

struct Figures {
  double empty_ns = 0;     ///< GPU time per empty kernel
  double spin_ns = 0;      ///< GPU time per spinning kernel
  double boundary_ns = 0;  ///< spin_ns − the spin's own length
  double write_ns = 0;     ///< GPU time per kernel writing kWriteFloats floats
};

constexpr int kWriteFloats = 1 << 20;  // 4 MB

/// Median GPU time per kernel of a graph of `n` kernels built by `add` (one launch on `stream` each), `reps`
/// launches of the graph after one warm-up launch.
template <typename Add>
double per_kernel_ns(cudaStream_t stream, int n, int reps, Add add) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  for (int i = 0; i < n; ++i) add(stream);
  check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
  check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "cudaEventCreate");
  check(cudaEventCreate(&b), "cudaEventCreate");
  check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");  // warm-up: uploads the graph
  std::vector<double> ns;
  for (int r = 0; r < reps; ++r) {
    check(cudaEventRecord(a, stream), "cudaEventRecord");
    check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    check(cudaEventRecord(b, stream), "cudaEventRecord");
    check(cudaEventSynchronize(b), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    ns.push_back(1e6 * ms / n);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  std::sort(ns.begin(), ns.end());
  return ns[ns.size() / 2];
}

/// `sms` blocks per spinning kernel: one per SM, so each kernel occupies the whole GPU as a GEMM does.
Figures measure(cudaStream_t stream, int n, int reps, double spin_us, double clock_ghz, int sms, float* buffer) {
  Figures f;
  f.empty_ns = per_kernel_ns(stream, n, reps, [](cudaStream_t s) { empty_kernel<<<1, 32, 0, s>>>(); });
  const long long cycles = static_cast<long long>(spin_us * 1e3 * clock_ghz);
  f.spin_ns = per_kernel_ns(stream, n, reps, [cycles, sms](cudaStream_t s) { spin_kernel<<<sms, 32, 0, s>>>(cycles); });
  f.boundary_ns = f.spin_ns - spin_us * 1e3;
  f.write_ns = per_kernel_ns(stream, n, reps, [sms, buffer](cudaStream_t s) { write_kernel<<<sms, 256, 0, s>>>(buffer, kWriteFloats); });
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"GPU time of one kernel boundary, alone, with peer access, with an NCCL communicator"};
  int kernels = 2000, reps = 11;
  double spin_us = 5.0;
  std::string json_path;
  app.add_option("--kernels", kernels, "kernels per graph")->check(CLI::Range(10, 1000000));
  app.add_option("--spin-us", spin_us, "length of each spinning kernel, µs")->check(CLI::Range(0.5, 1000.0));
  app.add_option("--reps", reps, "timed launches of each graph (median)")->check(CLI::Range(1, 1000));
  app.add_option("--json", json_path, "write the figures as JSON");
  if (const int status = scalescope::bench::parse_flags(app, argc, argv, "bench_kernel_boundary"); status >= 0)
    return status;

  int devices = 0;
  check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  check(cudaSetDevice(0), "cudaSetDevice");
  int clock_khz = 0;
  check(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0), "cudaDeviceGetAttribute");
  // The spin counts SM cycles at the reported clock; a lower running clock makes spins longer, so the boundary is
  // also read from the empty kernels, which have no spin.
  const double clock_ghz = clock_khz / 1e6;
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "cudaDeviceGetAttribute");
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  float* buffer = nullptr;
  check(cudaMalloc(&buffer, kWriteFloats * sizeof(float)), "cudaMalloc");
  std::vector<std::pair<std::string, Figures>> rows;
  rows.emplace_back("alone", measure(stream, kernels, reps, spin_us, clock_ghz, sms, buffer));
  if (devices >= 2) {
    int can = 0;
    check(cudaDeviceCanAccessPeer(&can, 0, 1), "cudaDeviceCanAccessPeer");
    if (can) {
      check(cudaDeviceEnablePeerAccess(1, 0), "cudaDeviceEnablePeerAccess");
      rows.emplace_back("peer access", measure(stream, kernels, reps, spin_us, clock_ghz, sms, buffer));
      check(cudaDeviceDisablePeerAccess(1), "cudaDeviceDisablePeerAccess");
    }
    ncclComm_t comms[2];
    const int list[2] = {0, 1};
    if (ncclCommInitAll(comms, 2, list) != ncclSuccess) {
      std::fprintf(stderr, "bench_kernel_boundary: ncclCommInitAll failed\n");
      return 1;
    }
    check(cudaSetDevice(0), "cudaSetDevice");
    rows.emplace_back("nccl", measure(stream, kernels, reps, spin_us, clock_ghz, sms, buffer));
    // Device 1 busy for longer than the measurement (one kernel spinning on every SM), then device 0 measured.
    check(cudaSetDevice(1), "cudaSetDevice");
    cudaStream_t peer_stream;
    check(cudaStreamCreateWithFlags(&peer_stream, cudaStreamNonBlocking), "cudaStreamCreate");
    spin_kernel<<<sms, 32, 0, peer_stream>>>(static_cast<long long>(3e9 * clock_ghz));  // ~3 s
    check(cudaGetLastError(), "spin_kernel on device 1");
    check(cudaSetDevice(0), "cudaSetDevice");
    rows.emplace_back("nccl, peer busy", measure(stream, kernels, reps, spin_us, clock_ghz, sms, buffer));
    check(cudaSetDevice(1), "cudaSetDevice");
    check(cudaStreamSynchronize(peer_stream), "cudaStreamSynchronize");
    cudaStreamDestroy(peer_stream);
    check(cudaSetDevice(0), "cudaSetDevice");
    for (auto c : comms) ncclCommDestroy(c);
    rows.emplace_back("after", measure(stream, kernels, reps, spin_us, clock_ghz, sms, buffer));
  } else {
    std::fprintf(stderr, "bench_kernel_boundary: one GPU visible: only the 'alone' state is measured\n");
  }

  std::printf("%-16s %14s %14s %14s %14s   (%d kernels per graph, spin %.1f µs at %.2f GHz, median of %d)\n",
              "state", "empty ns/kern", "spin ns/kern", "boundary ns", "4MB-write ns", kernels, spin_us, clock_ghz, reps);
  nlohmann::json j = {{"kernels", kernels}, {"spin_us", spin_us}, {"reps", reps}, {"states", nlohmann::json::array()}};
  for (const auto& [name, f] : rows) {
    std::printf("%-16s %14.0f %14.0f %14.0f %14.0f\n", name.c_str(), f.empty_ns, f.spin_ns, f.boundary_ns, f.write_ns);
    j["states"].push_back({{"state", name}, {"empty_ns", f.empty_ns}, {"spin_ns", f.spin_ns}, {"boundary_ns", f.boundary_ns},
                           {"write_ns", f.write_ns}});
  }
  cudaFree(buffer);
  if (!json_path.empty()) scalescope::core::write_file_atomically(json_path, j.dump(1) + "\n");
  return 0;
}
