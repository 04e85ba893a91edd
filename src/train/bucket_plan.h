#pragma once
// DDP's gradient bucketing (PyTorch torch/nn/parallel/distributed.py, Reducer): parameters are packed into
// buckets in reverse order of their definition, because backward produces gradients roughly in that order;
// the first bucket is small (1 MiB by default, DDP's `_DEFAULT_FIRST_BUCKET_BYTES`) so the first all-reduce
// starts early, the rest are capped at 25 MiB (DDP's `bucket_cap_mb` default). A bucket is closed once
// its size reaches the cap, so a parameter larger than the cap gets a bucket of its own.
// Pure logic: no device, no communicator.

#include <cstddef>
#include <vector>

#include "train/model.h"

namespace scalescope::train {

/// Bucket sizes, in bytes of gradient (fp32: 4 bytes per element).
struct BucketConfig {
  std::size_t first_bucket_bytes = 1u << 20;  ///< DDP default 1 MiB
  std::size_t bucket_cap_bytes = 25u << 20;   ///< DDP default 25 MiB
  /// Throws core::UsageError if a size is 0.
  void validate() const;
};

/// One bucket: a contiguous range of the flat gradient buffer holding whole parameters.
struct GradientBucket {
  std::size_t offset = 0;                 ///< first element in the flat gradient buffer
  std::size_t numel = 0;                  ///< elements in the bucket
  std::vector<std::size_t> parameters;    ///< parameter indices (forward numbering), in bucket order
};

/// Where every gradient lives and which bucket it belongs to.
struct BucketPlan {
  std::vector<GradientBucket> buckets;          ///< in all-reduce order (build: bucket 0 = last parameters)
  std::vector<std::size_t> parameter_offset;    ///< per parameter: element offset in the flat buffer
  std::vector<std::size_t> parameter_bucket;    ///< per parameter: index of its bucket
  std::size_t total_numel = 0;                  ///< elements in the flat buffer

  /// parameter_bucket of a parameter left out of every bucket (build_in_order): its gradient is not all-reduced.
  static constexpr std::size_t kNoBucket = static_cast<std::size_t>(-1);

  /// Packs `parameters` (forward order) in reverse order, `bytes_per_element` bytes each (4 for fp32).
  /// Parameters with numel 0 are placed in the current bucket and take no room.
  /// Throws core::Error when `parameters` is empty.
  static BucketPlan build(const std::vector<ParameterInfo>& parameters, const BucketConfig& config,
                          std::size_t bytes_per_element = 4);
  /// As build, but packs the parameters listed in `ready_order` (indices into `parameters`, in the order backward
  /// completes their gradients) in that order. Parameters not listed get parameter_bucket = kNoBucket and their
  /// gradients lie after every bucket in the flat buffer, in forward order. Throws core::Error when `parameters`
  /// is empty or `ready_order` names an index twice or one out of range.
  static BucketPlan build_in_order(const std::vector<ParameterInfo>& parameters, const std::vector<std::size_t>& ready_order,
                                   const BucketConfig& config, std::size_t bytes_per_element = 4);
};

}  // namespace scalescope::train
