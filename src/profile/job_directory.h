#pragma once
// The directory `scalescope profile` fills with one job's record (job.json, job.log, the ranks' captures, traces,
// NCCL logs): a --keep DIR the user named, claimed for this run alone, or a fresh temporary one.

#include <string>

namespace scalescope::profile {

/// The name of the lock file inside a kept job directory. It starts with '.', so `analyze DIR` passes it over.
inline constexpr const char* kJobDirectoryLock = ".scalescope-profile.lock";

class JobDirectory {
 public:
  /// `keep` empty: a new directory "scalescope-profile.XXXXXX" under $TMPDIR (else /tmp), removed by remove().
  /// `keep` given: that directory, created (with its parents) when absent, and claimed for this run: an exclusive
  /// flock(2) on DIR/.scalescope-profile.lock, which holds this process's id, kept until the object ends. The lock
  /// is taken before the directory is checked for emptiness, so of two runs given one --keep DIR at once exactly one
  /// proceeds. Throws core::UsageError (exit 2) when `keep` is not a directory, is not empty (but for its lock
  /// file), or is held by another run (naming that run's process id); core::Error when it cannot be created.
  explicit JobDirectory(const std::string& keep);
  ~JobDirectory();
  JobDirectory(const JobDirectory&) = delete;
  JobDirectory& operator=(const JobDirectory&) = delete;

  /// The directory, absolute and normalised.
  const std::string& path() const { return path_; }
  /// True for a --keep directory (kept after the run), false for a temporary one.
  bool kept() const { return kept_; }

  /// Removes what the run put in the directory: the whole temporary directory; for a --keep one, every file this
  /// run made, and the directory itself when this run created it (a job that could not be started leaves nothing
  /// behind). Errors are ignored: this is tidying. Throws nothing.
  void remove() noexcept;

 private:
  std::string path_;
  bool kept_ = false;
  bool created_ = false;  ///< this run created the --keep directory
  int lock_fd_ = -1;
};

}  // namespace scalescope::profile
