#pragma once
// Results are written atomically: a reader sees the old file or the whole new one, never half of it.

#include <string>
#include <string_view>
#include <vector>

namespace scalescope::core {

/// Writes `content` to `path` through a temporary file in the same directory, fsync and rename(2),
/// so an interrupted run never leaves a half-written result. Creates no directories.
/// Throws core::Error naming the path and errno text when the directory is missing or not writable
/// or the disk is full; the temporary file is removed on failure.
void write_file_atomically(const std::string& path, std::string_view content);

/// Checks before a long run that `path` can be written later (its directory exists and is writable,
/// and `path` is not a directory, device, FIFO or socket). Throws core::Error with the reason otherwise.
/// Creates and removes a probe file beside `path` (PATH.probe.XXXXXX); leaves nothing behind.
void check_output_path_writable(const std::string& path);

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

}  // namespace scalescope::core
