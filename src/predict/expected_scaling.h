#pragma once
// `scalescope predict --model NAME --link GPU:PATH --gpus 2,4,8` with no run: what data-parallel training of a named
// model on named hardware should give, before anything is measured — the expectation engine (knowledge/expect.h)
// over the model table and the link's busbw band, one row of bands per GPU count. Each figure is a band with its
// assumptions (batch, precision, utilisation), not a prediction of one job: `predict RUN --link …` replays a measured
// run's buckets and is the sharper answer once a run exists. Pure C++.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "knowledge/expect.h"

namespace scalescope::predict {

struct ExpectedRow {
  int gpus = 0;
  knowledge::StepExpectation step;
};

struct ExpectedScaling {
  const knowledge::ModelSpec* model = nullptr;
  const topo::GpuSpec* gpu = nullptr;
  knowledge::LinkAssumption link;
  knowledge::Band busbw;
  std::optional<double> batch_per_gpu;   ///< samples (or sequences) per GPU per step, when given
  std::vector<ExpectedRow> rows;
  std::vector<std::string> assumptions;
};

/// The expectation for `model` (a name of the model table, as users write it) over `link` ("GPU:PATH" — "H200:NV18",
/// "RTX 4090:PHB", "A100 SXM4 80GB:NV12" — or "GPU:net:GBIT" for GPUs in separate nodes joined by one port of GBIT
/// Gb/s) at each count of `gpus` (≥ 2). `batch_per_gpu`: samples or sequences per GPU per step (sequences of the
/// model's context length for token models); absent: a typical band is assumed. Throws core::UsageError naming what
/// is unknown (a model or GPU the tables lack, with the closest names) or malformed.
ExpectedScaling expect_scaling(std::string_view model, std::string_view link, const std::vector<int>& gpus,
                               std::optional<double> batch_per_gpu, knowledge::Precision precision);

/// The terminal table: one row per GPU count (gradient GB, all-reduce ms, compute ms, comm ratio, efficiency, each
/// low–high), then the assumptions and the seed's verdict thresholds the comm ratio is read against.
std::string render_expected(const ExpectedScaling& e);

/// {"schema": "scalescope.expect/1", "model", "gpu", "link", "busbw_gbps": [low, high], "rows": [{"gpus",
/// "gradient_bytes", "allreduce_s", "compute_s", "comm_ratio", "efficiency"} each [low, high]], "assumptions"}.
nlohmann::json expected_json(const ExpectedScaling& e);

}  // namespace scalescope::predict
