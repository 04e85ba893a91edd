#pragma once
// The files one `analyze` run reads: the paths the user gave, a directory standing for the files in it (a profile
// job directory), each file once, within bounds that keep a careless or hostile input from taking the machine.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace scalescope::analyze {

/// How much one run reads at most. Each bound has a flag of `analyze` (docs/commands.md) and a default chosen so
/// that real inputs fit with room: a profile job directory of 64 ranks holds a few hundred files; the largest
/// Kineto trace recorded here (1.5 GB, 9.6 M events) reads in about 1 GB.
struct InputLimits {
  /// Files taken from one directory given as input (its first levels, names in byte order); the rest are counted
  /// and named in one line, not read. --max-files.
  std::size_t files_per_directory = 10'000;
  /// Bytes of all input files together, as stored (a compressed trace counts its compressed size; its JSON has a
  /// bound of its own, TraceReadOptions::max_json_bytes). A file that would go past it is not read, with an error
  /// naming the bound. --max-input-bytes.
  std::uint64_t total_bytes = 64ull << 30;
  /// A text input larger than this is read by its first and last half only (read_input_file's excerpt); 0: whole
  /// texts up to 256 MiB. `profile` sets it for its job's own log (2 MiB); `analyze` reads whole files.
  std::uint64_t text_excerpt_bytes = 0;
};

/// One directory given as input, and what of it was not taken.
struct ListedDirectory {
  std::string path;
  std::size_t files = 0;     ///< regular files found (names not starting with '.', not "*.tmp")
  std::size_t omitted = 0;   ///< past InputLimits::files_per_directory: not read
  std::string first_omitted; ///< the first of them in name order ("" when none)
};

/// What the run reads.
struct InputList {
  std::vector<std::string> files;           ///< in the order given; a directory's files in name order, in its place
  std::set<std::string> from_directory;     ///< those found in a directory (a file no reader knows is skipped there)
  std::vector<ListedDirectory> directories;
  std::vector<std::string> notes;           ///< "'a' is the same file as 'b': read once" (a link inside a directory)
};

/// Expands `paths` (files, or directories searched up to five levels below them for regular files, passing over
/// hidden files and directories and "*.tmp") and removes a file that appears twice inside directories (a link to a file already listed), keeping the
/// first. Throws core::UsageError when a file given by name is given twice (also under another name, by device and
/// inode): it would count as two ranks; core::Error when a directory cannot be listed or holds no file.
InputList list_inputs(const std::vector<std::string>& paths, const InputLimits& limits = {});

}  // namespace scalescope::analyze
