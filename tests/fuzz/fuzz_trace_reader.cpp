// libFuzzer target: the Kineto trace reader, then the analysis, JSON and timeline over whatever it accepted.
// Any input must end in a result or a core::Error; crashes, sanitizer reports and other exceptions are bugs.

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string_view>

#include "report/chrome_trace_writer.h"
#include "analysis/trace_analysis.h"
#include "core/error.h"

using namespace scalescope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  analyze::TraceReadOptions read;
  read.max_value_bytes = std::size_t{1} << 20;  // keeps each run small; the limit's own path is exercised too
  analyze::Trace t;
  try {
    t = analyze::read_trace_bytes(bytes, "fuzz.json", read);
  } catch (const core::Error&) {
    return 0;
  }
  // Two ranks from one input: the same trace as rank 0 and as rank 1, plus itself as the baseline.
  analyze::Trace other = t;
  if (!other.distributed) other.distributed.emplace();
  other.distributed->rank = 1;
  std::vector<analyze::Trace> traces;
  traces.push_back(t);
  traces.push_back(std::move(other));
  analyze::TraceOptions options;
  options.keep_timeline = true;
  const analyze::TraceAnalysis a = analyze::analyze_traces(std::move(traces), &t, options);
  const nlohmann::json j = a;
  (void)j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::ostringstream timeline;
  analyze::write_merged_timeline(a, timeline);
  return 0;
}
