#pragma once
// Internal to the trace reader (trace_reader.cpp): how it reads an event's time and name — microseconds as exact
// integer nanoseconds, the event kind of a category, the runtime calls and CPU operations the analysis keeps, which
// CPU operators count as the thread's own work, and the categories of the NCCL profiler plugin.

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string_view>

#include "readers/trace/trace_reader.h"

namespace scalescope::analyze::trace_reader_internal {

// ---------------------------------------------------------------------------------------------------------
// Numbers.

/// A JSON number in microseconds as integer nanoseconds, exactly for up to three decimals (rounded beyond).
/// Nothing for text that is not a finite number within ±9.2e15 µs.
inline std::optional<std::int64_t> us_to_ns(std::string_view t) {
  while (!t.empty() && (t.back() == ' ' || t.back() == '\n' || t.back() == '\r' || t.back() == '\t'))
    t.remove_suffix(1);
  if (t.empty()) return std::nullopt;
  bool neg = false;
  std::size_t i = 0;
  if (t[0] == '-') {
    neg = true;
    ++i;
  }
  constexpr std::uint64_t kMaxUs = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max() / 1000) - 1;
  std::uint64_t ip = 0;
  const std::size_t digits_start = i;
  while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
    ip = ip * 10 + static_cast<std::uint64_t>(t[i] - '0');
    if (ip > kMaxUs) return std::nullopt;
    ++i;
  }
  if (i == digits_start) return std::nullopt;
  std::uint64_t frac = 0;
  int frac_digits = 0;
  bool round_up = false;
  if (i < t.size() && t[i] == '.') {
    ++i;
    const std::size_t fs = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
      if (frac_digits < 3) {
        frac = frac * 10 + static_cast<std::uint64_t>(t[i] - '0');
        ++frac_digits;
      } else if (frac_digits == 3) {
        round_up = t[i] >= '5';
        ++frac_digits;
      }
      ++i;
    }
    if (i == fs) return std::nullopt;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    const std::string s(t);
    char* endp = nullptr;
    const double v = std::strtod(s.c_str(), &endp);
    if (endp != s.c_str() + s.size() || !std::isfinite(v) || std::fabs(v) > static_cast<double>(kMaxUs)) return std::nullopt;
    return static_cast<std::int64_t>(std::llround(v * 1000.0));
  }
  if (i != t.size()) return std::nullopt;
  while (frac_digits < 3) {
    frac *= 10;
    ++frac_digits;
  }
  const auto v = static_cast<std::int64_t>(ip * 1000 + frac + (round_up ? 1 : 0));
  return neg ? -v : v;
}

inline bool ieq(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

inline bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

inline bool contains_icase(std::string_view s, std::string_view needle) {
  if (needle.size() > s.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= s.size(); ++i)
    if (ieq(s.substr(i, needle.size()), needle)) return true;
  return false;
}

inline EventKind kind_of_category(std::string_view cat) {
  // Kineto's spelling first (exact), then any case and the older names.
  if (cat == "kernel") return EventKind::kernel;
  if (cat == "cpu_op") return EventKind::cpu_op;
  if (cat == "cuda_runtime") return EventKind::cuda_runtime;
  if (cat == "ac2g" || cat == "python_function" || cat == "fwdbwd" || cat == "async_cpu_to_gpu") return EventKind::other;
  if (ieq(cat, "kernel")) return EventKind::kernel;
  if (ieq(cat, "gpu_memcpy") || ieq(cat, "memcpy")) return EventKind::memcpy;
  if (ieq(cat, "gpu_memset") || ieq(cat, "memset")) return EventKind::memset;
  if (ieq(cat, "cuda_runtime") || ieq(cat, "runtime")) return EventKind::cuda_runtime;
  if (ieq(cat, "cuda_driver")) return EventKind::cuda_driver;
  if (ieq(cat, "cpu_op") || ieq(cat, "operator")) return EventKind::cpu_op;
  if (ieq(cat, "user_annotation")) return EventKind::user_annotation;
  return EventKind::other;
}

// Runtime/driver calls the analysis needs: launches (to link kernels to CPU annotations and steps), host
// synchronisation, copies (blocking copies are synchronisation too) and memsets.
inline bool is_kept_api_call(std::string_view n) {
  return n.find("Launch") != std::string_view::npos || n.find("ynchronize") != std::string_view::npos ||
         n.find("Memcpy") != std::string_view::npos || n.find("emcpy") != std::string_view::npos ||
         n.find("emset") != std::string_view::npos;  // memsets: their GPU side belongs to a step too
}

// Category names that the NCCL example profiler plugin writes (and Kineto does not).
inline bool is_nccl_plugin_category(std::string_view cat) {
  return cat == "GROUP_API" || cat == "KERNEL_LAUNCH" || cat == "P2P_API" || cat == "COLL_API" || cat == "PROXY" ||
         cat == "P2P" || cat == "COLL" || cat == "NET";
}

// CPU ops and annotations the analysis needs: steps, item()/scalar reads (host syncs), collectives, data loading.
inline bool is_kept_cpu_name(std::string_view n) {
  return starts_with(n, "ProfilerStep#") || n == "aten::item" || n == "aten::_local_scalar_dense" ||
         n == "record_param_comms" || starts_with(n, "nccl:") || is_cpu_collective_name(n) ||
         starts_with(n, "c10d::") || contains_icase(n, "dataloader") || starts_with(n, "Optimizer.step#") ||
         // DDP's own ranges (trace_analysis.h, RankAnalysis::ddp_ranges)
         starts_with(n, "DistributedDataParallel.") || n.find("ddp.reducer::") != std::string_view::npos ||
         starts_with(n, "_DDPSink");
}

/// Whether a CPU operator's time is the thread's own work: not a record_function range that only encloses
/// operators ("ProfilerStep#3", "Optimizer.step#SGD.step", "enumerate(DataLoader)#…", "DistributedDataParallel.
/// forward", "## forward ##"), and not a collective (its time is communication, or a wait for it).
inline bool counts_as_cpu_work(std::string_view n) {
  return n.find('#') == std::string_view::npos && !starts_with(n, "DistributedDataParallel.") &&
         !starts_with(n, "c10d::") && !starts_with(n, "nccl:") && !is_cpu_collective_name(n) && n != "record_param_comms";
}

}  // namespace scalescope::analyze::trace_reader_internal
