#pragma once
// Text from files (kernel names, labels, paths) made safe to print on a terminal.

#include <string>

namespace scalescope::core {

/// `text` made safe for one line of a terminal: control characters (C0 such as NUL, newline, escape; DEL; C1
/// U+0080–U+009F) and the bidirectional embedding/override/isolate controls (which reorder what follows) become
/// '?', as do invalid UTF-8 bytes; text longer than `max_code_points` is cut at a code-point boundary and ends
/// with "...". Throws nothing.
std::string terminal_text(const std::string& text, std::size_t max_code_points);

/// `bytes` as valid UTF-8 that keeps every byte recoverable: well-formed UTF-8 (RFC 3629, Table 3-7 of the Unicode
/// Standard: no overlong forms, no surrogates) is copied; each other byte becomes the four characters \xNN (NN its
/// value in lower-case hex), and a backslash becomes two when anything was escaped (or `force`), so the escaping can
/// be undone. For arguments and environment values, which POSIX lets be any bytes but JSON cannot hold: a record of
/// several strings escapes all of them (`force`) once any needs it, so that "\xfe" typed and the byte 0xfe differ.
/// Sets `*escaped` (when given) to whether `bytes` holds a byte that is not UTF-8. Throws nothing.
std::string utf8_or_escaped(const std::string& bytes, bool* escaped = nullptr, bool force = false);

}  // namespace scalescope::core
