#pragma once
// A plain-text table with right-aligned numeric columns, for terminal output.

#include <string>
#include <vector>

#include "core/terminal_text.h"

namespace scalescope::report {

/// Text from a file made safe for a terminal table (core/terminal_text.h).
using core::terminal_text;

class TextTable {
 public:
  /// Column headers; their count fixes the row width.
  explicit TextTable(std::vector<std::string> headers);
  /// Adds a row. Throws core::Error if its width differs from the headers'.
  void add_row(std::vector<std::string> cells);
  /// The table: header, a rule, then rows; first column left-aligned, the rest right-aligned,
  /// two spaces between columns. Widths count UTF-8 code points, not bytes.
  std::string render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace scalescope::report
