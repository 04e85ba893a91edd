#pragma once
// The diagnosis's fixes with the predictor's figure (issue #28, item 4): for a cause the model covers, the measured
// configuration and the fixed one are both predicted, and the measured step is scaled by their ratio, so the figure
// stays anchored to what was measured: "overlap on: 51.1 → 44.2 ms per step, efficiency 80 → 93 %".
//
// Covered: no-overlap (bucketed overlap on), bandwidth-bound-gradients (bf16 gradients, when they were fp32),
// comm-bound-small-model (the per-rank batch doubled), and the path causes nccl-env-override,
// pcie-host-bridge-path, cross-socket-path, p2p-blocked-acs-iommu, pcie-link-degraded, nvlink-degraded (the link
// at the machine's expected busbw instead of the measured one, when that is ≥ 20 % faster).

#include <nlohmann/json.hpp>

#include "diagnose/engine.h"

namespace scalescope::predict {

/// Sets `predicted` on the primary and contributing causes of `d` that the model covers, from a scalescope doctor
/// report (its one-rank point and its largest world size; its "topology" for the expected busbw) or a train report
/// at world size ≥ 2 (its own phases as the per-rank compute). Leaves `d` as it was when the report lacks what is
/// needed. Throws nothing.
void attach_fix_gains(diagnose::Diagnosis& d, const nlohmann::json& report);

}  // namespace scalescope::predict
