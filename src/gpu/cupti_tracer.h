#pragma once
// train::KernelTracer on CUPTI's activity API (CUDA toolkit, cupti_activity.h): concurrent-kernel records (start
// and end on the GPU, stream, correlation id) and runtime/driver API records (host thread, correlation id).
// CUPTI hands completed record buffers to a callback on its own thread; they are decoded there into one
// process-wide list, which stop() takes after flushing. CUPTI allows one subscriber per process, so there is one
// tracer per process (make_cupti_tracer returns the same recorder each time).

#include <memory>

#include "train/kernel_trace.h"

namespace scalescope::gpu {

/// The process's CUPTI recorder; nullptr when scalescope was built without CUPTI (cupti_tracer_none.cpp).
/// Nothing is registered with CUPTI until start().
std::unique_ptr<train::KernelTracer> make_cupti_tracer();

}  // namespace scalescope::gpu
