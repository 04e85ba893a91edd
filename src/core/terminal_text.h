#pragma once
// Text from files (kernel names, labels, paths) made safe to print on a terminal.

#include <string>

namespace scalescope::core {

/// `text` made safe for one line of a terminal: control characters (C0 such as NUL, newline, escape; DEL; C1
/// U+0080–U+009F) and the bidirectional embedding/override/isolate controls (which reorder what follows) become
/// '?', as do invalid UTF-8 bytes; text longer than `max_code_points` is cut at a code-point boundary and ends
/// with "...". Throws nothing.
std::string terminal_text(const std::string& text, std::size_t max_code_points);

}  // namespace scalescope::core
