// Table reader, part 5: from the tables found (table_layout.cpp) to measurements — which columns are labels and
// which values, tables whose variants are columns, repeats and series of one quantity, rows derived from others,
// titles, notes. See readers/tables/tables.h.
#include "readers/tables/tables.h"

#include "core/parse_count.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "text/log_text.h"
#include "readers/tables/tables_internal.h"

namespace scalescope::analyze {
namespace {

using namespace tables_detail;

constexpr std::size_t kMaxLines = 200000;
// No row of a table is longer: a longer line (a JSON document on one line, a base64 blob) is no table, and cutting
// it into cells costs time that grows with its square.
constexpr std::size_t kMaxLineBytes = 64 * 1024;
constexpr std::size_t kMaxColumns = 64;
constexpr std::size_t kDetectLines = 20000;  // detection looks at the head of a long file only

// A column's role: a label (conditions), a value (measurements), or reference figures that are no measurement
// ("Expected (IB)", "Target", "Theoretical", "Spec", "Ideal"): not read.
enum class Role { label, value, reference };

struct Column {
  Role role = Role::label;
  std::string key;     // label columns: the dims key; "" reads the cell word by word; "?name" tries that first
  std::string header;  // as printed
  Quantity q;          // value columns
  Dims cond;           // value columns: the conditions the header names instead of a quantity ("2 GPUs")
  std::string series;
  std::string repeat;
};

const std::string& cell(const Row& r, std::size_t c) {
  static const std::string empty;
  return c < r.cells.size() ? r.cells[c] : empty;
}

std::string quote(std::string_view s) { return "'" + excerpt(s, 60) + "'"; }

bool leading_int(std::string_view s) {
  const std::string c = clean_cell(s);
  return !c.empty() && std::isdigit(static_cast<unsigned char>(c[0]));
}

// Share of the column's non-blank cells that are numbers, and of those that start with a digit.
struct Shares {
  double value = 0, leading = 0, ints = 0;
  std::size_t cells = 0;
};
Shares shares(const RawTable& t, std::size_t c) {
  Shares s;
  std::size_t v = 0, l = 0, n = 0;
  for (const auto& r : t.rows) {
    const auto& x = cell(r, c);
    if (is_blank_cell(x)) continue;
    ++s.cells;
    if (parse_value(x)) ++v;
    if (leading_int(x)) ++l;
    const std::string cc = clean_cell(x);
    if (!cc.empty() && std::all_of(cc.begin(), cc.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); })) ++n;
  }
  if (s.cells) {
    s.value = double(v) / double(s.cells);
    s.leading = double(l) / double(s.cells);
    s.ints = double(n) / double(s.cells);
  }
  return s;
}

// The family of a unit: "time" (s, ms, us), "rate" (GB/s, samples/s …), "%" or "ratio".
std::string unit_family(const Unit& u) {
  if (u.ratio) return "ratio";
  if (u.unit == "%") return "%";
  if (u.unit == "s" || u.unit == "ms" || u.unit == "us") return "time";
  return "rate";
}

// The unit most of a column's cells print, if any; none when the cells mix families ("~50ms" above "~25 GB/s": each
// cell's own unit names its quantity).
std::optional<Unit> cells_unit(const RawTable& t, std::size_t c) {
  std::map<std::string, std::pair<int, Unit>> n;
  std::set<std::string> families;
  int valued = 0;
  for (const auto& r : t.rows)
    if (auto v = parse_value(cell(r, c))) {
      ++valued;
      if (v->unit) {
        auto& e = n[v->unit->unit + "|" + v->unit->quantity];
        ++e.first;
        e.second = *v->unit;
        families.insert(unit_family(*v->unit));
      }
    }
  if (families.size() > 1) return std::nullopt;
  const std::pair<int, Unit>* best = nullptr;
  for (const auto& [k, e] : n)
    if (!best || e.first > best->first) best = &e;
  if (!best || best->first * 2 < valued) return std::nullopt;
  return best->second;
}

// Whether a header or label names reference figures rather than a measurement: "Expected (IB)", "Target",
// "Theoretical peak", "Spec", "Ideal", "Nominal".
bool reference_words(std::string_view text) {
  for (const auto& w : words_of(clean_cell(text))) {
    const std::string l = lower(w);
    if (l == "expected" || l == "expectation" || l == "target" || l == "targets" || l == "theoretical" ||
        l == "theory" || l == "spec" || l == "specs" || l == "specification" || l == "ideal" || l == "nominal" ||
        l == "advertised" || l == "datasheet")
      return true;
  }
  return false;
}

// A header as a dims key: lower case, without parenthesised parts, blanks collapsed.
std::string plain_header(std::string_view header) {
  std::string out;
  int depth = 0;
  for (char c : lower(clean_cell(header))) {
    if (c == '(' || c == '[') ++depth;
    else if ((c == ')' || c == ']') && depth > 0) --depth;
    else if (depth == 0 && !(std::isspace(static_cast<unsigned char>(c)) && (out.empty() || out.back() == ' ')))
      out += std::isspace(static_cast<unsigned char>(c)) ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.empty() ? "label" : out;
}

std::vector<Column> columns_of(const RawTable& t, std::size_t ncols) {
  std::vector<Column> cols(ncols);
  for (std::size_t c = 0; c < ncols; ++c) {
    Column& col = cols[c];
    const Shares s = shares(t, c);
    if (!t.header) {
      col.role = c == 0 ? Role::label : (s.value > 0 ? Role::value : Role::label);
      continue;
    }
    col.header = cell(*t.header, c);
    if (c > 0 && reference_words(col.header)) {
      col.role = Role::reference;
      continue;
    }
    if (auto key = config_key_of_header(col.header)) {
      col.key = *key;
      // A "Network" / "Net" column is a model's name in a model table, the network in one of IB, RoCE, sockets.
      if (col.key == "model" && (plain_header(col.header) == "network" || plain_header(col.header) == "net")) {
        std::size_t nets = 0, cells = 0;
        for (const auto& r : t.rows) {
          if (is_blank_cell(cell(r, c))) continue;
          ++cells;
          const std::string v = config_value("network", cell(r, c));
          nets += (v == "IB" || v == "RoCE" || v == "Socket" || v == "EFA" || v == "Ethernet") ? 1 : 0;
        }
        if (cells > 0 && nets * 2 >= cells) col.key = "network";
      }
      const bool counts = col.key == "gpus" || col.key == "nodes" || col.key == "gpus_per_node" || col.key == "repeat";
      if (counts && s.leading < 0.5) col.key = "";
      if (col.key == "gpu" && s.ints >= 0.5) col.key = "gpus";
      if (col.key.empty() && c > 0 && s.value >= 0.5) {
        col.role = Role::value;
        col.q = quantity_of_header(col.header);
      }
      continue;
    }
    col.q = quantity_of_header(col.header);
    if (col.q.known) col.role = Role::value;
    else if (c == 0 && s.value < 0.5) col.key = "";
    else if (s.value >= 0.5) col.role = Role::value;
    else col.key = "?" + plain_header(col.header);
    if (col.role == Role::value && !col.q.known) {
      // "1 GPU", "NVLink off", "NCCL 2.19.3": a condition per column, the quantity from the cells' unit.
      const LabelReading lr = read_label(col.header);
      if (!lr.dims.empty()) {
        col.cond = lr.dims;
        col.q.rest.clear();
      }
    }
  }
  // Value columns whose header names no quantity: the unit their cells print names it ("~365 GB/s" → bandwidth).
  for (std::size_t c = 0; c < ncols; ++c) {
    Column& col = cols[c];
    if (col.role != Role::value || col.q.known) continue;
    if (auto u = col.q.unit ? col.q.unit : cells_unit(t, c); u && !u->quantity.empty()) {
      col.q.quantity = u->quantity;
      col.q.known = true;
      if (!col.q.unit && u->ratio) col.q.unit = u;
    }
  }
  // Repeats: "DALI_extra repeat 2", "coco2014_val 3" after a column whose header starts with the same words.
  static const std::regex rep(R"((.*?)[\s_-]*(repeat|run|rep|trial|#)?[\s_-]*(\d{1,2}))", std::regex::icase);
  for (std::size_t c = 1; c < ncols; ++c) {
    Column& col = cols[c];
    if (col.role != Role::value) continue;
    std::smatch m;
    const std::string h = clean_cell(col.header);
    if (h.size() > 120 || !std::regex_match(h, m, rep) || m[1].str().empty()) continue;  // (bounded: std::regex recurses)
    const std::string prefix = lower(m[1].str());
    for (std::size_t e = 1; e < c; ++e) {
      Column& first = cols[e];
      const std::string he = lower(clean_cell(first.header));
      if (first.role != Role::value || e == c || !(starts_with(he, prefix + " ") || starts_with(he, prefix + "_") || he == prefix))
        continue;
      if (!first.repeat.empty() && first.repeat != "1") continue;
      col.q = first.q;
      col.series = first.q.rest.empty() ? m[1].str() : fmt::format("{}", fmt::join(first.q.rest, " "));
      first.series = col.series;
      col.repeat = m[3].str();
      if (first.repeat.empty()) first.repeat = "1";
      break;
    }
  }
  // Series: what tells apart two columns of one quantity ("DALI_extra", "coco2014_val").
  for (std::size_t c = 0; c < ncols; ++c) {
    Column& col = cols[c];
    if (col.role != Role::value || !col.series.empty() || col.q.rest.empty()) continue;
    for (std::size_t d = 0; d < ncols; ++d)
      if (d != c && cols[d].role == Role::value && cols[d].q.quantity == col.q.quantity && cols[d].q.dims == col.q.dims) {
        col.series = fmt::format("{}", fmt::join(col.q.rest, " "));
        break;
      }
  }
  return cols;
}

// Adds `from` to `to` where `to` does not say otherwise.
void fill(Dims& to, const Dims& from) {
  for (const auto& [k, v] : from) to.emplace(k, v);
}

// The dims a title adds to a row: what the row does not say. A title's GPU count on a row that counts nodes is
// the GPUs per node ("8x A100" over a "Num Nodes" column).
void add_title(Dims& row, const Dims& title) {
  const bool counted = row.count("gpus") > 0;  // the row's own GPU count: the title's counts are of another setup
  const bool nodes = row.count("nodes") > 0;
  for (const auto& [k, v] : title) {
    if (counted && (k == "gpus" || k == "gpus_per_node" || k == "nodes")) continue;
    if (k == "gpus" && nodes && !title.count("nodes")) {
      row.emplace("gpus_per_node", v);
      continue;
    }
    if (k == "gpus" && nodes) continue;  // computed below from the row's nodes
    row.emplace(k, v);
  }
  if (row.count("nodes") && row.count("gpus_per_node") && !row.count("gpus")) {
    const long long n = std::atoll(row["nodes"].c_str()), g = std::atoll(row["gpus_per_node"].c_str());
    if (n > 0 && g > 0 && n * g < 10000000) row["gpus"] = std::to_string(n * g);
  }
}

// The dims of a label read word by word: what it names, the words nothing explained as "variant", or the label
// itself as "label" when nothing was understood.
void label_dims(std::string_view text, Dims& dims) {
  const LabelReading lr = read_label(text);
  if (lr.dims.empty()) {
    if (!lr.understood) dims.emplace("label", clean_cell(text));
    return;
  }
  fill(dims, lr.dims);
  if (!lr.unexplained.empty()) dims.emplace("variant", fmt::format("{}", fmt::join(lr.unexplained, " ")));
}

struct Emitter {
  const std::string& source;
  diagnose::Reading& out;
  std::vector<diagnose::Fact> facts;  // this table's measurements
  std::set<std::string> once;         // notes given once per table

  void note(std::size_t line, const std::string& text) { out.notes.push_back(fmt::format("line {}: {}", line, text)); }
  void note_once(const std::string& key, std::size_t line, const std::string& text) {
    if (once.insert(key).second) note(line, text);
  }

  // One value cell → one measurement (or a note why not).
  void value(const Row& r, const std::string& text, const Quantity& q, const std::string& column, const Dims& dims,
             const std::vector<std::string>& members, const std::string& row_label, bool pair_table) {
    const std::string c = clean_cell(text);
    if (c.empty() || std::all_of(c.begin(), c.end(), [](char ch) { return ch == '-'; }) || c == "—" || c == "–") return;
    auto v = parse_value(c);
    if (!v) {
      note(r.line, fmt::format("{} under {} is not a number; no measurement", quote(c),
                               quote(column.empty() ? "the value column" : column)));
      return;
    }
    diagnose::Measurement m;
    m.value = v->value;
    if (v->unit) {
      m.unit = v->unit->unit;
    } else if (q.unit) {
      m.unit = q.unit->unit;
      m.value *= q.unit->factor;
    }
    m.quantity = q.quantity;
    if (v->unit && !v->unit->quantity.empty() &&
        (!q.known || (q.quantity == "run time" && (v->unit->quantity == "step time" || v->unit->quantity == "epoch time"))))
      m.quantity = v->unit->quantity;
    // A time cell under a rate's name (or the reverse) is what its unit says: "~370ms" in a row "Bus Bandwidth" or
    // under a column whose other cells print GB/s.
    if (v->unit && !v->unit->quantity.empty() && q.known && !v->unit->ratio && v->unit->unit != "%") {
      const std::string cell_family = unit_family(*v->unit);
      const bool q_time = q.quantity.find("time") != std::string::npos || q.quantity == "latency";
      const bool q_rate = higher_is_better(q.quantity, "") && q.quantity != "speedup" && q.quantity != "efficiency" &&
                          q.quantity != "GPU utilization";
      if ((cell_family == "time" && q_rate) || (cell_family == "rate" && q_time)) {
        m.quantity = v->unit->quantity;
        note_once("family:" + column, r.line,
                  fmt::format("{} prints {}: read as {}, not as {}", quote(c), v->unit->unit, m.quantity, q.quantity));
      }
    }
    if (m.quantity.empty() || (!q.known && !(v->unit && !v->unit->quantity.empty()))) {
      if (pair_table && m.unit.empty()) {
        m.quantity = "bandwidth";
        note_once("pair", r.line,
                  "a pair list without a unit: its figures are read as bandwidths (higher is better), unit unknown");
      } else if (m.quantity.empty()) {
        m.quantity = "value";
      }
    }
    m.higher_is_better = higher_is_better(m.quantity, m.unit) || (pair_table && m.quantity == "bandwidth");
    if (!q.known && !pair_table && m.quantity != "value" && m.quantity == q.quantity)
      note_once("q:" + column, r.line,
                fmt::format("column {} names no quantity this reader knows; read as quantity {} (unit {}; "
                            "higher_is_better unknown, set to {})",
                            quote(column), quote(m.quantity), m.unit.empty() ? "not stated" : m.unit,
                            m.higher_is_better ? "true" : "false"));
    if (m.quantity == "value" && m.unit.empty())
      note_once("value", r.line, "figures without a header or unit are read as quantity 'value'");
    if (v->approx) note_once("approx", r.line, fmt::format("{} is approximate ('~'); read as {}", quote(c), v->value));
    if (v->range) note(r.line, fmt::format("{} is a range; read as its midpoint {}", quote(c), v->value));
    if (v->spread) note(r.line, fmt::format("{}: the spread after '±' is dropped", quote(c)));
    if (v->clock) note(r.line, fmt::format("{} read as a clock time ({} s)", quote(c), v->value));
    m.dims = dims;
    m.members = members;
    m.row = row_label;
    facts.push_back({std::move(m), diagnose::at(source, r.line, r.text)});
  }
};

bool pair_table(const RawTable& t, const std::vector<Column>& cols) {
  if (cols.empty() || cols[0].role != Role::label) return false;
  const std::string& k = cols[0].key;
  if (!(k.empty() || k == "pair" || k == "link" || k == "host" || k == "gpu_index" || k == "rank" || k[0] == '?'))
    return false;
  std::size_t n = 0, pairs = 0;
  for (const auto& r : t.rows) {
    if (is_blank_cell(cell(r, 0))) continue;
    ++n;
    if (split_pair(cell(r, 0))) ++pairs;
  }
  return n >= 1 && pairs * 3 >= n * 2;
}

// Variants as columns, quantities as rows: most row labels name a quantity, no value column does.
bool transposed(const RawTable& t, const std::vector<Column>& cols) {
  if (!t.header || cols.size() < 2 || cols[0].role != Role::label || t.rows.size() < 2) return false;
  for (std::size_t c = 1; c < cols.size(); ++c)
    if (cols[c].role == Role::value && cols[c].q.known) return false;
  std::size_t named = 0;
  for (const auto& r : t.rows)
    if (quantity_of_header(cell(r, 0)).known) ++named;
  return named >= 2 && named * 2 >= t.rows.size();
}

// The dims a title line names (no free words: a title's unexplained words are prose).
Dims title_dims(const Line& l) {
  Dims d = read_label(l.text).dims;
  for (const char* k : {"label", "variant", "repeat", "host", "rank", "gpu_index", "note"}) d.erase(k);
  return d;
}

void read_table(const RawTable& t, const std::vector<Line>& lines, Emitter& e) {
  std::size_t ncols = t.header ? t.header->cells.size() : 0;
  for (const auto& r : t.rows) ncols = std::max(ncols, r.cells.size());
  ncols = std::min(ncols, kMaxColumns);
  if (ncols < 2) return;
  const auto cols = columns_of(t, ncols);
  for (const auto& c : cols)
    if (c.role == Role::reference)
      e.note(t.header ? t.header->line : 0,
             fmt::format("column {} holds expected or reference figures, not measurements: not read", quote(c.header)));
  if (std::none_of(cols.begin(), cols.end(), [](const Column& c) { return c.role == Role::value; })) return;
  Dims title;
  for (auto idx : t.title_lines) fill(title, title_dims(lines[idx]));
  const bool pairs = pair_table(t, cols);
  const bool flip = transposed(t, cols);

  struct RowDims {
    Dims dims;
    std::vector<std::string> members;
    std::string label;
    bool skip = false;
  };
  std::vector<RowDims> rd(t.rows.size());
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const Row& r = t.rows[i];
    RowDims& x = rd[i];
    std::vector<std::string> labels;
    for (std::size_t c = 0; c < ncols; ++c) {
      if (cols[c].role != Role::label) continue;
      const std::string& text = cell(r, c);
      if (is_blank_cell(text)) continue;
      const std::string clean = clean_cell(text);
      labels.push_back(clean);
      if (flip && c == 0) continue;  // it names the quantity
      const std::string& key = cols[c].key;
      if ((c == 0 && pairs) || key == "pair") {
        if (auto p = split_pair(clean)) {
          x.dims.emplace("pair", p->first + "," + p->second);
          x.members = {p->first, p->second};
        } else {
          label_dims(clean, x.dims);
        }
      } else if (key.empty()) {
        label_dims(clean, x.dims);
      } else if (key == "host") {
        x.dims.emplace("host", clean);
        x.members.push_back(clean);
      } else if (key[0] == '?') {
        const LabelReading lr = read_label(clean);
        if (!lr.dims.empty()) fill(x.dims, lr.dims);
        else x.dims.emplace(key.substr(1), clean);
      } else {
        x.dims.emplace(key, config_value(key, clean));
      }
    }
    if (!r.comment.empty()) x.dims.emplace("note", r.comment);
    x.label = fmt::format("{}", fmt::join(labels, " | "));
    const std::string first = labels.empty() ? "" : labels.front();
    if (!labels.empty() && reference_words(first) && (flip ? !quantity_of_header(first).known : true)) {
      e.note(r.line, fmt::format("row {} holds expected or reference figures, not measurements: not read", quote(x.label)));
      x.skip = true;
      continue;
    }
    if ((!flip && !labels.empty() && derived_label(x.label)) ||
        (flip && !quantity_of_header(first).known && derived_label(first))) {
      e.note(r.line, fmt::format("row {} is derived from the others; not read as a measurement", quote(x.label)));
      x.skip = true;
      continue;
    }
    if (t.header && t.form == Form::pipe && r.cells.size() < t.header->cells.size() && !r.cells.empty() &&
        !is_blank_cell(r.cells.back()) && !ends_with(r.text, "|"))
      e.note(r.line, fmt::format("{} cells under a {}-column header (cut short?); the cells present are read",
                                 r.cells.size(), t.header->cells.size()));
  }
  // One-GPU rows of a table whose other rows name a mode ran "single".
  if (std::any_of(rd.begin(), rd.end(), [](const RowDims& x) { return x.dims.count("mode") > 0; }))
    for (auto& x : rd)
      if (!x.dims.count("mode") && x.dims.count("gpus") && x.dims.at("gpus") == "1") x.dims["mode"] = "single";

  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    if (rd[i].skip) continue;
    const Row& r = t.rows[i];
    if (!flip) {
      for (std::size_t c = 0; c < ncols; ++c) {
        if (cols[c].role != Role::value) continue;
        Dims d = rd[i].dims;
        fill(d, cols[c].cond);
        add_title(d, title);
        for (const auto& [k, v] : cols[c].q.dims) d[k] = v;  // the column's precision etc. is more specific
        if (!cols[c].series.empty()) d["series"] = cols[c].series;
        if (!cols[c].repeat.empty()) d["repeat"] = cols[c].repeat;
        e.value(r, cell(r, c), cols[c].q, cols[c].header, d, rd[i].members, rd[i].label, pairs);
      }
    } else {
      const Quantity q = quantity_of_header(cell(r, 0));
      for (std::size_t c = 1; c < ncols; ++c) {
        if (cols[c].role != Role::value) continue;
        Dims d = rd[i].dims;
        label_dims(cols[c].header, d);
        for (const auto& [k, v] : q.dims) d[k] = v;
        add_title(d, title);
        e.value(r, cell(r, c), q, clean_cell(cell(r, 0)), d, rd[i].members, clean_cell(cols[c].header), false);
      }
    }
  }
  // A network named bare ("IB", "RoCE") gives both its toggle and "network". When no row of the table names another
  // network (Socket, EFA …), the toggle alone tells the rows apart ("IB" against "no IB"): "network" is dropped.
  bool other_network = false;
  for (const auto& f : e.facts)
    if (const auto* m = std::get_if<diagnose::Measurement>(&f.value))
      if (auto it = m->dims.find("network"); it != m->dims.end() && it->second != "IB" && it->second != "RoCE")
        other_network = true;
  if (!other_network)
    for (auto& f : e.facts)
      if (auto* m = std::get_if<diagnose::Measurement>(&f.value))
        if (auto it = m->dims.find("network"); it != m->dims.end() && (it->second == "IB" || it->second == "RoCE"))
          m->dims.erase(it);
}

void read_lines(const std::vector<Line>& lines, const std::string& source, diagnose::Reading& out) {
  const std::string foreign = foreign_text(lines);
  auto tables = find_tables(lines, out.notes);
  if (!foreign.empty()) {
    const auto before = tables.size();
    tables.erase(std::remove_if(tables.begin(), tables.end(), [](const RawTable& t) { return t.form != Form::pipe; }),
                 tables.end());
    out.notes.push_back(fmt::format("the text looks like {} (another reader's); only its pipe tables are read here{}",
                                    foreign,
                                    before > tables.size() ? fmt::format(" ({} column block(s) left to that reader)",
                                                                         before - tables.size())
                                                           : ""));
  }
  std::vector<std::vector<diagnose::Fact>> per_table;
  std::vector<std::vector<diagnose::Fact>> titles;
  std::set<std::size_t> titles_done;
  std::set<std::string> seen;  // title facts once per text: "gpu:A100", "model:gpt2", "world:2x4"
  for (const auto& t : tables) {
    Emitter e{source, out, {}, {}};
    read_table(t, lines, e);
    if (e.facts.empty()) continue;
    std::vector<diagnose::Fact> tf;
    for (auto idx : t.title_lines) {
      if (!titles_done.insert(idx).second) continue;
      for (auto& f : title_facts(lines[idx].text, title_dims(lines[idx]))) {
        std::string key = diagnose::kind_of(f);
        if (const auto* g = std::get_if<diagnose::GpuSeen>(&f)) key += ":" + g->name;
        if (const auto* m = std::get_if<diagnose::ModelSeen>(&f)) key += ":" + m->name;
        if (const auto* w = std::get_if<diagnose::WorldShape>(&f))
          key += fmt::format(":{}x{}", w->nodes.value_or(0), w->ranks_per_node.value_or(0));
        if (!seen.insert(key).second) continue;
        tf.push_back({std::move(f), diagnose::at(source, lines[idx].no, lines[idx].text)});
      }
    }
    titles.push_back(std::move(tf));
    per_table.push_back(std::move(e.facts));
  }
  for (std::size_t k = 0; k < per_table.size(); ++k) {
    for (auto& f : titles[k]) out.facts.add(std::move(f));
    for (auto& f : per_table[k]) {
      if (per_table.size() > 1)
        if (auto* m = std::get_if<diagnose::Measurement>(&f.value)) m->table = fmt::format("table {}", k + 1);
      out.facts.add(std::move(f));
    }
  }
}

std::vector<Line> bounded_lines(std::string_view text, diagnose::Reading* out) {
  auto lines = clean_lines(text);
  const auto before = lines.size();
  std::erase_if(lines, [](const Line& l) { return l.text.size() > kMaxLineBytes; });
  if (out && lines.size() < before)
    out->notes.push_back(fmt::format("{} line(s) longer than {} KiB were passed over: no table row is that long",
                                     before - lines.size(), kMaxLineBytes / 1024));
  if (lines.size() > kMaxLines) {
    lines.resize(kMaxLines);
    if (out) out->notes.push_back(fmt::format("only the first {} lines were read", kMaxLines));
  }
  return lines;
}

}  // namespace

namespace {

// Whether `text` holds a measurement table, judged over its head; `whole` receives the reading of the whole text
// when the head was all of it (the one parse), with `source` in its provenance.
bool judge_tables(std::string_view text, const std::string& source, std::optional<diagnose::Reading>* whole) {
  try {
    diagnose::Reading r;
    auto lines = bounded_lines(text, &r);
    const bool all_lines = lines.size() <= kDetectLines;
    if (!all_lines) lines.resize(kDetectLines);
    if (!foreign_text(lines).empty()) return false;
    core::count_parse("measurement_table", text);
    read_lines(lines, all_lines && whole ? source : std::string(), r);
    std::map<std::string, std::set<std::size_t>> rows;
    std::map<std::string, std::size_t> figures;
    for (const auto& m : r.facts.of<diagnose::Measurement>()) {
      rows[m.fact.table].insert(m.where.line);
      ++figures[m.fact.table];
    }
    // A markdown table ("|---|" under its header) of one row still measures: several figures in it.
    const bool markdown = text.find("|---") != std::string_view::npos || text.find("| ---") != std::string_view::npos ||
                          text.find("|:--") != std::string_view::npos;
    for (const auto& [table, ls] : rows)
      if (ls.size() >= 2 || (markdown && figures[table] >= 2)) {
        if (all_lines && whole) *whole = std::move(r);
        return true;
      }
    return false;
  } catch (...) {
    return false;
  }
}

}  // namespace

bool looks_like_measurement_table(std::string_view text) { return judge_tables(text, "", nullptr); }

std::optional<diagnose::Reading> read_measurement_tables_if_any(std::string_view text, const std::string& source) {
  std::optional<diagnose::Reading> whole;
  if (!judge_tables(text, source, &whole)) return std::nullopt;
  if (whole) return whole;
  return read_measurement_tables(text, source);
}

diagnose::Reading read_measurement_tables(std::string_view text, const std::string& source) {
  diagnose::Reading out;
  try {
    auto lines = bounded_lines(text, &out);
    core::count_parse("measurement_table", text);
    read_lines(lines, source, out);
  } catch (const std::exception& ex) {
    out.notes.push_back(std::string("the table reader stopped early: ") + ex.what());
  } catch (...) {
    out.notes.push_back("the table reader stopped early");
  }
  return out;
}

}  // namespace scalescope::analyze
