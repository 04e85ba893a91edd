#pragma once
// Why a job failed, in its own words: the first Python exception its output shows, before the errors that followed
// from it (a peer's "connection closed", the launcher's ChildFailedError). Pure: text in, record out.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace scalescope::profile {

/// One exception a traceback in the job's output ended with.
struct JobException {
  std::string line;        ///< "RuntimeError: planted failure on rank 1", without a launcher's "[rank1]:" prefix
  std::size_t line_no = 0; ///< 1-based, in the text given
  std::optional<int> rank; ///< from a "[rankN]:" prefix (torchrun --tee, PyTorch's own log prefix), when there is one
  bool launcher = false;   ///< the launcher's own (torch.distributed.elastic's ChildFailedError, mpirun's): a consequence
  /// The traceback's last frame, trimmed ("File \"/usr/lib/…/elastic/multiprocessing/api.py\", line 162, in to_map").
  std::string frame;
  /// The last frame lies in a launcher's own code (torch/distributed/run.py, torch/distributed/elastic/,
  /// torch/distributed/launch.py, accelerate/commands/, deepspeed/launcher/) and the exception is no report of a
  /// child's failure: the launcher itself broke.
  bool in_launcher_code = false;
};

/// What the output of a failed job says.
struct JobFailure {
  std::vector<JobException> exceptions;  ///< in the order they appear
  std::vector<int> failed_ranks;         ///< ranks torchrun's failure summary lists ("rank      : 1 (local_rank: 1)")
  /// The first exception that is not the launcher's: the likeliest cause, the others its consequences. nullptr when
  /// the output shows none (a job killed by a signal, a C++ abort).
  const JobException* first_cause() const;
  /// The launcher crashed on its own before any worker ran: its first cause was raised in launcher code, carries no
  /// rank, and no rank is listed as failed.
  bool launcher_crash() const;
};

/// Reads `output` (the job's stdout and stderr, or an excerpt of them) for Python tracebacks ("Traceback (most recent
/// call last):" and the first line after it that is not indented: the exception) and torchrun's failure summary.
/// Throws nothing.
JobFailure read_job_failure(std::string_view output);

}  // namespace scalescope::profile
