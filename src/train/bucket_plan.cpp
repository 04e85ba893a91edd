#include "train/bucket_plan.h"

#include <fmt/format.h>

#include "core/error.h"

namespace scalescope::train {

void BucketConfig::validate() const {
  if (first_bucket_bytes == 0 || bucket_cap_bytes == 0)
    throw core::UsageError("bucket sizes must be at least one byte (a size in MiB that rounds to 0 bytes)",
                           "e.g. --first-bucket-mb 1 --bucket-cap-mb 25");
}

BucketPlan BucketPlan::build(const std::vector<ParameterInfo>& parameters, const BucketConfig& config,
                             std::size_t bytes_per_element) {
  std::vector<std::size_t> reverse(parameters.size());
  for (std::size_t k = 0; k < reverse.size(); ++k) reverse[k] = reverse.size() - 1 - k;
  return build_in_order(parameters, reverse, config, bytes_per_element);
}

BucketPlan BucketPlan::build_in_order(const std::vector<ParameterInfo>& parameters,
                                      const std::vector<std::size_t>& ready_order, const BucketConfig& config,
                                      std::size_t bytes_per_element) {
  config.validate();
  if (parameters.empty()) throw core::Error("the model has no parameters to bucket");
  BucketPlan plan;
  plan.parameter_offset.assign(parameters.size(), 0);
  plan.parameter_bucket.assign(parameters.size(), kNoBucket);
  std::vector<bool> listed(parameters.size(), false);
  GradientBucket current;
  std::size_t offset = 0;
  auto cap = [&] { return plan.buckets.empty() ? config.first_bucket_bytes : config.bucket_cap_bytes; };
  for (std::size_t k : ready_order) {
    if (k >= parameters.size() || listed[k])
      throw core::Error(fmt::format("bucket order names parameter {} {}", k,
                                    k >= parameters.size() ? "beyond the model's parameters" : "twice"));
    listed[k] = true;
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
  for (std::size_t k = 0; k < parameters.size(); ++k)
    if (!listed[k]) {
      plan.parameter_offset[k] = offset;
      offset += parameters[k].numel;
    }
  plan.total_numel = offset;
  return plan;
}

}  // namespace scalescope::train
