#pragma once
// Reading JSON files with errors that name the file, and a private temporary directory for hand-overs
// between scalescope's launcher and its rank processes.

#include <string>

#include <nlohmann/json.hpp>

namespace scalescope::core {

/// Parses the JSON file at `path`. `what` names it in errors ("rank 0's result"). Throws core::Error when
/// the file cannot be read or is not valid JSON.
nlohmann::json read_json_file(const std::string& path, const std::string& what);

/// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TemporaryDirectory {
 public:
  /// Throws core::Error when the directory cannot be created (e.g. TMPDIR not writable).
  TemporaryDirectory();
  ~TemporaryDirectory();
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace scalescope::core
