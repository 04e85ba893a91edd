#pragma once
// scalescope's own JSON results read back (train, doctor, comm, capture, job, topo): the one line that says what
// each concluded, for `analyze`'s report of a file.

#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace scalescope::analyze {

/// The line that says what a scalescope report of `schema` concluded, and the same as JSON {"schema", "summary", …}.
/// Throws core::Error for a doctor report without measured points or a train report without its config and step
/// times (neither command writes one); nlohmann::json::exception for content of the wrong type.
std::pair<std::string, nlohmann::json> summarize_scalescope_json(const nlohmann::json& report, const std::string& schema);

}  // namespace scalescope::analyze
