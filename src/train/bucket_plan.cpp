#include "train/bucket_plan.h"

#include "core/error.h"

namespace scalescope::train {

void BucketConfig::validate() const {
  if (first_bucket_bytes == 0 || bucket_cap_bytes == 0)
    throw core::UsageError("bucket sizes must be at least one byte (a size in MiB that rounds to 0 bytes)",
                           "e.g. --first-bucket-mb 1 --bucket-cap-mb 25");
}

BucketPlan BucketPlan::build(const std::vector<ParameterInfo>& parameters, const BucketConfig& config,
                             std::size_t bytes_per_element) {
  config.validate();
  if (parameters.empty()) throw core::Error("the model has no parameters to bucket");
  BucketPlan plan;
  plan.parameter_offset.assign(parameters.size(), 0);
  plan.parameter_bucket.assign(parameters.size(), 0);
  GradientBucket current;
  std::size_t offset = 0;
  auto cap = [&] { return plan.buckets.empty() ? config.first_bucket_bytes : config.bucket_cap_bytes; };
  for (std::size_t k = parameters.size(); k-- > 0;) {
    plan.parameter_offset[k] = offset;
    plan.parameter_bucket[k] = plan.buckets.size();
    current.parameters.push_back(k);
    current.numel += parameters[k].numel;
    offset += parameters[k].numel;
    if (current.numel * bytes_per_element >= cap()) {
      plan.buckets.push_back(std::move(current));
      current = GradientBucket{};
      current.offset = offset;
    }
  }
  if (!current.parameters.empty()) plan.buckets.push_back(std::move(current));
  plan.total_numel = offset;
  return plan;
}

}  // namespace scalescope::train
