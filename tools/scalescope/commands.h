#pragma once
// Subcommands of the `scalescope` CLI. Each registers its flags and returns the action to run after parsing.

#include <functional>

#include <CLI/CLI.hpp>

namespace scalescope::cli {

/// Returns the exit status (0 success, 1 a failed run).
using Action = std::function<int()>;

Action add_train_command(CLI::App& app);
Action add_doctor_command(CLI::App& app);
Action add_comm_command(CLI::App& app);
Action add_topo_command(CLI::App& app);
Action add_analyze_command(CLI::App& app);

}  // namespace scalescope::cli
