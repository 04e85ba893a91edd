#pragma once
// One guard for every command's outputs: what a run writes never replaces or lands inside what it reads, two
// outputs of one run are never one file, and each output can be written before the run starts.

#include <string>
#include <vector>

namespace scalescope::core {

/// One output a run will write: the flag that named it ("--out", "--html") and its path ("" when not asked for).
struct RunOutput {
  std::string flag;
  std::string path;
  /// A directory the run writes files into (`--kernel-trace DIR`): no input may be it or lie inside it, and no
  /// other output inside it. Its own writability is the command's to check.
  bool directory = false;
};

/// One input a run reads: a file, or a directory it reads files from (a profile job directory, `analyze DIR`).
/// `what` names it in messages ("the input", "the job directory", "the training data"). Paths that do not exist
/// (a link named as "H200:NV18", a file not made yet) are no input of the run and never clash.
struct RunInput {
  std::string path;
  std::string what = "the input";
  /// A directory the run will make and read back (profile's --keep DIR): outputs inside it are refused even
  /// before it exists.
  bool directory = false;
};

/// Checks every output of one run against every input and against each other, before anything is read or run:
///   1. no output is an input: the same file by std::filesystem::equivalent (through links, other spellings, hard
///      links), nor a file of an input directory (a link in `--data DIR` to the output);
///   2. no output lies inside an input directory, at any depth (`predict JOBDIR --out JOBDIR/capture.rank0.json`
///      would replace the capture; `--html JOBDIR/page.html` would be read as part of the job next time);
///   3. no two outputs are one file ("o.json" and "./o.json", or through a link), and none lies in an output
///      directory;
/// An output that is a symbolic link, dangling or not, is checked where it leads, as the writers write it.
///   4. each can be written (check_output_path_writable: its directory exists, is writable and has room; it is not
///      stdout's or stderr's file).
/// Empty output paths are outputs not asked for. Throws core::UsageError (exit 2) for 1–3, naming the flag, the
/// input and what to do; for 4, what check_output_path_writable throws, its message led by the flag.
void check_run_outputs(const std::vector<RunOutput>& outputs, const std::vector<RunInput>& inputs);

/// Whether `path` lies inside the directory `dir` (at any depth), both resolved through links
/// (std::filesystem::weakly_canonical of their absolute forms). `dir` itself is not inside itself. False when
/// either is empty. Throws nothing.
bool path_is_inside(const std::string& path, const std::string& dir);

}  // namespace scalescope::core
