#pragma once
// Reading JSON files with errors that name the file, and a private temporary directory for hand-overs
// between scalescope's launcher and its rank processes.

#include <string>

#include <nlohmann/json.hpp>

namespace scalescope::core {

/// Parses the JSON file at `path`. `what` names it in errors ("rank 0's result"). Throws core::Error when
/// the file cannot be read or is not valid JSON.
nlohmann::json read_json_file(const std::string& path, const std::string& what);

/// Free bytes a TemporaryDirectory's file system must have: the ranks' results and Open MPI's session files
/// (about 8 MB per CPU run) go there.
inline constexpr unsigned long long kMinFreeTemporaryBytes = 32ull << 20;

/// A fresh directory "scalescope-job-XXXXXX" under $TMPDIR (or /tmp), removed with its contents on destruction.
/// It holds a file "owner": "HOST PID START PIDNS\n", the creating process's host name, id, start time (clock ticks
/// since boot, /proc/PID/stat field 22) and pid namespace (/proc/self/ns/pid, "pid:[4026531836]"), so that a later
/// run can tell a directory whose owner was killed (SIGKILL runs no destructor) from one in use.
class TemporaryDirectory {
 public:
  /// First removes the directories of this user's earlier runs on this host whose owner is gone (see
  /// remove_orphaned_job_directories). Throws core::Error when the directory cannot be created (e.g. TMPDIR not
  /// writable) or its file system has less than kMinFreeTemporaryBytes free.
  TemporaryDirectory();
  ~TemporaryDirectory();
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// Removes the "scalescope-job-*" directories directly under `base` that belong to this user, name this host and
/// this pid namespace in their "owner" file, and whose owning process is gone: no process has that id, or it has a
/// later start time (the id was reused). Directories without an owner file, of another user, host or pid namespace
/// (a TMPDIR shared with other machines or containers), symbolic links, and those whose owner lives are kept.
/// Errors (a directory another run removes first, one that cannot be read) are skipped: this is tidying, never a
/// reason to fail. Returns how many were removed.
int remove_orphaned_job_directories(const std::string& base);

}  // namespace scalescope::core
