#include "core/json_file.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/process_stat.h"

namespace scalescope::core {

nlohmann::json read_json_file(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read " + what + " '" + path + "': " + std::strerror(errno));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(what + " '" + path + "' is not valid JSON: " + e.what());
  }
}

namespace {

constexpr const char* kJobDirectoryPrefix = "scalescope-job-";

/// The start time of process `pid` in clock ticks since boot, or nullopt when it cannot be read.
std::optional<unsigned long long> process_start_ticks(long pid) {
  if (const auto stat = read_process_stat(static_cast<pid_t>(pid))) return stat->start_ticks;
  return std::nullopt;
}

/// This process's pid namespace ("pid:[4026531836]"): process ids mean something only inside one, and containers
/// on one host may share a TMPDIR and a host name.
std::string pid_namespace() {
  std::error_code ec;
  const auto ns = std::filesystem::read_symlink("/proc/self/ns/pid", ec);
  return ec ? std::string("unknown-pidns") : ns.string();
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

}  // namespace

int remove_orphaned_job_directories(const std::string& base) {
  int removed = 0;
  std::error_code ec;
  const std::string host = host_name(), pidns = pid_namespace();
  for (std::filesystem::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
    const auto& path = it->path();
    if (path.filename().string().rfind(kJobDirectoryPrefix, 0) != 0) continue;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    std::ifstream owner(path / "owner");
    std::string owner_host, owner_pidns;
    long pid = 0;
    unsigned long long start = 0;
    if (!(owner >> owner_host >> pid >> start >> owner_pidns) || owner_host != host || owner_pidns != pidns ||
        pid <= 0)
      continue;
    const bool alive = ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
    const auto now_start = alive ? process_start_ticks(pid) : std::nullopt;
    if (alive && (!now_start || start == 0 || *now_start == start)) continue;  // its owner runs, or cannot be told apart
    std::error_code remove_error;
    if (std::filesystem::remove_all(path, remove_error) > 0 && !remove_error) ++removed;
  }
  return removed;
}

TemporaryDirectory::TemporaryDirectory() {
  const std::string remedy = "point TMPDIR at an existing, writable directory (or unset it)";
  std::error_code ec;
  const auto base = std::filesystem::temp_directory_path(ec);  // TMPDIR, else /tmp
  if (ec)
    throw Error(std::string("the temporary directory (TMPDIR='") + (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "") +
                    "') is not usable: " + ec.message(),
                remedy);
  remove_orphaned_job_directories(base.string());
  std::string tmpl = (base / (std::string(kJobDirectoryPrefix) + "XXXXXX")).string();
  if (!mkdtemp(tmpl.data()))
    throw Error("cannot create a temporary directory in '" + base.string() + "': " + std::strerror(errno), remedy);
  path_ = tmpl;
  // The owner file is written whole or not at all (a reader that finds it cut short skips the directory).
  const auto start = process_start_ticks(::getpid());
  std::ofstream owner(path_ + "/owner");
  owner << host_name() << ' ' << ::getpid() << ' ' << start.value_or(0) << ' ' << pid_namespace() << '\n';
  owner.close();
  if (!owner) {
    const int err = errno;  // before remove_all, which sets its own
    std::error_code ec2;
    std::filesystem::remove_all(path_, ec2);
    throw Error("cannot write in the temporary directory '" + path_ + "': " + std::strerror(err),
                err == ENOSPC ? "free space in TMPDIR ('" + base.string() + "') or point TMPDIR at another directory"
                              : remedy);
  }
  // The ranks' results, and Open MPI's session files, go here too: a nearly full TMPDIR fails them mid-run, with
  // Open MPI's own words ("PMIX ERROR: OUT-OF-RESOURCE") rather than these.
  if (const auto free_bytes = available_bytes(path_); free_bytes && *free_bytes < kMinFreeTemporaryBytes) {
    const unsigned long long free_kib = *free_bytes / 1024;
    std::error_code ec2;
    std::filesystem::remove_all(path_, ec2);
    throw Error(fmt::format("the temporary directory '{}' has only {} KiB free: the ranks' results and Open MPI's "
                            "session files would not fit",
                            base.string(), free_kib),
                "free space there or point TMPDIR at another directory");
  }
}

TemporaryDirectory::~TemporaryDirectory() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace scalescope::core
