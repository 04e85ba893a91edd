#pragma once
// Builders for small synthetic Kineto traces in tests: events are written as Kineto writes them (ph, cat, name,
// pid, tid, ts, dur, args), times in µs.

#include <zlib.h>

#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace scalescope::analyze::testing {

/// A complete ("X") event. `args` is the inside of the args object (without braces), may be empty.
inline std::string x_event(const std::string& cat, const std::string& name, const std::string& pid,
                           const std::string& tid, double ts, double dur, const std::string& args = "") {
  return fmt::format(R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{{}}}}})",
                     cat, name, pid, tid, ts, dur, args);
}

/// A GPU kernel on device 0, `stream` (also its tid, as Kineto writes it).
inline std::string kernel(const std::string& name, double ts, double dur, int stream, const std::string& more_args = "") {
  return x_event("kernel", name, "0", std::to_string(stream), ts, dur,
                 fmt::format(R"("device": 0, "stream": {}{}{})", stream, more_args.empty() ? "" : ", ", more_args));
}

/// NCCL metadata args as PyTorch 2.x writes them on the kernel (and on record_param_comms).
inline std::string nccl_args(const std::string& coll, long long nelems, const std::string& dtype, int group,
                             const std::string& pg = "0") {
  return fmt::format(R"("Collective name": "{}", "In msg nelems": {}, "Out msg nelems": {}, "Group size": {}, )"
                     R"("dtype": "{}", "Process Group Name": "{}", "Process Group Description": "default_pg")",
                     coll, nelems, nelems, group, dtype, pg);
}

/// A CPU-side event on process 100, thread `tid`.
inline std::string cpu(const std::string& cat, const std::string& name, double ts, double dur, int tid = 100,
                       const std::string& args = "") {
  return x_event(cat, name, "100", std::to_string(tid), ts, dur, args);
}

/// A whole trace: the object format with `top` (e.g. "distributedInfo") before traceEvents.
inline std::string trace(const std::vector<std::string>& events, const std::string& top = "") {
  std::string s = "{\n  \"schemaVersion\": 1,\n";
  if (!top.empty()) s += "  " + top + ",\n";
  s += "  \"traceEvents\": [\n";
  for (std::size_t i = 0; i < events.size(); ++i) s += "    " + events[i] + (i + 1 < events.size() ? ",\n" : "\n");
  s += "  ]\n}\n";
  return s;
}

inline std::string dist_info(int rank, int world) {
  return fmt::format(R"("distributedInfo": {{"backend": "nccl", "rank": {}, "world_size": {}}})", rank, world);
}

/// gzip-compressed `text` (one gzip member).
inline std::string gzip(const std::string& text) {
  z_stream zs{};
  if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) throw std::runtime_error("deflateInit2");
  std::string out(deflateBound(&zs, text.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate");
  out.resize(zs.total_out);
  return out;
}

}  // namespace scalescope::analyze::testing
