// The line helpers of the training-log reader (declared in training_log_vocabulary.h).
#include "readers/job/training_log_vocabulary.h"

namespace scalescope::analyze::training_log_detail {

const std::vector<Finder>& finders() {
  static const std::vector<Finder> all = [] {
    std::vector<Finder> v;
    for (std::size_t e = 0; e < std::size(kCatalogue); ++e) {
      for (const char* p : kCatalogue[e].phrases) {
        if (p == nullptr) continue;
        Finder f;
        f.entry = e;
        std::string_view rest = p;
        while (true) {
          const auto amp = rest.find("&&");
          f.parts.push_back(rest.substr(0, amp));
          if (amp == std::string_view::npos) break;
          rest = rest.substr(amp + 2);
        }
        for (auto part : f.parts) f.searchers.emplace_back(part.begin(), part.end());
        v.push_back(std::move(f));
      }
    }
    return v;
  }();
  return all;
}
// The character pairs that can stand at a line break inside a catalogue phrase: (phrase[k-1], phrase[k]) for a break
// inside a word, (phrase[k-2], phrase[k]) for a break at a blank. A line whose last character and the next line's
// first character form none of them cannot hold a wrapped phrase.
const std::bitset<65536>& break_pairs() {
  static const std::bitset<65536> pairs = [] {
    std::bitset<65536> b;
    for (const Finder& f : finders())
      for (auto part : f.parts)
        for (std::size_t k = 1; k < part.size(); ++k) {
          b.set(static_cast<unsigned char>(part[k - 1]) << 8 | static_cast<unsigned char>(part[k]));
          if (k >= 2 && part[k - 1] == ' ')
            b.set(static_cast<unsigned char>(part[k - 2]) << 8 | static_cast<unsigned char>(part[k]));
        }
    return b;
  }();
  return pairs;
}
bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }
char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }
// Lower case with every run of blanks made one space, trimmed: what catalogue phrases are matched against.
std::string normalize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool blank = false;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f') {
      blank = true;
      continue;
    }
    if (blank && !out.empty()) out += ' ';
    blank = false;
    out += ascii_lower(c);
  }
  return out;
}
std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ascii_lower(c);
  return out;
}
// Whether `phrase` runs from the end of `tail` into the start of `head` (a message wrapped at a line break): with a
// blank between them, or glued (a break inside a word). Both are normalized (no blank at either end).
bool crosses(std::string_view tail, std::string_view head, std::string_view phrase) {
  if (tail.empty() || head.empty()) return false;
  const char last = tail.back();
  for (std::size_t k = 1; k < phrase.size(); ++k) {
    if (phrase[k] != head.front()) continue;
    const bool glued = phrase[k - 1] == last;
    const bool blank = k >= 2 && phrase[k - 1] == ' ' && phrase[k - 2] == last;
    if (!glued && !blank) continue;
    const std::string_view right = phrase.substr(k);
    if (head.size() < right.size() || head.substr(0, right.size()) != right) continue;
    // glued: tail ends with phrase[0, k); a blank at the break: phrase[k-1] is that blank
    const std::string_view left = phrase.substr(0, glued ? k : k - 1);
    if (tail.size() >= left.size() && tail.substr(tail.size() - left.size()) == left) return true;
  }
  return false;
}
// A plain number at s[pos]: "-12", "3.5", "1e-3", "10,050" (thousands separators), ".5" not. `end` gets the position
// after it.
std::optional<double> number_at(std::string_view s, std::size_t pos, std::size_t* end) {
  std::size_t i = pos;
  std::string digits;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) digits += s[i++];
  if (i >= s.size() || !is_digit(s[i])) return std::nullopt;
  while (i < s.size()) {
    if (is_digit(s[i])) {
      digits += s[i++];
    } else if (s[i] == ',' && i + 3 < s.size() && is_digit(s[i + 1]) && is_digit(s[i + 2]) && is_digit(s[i + 3]) &&
               (i + 4 >= s.size() || !is_digit(s[i + 4]))) {
      i += 1;  // a thousands separator
    } else {
      break;
    }
  }
  if (i < s.size() && s[i] == '.' && i + 1 < s.size() && is_digit(s[i + 1])) {
    digits += s[i++];
    while (i < s.size() && is_digit(s[i])) digits += s[i++];
  }
  if (i + 1 < s.size() && (s[i] == 'e' || s[i] == 'E') &&
      (is_digit(s[i + 1]) || ((s[i + 1] == '-' || s[i + 1] == '+') && i + 2 < s.size() && is_digit(s[i + 2])))) {
    digits += s[i++];
    if (s[i] == '-' || s[i] == '+') digits += s[i++];
    while (i < s.size() && is_digit(s[i])) digits += s[i++];
  }
  double v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || p != digits.data() + digits.size() || !std::isfinite(v)) return std::nullopt;
  if (end) *end = i;
  return v;
}
// "0:04:06.24" / "04:06" / "1:02:03" → seconds.
std::optional<double> clock_at(std::string_view s, std::size_t pos, std::size_t* end) {
  double total = 0;
  int parts = 0;
  std::size_t i = pos;
  while (parts < 4) {
    std::size_t e = i;
    auto v = number_at(s, i, &e);
    if (!v || *v < 0) return std::nullopt;
    total = total * 60 + *v;
    ++parts;
    i = e;
    if (i < s.size() && s[i] == ':' && i + 1 < s.size() && is_digit(s[i + 1])) {
      ++i;
      continue;
    }
    break;
  }
  if (parts < 2) return std::nullopt;
  if (end) *end = i;
  return total;
}
// The unit word right after a number at `pos` (one blank allowed): "ms", "s", "it/s", "samples/sec", "%".
std::string unit_at(std::string_view low, std::size_t pos) {
  std::size_t i = pos;
  if (i < low.size() && low[i] == ' ') ++i;
  std::size_t b = i;
  while (i < low.size() && (is_alpha(low[i]) || low[i] == '/' || low[i] == '%' || static_cast<unsigned char>(low[i]) >= 0x80)) ++i;
  return std::string(low.substr(b, i - b));
}
// A time in `unit` ("ms", "s", "min", "h", "us") converted to `want` ("ms" or "s").
std::optional<double> convert_time(double v, std::string_view unit, std::string_view want) {
  double s;
  if (unit == "ms" || unit == "msec") s = v / 1000;
  else if (unit == "s" || unit == "sec" || unit == "secs" || unit == "second" || unit == "seconds") s = v;
  else if (unit == "min" || unit == "mins" || unit == "minutes" || unit == "m") s = v * 60;
  else if (unit == "h" || unit == "hr" || unit == "hours") s = v * 3600;
  else if (unit == "us" || unit == "µs") s = v / 1e6;
  else return std::nullopt;
  return want == "ms" ? s * 1000 : s;
}
// Finds `key` in `low` at a word boundary (the character before is no letter, digit or '_'); npos if absent.
std::size_t find_key(std::string_view low, std::string_view key, std::size_t from) {
  while (true) {
    std::size_t p = low.find(key, from);
    if (p == std::string_view::npos) return p;
    const bool left = p == 0 || !is_word(low[p - 1]) || !is_word(key.front());
    const std::size_t e = p + key.size();
    const bool right = e >= low.size() || !is_word(key.back()) || !is_word(low[e]);
    if (left && right) return p;
    from = p + 1;
  }
}
// The position of the value after `key` at `p`: separators (blanks, ':', '=', quotes, '|', '>', runs of dots as in
// Megatron's argument dump "micro_batch_size ........ 4") skipped.
std::size_t value_pos(std::string_view low, std::size_t p) {
  std::size_t i = p;
  while (i < low.size()) {
    const char c = low[i];
    if (c == ' ' || c == ':' || c == '=' || c == '\'' || c == '"' || c == '|' || c == '>' || c == '\t') {
      ++i;
    } else if (c == '.' && i + 1 < low.size() && low[i + 1] == '.') {
      while (i < low.size() && low[i] == '.') ++i;
    } else {
      break;
    }
  }
  return i;
}
// The number after `key` ("world_size=8", "'train_runtime': 12.5", "num processes: 8"), with its end.
std::optional<double> number_after_key(std::string_view low, std::string_view key, std::size_t* end,
                                       std::size_t* key_at) {
  std::size_t from = 0;
  while (true) {
    const std::size_t p = find_key(low, key, from);
    if (p == std::string_view::npos) return std::nullopt;
    const std::size_t v = value_pos(low, p + key.size());
    std::size_t e = v;
    if (auto n = number_at(low, v, &e)) {
      if (end) *end = e;
      if (key_at) *key_at = p;
      return n;
    }
    from = p + 1;
  }
}
// The word after `key` (a value such as a model name or "true"), quotes and trailing punctuation removed.
std::optional<std::string> word_after_key(std::string_view text, std::string_view low, std::string_view key) {
  const std::size_t p = find_key(low, key);
  if (p == std::string_view::npos) return std::nullopt;
  std::size_t i = value_pos(low, p + key.size());
  std::size_t e = i;
  while (e < text.size() && text[e] != ' ' && text[e] != '\t' && text[e] != ',' && text[e] != '\'' && text[e] != '"' &&
         text[e] != ')' && text[e] != '}' && text[e] != ']' && text[e] != ';')
    ++e;
  if (e == i) return std::nullopt;
  return std::string(text.substr(i, e - i));
}
std::optional<bool> to_bool(std::string_view w) {
  const std::string l = lower(w);
  if (l == "true" || l == "1" || l == "yes") return true;
  if (l == "false" || l == "0" || l == "no") return false;
  return std::nullopt;
}
bool is_level_word(std::string_view w) {
  static constexpr std::string_view kLevels[] = {"INFO", "WARNING", "WARN", "ERROR", "DEBUG", "CRITICAL", "FATAL",
                                                  "I", "W", "E", "D", "info", "warning", "error", "debug"};
  return std::find(std::begin(kLevels), std::end(kLevels), w) != std::end(kLevels);
}
// "2025-06-17 16:23:09,123" or "03/13/2023 10:49:01" at the start of `s`: its length, else 0.
std::size_t timestamp_length(std::string_view s) {
  std::size_t i = 0;
  auto digits = [&](std::size_t n) {
    for (std::size_t k = 0; k < n; ++k, ++i)
      if (i >= s.size() || !is_digit(s[i])) return false;
    return true;
  };
  const std::size_t start = i;
  if (digits(4) && i < s.size() && s[i] == '-' && (++i, digits(2)) && i < s.size() && s[i] == '-' && (++i, digits(2))) {
  } else {
    i = start;
    if (!(digits(2) && i < s.size() && s[i] == '/' && (++i, digits(2)) && i < s.size() && s[i] == '/' && (++i, digits(4))))
      return 0;
  }
  if (i < s.size() && (s[i] == ' ' || s[i] == 'T')) {
    const std::size_t t = i + 1;
    std::size_t j = t;
    while (j < s.size() && (is_digit(s[j]) || s[j] == ':' || s[j] == '.' || s[j] == ',')) ++j;
    if (j > t + 4) i = j;
  }
  if (i < s.size() && (s[i] == 'Z')) ++i;
  return i;
}
// What launchers, loggers and pastes put before a line's text: "[rank1]:", "[default0]:", "0: ", "[1,0]<stdout>:",
// "(RayTrainWorker pid=123) ", "> " quote markers, "[80746] " viewer line numbers, timestamps with a level and a
// logger name ("2025-06-17 16:23:09 I [train.py:156] ", "03/13/2023 10:49:01 - INFO - name - ",
// "[INFO|trainer.py:2681] 2025-05-15 07:30:25,556 >> "), glog headers ("I0607 16:10:35.739390 515217 logger.cpp:173] ").
std::string_view strip_prefixes(std::string_view s) {
  for (int round = 0; round < 16; ++round) {
    s = trim_blanks(s);
    if (s.empty()) return s;
    if (s.front() == '>' && (s.size() == 1 || s[1] == ' ' || s[1] == '>')) {
      s.remove_prefix(1);
      continue;
    }
    if (s.front() == '[') {
      const std::size_t close = s.find(']');
      if (close != std::string_view::npos && close < 64) {
        std::string_view inner = s.substr(1, close - 1);
        const std::string li = lower(inner);
        const bool rank = (starts_with(li, "rank") && inner.size() > 4 && is_digit(inner[4])) ||
                          (starts_with(li, "default") && inner.size() > 7 && is_digit(inner[7]));
        const bool numeric = !inner.empty() && std::all_of(inner.begin(), inner.end(), [](char c) { return is_digit(c) || c == ','; });
        const bool stamp = timestamp_length(inner) > 0;
        const bool logger = contains(inner, "|") || li == "titan" ||
                            (inner.size() > 2 && is_level_word(inner.substr(0, inner.find_first_of("| ")))) ;
        if (rank || numeric || stamp || logger) {
          s.remove_prefix(close + 1);
          if (starts_with(s, "<stdout>") || starts_with(s, "<stderr>")) s.remove_prefix(8);
          if (starts_with(s, ":")) s.remove_prefix(1);
          continue;
        }
      }
      break;
    }
    if (s.front() == '(') {
      const std::size_t close = s.find(") ");
      if (close != std::string_view::npos && close < 80 && contains(s.substr(0, close), "pid=")) {
        s.remove_prefix(close + 1);
        continue;
      }
      break;
    }
    if (is_digit(s.front())) {
      if (const std::size_t ts = timestamp_length(s); ts > 0) {
        s.remove_prefix(ts);
        s = trim_blanks(s);
        // " - INFO - name - ", " I ", " >> ", ": "
        for (int k = 0; k < 3; ++k) {
          s = trim_blanks(s);
          if (starts_with(s, "- ")) s.remove_prefix(2);
          else if (starts_with(s, ">>")) s.remove_prefix(2);
          else if (starts_with(s, "|")) s.remove_prefix(1);
          else break;
        }
        s = trim_blanks(s);
        const std::size_t sp = s.find(' ');
        if (sp != std::string_view::npos && is_level_word(s.substr(0, sp))) {
          s.remove_prefix(sp + 1);
          s = trim_blanks(s);
          if (starts_with(s, "- ")) {
            // "- name - " after the level
            const std::size_t dash = s.find(" - ", 2);
            s.remove_prefix(2);
            if (dash != std::string_view::npos && dash < 80) s.remove_prefix(dash + 1);
          }
        }
        continue;
      }
      std::size_t i = 0;
      while (i < s.size() && i < 5 && is_digit(s[i])) ++i;
      if (i < s.size() && s[i] == ':' && (i + 1 >= s.size() || s[i + 1] == ' ')) {  // srun --label "0: "
        s.remove_prefix(i + 1);
        continue;
      }
      break;
    }
    // glog: "I0607 16:10:35.739390 515217 logger.cpp:173] "
    if ((s.front() == 'I' || s.front() == 'W' || s.front() == 'E' || s.front() == 'F') && s.size() > 6 && is_digit(s[1]) &&
        is_digit(s[4])) {
      const std::size_t close = s.find("] ");
      if (close != std::string_view::npos && close < 100) {
        s.remove_prefix(close + 1);
        continue;
      }
    }
    break;
  }
  return s;
}
std::optional<int> code_of_name(std::string_view low_name) {
  for (const auto& r : kNcclResults)
    if (contains(low_name, r.token) || low_name == r.name) return r.code;
  if (contains(low_name, "internal error")) return 3;
  if (contains(low_name, "remote error")) return 6;
  return std::nullopt;
}
std::string name_of_code(int code) {
  for (const auto& r : kNcclResults)
    if (r.code == code) return r.name;
  return "error " + std::to_string(code);
}
// diagnose::NcclWarning::category of a warning text.
std::string warning_category(std::string_view low) {
  const bool shm = contains(low, "shared memory") || contains(low, "/dev/shm") || contains(low, "shm_open") ||
                   contains(low, "shm.cc") || contains(low, "shm.h") || contains(low, "shmptr");
  if (shm && (contains(low, "no space") || contains(low, "posix_fallocate") || contains(low, "ftruncate") ||
              contains(low, "enospc") || contains(low, "(28)")))
    return "shm-space";
  if (shm) return "shm-create";
  if (contains(low, "posix_fallocate") || contains(low, "no space left")) return "shm-space";
  if (contains(low, "ibv_") || contains(low, "net/ib") || contains(low, "completion error") || contains(low, "ib_plugin") ||
      contains(low, "mlx5") || contains(low, "rdma"))
    return "ib";
  if (contains(low, "peer access") || contains(low, "p2p") || contains(low, "cudaipc") || contains(low, "ipc handle") ||
      contains(low, "cumemimport"))
    return "p2p";
  if (contains(low, "cuda failure") || contains(low, "cuda error") || contains(low, "cudaerror") || contains(low, "cuda driver"))
    return "cuda";
  if (contains(low, "socket") || contains(low, "connect") || contains(low, "recv") || contains(low, "bootstrap") ||
      contains(low, "send ") || contains(low, "connection"))
    return "socket";
  if (contains(low, "proxy")) return "proxy";
  return "other";
}

}  // namespace scalescope::analyze::training_log_detail
