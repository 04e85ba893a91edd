#pragma once
// Internal to the trace reader (trace_reader.cpp): the sliding-window JSON scanner that finds each value's span
// in a stream of any size — character classes outside strings, nesting kept on a stack up to kMaxDepth, line and
// column counted for messages, and the window grown up to the value-size and file-size limits of
// TraceReadOptions — so that the reader parses one event at a time with simdjson.

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "core/error.h"
#include "readers/trace/trace_byte_source.h"
#include "readers/trace/trace_reader.h"

namespace scalescope::analyze::trace_reader_internal {

constexpr std::size_t kInitialWindow = std::size_t{4} << 20;  // the sliding window's starting size
constexpr std::size_t kMaxDepth = 1024;                       // deeper nesting is refused, not recursed into

// ---------------------------------------------------------------------------------------------------------
// Character classes for the scanner (outside strings).

enum : std::uint8_t { kInvalid = 0, kScalar, kSpace, kQuote, kOpen, kClose, kPunct };

constexpr std::array<std::uint8_t, 256> make_classes() {
  std::array<std::uint8_t, 256> t{};
  for (char c : std::string_view("0123456789-+.eE")) t[static_cast<unsigned char>(c)] = kScalar;
  for (char c : std::string_view("truefalsn")) t[static_cast<unsigned char>(c)] = kScalar;  // true false null
  for (char c : std::string_view(" \t\r\n")) t[static_cast<unsigned char>(c)] = kSpace;
  t['"'] = kQuote;
  t['{'] = kOpen;
  t['['] = kOpen;
  t['}'] = kClose;
  t[']'] = kClose;
  t[','] = kPunct;
  t[':'] = kPunct;
  return t;
}
constexpr std::array<std::uint8_t, 256> kClass = make_classes();

inline bool is_word_char(unsigned char c) { return std::isalnum(c) || c == '_' || c == '.' || c == '-' || c == '+'; }

/// Newlines in [b, e): eight bytes at a time (an exact zero-byte test on word ^ 0x0a0a…, then a byte sum), as every
/// byte of a multi-GB file passes through here to keep line numbers for error messages.
inline std::uint64_t count_newlines(const char* b, const char* e) {
  constexpr std::uint64_t kNl = 0x0a0a0a0a0a0a0a0aULL, kLow7 = 0x7f7f7f7f7f7f7f7fULL;
  std::uint64_t n = 0;
  for (; e - b >= 8; b += 8) {
    std::uint64_t w;
    std::memcpy(&w, b, 8);
    w ^= kNl;  // newline bytes become zero
    const std::uint64_t t = ~(((w & kLow7) + kLow7) | w | kLow7);  // high bit set exactly for zero bytes
    n += ((t >> 7) * 0x0101010101010101ULL) >> 56;  // sum of the 0/1 bytes (no popcnt instruction needed)
  }
  for (; b < e; ++b) n += *b == '\n';
  return n;
}

// ---------------------------------------------------------------------------------------------------------
// The sliding-window scanner.

struct Span {
  std::size_t begin = 0;  // indices into the window
  std::size_t end = 0;
};

/// What a scanned value is, for messages: a text, or the 1-based index of an event (formatted only on error, so
/// that the hot loop builds no string per event).
struct What {
  std::string_view text;
  std::uint64_t event = 0;
  std::string str() const { return event ? fmt::format("event {} of the event array", event) : std::string(text); }
};

class Scanner {
 public:
  /// `size_hint`: the input's size when known (a plain file), so that a small trace gets a small window.
  Scanner(ByteSource& src, std::string name, const TraceReadOptions& options, std::uint64_t size_hint)
      : src_(src), name_(std::move(name)), max_value_(options.max_value_bytes), max_bytes_(options.max_json_bytes) {
    const std::uint64_t window = std::clamp<std::uint64_t>(size_hint + 1, 64 * 1024, kInitialWindow);
    buf_.resize(static_cast<std::size_t>(window) + simdjson::SIMDJSON_PADDING);
  }

  std::uint64_t bytes_read() const { return base_offset_ + end_; }
  bool saw_plugin_category = false;

  /// The next byte that is not whitespace (consumed up to it), or -1 at the end of input.
  int peek_nonspace() {
    for (;;) {
      while (pos_ < end_) {
        const auto c = static_cast<unsigned char>(buf_[pos_]);
        if (kClass[c] != kSpace) return c;
        ++pos_;
      }
      if (!refill(pos_)) return -1;
    }
  }
  void advance() { ++pos_; }

  /// Skips a UTF-8 byte-order mark at the very start (editors on Windows add one; JSON parsers may ignore it).
  void skip_bom() {
    while (end_ < 3 && !eof_) refill_shift(0, 0);  // sources may return fewer bytes than asked
    if (end_ >= 3 && std::memcmp(buf_.data(), "\xEF\xBB\xBF", 3) == 0) pos_ = 3;
  }

  /// Scans the JSON value that starts at the current position. With `keep`, the value's bytes stay in the
  /// window and the returned span is valid until the next call; without, they are discarded as the scan goes
  /// (any size). Throws core::Error on an invalid byte or the end of input inside the value.
  Span scan_value(bool keep, const What& what) {
    std::size_t start = pos_;
    std::size_t p = pos_;
    // Called with p == end_: reads more input, keeping the value's bytes when `keep`. False at the end.
    auto more = [&]() -> bool {
      const std::size_t keep_from = keep ? start : p;
      const std::size_t shift = refill_shift(keep_from, keep ? p - start : 0);
      if (keep) start -= shift;
      p -= shift;
      if (p < end_) return true;
      if (!eof_)
        fail(start, fmt::format("{} is larger than the {} MiB limit", what.str(), max_value_ >> 20),
             "this is not a Kineto trace event; if it is, raise TraceReadOptions::max_value_bytes");
      return false;
    };
    // p is just after an opening quote; leaves p after the closing one. Two memchr per string: the quote,
    // then a backslash before it (rare in traces), so long names cost little.
    auto skip_string = [&]() {
      for (;;) {
        if (p >= end_ && !more()) truncated(p, what);
        const char* b = buf_.data();
        // Most strings in a trace are short keys and names: look at up to 32 bytes inline before calling memchr.
        const std::size_t inline_end = std::min(end_, p + 32);
        std::size_t q = p;
        while (q < inline_end && b[q] != '"' && b[q] != '\\') ++q;
        if (q < inline_end && b[q] == '"') {
          p = q + 1;
          return;
        }
        const char* quote = nullptr;
        const char* bsl = nullptr;
        if (q < inline_end) {
          bsl = b + q;
        } else {
          quote = static_cast<const char*>(std::memchr(b + q, '"', end_ - q));
          const std::size_t limit = quote ? static_cast<std::size_t>(quote - b) : end_;
          bsl = static_cast<const char*>(std::memchr(b + q, '\\', limit - q));
        }
        if (bsl != nullptr) {
          p = static_cast<std::size_t>(bsl - b) + 2;  // the escaped byte is skipped, whatever it is
          if (p > end_) {                             // the backslash ended the window
            p = end_;
            if (!more()) truncated(p, what);
            ++p;
          }
          continue;
        }
        if (quote != nullptr) {
          p = static_cast<std::size_t>(quote - b) + 1;
          return;
        }
        p = end_;
      }
    };
    if (p >= end_ && !more()) truncated(p, what);
    stack_.clear();
    auto c = static_cast<unsigned char>(buf_[p]);
    switch (kClass[c]) {
      case kOpen:
        stack_.push_back(static_cast<char>(c));
        ++p;
        break;
      case kQuote:
        ++p;
        skip_string();
        pos_ = p;
        return {start, p};
      case kScalar:
        for (;;) {
          while (p < end_ && kClass[static_cast<unsigned char>(buf_[p])] == kScalar) ++p;
          if (p < end_ || !more()) break;
        }
        if (p < end_ && !ends_scalar(static_cast<unsigned char>(buf_[p]))) invalid(p, what);
        pos_ = p;
        return {start, p};
      default:
        invalid(p, what);
    }
    while (!stack_.empty()) {
      if (p >= end_ && !more()) truncated(p, what);
      c = static_cast<unsigned char>(buf_[p]);
      switch (kClass[c]) {
        case kScalar:
        case kSpace:
        case kPunct:
          ++p;
          break;
        case kQuote:
          ++p;
          skip_string();
          break;
        case kOpen:
          if (stack_.size() >= kMaxDepth)
            fail(p, fmt::format("JSON nested deeper than {} levels in {}", kMaxDepth, what.str()),
                 "this is not a profiler trace");
          stack_.push_back(static_cast<char>(c));
          ++p;
          break;
        case kClose:
          if ((c == '}') != (stack_.back() == '{'))
            fail(p, fmt::format("'{}' closes a '{}' in {}", static_cast<char>(c), stack_.back(), what.str()),
                 "the JSON is damaged: regenerate or re-download the trace");
          stack_.pop_back();
          ++p;
          break;
        default:
          invalid(p, what);
      }
      if (keep && p - start > max_value_)
        fail(start, fmt::format("{} is larger than the {} MiB limit", what.str(), max_value_ >> 20),
             "this is not a Kineto trace event; if it is, raise TraceReadOptions::max_value_bytes");
    }
    pos_ = p;
    return {start, p};
  }

  /// Reads a JSON string (the current byte is its opening quote) and returns it unescaped (\" \\ \/ and
  /// \uXXXX below U+0080 are decoded; other escapes are kept as written). For keys: at most 4 KiB.
  std::string read_key() {
    const Span s = scan_value(true, What{"a key"});
    std::string out;
    for (std::size_t i = s.begin + 1; i + 1 < s.end; ++i) {
      char c = buf_[i];
      if (c == '\\' && i + 2 < s.end) {
        c = buf_[++i];
        if (c == 'u' && i + 4 < s.end) {
          const std::string hex(buf_.data() + i + 1, 4);
          const long v = std::strtol(hex.c_str(), nullptr, 16);
          if (v > 0 && v < 0x80) {
            out += static_cast<char>(v);
            i += 4;
            continue;
          }
          out += "\\u";
          continue;
        }
      }
      out += c;
      if (out.size() > 4096) break;
    }
    return out;
  }

  const char* data(std::size_t i) const { return buf_.data() + i; }
  /// Bytes readable from index i on (the value plus at least SIMDJSON_PADDING).
  std::size_t capacity_from(std::size_t i) const { return buf_.size() - i; }

  [[noreturn]] void fail(std::size_t index, const std::string& cause, const std::string& remedy) const {
    throw core::Error(fmt::format("'{}': {} at {}", name_, cause, where(index)), remedy);
  }
  [[noreturn]] void fail_here(const std::string& cause, const std::string& remedy) const { fail(pos_, cause, remedy); }

  /// "byte N (line L, column C)" for window index i; bytes count from 0, lines and columns (bytes) from 1.
  std::string where(std::size_t i) const {
    const char* b = buf_.data();
    const std::uint64_t line = base_lines_ + count_newlines(b, b + i) + 1;
    std::size_t col_start = i;
    while (col_start > 0 && b[col_start - 1] != '\n') --col_start;
    const std::uint64_t column = (col_start == 0 ? base_column_ : 0) + (i - col_start) + 1;
    return fmt::format("byte {} (line {}, column {})", base_offset_ + i, line, column);
  }

  /// Describes and throws for the invalid byte at index p (the start of the offending token when it is a word).
  [[noreturn]] void invalid(std::size_t p, const What& what) const {
    const char* b = buf_.data();
    std::size_t s = p;
    while (s > 0 && is_word_char(static_cast<unsigned char>(b[s - 1])) && p - s < 64) --s;
    std::size_t e = p;
    while (e < end_ && is_word_char(static_cast<unsigned char>(b[e])) && e - s < 64) ++e;
    const std::string token(b + s, e - s);
    const auto c = static_cast<unsigned char>(b[p]);
    std::string looks;
    bool plugin = saw_plugin_category;
    if (token.size() > 2 && token[0] == '0' && (token[1] == 'x' || token[1] == 'X')) {
      looks = "unquoted hex value " + token;
      plugin = true;
    } else if (token == "NaN" || token == "Infinity" || token == "-Infinity" || token == "nan" || token == "inf") {
      looks = "non-JSON number " + token;
    } else if (!token.empty() && std::isalpha(static_cast<unsigned char>(token[0]))) {
      looks = "unquoted word " + token;
      if (token.rfind("nccl", 0) == 0) plugin = true;
    } else if (c == '\'') {
      looks = "single-quoted string";
    } else if (c == '}' || c == ']') {
      looks = fmt::format("unexpected '{}'", static_cast<char>(c));
    } else if (c >= 0x20 && c < 0x7f) {
      looks = fmt::format("unexpected character '{}'", static_cast<char>(c));
    } else {
      looks = fmt::format("unexpected byte 0x{:02x}", c);
    }
    if (s == p || !std::isalnum(c)) s = p;
    std::string cause = fmt::format("{} at {} in {}", looks, where(s), what.str());
    if (plugin) {
      throw core::Error(fmt::format("'{}': {}: not a Kineto trace (an NCCL profiler-plugin dump?)", name_, cause),
                        "pass the Chrome trace that torch.profiler writes (export_chrome_trace or "
                        "tensorboard_trace_handler); NCCL's example profiler plugin writes values such as "
                        "0x262ca50 and ncclFloat32 unquoted, which is not JSON");
    }
    throw core::Error(fmt::format("'{}': not valid JSON: {}", name_, cause),
                      "pass a Chrome trace written by torch.profiler; if the file was edited or cut, regenerate it");
  }

  [[noreturn]] void truncated(std::size_t p, const What& what) const {
    throw core::Error(fmt::format("'{}': the file ends inside {} at {}: the trace is incomplete", name_, what.str(),
                                  where(std::min(p, end_))),
                      "the profiler was interrupted while writing, or the copy is incomplete: regenerate or "
                      "copy the trace again");
  }

  std::uint64_t lines_before() const { return base_lines_; }
  std::size_t position() const { return pos_; }

 private:
  static bool ends_scalar(unsigned char c) { return kClass[c] == kSpace || kClass[c] == kPunct || kClass[c] == kClose; }

  /// Makes room and reads more input, keeping the bytes from index `keep_from` on. Returns false at the end.
  bool refill(std::size_t keep_from) {
    refill_shift(keep_from, 0);
    return pos_ < end_;
  }

  /// Moves the bytes from `keep_from` on to the front of the window, grows the window when the value being
  /// kept (`held` bytes) leaves less than a chunk of room, and reads more input. Returns by how much indices
  /// moved down. At the end of input it changes nothing and returns 0.
  std::size_t refill_shift(std::size_t keep_from, std::size_t held) {
    if (eof_) return 0;
    const char* b = buf_.data();
    const std::uint64_t newlines = count_newlines(b, b + keep_from);
    base_lines_ += newlines;
    if (newlines == 0) {
      base_column_ += keep_from;
    } else {
      std::size_t last = keep_from;
      while (b[last - 1] != '\n') --last;
      base_column_ = keep_from - last;
    }
    base_offset_ += keep_from;
    std::memmove(buf_.data(), buf_.data() + keep_from, end_ - keep_from);
    end_ -= keep_from;
    pos_ = pos_ >= keep_from ? pos_ - keep_from : 0;
    const std::size_t window = buf_.size() - simdjson::SIMDJSON_PADDING;
    if (window - end_ < kChunk && held + kChunk > window / 2 && window < max_value_ + kInitialWindow)
      buf_.resize(window * 2 + simdjson::SIMDJSON_PADDING);
    const std::size_t room = buf_.size() - simdjson::SIMDJSON_PADDING - end_;
    if (room > 0) {
      const std::size_t got = src_.read(buf_.data() + end_, room);
      if (got == 0) eof_ = true;
      end_ += got;
      if (base_offset_ + end_ > max_bytes_)  // a decompression bomb, or a trace larger than any real one
        throw core::Error(fmt::format("'{}' holds more than {} bytes of JSON{}: the bound on one trace", name_, max_bytes_,
                                      max_bytes_ >= (1u << 30) ? fmt::format(" ({:.1f} GiB)", max_bytes_ / double(1u << 30)) : ""),
                          "profile a shorter window, or raise the bound (analyze --max-trace-bytes N) if the trace is genuine");
    }
    // simdjson reads up to SIMDJSON_PADDING bytes past a value; make them harmless whitespace.
    std::memset(buf_.data() + end_, ' ', simdjson::SIMDJSON_PADDING);
    return keep_from;
  }

  ByteSource& src_;
  std::string name_;
  std::size_t max_value_;
  std::uint64_t max_bytes_;
  std::vector<char> buf_;
  std::size_t pos_ = 0;
  std::size_t end_ = 0;
  bool eof_ = false;
  std::uint64_t base_offset_ = 0;  // stream offset of buf_[0]
  std::uint64_t base_lines_ = 0;   // newlines before buf_[0]
  std::uint64_t base_column_ = 0;  // bytes between the last newline before buf_[0] and buf_[0]
  std::vector<char> stack_;
};

}  // namespace scalescope::analyze::trace_reader_internal
