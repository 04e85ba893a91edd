#include "gpu/probes.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "gpu/cuda_check.h"
#include "train/cuda/lt_matmul.h"

namespace scalescope::gpu {

namespace {

// NVML, declared here as topo/live.cpp does (no nvml.h on the build machines); signatures and constants from
// NVIDIA's NVML API Reference Guide: nvmlClockType_t NVML_CLOCK_SM = 1, nvmlTemperatureSensors_t NVML_TEMPERATURE_GPU = 0.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;

struct Nvml {
  void* lib = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*by_bus)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*gen)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*width)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*max_gen)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*max_width)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*limit)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  // nvmlDeviceGetRemappedRows(device, &corrRows, &uncRows, &isPending, &failureOccurred);
  // nvmlDeviceGetRetiredPages(device, cause (0 multiple single-bit, 1 double-bit), &count, addresses or NULL).
  nvmlReturn_t (*remapped)(nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*retired)(nvmlDevice_t, int, unsigned*, unsigned long long*) = nullptr;
  bool ok = false;

  template <class F>
  void sym(F& f, const char* a, const char* b = nullptr) {
    f = reinterpret_cast<F>(dlsym(lib, a));
    if (!f && b) f = reinterpret_cast<F>(dlsym(lib, b));
  }
  bool load(std::string& why) {
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      why = "NVML not available (libnvidia-ml.so.1 could not be loaded): no PCIe link, clocks or throttle reasons under load";
      return false;
    }
    sym(init, "nvmlInit_v2", "nvmlInit");
    sym(shutdown, "nvmlShutdown");
    sym(by_bus, "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId");
    sym(gen, "nvmlDeviceGetCurrPcieLinkGeneration");
    sym(width, "nvmlDeviceGetCurrPcieLinkWidth");
    sym(max_gen, "nvmlDeviceGetMaxPcieLinkGeneration");
    sym(max_width, "nvmlDeviceGetMaxPcieLinkWidth");
    sym(clock, "nvmlDeviceGetClockInfo");
    sym(max_clock, "nvmlDeviceGetMaxClockInfo");
    sym(power, "nvmlDeviceGetPowerUsage");
    sym(limit, "nvmlDeviceGetEnforcedPowerLimit");
    sym(temperature, "nvmlDeviceGetTemperature");
    sym(reasons, "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons");
    sym(remapped, "nvmlDeviceGetRemappedRows");
    sym(retired, "nvmlDeviceGetRetiredPages");
    if (!init || !by_bus || init() != 0) {
      why = "NVML could not be initialised: no PCIe link, clocks or throttle reasons under load";
      return false;
    }
    ok = true;
    return true;
  }
  ~Nvml() {
    if (ok && shutdown) shutdown();
    if (lib) dlclose(lib);
  }
  // Reads what NVML gives now; absent values stay absent.
  probe::NvmlUnderLoad read(const std::string& bus) const {
    probe::NvmlUnderLoad n;
    nvmlDevice_t d = nullptr;
    if (!ok || by_bus(bus.c_str(), &d) != 0) return n;
    unsigned u = 0;
    if (gen && gen(d, &u) == 0) n.pcie_gen = static_cast<int>(u);
    if (width && width(d, &u) == 0) n.pcie_width = static_cast<int>(u);
    if (max_gen && max_gen(d, &u) == 0) n.pcie_max_gen = static_cast<int>(u);
    if (max_width && max_width(d, &u) == 0) n.pcie_max_width = static_cast<int>(u);
    if (clock && clock(d, 1, &u) == 0) n.sm_mhz = u;
    if (max_clock && max_clock(d, 1, &u) == 0) n.max_sm_mhz = u;
    if (power && power(d, &u) == 0) n.power_w = u / 1000.0;
    if (limit && limit(d, &u) == 0) n.power_limit_w = u / 1000.0;
    if (temperature && temperature(d, 0, &u) == 0) n.temperature_c = u;
    unsigned long long r = 0;
    if (reasons && reasons(d, &r) == 0) n.clock_event_reasons = r;
    unsigned corr = 0, unc = 0, pending = 0, failed = 0;
    if (remapped && remapped(d, &corr, &unc, &pending, &failed) == 0) {
      n.remapped_correctable = corr;
      n.remapped_uncorrectable = unc;
      n.remap_pending = pending != 0;
      n.remap_failed = failed != 0;
    }
    constexpr int kInsufficientSize = 7;  // NVML_ERROR_INSUFFICIENT_SIZE: the count is set, the addresses not asked for
    for (int cause : {0, 1}) {
      unsigned count = 0;
      const int rc = retired ? retired(d, cause, &count, nullptr) : -1;
      if (rc == 0 || rc == kInsufficientSize) (cause == 0 ? n.retired_sbe : n.retired_dbe) = count;
    }
    return n;
  }
};

// Values in [-1, 1] as bf16 bit patterns (the upper half of the float's bits), so the GEMM draws real power.
void fill_bf16(__nv_bfloat16* dev, std::size_t n, unsigned seed) {
  std::vector<std::uint16_t> host(n);
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned h = (static_cast<unsigned>(i) * 2654435761u) ^ seed;
    const float v = static_cast<float>(static_cast<int>(h % 2001) - 1000) * 1e-3f;
    std::uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    host[i] = static_cast<std::uint16_t>(bits >> 16);
  }
  SCALESCOPE_CUDA_CHECK(cudaMemcpy(dev, host.data(), n * sizeof(std::uint16_t), cudaMemcpyHostToDevice));
}

std::string bus_of(int device) {
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess) return "?";
  return bus;
}

probe::CopyProbe copy_probe(int device, const Nvml& nvml) {
  probe::CopyProbe c;
  c.device = device;
  c.bus_id = bus_of(device);
  cudaDeviceProp prop{};
  SCALESCOPE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  c.name = prop.name;
  constexpr std::size_t kBytes = 256ull << 20;
  constexpr int kReps = 8;
  void *host = nullptr, *dev = nullptr;
  SCALESCOPE_CUDA_CHECK(cudaMallocHost(&host, kBytes));
  SCALESCOPE_CUDA_CHECK(cudaMalloc(&dev, kBytes));
  cudaStream_t s;
  SCALESCOPE_CUDA_CHECK(cudaStreamCreate(&s));
  cudaEvent_t a, b;
  SCALESCOPE_CUDA_CHECK(cudaEventCreate(&a));
  SCALESCOPE_CUDA_CHECK(cudaEventCreate(&b));
  auto timed = [&](cudaMemcpyKind kind, bool read_nvml) {
    void* dst = kind == cudaMemcpyHostToDevice ? dev : host;
    const void* src = kind == cudaMemcpyHostToDevice ? host : dev;
    SCALESCOPE_CUDA_CHECK(cudaMemcpyAsync(dst, src, kBytes, kind, s));  // warm-up
    SCALESCOPE_CUDA_CHECK(cudaEventRecord(a, s));
    for (int i = 0; i < kReps; ++i) SCALESCOPE_CUDA_CHECK(cudaMemcpyAsync(dst, src, kBytes, kind, s));
    SCALESCOPE_CUDA_CHECK(cudaEventRecord(b, s));
    if (read_nvml) {  // the link while the copies run
      std::this_thread::sleep_for(std::chrono::milliseconds(15));
      c.nvml = nvml.read(c.bus_id);
    }
    SCALESCOPE_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    SCALESCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    return ms > 0 ? kReps * static_cast<double>(kBytes) / (ms * 1e6) : 0.0;
  };
  c.h2d_gbps = timed(cudaMemcpyHostToDevice, true);
  c.d2h_gbps = timed(cudaMemcpyDeviceToHost, false);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaStreamDestroy(s);
  cudaFree(dev);
  cudaFreeHost(host);
  return c;
}

probe::GemmProbe gemm_probe(int device, const Nvml& nvml) {
  probe::GemmProbe g;
  g.device = device;
  g.bus_id = bus_of(device);
  cudaDeviceProp prop{};
  SCALESCOPE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  g.name = prop.name;
  constexpr int n = 8192;
  constexpr int kReps = 120;  // ≈ 200 ms on an H200: long enough for NVML's power average and the clocks to settle
  const std::size_t elems = static_cast<std::size_t>(n) * n;
  __nv_bfloat16 *a = nullptr, *b = nullptr, *d = nullptr;
  SCALESCOPE_CUDA_CHECK(cudaMalloc(&a, elems * sizeof(__nv_bfloat16)));
  SCALESCOPE_CUDA_CHECK(cudaMalloc(&b, elems * sizeof(__nv_bfloat16)));
  SCALESCOPE_CUDA_CHECK(cudaMalloc(&d, elems * sizeof(__nv_bfloat16)));
  fill_bf16(a, elems, 1);
  fill_bf16(b, elems, 2);
  cudaStream_t s;
  SCALESCOPE_CUDA_CHECK(cudaStreamCreate(&s));
  {
    train::cuda::LtMatmul lt;
    const auto spec = train::cuda::packed_gemm(n, n, n, a, b, d);
    for (int i = 0; i < 3; ++i) lt.run(s, spec);  // warm-up (and the heuristic's choice)
    cudaEvent_t e0, e1;
    SCALESCOPE_CUDA_CHECK(cudaEventCreate(&e0));
    SCALESCOPE_CUDA_CHECK(cudaEventCreate(&e1));
    SCALESCOPE_CUDA_CHECK(cudaEventRecord(e0, s));
    for (int i = 0; i < kReps; ++i) lt.run(s, spec);
    SCALESCOPE_CUDA_CHECK(cudaEventRecord(e1, s));
    std::this_thread::sleep_for(std::chrono::milliseconds(120));  // clocks, power and throttling while it runs
    g.nvml = nvml.read(g.bus_id);
    SCALESCOPE_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    SCALESCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    g.tflops = ms > 0 ? kReps * 2.0 * n * static_cast<double>(n) * n / (ms * 1e9) : 0;
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
  }
  cudaStreamDestroy(s);
  cudaFree(a);
  cudaFree(b);
  cudaFree(d);
  return g;
}

/// p2pBandwidthLatencyTest's method on one pair (see probe::PairProbe).
probe::PairProbe pair_probe(int a, int b) {
  probe::PairProbe p;
  p.a = a;
  p.b = b;
  int can = 0;
  if (cudaDeviceCanAccessPeer(&can, a, b) == cudaSuccess) p.can_access = can != 0;
  cudaGetLastError();
  constexpr std::size_t kBytes = 64u << 20, kSmall = 4;
  void *src = nullptr, *dst = nullptr;
  cudaStream_t s = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  bool peer_on = false;
  try {
    SCALESCOPE_CUDA_CHECK(cudaSetDevice(b));
    SCALESCOPE_CUDA_CHECK(cudaMalloc(&dst, kBytes));
    SCALESCOPE_CUDA_CHECK(cudaSetDevice(a));
    SCALESCOPE_CUDA_CHECK(cudaMalloc(&src, kBytes));
    SCALESCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    SCALESCOPE_CUDA_CHECK(cudaEventCreate(&e0));
    SCALESCOPE_CUDA_CHECK(cudaEventCreate(&e1));
    // Seconds per copy of `bytes` from a to b: one warm-up, then `reps` timed back to back.
    auto timed = [&](std::size_t bytes, int reps) {
      SCALESCOPE_CUDA_CHECK(cudaMemcpyPeerAsync(dst, b, src, a, bytes, s));
      SCALESCOPE_CUDA_CHECK(cudaEventRecord(e0, s));
      for (int i = 0; i < reps; ++i) SCALESCOPE_CUDA_CHECK(cudaMemcpyPeerAsync(dst, b, src, a, bytes, s));
      SCALESCOPE_CUDA_CHECK(cudaEventRecord(e1, s));
      SCALESCOPE_CUDA_CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      SCALESCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
      return ms * 1e-3 / reps;
    };
    p.staged_gbps = static_cast<double>(kBytes) / timed(kBytes, 5) / 1e9;
    p.staged_latency_us = timed(kSmall, 100) * 1e6;
    if (p.can_access) {
      SCALESCOPE_CUDA_CHECK(cudaDeviceEnablePeerAccess(b, 0));
      peer_on = true;
      SCALESCOPE_CUDA_CHECK(cudaSetDevice(b));
      if (cudaDeviceEnablePeerAccess(a, 0) != cudaSuccess) cudaGetLastError();  // the other way, as the sample does
      SCALESCOPE_CUDA_CHECK(cudaSetDevice(a));
      // The data must arrive: a pattern through the peer copy, read back from b.
      SCALESCOPE_CUDA_CHECK(cudaMemsetAsync(src, 0x5a, kBytes, s));
      SCALESCOPE_CUDA_CHECK(cudaMemsetAsync(dst, 0x00, kBytes, s));  // (b's memory, written from a's stream: peer on)
      SCALESCOPE_CUDA_CHECK(cudaMemcpyPeerAsync(dst, b, src, a, kBytes, s));
      SCALESCOPE_CUDA_CHECK(cudaStreamSynchronize(s));
      std::vector<unsigned char> head(4096), tail(4096);
      SCALESCOPE_CUDA_CHECK(cudaMemcpy(head.data(), dst, head.size(), cudaMemcpyDeviceToHost));
      SCALESCOPE_CUDA_CHECK(cudaMemcpy(tail.data(), static_cast<char*>(dst) + kBytes - tail.size(), tail.size(),
                                       cudaMemcpyDeviceToHost));
      bool intact = true;
      for (unsigned char c : head) intact &= c == 0x5a;
      for (unsigned char c : tail) intact &= c == 0x5a;
      p.works = intact;
      p.p2p_gbps = static_cast<double>(kBytes) / timed(kBytes, 5) / 1e9;
      p.p2p_latency_us = timed(kSmall, 100) * 1e6;
    }
  } catch (const std::exception& e) {
    p.error = e.what();
    if (p.can_access && !p.works) p.works = false;  // peer access reported, and using it failed
    cudaGetLastError();
  }
  cudaSetDevice(a);
  if (peer_on) {
    cudaDeviceDisablePeerAccess(b);
    cudaSetDevice(b);
    cudaDeviceDisablePeerAccess(a);
    cudaSetDevice(a);
  }
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  if (s) cudaStreamDestroy(s);
  if (src) cudaFree(src);
  if (dst) {
    cudaSetDevice(b);
    cudaFree(dst);
    cudaSetDevice(a);
  }
  cudaGetLastError();  // leave no error behind (a failed disable of a link never enabled)
  return p;
}

}  // namespace

probe::GpuProbes run_gpu_probes(int devices) {
  probe::GpuProbes p;
  const auto t0 = std::chrono::steady_clock::now();
  Nvml nvml;
  std::string why;
  if (!nvml.load(why)) p.notes.push_back(why);
  for (int dev = 0; dev < devices; ++dev) {
    try {
      SCALESCOPE_CUDA_CHECK(cudaSetDevice(dev));
      p.copies.push_back(copy_probe(dev, nvml));
      p.gemms.push_back(gemm_probe(dev, nvml));
    } catch (const std::exception& e) {
      p.notes.push_back("GPU" + std::to_string(dev) + ": probe failed: " + e.what());
    }
  }
  // Every pair, one way each (a < b): p2pBandwidthLatencyTest's unidirectional matrices, upper half.
  for (int a = 0; a < devices; ++a)
    for (int b = a + 1; b < devices; ++b) p.pairs.push_back(pair_probe(a, b));
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

}  // namespace scalescope::gpu
