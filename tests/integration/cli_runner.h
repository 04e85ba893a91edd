#pragma once
// Runs the scalescope executable as a user would and captures what it printed and its exit status.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/scratch_dir.h"

namespace scalescope::testing {

struct CliRun {
  int status = -1;      ///< exit status (128 + signal when killed)
  std::string output;   ///< stdout and stderr together
};

/// Runs `SCALESCOPE_EXE args` through /bin/sh (args are pasted as written: quote them yourself), with
/// `environment` added (NAME, value pairs; values must not need quoting).
inline CliRun run_cli(const std::string& args,
                      const std::vector<std::pair<std::string, std::string>>& environment = {}) {
  auto log = scratch_dir("log") / "out.txt";
  std::string env;
  for (const auto& [k, v] : environment) env += k + "=" + v + " ";
  std::string cmd = env + std::string(SCALESCOPE_EXE) + " " + args + " > " + log.string() + " 2>&1";
  int raw = std::system(cmd.c_str());
  CliRun r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  r.output = ss.str();
  std::filesystem::remove_all(log.parent_path());
  return r;
}

inline nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

}  // namespace scalescope::testing
