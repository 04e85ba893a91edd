#include "report/chrome_trace_writer.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"

namespace scalescope::analyze {
namespace {

std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// µs with three decimals from ns, exactly (no floating point).
std::string micros(std::int64_t ns) {
  const bool neg = ns < 0;
  const std::uint64_t v = neg ? static_cast<std::uint64_t>(-(ns + 1)) + 1 : static_cast<std::uint64_t>(ns);
  return fmt::format("{}{}.{:03}", neg ? "-" : "", v / 1000, v % 1000);
}

// start − t0 (≥ 0 as t0 is the earliest start), saturated: adversarial clocks must not overflow.
std::int64_t since(std::int64_t start, std::int64_t t0) {
  std::int64_t r = 0;
  return __builtin_sub_overflow(start, t0, &r) ? INT64_MAX : r;
}

}  // namespace

void write_merged_timeline(const TraceAnalysis& analysis, std::ostream& out) {
  if (analysis.timelines.empty())
    throw core::Error("no timeline was kept by the trace analysis",
                      "analyse with TraceOptions::keep_timeline = true before writing the merged timeline");
  std::int64_t t0 = INT64_MAX;
  for (const auto& tl : analysis.timelines)
    for (const auto& s : tl.slices) t0 = std::min(t0, s.start_ns);
  if (t0 == INT64_MAX) t0 = 0;

  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"scalescope analyze\",\"clock\":"
      << quoted(analysis.cross.alignment) << "},\n\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&]() -> std::ostream& {
    if (!first) out << ",\n";
    first = false;
    return out;
  };
  std::set<int> pids;
  for (std::size_t i = 0; i < analysis.timelines.size(); ++i) {
    const RankTimeline& tl = analysis.timelines[i];
    int pid = tl.rank;
    if (!pids.insert(pid).second) pid = 1'000'000 + static_cast<int>(i);  // a rank given twice keeps both
    sep() << fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":"rank {}"}}}})", pid, tl.rank);
    sep() << fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})", pid, pid);
    for (std::size_t k = 0; k < tl.tracks.size(); ++k) {
      sep() << fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", pid, k + 1,
                           quoted(tl.tracks[k]));
      sep() << fmt::format(R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
                           pid, k + 1, k);
    }
    std::vector<std::string> names(tl.names.size());
    for (const auto& s : tl.slices) {
      std::string& n = names[s.name];
      if (n.empty()) n = quoted(tl.names[s.name]);
      const std::string& track = tl.tracks[s.track];
      const char* cat = track.rfind("compute", 0) == 0         ? "compute"
                        : track.rfind("communication", 0) == 0 ? "communication"
                        : track.rfind("memcpy", 0) == 0        ? "memcpy"
                        : track == "steps"                     ? "step"
                                                               : "host_sync";
      sep() << R"({"ph":"X","cat":")" << cat << R"(","name":)" << n << ",\"pid\":" << pid
            << ",\"tid\":" << s.track + 1 << ",\"ts\":" << micros(since(s.start_ns, t0)) << ",\"dur\":" << micros(s.dur_ns)
            << '}';
    }
  }
  out << "\n]}\n";
}

void write_merged_timeline_file(const TraceAnalysis& analysis, const std::string& path) {
  if (analysis.timelines.empty())
    throw core::Error("no timeline was kept by the trace analysis",
                      "analyse with TraceOptions::keep_timeline = true before writing the merged timeline");
  // Streamed: a timeline of many ranks' kernels runs to hundreds of MB, too much to build as one string first.
  core::write_file_atomically_streamed(path, [&](std::ostream& out) { write_merged_timeline(analysis, out); });
}

}  // namespace scalescope::analyze
