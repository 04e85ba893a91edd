// Table reader, part 4: layout — cleaning pasted text (HTML, quote markers, fences, headings) and finding its
// tables: pipe tables (markdown or not), CSV, TSV, space-aligned columns, "label  value" and pair lists, "label: value"
// lists; which text is another reader's.
#include <algorithm>
#include <cctype>
#include <map>
#include <regex>

#include "text/log_text.h"
#include "readers/tables/tables_internal.h"

namespace scalescope::analyze::tables_detail {
namespace {

// `text` with HTML tags removed (newlines inside tags kept, so line numbers stay) and the lines that held a
// heading tag (<h1>…<h6>) marked. A '<' that does not open a tag closed within 4000 bytes is text.
std::string strip_tags(std::string_view text, std::vector<bool>& heading_lines) {
  std::string out;
  out.reserve(text.size());
  std::size_t line = 0;
  auto mark = [&](std::size_t l) {
    if (heading_lines.size() <= l) heading_lines.resize(l + 1, false);
    heading_lines[l] = true;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<' && i + 1 < text.size() &&
        (std::isalpha(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '/' || text[i + 1] == '!')) {
      const auto close = text.find('>', i + 1);
      if (close != std::string_view::npos && close - i < 4000) {
        const std::string tag = lower(text.substr(i + 1, std::min<std::size_t>(3, close - i - 1)));
        if (tag.size() >= 2 && tag[0] == 'h' && tag[1] >= '1' && tag[1] <= '6') mark(line);
        const bool block = starts_with(tag, "br") || starts_with(tag, "p") || starts_with(tag, "div") ||
                           starts_with(tag, "/p") || starts_with(tag, "/di") || starts_with(tag, "td") ||
                           starts_with(tag, "/td") || starts_with(tag, "th") || starts_with(tag, "/h");
        for (std::size_t k = i; k < close; ++k)
          if (text[k] == '\n') out += '\n', ++line;
        if (block) out += ' ';
        i = close;
        continue;
      }
    }
    if (c == '\n') ++line;
    out += c;
  }
  return out;
}

std::string decode_entities(std::string s) {
  if (s.find('&') == std::string::npos) return s;
  static const std::pair<std::string_view, std::string_view> k[] = {
      {"&nbsp;", " "}, {"&#160;", " "}, {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""},
      {"&#39;", "'"}, {"&apos;", "'"}, {"&#124;", "|"}, {"&times;", "×"}, {"&plusmn;", "±"}, {"&asymp;", "≈"}};
  for (auto [from, to] : k) {
    std::size_t pos = 0;
    while ((pos = s.find(from, pos)) != std::string::npos) {
      s.replace(pos, from.size(), to);
      pos += to.size();
    }
  }
  return s;
}

bool nccl_line(std::string_view l) {
  return contains(l, "NCCL INFO") || contains(l, "NCCL WARN") || contains(l, "NCCL TRACE") ||
         contains(l, "NCCL version");
}

}  // namespace

std::vector<Line> clean_lines(std::string_view text) {
  std::vector<bool> heading_lines;
  const std::string stripped = strip_tags(text, heading_lines);
  const auto raw = split_lines(stripped);
  std::vector<Line> out;
  out.reserve(raw.size());
  for (std::size_t k = 0; k < raw.size(); ++k) {
    Line l;
    l.no = k + 1;
    std::string t(trim_blanks(raw[k]));
    t = decode_entities(t);
    t = std::string(trim_blanks(t));
    l.foreign = nccl_line(t);
    while (!t.empty() && t[0] == '>' && (t.size() == 1 || t[1] == ' ' || t[1] == '>' || t[1] == '\t'))
      t = std::string(trim_blanks(std::string_view(t).substr(1)));
    if (starts_with(t, "```") || starts_with(t, "~~~")) t.clear();
    std::size_t hashes = 0;
    while (hashes < t.size() && t[hashes] == '#') ++hashes;
    if (hashes >= 1 && hashes <= 6 && hashes < t.size() && (t[hashes] == ' ' || t[hashes] == '\t')) {
      l.heading = true;
      t = std::string(trim_blanks(std::string_view(t).substr(hashes)));
    }
    if (k < heading_lines.size() && heading_lines[k] && !t.empty()) l.heading = true;
    l.text = std::move(t);
    out.push_back(std::move(l));
  }
  return out;
}

std::string foreign_text(const std::vector<Line>& lines) {
  std::size_t nonblank = 0, nccl = 0, env = 0;
  static const std::regex env_re(R"((export\s+)?[A-Za-z_][A-Za-z0-9_]*=\S*)");
  for (const auto& l : lines) {
    if (l.text.empty() && !l.foreign) continue;
    ++nonblank;
    if (l.foreign) ++nccl;
    const std::string low = lower(l.text);
    if ((contains(low, "algbw") && contains(low, "busbw")) || contains(low, "avg bus bandwidth") ||
        starts_with(low, "nthread ") || (contains(low, "out-of-place") && contains(low, "in-place")))
      return "an nccl-tests output";
    if (contains(low, "cpu affinity") || contains(low, "numa affinity") || contains(low, "x    = self"))
      return "an `nvidia-smi topo -m` matrix";
    if (contains(low, "ncalls") && contains(low, "tottime")) return "a Python profile";
    if (l.text.size() < 400 && std::regex_match(l.text, env_re)) ++env;
  }
  if (nccl >= 3 || (nccl > 0 && nccl * 3 >= nonblank)) return "an NCCL debug log";
  if (nonblank >= 3 && env * 10 >= nonblank * 6) return "an environment dump";
  return "";
}

bool foreign_header(const std::vector<std::string>& cells) {
  int gpu_cols = 0;
  bool ncalls = false, tottime = false, algbw = false, busbw = false;
  for (const auto& c : cells) {
    const std::string l = lower(clean_cell(c));
    if (l == "#wrong" || l == "redop" || contains(l, "affinity")) return true;
    algbw = algbw || l == "algbw";
    busbw = busbw || l == "busbw";
    if (l.size() >= 4 && l.size() <= 6 && starts_with(l, "gpu") &&
        std::all_of(l.begin() + 3, l.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); }))
      ++gpu_cols;
    if (l.size() >= 4 && starts_with(l, "nic") &&
        std::all_of(l.begin() + 3, l.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); }))
      ++gpu_cols;
    ncalls = ncalls || l == "ncalls";
    tottime = tottime || l == "tottime";
  }
  return gpu_cols >= 2 || (ncalls && tottime) || (algbw && busbw);
}

namespace {

// ───── splitting one line into cells ─────

struct Split {
  std::vector<std::string> cells;
  bool lead = false, trail = false;  // pipe rows: began / ended with '|'
};

Split split_pipe(std::string_view t) {
  Split s;
  t = trim_blanks(t);
  s.lead = !t.empty() && t.front() == '|';
  s.trail = t.size() > 1 && t.back() == '|';
  std::size_t b = 0;
  for (std::size_t i = 0; i <= t.size(); ++i)
    if (i == t.size() || t[i] == '|') {
      s.cells.push_back(clean_cell(t.substr(b, i - b)));
      b = i + 1;
    }
  if (s.lead && !s.cells.empty()) s.cells.erase(s.cells.begin());
  if (s.trail && !s.cells.empty()) s.cells.pop_back();
  return s;
}

bool separator_cells(const std::vector<std::string>& cells) {
  bool dash = false;
  for (const auto& c : cells) {
    if (c.empty()) continue;
    for (char ch : c)
      if (ch != '-' && ch != ':' && ch != '=' && ch != ' ' && ch != '+') return false;
    dash = dash || contains(c, "-") || contains(c, "=");
  }
  return dash;
}

// "=====", "-----", "___", "***" (3 or more, blanks allowed).
bool rule_line(std::string_view t) {
  if (t.size() < 3) return false;
  const char first = t[0];
  if (first != '=' && first != '-' && first != '_' && first != '*' && first != '~') return false;
  return std::all_of(t.begin(), t.end(), [&](char c) { return c == first || c == ' ' || c == '+' || c == '|'; });
}

enum class Splitter { tab, comma, spaces2, spaces1 };

std::vector<std::string> split_with(std::string_view t, Splitter how) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    out.push_back(clean_cell(cur));
    cur.clear();
  };
  if (how == Splitter::comma) {
    bool quoted = false;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const char c = t[i];
      if (c == '"') {
        if (quoted && i + 1 < t.size() && t[i + 1] == '"') cur += '"', ++i;
        else quoted = !quoted;
      } else if (c == ',' && !quoted) {
        flush();
      } else {
        cur += c;
      }
    }
    flush();
    return out;
  }
  for (std::size_t i = 0; i < t.size();) {
    const char c = t[i];
    const bool blank = c == ' ' || c == '\t';
    if (!blank) {
      cur += c;
      ++i;
      continue;
    }
    std::size_t j = i;
    bool tab = false;
    while (j < t.size() && (t[j] == ' ' || t[j] == '\t')) tab = tab || t[j] == '\t', ++j;
    const bool cut = how == Splitter::tab ? tab : how == Splitter::spaces2 ? (tab || j - i >= 2) : true;
    if (cut) {
      if (!cur.empty()) flush();
    } else {
      cur.append(t.substr(i, j - i));
    }
    i = j;
  }
  if (!cur.empty()) flush();
  return out;
}

// A trailing "# comment" of a non-pipe line ("host-e,host-f  49.28  # crossing TOR"): removed from `t`.
std::string take_comment(std::string& t) {
  for (std::size_t i = 1; i < t.size(); ++i)
    if (t[i] == '#' && (t[i - 1] == ' ' || t[i - 1] == '\t') &&
        (i + 1 >= t.size() || !std::isdigit(static_cast<unsigned char>(t[i + 1])))) {
      std::string c(trim_blanks(std::string_view(t).substr(i + 1)));
      t = std::string(trim_blanks(std::string_view(t).substr(0, i)));
      return c;
    }
  return "";
}

bool has_value_cell(const std::vector<std::string>& cells, std::size_t from) {
  for (std::size_t i = from; i < cells.size(); ++i)
    if (parse_value(cells[i])) return true;
  return false;
}
bool all_values_after_first(const std::vector<std::string>& cells) {
  for (std::size_t i = 1; i < cells.size(); ++i)
    if (!parse_value(cells[i])) return false;
  return cells.size() >= 2;
}

std::size_t mode_count(const std::vector<Row>& rows) {
  std::map<std::size_t, std::size_t> n;
  for (const auto& r : rows) ++n[r.cells.size()];
  std::size_t best = 0, count = 0;
  for (auto [k, c] : n)
    if (c > count || (c == count && k > best)) best = k, count = c;
  return best;
}

}  // namespace

namespace {

struct Piece {
  RawTable table;
  std::size_t first = 0, last = 0;  // indexes of the lines it covers
  std::size_t cols = 0;
};

// Pipe lines [b, e) → tables. A row followed by a separator row ("|---|", "-- | --") or a rule line ("=====") is a
// header and starts a table; without one, a first row without numbers before rows with numbers is the header.
void pipe_pieces(const std::vector<Line>& lines, std::size_t b, std::size_t e, std::vector<Piece>& out) {
  struct PRow {
    Row row;
    Split split;
    bool header_mark = false;
    std::size_t idx = 0;
  };
  std::vector<PRow> rows;
  for (std::size_t i = b; i < e; ++i) {
    const std::string& t = lines[i].text;
    if (t.empty()) continue;
    if (rule_line(t) && !contains(t, "|")) {
      if (!rows.empty()) rows.back().header_mark = true;
      continue;
    }
    Split s = split_pipe(t);
    if (separator_cells(s.cells)) {
      if (!rows.empty()) rows.back().header_mark = true;
      continue;
    }
    rows.push_back({Row{lines[i].no, t, s.cells, ""}, s, false, i});
  }
  std::vector<std::vector<PRow>> groups;
  for (auto& r : rows) {
    if (r.header_mark || groups.empty()) groups.emplace_back();
    groups.back().push_back(std::move(r));
  }
  for (auto& g : groups) {
    Piece p;
    p.table.form = Form::pipe;
    std::size_t start = 0;
    auto later_values = [&] {
      for (std::size_t k = 1; k < g.size(); ++k)
        if (has_value_cell(g[k].row.cells, 0)) return true;
      return false;
    };
    const auto nonempty = std::count_if(g[0].row.cells.begin(), g[0].row.cells.end(), [](const std::string& c) { return !c.empty(); });
    if (g[0].header_mark || (g.size() >= 2 && nonempty >= 1 && !has_value_cell(g[0].row.cells, 0) && later_values()))
      start = 1;
    for (std::size_t k = start; k < g.size(); ++k) p.table.rows.push_back(g[k].row);
    const std::size_t n = p.table.rows.empty() ? g[0].row.cells.size() : mode_count(p.table.rows);
    if (start == 1) {
      Row h = g[0].row;
      if (g[0].split.lead && h.cells.size() + 1 == n) h.cells.insert(h.cells.begin(), "");
      p.table.header = std::move(h);
    }
    p.first = g.front().idx;
    p.last = g.back().idx;
    p.cols = n;
    out.push_back(std::move(p));
  }
}

bool data_like(const std::vector<std::string>& cells, Splitter how) {
  if (cells.size() < 2) return false;
  return how == Splitter::spaces1 ? all_values_after_first(cells) : has_value_cell(cells, 1);
}

// Non-pipe lines [b, e) → tables: the splitter (tab, comma, two or more blanks, one blank between numbers) that
// gives the most rows of one width with numbers; a header line of that width above them. Without a header only
// two-column lists ("label  value", pairs) are read. Failing those, "label: value" lines whose labels name a
// condition ("2 GPUs: 55.1 s", "DataParallel(two GPUs): 24s/epoch 86.1@15epochs" — the first figure after the colon is
// the value; what follows it is left out with a note).
void text_pieces(const std::vector<Line>& lines, std::size_t b, std::size_t e, std::vector<Piece>& out,
                 std::vector<std::string>& notes) {
  struct TLine {
    std::size_t idx;
    std::string text, comment;
  };
  std::vector<TLine> tl;
  for (std::size_t i = b; i < e; ++i) {
    std::string t = lines[i].text;
    std::string c = take_comment(t);
    tl.push_back({i, t, c});
  }
  const std::size_t n = tl.size();
  Splitter best = Splitter::tab;
  std::size_t best_score = 0, best_cols = 0;
  for (Splitter how : {Splitter::tab, Splitter::comma, Splitter::spaces2, Splitter::spaces1}) {
    std::map<std::size_t, std::size_t> by_width;
    for (const auto& l : tl) {
      const auto cells = split_with(l.text, how);
      if (data_like(cells, how)) ++by_width[cells.size()];
    }
    for (auto [w, c] : by_width)
      if (c > best_score) best = how, best_score = c, best_cols = w;
  }
  if (best_score >= 2) {
    const Form form = best == Splitter::tab ? Form::tsv : best == Splitter::comma ? Form::csv : Form::columns;
    std::size_t k = 0;
    while (k < n) {
      auto cells_k = split_with(tl[k].text, best);
      if (!(cells_k.size() == best_cols && data_like(cells_k, best))) {
        ++k;
        continue;
      }
      Piece p;
      p.table.form = form;
      p.cols = best_cols;
      p.first = tl[k].idx;
      if (k > 0) {
        auto h = split_with(tl[k - 1].text, best);
        if (h.size() == best_cols && !has_value_cell(h, 0) && tl[k - 1].comment.empty()) {
          p.table.header = Row{lines[tl[k - 1].idx].no, tl[k - 1].text, h, ""};
          p.first = tl[k - 1].idx;
        }
      }
      std::size_t j = k;
      while (j < n) {
        auto c = split_with(tl[j].text, best);
        if (c.size() != best_cols) break;
        p.table.rows.push_back(Row{lines[tl[j].idx].no, lines[tl[j].idx].text, c, tl[j].comment});
        p.last = tl[j].idx;
        ++j;
      }
      if (p.table.header || best_cols == 2) out.push_back(std::move(p));
      k = j;
    }
    return;
  }
  // "label: value" lists.
  std::vector<Row> run;
  std::vector<std::string> run_notes;
  std::size_t run_first = 0, run_last = 0;
  auto close_run = [&] {
    if (run.size() >= 2) {
      for (auto& n : run_notes) notes.push_back(std::move(n));
      Piece p;
      p.table.form = Form::colon;
      p.table.rows = run;
      p.first = run_first;
      p.last = run_last;
      p.cols = 2;
      out.push_back(std::move(p));
    }
    run.clear();
    run_notes.clear();
  };
  for (const auto& l : tl) {
    bool ok = false;
    // Each colon from the last: the label before it must name a condition, a figure must follow it.
    for (std::size_t colon = l.text.rfind(':'); !ok && colon != std::string::npos && colon > 0; colon = l.text.rfind(':', colon - 1)) {
      if (colon + 1 >= l.text.size()) continue;
      const std::string label(trim_blanks(std::string_view(l.text).substr(0, colon)));
      std::string value(trim_blanks(std::string_view(l.text).substr(colon + 1)));
      if (label.empty() || label.size() > 60) continue;
      std::string rest;
      if (!parse_value(value)) {
        // "27s/epoch 88.1@15epochs", "24 s/epoch (acc 86.1)": the first figure (with its unit), the rest left out.
        const auto sp1 = value.find_first_of(" \t");
        if (sp1 == std::string::npos) continue;
        const auto sp2 = value.find_first_of(" \t", value.find_first_not_of(" \t", sp1));
        const std::string one = value.substr(0, sp1);
        const std::string two = sp2 == std::string::npos ? value : value.substr(0, sp2);
        if (sp2 != std::string::npos && parse_value(two) && parse_value(two)->unit && !parse_value(one)->unit) {
          rest = std::string(trim_blanks(std::string_view(value).substr(sp2)));
          value = two;
        } else if (parse_value(one)) {
          rest = std::string(trim_blanks(std::string_view(value).substr(sp1)));
          value = one;
        } else {
          continue;
        }
      }
      const auto r = read_label(label);
      ok = r.dims.count("gpus") || r.dims.count("nodes") || r.dims.count("mode") || r.dims.count("gpus_per_node");
      if (ok) {
        if (run.empty()) run_first = l.idx;
        run_last = l.idx;
        run.push_back(Row{lines[l.idx].no, lines[l.idx].text, {label, value}, l.comment});
        if (!rest.empty())
          run_notes.push_back("line " + std::to_string(lines[l.idx].no) + ": '" + excerpt(rest, 60) +
                              "' after the figure is not read (one figure per row)");
      }
    }
    if (!ok) close_run();
  }
  close_run();
}

}  // namespace

std::vector<RawTable> find_tables(const std::vector<Line>& lines, std::vector<std::string>& notes) {
  std::vector<Piece> pieces;
  // Runs of consecutive lines of one family: pipe lines, other lines. Blank lines, headings and other readers'
  // lines end a run; a rule line belongs to the run it follows.
  std::size_t i = 0;
  const std::size_t n = lines.size();
  auto breaks = [&](std::size_t k) { return lines[k].text.empty() || lines[k].heading || lines[k].foreign; };
  while (i < n) {
    if (breaks(i)) {
      ++i;
      continue;
    }
    const bool pipe = contains(lines[i].text, "|");
    std::size_t j = i + 1;
    while (j < n && !breaks(j) &&
           (contains(lines[j].text, "|") == pipe || (rule_line(lines[j].text) && !contains(lines[j].text, "|"))))
      ++j;
    if (pipe) pipe_pieces(lines, i, j, pieces);
    else text_pieces(lines, i, j, pieces, notes);
    i = j;
  }
  // A table cut by blank or rule lines ("=====" under the header, blank lines between groups) is one table: a
  // piece without a header continues the one before it when they have the same form and width.
  std::vector<Piece> merged;
  for (auto& p : pieces) {
    if (!merged.empty() && !p.table.header && merged.back().table.form == p.table.form && merged.back().cols == p.cols &&
        p.table.form != Form::colon) {
      bool only_blank = true;
      for (std::size_t k = merged.back().last + 1; k < p.first; ++k)
        if (!lines[k].text.empty() && !rule_line(lines[k].text)) only_blank = false;
      if (only_blank) {
        for (auto& r : p.table.rows) merged.back().table.rows.push_back(std::move(r));
        merged.back().last = p.last;
        continue;
      }
    }
    merged.push_back(std::move(p));
  }
  std::vector<bool> covered(n, false);
  for (const auto& p : merged)
    for (std::size_t k = p.first; k <= p.last && k < n; ++k) covered[k] = true;
  std::vector<RawTable> out;
  for (auto& p : merged) {
    if (p.table.rows.empty()) continue;
    if (p.table.header && foreign_header(p.table.header->cells)) {
      notes.push_back("line " + std::to_string(p.table.header->line) +
                      ": a table with an nccl-tests, topology or profile header is another reader's; not read here");
      continue;
    }
    // Titles: the nearest non-blank line above (when short) and the nearest heading within 12 lines.
    bool nearest = false;
    for (std::size_t k = p.first; k-- > 0 && k + 12 >= p.first;) {
      if (covered[k]) break;
      const auto& l = lines[k];
      if (l.text.empty() || rule_line(l.text) || l.foreign) continue;
      if (!nearest) {
        nearest = true;
        if (l.text.size() <= 200) p.table.title_lines.push_back(k);
        if (l.heading) break;
        continue;
      }
      if (l.heading) {
        if (l.text.size() <= 200) p.table.title_lines.push_back(k);
        break;
      }
    }
    out.push_back(std::move(p.table));
  }
  return out;
}

}  // namespace scalescope::analyze::tables_detail
