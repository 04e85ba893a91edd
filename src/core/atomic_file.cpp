#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace scalescope::core {
namespace {

std::string directory_of(const std::string& path) {
  std::filesystem::path p(path);
  auto dir = p.parent_path();
  return dir.empty() ? std::string(".") : dir.string();
}

}  // namespace

void check_output_path_writable(const std::string& path) {
  if (path.empty()) throw Error("output path is empty", "pass a file name, e.g. --out result.json");
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw Error("output path '" + path + "' is a directory", "pass a file name inside it, e.g. " + path + "/result.json");
  // rename() would replace a device, FIFO or socket by the result file (as root even /dev/null).
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw Error("output path '" + path + "' is not a regular file (a device, FIFO or socket)",
                "pass the name of a regular file, e.g. --out result.json");
  const std::string dir = directory_of(path);
  if (stat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    throw Error("output directory '" + dir + "' is a file, not a directory", "choose another location for the output");
  if (stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    throw Error("output directory '" + dir + "' does not exist",
                err == ENOTDIR ? "part of its path is a file, not a directory: choose another location for the output"
                                 : "create it first (mkdir -p " + dir + ")");
  }
  // A probe file rather than access(W_OK), which as root says yes even where no file can be created (/proc,
  // /sys, a read-only mount): the result will be created the same way, through mkstemp in this directory.
  std::string probe = path + ".probe.XXXXXX";
  const int fd = mkstemp(probe.data());
  if (fd < 0) {
    const int err = errno;  // ENOENT for an existing directory: a virtual file system such as /proc
    throw Error("output directory '" + dir + "' is not writable: " +
                    (err == ENOENT ? std::string("no file can be created there") : std::string(std::strerror(err))),
                "choose another location for the output");
  }
  close(fd);
  unlink(probe.c_str());
}

void check_output_is_not_input(const std::string& path, const std::string& flag, const std::vector<std::string>& inputs,
                               const std::string& what) {
  for (const auto& input : inputs) {
    std::error_code ec;
    if (!path.empty() && !input.empty() && std::filesystem::equivalent(path, input, ec))
      throw UsageError(flag + " '" + path + "' is " + what + " '" + input + "': writing it would replace what was read",
                       "write " + flag + " to another file");
  }
}

void check_outputs_differ(const std::string& a, const std::string& flag_a, const std::string& b, const std::string& flag_b) {
  if (a.empty() || b.empty()) return;
  // weakly_canonical leaves a relative path whose first component does not exist relative: absolute first.
  const auto resolved = [](const std::string& p) {
    std::error_code ec;
    auto r = std::filesystem::weakly_canonical(std::filesystem::absolute(p, ec), ec);
    return ec ? std::filesystem::path(p).lexically_normal() : r;
  };
  if (resolved(a) == resolved(b))
    throw UsageError(flag_a + " and " + flag_b + " are the same file '" + a + "': one would replace the other",
                     "give them two file names");
}

void write_file_atomically(const std::string& path, std::string_view content) {
  check_output_path_writable(path);
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0)
    throw Error("cannot create a temporary file beside '" + path + "': " + std::strerror(errno),
                "check that the directory is writable and the disk has room");
  auto fail = [&](const char* what) {
    int err = errno;
    close(fd);
    unlink(tmp.c_str());
    throw Error(std::string("cannot write '") + path + "' (" + what + "): " + std::strerror(err),
                "check free disk space and permissions; nothing was written");
  };
  const char* data = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write");
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  // Results are small; mode 0644 like a normal file rather than mkstemp's 0600.
  if (fchmod(fd, 0644) != 0) fail("chmod");
  if (fsync(fd) != 0) fail("fsync");
  if (close(fd) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    throw Error("cannot write '" + path + "' (close): " + std::strerror(err), "check free disk space");
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    throw Error("cannot move the result into '" + path + "': " + std::strerror(err), "check permissions");
  }
}

OutputFile::Identity OutputFile::identity_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {true, static_cast<unsigned long long>(st.st_dev), static_cast<unsigned long long>(st.st_ino),
          static_cast<unsigned long long>(st.st_size),
          static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec};
}

OutputFile::OutputFile(std::string path) : path_(std::move(path)), at_start_(identity_of(path_)) {}

std::string OutputFile::sibling_path() const {
  const std::filesystem::path p(path_);
  const std::string name = p.stem().string() + "." + std::to_string(::getpid()) + p.extension().string();
  return (p.parent_path() / name).string();
}

std::string OutputFile::write(std::string_view content) const {
  const Identity now = identity_of(path_);
  // Gone since the start (the user removed an old result): nobody else's result is there to keep.
  if (now == at_start_ || !now.exists) {
    write_file_atomically(path_, content);
    return path_;
  }
  const std::string sibling = sibling_path();
  write_file_atomically(sibling, content);
  throw Error("'" + path_ + "' was " + (at_start_.exists ? "replaced" : "created") +
                  " by another process while this run measured (two runs with the same --out?): it is left as that "
                  "run wrote it, and this run's result is in '" + sibling + "'",
              "give each run its own --out");
}

}  // namespace scalescope::core
