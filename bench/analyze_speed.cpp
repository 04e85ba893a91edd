// Speed and memory of the trace reader and analysis: generates a synthetic Kineto trace of at least 1 GB
// (realistic mix: ATen ops with shapes, runtime launches with flows, kernels with Kineto's full args, NCCL
// kernels with PyTorch's collective metadata, copies, syncs, data loading), then reads and analyses it, and
// each trace of the shared corpus, each in a child process so that its peak RSS (getrusage ru_maxrss, via
// wait4) is its own. Reports MB/s of uncompressed JSON per CPU-second (user + system: "per core") and per
// wall-second, and peak RSS against the file size. MB = 1e6 bytes.
// It also writes a synthetic NCCL debug log of --nccl-log-mb MB (NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=COLL:
// one COLL line per collective, the line that dominates long logs, after an init with Channel lines) and reads
// and analyses it the same way (read_nccl_log_file + analyze_nccl_logs), for the parser's memory per line.
//
// Usage: bench_analyze_speed [--size-gb X] [--nccl-log-mb X] [--dir DIR] [--keep] [--corpus DIR] [--repeat N]
//                            [--no-generate]

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/nccl_log_analysis.h"
#include "readers/nccl/nccl_log.h"
#include "analysis/trace_analysis.h"
#include "core/error.h"

using namespace scalescope;
namespace fs = std::filesystem;

namespace {

/// Writes a Kineto-like trace of at least `target` bytes to `path`. Returns the bytes written.
std::uint64_t generate(const std::string& path, std::uint64_t target) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw core::Error("cannot create " + path + ": " + std::strerror(errno), "pass --dir DIR with room");
  std::vector<char> buffer(std::size_t{4} << 20);
  std::setvbuf(f, buffer.data(), _IOFBF, buffer.size());
  std::uint64_t written = 0;
  auto put = [&](const std::string& s) {
    std::fwrite(s.data(), 1, s.size(), f);
    written += s.size();
  };
  put(R"~({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150754820096, "computeMajor": 9, "computeMinor": 0, "maxThreadsPerBlock": 1024, "numSms": 132}],
  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8, "pg_count": 1, "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": 8, "ranks": [0, 1, 2, 3, 4, 5, 6, 7]}], "nccl_version": "2.21.5"},
  "traceEvents": [
)~");
  const char* kernels[] = {
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
      "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> >(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3>)",
      "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, c10::BFloat16, float, c10::BFloat16, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, int)",
      "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(Flash_fwd_params)"};
  const char* ops[] = {"aten::linear", "aten::mul", "aten::softmax", "aten::_flash_attention_forward"};
  std::int64_t ts = 1'700'000'000'000'000;  // µs
  std::int64_t corr = 1, ext = 1;
  const int main_tid = 4242, bwd_tid = 4250;
  bool first = true;
  auto ev = [&](const std::string& s) {
    if (!first) put(",\n");
    first = false;
    put(s);
  };
  for (int step = 1; written < target; ++step) {
    const std::int64_t step_start = ts;
    const int ops_per_step = 600;
    const std::int64_t step_len = ops_per_step * 30 + 2000;
    ev(fmt::format(R"~({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 4242, "tid": {}, "ts": {}.000, "dur": {}.000, "args": {{"External id": {}, "Record function id": 0, "Ev Idx": {}}}}})~",
                   step, main_tid, ts, step_len, ext++, ext));
    ev(fmt::format(R"~({{"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "pid": 4242, "tid": {}, "ts": {}.000, "dur": 180.250, "args": {{"External id": {}, "Record function id": 0, "Ev Idx": {}}}}})~",
                   main_tid, ts + 1, ext++, ext));
    ev(fmt::format(R"~({{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7, "ts": {}.512, "dur": 95.104, "args": {{"External id": {}, "device": 0, "context": 1, "stream": 7, "correlation": {}, "bytes": 33554432, "memory bandwidth (GB/s)": 352.8}}}})~",
                   ts + 200, ext, corr++));
    std::int64_t gpu = ts + 300;
    for (int i = 0; i < ops_per_step; ++i) {
      const int k = i % 4;
      const std::int64_t t = ts + 250 + i * 30;
      ev(fmt::format(R"~({{"ph": "X", "cat": "cpu_op", "name": "{}", "pid": 4242, "tid": {}, "ts": {}.331, "dur": 21.442, "args": {{"External id": {}, "Record function id": 0, "Sequence number": {}, "Fwd thread id": 0, "Ev Idx": {}, "Input Dims": [[8, 4096, 4096], [4096, 4096], [4096]], "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"], "Input Strides": [[16777216, 4096, 1], [4096, 1], [1]], "Concrete Inputs": ["", "", ""]}}}})~",
                     ops[k], i < ops_per_step / 2 ? main_tid : bwd_tid, t, ext, 1000 + i, ext));
      ev(fmt::format(R"~({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": {}, "ts": {}.870, "dur": 6.104, "args": {{"External id": {}, "cbid": 211, "correlation": {}}}}})~",
                     i < ops_per_step / 2 ? main_tid : bwd_tid, t + 10, ext, corr));
      ev(fmt::format(R"~({{"ph": "s", "id": {}, "pid": 4242, "tid": {}, "ts": {}.870, "cat": "ac2g", "name": "ac2g"}})~",
                     corr, i < ops_per_step / 2 ? main_tid : bwd_tid, t + 10));
      const std::int64_t kdur = 12 + (i * 7) % 40;
      ev(fmt::format(R"~({{"ph": "X", "cat": "kernel", "name": "{}", "pid": 0, "tid": 7, "ts": {}.204, "dur": {}.608, "args": {{"External id": {}, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": {}, "registers per thread": 168, "shared memory": 213248, "blocks per SM": 0.969697, "warps per SM": 11.636364, "grid": [128, 1, 1], "block": [384, 1, 1], "est. achieved occupancy %": 19}}}})~",
                     kernels[k], gpu, kdur, ext, corr));
      ev(fmt::format(R"~({{"ph": "f", "id": {}, "pid": 0, "tid": 7, "ts": {}.204, "cat": "ac2g", "name": "ac2g", "bp": "e"}})~", corr,
                     gpu));
      gpu += kdur + 3;
      ++corr;
      ++ext;
      if (i % 40 == 39) {  // a gradient bucket's all-reduce on the NCCL stream, overlapping the next kernels
        ev(fmt::format(R"~({{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 4242, "tid": {}, "ts": {}.100, "dur": 40.500, "args": {{"External id": {}, "Record function id": 0, "Ev Idx": {}, "Process Group Name": "0", "Process Group Description": "default_pg", "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]", "Rank": 0, "Collective name": "allreduce", "In msg nelems": 6553600, "Out msg nelems": 6553600, "Group size": 8, "dtype": "BFloat16", "In split size": "[]", "Out split size": "[]", "Global rank start": 0, "Global rank stride": 1}}}})~",
                       bwd_tid, t + 15, ext, ext));
        ev(fmt::format(R"~({{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "pid": 0, "tid": 20, "ts": {}.912, "dur": 180.448, "args": {{"External id": {}, "queued": 0, "device": 0, "context": 1, "stream": 20, "correlation": {}, "registers per thread": 96, "shared memory": 0, "blocks per SM": 0.25, "warps per SM": 2, "grid": [32, 1, 1], "block": [640, 1, 1], "est. achieved occupancy %": 3, "Collective name": "allreduce", "In msg nelems": 6553600, "Out msg nelems": 6553600, "Group size": 8, "dtype": "BFloat16", "In split size": "[]", "Out split size": "[]", "Process Group Name": "0", "Process Group Description": "default_pg", "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]"}}}})~",
                       gpu, ext, corr++));
        ++ext;
      }
    }
    // The loss read back at the end of the step: item() → copy + stream sync.
    const std::int64_t end_cpu = step_start + step_len - 300;
    ev(fmt::format(R"~({{"ph": "X", "cat": "cpu_op", "name": "aten::item", "pid": 4242, "tid": {}, "ts": {}.000, "dur": 250.000, "args": {{"External id": {}, "Record function id": 0, "Ev Idx": {}}}}})~",
                   main_tid, end_cpu, ext, ext));
    ev(fmt::format(R"~({{"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 4242, "tid": {}, "ts": {}.000, "dur": 5.000, "args": {{"External id": {}, "cbid": 41, "correlation": {}}}}})~",
                   main_tid, end_cpu + 5, ext, corr++));
    ev(fmt::format(R"~({{"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 4242, "tid": {}, "ts": {}.000, "dur": 230.000, "args": {{"External id": {}, "cbid": 131, "correlation": {}}}}})~",
                   main_tid, end_cpu + 12, ext++, corr++));
    ts = step_start + step_len;
  }
  put("\n  ],\n  \"traceName\": \"synthetic\",\n  \"baseTimeNanoseconds\": 1700000000000000000\n}\n");
  if (std::fclose(f) != 0) throw core::Error("cannot write " + path + ": " + std::strerror(errno), "free disk space");
  return written;
}

/// Writes a synthetic NCCL log of at least `target` bytes: the version line, 24 ring channels of rank 0 to 1, then
/// AllReduce COLL lines as NCCL 2.18+ prints them (opCount in hex). Returns the bytes written.
std::uint64_t generate_nccl_log(const std::string& path, std::uint64_t target) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw core::Error("cannot create " + path + ": " + std::strerror(errno), "pass --dir DIR with room");
  std::uint64_t written = 0;
  const auto put = [&](const std::string& s) {
    if (std::fwrite(s.data(), 1, s.size(), f) != s.size()) {
      std::fclose(f);
      throw core::Error("cannot write " + path + ": " + std::strerror(errno), "free disk space");
    }
    written += s.size();
  };
  put("gpu-node-17:31337:31337 [0] NCCL INFO NCCL version 2.28.3+cuda13.0\n");
  for (int c = 0; c < 24; ++c)
    put(fmt::format("gpu-node-17:31337:31400 [0] NCCL INFO Channel {:02d}/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n", c));
  for (std::uint64_t op = 0; written < target; ++op)
    put(fmt::format("gpu-node-17:31337:31337 [0] NCCL INFO AllReduce: opCount {:x} sendbuff 0x7f3a5c000000 recvbuff "
                    "0x7f3a5c000000 count {} datatype 7 op 0 root 0 comm 0x55f68495f4f0 [nranks=2] stream "
                    "0x55f684a00000\n",
                    op, 6553600 + (op % 7) * 1024));
  if (std::fclose(f) != 0) throw core::Error("cannot write " + path + ": " + std::strerror(errno), "free disk space");
  return written;
}

struct Measure {
  bool ok = false;
  std::uint64_t json_bytes = 0, file_bytes = 0, events = 0, kept = 0;
  double read_s = 0, analyse_s = 0, wall_s = 0, cpu_s = 0;
  long maxrss_kb = 0;
  std::string error;
};

/// Reads and analyses `path` in a child process; its CPU time and peak RSS come from wait4.
Measure measure(const std::string& path, bool nccl_log) {
  int fds[2];
  if (pipe(fds) != 0) throw core::Error("pipe failed", "");
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    try {
      const auto a = std::chrono::steady_clock::now();
      if (nccl_log) {  // events = lines, kept = COLL lines kept
        analyze::NcclLog log = analyze::read_nccl_log_file(path);
        const auto b = std::chrono::steady_clock::now();
        const auto r = analyze::analyze_nccl_logs(std::span<const analyze::NcclLog>(&log, 1));
        const auto c = std::chrono::steady_clock::now();
        const auto bytes = static_cast<unsigned long long>(fs::file_size(path));
        out = fmt::format("ok {} {} {} {} {} {} {}", bytes, bytes, log.lines, log.collectives.size(),
                          std::chrono::duration<double>(b - a).count(), std::chrono::duration<double>(c - b).count(),
                          r.processes);
        if (write(fds[1], out.data(), out.size()) < 0) _exit(2);
        _exit(0);
      }
      analyze::Trace t = analyze::read_trace_file(path);
      const auto b = std::chrono::steady_clock::now();
      const std::uint64_t json = t.json_bytes, file = t.file_bytes, events = t.events_read, kept = t.events.size();
      std::vector<analyze::Trace> v;
      v.push_back(std::move(t));
      const analyze::TraceAnalysis r = analyze::analyze_traces(std::move(v), nullptr, {});
      const auto c = std::chrono::steady_clock::now();
      out = fmt::format("ok {} {} {} {} {} {} {}", json, file, events, kept, std::chrono::duration<double>(b - a).count(),
                        std::chrono::duration<double>(c - b).count(), r.ranks.size());
    } catch (const std::exception& e) {
      out = std::string("error: ") + e.what();
    }
    if (write(fds[1], out.data(), out.size()) < 0) _exit(2);
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  struct rusage ru {};
  wait4(pid, &status, 0, &ru);
  Measure m;
  m.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
            static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  m.maxrss_kb = ru.ru_maxrss;
  if (text.rfind("ok ", 0) == 0) {
    unsigned long long json, file, events, kept;
    int ranks = 0;
    if (std::sscanf(text.c_str(), "ok %llu %llu %llu %llu %lf %lf %d", &json, &file, &events, &kept, &m.read_s,
                    &m.analyse_s, &ranks) == 7) {
      m.ok = true;
      m.json_bytes = json;
      m.file_bytes = file;
      m.events = events;
      m.kept = kept;
    }
  } else {
    m.error = text.empty() ? fmt::format("child exited with status {}", status) : text;
  }
  return m;
}

void print_row(const std::string& name, const Measure& m) {
  if (!m.ok) {
    fmt::print("{:<58} {}\n", name, m.error.substr(0, 100));
    return;
  }
  const double mb = static_cast<double>(m.json_bytes) / 1e6;
  const double rss = static_cast<double>(m.maxrss_kb) * 1024.0;
  fmt::print("{:<58} {:>9.1f} {:>9.1f} {:>10} {:>9} {:>7.2f} {:>7.2f} {:>7.2f} {:>8.0f} {:>8.0f} {:>8.1f} {:>6.2f} {:>6.2f}\n",
             name, mb, static_cast<double>(m.file_bytes) / 1e6, m.events, m.kept, m.read_s, m.analyse_s, m.cpu_s,
             mb / m.cpu_s, mb / m.wall_s, rss / 1048576.0, rss / static_cast<double>(m.file_bytes),
             rss / static_cast<double>(m.json_bytes));
}

}  // namespace

int main(int argc, char** argv) {
  double size_gb = 1.0, nccl_log_mb = 64.0;
  std::string dir = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
  std::string corpus = SCALESCOPE_SHARED_CORPUS_DIR "/traces";
  bool keep = false, gen = true;
  int repeat = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "{} needs a value\n", a);
        std::exit(2);
      }
      return argv[++i];
    };
    // A number flag's whole value must be a number: std::stod alone throws out of main (abort) or takes "2x" as 2.
    const auto number = [&](const std::string& v) -> double {
      std::size_t used = 0;
      double x = 0;
      try {
        x = std::stod(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != v.size() || !std::isfinite(x) || x <= 0) {
        fmt::print(stderr, "bench_analyze_speed: error: {} '{}' is not a positive number\n", a, v);
        std::exit(2);
      }
      return x;
    };
    if (a == "--size-gb") size_gb = number(next());
    else if (a == "--nccl-log-mb") nccl_log_mb = number(next());
    else if (a == "--dir") dir = next();
    else if (a == "--corpus") corpus = next();
    else if (a == "--repeat") repeat = static_cast<int>(std::clamp(number(next()), 1.0, 1000.0));
    else if (a == "--keep") keep = true;
    else if (a == "--no-generate") gen = false;
    else {
      fmt::print(stderr, "usage: bench_analyze_speed [--size-gb X] [--nccl-log-mb X] [--dir DIR] [--keep] [--corpus DIR] [--repeat N] [--no-generate]\n");
      return 2;
    }
  }
  try {
    double load[3] = {0, 0, 0};
    getloadavg(load, 3);
    fmt::print("machine: {} online CPUs, load average {:.2f} {:.2f} {:.2f} (the machine is shared)\n",
               sysconf(_SC_NPROCESSORS_ONLN), load[0], load[1], load[2]);
    {  // the peak RSS of a child that does nothing: the floor under every row
      const pid_t pid = fork();
      if (pid == 0) _exit(0);
      int status = 0;
      struct rusage ru {};
      wait4(pid, &status, 0, &ru);
      fmt::print("peak RSS of an idle child (the floor under every row): {:.1f} MiB\n", static_cast<double>(ru.ru_maxrss) / 1024.0);
    }
    fmt::print("{:<58} {:>9} {:>9} {:>10} {:>9} {:>7} {:>7} {:>7} {:>8} {:>8} {:>8} {:>6} {:>6}\n", "trace", "JSON MB",
               "file MB", "events", "kept", "read s", "anal s", "CPU s", "MB/s/cpu", "MB/s", "RSS MiB", "RSS/f", "RSS/J");
    std::vector<std::string> paths;
    std::string synthetic, synthetic_log;
    if (gen) {
      synthetic_log = (fs::path(dir) / fmt::format("scalescope_bench_nccl_{}.log", getpid())).string();
      const std::uint64_t log_bytes = generate_nccl_log(synthetic_log, static_cast<std::uint64_t>(nccl_log_mb * 1e6));
      fmt::print("(generated {} : {:.1f} MB; its row: events = lines, kept = COLL lines)\n", synthetic_log,
                 static_cast<double>(log_bytes) / 1e6);
      paths.push_back(synthetic_log);
      synthetic = (fs::path(dir) / fmt::format("scalescope_bench_trace_{}.json", getpid())).string();
      const auto t0 = std::chrono::steady_clock::now();
      const std::uint64_t bytes = generate(synthetic, static_cast<std::uint64_t>(size_gb * 1e9));
      fmt::print("(generated {} : {:.1f} MB in {:.1f} s)\n", synthetic, static_cast<double>(bytes) / 1e6,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      paths.push_back(synthetic);
    }
    if (fs::is_directory(corpus)) {
      std::vector<std::string> found;
      for (const auto& e : fs::recursive_directory_iterator(corpus))
        if (e.is_regular_file() && e.path().extension() != ".md") found.push_back(e.path().string());
      std::sort(found.begin(), found.end());
      paths.insert(paths.end(), found.begin(), found.end());
    }
    for (const auto& p : paths)
      for (int r = 0; r < repeat; ++r) {
        const Measure m = measure(p, p == synthetic_log);
        const std::string name = p == synthetic       ? "synthetic"
                                 : p == synthetic_log ? "synthetic NCCL log (COLL lines)"
                                                      : fs::path(p).filename().string();
        print_row(name.size() > 58 ? name.substr(0, 55) + "..." : name, m);
      }
    if (!keep)
      for (const auto& p : {synthetic, synthetic_log})
        if (!p.empty()) fs::remove(p);
    fmt::print("MB = 1e6 bytes of uncompressed JSON; MB/s/cpu = MB / (user + system CPU seconds of the child); "
               "RSS/f = peak RSS / file size on disk (compressed for .gz); RSS/J = peak RSS / JSON size\n");
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_analyze_speed: {}\n", e.what());
    return 1;
  }
  return 0;
}
