#pragma once
// Internals of the table reader (readers/tables/tables.h), shared by its parts: table_cells.cpp (values, units, what a
// column header measures), table_labels.cpp (row labels and titles → dims and facts), table_layout.cpp (finding the
// tables in pasted text) and tables.cpp (columns, rows, measurements). Not an interface for other readers. Pure; no
// function here throws on any input (allocation failure aside).

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "facts/facts.h"

namespace scalescope::analyze::tables_detail {

using Dims = std::map<std::string, std::string>;

// ───────────── small text helpers (table_cells.cpp) ─────────────

std::string lower(std::string_view s);
bool contains(std::string_view s, std::string_view p);
bool starts_with(std::string_view s, std::string_view p);
bool ends_with(std::string_view s, std::string_view p);
/// `s` trimmed, without markdown emphasis ("**", "__") and backticks.
std::string clean_cell(std::string_view s);
/// Words of `s`: split at blanks and at ( ) [ ] , ; / + @ | & : _ = (hyphens and dots stay inside words).
std::vector<std::string> words_of(std::string_view s);

// ───────────── cells and units (table_cells.cpp) ─────────────

/// A unit as printed after a number or in a header, normalised: "s" (also from min, h: factor 60, 3600), "ms",
/// "us", "GB/s" (MB/s, TB/s, GiB/s converted), "Gb/s" (Mb/s converted), "samples/s", "img/s", "tokens/s",
/// "sequences/s", "it/s", "%", "" for a ratio ("x"), or "<word>/s" as printed for other rates.
struct Unit {
  std::string unit;
  double factor = 1;            ///< multiply a value in the printed unit by this to get `unit`
  std::string quantity;         ///< what the unit alone says: "run time", "step time" (s/it), "epoch time",
                                ///< "bandwidth", "throughput", "" (%), "speedup" (x)
  bool ratio = false;           ///< "x", "×"
};
std::optional<Unit> unit_of(std::string_view text);

/// A number read from a cell: "~365 GB/s", "1,234 img/s", "22.4s", "1.38s/it", "1:42", "2m20s", "40-41",
/// "41k", "2.5 ± 0.1", "101 (1.01x)", "2.63 x", "x1.59", "76.89". `value` is already in `unit->unit` (converted;
/// `unit->factor` is then 1); no unit when the cell prints none. Nothing for text, versions ("2.19.3"), lists
/// ("128 and 256", "60 , 32"), cells over 80 bytes and values that overflow a double.
struct Value {
  double value = 0;
  std::optional<Unit> unit;
  bool approx = false, range = false, spread = false, clock = false;
};
std::optional<Value> parse_value(std::string_view cell);
/// Empty, dashes ("-", "--", "—"), "N/A", "NA", "n.a.", "none", "null", "?", "TBD": a cell that says nothing.
bool is_blank_cell(std::string_view cell);

/// What a value column's header says it measures.
struct Quantity {
  std::string quantity;         ///< normalised name, or the header in lower case when `known` is false
  bool known = false;
  std::optional<Unit> unit;     ///< the unit the header states ("(s)", "secs", "(GB/s)")
  Dims dims;                    ///< "precision", "scaling", "compared" the header names
  std::vector<std::string> rest;  ///< words of the header that nothing explained, as printed
};
Quantity quantity_of_header(std::string_view header);
/// The dims key of a configuration column's header ("GPUs" → "gpus", "Batch size / GPU" → "batch_per_gpu",
/// "NCCL Version" → "nccl_version", "type"/"config"/"" → "" for a label read word by word); nothing when the
/// header is no configuration column (a quantity or unknown).
std::optional<std::string> config_key_of_header(std::string_view header);
bool higher_is_better(const std::string& quantity, const std::string& unit);

// ───────────── labels and titles (table_labels.cpp) ─────────────

struct LabelReading {
  Dims dims;
  std::vector<std::string> unexplained;  ///< words nothing explained, as printed, in order
  bool understood = false;               ///< some word was understood (even one that gives no dim: "baseline")
};
/// Reads a row label ("2:DDP w/o NVlink", "RoCE Enabled", "8xH100", "NCCL_P2P_DISABLE=1", "topo1", "2.19.3").
LabelReading read_label(std::string_view label);
/// A GPU product named by `word` ("H100", "a100", "A40", "V100", "RTX3090", "2080Ti", "MI300X"), normalised to
/// upper case; nothing otherwise.
std::optional<std::string> gpu_product(std::string_view word);
/// A configuration column's cell as its dims value ("8 GPUs" under "gpus" → "8", "NCCL 2.19.3" → "2.19.3").
std::string config_value(const std::string& key, std::string_view cell);
/// A pair of hosts or devices named by a label ("host-a,host-b", "node1 <-> node2", "GPU0-GPU1" is not split).
std::optional<std::pair<std::string, std::string>> split_pair(std::string_view label);
/// Rows computed from the others: "RoCE Reduction (%)", "speedup", "total", "average", "A vs B", "difference".
bool derived_label(std::string_view label);
/// The facts a title line names: ModelSeen (with dtype from `dims`' precision), GpuSeen per product, WorldShape
/// when nodes and GPUs per node are both given.
std::vector<diagnose::FactValue> title_facts(std::string_view title, const Dims& dims);

// ───────────── layout (table_layout.cpp) ─────────────

/// A line of the input with HTML tags and entities removed, quote markers ("> ") and markdown heading marks
/// removed, code fences made blank. `heading`: a markdown or HTML heading.
struct Line {
  std::size_t no = 0;  ///< 1-based
  std::string text;    ///< trimmed
  bool heading = false;
  bool foreign = false;  ///< another reader's line (NCCL INFO/WARN, nccl-tests '#' lines)
};
std::vector<Line> clean_lines(std::string_view text);

struct Row {
  std::size_t line = 0;
  std::string text;                  ///< the cleaned line
  std::vector<std::string> cells;    ///< cleaned cells
  std::string comment;               ///< a trailing "# comment"
};
enum class Form { pipe, csv, tsv, columns, colon };
struct RawTable {
  Form form = Form::pipe;
  std::optional<Row> header;
  std::vector<Row> rows;
  std::vector<std::size_t> title_lines;  ///< indexes into the lines: a heading and/or the short line above
};
/// The tables of the cleaned lines: runs of pipe lines (a row before a separator or rule line is a header and
/// starts a table), runs of other lines split by tab, comma, two or more blanks or (numbers only) one blank,
/// "label: value" runs; pieces cut by blank or rule lines joined again; titles found above each. Tables under an
/// nccl-tests, topology or cProfile header are dropped with a note in `notes`.
std::vector<RawTable> find_tables(const std::vector<Line>& lines, std::vector<std::string>& notes);
/// Why the whole text is another reader's (an nccl-tests output, a topology matrix, a Python profile, an NCCL
/// log, an environment dump), or "" when it is not.
std::string foreign_text(const std::vector<Line>& lines);
/// A header that belongs to another reader's table (nccl-tests, `nvidia-smi topo -m`, cProfile).
bool foreign_header(const std::vector<std::string>& cells);

}  // namespace scalescope::analyze::tables_detail
