#include "profile/job_failure.h"

#include <regex>

namespace scalescope::profile {

namespace {

/// `line` without a "[rankN]:" or "[default0]:" prefix; `rank` set from the first form.
std::string_view without_prefix(std::string_view line, std::optional<int>& rank) {
  static const std::regex prefix(R"(^\[(?:rank|default)(\d+)\]:\s?)");
  std::match_results<std::string_view::const_iterator> m;
  if (std::regex_search(line.begin(), line.end(), m, prefix)) {
    if (line.substr(1, 4) == "rank") rank = std::stoi(m[1].str());
    line.remove_prefix(static_cast<std::size_t>(m.length(0)));
  }
  return line;
}

}  // namespace

const JobException* JobFailure::first_cause() const {
  for (const auto& e : exceptions)
    if (!e.launcher) return &e;
  return nullptr;
}

bool JobFailure::launcher_crash() const {
  const auto* e = first_cause();
  return e && e->in_launcher_code && !e->rank && failed_ranks.empty();
}

JobFailure read_job_failure(std::string_view output) {
  JobFailure f;
  std::vector<std::string_view> lines;
  for (std::size_t start = 0; start < output.size();) {
    const auto end = output.find('\n', start);
    const auto stop = end == std::string_view::npos ? output.size() : end;
    auto line = output.substr(start, stop - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = stop + 1;
  }
  static const std::regex summary_rank(R"(^\s*rank\s*:\s*(\d+)\s*\(local_rank)");
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::optional<int> rank;
    const auto body = without_prefix(lines[i], rank);
    std::match_results<std::string_view::const_iterator> m;
    if (std::regex_search(body.begin(), body.end(), m, summary_rank)) f.failed_ranks.push_back(std::stoi(m[1].str()));
    if (body.rfind("Traceback (most recent call last):", 0) != 0) continue;
    // The exception: the first line after the frames that is not indented (frames and source lines are).
    std::string frame;
    for (std::size_t k = i + 1; k < lines.size() && k < i + 400; ++k) {
      std::optional<int> r2;
      const auto b = without_prefix(lines[k], r2);
      if (const auto at = b.find("File \""); at != std::string_view::npos && b.find_first_not_of(" \t") == at)
        frame = std::string(b.substr(at, 300));
      if (b.empty() || b[0] == ' ' || b[0] == '\t' || b.rfind("Traceback", 0) == 0) continue;
      if (b.rfind("During handling", 0) == 0 || b.rfind("The above exception", 0) == 0) continue;
      JobException e;
      e.line = std::string(b.substr(0, 400));
      e.line_no = k + 1;
      e.rank = r2 ? r2 : rank;
      e.launcher = b.find("ChildFailedError") != std::string_view::npos;
      e.frame = frame;
      for (const char* code : {"torch/distributed/run.py", "torch/distributed/elastic/", "torch/distributed/launch.py",
                               "accelerate/commands/", "deepspeed/launcher/"})
        e.in_launcher_code = e.in_launcher_code || (!e.launcher && frame.find(code) != std::string::npos);
      f.exceptions.push_back(std::move(e));
      i = k;
      break;
    }
  }
  return f;
}

}  // namespace scalescope::profile
