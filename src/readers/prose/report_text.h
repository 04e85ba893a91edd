#pragma once
// Reads what a person wrote about their job in prose — an issue's text, a report pasted beside the logs, a forum post
// — for the claims the diagnosis can use: the job hangs; it works (or only works, or works slowly) with a setting or
// change; it works or hangs between GPUs joined by a given path class; it runs in a container (and with which
// flags); how many nodes; how much slower than expected; and the GPUs it names ("2x NVIDIA RTX 5880 Ada"). Emits
// diagnose::Claim facts (facts/facts.h), GpuSeen for GPU products named with a count, WorldShape for stated node
// counts, and Setting facts for NAME=value settings the text states as in force (not those it says it tried). Each
// claim's provenance is its sentence. Code blocks and quoted log lines inside the prose are left to the other readers.
// Pure; never throws.

#include <optional>
#include <string>
#include <string_view>

#include "facts/facts.h"

namespace scalescope::analyze {

/// Whether `text` is mostly prose (sentences) and holds at least one claim this reader reads.
bool looks_like_report_text(std::string_view text);

/// looks_like_report_text and read_report_text in one parse: the reading when `text` is prose, nullopt when not. A
/// text longer than detection looks at (256 KiB or 4,000 lines) is judged by its head and then read whole. Never
/// throws.
std::optional<diagnose::Reading> read_report_text_if_prose(std::string_view text, const std::string& source);

/// Reads the claims of `text`; `source` names it in provenance. Never throws.
diagnose::Reading read_report_text(std::string_view text, const std::string& source);

}  // namespace scalescope::analyze
