#pragma once
// The data files of data/ (one JSON document each: {"schema", "about", "rows"}), compiled into the binary by CMake
// (src/knowledge/embed_data.cmake writes them into a generated source at configure time, again whenever one changes),
// so an installed scalescope needs no data directory. Pure.

#include <string_view>

namespace scalescope::knowledge {

/// The text of data/NAME.json ("gpus", "models", "links", "nccl", "busbw_observations"); empty when the build holds
/// no such file.
std::string_view embedded_data(std::string_view name);

}  // namespace scalescope::knowledge
