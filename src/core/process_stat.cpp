#include "core/process_stat.h"

#include <fstream>
#include <sstream>

namespace scalescope::core {

std::optional<ProcessStat> read_process_stat(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  const auto open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  ProcessStat s;
  s.command = line.substr(open + 1, close - open - 1);
  std::istringstream rest(line.substr(close + 1));
  long long parent = 0, group = 0;
  if (!(rest >> s.state >> parent >> group)) return std::nullopt;
  s.parent = static_cast<pid_t>(parent);
  s.group = static_cast<pid_t>(group);
  std::string field;
  for (int i = 6; i < 22; ++i)  // fields 6 to 21
    if (!(rest >> field)) return std::nullopt;
  if (!(rest >> s.start_ticks)) return std::nullopt;
  return s;
}

}  // namespace scalescope::core
