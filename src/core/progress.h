#pragma once
// Progress of long runs (doctor's world sizes, comm's sweep, a rank's rounds, profile's job): one line redrawn in
// place with a bar and an estimate of the time left when stderr is a terminal, plain lines when it is a log or a
// pipe. Ranks started through mpirun write into a pipe even when the user watches a terminal, so the CLI decides
// once and passes the style to the processes it starts (SCALESCOPE_PROGRESS).

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

namespace scalescope::core {

enum class ProgressStyle {
  terminal,  ///< one line redrawn in place ('\r', erase to end of line), bar and time left
  lines,     ///< one plain line per update, with the same counts and time left
};

/// SCALESCOPE_PROGRESS=terminal|lines when set, else terminal when stderr is a terminal (isatty) and TERM is not
/// "dumb", else lines.
ProgressStyle progress_style_from_environment();

/// Sets SCALESCOPE_PROGRESS for this process and the ones it starts, from progress_style_from_environment() as it
/// is now (call once at start-up, before starting ranks).
void export_progress_style();

/// "0.4 s", "12 s", "3 min 05 s", "2 h 07 min".
std::string format_duration(double seconds);

/// Seconds left when `done` of `total` units took `elapsed` seconds at the same rate; nullopt before anything is
/// done, when the total is unknown (≤ 0) or past it.
std::optional<double> eta_seconds(double done, double total, double elapsed);

/// The progress of one task over `total` units of work (items, or a weight such as bytes; the rate is assumed
/// steady, so the time left is an estimate and is shown as "about …").
class Progress {
 public:
  Progress(std::string task, double total, ProgressStyle style, std::FILE* out = stderr);
  Progress(std::string task, double total) : Progress(std::move(task), total, progress_style_from_environment()) {}
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// `done` units are finished; `what` names the item in hand ("all_reduce 1 MiB"). A terminal is redrawn at
  /// most every 100 ms (and always when done reaches the total); lines mode prints every update.
  void update(double done, const std::string& what);
  /// A line of its own (a result, a warning): printed above the progress line, which is then redrawn.
  void note(const std::string& line);
  /// Ends the progress line (terminal) so that what follows starts on a clean line.
  void finish();
  /// Terminal: erases the progress line so that other output (a job's, passed through) can be written; show()
  /// draws it again. Lines mode: nothing.
  void hide();
  void show();
  ProgressStyle style() const { return style_; }

  /// The text of the progress line after `elapsed` seconds, at most `width` columns:
  /// "doctor [#####.....] 2/4 world size 2 · 41 s, about 40 s left".
  std::string render(double elapsed, int width) const;

 private:
  double elapsed() const;
  void draw(bool force);
  std::string task_;
  double total_ = 0, done_ = 0;
  std::string what_;
  ProgressStyle style_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point start_, last_draw_{};
  bool drawn_ = false;  ///< a terminal line is on screen and not yet ended
};

}  // namespace scalescope::core
