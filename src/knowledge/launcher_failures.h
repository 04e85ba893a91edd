#pragma once
// Launchers that fail on their own before any worker runs (data/launcher_failures.json): what the failure looks
// like and the fix, each row with its source. Pure.

#include <span>
#include <string>
#include <string_view>

namespace scalescope::knowledge {

struct LauncherFailure {
  std::string launcher;   ///< "torchrun"
  std::string exception;  ///< text the job's first exception contains
  std::string frame;      ///< text the traceback's last frame contains
  std::string when;       ///< the versions it was seen with
  std::string fix;
  std::string source;
};

/// Every row, validated at first use. Throws core::Error naming the row when the data file is malformed (a row
/// without launcher, exception, frame, fix or source).
std::span<const LauncherFailure> launcher_failures();

/// The row whose exception and frame texts `exception` and `frame` contain; nullptr when none does.
const LauncherFailure* known_launcher_failure(std::string_view exception, std::string_view frame);

}  // namespace scalescope::knowledge
