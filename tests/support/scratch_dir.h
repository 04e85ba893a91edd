#pragma once
// A per-test, per-process scratch directory for tests that write files.

#include <unistd.h>

#include <filesystem>
#include <string>

namespace scalescope::testing {

/// An empty directory $TMPDIR/scalescope_test_NAME_PID (or under /tmp), emptied first when it exists. The test
/// removes it when done; the process id keeps parallel test processes (ctest -j) apart.
inline std::filesystem::path scratch_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("scalescope_test_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace scalescope::testing
