#include "core/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "core/terminal_text.h"

namespace scalescope::core {
namespace {

int terminal_width(std::FILE* out) {
  winsize w{};
  if (ioctl(fileno(out), TIOCGWINSZ, &w) == 0 && w.ws_col >= 20) return w.ws_col;
  return 80;
}

/// Whole units done: "2/4" for items, "45%" for a weight that is not a count.
std::string count_text(double done, double total) {
  if (total > 0 && total == std::floor(total) && total < 1e6 && done == std::floor(done))
    return fmt::format("{}/{}", static_cast<long long>(done), static_cast<long long>(total));
  return total > 0 ? fmt::format("{:.0f}%", 100 * std::clamp(done / total, 0.0, 1.0)) : std::string();
}

}  // namespace

ProgressStyle progress_style_from_environment() {
  if (const char* v = std::getenv("SCALESCOPE_PROGRESS")) {
    if (std::strcmp(v, "terminal") == 0) return ProgressStyle::terminal;
    if (std::strcmp(v, "lines") == 0) return ProgressStyle::lines;
  }
  const char* term = std::getenv("TERM");
  if (isatty(STDERR_FILENO) && !(term && std::strcmp(term, "dumb") == 0)) return ProgressStyle::terminal;
  return ProgressStyle::lines;
}

void export_progress_style() {
  setenv("SCALESCOPE_PROGRESS", progress_style_from_environment() == ProgressStyle::terminal ? "terminal" : "lines", 1);
}

std::string format_duration(double s) {
  if (!(s >= 0)) s = 0;
  if (s < 10) return fmt::format("{:.1f} s", s);
  if (s < 60) return fmt::format("{:.0f} s", s);
  const auto whole = static_cast<long long>(std::llround(s));
  if (whole < 3600) return fmt::format("{} min {:02} s", whole / 60, whole % 60);
  return fmt::format("{} h {:02} min", whole / 3600, (whole % 3600) / 60);
}

std::optional<double> eta_seconds(double done, double total, double elapsed) {
  if (!(total > 0) || !(done > 0) || done >= total || !(elapsed > 0)) return std::nullopt;
  return elapsed * (total - done) / done;
}

Progress::Progress(std::string task, double total, ProgressStyle style, std::FILE* out)
    : task_(std::move(task)), total_(total), style_(style), out_(out), start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() { finish(); }

double Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string Progress::render(double elapsed_s, int width) const {
  std::string tail = format_duration(elapsed_s);
  if (const auto left = eta_seconds(done_, total_, elapsed_s)) tail += ", about " + format_duration(*left) + " left";
  const std::string count = count_text(done_, total_);
  std::string head = task_;
  if (style_ == ProgressStyle::terminal && total_ > 0) {
    constexpr int kBar = 20;
    const int filled = static_cast<int>(std::lround(kBar * std::clamp(done_ / total_, 0.0, 1.0)));
    head += " [" + std::string(filled, '#') + std::string(kBar - filled, '.') + "]";
  }
  if (!count.empty()) head += " " + count;
  // What is in hand gets the columns the rest leaves (at least a few), cut safely for a terminal.
  const int fixed = static_cast<int>(head.size() + tail.size()) + 4;
  const int room = std::max(8, width - fixed);
  const std::string what = what_.empty() ? std::string() : " " + terminal_text(what_, static_cast<std::size_t>(room));
  return head + what + " · " + tail;
}

void Progress::draw(bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (style_ == ProgressStyle::terminal) {
    if (!force && drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    std::fprintf(out_, "\r\033[K%s", render(elapsed(), terminal_width(out_) - 1).c_str());
    drawn_ = true;
  } else {
    std::fprintf(out_, "%s\n", render(elapsed(), 1000).c_str());
  }
  std::fflush(out_);
  last_draw_ = now;
}

void Progress::update(double done, const std::string& what) {
  done_ = done;
  what_ = what;
  draw(total_ > 0 && done >= total_);
}

void Progress::note(const std::string& line) {
  if (style_ == ProgressStyle::terminal && drawn_) std::fprintf(out_, "\r\033[K");
  std::fprintf(out_, "%s\n", line.c_str());
  if (style_ == ProgressStyle::terminal && drawn_) {
    drawn_ = false;
    draw(true);
  } else {
    std::fflush(out_);
  }
}

void Progress::hide() {
  if (style_ == ProgressStyle::terminal && drawn_) {
    std::fprintf(out_, "\r\033[K");
    std::fflush(out_);
    drawn_ = false;
  }
}

void Progress::show() {
  if (style_ == ProgressStyle::terminal && !drawn_) draw(true);
}

void Progress::finish() {
  if (style_ == ProgressStyle::terminal && drawn_) {
    std::fputc('\n', out_);
    std::fflush(out_);
  }
  drawn_ = false;
}

}  // namespace scalescope::core
