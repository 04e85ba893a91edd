#pragma once
// Error checks for CUDA runtime, cuBLAS(Lt) and NCCL calls: a failed call becomes a core::Error that names
// the call, the file and line and the library's own message, so a user sees the cause instead of a hang.

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>

#include "core/error.h"

namespace scalescope::gpu {

/// Throws core::Error naming the failed call, where it is and CUDA's message. The remedy depends on the error: no
/// driver or no device (the first CUDA call on a machine without a GPU) says to run where there is one; anything
/// else, to check the GPU's health and memory.
[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  const bool no_gpu = err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice;
  throw core::Error(std::string("CUDA error in ") + call + " at " + file + ":" + std::to_string(line) + ": " +
                        cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")",
                    no_gpu ? "no usable NVIDIA GPU or driver here: run on a machine with an NVIDIA GPU and its driver "
                             "(nvidia-smi lists it), and check CUDA_VISIBLE_DEVICES"
                           : "check that the GPU is healthy (nvidia-smi) and that the model fits in its memory");
}

[[noreturn]] inline void throw_cublas_error(cublasStatus_t st, const char* call, const char* file, int line) {
  throw core::Error(std::string("cuBLAS error in ") + call + " at " + file + ":" + std::to_string(line) +
                        ": status " + std::to_string(static_cast<int>(st)),
                    "this is a bug or an unsupported GEMM shape; report it with the command line");
}

}  // namespace scalescope::gpu

#define SCALESCOPE_CUDA_CHECK(call)                                                          \
  do {                                                                                       \
    cudaError_t scalescope_err_ = (call);                                                    \
    if (scalescope_err_ != cudaSuccess)                                                      \
      ::scalescope::gpu::throw_cuda_error(scalescope_err_, #call, __FILE__, __LINE__);       \
  } while (0)

/// Checks the last kernel launch (launch-configuration errors) without synchronising.
#define SCALESCOPE_CUDA_CHECK_LAUNCH() SCALESCOPE_CUDA_CHECK(cudaGetLastError())

#define SCALESCOPE_CUBLAS_CHECK(call)                                                        \
  do {                                                                                       \
    cublasStatus_t scalescope_st_ = (call);                                                  \
    if (scalescope_st_ != CUBLAS_STATUS_SUCCESS)                                             \
      ::scalescope::gpu::throw_cublas_error(scalescope_st_, #call, __FILE__, __LINE__);      \
  } while (0)
