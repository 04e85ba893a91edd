#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <signal.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <optional>
#include <ostream>
#include <streambuf>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"

namespace scalescope::core {
namespace {

/// A std::streambuf over an open descriptor, through write_all (EINTR, short writes) with a 1 MiB buffer. The
/// first failed write keeps its errno and fails every later flush, so the stream's badbit reports it.
class DescriptorBuffer : public std::streambuf {
 public:
  explicit DescriptorBuffer(int fd) : fd_(fd), buffer_(std::size_t{1} << 20) {
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }
  /// errno of the first failed write, 0 when none failed.
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!flush_buffer()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return flush_buffer() ? 0 : -1; }

 private:
  bool flush_buffer() {
    if (error_ != 0) return false;
    const std::string_view pending(pbase(), static_cast<std::size_t>(pptr() - pbase()));
    if (!write_all(fd_, pending)) {
      error_ = errno != 0 ? errno : EIO;
      return false;
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return true;
  }

  int fd_;
  std::vector<char> buffer_;
  int error_ = 0;
};

/// While it lives, SIGXFSZ is ignored: a file past RLIMIT_FSIZE (`ulimit -f`, set by some batch schedulers)
/// then fails its write with EFBIG, which the writers report and recover from, instead of killing the process
/// with a half-written temporary file left behind. Main thread only (sigaction is process-wide).
class FileSizeSignalIgnored {
 public:
  FileSizeSignalIgnored() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    installed_ = sigaction(SIGXFSZ, &ignore, &previous_) == 0;
  }
  ~FileSizeSignalIgnored() {
    if (installed_) sigaction(SIGXFSZ, &previous_, nullptr);
  }
  FileSizeSignalIgnored(const FileSizeSignalIgnored&) = delete;
  FileSizeSignalIgnored& operator=(const FileSizeSignalIgnored&) = delete;

 private:
  struct sigaction previous_ {};
  bool installed_ = false;
};

/// The process's umask, read without changing it (/proc/self/status, Linux 4.7+); else by setting and restoring it.
mode_t current_umask() {
  std::FILE* status = std::fopen("/proc/self/status", "re");
  if (status != nullptr) {
    char line[256];
    unsigned mask = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, status) != nullptr) found = std::sscanf(line, "Umask: %o", &mask) == 1;
    std::fclose(status);
    if (found) return static_cast<mode_t>(mask);
  }
  const mode_t mask = ::umask(022);
  ::umask(mask);
  return mask;
}

/// The permission bits a result written at `path` gets: those of the file it replaces, else a new file's
/// (0666 less the umask), so that a private result stays private.
mode_t result_file_mode(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return st.st_mode & 0777;
  return 0666 & ~current_umask();
}

std::string directory_of(const std::string& path) {
  std::filesystem::path p(path);
  auto dir = p.parent_path();
  return dir.empty() ? std::string(".") : dir.string();
}

}  // namespace

bool write_all(int fd, std::string_view content) {
  const char* data = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

std::string resolve_output_link(const std::string& path) {
  std::filesystem::path p(path);
  for (int hop = 0; hop < 40; ++hop) {
    std::error_code ec;
    if (!std::filesystem::is_symlink(std::filesystem::symlink_status(p, ec)) || ec) return p.string();
    const auto target = std::filesystem::read_symlink(p, ec);
    if (ec) return p.string();
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  throw Error("output path '" + path + "' is a chain of more than 40 symbolic links (a loop?)",
              "point the output at a regular file or a link to one");
}

namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
volatile std::sig_atomic_t g_deferred_signal = 0;
int g_deferred_depth = 0;  // DeferredStopSignals alive (the outermost installs and restores)
struct sigaction g_previous_actions[std::size(kStopSignals)];

extern "C" void hold_stop_signal(int signal) {
  if (g_deferred_signal == 0) g_deferred_signal = signal;
}

}  // namespace

DeferredStopSignals::DeferredStopSignals() {
  static_assert(std::size(kStopSignals) == kSignals);
  if (g_deferred_depth++ > 0) return;  // an outer scope holds them already, and keeps what arrived
  g_deferred_signal = 0;
  for (int i = 0; i < kSignals; ++i) {
    struct sigaction current {};
    if (sigaction(kStopSignals[i], nullptr, &current) != 0 || current.sa_handler != SIG_DFL ||
        (current.sa_flags & SA_SIGINFO) != 0)
      continue;  // a handler of the run's own, or ignored: left as it is
    struct sigaction hold {};
    hold.sa_handler = hold_stop_signal;
    sigemptyset(&hold.sa_mask);
    hold.sa_flags = SA_RESTART;
    if (sigaction(kStopSignals[i], &hold, &g_previous_actions[i]) == 0) installed_[i] = true;
  }
}

DeferredStopSignals::~DeferredStopSignals() {
  if (--g_deferred_depth > 0) return;
  for (int i = 0; i < kSignals; ++i)
    if (installed_[i]) sigaction(kStopSignals[i], &g_previous_actions[i], nullptr);
  if (const int held = g_deferred_signal; held != 0) {
    g_deferred_signal = 0;
    std::raise(held);  // the default action, now that the work is whole
  }
}

std::optional<unsigned long long> available_bytes(const std::string& path) {
  struct statvfs fs {};
  if (statvfs(path.c_str(), &fs) != 0 || fs.f_frsize == 0) return std::nullopt;
  return static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize;
}

std::string temporary_file_template(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string name = p.filename().string().substr(0, 32);
  return (p.parent_path() / ("." + name + "." + std::to_string(::getpid()) + ".tmp.XXXXXX")).string();
}

int remove_stale_temporary_files(const std::string& path, double min_age_seconds) {
  const std::filesystem::path p(path);
  const std::string prefix = "." + p.filename().string().substr(0, 32) + ".";
  const std::filesystem::path dir = p.parent_path().empty() ? std::filesystem::path(".") : p.parent_path();
  const auto now = std::time(nullptr);
  int removed = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    // "." NAME32 "." PID ".tmp." XXXXXX
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    const auto dot = rest.find(".tmp.");
    if (dot == std::string::npos || dot == 0 || rest.size() != dot + 5 + 6 ||
        rest.substr(0, dot).find_first_not_of("0123456789") != std::string::npos || dot > 10)
      continue;
    const long long pid = std::stoll(rest.substr(0, dot));
    if (pid <= 0 || (pid <= INT_MAX && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH))) continue;  // alive
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (static_cast<double>(now - st.st_mtime) < min_age_seconds) continue;
    if (::unlink(it->path().c_str()) == 0) ++removed;
  }
  return removed;
}

namespace {

/// check_output_path_writable's checks; `before_run` adds those that only make sense before a run: the free-space
/// floor (a small result may still fit at the end) and stdout or stderr being the output.
void check_output_target(const std::string& given_path, bool before_run) {
  if (given_path.empty()) throw Error("output path is empty", "pass a file name, e.g. result.json");
  const std::string path = resolve_output_link(given_path);  // where the result will go
  struct stat st {};
  const bool exists = stat(path.c_str(), &st) == 0;
  // `scalescope … --out r.json > r.json`: the report printed on stdout and the result would be one file.
  struct stat fd_st {};
  if (before_run && exists)
    for (const auto& [fd, name] : {std::pair{1, "standard output"}, std::pair{2, "standard error"}})
      if (fstat(fd, &fd_st) == 0 && S_ISREG(fd_st.st_mode) && fd_st.st_dev == st.st_dev && fd_st.st_ino == st.st_ino)
        throw UsageError("output path '" + given_path + "' is where " + name + " goes (a shell redirection to the "
                             "same file): the report and the result would overwrite each other",
                         std::string("redirect ") + name + " to another file, or drop the redirection");
  if (exists && S_ISDIR(st.st_mode))
    throw Error("output path '" + path + "' is a directory", "pass a file name inside it, e.g. " + path + "/result.json");
  // rename() would replace a device, FIFO or socket by the result file (as root even /dev/null).
  if (exists && !S_ISREG(st.st_mode))
    throw Error("output path '" + path + "' is not a regular file (a device, FIFO or socket)",
                "pass the name of a regular file, e.g. result.json");
  if (path.size() >= PATH_MAX)
    throw Error(fmt::format("output path is {} bytes long: more than the system allows ({})", path.size(), PATH_MAX - 1),
                "choose a shorter path");
  const std::string dir = directory_of(path);
  if (stat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    throw Error("output directory '" + dir + "' is a file, not a directory", "choose another location for the output");
  if (stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENAMETOOLONG)
      throw Error("output directory '" + dir + "': " + std::strerror(err), "choose a shorter path");
    if (err == EACCES)
      throw Error("output directory '" + dir + "' cannot be reached: " + std::strerror(err),
                  "choose another location for the output, or fix the permissions of the directories above it");
    const bool trailing_slash = !path.empty() && path.back() == '/';
    throw Error("output directory '" + dir + "' does not exist",
                err == ENOTDIR ? "part of its path is a file, not a directory: choose another location for the output"
                : trailing_slash
                    ? "the path ends in '/', so it names a directory: drop the '/' to name a file"
                    : "create it first (mkdir -p " + dir + ")");
  }
  const std::string name = std::filesystem::path(path).filename().string();
  const long name_max = pathconf(dir.c_str(), _PC_NAME_MAX);
  if (name_max > 0 && name.size() > static_cast<std::size_t>(name_max))
    throw Error(fmt::format("output file name is {} bytes long: the file system of '{}' allows {}", name.size(), dir,
                            name_max),
                "choose a shorter file name");
  // A probe file rather than access(W_OK), which as root says yes even where no file can be created (/proc,
  // /sys, a read-only mount): the result will be created the same way, through mkstemp in this directory.
  std::string probe = (std::filesystem::path(dir) / ".scalescope-probe.XXXXXX").string();
  const int fd = mkstemp(probe.data());
  if (fd < 0) {
    const int err = errno;  // ENOENT for an existing directory: a virtual file system such as /proc
    throw Error("output directory '" + dir + "' is not writable: " +
                    (err == ENOENT ? std::string("no file can be created there") : std::string(std::strerror(err))),
                err == ENOSPC ? "free some space there or choose another location for the output"
                              : "choose another location for the output");
  }
  close(fd);
  unlink(probe.c_str());
  // A full disk still lets the probe be created (it is empty): the result would fail only when the run ends.
  if (const auto free_bytes = before_run ? available_bytes(dir) : std::nullopt;
      free_bytes && *free_bytes < kMinFreeOutputBytes)
    throw Error(fmt::format("output directory '{}' has only {} KiB free: the result may not fit when the run ends",
                            dir, *free_bytes / 1024),
                "free some space there or choose another location for the output");
}

}  // namespace

void check_output_path_writable(const std::string& path) { check_output_target(path, true); }

void check_output_path_at_write(const std::string& path) { check_output_target(path, false); }

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
  write_file_atomically_streamed(path, [&](std::ostream& out) { out.write(content.data(), static_cast<std::streamsize>(content.size())); });
}

void write_file_atomically_streamed(const std::string& given_path, const std::function<void(std::ostream&)>& write_content) {
  // Through a link to where it points: rename(2) onto the link would replace the link, not the file it names.
  const std::string path = resolve_output_link(given_path);
  check_output_path_at_write(path);
  const DeferredStopSignals hold;  // a Ctrl-C now ends the process once the file is whole, not half-way
  const FileSizeSignalIgnored too_large_is_an_error;
  const mode_t mode = result_file_mode(path);
  remove_stale_temporary_files(path);
  std::string tmp = temporary_file_template(path);
  int fd = mkstemp(tmp.data());
  if (fd < 0)
    throw Error("cannot create a temporary file beside '" + path + "': " + std::strerror(errno),
                "check that the directory is writable and the disk has room");
  const auto discard = [&] {  // on every failure: nothing half-written stays beside the result
    if (fd >= 0) close(fd);
    fd = -1;
    unlink(tmp.c_str());
  };
  const auto fail_with = [&](const char* what, int err) {
    discard();
    throw Error(std::string("cannot write '") + path + "' (" + what + "): " + std::strerror(err),
                "check free disk space and permissions; nothing was written");
  };
  const auto fail = [&](const char* what) { fail_with(what, errno); };
  {
    DescriptorBuffer buffer(fd);
    std::ostream out(&buffer);
    try {
      write_content(out);
    } catch (...) {
      discard();
      throw;
    }
    out.flush();
    if (buffer.error() != 0) fail_with("write", buffer.error());
    if (!out) fail_with("write", EIO);  // the writer set failbit itself
  }
  // The mode of the file it replaces, or a new file's under the umask, rather than mkstemp's 0600.
  if (fchmod(fd, mode) != 0) fail("chmod");
  if (fsync(fd) != 0) fail("fsync");
  const int closed = close(fd);
  fd = -1;
  if (closed != 0) fail("close");
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    discard();
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

std::string OutputFile::sibling_name() const {
  const std::filesystem::path p(path_);
  return p.stem().string() + "." + std::to_string(::getpid()) + p.extension().string();
}

std::string OutputFile::sibling_path() const {
  return (std::filesystem::path(path_).parent_path() / sibling_name()).string();
}

std::string OutputFile::write(std::string_view content) const {
  // Held across the fallback too: a signal that came during a write that failed must not end the process before
  // the result is kept elsewhere.
  const DeferredStopSignals hold;
  const Identity now = identity_of(path_);
  // Gone since the start (the user removed an old result): nobody else's result is there to keep.
  if (now == at_start_ || !now.exists) {
    try {
      write_file_atomically(path_, content);
    } catch (const Error& e) {
      keep_elsewhere(content, e);
    }
    return path_;
  }
  const std::string sibling = sibling_path();
  write_file_atomically(sibling, content);
  throw Error("'" + path_ + "' was " + (at_start_.exists ? "replaced" : "created") +
                  " by another process while this run measured (two runs with the same --out?): it is left as that "
                  "run wrote it, and this run's result is in '" + sibling + "'",
              "give each run its own --out");
}

void OutputFile::keep_elsewhere(std::string_view content, const Error& failure) const {
  const FileSizeSignalIgnored too_large_is_an_error;  // the fallback may be past RLIMIT_FSIZE too
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string name = sibling_name();
  std::vector<std::string> places;
  if (tmpdir != nullptr && *tmpdir != '\0') places.push_back((std::filesystem::path(tmpdir) / name).string());
  places.push_back((std::filesystem::path("/tmp") / name).string());
  for (const auto& place : places) {
    // A fresh file, never through a link nor over another's: a shared /tmp is where others can plant them.
    const int fd = ::open(place.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);  // umask applies
    if (fd < 0) continue;
    bool ok = write_all(fd, content) && ::fsync(fd) == 0;
    ok = ::close(fd) == 0 && ok;
    if (!ok) {
      ::unlink(place.c_str());
      continue;
    }
    throw Error(std::string(failure.what()) + "; the result was kept in '" + place + "' instead",
                "move it where it belongs (" + failure.remedy() + ")");
  }
  std::string tried;
  for (const auto& place : places) tried += (tried.empty() ? "'" : " nor '") + place + "'";
  std::fprintf(stderr, "scalescope: the result could not be written to '%s' nor to %s: it follows on stderr\n",
               path_.c_str(), tried.c_str());
  std::fwrite(content.data(), 1, content.size(), stderr);
  std::fflush(stderr);
  throw Error(std::string(failure.what()) + "; the result was printed on stderr instead",
              "save it from there (" + failure.remedy() + ")");
}

}  // namespace scalescope::core
