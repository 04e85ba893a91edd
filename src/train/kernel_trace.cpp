#include "train/kernel_trace.h"

#include <string_view>

#include <nlohmann/json.hpp>

namespace scalescope::train {
namespace {

/// ns → µs with three decimals, as a JSON number (Kineto writes fractional µs).
double microseconds(std::int64_t ns) { return static_cast<double>(ns) / 1e3; }

nlohmann::json complete_event(const char* category, const std::string& name, nlohmann::json pid, nlohmann::json tid,
                              std::int64_t start_ns, std::int64_t end_ns) {
  return {{"ph", "X"},
          {"cat", category},
          {"name", name},
          {"pid", std::move(pid)},
          {"tid", std::move(tid)},
          {"ts", microseconds(start_ns)},
          {"dur", microseconds(end_ns > start_ns ? end_ns - start_ns : 0)}};
}

}  // namespace

std::string readable_kernel_name(std::string name) {
  static constexpr std::string_view kAnonymous = "(anonymous namespace)::";
  for (auto at = name.find(kAnonymous); at != std::string::npos; at = name.find(kAnonymous, at))
    name.erase(at, kAnonymous.size());
  if (name.rfind("void ", 0) == 0) name.erase(0, 5);
  // The parameter list opens at the first '(' outside template arguments.
  int depth = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '<') ++depth;
    else if (name[i] == '>' && depth > 0) --depth;
    else if (name[i] == '(' && depth == 0 && i > 0) {
      name.resize(i);
      break;
    }
  }
  return name;
}

std::string kernel_trace_json(const KernelTrace& trace) {
  nlohmann::json events = nlohmann::json::array();
  for (std::size_t i = 0; i < trace.steps.size(); ++i) {
    const auto& s = trace.steps[i];
    events.push_back(complete_event("user_annotation", "ProfilerStep#" + std::to_string(i), trace.process_id, s.thread,
                                    s.begin_ns, s.end_ns));
  }
  for (const auto& c : trace.api_calls) {
    auto e = complete_event(c.driver ? "cuda_driver" : "cuda_runtime", c.name, trace.process_id, c.thread, c.start_ns,
                            c.end_ns);
    e["args"] = {{"correlation", c.correlation}};
    events.push_back(std::move(e));
  }
  for (const auto& k : trace.kernels) {
    auto e = complete_event("kernel", k.name, k.device, k.stream, k.start_ns, k.end_ns);
    e["args"] = {{"device", k.device}, {"stream", k.stream}, {"correlation", k.correlation}};
    if (k.grid[0] > 0 && k.block[0] > 0) {
      e["args"]["grid"] = k.grid;
      e["args"]["block"] = k.block;
    }
    events.push_back(std::move(e));
  }
  const nlohmann::json doc = {
      {"schemaVersion", 1},
      {"distributedInfo", {{"backend", trace.backend}, {"rank", trace.rank}, {"world_size", trace.world_size}}},
      {"traceEvents", std::move(events)},
      {"traceName", "scalescope train --kernel-trace"}};
  return doc.dump() + "\n";
}

}  // namespace scalescope::train
