#include "topo/smi_topo_parser.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/parse_count.h"
#include "core/error.h"

namespace scalescope::topo {
namespace {

// Header and table size limits: a real table has at most a few dozen columns (16 GPUs + 18 NICs in the
// corpus); far more means the line is not a topo -m header, and the cap keeps the matrix small.
constexpr std::size_t kMaxColumns = 1024;
// Longest input read from a file: saved tables are a few KiB; an environment dump around one is far less than this.
constexpr std::uintmax_t kMaxFileBytes = 64u << 20;
// NVML_NVLINK_MAX_LINKS is 18 in current NVML headers: no GPU has more links, so NV1 at a cut may be NV1x
// while NV2..NV9 cannot grow.
constexpr int kMaxNvLinks = 18;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

// Removes ANSI escape sequences (CSI "ESC [ params final" and two-byte "ESC x"), carriage returns and
// UTF-8 no-break spaces (pasted from web pages), which become plain spaces.
std::string clean(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '\x1b') {
      if (i + 1 < in.size() && in[i + 1] == '[') {
        i += 2;
        while (i < in.size() && !(in[i] >= 0x40 && in[i] <= 0x7e)) ++i;  // parameters, then the final byte
      } else if (i + 1 < in.size()) {
        ++i;
      }
      continue;
    }
    if (c == '\r') continue;
    if (static_cast<unsigned char>(c) == 0xC2 && i + 1 < in.size() && static_cast<unsigned char>(in[i + 1]) == 0xA0) {
      out += ' ';
      ++i;
      continue;
    }
    out += c;
  }
  return out;
}

std::vector<std::string> split_ws(std::string_view line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    std::size_t start = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (i > start) out.emplace_back(line.substr(start, i - start));
  }
  return out;
}

// Length of the link token at the start of `s`, 0 when none.
std::size_t link_token_length(std::string_view s) {
  for (std::string_view t : {"N/A", "NODE", "PIX", "PXB", "PHB", "SYS", "SOC"})
    if (s.substr(0, t.size()) == t) return t.size();
  if (s.substr(0, 2) == "NV") {
    std::size_t n = 2;
    while (n < s.size() && is_digit(s[n])) ++n;
    return n > 2 ? n : 0;
  }
  if (!s.empty() && s[0] == 'X') return 1;
  return 0;
}

// Length of the device label at the start of `s` (GPU<n>, NIC<n>, mlx<n>_<n>), 0 when none.
std::size_t label_length(std::string_view s) {
  std::size_t n = 0;
  if (s.substr(0, 3) == "GPU" || s.substr(0, 3) == "NIC") {
    n = 3;
  } else if (s.substr(0, 3) == "mlx") {
    n = 3;
    while (n < s.size() && is_digit(s[n])) ++n;
    if (n == 3 || n >= s.size() || s[n] != '_') return 0;
    ++n;
  } else {
    return 0;
  }
  std::size_t digits = n;
  while (n < s.size() && is_digit(s[n])) ++n;
  return n > digits && n - digits <= 4 ? n : 0;
}

// Splits a whole token into device labels ("NIC11NIC12" → NIC11, NIC12); empty when it is not only labels.
std::vector<std::string> split_labels(std::string_view token) {
  std::vector<std::string> out;
  while (!token.empty()) {
    std::size_t n = label_length(token);
    if (n == 0) return {};
    out.emplace_back(token.substr(0, n));
    token.remove_prefix(n);
  }
  return out;
}

bool is_affinity_word(std::string_view t) {
  return t == "CPU" || t == "Affinity" || t == "NUMA" || t == "GPU" || t == "ID";
}

// A name a NIC column may have in old tables besides mlx5_<n> (mlx5_bond_0, bnxt_re0, ib0, irdma1).
bool is_generic_name(std::string_view t) {
  if (t.empty() || t.size() > 64 || !std::isalpha(static_cast<unsigned char>(t[0]))) return false;
  if (link_token_length(t) == t.size()) return false;
  return std::all_of(t.begin(), t.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ':';
  });
}

enum class AffinityColumn { cpu, numa, gpu_numa_id };

struct Header {
  std::size_t line = 0;
  std::vector<std::string> labels;
  std::vector<AffinityColumn> affinity;
  std::vector<std::string> problems;
};

// A header is a line of device labels starting with GPU<n>, then optionally the affinity column titles,
// and no link tokens.
std::optional<Header> read_header(const std::vector<std::string>& tokens, std::size_t line) {
  if (tokens.empty()) return std::nullopt;
  auto first = split_labels(tokens[0]);
  if (first.empty() || first[0].substr(0, 3) != "GPU") return std::nullopt;
  Header h;
  h.line = line;
  std::string words;
  for (const auto& t : tokens) {
    auto labels = split_labels(t);
    if (!labels.empty() && words.empty()) {
      h.labels.insert(h.labels.end(), labels.begin(), labels.end());
    } else if (is_affinity_word(t)) {
      words += t;
    } else if (words.empty() && is_generic_name(t)) {
      h.labels.push_back(t);
    } else {
      return std::nullopt;  // prose, a row, or something else
    }
  }
  if (h.labels.size() > kMaxColumns) return std::nullopt;
  // The titles in order, spaces removed: "CPUAffinity", "NUMAAffinity", "GPUNUMAID".
  std::size_t pos = 0;
  while (pos < words.size()) {
    if (words.compare(pos, 11, "CPUAffinity") == 0) {
      h.affinity.push_back(AffinityColumn::cpu);
      pos += 11;
    } else if (words.compare(pos, 12, "NUMAAffinity") == 0) {
      h.affinity.push_back(AffinityColumn::numa);
      pos += 12;
    } else if (words.compare(pos, 9, "GPUNUMAID") == 0) {
      h.affinity.push_back(AffinityColumn::gpu_numa_id);
      pos += 9;
    } else {
      h.problems.push_back(fmt::format("header line {}: column title '{}' not understood; ignored", line + 1,
                                       words.substr(pos)));
      break;
    }
  }
  return h;
}

// p2p status tokens of `nvidia-smi topo -p2p` (its legend: OK, CNS, GNS, TNS, NS, DR, U).
bool is_p2p_token(std::string_view t) {
  return t == "OK" || t == "CNS" || t == "GNS" || t == "TNS" || t == "NS" || t == "DR" || t == "U";
}

struct Row {
  std::size_t line = 0;
  std::string label;
  std::vector<CellToken> cells;
};

// A row is a device label followed by cells; the label may be merged with the first cell ("GPU0X").
std::optional<Row> read_row(const std::vector<std::string>& tokens, std::size_t line, const Header* header) {
  if (tokens.empty()) return std::nullopt;
  Row r;
  r.line = line;
  std::string_view first = tokens[0];
  if (header && std::find(header->labels.begin(), header->labels.end(), first) != header->labels.end()) {
    r.label = std::string(first);
  } else {
    std::size_t n = label_length(first);
    if (n == 0) return std::nullopt;
    r.label = std::string(first.substr(0, n));
    if (n < first.size()) {
      auto rest = split_cell_tokens(first.substr(n));
      if (!std::all_of(rest.begin(), rest.end(), [](const CellToken& c) { return c.link; })) return std::nullopt;
      r.cells = std::move(rest);
    }
  }
  for (std::size_t i = 1; i < tokens.size(); ++i) {
    auto cells = split_cell_tokens(tokens[i]);
    r.cells.insert(r.cells.end(), cells.begin(), cells.end());
  }
  return r;
}

bool row_is_topo_m(const Row& r) {
  return std::any_of(r.cells.begin(), r.cells.end(), [](const CellToken& c) {
    auto l = parse_link_token(c.text);
    return l && l->cls != LinkClass::self && l->cls != LinkClass::unknown;
  });
}

bool row_is_p2p(const Row& r) {
  return std::any_of(r.cells.begin(), r.cells.end(), [](const CellToken& c) { return is_p2p_token(c.text); });
}

// Whether the last token of text that stops mid-row could be the start of a longer token: numbers and
// cpulists can always grow, NV1 can be NV1x; a fragment that is no link token is incomplete anyway.
bool may_be_cut(const CellToken& c) {
  if (!c.link) return true;
  auto l = parse_link_token(c.text);
  return l && l->cls == LinkClass::nvlink && l->nvlinks * 10 <= kMaxNvLinks;
}

std::string join_labels(const std::vector<std::string>& labels) {
  std::string out;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i == 6 && labels.size() > 8) return out + fmt::format(" and {} more", labels.size() - i);
    out += (i ? ", " : "") + labels[i];
  }
  return out;
}

struct Table {
  Header header;
  std::vector<Row> rows;
  bool synthetic_header = false;
};

// Rows that follow line `start`; blank lines are skipped when a row follows them.
std::vector<Row> collect_rows(const std::vector<std::vector<std::string>>& lines, std::size_t start, const Header* header,
                              std::size_t* end) {
  std::vector<Row> rows;
  std::size_t i = start;
  while (i < lines.size()) {
    if (lines[i].empty()) {
      std::size_t j = i;
      while (j < lines.size() && lines[j].empty()) ++j;
      if (j < lines.size() && !rows.empty() && !read_header(lines[j], j) && read_row(lines[j], j, header)) {
        i = j;
        continue;
      }
      break;
    }
    auto r = read_row(lines[i], i, header);
    // A line of one label is a row cut right after its label; a header-like line ends this table.
    if (!r || (lines[i].size() > 1 && read_header(lines[i], i))) break;
    rows.push_back(std::move(*r));
    ++i;
  }
  if (end) *end = i;
  return rows;
}

}  // namespace

std::optional<Link> parse_link_token(std::string_view t) {
  if (t == "X") return Link{LinkClass::self, 0};
  if (t == "PIX") return Link{LinkClass::pix, 0};
  if (t == "PXB") return Link{LinkClass::pxb, 0};
  if (t == "PHB") return Link{LinkClass::phb, 0};
  if (t == "NODE") return Link{LinkClass::node, 0};
  if (t == "SYS" || t == "SOC") return Link{LinkClass::sys, 0};
  if (t == "N/A") return Link{LinkClass::unknown, 0};
  if (t.size() >= 3 && t.size() <= 5 && t.substr(0, 2) == "NV" &&
      std::all_of(t.begin() + 2, t.end(), is_digit)) {
    int n = std::stoi(std::string(t.substr(2)));
    if (n >= 1 && n <= kMaxNvLinks) return Link{LinkClass::nvlink, n};  // NV0 and NV19+ are no GPU's links
  }
  return std::nullopt;
}

std::vector<CellToken> split_cell_tokens(std::string_view piece) {
  std::vector<CellToken> out;
  std::string_view rest = piece;
  while (!rest.empty()) {
    std::size_t n = link_token_length(rest);
    if (n == 0 || !parse_link_token(rest.substr(0, n))) return {CellToken{std::string(piece), parse_link_token(piece).has_value()}};
    out.push_back({std::string(rest.substr(0, n)), true});
    rest.remove_prefix(n);
  }
  return out;
}

namespace {

TopologyReading parse_smi_topo_text(std::string_view raw, const std::string& source);

// `s` with bytes outside well-formed UTF-8 replaced by U+FFFD: warnings quote the input, and the reading is
// written as JSON (found by fuzz_smi_topo: a header cell with 0xFF bytes made `topo --out` fail).
std::string repaired_utf8(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size() && !(len == 2 && c < 0xC2) && !(len == 4 && c > 0xF4);
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok && len >= 3) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0) && !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

void repair_utf8(TopologyReading& r) {
  r.topology.source = repaired_utf8(r.topology.source);  // a file name need not be UTF-8; JSON must be
  for (auto& w : r.warnings) w = repaired_utf8(w);
  for (auto& n : r.notes) n = repaired_utf8(n);
  for (auto& d : r.topology.devices) {
    d.label = repaired_utf8(d.label);
    d.name = repaired_utf8(d.name);
  }
}

}  // namespace

TopologyReading parse_smi_topo(std::string_view raw, const std::string& source) {
  core::count_parse("smi_topo", raw);
  TopologyReading reading = parse_smi_topo_text(raw, source);
  repair_utf8(reading);
  return reading;
}

namespace {

TopologyReading parse_smi_topo_text(std::string_view raw, const std::string& source) {
  const std::string text = clean(raw);
  const bool ends_with_newline = !text.empty() && text.back() == '\n';
  std::vector<std::string> line_text;
  {
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t nl = text.find('\n', start);
      if (nl == std::string::npos) nl = text.size();
      line_text.push_back(text.substr(start, nl - start));
      start = nl + 1;
    }
  }
  std::vector<std::vector<std::string>> lines;
  lines.reserve(line_text.size());
  for (const auto& l : line_text) {
    auto tokens = split_ws(l);
    if (!tokens.empty() && (tokens[0] == ">" || tokens[0] == "|")) tokens.erase(tokens.begin());  // quoted pastes
    lines.push_back(std::move(tokens));
  }

  TopologyReading out;
  // Find the tables: a header and the rows after it. The first table whose cells are link classes (or whose
  // header has the affinity titles) is the topo -m matrix; p2p matrices (OK/NS cells) are told apart.
  std::vector<Table> tables;
  bool saw_p2p = false;
  std::size_t i = 0;
  while (i < lines.size()) {
    auto h = read_header(lines[i], i);
    if (!h) {
      ++i;
      continue;
    }
    std::size_t end = i + 1;
    auto rows = collect_rows(lines, i + 1, &*h, &end);
    bool topo_m = !h->affinity.empty() || std::any_of(rows.begin(), rows.end(), row_is_topo_m);
    bool p2p = std::any_of(rows.begin(), rows.end(), row_is_p2p);
    if (topo_m && !(p2p && h->affinity.empty()))
      tables.push_back({std::move(*h), std::move(rows), false});
    else if (p2p)
      saw_p2p = true;
    i = std::max(end, i + 1);
  }
  if (tables.empty()) {
    // No header: rows that start with GPU0 and hold link classes still make a matrix, with the row labels as
    // the column labels.
    for (std::size_t k = 0; k < lines.size() && tables.empty(); ++k) {
      if (lines[k].empty() || split_labels(lines[k][0]) != std::vector<std::string>{"GPU0"}) continue;
      std::size_t end = k;
      auto rows = collect_rows(lines, k, nullptr, &end);
      if (rows.empty() || !std::any_of(rows.begin(), rows.end(), row_is_topo_m)) continue;
      Table t;
      t.header.line = k;
      for (const auto& r : rows)
        if (std::find(t.header.labels.begin(), t.header.labels.end(), r.label) == t.header.labels.end())
          t.header.labels.push_back(r.label);
      t.rows = std::move(rows);
      t.synthetic_header = true;
      tables.push_back(std::move(t));
    }
  }
  if (tables.empty()) {
    if (saw_p2p)
      throw core::Error(source + " holds an `nvidia-smi topo -p2p` matrix (OK/NS cells) but no `nvidia-smi topo -m` "
                                 "matrix",
                        "save the output of `nvidia-smi topo -m` and pass that file");
    throw core::Error("no `nvidia-smi topo -m` GPU matrix found in " + source +
                          ": expected a header line such as 'GPU0 GPU1 CPU Affinity NUMA Affinity' followed by rows "
                          "such as 'GPU0 X NV12 0-23 0'",
                      "save the whole output of `nvidia-smi topo -m` to a file and pass it with --from");
  }
  for (std::size_t k = 1; k < tables.size(); ++k)
    out.warnings.push_back(fmt::format("another topo -m table at line {} was ignored; the first, at line {}, is read",
                                       tables[k].header.line + 1, tables[0].header.line + 1));
  Table& table = tables[0];
  const Header& header = table.header;
  out.warnings.insert(out.warnings.end(), header.problems.begin(), header.problems.end());
  if (table.synthetic_header)
    out.warnings.push_back("no header line before the rows: the columns are taken to be the row labels " +
                           join_labels(header.labels) + " (NIC columns without rows are not seen)");

  // Devices from the column labels: GPU<n>, NIC<n>, and any other name (mlx5_0) is a NIC.
  Topology& topo = out.topology;
  topo.source = source;
  std::map<std::string, int> column;  // label -> device position
  std::vector<int> duplicate_columns;
  for (const auto& label : header.labels) {
    if (column.count(label)) {
      out.warnings.push_back(fmt::format("column {} appears twice in the header; the second is ignored", label));
      duplicate_columns.push_back(static_cast<int>(topo.devices.size()));
    }
    Device d;
    d.label = label;
    // GPU<n> and NIC<n> carry their number (at most 4 digits, so it fits an int); any other name is a NIC.
    const bool numbered = label_length(label) == label.size() && label.substr(0, 3) != "mlx";
    if (numbered && label.substr(0, 3) == "GPU") {
      d.kind = DeviceKind::gpu;
      d.index = std::stoi(label.substr(3));
    } else {
      d.kind = DeviceKind::nic;
      d.index = numbered ? std::stoi(label.substr(3)) : static_cast<int>(topo.nics().size());
      if (!numbered) d.name = label;
    }
    if (!column.count(label)) column[label] = static_cast<int>(topo.devices.size());
    topo.devices.push_back(std::move(d));
  }
  const std::size_t n = topo.devices.size();
  topo.links.assign(n, std::vector<Link>(n));
  std::vector<std::vector<bool>> read(n, std::vector<bool>(n, false));
  for (AffinityColumn a : header.affinity) {
    if (a == AffinityColumn::cpu) topo.has_cpu_affinity = true;
    if (a == AffinityColumn::numa) topo.has_numa_affinity = true;
    if (a == AffinityColumn::gpu_numa_id) topo.has_gpu_numa_id = true;
  }

  bool soc = false;
  std::set<std::string> seen_rows;
  const std::size_t last_line = lines.empty() ? 0 : lines.size() - 1;
  for (auto& row : table.rows) {
    auto it = column.find(row.label);
    if (it == column.end()) {
      out.warnings.push_back(fmt::format("row {} (line {}) has no column in the header; ignored", row.label, row.line + 1));
      continue;
    }
    if (!seen_rows.insert(row.label).second) {
      out.warnings.push_back(fmt::format("row {} appears twice; the second (line {}) is ignored", row.label, row.line + 1));
      continue;
    }
    const int r = it->second;
    Device& dev = topo.devices[r];
    const bool gpu_row = dev.kind == DeviceKind::gpu;
    // nvidia-smi prints the affinity columns only in GPU rows.
    const std::size_t expected = n + (gpu_row ? header.affinity.size() : 0);
    auto& cells = row.cells;
    const bool cut_at_end = row.line == last_line && !ends_with_newline;
    std::string cut_piece;
    if (cut_at_end && !cells.empty() && cells.size() <= expected && may_be_cut(cells.back())) {
      // The input stops inside this row: its last piece may be the start of a longer cell, so it is not used.
      cut_piece = cells.back().text;
      cells.pop_back();
    }
    // Link cells: up to n of them, ending early at the first affinity field (a row with cells missing).
    std::size_t c = 0;
    std::size_t k = 0;
    for (; k < cells.size() && c < n; ++k) {
      const auto& cell = cells[k];
      auto link = parse_link_token(cell.text);
      if (!cell.link || !link) {
        bool affinity_like = CpuSet::parse(cell.text).has_value();
        if (affinity_like && gpu_row && cells.size() - k <= header.affinity.size()) break;
        out.warnings.push_back(fmt::format("row {}, column {}: '{}' is no link class; read as unknown", row.label,
                                           topo.devices[c].label, cell.text));
        ++c;
        continue;
      }
      if (cell.text == "SOC") soc = true;
      if (link->cls != LinkClass::unknown) {
        topo.links[r][c] = *link;
        read[r][c] = true;
      }
      ++c;
    }
    const std::size_t link_cells = c;
    // Affinity fields, in header order.
    std::size_t a = 0;
    for (; k < cells.size() && a < header.affinity.size(); ++k, ++a) {
      const std::string& v = cells[k].text;
      switch (header.affinity[a]) {
        case AffinityColumn::cpu:
          if (auto cpus = CpuSet::parse(v)) dev.cpu_affinity = *cpus;
          else if (v != "N/A") out.warnings.push_back(fmt::format("row {}: CPU Affinity '{}' is no CPU list; ignored", row.label, v));
          break;
        case AffinityColumn::numa:
          if (auto nodes = parse_numa_list(v)) dev.numa = *nodes;
          else if (v != "N/A") out.warnings.push_back(fmt::format("row {}: NUMA Affinity '{}' is no NUMA node list; ignored", row.label, v));
          break;
        case AffinityColumn::gpu_numa_id: {
          auto nodes = parse_numa_list(v);
          if (nodes && nodes->size() == 1) dev.gpu_numa_id = nodes->front();
          else if (v != "N/A") out.warnings.push_back(fmt::format("row {}: GPU NUMA ID '{}' is no number; ignored", row.label, v));
          break;
        }
      }
    }
    if (k < cells.size()) {
      std::string extra;
      for (std::size_t e = k; e < cells.size(); ++e) extra += (extra.empty() ? "" : " ") + cells[e].text;
      out.warnings.push_back(fmt::format("row {}: {} cell{} beyond the header's columns ignored: '{}'", row.label,
                                         cells.size() - k, cells.size() - k == 1 ? "" : "s", extra));
    }
    const std::size_t got = link_cells + a;
    if (gpu_row ? got < expected : link_cells < n) {
      if (cut_at_end || !cut_piece.empty())
        out.warnings.push_back(fmt::format("row {} cut off after {} of {} cells{}", row.label, got, expected,
                                           cut_piece.empty() ? "" : fmt::format(" (its last piece '{}', where the input ends, "
                                                                                "may be incomplete and is not used)", cut_piece)));
      else if (link_cells < n) {
        // A cell is missing inside the row: which one cannot be told, so every later cell would sit in the wrong
        // column. None of the row's links is used; the other rows' cells (the matrix is symmetric) stand in.
        for (std::size_t col = 0; col < n; ++col) {
          read[r][col] = false;
          topo.links[r][col] = Link{};
        }
        out.warnings.push_back(fmt::format("row {} has {} of {} link cells: which one is missing cannot be told, so "
                                           "none of its cells is used (the other rows' are)",
                                           row.label, link_cells, n));
      } else {
        out.warnings.push_back(fmt::format("row {} has {} of {} cells", row.label, got, expected));
      }
    }
  }
  std::vector<std::string> missing;
  for (const auto& d : topo.devices)
    if (!seen_rows.count(d.label) && std::find(missing.begin(), missing.end(), d.label) == missing.end()) missing.push_back(d.label);
  if (!missing.empty())
    out.warnings.push_back(fmt::format("no row for {} (the table is cut off or rows were left out)", join_labels(missing)));

  // The matrix is symmetric: cells a cut-off row did not give are taken from the column of the other row.
  int filled = 0;
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t c = 0; c < n; ++c) {
      if (r == c) continue;
      if (!read[r][c] && read[c][r]) {
        topo.links[r][c] = topo.links[c][r];
        ++filled;
      } else if (r < c && read[r][c] && read[c][r] && !(topo.links[r][c] == topo.links[c][r])) {
        // nvidia-smi prints a symmetric matrix: two readings of one pair mean an edited or damaged text, and
        // either may be the wrong one, so the pair is unknown rather than a guess findings would build on.
        out.warnings.push_back(fmt::format("{}-{} reads {} in row {} but {} in row {}: read as unknown (?)",
                                           topo.devices[r].label, topo.devices[c].label, to_string(topo.links[r][c]),
                                           topo.devices[r].label, to_string(topo.links[c][r]), topo.devices[c].label));
        topo.links[r][c] = topo.links[c][r] = Link{};
      }
    }
  for (std::size_t d = 0; d < n; ++d) {
    if (read[d][d] && topo.links[d][d].cls != LinkClass::self)
      out.warnings.push_back(fmt::format("row {} has {} on the diagonal where X belongs", topo.devices[d].label,
                                         to_string(topo.links[d][d])));
    topo.links[d][d] = Link{LinkClass::self, 0};
  }
  if (filled > 0)
    out.notes.push_back(fmt::format("{} cell{} not in the text taken from the symmetric cell (the matrix is symmetric)",
                                    filled, filled == 1 ? "" : "s"));
  int unknown_pairs = 0;
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t c = r + 1; c < n; ++c)
      if (topo.links[r][c].cls == LinkClass::unknown) ++unknown_pairs;
  if (unknown_pairs > 0)
    out.warnings.push_back(fmt::format("{} device pair{} could not be read (shown as ?)", unknown_pairs,
                                       unknown_pairs == 1 ? "" : "s"));
  if (soc) out.notes.push_back("the old SOC token (drivers before 2017) is read as SYS");
  if (!topo.has_cpu_affinity)
    out.warnings.push_back("no CPU Affinity column: no CPU cores can be recommended per rank");
  if (!topo.has_numa_affinity)
    out.warnings.push_back("no NUMA Affinity column: NUMA placement is inferred from the link classes only");
  if (!topo.has_gpu_numa_id && topo.has_numa_affinity)
    out.notes.push_back("no GPU NUMA ID column (drivers before R530 do not print it)");

  // NIC legend ("NIC0: mlx5_0") and GPU names ("GPU 0: NVIDIA H100 ..." from nvidia-smi -L or environment
  // dumps such as "GPU 0,1,2,3: NVIDIA GB200") anywhere in the text.
  for (const auto& l : line_text) {
    auto tokens = split_ws(l);
    if (tokens.size() == 2 && tokens[0].size() > 4 && tokens[0].back() == ':' && tokens[0].substr(0, 3) == "NIC") {
      int d = topo.find(tokens[0].substr(0, tokens[0].size() - 1));
      if (d >= 0 && topo.devices[d].kind == DeviceKind::nic) topo.devices[d].name = tokens[1];
    }
    if (tokens.size() >= 3 && tokens[0] == "GPU" && tokens[1].back() == ':') {
      auto ids = parse_numa_list(tokens[1].substr(0, tokens[1].size() - 1));
      if (!ids) continue;
      std::string name = l.substr(l.find(':') + 1);
      if (auto uuid = name.find(" (UUID"); uuid != std::string::npos) name.resize(uuid);
      auto b = name.find_first_not_of(" \t");
      auto e = name.find_last_not_of(" \t");
      if (b == std::string::npos) continue;
      name = name.substr(b, e - b + 1);
      if (name.find("Capability") != std::string::npos || name.size() > 80) continue;
      for (int id : *ids) {
        int d = topo.find("GPU" + std::to_string(id));
        if (d >= 0 && topo.devices[d].name.empty()) topo.devices[d].name = name;
      }
    }
  }
  return out;
}

}  // namespace

TopologyReading parse_smi_topo_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw core::Error(fmt::format("cannot read '{}': {}", path, std::strerror(errno)),
                      "pass a file holding the output of `nvidia-smi topo -m`");
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxFileBytes)
      throw core::Error(fmt::format("'{}' is larger than {} MiB: not a saved `nvidia-smi topo -m`", path, kMaxFileBytes >> 20),
                        "pass the file holding the output of `nvidia-smi topo -m`");
  }
  if (in.bad()) throw core::Error(fmt::format("cannot read '{}': {}", path, std::strerror(errno)), "check the file");
  std::string name = path;
  if (auto slash = name.find_last_of('/'); slash != std::string::npos) name = name.substr(slash + 1);
  return parse_smi_topo(text, "file " + name);
}

}  // namespace scalescope::topo
