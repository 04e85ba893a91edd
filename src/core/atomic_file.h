#pragma once
// Results are written atomically: a reader sees the old file or the whole new one, never half of it.

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace scalescope::core {

class Error;

/// Writes `content` to `path` through a temporary file in the same directory (temporary_file_template), fsync
/// and rename(2), so an interrupted run never leaves a half-written result: SIGINT, SIGTERM, SIGHUP and SIGQUIT
/// that would end the process meanwhile are held until the file is complete (DeferredStopSignals). A `path` that
/// is a symbolic link is written where it points, and stays a link. The file keeps the permission bits of the
/// file it replaces, or gets a new file's (0666 less the umask). A file past RLIMIT_FSIZE fails with EFBIG (SIGXFSZ
/// is ignored meanwhile) like any failed write. Creates no directories.
/// Throws core::Error naming the path and errno text when the directory is missing or not writable
/// or the disk is full; the temporary file is removed on failure.
void write_file_atomically(const std::string& path, std::string_view content);

/// As write_file_atomically, for content too large to build as one string first (a merged timeline of hundreds of
/// MB): `write_content` streams it into the temporary file through a 1 MiB buffer. An exception `write_content`
/// throws removes the temporary file and passes on; a failed write (disk full) throws core::Error with errno's
/// text, as write_file_atomically does, and leaves `path` as it was.
void write_file_atomically_streamed(const std::string& path, const std::function<void(std::ostream&)>& write_content);

/// Where an output `path` that is a symbolic link leads (following up to 40 links, as the kernel does; a relative
/// target from the link's directory); `path` itself when it is no link. Writers put the result there, so that
/// the link stays a link. Throws core::Error for a chain of more than 40 links.
std::string resolve_output_link(const std::string& path);

/// The mkstemp template of the temporary file written beside `path`: in its directory, "." + the first 32 bytes of
/// its name + "." + this process's id + ".tmp.XXXXXX", so that a name as long as the file system allows still leaves
/// room for the suffix, and a later run can tell whose it was (remove_stale_temporary_files).
std::string temporary_file_template(const std::string& path);

/// Removes the temporary files that earlier writes of `path` left beside it when they were killed (SIGKILL, a power
/// cut: no handler runs): names of temporary_file_template's form whose process id names no living process and whose
/// last change is older than `min_age_seconds` (a write in progress changes its file as it goes). Another process's
/// live write, files of other names, links and directories are left alone. Errors are ignored: this is tidying.
/// Returns how many were removed. write_file_atomically calls it before each write.
int remove_stale_temporary_files(const std::string& path, double min_age_seconds = 60);

/// Writes all of `content` to the open descriptor `fd`, again after EINTR and short writes. Returns false on a
/// failure, errno saying why (EIO for a write that wrote nothing). Throws nothing.
bool write_all(int fd, std::string_view content);

/// Bytes an unprivileged writer may still put on the file system of `path` (statvfs: f_bavail × f_frsize), or
/// nullopt when statvfs fails. Throws nothing.
std::optional<unsigned long long> available_bytes(const std::string& path);

/// Free bytes below which check_output_path_writable refuses an output directory before a run: results of a few
/// kB to MB must fit when the run ends.
inline constexpr unsigned long long kMinFreeOutputBytes = 1ull << 20;

/// Checks before a long run that `path` can be written later: its directory exists, is writable and has at least
/// kMinFreeOutputBytes free (statvfs, as an unprivileged writer sees it); its name and whole path are not too long
/// for the file system; `path` is not a directory, device, FIFO or socket. Throws core::Error with the reason
/// otherwise, and core::UsageError when `path` is the file that stdout or stderr already writes (`--out r.json >
/// r.json`). A link is checked where it leads (resolve_output_link). Creates and removes a probe file in that
/// directory; leaves nothing behind.
void check_output_path_writable(const std::string& path);

/// The checks write_file_atomically makes when it writes: those of check_output_path_writable but the free-space
/// floor and the stdout/stderr redirection, which only make sense before a run. Throws core::Error.
void check_output_path_at_write(const std::string& path);

/// While it lives, a SIGINT, SIGTERM, SIGHUP or SIGQUIT whose action is the default (ending the process) is held
/// instead; when it ends, the previous actions come back and the first signal held is raised again, so the process
/// ends as it would have, once the work in between is whole. Signals with a handler of their own (a run's
/// comm::StopSignalScope) or ignored are left alone. Scopes nest (the outermost installs and restores, and raises
/// what came); main thread only.
class DeferredStopSignals {
 public:
  DeferredStopSignals();
  ~DeferredStopSignals();
  DeferredStopSignals(const DeferredStopSignals&) = delete;
  DeferredStopSignals& operator=(const DeferredStopSignals&) = delete;

 private:
  static constexpr int kSignals = 4;
  bool installed_[kSignals] = {};
};

/// Throws core::UsageError (exit 2) when the output `path`, given with `flag` (e.g. "--out"), is the same file as
/// one of `inputs` — by std::filesystem::equivalent, so also through links and other spellings of the path: the
/// result would replace what it was read from. `what` names the inputs in the message ("the input", "the training
/// data"). Paths that do not exist (yet) are no input of this run.
void check_output_is_not_input(const std::string& path, const std::string& flag, const std::vector<std::string>& inputs,
                               const std::string& what = "the input");

/// Throws core::UsageError (exit 2) when two outputs of one run (`a` given with `flag_a`, `b` with `flag_b`) are
/// the same file, one replacing the other. Neither needs to exist: both are made absolute and normalised first,
/// so "o.json" and "./o.json" are one file. Empty paths (an output not asked for) never clash.
void check_outputs_differ(const std::string& a, const std::string& flag_a, const std::string& b, const std::string& flag_b);

/// A result file that a run will write when it ends, and what that file was when the run began, so that the end can
/// tell whether another process wrote it meanwhile (two runs given the same --out): rename(2) would then silently
/// replace the other run's result.
class OutputFile {
 public:
  /// Records what `path` is now: absent, or which file (device, inode, modification time, size). Throws nothing.
  explicit OutputFile(std::string path);

  /// Writes `content` to path() atomically (write_file_atomically) and returns path(). When path() holds another
  /// file than at construction (one created or put there since), it is left as the other writer left it and the
  /// content goes to sibling_path() instead; then core::Error (exit 1) names both files, so nothing measured is
  /// lost. A path() removed since construction is simply written.
  /// When path() cannot be written (a disk that filled during the run, a directory removed), the content is kept
  /// elsewhere: as NAME.PID.EXT in $TMPDIR (else /tmp), or, where even that fails, printed on stderr after a line
  /// saying so; then core::Error (exit 1) gives the first failure and where the result went.
  std::string write(std::string_view content) const;

  const std::string& path() const { return path_; }

  /// Where write() puts the content when another process wrote path(): "DIR/NAME.PID.EXT" ("o.json" → "o.4242.json").
  std::string sibling_path() const;

 private:
  /// Which file a path names: absent, or device, inode, size and modification time (ns).
  struct Identity {
    bool exists = false;
    unsigned long long device = 0, inode = 0, size = 0;
    long long mtime_ns = 0;
    bool operator==(const Identity&) const = default;
  };
  static Identity identity_of(const std::string& path);
  /// "NAME.PID.EXT" of path(): the name of sibling_path() and of keep_elsewhere()'s fallback.
  std::string sibling_name() const;
  /// write()'s fallback after `failure` to write path(): NAME.PID.EXT in $TMPDIR or /tmp, else stderr. Always
  /// throws core::Error naming the failure and where the content went.
  [[noreturn]] void keep_elsewhere(std::string_view content, const Error& failure) const;

  std::string path_;
  Identity at_start_;
};

}  // namespace scalescope::core
