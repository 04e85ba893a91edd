#pragma once
// Counting parses, for the test that each input is parsed once per run (issue #37: "each input file is read and
// parsed once"). Every reader calls count_parse at the start of its parse of a text (a reader's full read, or a probe
// that runs the reader's own code over the text). Counting is off — count_parse returns at once — unless a
// ParseCounting is alive in the calling thread: the tests turn it on around one evidence::run and read the counts.

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>

namespace scalescope::core {

/// Turns counting on in this thread for its lifetime (not nestable: a second one throws std::logic_error).
class ParseCounting {
 public:
  ParseCounting();
  ~ParseCounting();
  ParseCounting(const ParseCounting&) = delete;
  ParseCounting& operator=(const ParseCounting&) = delete;
  /// (reader, a hash of the text) → how many times that reader parsed that text since this object was made.
  const std::map<std::pair<std::string, std::size_t>, int>& counts() const;
  /// The readers that parsed one text more than once, as "reader ×N" (empty when every parse was the only one).
  std::string repeated() const;
};

/// Adds one parse of `text` by `reader` when a ParseCounting is alive in this thread; nothing otherwise.
void count_parse(std::string_view reader, std::string_view text);

}  // namespace scalescope::core
