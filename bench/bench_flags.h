#pragma once
// Flag parsing shared by the bench/ tools: CLI11 errors exit 2 with the tool's name, as `scalescope` does, not
// with CLI11's own codes (104 for a conversion, 105 for a validation).

#include <cstdio>

#include <CLI/CLI.hpp>

namespace scalescope::bench {

/// Parses argv into `app`. Returns −1 when the tool should run; else the exit status: 0 after --help, 2 after a
/// bad flag (the message, prefixed with `tool`, on stderr).
inline int parse_flags(CLI::App& app, int argc, char** argv, const char* tool) {
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: error: %s\n  run '%s --help'\n", tool, e.what(), tool);
    return 2;
  }
}

}  // namespace scalescope::bench
