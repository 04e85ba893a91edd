#pragma once
// Errors that reach the user: one clear cause and what to do about it.

#include <stdexcept>
#include <string>

namespace scalescope::core {

/// An error the user can act on. `what()` is the cause ("cannot read data file 'x': No such file");
/// `remedy()` says what to do ("pass --data PATH or install the Debian package 'fortunes'").
/// The CLI prints both and exits non-zero; library code throws it for bad input, bad environments and
/// failed ranks, never for programming errors (those are assertions).
class Error : public std::runtime_error {
 public:
  Error(std::string cause, std::string remedy = {})
      : std::runtime_error(std::move(cause)), remedy_(std::move(remedy)) {}
  const std::string& remedy() const noexcept { return remedy_; }

 private:
  std::string remedy_;
};

/// A bad command line (unknown flag, value out of range): the CLI exits with status 2, as CLI11 does.
class UsageError : public Error {
 public:
  using Error::Error;
};

}  // namespace scalescope::core
