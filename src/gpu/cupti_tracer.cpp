#include "gpu/cupti_tracer.h"

#include <cupti.h>
#include <cxxabi.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "core/error.h"

namespace scalescope::gpu {
namespace {

constexpr std::size_t kBufferBytes = 8u << 20;  // per CUPTI record buffer
constexpr std::size_t kRecordAlignment = 8;     // CUPTI requires 8-byte aligned buffers

void check(CUptiResult r, const char* call) {
  if (r == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  throw core::Error(fmt::format("CUPTI {} failed: {}", call, text ? text : "unknown error"),
                    "another profiler (Nsight Systems, ncu, PyTorch's profiler) may hold CUPTI: run without it");
}

/// The demangled name, shortened by train::readable_kernel_name; the mangled one when it does not demangle.
std::string kernel_name(const char* mangled) {
  if (mangled == nullptr) return "?";
  int status = 0;
  char* plain = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && plain ? train::readable_kernel_name(plain) : mangled;
  std::free(plain);
  return name;
}

std::string api_name(CUpti_CallbackDomain domain, CUpti_CallbackId id) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, id, &name) == CUPTI_SUCCESS && name != nullptr) return name;
  return fmt::format("api#{}", id);
}

/// The records decoded so far; CUPTI's completion callback runs on its own thread.
struct Collector {
  std::mutex mutex;
  train::KernelTrace trace;
  std::size_t dropped = 0;
};
Collector& collector() {
  static Collector c;
  return c;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kRecordAlignment, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  Collector& c = collector();
  std::lock_guard<std::mutex> lock(c.mutex);
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        train::TracedKernel t;
        t.name = kernel_name(k->name);
        t.device = static_cast<int>(k->deviceId);
        t.stream = static_cast<int>(k->streamId);
        t.start_ns = static_cast<std::int64_t>(k->start);
        t.end_ns = static_cast<std::int64_t>(k->end);
        t.correlation = static_cast<std::int64_t>(k->correlationId);
        t.grid = {k->gridX, k->gridY, k->gridZ};
        t.block = {k->blockX, k->blockY, k->blockZ};
        c.trace.kernels.push_back(std::move(t));
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        const bool driver = record->kind == CUPTI_ACTIVITY_KIND_DRIVER;
        c.trace.api_calls.push_back({api_name(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid),
                                     driver, a->threadId, static_cast<std::int64_t>(a->start),
                                     static_cast<std::int64_t>(a->end), static_cast<std::int64_t>(a->correlationId)});
        break;
      }
      default:
        break;
    }
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS) c.dropped += dropped;
  std::free(buffer);
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME,
                                         CUPTI_ACTIVITY_KIND_DRIVER};

class CuptiTracer final : public train::KernelTracer {
 public:
  void start() override {
    static std::once_flag registered;
    std::call_once(registered, [] {
      check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
    });
    {
      Collector& c = collector();
      std::lock_guard<std::mutex> lock(c.mutex);
      c.trace = {};
      c.dropped = 0;
    }
    for (auto kind : kKinds) check(cuptiActivityEnable(kind), "cuptiActivityEnable");
  }

  std::int64_t now_ns() const override {
    uint64_t t = 0;
    check(cuptiGetTimestamp(&t), "cuptiGetTimestamp");
    return static_cast<std::int64_t>(t);
  }

  train::KernelTrace stop() override {
    for (auto kind : kKinds) check(cuptiActivityDisable(kind), "cuptiActivityDisable");
    check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
    Collector& c = collector();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.dropped > 0)
      throw core::Error(fmt::format("CUPTI dropped {} activity records: the kernel trace would be incomplete", c.dropped),
                        "trace fewer steps (--steps-per-round)");
    train::KernelTrace out = std::move(c.trace);
    c.trace = {};
    out.process_id = static_cast<std::uint32_t>(getpid());
    return out;
  }
};

}  // namespace

std::unique_ptr<train::KernelTracer> make_cupti_tracer() { return std::make_unique<CuptiTracer>(); }

}  // namespace scalescope::gpu
