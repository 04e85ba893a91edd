#pragma once
// Pieces the GPT's kernel files (gpt_kernels_*.cu, flash_attention.cu) share; internal to src/train/cuda: the
// launchers' argument checks, the shared-memory opt-in and the packing of two fp32 values into one bf16 pair.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "gpu/cuda_check.h"

namespace scalescope::train::gpt_kernels::support {

/// Throws std::invalid_argument("<who>: <what>") unless ok: a launcher refusing a shape, a size or a pointer.
inline void require(bool ok, const char* who, const std::string& what) {
  if (!ok) throw std::invalid_argument(std::string(who) + ": " + what);
}

/// The same for a pointer that 16-byte vector accesses cannot use ("<name> is not 16-byte aligned").
inline void require_aligned(const void* p, const char* who, const char* name) {
  require(reinterpret_cast<std::uintptr_t>(p) % 16 == 0, who, std::string(name) + " is not 16-byte aligned");
}

/// Opts `kernel` into `bytes` of dynamic shared memory (above the default 48 KB) and the largest shared-memory
/// carveout, so that shared memory does not cap the blocks per SM below what the registers allow. Per launch (the
/// attributes belong to the current device); core::Error from CUDA when `bytes` exceeds the device's limit.
template <class Kernel>
void allow_shared_memory(Kernel kernel, int bytes) {
  SCALESCOPE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  SCALESCOPE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                             cudaSharedmemCarveoutMaxShared));
}

/// bf16(lo) in the low 16 bits and bf16(hi) in the high ones (round to nearest even): the element at the lower
/// address of a 4-byte store, and the register layout of mma.sync's bf16 fragments.
__device__ __forceinline__ unsigned pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&v);
}

}  // namespace scalescope::train::gpt_kernels::support
