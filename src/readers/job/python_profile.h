#pragma once
// Reads a Python profile as cProfile / pstats print it ("ncalls tottime percall cumtime percall
// filename:lineno(function)"), whole or only its head, sorted any way, with "N/M" recursive call counts (calls N,
// primitive_calls M), built-ins written "{method 'acquire' of '_thread.lock' objects}" / "{built-in method
// builtins.exec}" (Python 3), ":0(acquire)" (profile module) or "~:0(<built-in method builtins.exec>)" (Python
// 3.12) — all read as function "acquire" / "exec" with file "" — and "<frozen …>:N(f)" or Windows paths. Emits one
// diagnose::ProfileRow per row (seconds; provenance the row's line), and for the "N function calls (M primitive
// calls) in S seconds" header a Measurement {quantity "profiled time", unit "s", value S}. Rows whose location was
// wrapped onto the next line are joined; quote markers and "[rankN]:" prefixes are skipped; a cut last row is
// noted. Pure; nothing here throws.

#include <string>
#include <string_view>

#include "facts/facts.h"

namespace scalescope::analyze {

/// Whether `text` has a cProfile column header or at least two rows of that shape.
bool looks_like_python_profile(std::string_view text);

/// Reads every row. Never throws.
diagnose::Reading read_python_profile(std::string_view text, const std::string& source);

}  // namespace scalescope::analyze
