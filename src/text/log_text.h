#pragma once
// Text helpers shared by the log readers (NCCL debug logs, PyTorch watchdog messages, input detection):
// line splitting that survives CR/LF mixtures, UTF-8 repair for JSON output, short excerpts for evidence,
// and findings with severity, evidence and remedy. Pure; nothing here throws except read_text_file.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace scalescope::analyze {

/// Splits `text` into lines at "\n", "\r\n" and lone "\r" (old Mac or progress-bar redraws). The line
/// terminators are not part of the lines; a final line without terminator is kept; line i (0-based) is
/// line i+1 of the file in evidence.
std::vector<std::string_view> split_lines(std::string_view text);

/// `s` without leading and trailing blanks (space, tab, CR, VT, FF).
std::string_view trim_blanks(std::string_view s);

/// `s` with every byte that is not part of well-formed UTF-8 replaced by U+FFFD, so text taken from a
/// damaged or binary file can always be written as JSON.
std::string to_valid_utf8(std::string_view s);

/// The trimmed line, valid UTF-8, cut to at most `max_bytes` bytes (at a character boundary) with "…"
/// appended when cut: what evidence shows of a line.
std::string excerpt(std::string_view line, std::size_t max_bytes = 200);

/// Reads an unsigned decimal integer that makes up all of `t` ("469508"); nothing on empty text, signs,
/// other characters or overflow.
std::optional<std::uint64_t> parse_decimal(std::string_view t);

/// Reads the leading decimal digits of `t` (at most 19) and how many characters they took; nothing when
/// `t` does not start with a digit.
std::optional<std::pair<std::uint64_t, std::size_t>> leading_decimal(std::string_view t);

/// Reads the file at `path` whole. `what` names it in errors ("the NCCL log"). Throws core::Error when it
/// cannot be opened or read (naming the path and the system's reason), when it is a directory, device,
/// FIFO or socket, or when it is larger than `max_bytes` (naming the size and the limit).
std::string read_text_file(const std::string& path, const std::string& what, std::uint64_t max_bytes);

/// How serious a finding is: info (worth knowing), warning (costs performance or will bite), error (the
/// run failed or will fail because of it).
enum class Severity { info, warning, error };
std::string_view to_string(Severity s);

/// Where a finding comes from: a file (as given on the command line, or "text"), a 1-based line number
/// and what that line says (an excerpt).
struct Evidence {
  std::string source;
  std::size_t line = 0;
  std::string excerpt;
};

/// One conclusion drawn from a log: what it is (`title`, one line), why it matters (`detail`), what to do
/// (`remedy`) and the lines that show it.
struct LogFinding {
  Severity severity = Severity::info;
  std::string title;
  std::string detail;
  std::string remedy;
  std::vector<Evidence> evidence;
};

void to_json(nlohmann::json& j, Severity s);
void to_json(nlohmann::json& j, const Evidence& e);
void to_json(nlohmann::json& j, const LogFinding& f);

/// Optional values as JSON: null when absent, never 0.
template <class T>
nlohmann::json optional_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

}  // namespace scalescope::analyze
