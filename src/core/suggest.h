#pragma once
// "Did you mean …?" for a word the user mistyped: a subcommand, a flag, a name of a table.

#include <string>
#include <string_view>
#include <vector>

namespace scalescope::core {

/// The candidate closest to `word` when the difference looks like a typo, else "". Words are compared without case
/// and without '-' and '_' ("--worldsizes" matches "--world-sizes" exactly); closeness is the Levenshtein distance
/// (insertions, deletions, substitutions, one each; Levenshtein 1966) of what remains, accepted up to
/// max(1, length / 3) of the longer word. Among equally close candidates the first given wins. Throws nothing.
std::string closest_name(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace scalescope::core
