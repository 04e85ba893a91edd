// The nccl-tests reader (nccl_tests_parser.h): the parser that reads an output line by line — its version, devices,
// command line, header, rows (cut, wrapped or interleaved with NCCL's log) and footer — then settles the collective
// and the rank count from what the text and the columns allow; the split of a text holding several tables; and the
// reading of files. The pieces of a line it reads with are in nccl_tests_text.cpp (nccl_tests_internal.h).

#include "readers/nccl/nccl_tests_parser.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/parse_count.h"

#include "core/error.h"

#include "readers/nccl/nccl_tests_internal.h"

namespace scalescope::analyze {
namespace {

using namespace nccl_tests_internal;

/// What Parser::run throws for an nccl-tests text cut before its first result row: parse_nccl_tests_tables keeps
/// the tables before such a last part, with a warning.
struct NoResultRow : core::Error {
  using core::Error::Error;
};

class Parser {
 public:
  /// `text`'s first line is line `first_line` of the whole text (a table cut out of it by split_point()).
  Parser(std::string_view text, std::string source_name, const NcclTestsParseOptions& options, int first_line = 1)
      : text_(text), source_name_(std::move(source_name)), options_(options), first_line_(first_line) {}

  Sweep run() {
    split_lines();
    for (std::size_t i = 0; i < lines_.size(); ++i) handle_line(line_number(i), lines_[i]);
    if (sweep_.rows.empty()) throw_no_rows();
    finish();
    sweep_.source = valid_utf8(sweep_.source);
    if (sweep_.nccl_version) sweep_.nccl_version = valid_utf8(*sweep_.nccl_version);
    for (auto& d : sweep_.devices) d = valid_utf8(d);
    for (auto& w : sweep_.warnings) w = valid_utf8(w);
    for (auto& r : sweep_.rows) {
      r.type_name = valid_utf8(r.type_name);
      r.redop_name = valid_utf8(r.redop_name);
    }
    return std::move(sweep_);
  }

  /// Reads the text up to a second results table and returns the last line of the first one's part of the text
  /// (its rows, its footer and what follows them before the next test's first line: its version or "Collective
  /// test starting" line, its "nThread" line, its device list, a command line naming its program, or the header
  /// line scalescope prints above each table); std::nullopt when the text holds at most one table. What it read is
  /// not kept: each part is parsed again on its own. Reads line by line up to that point only (no split_lines of
  /// the whole rest), so that splitting a text into N tables reads it about twice, not N times.
  std::optional<int> split_point() {
    splitting_ = true;
    int number = first_line_;
    for (std::size_t start = 0; start < text_.size() && !split_at_; ++number) {
      std::size_t nl = text_.find('\n', start);
      if (nl == std::string_view::npos) nl = text_.size();
      handle_line(number, text_.substr(start, nl - start));
      start = nl + 1;
    }
    return split_at_;
  }

 private:
  int line_number(std::size_t index) const { return first_line_ + static_cast<int>(index); }
  /// Whether line `number` is the text's last (run() only: split_point() keeps no lines, and needs no cut-row notes).
  bool is_last_line(int number) const { return !lines_.empty() && number == line_number(lines_.size() - 1); }
  // Where the lines after a table's last row stand: the first that starts another test, the last that ends this one.
  void mark_test_start(int number) {
    if (rows_in_table_ > 0 && !next_test_starts_) next_test_starts_ = number;
    // A test whose header came but no row (it died first): it ends before the next test's first line.
    if (splitting_ && rows_in_table_ == 0 && header_in_part_ && !split_at_) split_at_ = number - 1;
  }
  void mark_table_end(int number) {
    if (rows_in_table_ > 0 && !next_test_starts_) table_ends_ = number;
  }

  void warn(int line, const std::string& what) { sweep_.warnings.push_back(fmt::format("line {}: {}", line, what)); }
  void warn(const std::string& what) { sweep_.warnings.push_back(what); }

  void split_lines() {
    std::size_t start = 0;
    while (start < text_.size()) {
      std::size_t nl = text_.find('\n', start);
      if (nl == std::string_view::npos) nl = text_.size();
      lines_.push_back(text_.substr(start, nl - start));
      start = nl + 1;
    }
    // The last line is cut when the text does not end in a newline or in blank space.
    last_line_cut_ = !text_.empty() && text_.back() != '\n' && !is_space(text_.back());
  }

  void handle_line(int number, std::string_view raw) {
    std::string_view s = trim(strip_launcher_prefix(raw));
    if (s.empty()) return;
    if (is_nccl_log_line(s)) {
      read_log_line(s);
      return;
    }
    if (starts_with(s, "NCCL version")) {  // printed by NCCL without a log prefix (NCCL_DEBUG=WARN/VERSION)
      auto tok = split_ws(s);
      if (tok.size() >= 3 && !sweep_.nccl_version) sweep_.nccl_version = clean_version(tok[2]);
      return;
    }
    const bool comment = s.front() == '#';
    std::string_view content = s;
    while (!content.empty() && (content.front() == '#' || is_space(content.front()))) content.remove_prefix(1);
    auto tok = split_ws(content);
    if (tok.empty()) return;

    if (starts_with(content, "nccl-tests version")) {
      seen_nccl_tests_ = true;
      mark_test_start(number);
      if (tok.size() >= 3) tool_ = "nccl-tests " + std::string(tok[2]);
      for (auto t : tok)
        if (starts_with(t, "nccl-library=")) {
          long long code = 0;
          if (parse_i64(t.substr(13), code) && code > 0 && code < 1'000'000) library_version_ = decode_nccl_version_code(code);
        }
      return;
    }
    if (starts_with(content, "rccl-tests")) {
      seen_nccl_tests_ = true;
      mark_test_start(number);
      tool_ = "rccl-tests";
      if (auto v = content.find("Version"); v != std::string_view::npos) {
        auto rest = split_ws(content.substr(v + 7));
        if (!rest.empty()) tool_ += " " + std::string(rest.front());
      }
      return;
    }
    if (starts_with(content, "Collective test starting:") || starts_with(content, "Collective test concluded:")) {
      seen_nccl_tests_ = true;
      if (starts_with(content, "Collective test starting:")) mark_test_start(number);
      else mark_table_end(number);
      if (tok.size() >= 4)
        if (auto cl = parse_command_line({tok[3]}, number)) {
          cl->ranks.reset();
          programs_.push_back(*cl);
        }
      if (starts_with(content, "Collective test concluded:")) in_table_ = false;
      return;
    }
    if (tok[0] == "nThread") {
      seen_nccl_tests_ = true;
      mark_test_start(number);
      preamble_lines_.push_back(number);
      // "nThread T nGpus G …": the ranks each process drives (T × G), the whole world size in one process.
      const auto t = flag_value(tok, 0, tok.size(), {"nThread"}), g = flag_value(tok, 0, tok.size(), {"nGpus"});
      if (!per_process_ranks_ && t && g && *t < 1000 && *g < 1000) {
        per_process_ranks_ = *t * *g;
        per_process_ranks_line_ = number;
      }
      return;
    }
    if (content == "Using devices") {
      seen_nccl_tests_ = true;
      mark_test_start(number);
      return;
    }
    if (tok[0] == "Rank" && tok.size() >= 2 && content.find(" device ") != std::string_view::npos) {
      seen_nccl_tests_ = true;
      mark_test_start(number);
      long long r = 0;
      if (parse_i64(tok[1], r) && r >= 0 && r < 10'000'000) {
        device_ranks_.push_back(r);
        std::string normal;
        for (auto t : tok) normal += (normal.empty() ? "" : " ") + std::string(t);
        sweep_.devices.push_back(normal);
      }
      return;
    }
    if (starts_with(content, "Avg bus bandwidth")) {
      in_table_ = false;
      mark_table_end(number);
      auto colon = content.find(':');
      if (colon != std::string_view::npos) {
        auto rest = split_ws(content.substr(colon + 1));
        std::optional<Number> v = rest.empty() ? std::nullopt : parse_number(rest.front());
        if (!v) warn(number, "the \"Avg bus bandwidth\" footer has no readable number");
        else if (sweep_.reported_avg_busbw_gbps) warn(number, "another \"Avg bus bandwidth\" footer; the first is kept");
        else sweep_.reported_avg_busbw_gbps = v->value;
      }
      return;
    }
    if (starts_with(content, "Out of bounds values")) {
      in_table_ = false;
      mark_table_end(number);
      return;
    }
    if (auto layout = header_layout(tok)) {
      seen_nccl_tests_ = true;
      // Values are placed by nccl-tests' fixed order (time, algbw, busbw in each half), not by the header's words:
      // a header in another order would have its columns read under the wrong names, silently.
      const auto at = [&](std::string_view w) { return std::find(tok.begin(), tok.end(), w) - tok.begin(); };
      if (std::count(tok.begin(), tok.end(), "time") > 0 && !(at("time") < at("algbw") && at("algbw") < at("busbw")))
        throw core::Error(fmt::format("{}: the header at line {} orders its columns otherwise than nccl-tests (time, "
                                      "algbw, busbw): its values cannot be placed under the right names",
                                      source_text(),
                                      number),
                          "pass the output as nccl-tests printed it");
      if (rows_in_table_ > 0 && splitting_) {
        split_at_ = next_test_starts_ ? *next_test_starts_ - 1 : table_ends_.value_or(last_row_line_);
        return;
      }
      if (rows_in_table_ > 0) {
        // Two tables (two tests, or two runs of different rank counts) pooled into one summary give a plateau, a
        // peak and an α–β fit that belong to no measurement: refused, naming where the second one starts.
        throw core::Error(fmt::format("{}: a second results table starts at line {} (two tests or runs in one text): "
                                      "their rows would be pooled into one summary that belongs to neither",
                                      source_text(),
                                      number),
                          "split the text, one test run per file (e.g. with csplit at the '#  size' header lines); if "
                          "the processes of one mpirun each printed a table, nccl-tests was built without MPI and "
                          "each ran alone: rebuild it with 'make MPI=1'");
      }
      layout_ = *layout;
      rows_in_table_ = 0;
      in_table_ = true;
      header_in_part_ = true;
      return;
    }
    if (content.find("(B)") != std::string_view::npos || content.find("(GB/s)") != std::string_view::npos ||
        content.find("out-of-place") != std::string_view::npos || content.find("in-place") != std::string_view::npos)
      return;  // units line, section line (possibly a cut fragment of one)
    if (comment) {
      if (auto header = parse_report_header(tok, number)) {
        mark_test_start(number);
        programs_.push_back(*header);
        // "scalescope comm (mpi): …" names the tool that measured; a re-reported nccl-tests file keeps its own.
        if (tool_.empty() && tok.size() >= 3 && tok[0] == "scalescope" && tok[1] == "comm" && tok[2].ends_with("):"))
          tool_ = "scalescope comm " + std::string(tok[2].substr(0, tok[2].size() - 1));
      }
      return;
    }

    // A command continued over lines that end in '\' ("mpirun -np 16 \", "  ./all_reduce_perf -g 1") is read as
    // one line, numbered by its first: its launcher and program are on different lines.
    if (content.back() == '\\') {
      if (continued_.empty()) continued_from_ = number;
      continued_ += std::string(content.substr(0, content.size() - 1)) + " ";
      return;
    }
    std::string joined;
    std::vector<std::string_view> command_tok = tok;
    int command_line_number = number;
    if (!continued_.empty()) {
      joined = std::move(continued_) + std::string(content);
      continued_.clear();
      command_tok = split_ws(joined);
      command_line_number = continued_from_;
    }
    if (read_row(number, tok)) return;
    if (auto cl = parse_command_line(command_tok, command_line_number)) {
      mark_test_start(command_line_number);
      programs_.push_back(*cl);
      return;
    }
    if (continue_row(number, tok)) return;
    std::uint64_t n = 0;
    const bool cut_here = last_line_cut_ && is_last_line(number);
    if (in_table_ && (parse_u64(tok[0], n) || parse_number(tok[0])))
      warn(number, fmt::format("{}: '{}' skipped", cut_here ? "the text ends inside a row before its type" : "looks like a result row but lacks its type or values", shorten(content)));
    else if (in_table_)
      warn(number, fmt::format("not a result row inside the table: '{}' skipped", shorten(content)));
  }

  void read_log_line(std::string_view s) {
    auto tok = split_ws(s);
    for (std::size_t i = 0; i + 1 < tok.size(); ++i) {
      if (tok[i] == "version" && i > 0 && tok[i - 1] == "NCCL" && !sweep_.nccl_version)
        sweep_.nccl_version = clean_version(tok[i + 1]);
      long long n = 0;
      if (tok[i] == "nranks" && parse_i64(tok[i + 1], n) && n > 0 && n < 10'000'000)
        log_nranks_ = std::max(log_nranks_.value_or(0), n);
    }
  }

  // Finds "size count type" anywhere in the line (text before it is ignored with a warning) and reads the row.
  bool read_row(int number, const std::vector<std::string_view>& tok) {
    std::size_t start = tok.size();
    for (std::size_t i = 0; i + 2 < tok.size(); ++i) {
      std::uint64_t a = 0, b = 0;
      if (parse_u64(tok[i], a) && parse_u64(tok[i + 1], b) && is_type_token(tok[i + 2])) {
        start = i;
        break;
      }
    }
    if (start == tok.size()) return false;
    if (start > 0) {
      std::string prefix;
      for (std::size_t i = 0; i < start; ++i) prefix += (i ? " " : "") + std::string(tok[i]);
      warn(number, fmt::format("text before the row ('{}') ignored", shorten(prefix, 40)));
    }
    seen_nccl_tests_ = true;
    in_table_ = true;
    ++rows_in_table_;
    last_row_line_ = number;
    next_test_starts_.reset();
    table_ends_.reset();

    SweepRow row;
    RowInfo info;
    info.line = number;
    parse_u64(tok[start], row.size_bytes);
    std::uint64_t count = 0;
    parse_u64(tok[start + 1], count);
    row.count = count;
    if (auto t = comm::parse_data_type(tok[start + 2])) row.type = t;
    else row.type_name = std::string(tok[start + 2]);

    std::vector<std::string_view> rest(tok.begin() + static_cast<long>(start) + 3, tok.end());
    Layout layout = choose_layout(number, rest);
    const auto fields = layout.fields();
    std::vector<std::string> missing;
    const bool cut_here = last_line_cut_ && is_last_line(number);
    std::size_t usable = std::min(rest.size(), fields.size());
    if (cut_here && usable > 0 && usable == rest.size()) {
      // The text ends inside this row: its last value may have lost digits ("78.7" of "78.71", "N" of "N/A").
      // A complete row keeps its last value when it reads as one ("N/A" cannot be the start of another).
      const std::string_view last = rest[usable - 1];
      const bool complete = usable == fields.size() && !layout.timestamp;
      if (complete && (parse_number(last) || is_na(last))) {
        if (!is_na(last))
          warn(number, fmt::format("the text ends without a newline after this row; its last value '{}' is kept but may "
                                   "be cut off", last));
      } else {
        --usable;
        warn(number, fmt::format("the text ends inside this row; its last value '{}' ({}) may be cut off and is not used",
                                 last, field_name(fields[usable].first, fields[usable].second, layout)));
      }
    }
    for (std::size_t k = 0; k < fields.size(); ++k) {
      auto [f, dir] = fields[k];
      if (k >= usable) {
        missing.push_back(field_name(f, dir, layout));
        continue;
      }
      assign(number, row, info, f, dir, rest[k], layout);
    }
    if (!missing.empty()) {
      warn(number, fmt::format("row for size {} is cut off: no {}", row.size_bytes, join_fields(missing)));
      pending_ = PendingRow{sweep_.rows.size(), layout, usable};
    } else {
      pending_.reset();
    }
    const std::size_t expected_extra = layout.timestamp ? 2 : 0;
    if (rest.size() > fields.size() + expected_extra) {
      std::string extra;
      for (std::size_t k = fields.size() + expected_extra; k < rest.size(); ++k) extra += (extra.empty() ? "" : " ") + std::string(rest[k]);
      warn(number, fmt::format("values after the last column ignored: '{}'", shorten(extra, 40)));
    }
    // The "error" column of old outputs is a maximum error, not a count: only a #wrong header, or a whole number
    // where no header names the column (1e-07 of a headerless old table is no count of elements), counts.
    if (layout.wrong_name == "#wrong") {
      const double wrong = std::max(row.out_of_place.wrong.value_or(0.0), row.in_place.wrong.value_or(0.0));
      if (wrong > 0 && (layout.from_header || wrong == std::floor(wrong))) {
        ++sweep_.rows_with_wrong_elements;
        warn(number, fmt::format("size {}: #wrong {:g}: the run's data check found wrong elements, so this row's "
                                 "bandwidth is not that of a correct collective",
                                 row.size_bytes, wrong));
      }
    }
    check_time_against_algbw(number, row);
    sweep_.rows.push_back(std::move(row));
    infos_.push_back(info);
    return true;
  }

  /// nccl-tests computes algbw = size / time: a row whose two disagree (an edited or corrupt value, a time of 0 or
  /// 1e308) would put a time into the α–β fit and a bandwidth into the plateau that belong to no measurement.
  /// Checked where rounding cannot explain a gap (algbw ≥ 1 GB/s, time ≥ 10 µs: 5 %); such a direction's time,
  /// algbw and busbw are not used.
  void check_time_against_algbw(int number, SweepRow& row) {
    for (int dir = 0; dir < 2; ++dir) {
      SweepTiming& t = dir == 0 ? row.out_of_place : row.in_place;
      if (row.size_bytes == 0 || !t.time_us || !t.algbw_gbps) continue;
      const double implied = *t.time_us > 0 ? static_cast<double>(row.size_bytes) / (*t.time_us * 1e3) : INFINITY;
      const bool zero_time = *t.time_us <= 0;
      const bool checkable = *t.algbw_gbps >= 1.0 && *t.time_us >= 10.0;
      if (!zero_time && !(checkable && std::abs(implied - *t.algbw_gbps) > 0.05 * *t.algbw_gbps)) continue;
      warn(number, zero_time
                       ? fmt::format("size {}: {} time 0 for {} bytes is no measurement; its time and bandwidths are "
                                     "not used",
                                     row.size_bytes, dir == 0 ? "out-of-place" : "in-place", row.size_bytes)
                       : fmt::format("size {}: {} time {:g} µs gives algbw {:.4g} GB/s, but the row says {:.4g}: the "
                                     "row contradicts itself, so its time and bandwidths are not used",
                                     row.size_bytes, dir == 0 ? "out-of-place" : "in-place", *t.time_us, implied,
                                     *t.algbw_gbps));
      t.time_us.reset();
      t.algbw_gbps.reset();
      t.busbw_gbps.reset();
    }
  }

  static std::string join_fields(const std::vector<std::string>& names) {
    // "out-of-place busbw, #wrong; in-place time …" would be nicer, but a flat list names every column.
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
  }

  // A line of bare numbers right after a cut-off row: the rest of that row, split off by interleaved log
  // output (NCCL INFO lines printed between a row's columns) or by a hard wrap.
  bool continue_row(int number, const std::vector<std::string_view>& tok) {
    if (!pending_ || pending_->row >= sweep_.rows.size()) return false;
    for (auto t : tok)
      if (!parse_number(t) && !is_na(t)) return false;
    const auto fields = pending_->layout.fields();
    std::size_t k = pending_->next_field;
    // Only timing columns can continue a row (a row's redop/root come right after its type).
    if (k >= fields.size() || fields[k].first == Field::redop || fields[k].first == Field::root) return false;
    SweepRow& row = sweep_.rows[pending_->row];
    RowInfo& info = infos_[pending_->row];
    std::size_t used = 0;
    for (; used < tok.size() && k < fields.size(); ++used, ++k)
      assign(number, row, info, fields[k].first, fields[k].second, tok[used], pending_->layout);
    warn(number, fmt::format("continues the row for size {} (line {}), split by other output", row.size_bytes, info.line));
    if (k < fields.size()) pending_->next_field = k;
    else pending_.reset();
    return true;
  }

  Layout choose_layout(int number, const std::vector<std::string_view>& rest) {
    auto fits = [&](const Layout& l) {
      std::size_t k = 0;
      if (l.has_redop) {
        if (k < rest.size() && !is_alpha_token(rest[k])) return false;
        ++k;
      }
      long long r = 0;
      if (l.has_root && k < rest.size() && !parse_i64(rest[k], r)) return false;
      return true;
    };
    if (layout_.from_header) {
      if (fits(layout_)) return layout_;
      if (!mismatch_warned_) {
        warn(number, "the row does not match the column header above it; its columns are read from the row itself");
        mismatch_warned_ = true;
      }
    } else if (inferred_ && fits(*inferred_)) {
      return *inferred_;
    }
    // No header (or a wrong one): redop is the alphabetic token after the type; a root column is there when
    // the count of what follows is odd (root + 2 × (time algbw busbw #wrong)).
    Layout l;
    l.from_header = false;
    l.has_redop = !rest.empty() && is_alpha_token(rest[0]);
    const std::size_t after = rest.size() - (l.has_redop ? 1 : 0);
    long long r = 0;
    const std::size_t root_at = l.has_redop ? 1 : 0;
    if (after == 9 || after == 17) l.has_root = root_at < rest.size() && parse_i64(rest[root_at], r);
    else if (after == 8 || after == 16) l.has_root = false;
    else l.has_root = l.has_redop && root_at < rest.size() && parse_i64(rest[root_at], r) &&
                      rest[root_at].find('.') == std::string_view::npos;
    l.per_iteration = after >= 16;
    if (after == 8 || after == 9 || after == 16 || after == 17) inferred_ = l;
    return l;
  }

  void assign(int number, SweepRow& row, RowInfo& info, Field f, int dir, std::string_view t, const Layout& layout) {
    SweepTiming& timing = dir == 0 ? row.out_of_place : row.in_place;
    const std::string name = field_name(f, dir, layout);
    if (f == Field::redop) {
      if (t == "none") info.op = OpPrinted::none;
      else {
        info.op = OpPrinted::op;
        if (auto op = comm::parse_red_op(t)) row.redop = op;
        else row.redop_name = std::string(t);
      }
      return;
    }
    if (f == Field::root) {
      long long r = 0;
      if (parse_i64(t, r) && r >= -1 && r < INT_MAX) {
        info.root = r;
        if (r >= 0) row.root = static_cast<int>(r);  // nccl-tests prints -1 for collectives without a root
      } else {
        warn(number, fmt::format("{} '{}' is not a rank", name, shorten(t, 20)));
      }
      return;
    }
    auto num = parse_number(t);
    if (!num) {
      // "N/A" in #wrong means the check was off (-c 0) or not applicable (in-place all-to-all): not a defect.
      if (!(is_na(t) && (f == Field::wrong)))
        warn(number, fmt::format("{} '{}' is not a number", name, shorten(t, 20)));
      return;
    }
    double v = num->value;
    if (v < 0) {  // no time, bandwidth or count of wrong elements is negative (redop and root returned above)
      warn(number, fmt::format("{} '{}' is negative; not used", name, shorten(t, 20)));
      return;
    }
    if (layout.time_in_ms && (f == Field::time || f == Field::i_min || f == Field::i_max || f == Field::i_p99)) {
      v *= 1000.0;
      num->half_ulp *= 1000.0;
    }
    switch (f) {
      case Field::time: timing.time_us = v; break;
      case Field::algbw:
        timing.algbw_gbps = v;
        if (dir == 0) info.algbw = num;
        break;
      case Field::busbw:
        timing.busbw_gbps = v;
        if (dir == 0) info.busbw = num;
        break;
      case Field::wrong: timing.wrong = v; break;
      case Field::i_min: timing.min_us = v; break;
      case Field::i_max: timing.max_us = v; break;
      case Field::i_p99: break;  // scalescope keeps p95, not p99: no field for it
      case Field::i_cv: timing.cv = v / 100.0; break;
      default: break;
    }
  }

  /// How errors name the input: "'FILE'", or "the text" when no name was given.
  std::string source_text() const { return source_name_.empty() ? std::string("the text") : "'" + source_name_ + "'"; }

  [[noreturn]] void throw_no_rows() {
    if (seen_nccl_tests_)
      throw NoResultRow(fmt::format("'{}' is an nccl-tests output without any result row: it ends at line {}, before "
                                    "or inside the header of its results table",
                                    source_name_, line_number(lines_.size() - 1)),
                        "pass the complete output of the test (its stdout, down to the \"# Avg bus bandwidth\" line)");
    throw core::Error(fmt::format("'{}' is not an nccl-tests output: none of its {} lines is a result row "
                                  "(size, count, type, then time, algbw, busbw)",
                                  source_name_, lines_.size()),
                      "pass the stdout of an nccl-tests program such as all_reduce_perf (github.com/NVIDIA/nccl-tests)");
  }

  // ---- after all lines: the collective, the rank count, and what repeats ----

  // Which collectives the rows' columns allow, and for each the world sizes they allow.
  std::map<Collective, NRange> admissible(std::optional<long long> known_n) const {
    std::map<Collective, NRange> out;
    for (Collective c : comm::all_collectives()) {
      NRange range;
      if (known_n) range = {*known_n, *known_n};
      bool ok = true;
      for (std::size_t i = 0; i < sweep_.rows.size() && ok; ++i) {
        const SweepRow& row = sweep_.rows[i];
        const RowInfo& info = infos_[i];
        if (info.op == OpPrinted::op && !(comm::has_red_op(c) || c == Collective::send_recv)) ok = false;
        if (info.op == OpPrinted::none && (comm::has_red_op(c) || c == Collective::send_recv)) ok = false;
        if (info.root && *info.root >= 0 && !comm::has_root(c)) ok = false;
        if (info.root && *info.root < 0 && comm::has_root(c)) ok = false;
        if (row.size_bytes == 0) continue;
        // size = count × element size, times n when count is the per-rank share (nccl-tests' GetCollByteCount).
        if (auto elt = row_element_size(row); elt && row.count && *row.count > 0) {
          const std::uint64_t per = *row.count * *elt;
          if (per == 0 || row.size_bytes % per != 0) ok = false;
          else {
            const std::uint64_t k = row.size_bytes / per;
            if (count_is_per_rank_share(c)) range = intersect(range, {static_cast<long long>(std::min<std::uint64_t>(k, INT_MAX)), static_cast<long long>(std::min<std::uint64_t>(k, INT_MAX))});
            else if (k != 1) ok = false;
          }
        }
        // busbw / algbw = the bus factor, within the rounding of the printed values.
        if (info.algbw && info.busbw && info.algbw->value - info.algbw->half_ulp > 0) {
          const double rlo = std::max(0.0, info.busbw->value - info.busbw->half_ulp) / (info.algbw->value + info.algbw->half_ulp);
          const double rhi = (info.busbw->value + info.busbw->half_ulp) / (info.algbw->value - info.algbw->half_ulp);
          const int kind = kind_of(c);
          if (kind == 0) {
            if (rlo > 1.0 + 1e-9 || rhi < 1.0 - 1e-9) ok = false;
          } else {
            range = intersect(range, n_for_ratio(kind, rlo, rhi));
          }
        }
        if (range.empty()) ok = false;
      }
      if (ok) out[c] = range;
    }
    return out;
  }

  void finish() {
    // Tool and source.
    std::string tool = tool_;
    if (tool.empty()) tool = layout_.time_in_ms ? "NCCL 1.x test" : "nccl-tests";
    sweep_.source = source_name_.empty() ? tool : tool + " (" + source_name_ + ")";
    sweep_.from_text = true;
    if (!sweep_.nccl_version && library_version_) sweep_.nccl_version = library_version_;

    // Rank count from the device list: nccl-tests lists ranks 0 … n−1 in order, so the highest index + 1.
    std::optional<long long> n_devices;
    if (!device_ranks_.empty()) {
      const long long top = *std::max_element(device_ranks_.begin(), device_ranks_.end());
      const std::set<long long> distinct(device_ranks_.begin(), device_ranks_.end());
      n_devices = top + 1;
      if (static_cast<long long>(distinct.size()) != top + 1)
        warn(fmt::format("ranks: the device list shows {} of ranks 0–{} (the text starts or was cut inside it); "
                         "{} ranks taken from the highest rank listed",
                         distinct.size(), top, top + 1));
      // Each process lists nThread × nGpus ranks, so a whole list holds a multiple of that: fewer, or a process's
      // block left partial, means the paste was cut inside the list and its length is no rank count.
      if (per_process_ranks_ && *n_devices % *per_process_ranks_ != 0) {
        warn(fmt::format("ranks: the device list shows {} rank(s), but the preamble (line {}) says each process "
                         "drives {} (nThread × nGpus), so a whole list holds a multiple of {}: the list was cut, so "
                         "the rank count comes from elsewhere",
                         *n_devices, per_process_ranks_line_, *per_process_ranks_, *per_process_ranks_));
        n_devices.reset();  // the sources after the device list decide
      }
    }
    if (preamble_lines_.size() > 1) {
      std::string at;
      for (int l : preamble_lines_) at += (at.empty() ? "" : ", ") + std::to_string(l);
      warn(fmt::format("the nccl-tests preamble (\"# nThread …\") appears {} times (lines {}): an nccl-tests build "
                       "without MPI started by a launcher runs one independent test per process, so each table "
                       "measures only its own process's GPUs",
                       preamble_lines_.size(), at));
    }

    // Collective: the program named in the text, else the hint, else what the columns allow, else the fallback.
    std::optional<CommandLine> named;
    const int first_row_line = infos_.front().line;
    for (const auto& p : programs_)
      if (p.line < first_row_line) named = p;  // the last one named before the table
    if (!named && !programs_.empty()) named = programs_.front();
    for (const auto& p : programs_)
      if (named && p.collective != named->collective) {
        warn(p.line, fmt::format("names {} while line {} names {}; the rows are read as {}", comm::perf_program_name(p.collective),
                                 named->line, comm::perf_program_name(named->collective), comm::to_string(named->collective)));
        break;
      }
    std::optional<long long> n_command;
    std::string n_command_how;
    int n_command_line = 0;
    for (const auto& p : programs_)
      if (p.ranks && (!named || p.line == named->line || !n_command)) {
        n_command = p.ranks;
        n_command_how = p.how;
        n_command_line = p.line;
      }

    const auto allowed = admissible(n_devices);
    const auto allowed_any = admissible(std::nullopt);
    // With the listed rank count nothing may fit (busbw computed for another n); then judge without it, and
    // the rank check below says so.
    std::vector<Collective> fits;
    for (auto& [c, r] : (allowed.empty() ? allowed_any : allowed)) fits.push_back(c);
    auto fit_text = [&] { return fits.empty() ? std::string("none of the seven") : names(fits); };
    Collective chosen = options_.fallback;
    if (named) {
      chosen = named->collective;
      if (std::find(fits.begin(), fits.end(), chosen) == fits.end())
        warn(fmt::format("the text names {} but the columns fit {}; read as {}", comm::perf_program_name(chosen), fit_text(),
                         comm::to_string(chosen)));
      if (options_.hint && *options_.hint != chosen)
        warn(fmt::format("the caller said {} but the text names {}; read as {}", comm::to_string(*options_.hint),
                         comm::perf_program_name(chosen), comm::to_string(chosen)));
    } else if (options_.hint) {
      chosen = *options_.hint;
      if (std::find(fits.begin(), fits.end(), chosen) == fits.end())
        warn(fmt::format("read as {} as the caller said, but the columns fit {}", comm::to_string(chosen), fit_text()));
    } else if (fits.size() == 1) {
      chosen = fits.front();
    } else {
      // A fallback that cannot have printed these columns gives way to one that can: a better guess, whose rank
      // count then holds.
      if (!fits.empty() && std::find(fits.begin(), fits.end(), chosen) == fits.end()) chosen = fits.front();
      warn(fmt::format("cannot tell the collective: the text names no nccl-tests program and the columns fit {}; "
                       "read as {} (name it explicitly, e.g. --collective)",
                       fit_text(), comm::to_string(chosen)));
    }
    sweep_.collective = chosen;

    // Rank count: the device list (unless cut), else the command line, NCCL's log, busbw/algbw, and last the
    // preamble's ranks of one process.
    std::optional<long long> n;
    const char* no_list = device_ranks_.empty() ? "no device list" : "the device list was cut";
    if (n_devices) n = n_devices;
    if (n_devices && n_command && !n_command_how.empty() && *n_command != *n_devices)
      warn(n_command_line, fmt::format("ranks: this command line makes {} ({}), but the device list shows {}; the "
                                       "list's count is used (the command line may be another run's)",
                                       *n_command, n_command_how, *n_devices));
    auto range_it = allowed_any.find(chosen);
    const bool have_columns = range_it != allowed_any.end();
    const NRange columns = have_columns ? range_it->second : NRange{};
    const bool columns_pin = have_columns && columns.lo == columns.hi;
    if (!n && n_command) {
      n = n_command;
      // scalescope's own report header ("# scalescope comm: … N rank(s)") states the rank count: no guess to
      // warn about when its table is read back. A launcher's command line is a guess (it may be another run's).
      if (!n_command_how.empty())
        warn(n_command_line,
             fmt::format("ranks: {}; {} taken from this command line ({})", no_list, *n, n_command_how));
    }
    if (!n && log_nranks_) {
      n = log_nranks_;
      warn(fmt::format("ranks: {}; {} taken from NCCL's log (\"nranks\")", no_list, *n));
    }
    if (!n && columns_pin) {
      n = columns.lo;
      warn(fmt::format("ranks: {}; {} derived from the rows ({} of {}: {})", no_list, *n,
                       count_is_per_rank_share(chosen) ? "size = count × element size × n" : "busbw/algbw",
                       comm::to_string(chosen),
                       count_is_per_rank_share(chosen) ? "count is the per-rank share" : "the bus factor depends on n"));
    }
    if (n && have_columns && (*n < columns.lo || *n > columns.hi)) {
      const std::string range = columns.lo == columns.hi ? std::to_string(columns.lo)
                                : columns.hi == INT_MAX  ? fmt::format("{} or more", columns.lo)
                                                         : fmt::format("{}–{}", columns.lo, columns.hi);
      warn(fmt::format("ranks: {} ranks, but the rows' busbw/algbw and count fit {} ranks for {}", *n, range,
                       comm::to_string(chosen)));
    }
    if (!n && per_process_ranks_) {
      n = per_process_ranks_;
      warn(per_process_ranks_line_,
           fmt::format("ranks: {}; {} taken from the preamble (nThread × nGpus of one process; a launcher that "
                       "started several processes makes that many per process)",
                       no_list, *n));
    }
    if (n && per_process_ranks_ && *n < *per_process_ranks_)
      warn(fmt::format("ranks: {} ranks, fewer than the {} that the preamble (line {}) gives each process", *n,
                       *per_process_ranks_, per_process_ranks_line_));
    if (!n) warn("ranks: unknown (no device list, command line or NCCL log, and the rows do not pin it down)");
    if (n && *n >= 1 && *n <= INT_MAX) sweep_.ranks = static_cast<int>(*n);

    // Sizes that appear more than once (0-byte rows repeat by design: small sizes round down to nothing).
    std::map<std::uint64_t, std::vector<int>> lines_of;
    for (std::size_t i = 0; i < sweep_.rows.size(); ++i)
      if (sweep_.rows[i].size_bytes > 0) lines_of[sweep_.rows[i].size_bytes].push_back(infos_[i].line);
    std::size_t repeated = 0;
    std::string example;
    for (auto& [size, ls] : lines_of)
      if (ls.size() > 1 && repeated++ == 0) example = fmt::format("size {} on lines {} and {}", size, ls[0], ls[1]);
    if (repeated > 0)
      warn(fmt::format("{} size(s) appear more than once ({}): several data types, ops, cycles (-N) or processes; "
                       "the analysis takes the median per size",
                       repeated, example));
  }

  struct PendingRow {
    std::size_t row = 0;
    Layout layout;
    std::size_t next_field = 0;
  };

  std::string_view text_;
  std::string source_name_;
  NcclTestsParseOptions options_;
  std::vector<std::string_view> lines_;
  bool last_line_cut_ = false;
  Sweep sweep_;
  std::vector<RowInfo> infos_;
  Layout layout_;                       // of the current table (from_header false: none seen yet)
  std::optional<Layout> inferred_;      // from the first complete headerless row
  bool mismatch_warned_ = false;
  bool in_table_ = false;
  bool seen_nccl_tests_ = false;
  int rows_in_table_ = 0;
  std::optional<PendingRow> pending_;
  std::string tool_;
  std::optional<std::string> library_version_;
  std::vector<CommandLine> programs_;
  std::vector<int> preamble_lines_;
  std::string continued_;   // a command line's lines so far that ended in '\', joined
  int continued_from_ = 0;  // the line it started on
  std::optional<long long> per_process_ranks_;  // nThread × nGpus of the first preamble
  int per_process_ranks_line_ = 0;
  std::vector<long long> device_ranks_;
  std::optional<long long> log_nranks_;
  int first_line_ = 1;
  // split_point(): after the last row, the first line that starts another test and the last that ends this table.
  bool splitting_ = false;
  bool header_in_part_ = false;  // a results header was read in this text
  int last_row_line_ = 0;
  std::optional<int> next_test_starts_, table_ends_, split_at_;
};

/// `read()`'s result; a std::exception other than core::Error (bad_alloc, a defect) becomes a core::Error, so a bad
/// input gets a clear error and never a crash.
template <class Read>
auto reading_nccl_tests(Read&& read) {
  try {
    return read();
  } catch (const core::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw core::Error(std::string("cannot read the nccl-tests output: ") + e.what());
  }
}

}  // namespace

Sweep parse_nccl_tests(std::string_view text, std::string source_name, const NcclTestsParseOptions& options) {
  return reading_nccl_tests([&] { return Parser(text, std::move(source_name), options).run(); });
}

Sweep parse_nccl_tests(std::string_view text, std::string source_name) {
  return parse_nccl_tests(text, std::move(source_name), NcclTestsParseOptions{});
}

namespace {

bool same_sizes(const Sweep& a, const Sweep& b) {
  return a.rows.size() == b.rows.size() &&
         std::equal(a.rows.begin(), a.rows.end(), b.rows.begin(),
                    [](const SweepRow& x, const SweepRow& y) { return x.size_bytes == y.size_bytes; });
}

/// `text` from the start of line `line` (1-based, counted from `line_of_text`, the line `text` starts at).
std::string_view from_line(std::string_view text, int line_of_text, int line) {
  std::size_t at = 0;
  for (int l = line_of_text; l < line && at < text.size(); ++l) {
    const std::size_t nl = text.find('\n', at);
    at = nl == std::string_view::npos ? text.size() : nl + 1;
  }
  return text.substr(at);
}

}  // namespace

std::vector<Sweep> parse_nccl_tests_tables(std::string_view text, const std::string& source_name,
                                           const NcclTestsParseOptions& options) {
  core::count_parse("nccl_tests", text);
  std::vector<Sweep> tables;
  std::vector<std::string> pending_notes;  // about parts before the first table read
  // A part read: the notes about dead parts before it, if no table came before them, go to it.
  const auto keep = [&](Sweep table) {
    tables.push_back(std::move(table));
    for (auto& note : pending_notes) tables.back().warnings.push_back(std::move(note));
    pending_notes.clear();
  };
  int first = 1;  // the line `text` now starts at
  reading_nccl_tests([&] {
    while (true) {
      const std::optional<int> last = Parser(text, source_name, options, first).split_point();
      if (!last) break;
      if (tables.size() + 1 >= kMaxNcclTestsTables)
        throw core::Error(fmt::format("'{}' holds more than {} results tables", source_name, kMaxNcclTestsTables),
                          "split the text, a few test runs per file");
      const std::string_view rest = from_line(text, first, *last + 1);
      const std::string_view part = text.substr(0, text.size() - rest.size());
      try {
        keep(Parser(part, fmt::format("{}, lines {}–{}", source_name, first, *last), options, first).run());
      } catch (const NoResultRow&) {  // a test that died before its first row: said, and the others read
        const std::string note = fmt::format("lines {}–{}: a test whose text ends before its first result row is "
                                             "not read",
                                             first, *last);
        if (tables.empty()) pending_notes.push_back(note);
        else tables.back().warnings.push_back(note);
      }
      text = rest;
      first = *last + 1;
    }
    const int last = first + static_cast<int>(std::count(text.begin(), text.end(), '\n')) -
                     (!text.empty() && text.back() == '\n' ? 1 : 0);
    const std::string name = tables.empty() ? source_name : fmt::format("{}, lines {}–{}", source_name, first, last);
    try {
      keep(Parser(text, name, options, first).run());
    } catch (const NoResultRow& e) {
      if (tables.empty()) throw;
      // A run cut off before its first row: the tables before it stand, and the last one says what was not read.
      tables.back().warnings.push_back(fmt::format("line {}: another test starts after this table, but the text "
                                                   "ends before its first result row; it is not read",
                                                   first));
    }
  });
  // The symptom of an nccl-tests build without MPI under a launcher: every process runs the same test alone.
  for (std::size_t k = 1; k < tables.size(); ++k)
    for (std::size_t j = 0; j < k; ++j)
      if (tables[k].ranks == 1 && tables[j].ranks == 1 && tables[k].collective == tables[j].collective &&
          same_sizes(tables[k], tables[j])) {
        tables[k].warnings.push_back(fmt::format(
            "this table repeats the collective and sizes of {} on 1 rank each: if one launcher (mpirun, srun) started "
            "them, nccl-tests was built without MPI and each process ran alone; rebuild it with 'make MPI=1'",
            tables[j].source));
        break;
      }
  return tables;
}

namespace {

/// The text of the file at `path` (≤ 64 MiB) and the name errors and Sweep::source use for it (its last component).
std::pair<std::string, std::string> read_nccl_tests_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw core::Error("cannot read '" + path + "': " + std::strerror(errno), "check the path");
  constexpr std::size_t kMax = 64u << 20;
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMax)
      throw core::Error("'" + path + "' is larger than 64 MiB: not an nccl-tests output",
                        "pass the text that an nccl-tests program printed");
  }
  if (in.bad()) throw core::Error("cannot read '" + path + "': " + std::strerror(errno), "check the file");
  std::string name = path;
  if (auto slash = name.rfind('/'); slash != std::string::npos) name = name.substr(slash + 1);
  return {std::move(text), std::move(name)};
}

}  // namespace

Sweep read_nccl_tests_file(const std::string& path, const NcclTestsParseOptions& options) {
  const auto [text, name] = read_nccl_tests_text(path);
  return parse_nccl_tests(text, name, options);
}

std::vector<Sweep> read_nccl_tests_tables(const std::string& path, const NcclTestsParseOptions& options) {
  const auto [text, name] = read_nccl_tests_text(path);
  return parse_nccl_tests_tables(text, name, options);
}

}  // namespace scalescope::analyze
