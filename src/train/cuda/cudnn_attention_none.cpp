// CudnnAttention for builds without cuDNN (CMake found no cuDNN 9 or no cudnn-frontend, or SCALESCOPE_CUDNN=OFF):
// every entry point throws, naming how to build it in. GptConfig never selects it in such a build.
#include "train/cuda/cudnn_attention.h"

#include "core/error.h"

namespace scalescope::train::gpt_kernels {

namespace {
[[noreturn]] void not_built() {
  throw core::Error("this scalescope was built without cuDNN's fused attention",
                    "install cuDNN 9 and cudnn-frontend (scripts/setup.sh --cudnn-frontend), rebuild, or use "
                    "--attention flash");
}
}  // namespace

struct CudnnAttention::Plans {};

CudnnAttention::CudnnAttention(const FlashAttentionShape&) { not_built(); }
CudnnAttention::~CudnnAttention() = default;
const FlashAttentionShape& CudnnAttention::shape() const { not_built(); }
std::size_t CudnnAttention::workspace_bytes() const { not_built(); }
std::string CudnnAttention::library_version() { not_built(); }
void CudnnAttention::forward(cudaStream_t, const __nv_bfloat16*, __nv_bfloat16*, float*, void*) const { not_built(); }
void CudnnAttention::backward(cudaStream_t, const __nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*,
                              const float*, __nv_bfloat16*, void*) const {
  not_built();
}

}  // namespace scalescope::train::gpt_kernels
