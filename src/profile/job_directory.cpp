#include "profile/job_directory.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/error.h"

namespace scalescope::profile {

namespace fs = std::filesystem;

namespace {

/// The process id written in a lock file ("" when it cannot be read or holds none yet).
std::string lock_owner(const std::string& lock_path) {
  const int fd = ::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char buf[32] = {};
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  std::string s(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.find_first_not_of("0123456789") == std::string::npos ? s : "";
}

}  // namespace

JobDirectory::JobDirectory(const std::string& keep) {
  if (keep.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    const std::string base = tmp && *tmp ? tmp : "/tmp";
    std::string tmpl = base + "/scalescope-profile.XXXXXX";
    if (!::mkdtemp(tmpl.data()))
      throw core::Error(fmt::format("cannot create a job directory under {}: {}", base, std::strerror(errno)),
                        "set TMPDIR to a writable directory, or give --keep DIR");
    path_ = tmpl;
    return;
  }
  kept_ = true;
  std::error_code ec;
  if (fs::exists(keep, ec)) {
    if (!fs::is_directory(keep, ec))
      throw core::UsageError(fmt::format("--keep '{}' exists and is not a directory", keep), "name a new or empty directory");
  } else {
    created_ = fs::create_directories(keep, ec);  // false, no error: another run made it meanwhile (the lock decides)
    if (ec)
      throw core::Error(fmt::format("cannot create the job directory '{}': {}", keep, ec.message()),
                        "name a directory on a writable file system");
  }
  path_ = fs::absolute(keep).lexically_normal().string();
  const std::string lock_path = path_ + "/" + kJobDirectoryLock;
  // The lock file may be unlinked by the run that held it between our open and our flock: then the lock we got is on
  // a file nobody else will find, so the name is checked to be still ours, else the whole step is tried again.
  for (int attempt = 0;; ++attempt) {
    lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd_ < 0)
      throw core::Error(fmt::format("cannot create the lock file '{}': {}", lock_path, std::strerror(errno)),
                        "name a job directory you can write to");
    if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(lock_fd_);
      lock_fd_ = -1;
      if (err != EWOULDBLOCK)
        throw core::Error(fmt::format("cannot lock '{}': {}", lock_path, std::strerror(err)),
                          "name a job directory on a local file system");
      const std::string pid = lock_owner(lock_path);
      throw core::UsageError(
          fmt::format("--keep '{}' is in use by another scalescope profile{}: two jobs would write one record", keep,
                      pid.empty() ? "" : " (process " + pid + ")"),
          "name another directory, or wait for that run to end");
    }
    struct stat held {}, named {};
    if (::fstat(lock_fd_, &held) == 0 && ::stat(lock_path.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
        held.st_dev == named.st_dev)
      break;
    ::close(lock_fd_);
    lock_fd_ = -1;
    if (attempt >= 100) throw core::Error(fmt::format("cannot lock '{}': it keeps being replaced", lock_path), "try again");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock_fd_, 0) == 0) core::write_all(lock_fd_, pid);
  for (const auto& e : fs::directory_iterator(path_, ec))
    if (e.path().filename() != kJobDirectoryLock) {
      ::unlink(lock_path.c_str());
      ::close(lock_fd_);
      lock_fd_ = -1;
      throw core::UsageError(fmt::format("--keep '{}' is not empty: the job's files would mix with what is there", keep),
                             "name a new or empty directory (scalescope analyze DIR reads an old one again)");
    }
}

JobDirectory::~JobDirectory() {
  if (lock_fd_ >= 0) {
    ::unlink((path_ + "/" + kJobDirectoryLock).c_str());  // while still held: no other run can be between
    ::close(lock_fd_);
  }
}

void JobDirectory::remove() noexcept {
  std::error_code ec;
  if (!kept_ || created_) {
    if (lock_fd_ >= 0) ::close(lock_fd_), lock_fd_ = -1;
    fs::remove_all(path_, ec);
    return;
  }
  for (const auto& e : fs::directory_iterator(path_, ec))
    if (e.path().filename() != kJobDirectoryLock) fs::remove_all(e.path(), ec);
}

}  // namespace scalescope::profile
