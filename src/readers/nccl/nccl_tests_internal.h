#pragma once
// Internal to the nccl-tests reader (nccl_tests_parser.cpp, nccl_tests_text.cpp): what its parser reads a line
// with — text helpers that never throw, numbers with their printed precision, the table layouts and their column
// names, the evidence a row gives for its collective and rank count, and the command lines and report headers that
// name the program and its ranks.

#include <climits>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "comm/collectives.h"
#include "comm/sweep.h"

namespace scalescope::analyze::nccl_tests_internal {

using comm::Collective;

// ---- small text helpers (none of them throws) ----

bool is_space(char c);
std::string_view trim(std::string_view s);
std::vector<std::string_view> split_ws(std::string_view s);
bool parse_u64(std::string_view t, std::uint64_t& out);
bool parse_i64(std::string_view t, long long& out);

/// A printed number and half a unit of its last printed digit (the rounding nccl-tests applied).
struct Number {
  double value = 0;
  double half_ulp = 0;
};

std::optional<Number> parse_number(std::string_view t);
bool is_na(std::string_view t);
bool is_alpha_token(std::string_view t);
/// A data type nccl-tests prints, modelled by comm::DataType or not.
bool is_type_token(std::string_view t);
/// Bytes per element of a row's type, modelled or not (nccl-tests src/common.cu, wordSize).
std::optional<std::size_t> row_element_size(const SweepRow& r);
bool starts_with(std::string_view s, std::string_view p);
/// The text with every byte that is not part of a well-formed UTF-8 sequence replaced by U+FFFD.
std::string valid_utf8(std::string_view s);
/// The trimmed text, cut to `max` bytes with "…".
std::string shorten(std::string_view s, std::size_t max = 60);
/// The line without what launchers put before it ("[1,0]<stdout>:", "[default0]:", "12: ").
std::string_view strip_launcher_prefix(std::string_view s);
bool is_nccl_log_line(std::string_view s);
/// "2.8.4+cuda10.1" -> "2.8.4"
std::string clean_version(std::string_view v);
/// NCCL_VERSION_CODE as "major.minor.patch".
std::string decode_nccl_version_code(long long code);

// ---- table layout ----

enum class Field { redop, root, time, algbw, busbw, wrong, i_min, i_max, i_p99, i_cv };

struct Layout {
  bool has_redop = true;
  bool has_root = true;
  bool per_iteration = false;  // i_min i_max i_p99 i_cv% after each direction's #wrong (nccl-tests -I 1)
  bool timestamp = false;      // a date and a time after the in-place columns
  bool time_in_ms = false;     // NCCL 1.x tests print milliseconds
  bool from_header = false;
  std::string wrong_name = "#wrong";

  // The columns after "type", in order, with the direction (0 out-of-place, 1 in-place) of each timing column.
  std::vector<std::pair<Field, int>> fields() const {
    std::vector<std::pair<Field, int>> f;
    if (has_redop) f.push_back({Field::redop, -1});
    if (has_root) f.push_back({Field::root, -1});
    for (int d = 0; d < 2; ++d) {
      for (Field x : {Field::time, Field::algbw, Field::busbw, Field::wrong}) f.push_back({x, d});
      if (per_iteration)
        for (Field x : {Field::i_min, Field::i_max, Field::i_p99, Field::i_cv}) f.push_back({x, d});
    }
    return f;
  }
};

/// "out-of-place time", "in-place #wrong" …: a column's name in warnings.
std::string field_name(Field f, int dir, const Layout& layout);
/// The layout a header line ("# size count type redop root time algbw busbw #wrong …") names; nothing for other
/// lines.
std::optional<Layout> header_layout(const std::vector<std::string_view>& tok);

// ---- per-row evidence for the collective and the rank count ----

enum class OpPrinted { absent, none, op };

struct RowInfo {
  int line = 0;
  OpPrinted op = OpPrinted::absent;
  std::optional<long long> root;        // as printed (-1 included)
  std::optional<Number> algbw, busbw;   // out-of-place
};

// Admissible world sizes [lo, hi] (hi = INT_MAX: unbounded).
struct NRange {
  long long lo = 1, hi = INT_MAX;
  bool empty() const { return lo > hi; }
};

NRange intersect(NRange a, NRange b);
/// World sizes n for which factor a·(n−1)/n lies in [rlo, rhi] (a = 2 all-reduce, 1 all-gather & co).
NRange n_for_ratio(double a, double rlo, double rhi);
/// 2: bus factor 2(n−1)/n, 1: (n−1)/n, 0: factor 1.
int kind_of(Collective c);
bool count_is_per_rank_share(Collective c);
/// "all_reduce, all_gather": the collectives' names.
std::string names(const std::vector<Collective>& cs);

// ---- command lines and scalescope's report headers ----

struct CommandLine {
  int line = 0;
  Collective collective = Collective::all_reduce;
  std::optional<long long> ranks;   // processes × GPUs × threads, when the line says
  std::string how;                  // "mpirun -np 4 × -g 1"
};

/// The positive value of the first of `flags` among tok[from, to) ("-np 4", "-np=4", "-g2").
std::optional<long long> flag_value(const std::vector<std::string_view>& tok, std::size_t from, std::size_t to,
                                    std::initializer_list<std::string_view> flags);
/// The header line `scalescope comm` prints above each table it reports; `tok` are the words after the '#'.
std::optional<CommandLine> parse_report_header(const std::vector<std::string_view>& tok, int line);
/// A command line naming an nccl-tests program ("./build/all_reduce_perf -g 2", "mpirun -np 16 … alltoall_perf").
std::optional<CommandLine> parse_command_line(const std::vector<std::string_view>& tok, int line);

}  // namespace scalescope::analyze::nccl_tests_internal
